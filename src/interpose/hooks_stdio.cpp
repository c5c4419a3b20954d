// stdio reads. glibc refills a FILE's buffer through an internal read that
// no preload can see, so the wait goes before the call: when the stream's
// buffer is empty and its fd is a tracked pipe, the core waits (without
// consuming anything) until the pipe is readable or the budget runs out, and
// then the real function runs exactly as it would have.
//
// Contract, on top of hooks.cpp's: a wrapper looks at the FILE only through
// the fields <stdio.h> makes public (flags, get area, fd, orientation), never
// changes the stream except for the one way a blocking refill can fail
// before any byte moved: a signal handler without SA_RESTART ran during the
// wait. Then, as glibc does when its read() gets EINTR, the stream's error
// flag is set, errno is EINTR and the function returns its error value
// (0, NULL, EOF or -1). Calls that would not read (a zero-sized fread, fgets
// of one byte, getline with no buffer yet, which glibc allocates first) go
// straight to libc.
#include <stdio.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/wrap.h"
#include "platform/sys.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

// glibc's FILE flags (libio.h, unchanged since glibc 2.1; the two in
// <stdio.h> are checked against it).
static_assert(_IO_EOF_SEEN == 0x0010 && _IO_ERR_SEEN == 0x0020);
constexpr int kUnbuffered = 0x0002;
constexpr int kNoReads = 0x0004;
constexpr int kNoWrites = 0x0008;
constexpr int kLinked = 0x0080;
constexpr int kInBackup = 0x0100;  // reading back what ungetc pushed
constexpr int kLineBuf = 0x0200;
constexpr int kPutting = 0x0800;  // in write mode: a read first flushes
// At EOF (sticky since glibc 2.28) a refill returns at once.
constexpr int kNoWait = kNoReads | _IO_EOF_SEEN | kInBackup | kPutting;

// Before it refills a line-buffered or unbuffered stream, glibc flushes a
// line-buffered stdout: a spin first would hold back output the peer may be
// waiting for, so there is none while stdout has bytes to flush.
bool flushes_stdout_first(const volatile FILE* f) noexcept {
    if ((f->_flags & (kLineBuf | kUnbuffered)) == 0) return false;
    const volatile FILE* out = stdout;
    return out != nullptr &&
           (out->_flags & (kLinked | kNoWrites | kLineBuf)) == (kLinked | kLineBuf) &&
           out->_IO_write_ptr > out->_IO_write_base;
}

// The fd a read on fp would go to the kernel on now, or -1. Plain loads
// without the stream's lock: a racing thread can only make a spin happen or
// not, never change what the real call does.
int refill_fd(FILE* fp) noexcept {
    if (fp == nullptr) return -1;
    const volatile FILE* f = fp;
    if ((f->_flags & kNoWait) != 0 || f->_mode > 0) return -1;  // _mode > 0: wide
    if (f->_IO_read_ptr < f->_IO_read_end || flushes_stdout_first(f)) return -1;
    return f->_fileno;
}

template <class R, class Call>
R stdio_read(FILE* fp, bool locked, R failed, Call&& call) {
    const int fd = engaged() ? refill_fd(fp) : -1;
    if (fd < 0) return call();
    const int saved = errno;
    Plan plan = before_ready(fd, Dir::Read, Via::Stdio);
    if (plan.action == Plan::Action::Interrupted) {
        after_call(plan, -EINTR);
        if (locked) flockfile(fp);
        fp->_flags |= _IO_ERR_SEEN;
        if (locked) funlockfile(fp);
        errno = EINTR;
        return failed;
    }
    errno = saved;
    R r = call();
    if (plan.dir != nullptr) {
        const int e = errno;
        after_call(plan, r == failed ? 0 : 1);
        errno = e;
    }
    return r;
}

bool getdelim_reads(char** line, size_t* n) noexcept {
    return line != nullptr && n != nullptr && *line != nullptr && *n != 0;
}

}  // namespace

// ---- fread ----------------------------------------------------------------
//
// An fread of more than the stream has buffered reads the rest inside libc,
// waiting there each time the pipe runs dry (sort and zstd read 128 KiB at a
// time). So the wrapper reads it in pieces, under the stream's lock as
// fread holds it: what is buffered, then, after each wait, what the pipe
// holds (FIONREAD), which the real fread_unlocked returns without blocking.
// When a wait ends with the pipe still empty, the real call waits for one
// byte (there the kernel decides EOF, EAGAIN, EINTR). The result is the same
// bytes, count, flags and errno as one real fread; only the reads differ.

namespace {

size_t fread_pieces(void* p, size_t size, size_t n, FILE* fp, bool locked) {
    auto real = lazy(real_fread_unlocked, "fread_unlocked");
    const size_t want = size * n;
    auto* out = static_cast<char*>(p);
    if (locked) flockfile(fp);
    size_t got = 0;
    while (got < want) {
        const volatile FILE* f = fp;
        const std::ptrdiff_t buffered = f->_IO_read_end - f->_IO_read_ptr;
        if (buffered > 0) {
            const size_t piece = want - got < static_cast<size_t>(buffered)
                                     ? want - got
                                     : static_cast<size_t>(buffered);
            got += real(out + got, 1, piece, fp);
            continue;
        }
        const int fd = refill_fd(fp);
        if (fd < 0) {
            got += real(out + got, 1, want - got, fp);
            break;
        }
        const int saved = errno;
        Plan plan = before_ready(fd, Dir::Read, Via::Stdio);
        if (plan.action == Plan::Action::Interrupted) {
            // What glibc does when its read() gets EINTR: a short count.
            after_call(plan, -EINTR);
            fp->_flags |= _IO_ERR_SEEN;
            errno = EINTR;
            break;
        }
        errno = saved;
        // The piece's result is a byte count, as a read's: the counters and
        // the policy get it as such.
        plan.per_call = false;
        // Ready: what the pipe holds comes back at once. Still empty (the
        // budget ran out, EOF, a non-blocking fd): the real call waits for
        // one byte, and glibc's refill brings whatever the pipe has then.
        const long queued = plan.dir != nullptr ? sys::fionread(fd) : 0;
        const size_t piece = queued <= 0 ? 1
                             : static_cast<size_t>(queued) < want - got
                                 ? static_cast<size_t>(queued)
                                 : want - got;
        const size_t r = real(out + got, 1, piece, fp);
        got += r;
        if (plan.dir != nullptr) {
            const int e = errno;
            after_call(plan, static_cast<long>(r));
            errno = e;
        }
        if (r < piece) break;  // EOF or an error: the flags and errno are the real call's
    }
    if (locked) funlockfile(fp);
    return got / size;
}

// An unbuffered stream reads straight into the caller's buffer: pieces of
// one byte would cost a read each, so it goes to libc whole.
bool fread_waits(size_t size, size_t n, FILE* fp) noexcept {
    return engaged() && fp != nullptr && size != 0 && n != 0 && n <= SIZE_MAX / size &&
           (fp->_flags & kUnbuffered) == 0;
}

}  // namespace

PIPESPIN_EXPORT size_t fread(void* p, size_t size, size_t n, FILE* fp) {
    if (!fread_waits(size, n, fp)) return lazy(real_fread, "fread")(p, size, n, fp);
    return fread_pieces(p, size, n, fp, true);
}

PIPESPIN_EXPORT size_t fread_unlocked(void* p, size_t size, size_t n, FILE* fp) {
    if (!fread_waits(size, n, fp))
        return lazy(real_fread_unlocked, "fread_unlocked")(p, size, n, fp);
    return fread_pieces(p, size, n, fp, false);
}

// The fortified forms check the destination's size first: a call that would
// fail that check goes to them as it is.
PIPESPIN_EXPORT size_t __fread_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    if (!fread_waits(size, n, fp) || size * n > plen)
        return lazy(real___fread_chk, "__fread_chk")(p, plen, size, n, fp);
    return fread_pieces(p, size, n, fp, true);
}

PIPESPIN_EXPORT size_t __fread_unlocked_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    if (!fread_waits(size, n, fp) || size * n > plen)
        return lazy(real___fread_unlocked_chk, "__fread_unlocked_chk")(p, plen, size, n, fp);
    return fread_pieces(p, size, n, fp, false);
}

// ---- fgets ------------------------------------------------------------------

PIPESPIN_EXPORT char* fgets(char* s, int n, FILE* fp) {
    auto real = lazy(real_fgets, "fgets");
    if (n <= 1) return real(s, n, fp);
    return stdio_read<char*>(fp, true, nullptr, [&] { return real(s, n, fp); });
}

PIPESPIN_EXPORT char* fgets_unlocked(char* s, int n, FILE* fp) {
    auto real = lazy(real_fgets_unlocked, "fgets_unlocked");
    if (n <= 1) return real(s, n, fp);
    return stdio_read<char*>(fp, false, nullptr, [&] { return real(s, n, fp); });
}

PIPESPIN_EXPORT char* __fgets_chk(char* s, size_t size, int n, FILE* fp) {
    auto real = lazy(real___fgets_chk, "__fgets_chk");
    if (n <= 1) return real(s, size, n, fp);
    return stdio_read<char*>(fp, true, nullptr, [&] { return real(s, size, n, fp); });
}

PIPESPIN_EXPORT char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp) {
    auto real = lazy(real___fgets_unlocked_chk, "__fgets_unlocked_chk");
    if (n <= 1) return real(s, size, n, fp);
    return stdio_read<char*>(fp, false, nullptr, [&] { return real(s, size, n, fp); });
}

// ---- one character ----------------------------------------------------------

PIPESPIN_EXPORT int fgetc(FILE* fp) {
    auto real = lazy(real_fgetc, "fgetc");
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getc(FILE* fp) {
    auto real = lazy(real_getc, "getc");
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int _IO_getc(FILE* fp) {
    auto real = lazy(real__IO_getc, "_IO_getc");
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int fgetc_unlocked(FILE* fp) {
    auto real = lazy(real_fgetc_unlocked, "fgetc_unlocked");
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getc_unlocked(FILE* fp) {
    auto real = lazy(real_getc_unlocked, "getc_unlocked");
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getchar() {
    auto real = lazy(real_getchar, "getchar");
    return stdio_read<int>(stdin, true, EOF, [&] { return real(); });
}

PIPESPIN_EXPORT int getchar_unlocked() {
    auto real = lazy(real_getchar_unlocked, "getchar_unlocked");
    return stdio_read<int>(stdin, false, EOF, [&] { return real(); });
}

// What the getc_unlocked() and getchar_unlocked() macros call when the
// buffer is empty (the caller holds the lock, or does not need it).
PIPESPIN_EXPORT int __uflow(FILE* fp) {
    auto real = lazy(real___uflow, "__uflow");
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int __underflow(FILE* fp) {
    auto real = lazy(real___underflow, "__underflow");
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

// ---- lines --------------------------------------------------------------------

PIPESPIN_EXPORT ssize_t getline(char** line, size_t* n, FILE* fp) {
    auto real = lazy(real_getline, "getline");
    if (!getdelim_reads(line, n)) return real(line, n, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, fp); });
}

PIPESPIN_EXPORT ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
    auto real = lazy(real_getdelim, "getdelim");
    if (!getdelim_reads(line, n)) return real(line, n, delim, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, delim, fp); });
}

PIPESPIN_EXPORT ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
    auto real = lazy(real___getdelim, "__getdelim");
    if (!getdelim_reads(line, n)) return real(line, n, delim, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, delim, fp); });
}
