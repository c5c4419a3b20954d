// e2e.next_symbol: the shim resolves its real functions with its own look-up
// (src/interpose/next_symbol.h) and asks dlsym only where that says
// nothing; the two must agree. This library is preloaded first, with
// libnextsym_peer.so (which defines getppid, read and write, as another
// interposer would) after it: from here, RTLD_NEXT finds the peer's
// definitions first, then libc's. Its constructor compares the look-up with
// dlsym(RTLD_NEXT) for every name the shim hooks and a few more (an IFUNC,
// a name nobody defines), prints "next_symbol: N names agree" and exits 1
// on the first disagreement.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "interpose/next_symbol.h"

namespace {

const char* const kNames[] = {
#define PIPESPIN_HOOK(ret, name, params) #name,
#include "interpose/hooks.def"
#undef PIPESPIN_HOOK
    "getppid", "memcpy", "strlen", "clock_gettime", "pipespin_no_such_symbol",
    "malloc",  "stdout", "environ"};

__attribute__((constructor)) void check() {
    const pipespin::interpose::NextSymbols next(reinterpret_cast<const void*>(&check));
    int agree = 0, direct = 0;
    for (const char* name : kNames) {
        void* want = dlsym(RTLD_NEXT, name);
        void* got = next.find(name);
        if (got != nullptr) ++direct;
        // Null from the look-up means "ask dlsym": never a different answer.
        if (got != nullptr && got != want) {
            Dl_info a{}, b{};
            dladdr(got, &a);
            dladdr(want, &b);
            fprintf(stderr, "next_symbol: %s: look-up %p (%s), dlsym %p (%s)\n", name, got,
                    a.dli_fname, want, b.dli_fname);
            exit(1);
        }
        ++agree;
    }
    // The peer's read must be the one found: the look-up honours the order.
    Dl_info info{};
    void* read_fn = next.find("read");
    if (read_fn == nullptr || dladdr(read_fn, &info) == 0 || info.dli_fname == nullptr) exit(1);
    printf("next_symbol: %d names agree, %d found directly, read from %s\n", agree, direct,
           __builtin_strstr(info.dli_fname, "nextsym_peer") != nullptr ? "the peer" : "elsewhere");
    fflush(stdout);
}

}  // namespace
