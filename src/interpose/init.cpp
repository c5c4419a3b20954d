// Start-up and exit of the shim inside the host process.
//
// The constructor resolves the real functions, reads the configuration
// (interpose/settings.h) and only then engages the wrappers. Any failure
// leaves the shim in plain pass-through with one warning; it never aborts or
// exits the host. Nothing here allocates: a process with nothing to report
// and no config file pays for a few getenv calls, one failed stat of
// /etc/pipespin.conf and, unless it is in mode off for good, one
// sched_getaffinity.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "core/engine.h"
#include "core/options.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "interpose/settings.h"
#include "interpose/signals.h"
#include "interpose/stats.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

// The per-process summary at info level: one line per direction, one with
// the spins per hook family, and in mode fixed one per direction whose
// spins mostly missed (fixed_mostly_missed(), core/stats.h).
void exit_report() noexcept {
    StatsSnapshot snap;
    stats_snapshot(snap);
    char line[384];
    for (StatDir d : {StatDir::Read, StatDir::Write, StatDir::Poll}) {
        const Counters t = snap.total(d);
        std::snprintf(line, sizeof line,
                      "exit pid=%d %s: waits=%llu spins=%llu spin_hits=%llu spin_us=%llu "
                      "sleep_us=%llu calls=%llu",
                      ::getpid(), dir_name(d).data(), static_cast<unsigned long long>(t.waits),
                      static_cast<unsigned long long>(t.spins),
                      static_cast<unsigned long long>(t.spin_hits),
                      static_cast<unsigned long long>(t.spin_ns / 1000),
                      static_cast<unsigned long long>(t.sleep_ns / 1000),
                      static_cast<unsigned long long>(t.calls));
        report::write(LogLevel::Info, line);
    }
    // Fixed mode spins on every wait; where its spins mostly missed, it
    // paid CPU (and, with both ends on one CPU, time) for nothing, which
    // adaptive mode would not have (docs/deploy.md, the modes).
    const Runtime& rt = runtime();
    if (rt.mode.load() == Mode::Fixed) {
        for (StatDir d : {StatDir::Read, StatDir::Write, StatDir::Poll}) {
            const Counters t = snap.total(d);
            if (!fixed_mostly_missed(t.spins, t.spin_hits)) continue;
            std::snprintf(line, sizeof line,
                          "exit pid=%d %s: mode fixed: %llu of %llu spins missed (%llu%%): the "
                          "peer answers later than spin_us, or shares this CPU; adaptive mode "
                          "would have stopped spinning",
                          ::getpid(), dir_name(d).data(),
                          static_cast<unsigned long long>(t.spins - t.spin_hits),
                          static_cast<unsigned long long>(t.spins),
                          static_cast<unsigned long long>(100 * (t.spins - t.spin_hits) / t.spins));
            report::write(LogLevel::Info, line);
        }
    }
    // What the process ended with (a live reload may have changed it).
    std::snprintf(line, sizeof line, "exit pid=%d settings: mode=%s spin_us=%llu reloads=%u",
                  ::getpid(), name_of(rt.mode.load()).data(),
                  static_cast<unsigned long long>(rt.max_spin_ns.load() / 1000), reload_count());
    report::write(LogLevel::Info, line);
    // Which hooks the spins came through: spins/hits per family.
    int n = std::snprintf(line, sizeof line, "exit pid=%d spins by hook:", ::getpid());
    for (int v = 0; v < kViaCount && n > 0 && static_cast<std::size_t>(n) < sizeof line; ++v) {
        const ViaCount& t = snap.via[v];
        n += std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), " %s=%llu/%llu",
                           via_name(static_cast<Via>(v)).data(),
                           static_cast<unsigned long long>(t.spins),
                           static_cast<unsigned long long>(t.spin_hits));
    }
    report::write(LogLevel::Info, line);
}

// The summary, once per process: at exit, or just before the program closes
// its stderr (before_stderr_closes()), whichever comes first.
void write_exit_report() noexcept {
    static std::atomic<bool> done{false};
    if (!g_ready.load() || !report::enabled(LogLevel::Info) || done.exchange(true)) return;
    exit_report();
}

// A sandbox is (or is about to be) in place: mode off with nothing to
// report, for good. apply_options() makes no system call for it that the
// program's sandbox could refuse but the ones the shim already made (it
// unwraps the handlers it wrapped, before the filter).
std::atomic<bool> g_sandboxed{false};

void step_aside() noexcept {
    set_reload_hook(nullptr);
    Options off;
    off.mode_v = static_cast<std::uint32_t>(Mode::Off);
    off.stats = TextValue{};
    off.log_v = static_cast<std::uint32_t>(LogLevel::Off);
    off.ab_period = 0;
    const OptionSources defaults;
    apply_options(off, defaults);
}

__attribute__((constructor)) void pipespin_init() {
    BusyScope busy;
    if (g_sandboxed.load()) {  // prctl() before this constructor: no file, no variable
        step_aside();
        g_ready.store(true, std::memory_order_release);
        return;
    }
    Options options;
    OptionSources sources;
    resolve_startup_options(options, sources);
    char line[256];
    const Arm arm = apply_options(options, sources);
    // A program started with its fd 2 closed: the first file it opens takes
    // the number, and what the shim writes "to stderr" at exit would go into
    // it. Asked (one fcntl) only where something will be written there then:
    // the report at log=info, statistics lines to stderr. Read from the
    // options in hand: asking the report and statistics modules would touch
    // a page of theirs that most processes never touch (a page fault each).
    if ((options.log() >= LogLevel::Info || options.stats.view() == "stderr") &&
        sys::getfl(2) == -EBADF)
        report::release_stderr();
    report_problems(true);
    const int cpus = usable_cpus_seen();
    if (cpus < 2 && options.mode() != Mode::Off)
        report::write(LogLevel::Info, "one usable CPU: nobody to spin for, spinning disabled");
    if (report::enabled(LogLevel::Debug)) {
        std::snprintf(line, sizeof line, "pid %d mode=%s spin_us=%u cpus=%d arm=%s", ::getpid(),
                      name_of(options.mode()).data(), options.spin_us, cpus, arm_name(arm).data());
        report::write(LogLevel::Debug, line);
        report_resolved(options, sources, true);
    }
    watch_config();
    g_ready.store(true, std::memory_order_release);
}

__attribute__((destructor)) void pipespin_fini() {
    if (!g_ready.load()) return;
    BusyScope busy;
    stats_exit();
    write_exit_report();
}

}  // namespace

void counters_are_read() noexcept {
    // A forked child starts its own counters and clock: needed only where
    // something reads them (statistics lines, the exit summary), so only
    // then is there a fork handler (registering one costs every process,
    // and each fork a call). Its locks need none (ProcessLock). A reload
    // that turns lines on registers it then; the child writes as little as
    // it can (each page it shares with its parent and writes is a
    // copy-on-write fault).
    static std::atomic<bool> registered{false};
    if (registered.load(std::memory_order_relaxed) || registered.exchange(true)) return;
    pthread_atfork(nullptr, nullptr, [] {
        after_fork_child(stats_enabled() || report::enabled(LogLevel::Info));
        stats_after_fork();
    });
}

void before_sandbox() noexcept {
    if (in_vfork_child() || g_sandboxed.exchange(true)) return;
    if (g_ready.load()) {  // else the constructor will see g_sandboxed
        BusyScope busy;
        stats_exit();
        write_exit_report();
        step_aside();
    }
    // Last: every system call of the shim's own is refused from here, in
    // this thread and, once this returns, in every other (platform/gate.h).
    sys::close_gate();
}

void before_stderr_closes() noexcept {
    if (!g_ready.load()) return;
    BusyScope busy;
    // With PIPESPIN_STATS=stderr the exit line has nowhere to go later
    // either: it is written now, and only now (stats_exit() writes it once).
    // Without statistics the module's code is not even reached: `true`
    // closes its stderr at exit, and a page fault on that code would be one
    // of its own.
    if (stats_enabled()) {
        if (stats_to_stderr()) stats_exit();
        stats_before_stderr_closes();
    }
    write_exit_report();
}

}  // namespace pipespin::interpose
