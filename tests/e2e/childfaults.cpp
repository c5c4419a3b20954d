// What a forked child that only calls _exit costs in page faults: N forks of
// a process that made no pipe, each child ending with _exit(0) at once.
// Prints the children's minor page faults per child (RUSAGE_CHILDREN), two
// decimals. check_childfaults.sh compares it with and without the shim.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 200;
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
