#include "platform/sys.h"

#include <atomic>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <termios.h>
#include <unistd.h>

namespace pipespin::sys {

#if !defined(__x86_64__)
long raw6(long nr, long a, long b, long c, long d, long e, long f) noexcept {
    int saved = errno;
    long r = ::syscall(nr, a, b, c, d, e, f);
    if (r == -1) r = -errno;
    restore_errno(saved);
    return r;
}
#endif

long poll0(void* fds, unsigned long nfds) noexcept {
    timespec zero{0, 0};
    return own(SYS_ppoll, reinterpret_cast<long>(fds), static_cast<long>(nfds),
               reinterpret_cast<long>(&zero), 0, 8);
}

long poll0_one(int fd, short events) noexcept {
    PollFd p{fd, events, 0};
    long r = poll0(&p, 1);
    if (r < 0) return r;
    return r == 0 ? 0 : static_cast<unsigned short>(p.revents);
}

// On 64-bit kernels the offset is passed as (pos_l, pos_h) and pos_h is
// shifted out; -1 means "the current file position", as read() uses.
long write_nowait(int fd, const void* buf, std::size_t n) noexcept {
    iovec iov{const_cast<void*>(buf), n};
    return own(SYS_pwritev2, fd, reinterpret_cast<long>(&iov), 1, -1, -1, RWF_NOWAIT);
}

long writev_nowait(int fd, const void* iov, int iovcnt) noexcept {
    return own(SYS_pwritev2, fd, reinterpret_cast<long>(iov), iovcnt, -1, -1, RWF_NOWAIT);
}

long pselect0(int nfds, void* rfds, void* wfds, void* efds, const void* sigmask) noexcept {
    timespec zero{0, 0};
    struct {
        const void* set;
        unsigned long size;
    } mask{sigmask, 8};
    return own(SYS_pselect6, nfds, reinterpret_cast<long>(rfds), reinterpret_cast<long>(wfds),
               reinterpret_cast<long>(efds), reinterpret_cast<long>(&zero),
               sigmask != nullptr ? reinterpret_cast<long>(&mask) : 0);
}

long ppoll0(void* fds, unsigned long nfds, const void* sigmask) noexcept {
    timespec zero{0, 0};
    return own(SYS_ppoll, reinterpret_cast<long>(fds), static_cast<long>(nfds),
               reinterpret_cast<long>(&zero), reinterpret_cast<long>(sigmask), 8);
}

long epoll_pwait0(int epfd, void* events, int maxevents, const void* sigmask) noexcept {
    return own(SYS_epoll_pwait, epfd, reinterpret_cast<long>(events), maxevents, 0,
               reinterpret_cast<long>(sigmask), 8);
}

long poll_signals0(const void* sigmask) noexcept {
    timespec zero{0, 0};
    return own(SYS_ppoll, 0, 0, reinterpret_cast<long>(&zero), reinterpret_cast<long>(sigmask), 8);
}

long change_sigmask(int how, const void* set, std::uint64_t* old) noexcept {
    return own(SYS_rt_sigprocmask, how, reinterpret_cast<long>(set), reinterpret_cast<long>(old),
               8);
}

namespace {
constexpr std::uint64_t signal_bit(int sig) {
    return 1ull << (sig - 1);
}
// What the shim's own writes may raise.
constexpr std::uint64_t kOutputSignals = signal_bit(SIGPIPE) | signal_bit(SIGXFSZ);

std::uint64_t pending_signals() noexcept {
    std::uint64_t set = 0;
    return own(SYS_rt_sigpending, reinterpret_cast<long>(&set), 8) == 0 ? set : 0;
}
}  // namespace

OutputGuard::OutputGuard() noexcept {
    const std::uint64_t all = ~0ull;
    blocked_ = change_sigmask(SIG_SETMASK, &all, &saved_) == 0;
    // A signal the thread did not block cannot be pending on it: only
    // where the program blocks one is there something to keep.
    if (blocked_ && (saved_ & kOutputSignals) != 0)
        pending_before_ = pending_signals() & kOutputSignals;
}

OutputGuard::~OutputGuard() {
    if (!blocked_) return;
    std::uint64_t raised = pending_signals() & kOutputSignals & ~pending_before_;
    const timespec zero{0, 0};
    while (raised != 0) {
        // The kernel sent them to this thread: the wait takes this thread's first.
        const std::uint64_t one = raised & -raised;
        own(SYS_rt_sigtimedwait, reinterpret_cast<long>(&one), 0, reinterpret_cast<long>(&zero), 8);
        raised &= raised - 1;
    }
    change_sigmask(SIG_SETMASK, &saved_, nullptr);
}

bool wait_for_room(int fd, int wait_ms) noexcept {
    PollFd p{fd, kPollOut, 0};
    const timespec ts{wait_ms / 1000, (wait_ms % 1000) * 1'000'000L};
    long r;
    do {
        r = own(SYS_ppoll, reinterpret_cast<long>(&p), 1, reinterpret_cast<long>(&ts), 0, 8);
    } while (r == -EINTR);
    return r != 0;
}

long write_out(int fd, const void* buf, std::size_t n, int wait_ms) noexcept {
    if (wait_ms >= 0 && !wait_for_room(fd, wait_ms)) return -EAGAIN;
    long w;
    do {
        w = write(fd, buf, n);
    } while (w == -EINTR);
    return w;
}

long check_timeout(const void* ts) noexcept {
    // The kernel reads and checks the timeout before it looks at the epoll fd.
    long r = own(SYS_epoll_pwait2, -1, 0, 1, reinterpret_cast<long>(ts), 0, 8);
    return r == -EBADF ? 0 : r;
}

bool readable(const void* p, std::size_t bytes) noexcept {
    constexpr long kBadHow = -1;
    const auto probe = [](std::uintptr_t at) noexcept {
        return own(SYS_rt_sigprocmask, kBadHow, static_cast<long>(at), 0, 8) == -EINVAL;
    };
    if (bytes < 8) return false;
    const auto first = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t last = first + bytes - 8;
    // A word at each 4 KiB boundary the range crosses (the smallest page
    // there is: no libc call to ask), and its last one.
    constexpr std::uintptr_t page = 4096;
    for (std::uintptr_t at = first; at < last; at = (at | (page - 1)) + 1)
        if (!probe(at)) return false;
    return probe(last);
}

long fionread(int fd) noexcept {
    int avail = 0;
    long r = own(SYS_ioctl, fd, FIONREAD, reinterpret_cast<long>(&avail));
    return r < 0 ? r : avail;
}

long getfl(int fd) noexcept {
    return own(SYS_fcntl, fd, F_GETFL);
}

long pipe_size(int fd) noexcept {
    return own(SYS_fcntl, fd, F_GETPIPE_SZ);
}

std::uint32_t page_size() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    // The only page size there is: no call (getauxval's first call is a
    // page fault on libc's code in every process that writes a pipe).
    return 4096;
#else
    static constinit std::atomic<std::uint32_t> cached{0};
    std::uint32_t page = cached.load(std::memory_order_relaxed);
    if (page == 0) [[unlikely]] {
        page = static_cast<std::uint32_t>(getauxval(AT_PAGESZ));
        cached.store(page, std::memory_order_relaxed);
    }
    return page;
#endif
}

long is_fifo(int fd) noexcept {
    struct stat st;
    long r = own(SYS_fstat, fd, reinterpret_cast<long>(&st));
    if (r < 0) return r;
    return S_ISFIFO(st.st_mode) ? 1 : 0;
}

long is_pipefs(int fd) noexcept {
    struct statfs sf;
    long r = own(SYS_fstatfs, fd, reinterpret_cast<long>(&sf));
    if (r < 0) return r;
    constexpr long kPipefsMagic = 0x50495045;  // linux/magic.h PIPEFS_MAGIC
    return sf.f_type == kPipefsMagic ? 1 : 0;
}

long close(int fd) noexcept {
    return own(SYS_close, fd);
}

long read(int fd, void* buf, std::size_t n) noexcept {
    return own(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}

long write(int fd, const void* buf, std::size_t n) noexcept {
    return own(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}

void test_cancel() {
    // Not interposed; C++ frames of ours unwind through unwind tables.
    pthread_testcancel();
}

long sched_yield() noexcept {
    return own(SYS_sched_yield);
}

void* map_anon(std::size_t bytes) noexcept {
    const long r = own(SYS_mmap, 0, static_cast<long>(bytes), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // The kernel returns -errno in the last page of the address space.
    if (r < 0 && r > -4096) return nullptr;
    return reinterpret_cast<void*>(r);
}

void unmap(void* p, std::size_t bytes) noexcept {
    own(SYS_munmap, reinterpret_cast<long>(p), static_cast<long>(bytes));
}

namespace {
long statx_into(int dirfd, const char* path, int flags, FileInfo& info) noexcept {
    struct statx sx {};
    long r = own(SYS_statx, dirfd, reinterpret_cast<long>(path), flags, STATX_BASIC_STATS,
                 reinterpret_cast<long>(&sx));
    if (r < 0) return r;
    info.dev = (static_cast<std::uint64_t>(sx.stx_dev_major) << 32) | sx.stx_dev_minor;
    info.ino = sx.stx_ino;
    info.size = sx.stx_size;
    info.mtime_s = sx.stx_mtime.tv_sec;
    info.mtime_ns = sx.stx_mtime.tv_nsec;
    info.ctime_s = sx.stx_ctime.tv_sec;
    info.ctime_ns = sx.stx_ctime.tv_nsec;
    info.mode = sx.stx_mode;
    info.uid = sx.stx_uid;
    info.gid = sx.stx_gid;
    return 0;
}
}  // namespace

long stat_path(const char* path, FileInfo& info) noexcept {
    return statx_into(AT_FDCWD, path, 0, info);
}

long stat_fd(int fd, FileInfo& info) noexcept {
    return statx_into(fd, "", AT_EMPTY_PATH, info);
}

long open_read(const char* path) noexcept {
    return own(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
               O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

namespace {
// A terminal: a character device that answers TCGETS.
bool is_terminal(int fd) noexcept {
    termios t;
    return own(SYS_ioctl, fd, TCGETS, reinterpret_cast<long>(&t)) == 0;
}
}  // namespace

long open_append(const char* path) noexcept {
    FileInfo fi;
    // A symlink is left to the open (ELOOP); nothing there, to its O_CREAT.
    if (statx_into(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, fi) == 0 && !S_ISREG(fi.mode) &&
        !S_ISCHR(fi.mode) && !S_ISLNK(fi.mode))
        return kNotRegular;
    const long fd =
        own(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path),
            O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) return fd;
    // What was opened, which may not be what the stat saw.
    const bool ok = stat_fd(static_cast<int>(fd), fi) == 0 &&
                    (S_ISREG(fi.mode) || (S_ISCHR(fi.mode) && is_terminal(static_cast<int>(fd))));
    if (ok) return fd;
    close(static_cast<int>(fd));
    return kNotRegular;
}

long readlink(const char* path, char* buf, std::size_t size) noexcept {
    return own(SYS_readlinkat, AT_FDCWD, reinterpret_cast<long>(path), reinterpret_cast<long>(buf),
               static_cast<long>(size));
}

long geteuid() noexcept {
    return own(SYS_geteuid);
}

int usable_cpus() noexcept {
    // The kernel's mask, counted here: CPU_COUNT is a libc call, whose first
    // use would cost every process start a symbol look-up.
    unsigned long mask[16] = {};
    long r = own(SYS_sched_getaffinity, 0, sizeof mask, reinterpret_cast<long>(mask));
    if (r <= 0) return 1;
    int n = 0;
    for (long i = 0; i < r / static_cast<long>(sizeof mask[0]); ++i)
        n += __builtin_popcountl(mask[i]);
    return n > 0 ? n : 1;
}

long parse_running(const char* buf, long n) noexcept {
    for (long i = 0; i < n; ++i) {
        if (buf[i] != '/') continue;
        long j = i, v = 0, scale = 1;
        while (j > 0 && buf[j - 1] >= '0' && buf[j - 1] <= '9') {
            v += (buf[--j] - '0') * scale;
            scale *= 10;
        }
        return j < i ? v : -1;
    }
    return -1;
}

namespace {

// The first n bytes of a small file (one open, read and close, raw): the
// bytes read, or < 0.
long read_small_file(const char* path, char* buf, std::size_t n) noexcept {
    const long fd = own(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fd;
    const long got = read(static_cast<int>(fd), buf, n);
    close(static_cast<int>(fd));
    return got;
}

}  // namespace

long running_tasks() noexcept {
    char buf[128];
    const long n = read_small_file("/proc/loadavg", buf, sizeof buf);
    return n > 0 ? parse_running(buf, n) : -1;
}

std::int64_t parse_run_delay(const char* buf, long n) noexcept {
    long i = 0;
    while (i < n && buf[i] >= '0' && buf[i] <= '9') ++i;  // time on a CPU
    if (i == 0 || i >= n || buf[i] != ' ') return -1;
    ++i;
    const long start = i;
    std::int64_t v = 0;
    for (; i < n && buf[i] >= '0' && buf[i] <= '9' && i - start < 18; ++i)
        v = v * 10 + (buf[i] - '0');
    return i > start && i < n && (buf[i] == ' ' || buf[i] == '\n') ? v : -1;  // whole
}

std::int64_t run_delay_ns() noexcept {
    char buf[96];
    const long n = read_small_file("/proc/thread-self/schedstat", buf, sizeof buf);
    return n > 0 ? parse_run_delay(buf, n) : -1;
}

}  // namespace pipespin::sys
