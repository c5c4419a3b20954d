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
#include <type_traits>

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

// `unit`: 0 where a call's progress is counted per call (a line, a
// character); fread's size, where it is counted in bytes, as a read's.
template <class R, class Call>
R stdio_read(FILE* fp, bool locked, R failed, Call&& call, std::size_t unit = 0) {
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
    sys::restore_errno(saved);
    R r = call();
    if (plan.dir != nullptr) {
        const int e = errno;
        long progress = r == failed ? 0 : 1;
        if constexpr (std::is_integral_v<R>) {
            if (unit != 0) {
                plan.per_call = false;
                progress = static_cast<long>(r * unit);
            }
        }
        after_call(plan, progress);
        sys::restore_errno(e);
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
// time). Where a wait could spin (may_spin: a tracked pipe, and the policy
// would spin on it now), the wrapper reads it in pieces, under the stream's
// lock as fread holds it: what is buffered, then, after each wait, what the
// pipe holds (FIONREAD), which the real fread_unlocked returns without
// blocking. When a wait ends with the pipe still empty, the real call waits
// for one byte (there the kernel decides EOF, EAGAIN, EINTR). The result is
// the same bytes, count, flags and errno as one real fread; only the reads
// differ. Everywhere else (regular files, mode off, a pipe the policy does
// not spin on now) the fread goes to libc whole, so that libc reads the bulk
// straight into the caller's buffer as it always does.
//
// A piece costs one read(): a whole number of the stream's blocks (glibc
// reads those straight into the caller's buffer) is one read of exactly what
// is queued, and less than a block one refill of the stream's buffer. So a
// piece is what the pipe holds, cut down to whole blocks when there is at
// least one, and the tail waits in the pipe for the next piece (which finds
// it at once, with whatever came since); only the last piece of the fread,
// all of it queued, is read as glibc would read it.
//
// A thread cancelled inside a wait or inside the real read must not leave
// the stream locked: glibc's fread releases its lock then, and the next use
// of the FILE would deadlock. The lock is taken and released in C
// (platform/cancel.c), with a clean-up that runs when the thread unwinds.

extern "C" void pipespin_call_stream_locked(void (*fn)(void*), void* ctx, FILE* fp);

namespace {

// glibc's flag for __fsetlocking(FSETLOCKING_BYCALLER): its fread takes no
// lock then, and neither does the wrapper.
constexpr int kUserLock = 0x8000;

// The stream's fd, if a refill could ever wait on it (not at EOF, not wide,
// not reading back an ungetc), or -1.
int stream_fd(FILE* fp) noexcept {
    const volatile FILE* f = fp;
    if ((f->_flags & kNoWait) != 0 || f->_mode > 0) return -1;
    return f->_fileno;
}

// The bytes to ask fread for after a wait found `queued` in the pipe.
size_t piece_after_wait(const volatile FILE* f, long queued, size_t left) noexcept {
    if (queued <= 0) return 1;  // not ready: the real call waits for one byte
    if (static_cast<size_t>(queued) >= left) return left;  // the last piece: as glibc reads it
    // glibc reads straight into the caller's buffer only whole blocks (of
    // the buffer's size, when that is at least 128 bytes) and refills its
    // buffer for the tail, a second read: the tail waits in the pipe for
    // the next piece instead, with whatever comes meanwhile.
    size_t piece = static_cast<size_t>(queued);
    const std::ptrdiff_t block = f->_IO_buf_end - f->_IO_buf_base;
    if (f->_IO_buf_base != nullptr && block >= 128 && piece >= static_cast<size_t>(block))
        piece -= piece % static_cast<size_t>(block);
    return piece;
}

// The stream has a buffer of at least a page: every read glibc makes for
// it (a refill, or whole blocks straight into the caller's buffer) is then
// at least a page, which holds any packet of a pipe in packet mode. A
// stream that has not read yet has no buffer: glibc gives it one of the
// fd's st_blksize (below BUFSIZ) at its first read, a page for a pipe in
// pipefs (known_anonymous_pipe()); a FIFO's is its file system's. sort,
// whose first fread asks for its whole input, reads that way.
bool buffer_holds_a_packet(const FILE* fp, int fd) noexcept {
    const volatile FILE* f = fp;
    if (f->_IO_buf_base == nullptr) return known_anonymous_pipe(fd);
    const std::uint32_t page = sys::page_size();
    return f->_IO_buf_end - f->_IO_buf_base >= static_cast<std::ptrdiff_t>(page != 0 ? page : 4096);
}

struct Pieces {
    char* out;
    size_t want;
    FILE* fp;
    size_t got = 0;
};

void read_pieces(void* ctx) {
    auto& job = *static_cast<Pieces*>(ctx);
    auto real = real_fread_unlocked.get();
    FILE* fp = job.fp;
    while (job.got < job.want) {
        const volatile FILE* f = fp;
        const size_t left = job.want - job.got;
        const std::ptrdiff_t buffered = f->_IO_read_end - f->_IO_read_ptr;
        if (buffered > 0) {
            const size_t piece =
                left < static_cast<size_t>(buffered) ? left : static_cast<size_t>(buffered);
            job.got += real(job.out + job.got, 1, piece, fp);
            continue;
        }
        const int fd = refill_fd(fp);
        if (fd < 0) {
            job.got += real(job.out + job.got, 1, left, fp);
            return;
        }
        const int saved = errno;
        Plan plan = before_ready(fd, Dir::Read, Via::Stdio);
        if (plan.action == Plan::Action::Interrupted) {
            // What glibc does when its read() gets EINTR: a short count.
            after_call(plan, -EINTR);
            fp->_flags |= _IO_ERR_SEEN;
            errno = EINTR;
            return;
        }
        sys::restore_errno(saved);
        // The piece's result is a byte count, as a read's: the counters and
        // the policy get it as such.
        plan.per_call = false;
        // What the pipe holds (a fd that is no pipe now: -ENOTTY, one byte).
        const long queued = sys::fionread(fd);
        const size_t piece = piece_after_wait(f, queued, left);
        const size_t r = real(job.out + job.got, 1, piece, fp);
        job.got += r;
        if (plan.dir != nullptr) {
            const int e = errno;
            after_call(plan, static_cast<long>(r));
            sys::restore_errno(e);
        }
        if (r < piece) return;  // EOF or an error: the flags and errno are the real call's
    }
}

// An unbuffered stream reads straight into the caller's buffer: pieces of
// one byte would cost a read each, so it goes to libc as it is.
template <class Call>
size_t do_fread(void* p, size_t size, size_t n, FILE* fp, bool locked, Call&& call) {
    if (!engaged() || fp == nullptr || size == 0 || n == 0 || n > SIZE_MAX / size ||
        (fp->_flags & kUnbuffered) != 0)
        return call();
    const int fd = stream_fd(fp);
    if (fd < 0) return call();
    // One real fread (as called: locked, unlocked or fortified), with one
    // wait before it when the buffer is empty. Also where the pieces could
    // make glibc read less at a time than the whole fread would: a pipe
    // written in packet mode (O_DIRECT, on either end: the reader cannot
    // tell) gives each read one packet of up to a page and drops what the
    // read had no room for, and glibc's own reads are never shorter than the
    // stream's buffer (a refill) or a whole block (straight into the
    // caller's buffer), which a piece of a few bytes would make a refill of
    // a buffer smaller than a packet (setvbuf). With a buffer of at least a
    // page every read holds a packet (so has a fresh stream on a pipe,
    // whose first read gets it a page); with a smaller one the fread goes
    // whole.
    if (!may_spin(fd, Dir::Read) || !buffer_holds_a_packet(fp, fd))
        return stdio_read<size_t>(fp, locked, 0, call, size);
    Pieces job{static_cast<char*>(p), size * n, fp};
    if (locked && (fp->_flags & kUserLock) == 0)
        pipespin_call_stream_locked(read_pieces, &job, fp);
    else
        read_pieces(&job);
    return job.got / size;
}

}  // namespace

PIPESPIN_EXPORT size_t fread(void* p, size_t size, size_t n, FILE* fp) {
    auto real = real_fread.get();
    return do_fread(p, size, n, fp, true, [&] { return real(p, size, n, fp); });
}

PIPESPIN_EXPORT size_t fread_unlocked(void* p, size_t size, size_t n, FILE* fp) {
    auto real = real_fread_unlocked.get();
    return do_fread(p, size, n, fp, false, [&] { return real(p, size, n, fp); });
}

// The fortified forms check the destination's size first: a call that would
// fail that check goes to them as it is.
PIPESPIN_EXPORT size_t __fread_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    auto real = real___fread_chk.get();
    auto call = [&] { return real(p, plen, size, n, fp); };
    if (size != 0 && n <= SIZE_MAX / size && size * n > plen) return call();
    return do_fread(p, size, n, fp, true, call);
}

PIPESPIN_EXPORT size_t __fread_unlocked_chk(void* p, size_t plen, size_t size, size_t n, FILE* fp) {
    auto real = real___fread_unlocked_chk.get();
    auto call = [&] { return real(p, plen, size, n, fp); };
    if (size != 0 && n <= SIZE_MAX / size && size * n > plen) return call();
    return do_fread(p, size, n, fp, false, call);
}

// ---- fgets ------------------------------------------------------------------

PIPESPIN_EXPORT char* fgets(char* s, int n, FILE* fp) {
    auto real = real_fgets.get();
    if (n <= 1) return real(s, n, fp);
    return stdio_read<char*>(fp, true, nullptr, [&] { return real(s, n, fp); });
}

PIPESPIN_EXPORT char* fgets_unlocked(char* s, int n, FILE* fp) {
    auto real = real_fgets_unlocked.get();
    if (n <= 1) return real(s, n, fp);
    return stdio_read<char*>(fp, false, nullptr, [&] { return real(s, n, fp); });
}

PIPESPIN_EXPORT char* __fgets_chk(char* s, size_t size, int n, FILE* fp) {
    auto real = real___fgets_chk.get();
    if (n <= 1) return real(s, size, n, fp);
    return stdio_read<char*>(fp, true, nullptr, [&] { return real(s, size, n, fp); });
}

PIPESPIN_EXPORT char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp) {
    auto real = real___fgets_unlocked_chk.get();
    if (n <= 1) return real(s, size, n, fp);
    return stdio_read<char*>(fp, false, nullptr, [&] { return real(s, size, n, fp); });
}

// ---- one character ----------------------------------------------------------

PIPESPIN_EXPORT int fgetc(FILE* fp) {
    auto real = real_fgetc.get();
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getc(FILE* fp) {
    auto real = real_getc.get();
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int _IO_getc(FILE* fp) {
    auto real = real__IO_getc.get();
    return stdio_read<int>(fp, true, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int fgetc_unlocked(FILE* fp) {
    auto real = real_fgetc_unlocked.get();
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getc_unlocked(FILE* fp) {
    auto real = real_getc_unlocked.get();
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int getchar() {
    auto real = real_getchar.get();
    return stdio_read<int>(stdin, true, EOF, [&] { return real(); });
}

PIPESPIN_EXPORT int getchar_unlocked() {
    auto real = real_getchar_unlocked.get();
    return stdio_read<int>(stdin, false, EOF, [&] { return real(); });
}

// What the getc_unlocked() and getchar_unlocked() macros call when the
// buffer is empty (the caller holds the lock, or does not need it).
PIPESPIN_EXPORT int __uflow(FILE* fp) {
    auto real = real___uflow.get();
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

PIPESPIN_EXPORT int __underflow(FILE* fp) {
    auto real = real___underflow.get();
    return stdio_read<int>(fp, false, EOF, [&] { return real(fp); });
}

// ---- lines --------------------------------------------------------------------

PIPESPIN_EXPORT ssize_t getline(char** line, size_t* n, FILE* fp) {
    auto real = real_getline.get();
    if (!getdelim_reads(line, n)) return real(line, n, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, fp); });
}

PIPESPIN_EXPORT ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
    auto real = real_getdelim.get();
    if (!getdelim_reads(line, n)) return real(line, n, delim, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, delim, fp); });
}

PIPESPIN_EXPORT ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
    auto real = real___getdelim.get();
    if (!getdelim_reads(line, n)) return real(line, n, delim, fp);
    return stdio_read<ssize_t>(fp, true, -1, [&] { return real(line, n, delim, fp); });
}
