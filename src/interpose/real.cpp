#include "interpose/real.h"

#include <dlfcn.h>

#include <new>

#include "interpose/next_symbol.h"

namespace pipespin::interpose {

#define PIPESPIN_HOOK(ret, name, params) constinit Real<name##_fn, Hook::name> real_##name;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK

std::atomic<bool> g_ready{false};
constinit thread_local bool t_busy [[gnu::tls_model("initial-exec")]] = false;

namespace {

constexpr const char* kNames[] = {
#define PIPESPIN_HOOK(ret, name, params) #name,
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
};

std::atomic<void*>* const kSlots[] = {
#define PIPESPIN_HOOK(ret, name, params) &real_##name.slot,
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
};

static_assert(sizeof kNames / sizeof kNames[0] == static_cast<std::size_t>(Hook::kCount));

// The objects after the shim, found once, by the first resolution (it
// takes no lock: _dl_find_object). 0: not yet, 1: being found, 2: ready.
union NextStorage {
    constexpr NextStorage() : none() {}
    ~NextStorage() {}
    char none;
    NextSymbols next;
};
constinit NextStorage g_next;
std::atomic<int> g_next_state{0};

const void* self() noexcept {
    return reinterpret_cast<const void*>(&resolve_hook);
}

}  // namespace

void* resolve_hook(Hook h) noexcept {
    const auto i = static_cast<std::size_t>(h);
    void* p = nullptr;
    int state = g_next_state.load(std::memory_order_acquire);
    if (state == 0 && g_next_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
        new (&g_next.next) NextSymbols(self());
        g_next_state.store(2, std::memory_order_release);
        state = 2;
    }
    if (state == 2) {
        p = g_next.next.find(kNames[i]);
    } else {
        // Another thread (or the handler's interrupted thread) is finding
        // them: look on our own, the same way.
        const NextSymbols mine(self());
        p = mine.find(kNames[i]);
    }
    if (p == nullptr) p = dlsym(RTLD_NEXT, kNames[i]);  // not answered there (an IFUNC, say)
    if (p != nullptr) kSlots[i]->store(p, std::memory_order_release);
    return p;
}

}  // namespace pipespin::interpose
