// libpipespin-log.so: the shim's spdlog sink, loaded by the shim (dlopen)
// only when it has something to say. Keeping spdlog, fmt and the C++ runtime
// out of libpipespin.so keeps every wrapped process's start-up cheap: most
// processes never load this library.
//
// Contract: src/report/log_abi.h (exports exactly its entry point; never
// throws into the caller).
#include <spdlog/details/log_msg.h>
#include <spdlog/pattern_formatter.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <memory>
#include <mutex>
#include <type_traits>

#include "report/log_abi.h"

namespace {

namespace abi = pipespin::log_abi;

// Formats "pipespin: <level>: <text>" lines, the level's label from
// log_abi.h in the text. The shim owns the destination (stderr or the log
// file, see log_file) and hands over a fd per message.
struct Formatter {
    std::mutex mutex;
    spdlog::pattern_formatter pattern{"pipespin: %v"};
};

Formatter& formatter() {
    // Never destroyed: the exit report may run after static destructors.
    static Formatter* f = new Formatter;
    return *f;
}

bool write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

spdlog::level::level_enum to_spdlog(int level) {
    switch (level) {
        case abi::kError:
            return spdlog::level::err;
        case abi::kWarn:
            return spdlog::level::warn;
        case abi::kInfo:
            return spdlog::level::info;
        case abi::kDebug:
            return spdlog::level::debug;
        default:
            return spdlog::level::off;
    }
}

}  // namespace

// One write per line, so lines from several processes appending to one file
// do not interleave. Returns 0, or -1 if nothing could be written.
extern "C" __attribute__((visibility("default"))) int PIPESPIN_LOG_ENTRY(
    int fd, int level, const char* message) noexcept {
    try {
        spdlog::memory_buf_t text;
        const char* label = abi::kLabels[level > 0 && level < abi::kLevels ? level : abi::kOff];
        fmt::format_to(std::back_inserter(text), "{}: {}", label, message);
        spdlog::details::log_msg msg("pipespin", to_spdlog(level),
                                     spdlog::string_view_t(text.data(), text.size()));
        spdlog::memory_buf_t line;
        {
            Formatter& f = formatter();
            std::lock_guard lock(f.mutex);
            f.pattern.format(msg, line);
        }
        return write_all(fd, line.data(), line.size()) ? 0 : -1;
    } catch (...) {
        return -1;
    }
}
static_assert(std::is_same_v<decltype(&PIPESPIN_LOG_ENTRY), abi::LogFn>,
              "the entry point has the type log_abi.h gives it");
