// Raw system calls, clocks and CPU hints for the shim.
//
// Contract: every function here is async-signal-safe, allocates nothing,
// never touches errno and never goes through the PLT to a libc name that the
// shim interposes. Results follow the kernel convention: >= 0 on success,
// -errno on failure. The core uses these to probe a pipe; the real libc
// function (resolved by the interpose layer) is always the one whose result
// the program sees.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include <sys/syscall.h>
#include <sys/uio.h>

// The libc functions a call of the program's may reach in the shim (and so
// in a signal handler) are bound at load time, not lazily on first use: a
// lazy binding in a handler would run the loader's resolver on the
// handler's stack (kilobytes for its register save area), maybe a tiny
// alternate stack; and in a forked child whose parent never made the call,
// each child binds it afresh (getauxval: 7 page faults a child, on the
// loader's code and the symbol tables). The rest (configuration, messages)
// bind lazily, so that a process pays for the ones it uses.
extern "C" {
int clock_gettime(clockid_t, struct timespec*) noexcept __attribute__((noplt));
int* __errno_location() noexcept __attribute__((noplt, const));
void pthread_testcancel() __attribute__((noplt));
void* memcpy(void*, const void*, std::size_t) noexcept __attribute__((noplt));
struct dl_find_object;
int _dl_find_object(void*, struct dl_find_object*) noexcept __attribute__((noplt));
int __libc_current_sigrtmin() noexcept __attribute__((noplt));
unsigned long getauxval(unsigned long) noexcept __attribute__((noplt));
}

// Memory that start-up does not touch (buffers for a config file, a
// /proc read, the fd table): kept together after everything else in .bss
// (the shim links with --sort-section=name), so that the few small
// variables every process touches at start-up share one or two pages:
// each page touched is a page fault in every process.
#define PIPESPIN_COLD [[gnu::section(".bss.zz.cold")]]

namespace pipespin::sys {

#if defined(__x86_64__)
inline long raw6(long nr, long a, long b, long c, long d, long e, long f) noexcept {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#else
// Portable fallback: libc's syscall() is not interposed by us; keep errno.
long raw6(long nr, long a, long b, long c, long d, long e, long f) noexcept;
#endif

// A call the program made, made raw (before the shim has resolved libc's
// function for it): never refused.
inline long raw(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                long f = 0) noexcept {
    return raw6(nr, a, b, c, d, e, f);
}

}  // namespace pipespin::sys

#include "platform/gate.h"

namespace pipespin::sys {

// A call of the shim's own (every function below makes its calls so):
// through the gate that a sandbox closes (gate.h), -EPERM from then on.
inline long own(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                long f = 0) noexcept {
    return own6(nr, a, b, c, d, e, f);
}

// Puts back the errno a wrapper saved, with no store when it still holds
// it: errno lives on libc's TLS page, which a process that forks copies (a
// copy-on-write fault) at its first write after each fork; a shell's
// parent read its $(...) pipe with a fault more per child for this store.
inline void restore_errno(int saved) noexcept {
    if (errno != saved) errno = saved;
}

// Event bits we ask for and get back; same values as <poll.h>.
inline constexpr short kPollIn = 0x001;
inline constexpr short kPollOut = 0x004;
inline constexpr short kPollErr = 0x008;
inline constexpr short kPollHup = 0x010;
inline constexpr short kPollNval = 0x020;

struct PollFd {
    int fd;
    short events;
    short revents;
};

// poll(fds, n, 0): lockless in the kernel for pipes. Returns ready count or -errno.
long poll0(void* fds, unsigned long nfds) noexcept;
// One fd: returns revents (0 when nothing is ready) or -errno.
long poll0_one(int fd, short events) noexcept;
// preadv2/pwritev2 at the current file position with RWF_NOWAIT. The
// reads are inline: a spin's look is one call (the gate's), in the frame
// that runs the spin loop.
inline long read_nowait(int fd, void* buf, std::size_t n) noexcept {
    iovec iov{buf, n};
    return own(SYS_preadv2, fd, reinterpret_cast<long>(&iov), 1, -1, -1, RWF_NOWAIT);
}
long write_nowait(int fd, const void* buf, std::size_t n) noexcept;
// The same with an iovec array (readv): the kernel reads the array, so a
// bad one is the call's EFAULT, not a fault here.
inline long readv_nowait(int fd, const void* iov, int iovcnt) noexcept {
    return own(SYS_preadv2, fd, reinterpret_cast<long>(iov), iovcnt, -1, -1, RWF_NOWAIT);
}
long writev_nowait(int fd, const void* iov, int iovcnt) noexcept;
// Zero-timeout probes of whole sets, with the caller's signal mask (8
// bytes, or null) applied by the kernel for the probe, as the call would.
long pselect0(int nfds, void* rfds, void* wfds, void* efds, const void* sigmask) noexcept;
long ppoll0(void* fds, unsigned long nfds, const void* sigmask) noexcept;
long epoll_pwait0(int epfd, void* events, int maxevents, const void* sigmask) noexcept;
// A zero-timeout ppoll on no fds under sigmask (8 bytes): -EINTR after a
// handler ran for a signal the mask lets through (pending, or arriving),
// else 0. What a zero-timeout epoll_pwait does not report.
long poll_signals0(const void* sigmask) noexcept;
// rt_sigprocmask(how, set, old) on the 64 kernel signals. The kernel reads
// `set` (a caller's mask may be passed as it is: a bad one is -EFAULT).
long change_sigmask(int how, const void* set, std::uint64_t* old) noexcept;
// Every signal blocked on this thread for the scope (the kernel leaves
// SIGKILL and SIGSTOP alone), the thread's own mask back at its end: a
// handler that siglongjmps out of a program's call cannot leave the shim's
// code half-way, a lock held or a flag set, while it is in one of these.
// Two system calls: for slow paths (a reload, an install of handlers, a
// log line), never for a call's own path.
class SignalsBlocked {
public:
    SignalsBlocked() noexcept {
        const std::uint64_t all = ~0ull;
        blocked_ = change_sigmask(kSetMask, &all, &saved_) == 0;
    }
    ~SignalsBlocked() {
        if (blocked_) change_sigmask(kSetMask, &saved_, nullptr);
    }
    SignalsBlocked(const SignalsBlocked&) = delete;
    SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
    static constexpr int kSetMask = 2;  // SIG_SETMASK, without <signal.h> here
    std::uint64_t saved_ = 0;
    bool blocked_;
};
// The shim's own output (a statistics line, a log message) under way: every
// signal blocked, as SignalsBlocked, and, at the end, a SIGPIPE or SIGXFSZ
// that the output raised taken off the thread's pending signals before the
// thread's mask comes back. A write to a pipe or socket whose reader is
// gone, or to a file at RLIMIT_FSIZE (a sandbox's `ulimit -f`), then fails
// with EPIPE or EFBIG and nothing else: the host is not killed for a line
// it never asked for. One the program had pending (blocked) before stays.
// Three or four system calls: for lines, never for a call's own path.
class OutputGuard {
public:
    OutputGuard() noexcept;
    ~OutputGuard();
    OutputGuard(const OutputGuard&) = delete;
    OutputGuard& operator=(const OutputGuard&) = delete;

private:
    std::uint64_t saved_ = 0;
    std::uint64_t pending_before_ = 0;  // of SIGPIPE and SIGXFSZ
    bool blocked_;
};
// Waits at most wait_ms for room to write on fd (a zero-timeout poll
// first): true when there is some, or when the write would fail at once
// (an error, a hang-up: the write says which).
bool wait_for_room(int fd, int wait_ms) noexcept;
// One line of the shim's own to fd, in one write. Where fd is not a file
// the shim opened for it (`wait_ms` >= 0: the program's stderr, maybe a
// pipe whose reader has stopped reading) the line waits at most wait_ms for
// room and is dropped (-EAGAIN) without it: the host is never held by a
// line of the shim's. Returns what write(2) returned, or -errno.
long write_out(int fd, const void* buf, std::size_t n, int wait_ms = -1) noexcept;
// How long a line waits for room on the program's stderr.
inline constexpr int kStderrWaitMs = 100;
// Has the kernel a valid timeout at ts (a caller's struct timespec)? 0 if
// it reads one there, else what epoll_pwait2 would fail with (-EFAULT,
// -EINVAL; -ENOSYS before Linux 5.11). The kernel reads it, not us: this is
// epoll_pwait2 itself, on no epoll fd.
long check_timeout(const void* ts) noexcept;
// Can `bytes` (at least 8) at p be read now? Asked of the kernel, one
// system call per page the range touches (at most two for a fd_set), each
// an rt_sigprocmask with an invalid `how`: the kernel copies the 8 bytes
// of its set argument first (EFAULT if it cannot), then refuses the `how`
// (EINVAL), changing nothing. Every seccomp profile allows rt_sigprocmask
// (libc itself makes it everywhere), unlike process_vm_readv, which
// Docker's default profile refuses and systemd's @system-service leaves
// out. Never faults.
bool readable(const void* p, std::size_t bytes) noexcept;
// ioctl(FIONREAD): bytes queued, or -errno.
long fionread(int fd) noexcept;
// fcntl(F_GETFL), or -errno.
long getfl(int fd) noexcept;
// fcntl(F_GETPIPE_SZ): the pipe's size in bytes, or -errno.
long pipe_size(int fd) noexcept;
// The page size: 4096 on x86; elsewhere getauxval(AT_PAGESZ), which walks
// the auxiliary vector (about a hundred instructions; no system call), read
// once.
std::uint32_t page_size() noexcept;
// fstat(fd) and report whether it is a FIFO; -errno on failure.
long is_fifo(int fd) noexcept;
// fstatfs(fd): 1 if the fd is an anonymous pipe (pipefs), 0 if not, -errno.
long is_pipefs(int fd) noexcept;
long close(int fd) noexcept;
long read(int fd, void* buf, std::size_t n) noexcept;
long write(int fd, const void* buf, std::size_t n) noexcept;
// Gives up the CPU (ProcessLock waits with it).
long sched_yield() noexcept;
// Anonymous private memory (MAP_NORESERVE: the kernel backs each page on
// its first write), or null.
void* map_anon(std::size_t bytes) noexcept;
void unmap(void* p, std::size_t bytes) noexcept;

// What the config loader and its live re-check need to know about a file.
struct FileInfo {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_s = 0, ctime_s = 0;
    std::uint32_t mtime_ns = 0, ctime_ns = 0;
    std::uint32_t mode = 0, uid = 0, gid = 0;
};
// statx of a path (symlinks followed) or of an open fd; 0 or -errno.
long stat_path(const char* path, FileInfo& info) noexcept;
long stat_fd(int fd, FileInfo& info) noexcept;
// open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK): a FIFO or a
// device at the path cannot block the caller. The fd or -errno.
long open_read(const char* path) noexcept;
// The log file and the statistics file: path opened for appending (created
// 0600 if missing), never through a symlink (ELOOP) and never blocking,
// only if it is a regular file or a terminal. A FIFO without a reader is
// ENXIO at the open, not a hang; anything else there (a FIFO somebody
// reads, a directory, a socket, another device) is kNotRegular, found by a
// stat before any open where it can be (a FIFO's reader never sees a
// writer come and go) and checked again on the opened file. The fd, or
// -errno, or kNotRegular.
inline constexpr long kNotRegular = -4096;  // below every -errno
long open_append(const char* path) noexcept;
// readlink(2) without a terminating NUL: the length or -errno.
long readlink(const char* path, char* buf, std::size_t size) noexcept;
long geteuid() noexcept;

// Monotonic nanoseconds (vDSO clock_gettime: async-signal-safe, no syscall).
inline std::uint64_t now_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

// Monotonic nanoseconds at tick resolution (a few ms): cheaper still, for
// rate limits that are measured in milliseconds.
inline std::uint64_t coarse_ns() noexcept {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

// pthread_testcancel(): acts on a pending deferred cancellation (unwinds
// this thread), else returns at once.
void test_cancel();

// CPUs this thread may run on (sched_getaffinity), at least 1.
int usable_cpus() noexcept;

// Runnable tasks on the host now, the caller included (/proc/loadavg, one
// open, read and close), or -1 if the file cannot be read.
long running_tasks() noexcept;
// The runnable tasks in a text of /proc/loadavg's ("0.10 0.20 0.30 3/120
// 4567": 3, the number before the '/') of n bytes, or -1 if there is none.
long parse_running(const char* buf, long n) noexcept;

// This thread's run delay: ns it has spent runnable, waiting for a CPU
// (/proc/thread-self/schedstat, its second field; one open, read and close,
// like running_tasks(), and with the same fd-number caveat: docs/policy.md),
// or -1 if it cannot be read.
std::int64_t run_delay_ns() noexcept;
// The second number in a text of schedstat's ("123 456 7") of n bytes, or -1.
std::int64_t parse_run_delay(const char* buf, long n) noexcept;

}  // namespace pipespin::sys
