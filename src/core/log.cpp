#include "core/log.h"

#include <atomic>

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace pipespin::log {
namespace {

std::atomic<std::uint32_t> g_level{static_cast<std::uint32_t>(LogLevel::Warn)};
std::atomic<int> g_warnings{0};
constexpr int kMaxWarnings = 20;

spdlog::level::level_enum to_spdlog(LogLevel l) {
    switch (l) {
        case LogLevel::Error: return spdlog::level::err;
        case LogLevel::Warn: return spdlog::level::warn;
        case LogLevel::Info: return spdlog::level::info;
        case LogLevel::Debug: return spdlog::level::debug;
        case LogLevel::Off: break;
    }
    return spdlog::level::off;
}

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

}  // namespace

void set_level(LogLevel level) noexcept { g_level.store(static_cast<std::uint32_t>(level)); }
LogLevel level() noexcept { return static_cast<LogLevel>(g_level.load()); }

bool enabled(LogLevel l) noexcept {
    return l != LogLevel::Off && static_cast<std::uint32_t>(l) <= g_level.load();
}

void write(LogLevel l, std::string_view message) noexcept {
    if (!enabled(l)) return;
    if (l == LogLevel::Warn) {
        int n = g_warnings.fetch_add(1);
        if (n > kMaxWarnings) return;
        if (n == kMaxWarnings) message = "further warnings suppressed";
    }
    try {
        logger().log(to_spdlog(l), message);
    } catch (...) {
        // A failing logger must not take the host program down.
    }
}

}  // namespace pipespin::log
