#include "interpose/report.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "interpose/real.h"
#include "platform/sys.h"

namespace pipespin::report {
namespace {

using LogFn = int (*)(int, const char*) noexcept;

std::atomic<std::uint32_t> g_level{static_cast<std::uint32_t>(LogLevel::Warn)};
std::atomic<int> g_warnings{0};
constexpr int kMaxWarnings = 20;

// 0: not tried, 1: loaded, 2: unavailable (use the fallback).
std::atomic<int> g_state{0};
LogFn g_sink = nullptr;

LogFn sink() noexcept {
    int state = g_state.load(std::memory_order_acquire);
    if (state == 1) return g_sink;
    if (state == 2) return nullptr;
    // Find the sink beside this library.
    Dl_info info{};
    char path[4096];
    void* handle = nullptr;
    if (dladdr(reinterpret_cast<void*>(&sink), &info) != 0 && info.dli_fname != nullptr) {
        const char* slash = std::strrchr(info.dli_fname, '/');
        std::size_t dir = slash ? static_cast<std::size_t>(slash - info.dli_fname + 1) : 0;
        constexpr char kName[] = "libpipespin-log.so";
        if (dir + sizeof kName <= sizeof path) {
            std::memcpy(path, info.dli_fname, dir);
            std::memcpy(path + dir, kName, sizeof kName);
            handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    }
    if (handle != nullptr) g_sink = reinterpret_cast<LogFn>(dlsym(handle, "pipespin_log_v1"));
    g_state.store(g_sink != nullptr ? 1 : 2, std::memory_order_release);
    return g_sink;
}

void fallback(LogLevel level, const char* message) noexcept {
    static constexpr const char* kNames[] = {"off", "error", "warning", "info", "debug"};
    char line[1024];
    std::size_t n = 0;
    auto put = [&](const char* s) {
        while (*s && n + 2 < sizeof line) line[n++] = *s++;
    };
    put("pipespin: ");
    const int idx = static_cast<int>(level);
    put(kNames[idx >= 0 && idx < 5 ? idx : 0]);
    put(": ");
    put(message);
    line[n++] = '\n';
    sys::write(2, line, n);
}

}  // namespace

void set_level(LogLevel level) noexcept {
    g_level.store(static_cast<std::uint32_t>(level));
}

bool enabled(LogLevel l) noexcept {
    return l != LogLevel::Off && static_cast<std::uint32_t>(l) <= g_level.load();
}

void write(LogLevel level, const char* message) noexcept {
    if (!enabled(level)) return;
    if (level == LogLevel::Warn) {
        int n = g_warnings.fetch_add(1);
        if (n > kMaxWarnings) return;
        if (n == kMaxWarnings) message = "further warnings suppressed";
    }
    interpose::BusyScope busy;  // the sink's own I/O must not come back here
    LogFn fn = sink();
    if (fn == nullptr || fn(static_cast<int>(level), message) != 0) fallback(level, message);
}

}  // namespace pipespin::report
