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
#include "interpose/signals.h"
#include "interpose/stats.h"
#include "platform/process_lock.h"
#include "platform/sys.h"
#include "report/env_marker.h"

// Called through its GOT slot, bound when the library is loaded, not
// through the PLT: a lazy binding at the first call would cost every
// process that sets a PIPESPIN_ variable a page fault on the PLT's page and
// a symbol look-up inside its constructor (libc_local.c says more).
extern "C" char* secure_getenv(const char*) noexcept __attribute__((noplt));

namespace pipespin::interpose {
namespace {

// Everything a reload needs, kept from start-up. Written by the constructor
// before the engine can call reload(), then only by reload() under
// g_reloading.
// The config file ("" for none): the built-in path, or PIPESPIN_CONFIG's
// value copied into g_path_buf (nothing written for the default, nor for
// an empty value: "no file", as tests and benchmarks set it in every
// process, where a copy would cost a page fault of the cold buffer).
constinit const char* g_path = kDefaultConfigPath;
PIPESPIN_COLD constinit char g_path_buf[4096] = {};
constinit bool g_must_exist = false;
// The PIPESPIN_* variables as captured: written only when some are set.
// Its section sorts (--sort-section=name) after the other small variables
// and before the cold ones (.bss.zz.cold): its start, where a few short
// values go, then shares the page the loader already wrote at load time
// (the end of .data), and capturing them is no page fault of its own.
[[gnu::section(".bss.zy.env")]] constinit EnvOverlay g_env;
constinit bool g_env_any = false;  // g_env holds a value (else it is not read)
PIPESPIN_COLD constinit char g_exe[4096] = {};
constinit ProgramId g_program;
constinit bool g_program_known = false;
constinit FileStamp g_stamp;
constinit int g_cpus = 1;  // sched_getaffinity's count, once looked up (apply_options)
// The file's text while it is parsed; untouched (no page) without a file.
PIPESPIN_COLD char g_buf[kConfigMaxBytes + 1];

sys::ProcessLock g_reloading;  // a reload under way
std::atomic<unsigned> g_reloads{0};

// Problems of the last resolution, held until they can be reported.
// (The counts are read at every start-up; the lines only when there are some.)
struct Pending {
    static constexpr unsigned kMax = 16;
    unsigned count = 0;
    unsigned dropped = 0;
    char (*lines)[512];
};
PIPESPIN_COLD char g_pending_lines[Pending::kMax][512];
constinit Pending g_pending{0, 0, g_pending_lines};

void collect(void* ctx, const char* message) {
    auto& p = *static_cast<Pending*>(ctx);
    if (p.count == Pending::kMax) {
        ++p.dropped;
        return;
    }
    Out o{p.lines[p.count++], sizeof p.lines[0]};
    o.put(message);
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

template <class T>
void store_if_changed(T& field, const T& value) noexcept {
    if (!(field == value)) field = value;
}

unsigned resolve(Options& options, OptionSources& sources) noexcept {
    // Written only where something changes: every page the constructor
    // writes is a page fault in every process.
    store_if_changed(g_pending.count, 0u);
    store_if_changed(g_pending.dropped, 0u);
    ResolveInput in;
    in.path = g_path;
    in.must_exist = g_must_exist;
    in.env = g_env_any ? &g_env : nullptr;
    in.buf = g_buf;
    in.cap = sizeof g_buf;
    // No file, and nobody asked for one: skip the open (and the readlink).
    if (g_path[0] != '\0' && !g_must_exist && !stamp_path(g_path).exists) in.path = nullptr;
    if (in.path != nullptr && in.path[0] != '\0') {
        learn_program();
        in.euid = static_cast<unsigned>(sys::geteuid());  // the file's owner is checked against it
    }
    in.program = g_program;
    FileStamp stamp;
    const unsigned problems = resolve_options(in, options, sources, stamp, collect, &g_pending);
    store_if_changed(g_stamp, stamp);
    return problems;
}

// Called by the engine at most every reload_ms, see engine.h. Signals wait
// for its end: a handler that siglongjmps out of the program's call would
// otherwise leave the settings locked (no reload, no A/B switch again) and
// this thread's t_busy set (its calls passed through for good).
void reload() noexcept {
    sys::SignalsBlocked quiet;
    if (!try_lock_settings()) return;
    {
        BusyScope busy;
        const FileStamp now = stamp_path(g_path);
        if (!(now == g_stamp)) {
            Options options;
            OptionSources sources;
            resolve(options, sources);
            apply_options(options, sources);
            g_reloads.fetch_add(1, std::memory_order_relaxed);
            if (report::enabled(LogLevel::Info)) {
                char line[512];
                Out o{line, sizeof line};
                o.put("pid ");
                o.num(static_cast<std::uint64_t>(sys::own(SYS_getpid)));
                o.put(" reloaded ");
                o.printable(g_path, 200);
                if (!now.exists) o.put(" (gone)");
                o.put(": mode=");
                o.value(option_spec(OptionId::Mode), options.mode_v);
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

// The PIPESPIN_* variables, found in one pass over the environment: the
// process that sets none makes no getenv at all, and one that sets a few
// matches each of those few against the option table (capture_env_vars),
// not each option against the whole environment (a getenv per option is a
// pass each). Compared here, not with strncmp (a
// libc call: a symbol look-up at every process start).
struct PipespinEnv {
    static constexpr int kMax = 32;
    const char* entry[kMax];
    int count = 0;
    bool overflow = false;  // more than kMax, or a name too long: ask libc
    bool secure = false;    // secure execution: the environment is not read
};

// v past `prefix`, or null when v does not start with it.
const char* after_prefix(const char* v, const char* prefix) noexcept {
    while (*prefix != '\0' && *v == *prefix) ++v, ++prefix;
    return *prefix == '\0' ? v : nullptr;
}

void find_pipespin_variables(PipespinEnv& l) noexcept {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        if (after_prefix(*e, kEnvPrefix.data()) == nullptr) continue;
        if (l.count == PipespinEnv::kMax) {
            l.overflow = true;
            return;
        }
        l.entry[l.count++] = *e;
    }
    if (l.count == 0) return;
    // secure_getenv() reads nothing in a secure-execution process (setuid):
    // one call on a variable that is there tells which process this is.
    char name[128];
    std::size_t n = 0;
    const char* first = l.entry[0];
    while (first[n] != '=' && first[n] != '\0' && n + 1 < sizeof name) name[n] = first[n], ++n;
    if (first[n] != '=') {
        l.overflow = true;
        return;
    }
    name[n] = '\0';
    l.secure = ::secure_getenv(name) == nullptr;
}

const char* listed_env(const char* name, void* ctx) {
    const auto& l = *static_cast<const PipespinEnv*>(ctx);
    if (l.overflow) return ::secure_getenv(name);
    if (l.secure) return nullptr;
    for (int i = 0; i < l.count; ++i) {
        const char* rest = after_prefix(l.entry[i], name);
        if (rest != nullptr && *rest == '=') return rest + 1;
    }
    return nullptr;
}

}  // namespace

void resolve_startup_options(Options& options, OptionSources& sources) noexcept {
    PipespinEnv vars;
    find_pipespin_variables(vars);
    const bool any = vars.count != 0;
    const char* path = any ? listed_env("PIPESPIN_CONFIG", &vars) : nullptr;
    bool too_long = false;
    if (path != nullptr) {
        g_must_exist = true;
        if (path[0] == '\0') {
            g_path = "";  // no file: nothing to copy
        } else {
            std::size_t n = 0;
            while (path[n] != '\0' && n + 1 < sizeof g_path_buf) {
                g_path_buf[n] = path[n];
                ++n;
            }
            g_path_buf[n] = '\0';
            too_long = path[n] != '\0';
            if (too_long) g_path_buf[0] = '\0';  // too long to be a path: reported below
            g_path = g_path_buf;
        }
    }
    // The few variables found are matched against the table; getenv per
    // option only when they were too many to list.
    unsigned captured = 0;
    if (vars.overflow)
        captured = capture_env(listed_env, &vars, g_env);
    else if (any && !vars.secure)
        captured = capture_env_vars(vars.entry, vars.count, g_env);
    if (captured != 0) g_env_any = true;
    resolve(options, sources);
    if (too_long) collect(&g_pending, "PIPESPIN_CONFIG is too long to be a path; no config file");
}

Arm apply_options(Options& options, const OptionSources& sources) noexcept {
    // `ab` counts as configured when any source set it.
    const bool ab_configured = sources.kind[index_of(OptionId::Ab)] != SourceKind::Default;
    const Arm arm = stats_resolve(options, ab_configured);
    report::set_level(options.log());
    report::set_log_file(options.log_file.view());
    // The usable CPUs matter only where something may spin: a process in
    // mode off for good (no A/B period to switch it on) makes no
    // sched_getaffinity, as it would make none without the shim. A debug
    // line shows the count, so it is looked up then too.
    if (options.mode() != Mode::Off || options.ab_period != 0 || options.log() >= LogLevel::Debug)
        store_if_changed(g_cpus, sys::usable_cpus());
    configure(options, g_cpus);
    if (!options.stats.empty() || options.log() >= LogLevel::Info) counters_are_read();
    configure_signals(anything_spins());
    return arm;
}

namespace {

// A problem of a PIPESPIN_* variable (the core names the variable first),
// not of the config file.
bool about_variable(const char* line) noexcept {
    return after_prefix(line, env_marker::kPrefix) != nullptr;
}

}  // namespace

void report_problems(bool may_load) noexcept {
    // `pipespin run` checked these variables and said what was wrong with
    // them, once for the whole tree (report/env_marker.h): their problems
    // stay quiet here. Looked at only when there is such a problem.
    int checked = -1;
    for (unsigned i = 0; i < g_pending.count; ++i) {
        const char* line = g_pending.lines[i];
        if (about_variable(line)) {
            if (checked < 0) checked = env_marker::matches(environ) ? 1 : 0;
            if (checked == 1) continue;
        }
        report::write(LogLevel::Warn, line, may_load);
    }
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
    for (const OptionSpec& spec : option_table()) {
        const std::size_t i = index_of(spec.id);
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

int usable_cpus_seen() noexcept {
    return g_cpus;
}

bool try_lock_settings() noexcept {
    return g_reloading.try_lock();
}

void unlock_settings() noexcept {
    g_reloading.unlock();
}

unsigned reload_count() noexcept {
    return g_reloads.load(std::memory_order_relaxed);
}

}  // namespace pipespin::interpose
