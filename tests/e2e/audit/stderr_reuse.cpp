// Case audit_stderr_reuse (from the second faithfulness audit): a process
// closes its fd 2 and opens a file of its own, which takes that number; it
// forks a child for a pipe ping-pong, waits for it, writes to the file and
// exits normally. Its parent (this test's main process) then checks that
// the file holds exactly what was written. With PIPESPIN_LOG=info (the
// driver's default) or PIPESPIN_STATS=stderr the shim writes its exit
// report or statistics line "to stderr" at exit: before, that was fd 2, the
// data file (the child's line in the middle, the process's own at the end).
// A close of fd 2 now writes them at once, and nothing of the shim's goes to
// fd 2 afterwards, in that process or its forked children.
// The same for a process that starts with its fd 2 closed (the test's child
// closes it and execs this program again, "started-closed"): the shim looks
// at fd 2 when it starts, where it will write there at exit.
#include <fcntl.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>

#include "../../support/helpers.h"

using namespace support;

namespace {

[[noreturn]] void writer(const char* path, bool close_first) {
    if (close_first && close(2) != 0) _exit(10);
    const int fd = open(path, O_WRONLY | O_APPEND);
    if (fd != 2) _exit(11);
    if (write(fd, "data\n", 5) != 5) _exit(12);
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0) _exit(13);
    const pid_t pid = fork();
    if (pid < 0) _exit(14);
    char c = 'x';
    if (pid == 0) {
        for (int i = 0; i < 50; ++i)
            if (read(p[0], &c, 1) != 1 || write(q[1], &c, 1) != 1) _exit(3);
        _exit(0);
    }
    for (int i = 0; i < 50; ++i)
        if (write(p[1], &c, 1) != 1 || read(q[0], &c, 1) != 1) _exit(15);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        _exit(16);
    if (write(fd, "end\n", 4) != 4) _exit(17);
    std::exit(0);  // a normal exit: the library's destructors run
}

// The file at path holds what the writer wrote, and nothing else.
bool holds_only_data(int tmp, const char* path, const char* how) {
    char buf[256] = {};
    const ssize_t n = pread(tmp, buf, sizeof buf - 1, 0);
    unlink(path);
    close(tmp);
    if (n != 9 || std::strcmp(buf, "data\nend\n") != 0) {
        std::printf("%s: the file holds %zd bytes, not the 9 written: %.60s\n", how, n, buf);
        return false;
    }
    return true;
}

// A child runs the writer, in this image (close_first) or, with its fd 2
// closed, in a new one.
bool run(bool in_new_image) {
    char path[] = "/tmp/pipespin-stderr-reuse-XXXXXX";
    const int tmp = mkstemp(path);
    CHECK(tmp >= 0);
    std::fflush(nullptr);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (!in_new_image) writer(path, true);
        close(2);
        execl("/proc/self/exe", "stderr_reuse", "started-closed", path,
              static_cast<char*>(nullptr));
        _exit(20);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    return holds_only_data(tmp, path, in_new_image ? "started with fd 2 closed" : "closed fd 2");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "started-closed") == 0) writer(argv[2], false);
    const bool closed = run(false);
    const bool started_closed = run(true);
    if (!closed || !started_closed) return 1;
    std::printf("stderr_reuse: ok\n");
    return 0;
}
