// The core side of the control API that programs call through
// include/pipespin/pipespin.h (src/interpose/api.cpp exports it): per-fd
// hints, the per-thread switch, the counters snapshot.
//
// Contract: takes and returns the public header's values (budgets in µs,
// PIPESPIN_READ/WRITE, 0 or a negative errno) and converts them to the
// core's (PolicyState::hint, StatsSnapshot). Allocation-free, lock-free,
// raw syscalls only, errno untouched. Off the hot path, except
// t_thread_off, which Runtime::params() reads on every call.
#pragma once

struct pipespin_stats;

namespace pipespin {

// The calling thread never spins (pipespin_thread_spin(0)); read into
// PolicyParams::thread_off.
extern constinit thread_local bool t_thread_off [[gnu::tls_model("initial-exec")]];

// pipespin_fd_hint(). A fd the table does not know yet is classified now
// (fstat, F_GETFL, statfs), in any mode, so that every arm of an A/B test
// makes the same calls and gets the same answers; one that is not a pipe or
// FIFO is refused (-ENOTSUP), and nothing is kept for it. The kernel's word
// on what fd is wins over the table's (a cached class may be stale).
int control_fd_hint(int fd, int dirs, int budget_us) noexcept;
// pipespin_thread_spin(): the previous setting (0, 1), or -EINVAL.
int control_thread_spin(int enable) noexcept;
// pipespin_get_stats(): the process's counters (stats_snapshot()) into as
// much of *out as out->size says the caller knows.
int control_get_stats(pipespin_stats* out) noexcept;

}  // namespace pipespin
