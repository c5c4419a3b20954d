// The only extern "C" definitions of libc names in pipespin, with
// hooks_stdio.cpp (stdio reads), hooks_vector.cpp (readv, writev, splice,
// tee), hooks_event.cpp (select, ppoll, epoll) and hooks_signal.cpp
// (sigaction, signal and their relatives). The other extern "C" functions
// are the shim's own: the control API (api.cpp) and the signal trampolines
// (trampoline.cpp).
//
// Contract of every wrapper, in four steps:
//   1. if the shim is not engaged (before its constructor ran, or inside its
//      own slow-path code), call the real function (or, before resolution,
//      the raw syscall) and nothing else;
//   2. save errno;
//   3. ask the core (src/core/engine.h) whether to wait first;
//   4. call the real function, which is always the final authority, and
//      hand errno back exactly as it left it.
// No policy lives here. Wrappers are not noexcept where libc's declaration
// is not: a thread cancelled inside the real call unwinds through them.
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/report.h"
#include "interpose/stats.h"
#include "interpose/vfork.h"
#include "interpose/wrap.h"
#include "platform/sys.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

inline ssize_t do_read(int fd, void* buf, size_t n);
inline ssize_t do_write(int fd, const void* buf, size_t n);

// Before the constructor, inside the shim's own slow-path code, or while a
// vfork mark stands (the parent, resumed, clears its own: engage_again()).
[[gnu::noinline]] ssize_t read_unengaged(int fd, void* buf, size_t n) {
    if (engage_again()) return do_read(fd, buf, n);
    if (real_read != nullptr) return real_read(fd, buf, n);
    return to_libc(sys::raw(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n)));
}

[[gnu::noinline]] ssize_t write_unengaged(int fd, const void* buf, size_t n) {
    if (engage_again()) return do_write(fd, buf, n);
    if (real_write != nullptr) return real_write(fd, buf, n);
    return to_libc(sys::raw(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n)));
}

// A call the shim may spin for, or must count after it.
[[gnu::noinline]] ssize_t read_waiting(Begun b, int fd, void* buf, size_t n) {
    const int saved = errno;
    Plan plan = continue_read(b, fd, buf, n);
    return finish<ssize_t>(
        plan, fd, saved, [&](int use) { return real_read(use, buf, n); },
        [&] { return nowait_try(sys::read_nowait(fd, buf, n)); });
}

[[gnu::noinline]] ssize_t write_waiting(Begun b, int fd, const void* buf, size_t n) {
    const int saved = errno;
    Plan plan = continue_write(b, fd, buf, n);
    return finish<ssize_t>(
        plan, fd, saved, [&](int use) { return real_write(use, buf, n); },
        [&] { return nowait_try(sys::write_nowait(fd, buf, n)); });
}

// read and write: every path ends in a tail call, and the common ones (not
// a pipe, a call that will not spin) in the real function's own, so that
// libc returns straight to the program. No local here may have its address
// taken, or the compiler cannot make them tail calls (tests/e2e/
// check_tailcalls.sh looks at the machine code).
//
// read_tracked, write_tracked: a call the engine looks at (engaged, not
// inert, not of 0 bytes, not counted on the fast lane): its first step,
// then the real call or the wait. Apart from do_read() and do_write(), so
// that their other paths, all tail calls, save no register.
[[gnu::noinline]] ssize_t read_tracked(int fd, void* buf, size_t n) {
    const Begun b = begin_read(fd);
    if (b.state == nullptr) [[likely]]
        return real_read.tail_call(fd, buf, n);
    return read_waiting(b, fd, buf, n);
}

[[gnu::noinline]] ssize_t write_tracked(int fd, const void* buf, size_t n) {
    const Begun b = begin_write(fd, n);
    if (b.state == nullptr) [[likely]]
        return real_write.tail_call(fd, buf, n);
    return write_waiting(b, fd, buf, n);
}

// An inert process (mode off with nothing to report: the A/B control arm,
// a process switched off) is asked about first, with one load: its calls
// are the real calls and nothing else, whether or not the shim is engaged
// or busy (the real functions are resolved before it can be inert). Then a
// call its fd's fast lane counts (a pipe in a run of not spinning: most
// calls of a stream), before engaged(): a lane is armed only by a call the
// engine looked at, in a process that was ready, and counting one call
// more there is all that call asks of the shim, busy or not (a signal
// handler's read inside the shim's own slow path: it is the program's).
inline ssize_t do_read(int fd, void* buf, size_t n) {
    if (io_inert()) return real_read.tail_call(fd, buf, n);
    if (n != 0 && io_counted_fast(fd, Dir::Read)) return real_read.tail_call(fd, buf, n);
    if (!engaged()) [[unlikely]]
        return read_unengaged(fd, buf, n);
    if (n == 0) return real_read.tail_call(fd, buf, n);
    return read_tracked(fd, buf, n);
}

inline ssize_t do_write(int fd, const void* buf, size_t n) {
    if (io_inert()) return real_write.tail_call(fd, buf, n);
    if (n != 0 && io_counted_fast(fd, Dir::Write)) return real_write.tail_call(fd, buf, n);
    if (!engaged()) [[unlikely]]
        return write_unengaged(fd, buf, n);
    if (n == 0) return real_write.tail_call(fd, buf, n);
    return write_tracked(fd, buf, n);
}

int do_poll(struct pollfd* fds, nfds_t nfds, int timeout) {
    if (!engaged() && !engage_again()) [[unlikely]] {
        if (real_poll != nullptr) return real_poll(fds, nfds, timeout);
        timespec ts{timeout / 1000, (timeout % 1000) * 1000000L};
        return static_cast<int>(
            to_libc(sys::raw(SYS_ppoll, reinterpret_cast<long>(fds), static_cast<long>(nfds),
                             timeout < 0 ? 0 : reinterpret_cast<long>(&ts), 0, 8)));
    }
    const int saved = errno;
    Plan plan = before_poll(fds, nfds, timeout);
    return finish<int>(plan, -1, saved, [&](int) { return real_poll(fds, nfds, plan.timeout_ms); });
}

// Not in a vfork child: its fds are not its parent's (vfork.h).
void note_new_pipe(int r, const int* fds, int flags = 0) noexcept {
    if (r == 0 && !in_vfork_child()) note_pipe(fds[0], fds[1], (flags & O_NONBLOCK) != 0);
}

// The fd table, where closes and dups must keep it true (io_table_kept():
// not in a process inert since its start, mode off with nothing to report,
// whose table holds nothing). Never in a vfork child: the table in its
// memory is its parent's, and its closes and dups are not (vfork.h).
FdTable* kept_table() noexcept {
    return io_table_kept() && !in_vfork_child() ? &fd_table() : nullptr;
}

// newfd is a duplicate of oldfd now: the same file, so what the table knew
// of oldfd (and what its policy learnt) holds for it; no syscall to
// classify it again.
void note_dup(int oldfd, int newfd) noexcept {
    if (FdTable* t = kept_table(); t != nullptr && newfd >= 0) t->set_dup(oldfd, newfd);
}

int fcntl_common(fcntl_fn real, int fd, int cmd, void* arg) {
    int r =
        real != nullptr
            ? real(fd, cmd, arg)
            : static_cast<int>(to_libc(sys::raw(SYS_fcntl, fd, cmd, reinterpret_cast<long>(arg))));
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) note_dup(fd, r);
    if (FdTable* t = kept_table(); t != nullptr && cmd == F_SETFL && r == 0)
        t->note_nonblock(fd, (reinterpret_cast<long>(arg) & O_NONBLOCK) != 0);
    return r;
}

}  // namespace

// ---- pipes are born ---------------------------------------------------------

PIPESPIN_EXPORT int pipe(int fds[2]) noexcept {
    int r = real_pipe != nullptr
                ? real_pipe(fds)
                : static_cast<int>(to_libc(sys::raw(SYS_pipe2, reinterpret_cast<long>(fds), 0)));
    note_new_pipe(r, fds);
    return r;
}

PIPESPIN_EXPORT int pipe2(int fds[2], int flags) noexcept {
    int r =
        real_pipe2 != nullptr
            ? real_pipe2(fds, flags)
            : static_cast<int>(to_libc(sys::raw(SYS_pipe2, reinterpret_cast<long>(fds), flags)));
    note_new_pipe(r, fds, flags);
    return r;
}

// ---- the waits ----------------------------------------------------------------

PIPESPIN_EXPORT ssize_t read(int fd, void* buf, size_t n) {
    return do_read(fd, buf, n);
}

PIPESPIN_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
    if (n > buflen) [[unlikely]] {
        if (real___read_chk != nullptr) return real___read_chk(fd, buf, n, buflen);
        __chk_fail();
    }
    return do_read(fd, buf, n);
}

PIPESPIN_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
    return do_write(fd, buf, n);
}

PIPESPIN_EXPORT int poll(struct pollfd* fds, nfds_t nfds, int timeout) {
    return do_poll(fds, nfds, timeout);
}

PIPESPIN_EXPORT int __poll_chk(struct pollfd* fds, nfds_t nfds, int timeout, size_t fdslen) {
    if (fdslen / sizeof(*fds) < nfds) [[unlikely]] {
        if (real___poll_chk != nullptr) return real___poll_chk(fds, nfds, timeout, fdslen);
        __chk_fail();
    }
    return do_poll(fds, nfds, timeout);
}

// ---- what keeps the fd table true ---------------------------------------------

// The program closes its fd 2 (close, close_range, closefrom, fclose of
// stderr): what the shim writes there at exit (the report at log=info, the
// statistics line with PIPESPIN_STATS=stderr) is written now, and nothing of
// the shim's goes to fd 2 after (report::release_stderr()): the number may
// next name a file of the program's. A dup2() onto fd 2 is a redirect of
// stderr, not its end: the shim writes to the new one. Not a vfork child's
// (its fd 2 is its own).
namespace {
void stderr_closes() noexcept {
    if (!g_ready.load(std::memory_order_acquire) || in_vfork_child()) return;
    before_stderr_closes();
    report::release_stderr();
}
}  // namespace

PIPESPIN_EXPORT int close(int fd) {
    if (fd == STDERR_FILENO) [[unlikely]]
        stderr_closes();
    int r =
        real_close != nullptr ? real_close(fd) : static_cast<int>(to_libc(sys::raw(SYS_close, fd)));
    // Even on error: after close() the fd number is gone or never was ours.
    if (kept_table() != nullptr) note_close(fd);
    return r;
}

PIPESPIN_EXPORT int dup(int fd) noexcept {
    int r = real_dup != nullptr ? real_dup(fd) : static_cast<int>(to_libc(sys::raw(SYS_dup, fd)));
    note_dup(fd, r);
    return r;
}

PIPESPIN_EXPORT int dup2(int oldfd, int newfd) noexcept {
    int r = real_dup2 != nullptr ? real_dup2(oldfd, newfd)
                                 : static_cast<int>(to_libc(sys::raw(SYS_dup2, oldfd, newfd)));
    note_dup(oldfd, r);
    return r;
}

PIPESPIN_EXPORT int dup3(int oldfd, int newfd, int flags) noexcept {
    int r = real_dup3 != nullptr
                ? real_dup3(oldfd, newfd, flags)
                : static_cast<int>(to_libc(sys::raw(SYS_dup3, oldfd, newfd, flags)));
    note_dup(oldfd, r);
    return r;
}

// fcntl's third argument is read the way glibc reads it: one pointer-sized
// va_arg, present or not.
PIPESPIN_EXPORT int fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    return fcntl_common(real_fcntl, fd, cmd, arg);
}

PIPESPIN_EXPORT int fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    return fcntl_common(real_fcntl64 != nullptr ? real_fcntl64.get() : real_fcntl.get(), fd, cmd,
                        arg);
}

PIPESPIN_EXPORT int close_range(unsigned int first, unsigned int last, int flags) noexcept {
    if (first <= STDERR_FILENO && last >= STDERR_FILENO && !(flags & CLOSE_RANGE_CLOEXEC))
        stderr_closes();
    int r = real_close_range != nullptr
                ? real_close_range(first, last, flags)
                : static_cast<int>(to_libc(sys::raw(SYS_close_range, first, last, flags)));
    // CLOSE_RANGE_CLOEXEC only marks the fds; anything else closed them.
    if (FdTable* t = kept_table(); t != nullptr && r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
        t->forget_range(first, last);
    return r;
}

PIPESPIN_EXPORT void closefrom(int lowfd) noexcept {
    if (lowfd <= STDERR_FILENO) stderr_closes();
    if (real_closefrom != nullptr)
        real_closefrom(lowfd);
    else
        sys::raw(SYS_close_range, lowfd < 0 ? 0 : lowfd, ~0u, 0);
    if (FdTable* t = kept_table())
        t->forget_range(lowfd < 0 ? 0u : static_cast<unsigned>(lowfd), ~0u);
}

// ---- a program that sandboxes itself ----------------------------------------------

// prctl's arguments are read the way glibc reads them: four unsigned longs,
// passed or not. no_new_privs comes before a seccomp filter (an unprivileged
// process may install one only then; libseccomp sets it by default), so the
// shim steps aside there already: after a filter, any call of its own (a
// probe, a statistics line's open) might kill the program (before_sandbox()).
PIPESPIN_EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    const unsigned long a2 = va_arg(ap, unsigned long);
    const unsigned long a3 = va_arg(ap, unsigned long);
    const unsigned long a4 = va_arg(ap, unsigned long);
    const unsigned long a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if ((option == PR_SET_NO_NEW_PRIVS && a2 != 0) || option == PR_SET_SECCOMP) [[unlikely]]
        before_sandbox();
    if (real_prctl != nullptr) return real_prctl(option, a2, a3, a4, a5);
    return static_cast<int>(
        to_libc(sys::raw(SYS_prctl, option, static_cast<long>(a2), static_cast<long>(a3),
                         static_cast<long>(a4), static_cast<long>(a5))));
}

// ---- stdio: the fd is closed inside libc ------------------------------------------

namespace {
// fp's fd, or -1: what glibc's fileno() answers (a stream without a file
// buffer, such as open_memstream's, has none), read from the FILE as the
// stdio hooks do, without fileno()'s EBADF in errno and without its call:
// the first call of fileno() through the PLT resolves it, a thousand
// instructions and a page fault or two in every coreutils program, whose
// close_stdout() fcloses stdout at exit.
constexpr int kIsFileBuf = 0x2000;  // glibc's _IO_IS_FILEBUF
int fd_of(FILE* fp) noexcept {
    if (fp == nullptr || (fp->_flags & kIsFileBuf) == 0) return -1;
    return fp->_fileno >= 0 ? fp->_fileno : -1;
}

// freopen closes the old fd and opens a new one inside libc.
FILE* reopened(int old_fd, FILE* now) noexcept {
    if (FdTable* t = kept_table()) {
        t->forget(old_fd);
        if (now != nullptr) t->forget(fd_of(now));
    }
    return now;
}
}  // namespace

PIPESPIN_EXPORT int fclose(FILE* fp) {
    const int fd = fd_of(fp);
    // Programs that close their stderr at exit (coreutils' close_stdout)
    // would leave the exit report nowhere to go: write it now.
    if (fd == STDERR_FILENO && engaged()) stderr_closes();
    int r = real_fclose.get()(fp);
    if (FdTable* t = kept_table()) t->forget(fd);
    return r;
}

PIPESPIN_EXPORT int pclose(FILE* fp) {
    const int fd = fd_of(fp);
    int r = real_pclose.get()(fp);
    if (FdTable* t = kept_table()) t->forget(fd);
    return r;
}

PIPESPIN_EXPORT int fcloseall() {
    int r = real_fcloseall.get()();
    if (FdTable* t = kept_table()) t->forget_all();
    return r;
}

PIPESPIN_EXPORT FILE* freopen(const char* path, const char* mode, FILE* fp) {
    const int fd = fd_of(fp);
    return reopened(fd, real_freopen.get()(path, mode, fp));
}

PIPESPIN_EXPORT FILE* freopen64(const char* path, const char* mode, FILE* fp) {
    const int fd = fd_of(fp);
    return reopened(fd, real_freopen64.get()(path, mode, fp));
}

// ---- the process ends or becomes another program --------------------------------
//
// Each writes the process's statistics line (interpose/stats.h; a no-op
// without PIPESPIN_STATS) and then calls the real function. A failed exec
// returns as it would have; the process's later exit line supersedes the
// exec line (same pid and start). The execl* forms are rebuilt into an argv
// on the stack and passed to the real execv/execvp/execve, as glibc does.

namespace {
// A statistics line is this process's to write now. Without statistics
// nothing is written, and neither the line's code nor errno (a call into
// libc) is reached: pages a forked child about to exec or exit has not
// touched, a page fault each. A vfork child writes no line: the counters it
// sees are its parent's (vfork.h).
bool stats_line_due() noexcept {
    return g_ready.load(std::memory_order_acquire) && stats_enabled() && !in_vfork_child();
}

void before_exec() noexcept {
    if (!stats_line_due()) return;
    const int saved = errno;
    stats_write(StatsEvent::Exec);
    sys::restore_errno(saved);
}

// The arguments of an execl* call after `arg`, up to the terminating null.
std::size_t count_args(const char* arg, va_list ap) noexcept {
    std::size_t n = 1;
    if (arg == nullptr) return 0;
    va_list copy;
    va_copy(copy, ap);
    while (va_arg(copy, const char*) != nullptr) ++n;
    va_end(copy);
    return n;
}

[[noreturn]] void exit_now(void (*real)(int), int status) noexcept {
    if (stats_line_due()) {
        const int saved = errno;
        stats_exit();
        sys::restore_errno(saved);
    }
    if (real != nullptr) real(status);
    for (;;) sys::raw(SYS_exit_group, status);
}
}  // namespace

PIPESPIN_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
    before_exec();
    return real_execve.get()(path, argv, envp);
}

PIPESPIN_EXPORT int execv(const char* path, char* const argv[]) noexcept {
    before_exec();
    return real_execv.get()(path, argv);
}

PIPESPIN_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
    before_exec();
    return real_execvp.get()(file, argv);
}

PIPESPIN_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
    before_exec();
    return real_execvpe.get()(file, argv, envp);
}

PIPESPIN_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                             int flags) noexcept {
    before_exec();
    if (execveat_fn real = real_execveat.get()) return real(dirfd, path, argv, envp, flags);
    return static_cast<int>(
        to_libc(sys::raw(SYS_execveat, dirfd, reinterpret_cast<long>(path),
                         reinterpret_cast<long>(argv), reinterpret_cast<long>(envp), flags)));
}

PIPESPIN_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
    before_exec();
    return real_fexecve.get()(fd, argv, envp);
}

// execl(path, arg0, ..., NULL) and friends: the argv is built on the stack.
#define PIPESPIN_COLLECT_ARGS(arg, last)                                             \
    va_list ap;                                                                      \
    va_start(ap, last);                                                              \
    const std::size_t argc = count_args(arg, ap);                                    \
    char** argv = static_cast<char**>(__builtin_alloca((argc + 1) * sizeof(char*))); \
    if (argc > 0) argv[0] = const_cast<char*>(arg);                                  \
    for (std::size_t i = 1; i < argc; ++i) argv[i] = va_arg(ap, char*);              \
    argv[argc] = nullptr;

PIPESPIN_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
    PIPESPIN_COLLECT_ARGS(arg, arg)
    va_end(ap);
    before_exec();
    return real_execv.get()(path, argv);
}

PIPESPIN_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
    PIPESPIN_COLLECT_ARGS(arg, arg)
    va_end(ap);
    before_exec();
    return real_execvp.get()(file, argv);
}

PIPESPIN_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
    PIPESPIN_COLLECT_ARGS(arg, arg)
    if (argc > 0) va_arg(ap, char*);  // the terminating null
    char* const* envp = va_arg(ap, char* const*);
    va_end(ap);
    before_exec();
    return real_execve.get()(path, argv, envp);
}
#undef PIPESPIN_COLLECT_ARGS

// A process that ends with _exit() (a forked child, typically) runs no
// destructors: its line is written here.
PIPESPIN_EXPORT void _exit(int status) noexcept {
    exit_now(real__exit, status);
}

PIPESPIN_EXPORT void _Exit(int status) noexcept {
    exit_now(real__Exit != nullptr ? real__Exit.get() : real__exit.get(), status);
}

// The child inherits what the parent resolved: resolved in each child, the
// real _exit alone cost 8 page faults of a fork, 17 to 25 (real.cpp).
// A vfork's mark (vfork.h) stays until the parent's next look at it: looked
// at here, so that a child forked after it does not inherit it and take
// itself for a vfork child (it would keep no fd table, write no line).
PIPESPIN_EXPORT pid_t fork() noexcept {
    resolve_before_fork();
    (void)in_vfork_child();
    return real_fork.tail_call();
}

// A task that shares the fd table but not the memory (CLONE_FILES without
// CLONE_VM) closes fds where this process's table does not see it; one
// that shares the memory but not the fds records its own fds in this
// table. Either way the table may go stale, for good (fds_unseen()), in
// the child too (it starts from the parent's memory). The optional
// arguments are passed on as they came: glibc reads each only for the flag
// that asks for it.
PIPESPIN_EXPORT int clone(int (*fn)(void*), void* stack, int flags, void* arg, ...) noexcept {
    va_list ap;
    va_start(ap, arg);
    pid_t* parent_tid = va_arg(ap, pid_t*);
    void* tls = va_arg(ap, void*);
    pid_t* child_tid = va_arg(ap, pid_t*);
    va_end(ap);
    if (((flags & CLONE_FILES) != 0) != ((flags & CLONE_VM) != 0)) fds_unseen();
    return real_clone.get()(fn, stack, flags, arg, parent_tid, tls, child_tid);
}
