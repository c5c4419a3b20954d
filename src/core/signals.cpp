#include "core/signals.h"

namespace pipespin {

constinit thread_local std::uint32_t t_signal_epoch [[gnu::tls_model("initial-exec")]] = 0;
constinit thread_local std::uint32_t t_eintr_epoch [[gnu::tls_model("initial-exec")]] = 0;
constinit std::atomic<std::uint64_t> g_restart_bits{0};

}  // namespace pipespin
