// libpipespin-log.so: the shim's spdlog sinks, loaded by the shim (dlopen)
// only when it has something to say. Keeping spdlog, fmt and the C++ runtime
// out of libpipespin.so keeps every wrapped process's start-up cheap: most
// processes never load this library.
//
// Contract: src/report/log_abi.h (exports exactly its entry point; never
// throws into the caller).
#include <spdlog/details/log_msg.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "report/log_abi.h"

namespace {

namespace abi = pipespin::log_abi;

// Formats the lines written to a fd; the text (prefix, program, pid,
// level, message) is made by the entry point. The shim owns the
// destination (stderr or the log file, see log_file) and hands over a fd
// per message.
struct Formatter {
    std::mutex mutex;
    spdlog::pattern_formatter pattern{"%v"};
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

int severity(spdlog::level::level_enum l) {
    switch (l) {
        case spdlog::level::critical:
        case spdlog::level::err:
            return abi::kSeverities[abi::kError];
        case spdlog::level::warn:
            return abi::kSeverities[abi::kWarn];
        case spdlog::level::info:
            return abi::kSeverities[abi::kInfo];
        default:
            return abi::kSeverities[abi::kDebug];
    }
}

// The syslog destination: one datagram per message, in the format glibc's
// syslog(3) sends ("<PRI>Mmm dd hh:mm:ss TAG[PID]: TEXT"), to a unix
// datagram socket. spdlog's own syslog_sink calls syslog(3), which knows
// only /dev/log and keeps a socket open in the host program; this one
// opens the socket for the message and closes it again, like log_file, and
// takes its path (log_file=syslog:PATH), which is how tests own it.
class SyslogSocketSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
public:
    SyslogSocketSink(const char* path, long pid) : path_(path), pid_(pid) {}
    bool sent() const { return sent_; }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        const std::time_t t = std::chrono::system_clock::to_time_t(msg.time);
        std::tm tm{};
        ::localtime_r(&t, &tm);
        char stamp[32];
        std::strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &tm);
        spdlog::memory_buf_t datagram;
        fmt::format_to(std::back_inserter(datagram), "<{}>{} {}[{}]: {}",
                       abi::kSyslogFacilityUser * 8 + severity(msg.level), stamp, msg.logger_name,
                       pid_, msg.payload);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        if (std::strlen(path_) >= sizeof addr.sun_path) return;
        std::strcpy(addr.sun_path, path_);
        const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return;
        ssize_t n;
        do {
            n = ::sendto(fd, datagram.data(), datagram.size(), MSG_NOSIGNAL,
                         reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
        } while (n < 0 && errno == EINTR);
        sent_ = n == static_cast<ssize_t>(datagram.size());
        ::close(fd);
    }
    void flush_() override {}

private:
    const char* path_;
    long pid_;
    bool sent_ = false;
};

}  // namespace

// One write per line, so lines from several processes appending to one file
// do not interleave. Returns 0, or -1 if nothing could be written.
extern "C" __attribute__((visibility("default"))) int PIPESPIN_LOG_ENTRY(
    const abi::Record* r) noexcept {
    try {
        const int level = r->level > 0 && r->level < abi::kLevels ? r->level : abi::kOff;
        const char* program = r->program != nullptr ? r->program : "";
        spdlog::memory_buf_t text;
        if (r->fd == abi::kSyslog) {
            fmt::format_to(std::back_inserter(text), "{}: {}: {}", program, abi::kLabels[level],
                           r->message);
            SyslogSocketSink sink(r->syslog_path != nullptr ? r->syslog_path : abi::kSyslogPath,
                                  r->pid);
            sink.set_level(spdlog::level::trace);
            sink.log(spdlog::details::log_msg("pipespin", to_spdlog(level),
                                              spdlog::string_view_t(text.data(), text.size())));
            return sink.sent() ? 0 : -1;
        }
        if (r->flags & abi::kJournalPrefix)
            fmt::format_to(std::back_inserter(text), "<{}>", abi::kSeverities[level]);
        fmt::format_to(std::back_inserter(text), "pipespin[{}:{}]: {}: {}", program, r->pid,
                       abi::kLabels[level], r->message);
        spdlog::details::log_msg msg("pipespin", to_spdlog(level),
                                     spdlog::string_view_t(text.data(), text.size()));
        spdlog::memory_buf_t line;
        {
            Formatter& f = formatter();
            std::lock_guard lock(f.mutex);
            f.pattern.format(msg, line);
        }
        return write_all(r->fd, line.data(), line.size()) ? 0 : -1;
    } catch (...) {
        return -1;
    }
}
static_assert(std::is_same_v<decltype(&PIPESPIN_LOG_ENTRY), abi::LogFn>,
              "the entry point has the type log_abi.h gives it");
