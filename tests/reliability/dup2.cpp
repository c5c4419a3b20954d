// Case dup2: while thread T waits in read on a pipe's read end fd (empty
// pipe), the main thread makes fd refer to something else, then writes
// "PIPEDATA" into the pipe:
//   file     dup2(regular file with "FILEDATA...", fd)
//   devnull  dup2(/dev/null, fd)
//   pipe     dup2(another pipe's read end holding "OTHERDAT", fd)
//   close    close(fd)
// and the same for a write into a full pipe that the main thread drains
// afterwards (file-w: dup2 of a regular file opened for writing).
//
// What is acceptable. Without the shim, the read began before the dup2 and
// the kernel holds the pipe for it: T gets "PIPEDATA" (the write end is
// still open). Under the shim, the read that began before the dup2 may get
// "PIPEDATA", fail with EBADF, or return 0 (end of file), but it must never
// return bytes of the file (or pipe) that was put at fd after it began, and
// a write must never land in that file: the program did not read or write
// that file. Afterwards fd refers to the new file, whose contents and
// offset are untouched: a read from it gets the file's full contents.
// The helper checks that T was inside the call (asleep in read/write, or
// seen spinning: in fixed, 1 s budget, it must have been spinning) before the
// dup2, so "began before" is certain. Without the shim T must get exactly
// "PIPEDATA" (the test checking itself).
//
// How a naive spin fails: it probes the fd *number* over and over; after the
// dup2 the next probe reads the new file (or pipe), and those bytes are
// returned as the result of a read that began on the pipe; a write probe
// writes into the file.
#include <sys/stat.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kTrials = 10;
constexpr int kPipeSize = 4096;
constexpr char kPipeData[] = "PIPEDATA";
constexpr char kFileData[] = "FILEDATA-0123456789-FILEDATA";
constexpr char kOtherData[] = "OTHERDAT";

enum class Target { File, DevNull, Pipe, Close, FileWrite };

struct Outcome {
    long result = 0;
    int err = 0;
    char buf[64] = {};
};

std::string g_path;

int open_file(int flags) {
    int fd = open(g_path.c_str(), flags | O_CLOEXEC);
    CHECK(fd >= 0);
    return fd;
}

void trial(Target target, const char* name, int t) {
    // A fresh file each trial: contents and offset 0.
    {
        int fd = open(g_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        if (target != Target::FileWrite) write_full(fd, kFileData, sizeof kFileData - 1);
        CHECK_EQ(close(fd), 0);
    }
    const bool writing = target == Target::FileWrite;
    int p[2], ann[2];
    make_pipe(p);
    make_pipe(ann);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, kPipeSize), kPipeSize);
    static char full[kPipeSize];
    if (writing) write_full(p[1], full, sizeof full);
    const int fd = writing ? p[1] : p[0];
    // The pipe's other end, kept by the main thread under another number.
    const int peer_end = writing ? dup(p[0]) : dup(p[1]);
    CHECK(peer_end >= 0);
    if (writing)
        close(p[0]);
    else
        close(p[1]);

    Outcome out;
    std::atomic<pid_t> tid{0};
    std::thread th([&] {
        tid = gettid_();
        const std::uint64_t base = thread_cpu_ns();
        write_full(ann[1], &base, sizeof base);
        errno = 0;
        out.result = writing ? write(fd, "WRITEDAT", 8) : read(fd, out.buf, sizeof out.buf - 1);
        out.err = errno;
    });
    std::uint64_t base = 0;
    CHECK_EQ(read_full(ann[0], &base, sizeof base), sizeof base);
    const InCall in =
        wait_in_call(tid, cpu_clock_of(th.native_handle()), base, {writing ? SYS_write : SYS_read});
    if (config() == Config::Fixed && in != InCall::Spinning)
        fail(__FILE__, __LINE__, "fixed, 1 s budget: the thread was seen spinning", 0);

    int other[2] = {-1, -1};
    switch (target) {
        case Target::File: {
            int f = open_file(O_RDONLY);
            CHECK_EQ(dup2(f, fd), fd);
            close(f);
            break;
        }
        case Target::FileWrite: {
            int f = open_file(O_WRONLY);
            CHECK_EQ(dup2(f, fd), fd);
            close(f);
            break;
        }
        case Target::DevNull: {
            int f = open("/dev/null", O_RDONLY | O_CLOEXEC);
            CHECK(f >= 0);
            CHECK_EQ(dup2(f, fd), fd);
            close(f);
            break;
        }
        case Target::Pipe:
            make_pipe(other);
            write_full(other[1], kOtherData, sizeof kOtherData - 1);
            CHECK_EQ(dup2(other[0], fd), fd);
            break;
        case Target::Close:
            CHECK_EQ(close(fd), 0);
            break;
    }
    // Now deliver on the original pipe (it may be gone under the shim: EPIPE
    // for a write, end of file for a read; SIGPIPE is ignored).
    if (writing) {
        static char sink[kPipeSize + 64];
        const size_t got = read_full(peer_end, sink, kPipeSize);
        CHECK_EQ(got, static_cast<size_t>(kPipeSize));
        th.join();
        close(peer_end);  // the pipe is now empty, or holds WRITEDAT: either is fine
    } else {
        const ssize_t w = write(peer_end, kPipeData, sizeof kPipeData - 1);
        CHECK(w == static_cast<ssize_t>(sizeof kPipeData - 1) || (w == -1 && errno == EPIPE));
        close(peer_end);
        th.join();
    }

    char what[256];
    std::snprintf(what, sizeof what, "%s, trial %d: %s returned %ld (errno %d) \"%s\"", name, t,
                  writing ? "write" : "read", out.result, out.err, out.buf);
    PROGRESS("  %s", what);
    if (writing) {
        const bool ok =
            out.result == 8 || (out.result == -1 && (out.err == EBADF || out.err == EPIPE));
        if (!ok) fail(__FILE__, __LINE__, what, out.err);
        struct stat st {};
        CHECK_EQ(stat(g_path.c_str(), &st), 0);
        if (st.st_size != 0)
            fail(__FILE__, __LINE__,
                 "a write that began on the pipe does not land in the file dup2'ed over its fd", 0);
        // Nothing spins in off: the call is in the kernel, as without the shim.
        if (config() == Config::NoShim || config() == Config::Off) CHECK_EQ(out.result, 8);
    } else {
        const std::string_view got(out.buf, out.result > 0 ? static_cast<size_t>(out.result) : 0);
        const bool ok =
            got == kPipeData || (out.result == -1 && out.err == EBADF) || out.result == 0;
        if (!ok) {
            std::fprintf(stderr, "%s\n", what);
            fail(__FILE__, __LINE__,
                 "a read that began on the pipe returns the pipe's data, EBADF or 0, never the "
                 "bytes of what was dup2'ed over its fd",
                 out.err);
        }
        if (config() == Config::NoShim || config() == Config::Off) CHECK(got == kPipeData);
        // fd is the new file now, untouched.
        char buf[64] = {};
        if (target == Target::File) {
            CHECK_EQ(read_full(fd, buf, sizeof buf), sizeof kFileData - 1);
            CHECK(std::string_view(buf) == kFileData);
        } else if (target == Target::Pipe) {
            CHECK_EQ(read(fd, buf, sizeof buf), static_cast<ssize_t>(sizeof kOtherData - 1));
            CHECK(std::string_view(buf) == kOtherData);
        }
    }
    if (target != Target::Close) close(fd);
    for (int f : {ann[0], ann[1], other[0], other[1]})
        if (f >= 0) close(f);
}

}  // namespace

int main() {
    announce_main_pid();
    install(SIGPIPE, SIG_IGN, 0);
    char dir[] = "/tmp/rel-dup2-XXXXXX";
    CHECK(mkdtemp(dir) != nullptr);
    g_path = std::string(dir) + "/file";
    const struct {
        Target target;
        const char* name;
    } kCases[] = {{Target::File, "read, dup2(regular file)"},
                  {Target::DevNull, "read, dup2(/dev/null)"},
                  {Target::Pipe, "read, dup2(another pipe with data)"},
                  {Target::Close, "read, close"},
                  {Target::FileWrite, "write(full pipe), dup2(regular file)"}};
    int failed_cases = 0;
    for (const auto& c : kCases) {
        PROGRESS("%s: %d trials", c.name, kTrials);
        // Each kind in a child, so that one failure does not hide the others.
        pid_t pid = fork_child();
        if (pid == 0) {
            for (int t = 0; t < kTrials; ++t) trial(c.target, c.name, t);
            _exit(0);
        }
        int status = 0;
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            PROGRESS("FAILED: %s", c.name);
            ++failed_cases;
        }
    }
    unlink(g_path.c_str());
    rmdir(dir);
    CHECK_EQ(failed_cases, 0);
    return 0;
}
