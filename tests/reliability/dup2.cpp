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
// What is acceptable: what the program could see without the shim under
// some schedule, and nothing else. Either T's call entered the kernel
// before the change (the kernel holds the pipe for it: T gets "PIPEDATA",
// its write lands in the pipe), or T was preempted just before entering the
// kernel and entered it after the change (T reads the new file's bytes, end
// of file from /dev/null, the other pipe's data, or EBADF after the close;
// its write lands in the file). A spinning shim must give one of the two,
// with side effects that match it (the file's offset, the other pipe's
// data, the file's contents), and never a mix: no bytes of a file the
// number no longer names, no write into a file other than the one the
// number names, no fd of its own that the change could close or leak.
// Without the shim, and in off (nothing spins), T must get the first
// outcome exactly (the test checking itself). The helper checks that T was
// inside the call (asleep in read/write, or seen spinning: in fixed, 1 s
// budget, it must have been spinning) before the change, so "began before"
// is certain.
//
// How a naive spin fails: it probes the fd *number* with no check; the
// probe that races with the dup2 can read one file's bytes as another's.
// How a reference the shim holds fails (a dup of the fd, taken during the
// spin): the reference is an fd number the program can see: a close_range
// or dup2 of the program's can close it or be closed by it, and a longjmp
// out of the spin leaks it.
#include <sys/stat.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kTrials = 10;
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
    // Which schedule explains the result (see the header).
    const bool plain = config() == Config::NoShim || config() == Config::Off;
    char buf[64] = {};
    if (writing) {
        struct stat st {};
        CHECK_EQ(stat(g_path.c_str(), &st), 0);
        const bool before = out.result == 8 && st.st_size == 0;
        const bool after = out.result == 8 && st.st_size == 8;
        if (!before && !after) {
            std::fprintf(stderr, "%s, file size %lld\n", what, static_cast<long long>(st.st_size));
            fail(__FILE__, __LINE__,
                 "a write lands whole in the pipe (it entered the kernel before the dup2) or in "
                 "the file (after it), never elsewhere",
                 out.err);
        }
        if (plain && !before) fail(__FILE__, __LINE__, "without spinning: the pipe", 0);
        if (after) {
            const int f = open_file(O_RDONLY);
            CHECK_EQ(read_full(f, buf, sizeof buf), 8u);
            CHECK(std::string_view(buf) == "WRITEDAT");
            close(f);
        }
    } else {
        const std::string_view got(out.buf, out.result > 0 ? static_cast<size_t>(out.result) : 0);
        const bool before = got == kPipeData;
        bool after = false;
        switch (target) {
            case Target::File:
                after = got == kFileData;
                break;
            case Target::DevNull:
                after = out.result == 0;
                break;
            case Target::Pipe:
                after = got == kOtherData;
                break;
            case Target::Close:
                after = out.result == -1 && out.err == EBADF;
                break;
            case Target::FileWrite:
                break;
        }
        if (!before && !after) {
            std::fprintf(stderr, "%s\n", what);
            fail(__FILE__, __LINE__,
                 "a read returns the pipe's data (it entered the kernel before the change) or "
                 "what the number names after it, never anything else",
                 out.err);
        }
        if (plain) CHECK(before);
        // fd is the new file now, and its state is what the schedule left.
        if (target == Target::File) {
            const size_t rest = before ? sizeof kFileData - 1 : 0;
            CHECK_EQ(read_full(fd, buf, sizeof buf), rest);
            if (before) CHECK(std::string_view(buf) == kFileData);
        } else if (target == Target::Pipe && before) {
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
