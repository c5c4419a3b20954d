// A SIGALRM handler and a one-shot timer, for the e2e cases that check EINTR:
// the timer fires while the helper is blocked (or spinning) in a call on an
// empty pipe, and the case checks what the call then returns.
#pragma once

#include <signal.h>
#include <sys/time.h>

#include "common.h"

namespace e2e {

inline volatile sig_atomic_t g_alarms = 0;
// >= 0: the handler writes g_alarm_text there (an SA_RESTART handler that
// gives the interrupted read something to return).
inline int g_alarm_fd = -1;
inline const char* g_alarm_text = "late\n";

inline void on_alarm(int) {
    const int saved = errno;
    g_alarms = g_alarms + 1;
    if (g_alarm_fd >= 0) {
        ssize_t r = write(g_alarm_fd, g_alarm_text, std::strlen(g_alarm_text));
        (void)r;
    }
    errno = saved;
}

inline void install_alarm(bool restart) {
    struct sigaction sa {};
    sa.sa_handler = on_alarm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGALRM, &sa, nullptr), 0);
}

// One SIGALRM after `us` microseconds (0 disarms).
inline void arm_alarm(long us) {
    itimerval it{};
    it.it_value.tv_sec = us / 1000000;
    it.it_value.tv_usec = us % 1000000;
    CHECK_EQ(setitimer(ITIMER_REAL, &it, nullptr), 0);
}

// The timer fires this long into a call: long enough for the call to be
// waiting, far shorter than the 1 s spin budget the cases run with.
inline constexpr long kAlarmUs = 20000;

}  // namespace e2e
