// A SIGALRM handler and a one-shot timer, for the e2e cases that check EINTR:
// the timer fires while the helper is blocked (or spinning) in a call on an
// empty pipe, and the case checks what the call then returns.
#pragma once

#include <signal.h>

#include "../support/helpers.h"

namespace e2e {

using namespace support;

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

// The timer fires this long into a call: long enough for the call to be
// waiting, far shorter than the 1 s spin budget the cases run with.
inline constexpr long kAlarmUs = 20000;

// What a call returned, and errno right after it.
struct Outcome {
    long result;
    int err;
};

// Runs call() with one SIGALRM kAlarmUs into it, handled with or without
// SA_RESTART; with write_fd >= 0 the handler writes `text` there. Checks
// that the handler ran exactly once.
template <class Call>
Outcome with_alarm(bool restart, int write_fd, const char* text, Call call) {
    install(SIGALRM, on_alarm, restart ? SA_RESTART : 0);
    g_alarm_fd = write_fd;
    if (text != nullptr) g_alarm_text = text;
    const int before = g_alarms;
    arm_alarm_us(kAlarmUs);
    errno = 0;
    const long r = static_cast<long>(call());
    const int e = errno;
    arm_alarm_us(0);
    g_alarm_fd = -1;
    CHECK_EQ(g_alarms, before + 1);
    return {r, e};
}

}  // namespace e2e
