#include "interpose/real.h"

#include <dlfcn.h>

#include <cstring>

#include "interpose/next_symbol.h"

namespace pipespin::interpose {

#define PIPESPIN_HOOK(ret, name, params) name##_fn real_##name = nullptr;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK

std::atomic<bool> g_ready{false};
constinit thread_local bool t_busy [[gnu::tls_model("initial-exec")]] = false;

namespace {
// Hooks whose absence from libc is survivable (older glibc): the wrapper
// falls back to the raw syscall for good.
bool optional_symbol(const char* name) noexcept {
    for (const char* n :
         {"fcntl64", "__poll_chk", "__read_chk", "__sigaction", "bsd_signal", "ssignal",
          "sysv_signal", "__sysv_signal", "sigset", "close_range", "closefrom", "fcloseall",
          "freopen64", "execveat", "execvpe", "fexecve", "_Exit"})
        if (std::strcmp(name, n) == 0) return true;
    return false;
}
}  // namespace

void* resolve_one(const char* name) noexcept {
    return dlsym(RTLD_NEXT, name);
}

const char* resolve_all() noexcept {
    const char* missing = nullptr;
    // dlsym only for what the direct look-up does not answer (next_symbol.h).
    const NextSymbols next(reinterpret_cast<const void*>(&resolve_all));
    auto find = [&](const char* name) noexcept {
        void* p = next.find(name);
        return p != nullptr ? p : dlsym(RTLD_NEXT, name);
    };
#define PIPESPIN_HOOK(ret, name, params)                    \
    real_##name = reinterpret_cast<name##_fn>(find(#name)); \
    if (real_##name == nullptr && !optional_symbol(#name) && missing == nullptr) missing = #name;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
    return missing;
}

}  // namespace pipespin::interpose
