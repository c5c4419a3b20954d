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

#include "core/engine.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace pipespin;
using namespace pipespin::interpose;

namespace {

// glibc's FILE flags (libio.h, unchanged since glibc 2.1; the two in
// <stdio.h> are checked against it).
static_assert(_IO_EOF_SEEN == 0x0010 && _IO_ERR_SEEN == 0x0020);
constexpr int kUnbuffered = 0x0002;
constexpr int kNoReads = 0x0004;
constexpr int kInBackup = 0x0100;   // reading back what ungetc pushed
constexpr int kLineBuf = 0x0200;
constexpr int kPutting = 0x0800;    // in write mode: a read first flushes
// A line-buffered or unbuffered input stream makes glibc flush stdout
// before it refills: a spin would delay that flush, which the peer may be
// waiting for. At EOF (sticky since glibc 2.28) the refill returns at once.
constexpr int kNoWait = kUnbuffered | kNoReads | _IO_EOF_SEEN | kInBackup | kLineBuf | kPutting;

// The fd a read on fp would go to the kernel on now, or -1. Plain loads
// without the stream's lock: a racing thread can only make a spin happen or
// not, never change what the real call does.
int refill_fd(FILE* fp) noexcept {
    if (fp == nullptr) return -1;
    const volatile FILE* f = fp;
    if ((f->_flags & kNoWait) != 0 || f->_mode > 0) return -1;  // _mode > 0: wide
    if (f->_IO_read_ptr < f->_IO_read_end) return -1;
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

PIPESPIN_EXPORT size_t fread(void* p, size_t size, size_t n, FILE* fp) {
    auto real = lazy(real_fread, "fread");
    if (size == 0 || n == 0) return real(p, size, n, fp);
    return stdio_read<size_t>(fp, true, 0, [&] { return real(p, size, n, fp); });
}

PIPESPIN_EXPORT size_t fread_unlocked(void* p, size_t size, size_t n, FILE* fp) {
    auto real = lazy(real_fread_unlocked, "fread_unlocked");
    if (size == 0 || n == 0) return real(p, size, n, fp);
    return stdio_read<size_t>(fp, false, 0, [&] { return real(p, size, n, fp); });
}

// The fortified forms check the destination's size themselves (and fail
// before reading): a wait before that check changes nothing.
PIPESPIN_EXPORT size_t __fread_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    auto real = lazy(real___fread_chk, "__fread_chk");
    if (size == 0 || n == 0) return real(p, plen, size, n, fp);
    return stdio_read<size_t>(fp, true, 0, [&] { return real(p, plen, size, n, fp); });
}

PIPESPIN_EXPORT size_t __fread_unlocked_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    auto real = lazy(real___fread_unlocked_chk, "__fread_unlocked_chk");
    if (size == 0 || n == 0) return real(p, plen, size, n, fp);
    return stdio_read<size_t>(fp, false, 0, [&] { return real(p, plen, size, n, fp); });
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
