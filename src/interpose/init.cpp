// Start-up and exit of the shim inside the host process.
//
// The constructor resolves the real functions, reads the configuration and
// only then engages the wrappers. Any failure leaves the shim in plain
// pass-through with one warning; it never aborts or exits the host. Nothing
// here allocates: a process with nothing to report pays for a few getenv
// calls and one sched_getaffinity.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/engine.h"
#include "core/options.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

const char* secure_env(const char* name, void*) {
    return ::secure_getenv(name);
}

constexpr const char* kModeNames[] = {"off", "fixed", "adaptive"};

__attribute__((constructor)) void pipespin_init() {
    BusyScope busy;
    const char* missing = resolve_all();
    Options options;
    EnvProblems problems;
    EnvSources sources;
    read_env(secure_env, nullptr, options, problems, sources);
    report::set_level(options.log());
    for (std::size_t i = 0; i < problems.count; ++i)
        report::write(LogLevel::Warn, problems.lines[i]);
    char line[256];
    if (missing != nullptr) {
        std::snprintf(line, sizeof line, "libc has no '%s'; pipespin stays in pass-through",
                      missing);
        report::write(LogLevel::Warn, line);
        return;
    }
    const int cpus = sys::usable_cpus();
    configure(options, cpus);
    if (cpus < 2 && options.mode() != Mode::Off)
        report::write(LogLevel::Info, "one usable CPU: nobody to spin for, spinning disabled");
    if (report::enabled(LogLevel::Debug)) {
        std::snprintf(line, sizeof line, "pid %d mode=%s spin_us=%u cpus=%d", ::getpid(),
                      kModeNames[static_cast<int>(options.mode())], options.spin_us, cpus);
        report::write(LogLevel::Debug, line);
    }
    // No lock is ever held across fork; but a reference another thread held
    // to a pipe (see engine.cpp, Hold) must not live on in the child.
    pthread_atfork(nullptr, nullptr, [] { close_holds_after_fork(); });
    g_ready.store(true, std::memory_order_release);
}

__attribute__((destructor)) void pipespin_fini() {
    write_exit_report();
}

}  // namespace

void write_exit_report() noexcept {
    // Once per process: a program that closes its stderr gets the report
    // just before (see fclose in hooks.cpp), not again at exit.
    static std::atomic<bool> done{false};
    if (!g_ready.load() || !report::enabled(LogLevel::Info) || done.exchange(true)) return;
    BusyScope busy;
    char line[256];
    for (Dir d : {Dir::Read, Dir::Write}) {
        Totals t = totals(d);
        std::snprintf(
            line, sizeof line, "exit pid=%d %s: waits=%llu spins=%llu spin_hits=%llu spin_us=%llu",
            ::getpid(), d == Dir::Read ? "read" : "write", static_cast<unsigned long long>(t.waits),
            static_cast<unsigned long long>(t.spins), static_cast<unsigned long long>(t.spin_hits),
            static_cast<unsigned long long>(t.spin_ns / 1000));
        report::write(LogLevel::Info, line);
    }
    // Which hooks the spins came through: spins/hits per family.
    int n = std::snprintf(line, sizeof line, "exit pid=%d spins by hook:", ::getpid());
    for (int v = 0; v < kViaCount && n > 0 && static_cast<std::size_t>(n) < sizeof line; ++v) {
        const ViaTotals t = via_totals(static_cast<Via>(v));
        n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), " %s=%llu/%llu",
                           via_name(static_cast<Via>(v)), static_cast<unsigned long long>(t.spins),
                           static_cast<unsigned long long>(t.spin_hits));
    }
    report::write(LogLevel::Info, line);
}

}  // namespace pipespin::interpose
