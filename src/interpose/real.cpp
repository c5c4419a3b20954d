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

// The objects after the shim, found once (a dladdr, which takes the
// loader's lock: never from a signal handler once the constructor ran).
union NextStorage {
    constexpr NextStorage() : none() {}
    ~NextStorage() {}
    char none;
    NextSymbols next;
};
constinit NextStorage g_next;
std::atomic<bool> g_prepared{false};

}  // namespace

void prepare_resolution() noexcept {
    if (g_prepared.load(std::memory_order_acquire)) return;
    new (&g_next.next) NextSymbols(reinterpret_cast<const void*>(&prepare_resolution));
    g_prepared.store(true, std::memory_order_release);
}

void* resolve_hook(Hook h) noexcept {
    // A call before the constructor (another library's constructor, say)
    // prepares the look-up itself: the loader runs constructors in one
    // thread, holding its lock recursively.
    prepare_resolution();
    const auto i = static_cast<std::size_t>(h);
    void* p = g_next.next.find(kNames[i]);
    if (p == nullptr) p = dlsym(RTLD_NEXT, kNames[i]);  // not answered there (an IFUNC, say)
    if (p != nullptr) kSlots[i]->store(p, std::memory_order_release);
    return p;
}

}  // namespace pipespin::interpose
