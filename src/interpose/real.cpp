#include "interpose/real.h"

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <new>

#include "interpose/next_symbol.h"

namespace pipespin::interpose {

#define PIPESPIN_HOOK(ret, name, params) constinit Real<name##_fn, Hook::name> real_##name;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK

std::atomic<bool> g_ready{false};
constinit thread_local bool t_busy [[gnu::tls_model("initial-exec")]] = false;

namespace {

// The names and the slots, found by a hook's number. Neither is a table of
// pointers: each pointer would be a relocation the loader applies in every
// process at start-up (144 of them), for lists a process reads only on a
// first call. The names are one string with offsets into it; the slots are
// a switch, compiled to relative jumps.
constexpr char kNameText[] =
#define PIPESPIN_HOOK(ret, name, params) #name "\0"
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
    ;

constexpr std::size_t kHooks = static_cast<std::size_t>(Hook::kCount);

constexpr auto kNameAt = [] {
    std::array<std::uint16_t, kHooks> at{};
    std::size_t pos = 0;
    for (std::size_t i = 0; i < kHooks; ++i) {
        at[i] = static_cast<std::uint16_t>(pos);
        while (kNameText[pos] != '\0') ++pos;
        ++pos;
    }
    return at;
}();
static_assert(kNameAt[kHooks - 1] + 1 < sizeof kNameText, "hooks.def and Hook agree");

const char* name_of(std::size_t i) noexcept {
    return kNameText + kNameAt[i];
}

// Not a lookup table either (GCC would turn the switch into one of
// addresses: relocations again).
[[gnu::optimize("no-tree-switch-conversion")]] std::atomic<void*>* slot_of(std::size_t i) noexcept {
    switch (static_cast<Hook>(i)) {
#define PIPESPIN_HOOK(ret, name, params) \
    case Hook::name:                     \
        return &real_##name.slot;
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
        case Hook::kCount:
            break;
    }
    return nullptr;
}

// The objects after the shim, found once, by the first resolution (it
// takes no lock: _dl_find_object). 0: not yet, 1: being found, 2: ready.
// Trivially destructible: nothing is registered to run at exit.
union NextStorage {
    constexpr NextStorage() : none() {}
    char none;
    NextSymbols next;
};
static_assert(std::is_trivially_destructible_v<NextStorage>);
constinit NextStorage g_next;
std::atomic<int> g_next_state{0};

const void* self() noexcept {
    return reinterpret_cast<const void*>(&resolve_hook);
}

}  // namespace

namespace {

void* find_next(std::size_t i, bool may_ask_dlsym) noexcept;

// What a forked child calls where its parent may never have: it wires a
// pipe (dup2, close, fcntl), execs, exits. A name resolved in the parent is
// inherited by every child; one resolved in the child costs each child the
// look-up, page faults on libc's symbol tables (they are mapped afresh in a
// child) and a copy-on-write of the page of the slot: 7 of the page faults
// of each iteration of a shell's $(...) loop, where only the child calls
// dup2, and 8 of the 25 of a forked child that only calls _exit (17
// without the shim), ~30 µs of its fork on this project's AMD VM. Resolved
// at a process's first pipe and before its first fork (the fork hook).
constexpr Hook kForChildren[] = {
    Hook::read,  Hook::write,  Hook::close, Hook::dup,    Hook::dup2,   Hook::dup3,
    Hook::fcntl, Hook::close_range, Hook::sigaction, Hook::execve, Hook::execv, Hook::execvp,
    Hook::execvpe, Hook::execl, Hook::execle, Hook::execlp, Hook::_exit};

void resolve_for_children() noexcept {
    for (const Hook c : kForChildren) {
        const auto j = static_cast<std::size_t>(c);
        if (slot_of(j)->load(std::memory_order_relaxed) == nullptr) (void)find_next(j, false);  // no dlsym from inside pipe()
    }
}

// Set once a fork has resolved them (a name libc lacks stays null, and
// must not be looked up again at every fork).
std::atomic<bool> g_children_resolved{false};

}  // namespace

void resolve_before_fork() noexcept {
    if (g_children_resolved.load(std::memory_order_relaxed)) return;
    resolve_for_children();
    g_children_resolved.store(true, std::memory_order_relaxed);
}

void* resolve_hook(Hook h) noexcept {
    void* p = find_next(static_cast<std::size_t>(h), true);
    if (h == Hook::pipe || h == Hook::pipe2) resolve_for_children();
    return p;
}

namespace {

void* find_next(std::size_t i, bool may_ask_dlsym) noexcept {
    void* p = nullptr;
    int state = g_next_state.load(std::memory_order_acquire);
    if (state == 0 && g_next_state.compare_exchange_strong(state, 1, std::memory_order_acq_rel)) {
        new (&g_next.next) NextSymbols(self());
        g_next_state.store(2, std::memory_order_release);
        state = 2;
    }
    if (state == 2) {
        p = g_next.next.find(name_of(i));
    } else {
        // Another thread (or the handler's interrupted thread) is finding
        // them: look on our own, the same way.
        const NextSymbols mine(self());
        p = mine.find(name_of(i));
    }
    if (p == nullptr && may_ask_dlsym) p = dlsym(RTLD_NEXT, name_of(i));  // not answered there (an IFUNC, say)
    if (p != nullptr) slot_of(i)->store(p, std::memory_order_release);
    return p;
}

}  // namespace

}  // namespace pipespin::interpose
