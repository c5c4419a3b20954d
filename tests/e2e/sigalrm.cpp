// Case signal_syscalls (signal_syscalls.sh): a program that takes N SIGALRMs
// (sent to itself with tgkill), half to a sigaction() handler without
// SA_RESTART, half to a signal() handler (SA_RESTART), and checks that each
// ran. The driver counts its rt_sigaction calls under strace: the program
// makes two (its installs), with or without the shim; a shim that asks the
// kernel for SA_RESTART on each delivery makes N more.
//
//   e2e_sigalrm N
#include <signal.h>
#include <sys/syscall.h>

#include "../support/helpers.h"

namespace {

volatile sig_atomic_t g_ran = 0;
void on_alarm(int) {
    g_ran = g_ran + 1;
}

void take(int n) {
    for (int i = 0; i < n; ++i)
        CHECK_EQ(syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGALRM), 0);
}

}  // namespace

int main(int argc, char** argv) {
    CHECK(argc == 2);
    const int n = std::atoi(argv[1]);
    CHECK(n > 1);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGALRM, &sa, nullptr), 0);
    take(n / 2);
    CHECK(signal(SIGALRM, on_alarm) != SIG_ERR);
    take(n - n / 2);
    CHECK_EQ(g_ran, n);
    std::printf("sigalrm: %d signals\n", n);
    return 0;
}
