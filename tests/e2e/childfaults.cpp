// What a fork costs in page faults, with the shim and without it
// (check_childfaults.sh compares the two):
//   childfaults N         N forks of a process that made no pipe, each child
//                         ending with _exit(0) at once: the children's minor
//                         page faults per child (RUSAGE_CHILDREN);
//   childfaults N parent  N iterations of what a shell's $(...) does: a pipe,
//                         a fork whose child writes a byte into it and exits,
//                         the parent closing the write end, reading to EOF
//                         and reaping the child: the parent's own minor page
//                         faults per iteration (RUSAGE_SELF; every page the
//                         parent writes after a fork is a copy-on-write
//                         fault). Two decimals each.
//   childfaults N read    N forked children whose first call the shim looks
//   childfaults N lane    at is a read of a file (read), or that make a pipe
//                         and write and read it until its calls are counted
//                         on the fast lane (lane), in two batches: children
//                         of the parent before it used the shim's table
//                         (reads, pipes and lanes: the pages are untouched),
//                         then after (the parent read a file of its own, or
//                         armed a lane on a pipe of its own: the pages are
//                         there, shared). Prints the faults per child of the
//                         first batch minus the second's: a page the shim
//                         first reads and then writes costs the first batch
//                         two faults (the zero page, then the write) and the
//                         second one (the copy), so the figure counts them.
//                         Link with -z now: the program's own calls are
//                         bound at start, not by each child.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

long self_faults() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int parent_case(int n) {
    // One iteration first, so that the loop counts the steady state (the
    // first pipe maps the shim's table, libc's paths fault in once).
    long from = 0;
    for (int i = 0; i <= n; ++i) {
        if (i == 1) from = self_faults();
        int p[2];
        if (pipe(p) != 0) {
            std::perror("pipe");
            return 1;
        }
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            return 1;
        }
        if (pid == 0) _exit(write(p[1], "x", 1) == 1 ? 0 : 1);
        close(p[1]);
        char buf[8];
        ssize_t got = 0, r;
        while ((r = read(p[0], buf, sizeof buf)) > 0) got += r;
        close(p[0]);
        int status = 0;
        if (r < 0 || got != 1 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "childfaults: an iteration failed\n");
            return 1;
        }
        if (i == n) std::printf("%.2f\n", static_cast<double>(self_faults() - from) / n);
    }
    return 0;
}

long children_faults() {
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    return ru.ru_minflt;
}

// One call: the first the shim looks at in the process (a read of `fd`),
// or a pipe written and read until its calls are on the fast lane (a pipe
// that never waits stops spinning by its 8th call; 40 more leave room).
bool first_use(bool lane, int fd) {
    char c = 0;
    if (!lane) return read(fd, &c, 1) == 1;
    int p[2];
    if (pipe(p) != 0) return false;
    bool ok = true;
    for (int i = 0; i < 48 && ok; ++i) ok = write(p[1], "x", 1) == 1 && read(p[0], &c, 1) == 1;
    return ok;  // the pipe stays open: its numbers are not reused
}

// N children, each doing first_use(); their faults per child.
double batch(int n, bool lane, int fd) {
    const long from = children_faults();
    for (int i = 0; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            std::exit(1);
        }
        if (pid == 0) _exit(first_use(lane, fd) ? 0 : 1);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "childfaults: a child failed\n");
            std::exit(1);
        }
    }
    return static_cast<double>(children_faults() - from) / n;
}

int first_case(int n, bool lane, const char* self) {
    const int fd = open(self, O_RDONLY), own = open(self, O_RDONLY);
    if (fd < 0 || own < 0) {
        std::perror("open");
        return 1;
    }
    // Calls of 0 bytes pass through the shim without a look at its table.
    char c = 0;
    if (read(fd, &c, 0) != 0 || write(1, &c, 0) != 0) return 1;
    const double fresh = batch(n, lane, fd);
    if (!first_use(lane, own)) return 1;
    const double used = batch(n, lane, fd);
    std::printf("%.2f\n", fresh - used);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 200;
    if (argc > 2 && std::string_view(argv[2]) == "parent") return parent_case(n);
    if (argc > 2 && std::string_view(argv[2]) == "read") return first_case(n, false, argv[0]);
    if (argc > 2 && std::string_view(argv[2]) == "lane") return first_case(n, true, argv[0]);
    for (int i = 0; i < n; ++i) {
        const pid_t pid = fork();
        if (pid < 0) {
            std::perror("fork");
            return 1;
        }
        if (pid == 0) _exit(0);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "childfaults: a child failed\n");
            return 1;
        }
    }
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    std::printf("%.2f\n", static_cast<double>(ru.ru_minflt) / n);
    return 0;
}
