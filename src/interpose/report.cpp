#include "interpose/report.h"

#include <dlfcn.h>
#include <errno.h>  // program_invocation_short_name
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "interpose/real.h"
#include "platform/sys.h"
#include "report/log_abi.h"

namespace pipespin::report {
namespace {

// The message library's contract (report/log_abi.h): its levels are ours
// (LogLevel is made from its PIPESPIN_LOG_LEVELS).
using log_abi::LogFn;

extern "C" char** environ;

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
    if (handle != nullptr) g_sink = reinterpret_cast<LogFn>(dlsym(handle, log_abi::kEntryName));
    g_state.store(g_sink != nullptr ? 1 : 2, std::memory_order_release);
    return g_sink;
}

std::atomic<bool> g_stderr_released{false};

// Who is speaking, as every line says: "pipespin[PROG:PID]". The name is
// glibc's (set before any constructor: no system call), the pid asked for
// each message (a forked child is another process).
const char* program_name() noexcept {
    return program_invocation_short_name != nullptr ? program_invocation_short_name : "";
}

// Whether fd 2 is the journal's stream: systemd sets JOURNAL_STREAM to its
// "device:inode" for a service whose stderr goes to the journal, and the
// variable is inherited by children whose stderr may be another file. Looked
// at for each message written there, never at start-up: read from environ
// (no libc call) and one fstat.
bool stderr_is_journal() noexcept {
    const char* value = nullptr;
    constexpr char kVar[] = "JOURNAL_STREAM=";
    for (char** e = environ; e != nullptr && *e != nullptr && value == nullptr; ++e) {
        std::size_t i = 0;
        while (kVar[i] != '\0' && (*e)[i] == kVar[i]) ++i;
        if (kVar[i] == '\0') value = *e + i;
    }
    if (value == nullptr) return false;
    unsigned long long dev = 0, ino = 0;
    const char* p = value;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') dev = dev * 10 + static_cast<unsigned>(*p++ - '0');
    if (*p++ != ':' || *p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') ino = ino * 10 + static_cast<unsigned>(*p++ - '0');
    if (*p != '\0') return false;
    struct stat st {};
    if (sys::own(SYS_fstat, 2, reinterpret_cast<long>(&st)) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == dev &&
           static_cast<unsigned long long>(st.st_ino) == ino;
}

// One line as the message library formats it (log_abi.h), with a plain
// write(2). Returns what the write returned (0 when there was nothing to
// write).
long fallback(int fd, LogLevel level, const char* message, bool journal) noexcept {
    if (fd == 2 && g_stderr_released.load(std::memory_order_relaxed)) return 0;
    char line[1024];
    std::size_t n = 0;
    auto put = [&](const char* s) {
        while (*s && n + 2 < sizeof line) line[n++] = *s++;
    };
    const int idx = static_cast<int>(level);
    const int at = idx >= 0 && idx < log_abi::kLevels ? idx : log_abi::kOff;
    char pid[24];
    std::snprintf(pid, sizeof pid, "%ld", sys::own(SYS_getpid));
    if (journal) {
        const char prefix[] = {'<', static_cast<char>('0' + log_abi::kSeverities[at]), '>', '\0'};
        put(prefix);
    }
    put("pipespin[");
    put(program_name());
    put(":");
    put(pid);
    put("]: ");
    put(log_abi::kLabels[at]);
    put(": ");
    put(message);
    line[n++] = '\n';
    // The program's stderr may be a pipe nobody reads: a little wait for
    // room, then the line is dropped.
    return sys::write_out(fd, line, n, fd == 2 ? sys::kStderrWaitMs : -1);
}

// The log file's path ("" for stderr), under a sequence lock: a reload may
// change it while another thread writes a message. Byte-wise atomics keep
// the race defined; a reader retries until it saw one whole version (and
// gives up for stderr if the writer was interrupted on its own thread).
constexpr std::size_t kPathMax = sizeof(TextValue::s);
std::atomic<std::uint32_t> g_path_seq{0};
std::atomic<char> g_path[kPathMax];
std::atomic<bool> g_path_warned{false};

void read_path(char (&out)[kPathMax]) noexcept {
    out[0] = '\0';
    for (int tries = 0; tries < 10000; ++tries) {
        const std::uint32_t before = g_path_seq.load(std::memory_order_acquire);
        if (before & 1) continue;
        for (std::size_t i = 0; i < kPathMax; ++i)
            out[i] = g_path[i].load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (g_path_seq.load(std::memory_order_relaxed) == before) {
            out[kPathMax - 1] = '\0';
            return;
        }
    }
    out[0] = '\0';
}

// The log file refused a line (EFBIG past RLIMIT_FSIZE, ENOSPC, ...): the
// line goes to stderr, with one warning per path.
void unwritable_log(long err, LogLevel level, const char* message) noexcept {
    if (!g_path_warned.exchange(true)) {
        char path[kPathMax];
        read_path(path);
        const char* why = strerrorname_np(static_cast<int>(err));
        char line[kPathMax + 96];
        std::snprintf(line, sizeof line,
                      "cannot write to log_file '%s' (%s); messages go to stderr", path,
                      why != nullptr ? why : "error");
        fallback(2, LogLevel::Warn, line, stderr_is_journal());
    }
    fallback(2, level, message, stderr_is_journal());
}

// log_file's words for the syslog socket: "syslog" and "journal" (journald
// listens on /dev/log too), "/dev/log" itself (the spelling a config file
// owned by root accepts: an absolute path), and "syslog:PATH" for another
// socket. Returns the socket's path, or null for a file.
const char* syslog_socket(const char* path) noexcept {
    auto is = [&](const char* word) {
        std::size_t i = 0;
        while (word[i] != '\0' && path[i] == word[i]) ++i;
        return word[i] == '\0' ? path + i : nullptr;
    };
    if (const char* rest = is("syslog"); rest && *rest == '\0') return log_abi::kSyslogPath;
    if (const char* rest = is("journal"); rest && *rest == '\0') return log_abi::kSyslogPath;
    if (const char* rest = is(log_abi::kSyslogPath); rest && *rest == '\0')
        return log_abi::kSyslogPath;
    if (const char* rest = is("syslog:"); rest && *rest != '\0') return rest;
    return nullptr;
}

// Where this message goes: 2, the log file opened for it (closed by the
// caller), or log_abi::kSyslog with `socket` filled. Warns on stderr once
// when the file cannot be opened.
int open_destination(char (&socket)[kPathMax]) noexcept {
    char path[kPathMax];
    read_path(path);
    if (path[0] == '\0') return 2;
    if (const char* s = syslog_socket(path)) {
        std::size_t i = 0;
        for (; s[i] != '\0' && i + 1 < kPathMax; ++i) socket[i] = s[i];
        socket[i] = '\0';
        return log_abi::kSyslog;
    }
    const long fd = sys::open_append(path);
    if (fd >= 0) return static_cast<int>(fd);
    if (!g_path_warned.exchange(true)) {
        const char* why = fd == sys::kNotRegular ? "not a regular file or a terminal"
                                                 : strerrorname_np(static_cast<int>(-fd));
        char line[kPathMax + 96];
        std::snprintf(line, sizeof line, "cannot use log_file '%s' (%s); messages go to stderr",
                      path, why != nullptr ? why : "error");
        fallback(2, LogLevel::Warn, line, stderr_is_journal());
    }
    return 2;
}

// The syslog socket took nothing (no syslogd, no such socket, no message
// library to send with): the line goes to stderr, with one warning.
void unusable_syslog(const char* socket, LogLevel level, const char* message) noexcept {
    if (stderr_released()) return;
    const bool journal = stderr_is_journal();
    if (!g_path_warned.exchange(true)) {
        char line[kPathMax + 96];
        std::snprintf(line, sizeof line,
                      "cannot send to the syslog socket '%s'; messages go to stderr", socket);
        fallback(2, LogLevel::Warn, line, journal);
    }
    fallback(2, level, message, journal);
}

}  // namespace

void set_log_file(std::string_view path) noexcept {
    if (path == "stderr") path = {};
    if (path.size() >= kPathMax) path = std::string_view(path.data(), kPathMax - 1);
    // The same path (stderr, at every start-up): nothing to write. Every
    // store below fills the whole array, so past its first '\0' g_path holds
    // only '\0's: comparing up to the end of `path` says it all.
    bool same = true;
    for (std::size_t i = 0; i <= path.size() && same; ++i)
        same = g_path[i].load(std::memory_order_relaxed) == (i < path.size() ? path[i] : '\0');
    if (same) return;
    g_path_seq.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
    for (std::size_t i = 0; i < kPathMax; ++i)
        g_path[i].store(i < path.size() ? path[i] : '\0', std::memory_order_relaxed);
    g_path_seq.fetch_add(1, std::memory_order_release);
    g_path_warned.store(false);
}

void set_level(LogLevel level) noexcept {
    if (g_level.load() != static_cast<std::uint32_t>(level))
        g_level.store(static_cast<std::uint32_t>(level));
}

bool enabled(LogLevel l) noexcept {
    return l != LogLevel::Off && static_cast<std::uint32_t>(l) <= g_level.load();
}

void write(LogLevel level, const char* message, bool may_load) noexcept {
    if (!enabled(level)) return;
    if (level == LogLevel::Warn) {
        int n = g_warnings.fetch_add(1);
        if (n > kMaxWarnings) return;
        if (n == kMaxWarnings) message = "further warnings suppressed";
    }
    // Signals wait for the line: a handler's siglongjmp out of it would leave
    // t_busy set (as in reload(), settings.cpp); and what the line's write
    // raises (SIGPIPE, SIGXFSZ) is not delivered (sys::OutputGuard).
    const sys::OutputGuard quiet;
    interpose::BusyScope busy;  // the sink's own I/O must not come back here
    char socket[kPathMax];
    const int fd = open_destination(socket);
    // Inside a program's call only raw syscalls: no dlopen, no lock, no
    // cancellation point (the line is the same).
    LogFn fn = may_load ? sink() : nullptr;
    log_abi::Record record{
        fd, static_cast<int>(level), 0, sys::own(SYS_getpid), program_name(), message, socket};
    if (fd == log_abi::kSyslog) {
        if (fn == nullptr || fn(&record) != 0) unusable_syslog(socket, level, message);
        return;
    }
    if (fd == 2 && stderr_released()) return;
    // The program's stderr may be a pipe nobody reads: the line waits a
    // little for room, then is dropped, never holding the host (the sink
    // writes it whole: a line is far below PIPE_BUF).
    if (fd == 2 && !sys::wait_for_room(2, sys::kStderrWaitMs)) return;
    const bool journal = fd == 2 && stderr_is_journal();
    if (journal) record.flags |= log_abi::kJournalPrefix;
    if (fn == nullptr || fn(&record) != 0) {
        const long w = fallback(fd, level, message, journal);
        if (w < 0 && fd != 2) unwritable_log(-w, level, message);
    }
    if (fd != 2) sys::close(fd);
}

void release_stderr() noexcept {
    if (!g_stderr_released.load(std::memory_order_relaxed))
        g_stderr_released.store(true, std::memory_order_relaxed);
}

bool stderr_released() noexcept {
    return g_stderr_released.load(std::memory_order_relaxed);
}

}  // namespace pipespin::report
