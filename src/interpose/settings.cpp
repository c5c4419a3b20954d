#include "interpose/settings.h"

#include <errno.h>  // program_invocation_short_name
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "core/engine.h"
#include "core/out.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "interpose/stats.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

// Everything a reload needs, kept from start-up. Written by the constructor
// before the engine can call reload(), then only by reload() under
// g_reloading.
constinit char g_path[4096] = {};  // the config file; "" for none
constinit bool g_must_exist = false;
constinit EnvOverlay g_env;
constinit char g_exe[4096] = {};
constinit ProgramId g_program;
constinit bool g_program_known = false;
constinit FileStamp g_stamp;
constinit int g_cpus = 1;
// The file's text while it is parsed; untouched (no page) without a file.
char g_buf[kConfigMaxBytes + 1];

std::atomic<bool> g_reloading{false};
std::atomic<unsigned> g_reloads{0};

// Problems of the last resolution, held until they can be reported.
struct Pending {
    static constexpr unsigned kMax = 16;
    char lines[kMax][512] = {};
    unsigned count = 0;
    unsigned dropped = 0;
};
constinit Pending g_pending;

void collect(void* ctx, const char* message) {
    auto& p = *static_cast<Pending*>(ctx);
    if (p.count == Pending::kMax) {
        ++p.dropped;
        return;
    }
    Out o{p.lines[p.count++], sizeof p.lines[0]};
    o.put(message);
}

const char* secure_env(const char* name, void*) {
    return ::secure_getenv(name);
}

// The names [program NAME] sections match: only worth a readlink when
// there is a file to match against.
void learn_program() noexcept {
    if (g_program_known) return;
    g_program_known = true;
    const long n = sys::readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    if (n > 0) {
        g_exe[n] = '\0';
        g_program.exe_path = {g_exe, static_cast<std::size_t>(n)};
        g_program.exe_name = base_name(g_program.exe_path);
    }
    if (program_invocation_short_name != nullptr)
        g_program.argv0_name = program_invocation_short_name;
}

unsigned resolve(Options& options, OptionSources& sources) noexcept {
    g_pending.count = 0;
    g_pending.dropped = 0;
    ResolveInput in;
    in.path = g_path;
    in.must_exist = g_must_exist;
    in.euid = static_cast<unsigned>(sys::geteuid());
    in.env = &g_env;
    in.buf = g_buf;
    in.cap = sizeof g_buf;
    // No file, and nobody asked for one: skip the open (and the readlink).
    if (g_path[0] != '\0' && !g_must_exist && !stamp_path(g_path).exists) in.path = nullptr;
    if (in.path != nullptr && in.path[0] != '\0') learn_program();
    in.program = g_program;
    return resolve_options(in, options, sources, g_stamp, collect, &g_pending);
}

void put_mode(Out& o, Mode m) noexcept {
    const OptionSpec& spec = option_table()[0];
    o.value(spec, static_cast<std::uint32_t>(m));
}

// Called by the engine at most every reload_ms, see engine.h.
void reload() noexcept {
    if (!try_lock_settings()) return;
    {
        BusyScope busy;
        const FileStamp now = stamp_path(g_path);
        if (!(now == g_stamp)) {
            Options options;
            OptionSources sources;
            resolve(options, sources);
            g_cpus = sys::usable_cpus();
            apply_options(options, sources);
            g_reloads.fetch_add(1, std::memory_order_relaxed);
            if (report::enabled(LogLevel::Info)) {
                char line[512];
                Out o{line, sizeof line};
                o.put("pid ");
                o.num(static_cast<std::uint64_t>(sys::raw(SYS_getpid)));
                o.put(" reloaded ");
                o.printable(g_path, 200);
                if (!now.exists) o.put(" (gone)");
                o.put(": mode=");
                put_mode(o, options.mode());
                o.put(" spin_us=");
                o.num(options.spin_us);
                report::write(LogLevel::Info, line, false);
            }
            report_problems(false);
            report_resolved(options, sources, false);
        }
    }
    unlock_settings();
}

}  // namespace

void resolve_startup_options(Options& options, OptionSources& sources) noexcept {
    const char* path = ::secure_getenv("PIPESPIN_CONFIG");
    g_must_exist = path != nullptr;
    if (path == nullptr) path = kDefaultConfigPath;
    std::size_t n = 0;
    while (path[n] != '\0' && n + 1 < sizeof g_path) {
        g_path[n] = path[n];
        ++n;
    }
    g_path[n] = '\0';
    if (path[n] != '\0') g_path[0] = '\0';  // too long to be a path: reported below
    capture_env(secure_env, nullptr, g_env);
    g_cpus = sys::usable_cpus();
    resolve(options, sources);
    if (path[n] != '\0')
        collect(&g_pending, "PIPESPIN_CONFIG is too long to be a path; no config file");
}

Arm apply_options(Options& options, const OptionSources& sources) noexcept {
    // `ab` counts as configured when any source set it.
    const bool ab_configured =
        sources.kind[option_index(*find_option("ab"))] != SourceKind::Default;
    const Arm arm = stats_resolve(options, ab_configured);
    report::set_level(options.log());
    report::set_log_file(options.log_file.view());
    configure(options, g_cpus);
    return arm;
}

void report_problems(bool may_load) noexcept {
    for (unsigned i = 0; i < g_pending.count; ++i)
        report::write(LogLevel::Warn, g_pending.lines[i], may_load);
    if (g_pending.dropped != 0) {
        char line[160];
        std::snprintf(line, sizeof line,
                      "%u more config problems (pipespin check-config lists them)",
                      g_pending.dropped);
        report::write(LogLevel::Warn, line, may_load);
    }
}

void report_resolved(const Options& options, const OptionSources& sources, bool may_load) noexcept {
    if (!report::enabled(LogLevel::Debug)) return;
    char line[1800];
    Out o{line, sizeof line};
    o.put("config ");
    if (g_path[0] == '\0') {
        o.put("none");
    } else {
        o.printable(g_path, 200);
        o.put(g_stamp.exists ? "" : " (absent)");
    }
    if (g_program_known) {
        o.put(", program ");
        o.printable(g_program.exe_name, 100);
        if (g_program.argv0_name != g_program.exe_name) {
            o.put(" (argv[0] ");
            o.printable(g_program.argv0_name, 100);
            o.put(")");
        }
    }
    o.put(":");
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const OptionSpec& spec = option_table()[i];
        o.put(" ");
        o.put(spec.name);
        o.put("=");
        if (spec.kind == OptionKind::Text)
            o.printable((options.*spec.text).view(), 100);
        else
            o.value(spec, options.*spec.field);
        if (sources.kind[i] == SourceKind::File) {
            o.put("(line ");
            o.num(sources.line[i]);
            o.put(")");
        } else if (sources.kind[i] == SourceKind::Env) {
            o.put("(env)");
        }
    }
    report::write(LogLevel::Debug, line, may_load);
}

void watch_config() noexcept {
    if (g_path[0] != '\0') set_reload_hook(reload);
}

void settings_after_fork() noexcept {
    // Written only if set: see IoCounters::clear() on stores after fork.
    if (g_reloading.load(std::memory_order_relaxed)) g_reloading.store(false, std::memory_order_relaxed);
}

bool try_lock_settings() noexcept {
    return !g_reloading.exchange(true, std::memory_order_acquire);
}

void unlock_settings() noexcept {
    g_reloading.store(false, std::memory_order_release);
}

unsigned reload_count() noexcept {
    return g_reloads.load(std::memory_order_relaxed);
}

}  // namespace pipespin::interpose
