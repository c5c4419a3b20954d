// Installs handlers with signal() and sigset(), raises both signals and
// checks the handlers ran; check_sigchain.sh runs it under a preload that
// interposes those names after libpipespin.so.
#include <signal.h>

#include "../../support/helpers.h"

namespace {
volatile sig_atomic_t g_seen = 0;
void on_signal(int sig) {
    g_seen = g_seen | (sig == SIGUSR1 ? 1 : 2);
}
}  // namespace

int main() {
    CHECK(signal(SIGUSR1, on_signal) != SIG_ERR);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the JVM's libjsig interposes it still
    CHECK(sigset(SIGUSR2, on_signal) != SIG_ERR);
#pragma GCC diagnostic pop
    CHECK_EQ(raise(SIGUSR1), 0);
    CHECK_EQ(raise(SIGUSR2), 0);
    CHECK_EQ(static_cast<int>(g_seen), 3);
    std::printf("sigchain: ok\n");
    return 0;
}
