// libpipespin-log.so: the shim's spdlog sink, loaded by the shim (dlopen)
// only when it has something to say. Keeping spdlog, fmt and the C++ runtime
// out of libpipespin.so keeps every wrapped process's start-up cheap: most
// processes never load this library.
//
// Contract: exports exactly pipespin_log_v1; never throws into the caller.
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <memory>

namespace {

spdlog::logger& logger() {
    // Never destroyed: the exit report may run after static destructors.
    static spdlog::logger* lg = [] {
        auto* l = new spdlog::logger("pipespin", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        l->set_pattern("pipespin: %l: %v");
        l->set_level(spdlog::level::trace);
        l->flush_on(spdlog::level::trace);
        return l;
    }();
    return *lg;
}

spdlog::level::level_enum to_spdlog(int level) {
    switch (level) {
        case 1:
            return spdlog::level::err;
        case 2:
            return spdlog::level::warn;
        case 3:
            return spdlog::level::info;
        case 4:
            return spdlog::level::debug;
        default:
            return spdlog::level::off;
    }
}

}  // namespace

// level: 1 error, 2 warn, 3 info, 4 debug (pipespin::LogLevel).
extern "C" __attribute__((visibility("default"))) int pipespin_log_v1(
    int level, const char* message) noexcept {
    try {
        logger().log(to_spdlog(level), message);
        return 0;
    } catch (...) {
        return -1;
    }
}
