// Start-up and exit of the shim inside the host process.
//
// The constructor resolves the real functions, reads the configuration and
// only then engages the wrappers. Any failure leaves the shim in plain
// pass-through with one warning; it never aborts or exits the host.
#include <cstdlib>
#include <exception>

#include <fmt/format.h>

#include "core/engine.h"
#include "core/log.h"
#include "core/options.h"
#include "interpose/real.h"
#include "platform/sys.h"

namespace pipespin::interpose {
namespace {

const char* secure_env(const char* name, void*) { return ::secure_getenv(name); }

constexpr std::string_view kModeNames[] = {"off", "fixed", "adaptive"};

__attribute__((constructor)) void pipespin_init() {
    BusyScope busy;
    try {
        const char* missing = resolve_all();
        Resolved r = resolve_from_env(secure_env, nullptr);
        log::set_level(r.options.log());
        for (const auto& w : r.warnings) log::warn(w);
        if (missing != nullptr) {
            log::warn(fmt::format("libc has no '{}'; pipespin stays in pass-through", missing));
            return;
        }
        const int cpus = sys::usable_cpus();
        configure(r.options, cpus);
        if (cpus < 2 && r.options.mode() != Mode::Off)
            log::info("one usable CPU: nobody to spin for, spinning disabled");
        log::write(LogLevel::Debug,
                   fmt::format("pid {} mode={} spin_us={} cpus={}", ::getpid(),
                               kModeNames[static_cast<int>(r.options.mode())],
                               r.options.spin_us, cpus));
        g_ready.store(true, std::memory_order_release);
    } catch (const std::exception& e) {
        log::warn(fmt::format("start-up failed ({}); pipespin stays in pass-through", e.what()));
    } catch (...) {
        log::warn("start-up failed; pipespin stays in pass-through");
    }
}

__attribute__((destructor)) void pipespin_fini() {
    if (!g_ready.load() || !log::enabled(LogLevel::Info)) return;
    BusyScope busy;
    try {
        for (Dir d : {Dir::Read, Dir::Write}) {
            Totals t = totals(d);
            log::info(fmt::format("exit pid={} {}: waits={} spins={} spin_hits={} spin_us={}",
                                  ::getpid(), d == Dir::Read ? "read" : "write", t.waits,
                                  t.spins, t.spin_hits, t.spin_ns / 1000));
        }
    } catch (...) {
    }
}

}  // namespace
}  // namespace pipespin::interpose
