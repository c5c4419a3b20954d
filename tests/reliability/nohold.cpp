// Cases nohold_*: a call the shim spins for keeps no fd of the shim's that
// the program could see, close, replace or leak. Each case is a schedule
// that a reference of the shim's own (a CLOEXEC dup of the fd, taken once
// the spin has run 10 µs) gets wrong; fixed mode (1 s budget) makes the
// event land in a spin.
//
//   nohold longjmp       a write into a full pipe spins; a SIGALRM handler
//                        siglongjmp()s out of it (the alarm + longjmp
//                        timeout idiom); the program closes its write end.
//                        The reader must see end of file, and the process
//                        must have the fds it had before. (A leaked dup
//                        keeps the write end open: no EOF, ever.)
//   nohold dup2_free     thread T reads an empty pipe; the main thread
//                        dup2()s a file onto the lowest free fd number N,
//                        then writes into the pipe. T gets the pipe's data,
//                        and N still names the file afterwards. (A dup taken
//                        on N is replaced by the file: T reads the file, and
//                        the shim's release closes the program's N.)
//   nohold close_range   every fd below the pipe's read end R is open; T
//                        reads R; the main thread calls close_range(R + 1,
//                        ~0U), then writes into the pipe (its write end is
//                        below R). T gets the pipe's data. (A dup at R + 1 is
//                        closed under the call: EBADF.)
//   nohold handler_close an SA_RESTART handler closes the fd being read.
//                        Without the shim the restarted read fails with
//                        EBADF; so must it with the shim. (Through a dup the
//                        read goes on and returns data seconds later; a
//                        thread writes after 5 s so that this fails rather
//                        than hangs.)
#include <dirent.h>
#include <setjmp.h>
#include <sys/stat.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kTrials = 5;
constexpr long kAlarmUs = 30'000;

int count_fds() {
    DIR* d = opendir("/proc/self/fd");
    CHECK(d != nullptr);
    int n = 0;
    while (readdir(d) != nullptr) ++n;
    closedir(d);
    return n;
}

// ---- longjmp ------------------------------------------------------------------

sigjmp_buf g_env;
void jump(int) {
    siglongjmp(g_env, 1);
}

void longjmp_case() {
    install(SIGALRM, jump, 0);
    for (int t = 0; t < kTrials; ++t) {
        const int before = count_fds();
        int p[2];
        make_pipe(p);
        CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
        set_nonblock(p[1], true);
        fill_until_eagain(p[1]);
        set_nonblock(p[1], false);
        if (sigsetjmp(g_env, 1) == 0) {
            arm_alarm_us(kAlarmUs);
            const ssize_t r = write(p[1], "x", 1);
            fail(__FILE__, __LINE__, "a write into a full pipe nobody reads returned",
                 r < 0 ? errno : 0);
        }
        CHECK_EQ(close(p[1]), 0);
        // The only write end is closed: after the data, end of file.
        char buf[4096];
        for (;;) {
            pollfd pfd{p[0], POLLIN, 0};
            const int ready = poll(&pfd, 1, 10'000);
            if (ready == 0)
                fail(__FILE__, __LINE__,
                     "no end of file 10 s after the program closed its only write end: "
                     "something of the shim's still holds it",
                     0);
            CHECK_EQ(ready, 1);
            const ssize_t n = read(p[0], buf, sizeof buf);
            CHECK(n >= 0);
            if (n == 0) break;
        }
        CHECK_EQ(close(p[0]), 0);
        CHECK_EQ(count_fds(), before);
        PROGRESS("  trial %d: end of file, no fd left behind", t);
    }
}

// ---- a reader thread, an event while it is in its read ----------------------------

struct Reader {
    int fd;
    std::atomic<pid_t> tid{0};
    Mailbox ann;
    long result = 0;
    int err = 0;
    char buf[64] = {};
    std::thread th;

    explicit Reader(int f) : fd(f) {
        th = std::thread([this] {
            tid = gettid_();
            ann.put(thread_cpu_ns());
            errno = 0;
            result = read(fd, buf, sizeof buf - 1);
            err = errno;
        });
    }
    // Returns once the thread is inside its read (asleep, or spinning).
    void wait_inside() {
        const std::uint64_t base = ann.take();
        const InCall in = wait_in_call(tid, cpu_clock_of(th.native_handle()), base, {SYS_read});
        if (config() == Config::Fixed && in != InCall::Spinning)
            fail(__FILE__, __LINE__, "fixed, 1 s budget: the reader was seen spinning", 0);
    }
    std::string_view got() const { return {buf, result > 0 ? static_cast<size_t>(result) : 0}; }
};

ino_t inode_of(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return 0;
    return st.st_ino;
}

void dup2_free_case(const std::string& path) {
    for (int t = 0; t < kTrials; ++t) {
        int p[2];
        make_pipe(p);
        const int f = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        CHECK(f >= 0);
        const ino_t file = inode_of(f);
        const int n = dup(0);  // the lowest free number, then free again
        CHECK(n >= 0);
        CHECK_EQ(close(n), 0);
        Reader reader(p[0]);
        reader.wait_inside();
        CHECK_EQ(dup2(f, n), n);  // the program's own use of a number it never opened
        CHECK_EQ(close(f), 0);
        CHECK_EQ(write(p[1], "PIPEDATA", 8), 8);
        reader.th.join();
        PROGRESS("  trial %d: read returned %ld (errno %d) \"%s\"", t, reader.result, reader.err,
                 reader.buf);
        if (reader.got() != "PIPEDATA")
            fail(__FILE__, __LINE__, "the read gets the pipe's data", reader.err);
        if (inode_of(n) != file)
            fail(__FILE__, __LINE__, "the program's fd still names its file afterwards", errno);
        char buf[16] = {};
        CHECK_EQ(read(n, buf, 4), 4);
        CHECK(std::string_view(buf) == "FILE");
        for (int fd : {n, p[0], p[1]}) CHECK_EQ(close(fd), 0);
    }
}

void close_range_case() {
    for (int t = 0; t < kTrials; ++t) {
        int p[2];
        make_pipe(p);
        const int w = p[1];
        const int r = fcntl(p[0], F_DUPFD_CLOEXEC, w + 1);
        CHECK(r > w);
        CHECK_EQ(close(p[0]), 0);
        // Every number below r in use, so that anything new lands above it.
        int fillers[256];
        int nfill = 0;
        for (;;) {
            const int f = open("/dev/null", O_RDONLY | O_CLOEXEC);
            CHECK(f >= 0);
            if (f > r) {
                CHECK_EQ(close(f), 0);
                break;
            }
            CHECK(nfill < 256);
            fillers[nfill++] = f;
        }
        Reader reader(r);
        reader.wait_inside();
        CHECK_EQ(close_range(static_cast<unsigned>(r) + 1, ~0u, 0), 0);
        CHECK_EQ(write(w, "PIPEDATA", 8), 8);
        reader.th.join();
        PROGRESS("  trial %d: read returned %ld (errno %d) \"%s\"", t, reader.result, reader.err,
                 reader.buf);
        if (reader.got() != "PIPEDATA")
            fail(__FILE__, __LINE__,
                 "close_range above the fd being read leaves the read alone: the pipe's data",
                 reader.err);
        for (int i = 0; i < nfill; ++i) CHECK_EQ(close(fillers[i]), 0);
        CHECK_EQ(close(r), 0);
        CHECK_EQ(close(w), 0);
    }
}

// ---- handler_close ------------------------------------------------------------

int g_close_fd = -1;
void close_it(int) {
    const int saved = errno;
    close(g_close_fd);
    errno = saved;
}

void handler_close_case() {
    install(SIGALRM, close_it, SA_RESTART);
    for (int t = 0; t < kTrials; ++t) {
        int p[2];
        make_pipe(p);
        g_close_fd = p[0];
        // If the read goes on after its fd was closed, let it end with data
        // (and fail) rather than hang.
        std::atomic<bool> done{false};
        std::thread late([&] {
            for (int i = 0; i < 500 && !done.load(); ++i) poll(nullptr, 0, 10);
            if (!done.load()) CHECK_EQ(write(p[1], "LATE", 4), 4);
        });
        arm_alarm_us(kAlarmUs);
        char c[8];
        errno = 0;
        const ssize_t r = read(p[0], c, sizeof c);
        const int err = errno;
        done = true;
        late.join();
        PROGRESS("  trial %d: read returned %zd (errno %d)", t, r, err);
        if (r != -1 || err != EBADF)
            fail(__FILE__, __LINE__,
                 "a read restarted after its handler closed the fd fails with EBADF", err);
        CHECK_EQ(close(p[1]), 0);
    }
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view which = argv[1];
    if (which == "longjmp") {
        longjmp_case();
    } else if (which == "dup2_free") {
        char dir[] = "/tmp/rel-nohold-XXXXXX";
        CHECK(mkdtemp(dir) != nullptr);
        const std::string path = std::string(dir) + "/file";
        const int f = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(f >= 0);
        write_full(f, "FILEDATA", 8);
        CHECK_EQ(close(f), 0);
        dup2_free_case(path);
        unlink(path.c_str());
        rmdir(dir);
    } else if (which == "close_range") {
        close_range_case();
    } else if (which == "handler_close") {
        handler_close_case();
    } else {
        fail(__FILE__, __LINE__, "unknown case", 0);
    }
    PROGRESS("ok");
    return 0;
}
