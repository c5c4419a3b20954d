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

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 200;
    if (argc > 2 && std::string_view(argv[2]) == "parent") return parent_case(n);
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
