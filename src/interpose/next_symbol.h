// What dlsym(RTLD_NEXT, name) finds for code in libpipespin.so, looked up
// without dlsym: the shim resolves about 70 libc names in every process it
// is loaded into, and dlsym costs ~850 instructions a name (a lock, an error
// trap, the caller's object found again each time) against ~100 for the
// hash lookup itself; most processes are short and use a handful of them.
//
// Contract: NextSymbols walks the objects that follow libpipespin.so in the
// link map (the global search order for objects loaded at start-up: later
// preloads, then libc and its dependencies) and looks a name up in each
// one's GNU hash table, taking a symbol the way dlsym does: defined, global
// or weak, a function or object, and of its default version (not a hidden,
// older one). It answers null whenever anything is unusual (no GNU hash
// table, an IFUNC, a name found nowhere), and the caller then asks dlsym:
// the result is always dlsym's. No allocation, no lock, no syscall.
#pragma once

namespace pipespin::interpose {

class NextSymbols {
public:
    // `self`: any address inside libpipespin.so. Async-signal-safe (the
    // shim's object is found with _dl_find_object, which takes no lock).
    explicit NextSymbols(const void* self) noexcept;
    void* find(const char* name) const noexcept;
    // Objects it will search (0: none usable; find() then always says null).
    int objects() const noexcept { return count_; }

private:
    struct Object {
        unsigned long base = 0;
        const void* symtab = nullptr;
        const char* strtab = nullptr;
        const unsigned* gnu_hash = nullptr;
        const unsigned short* versym = nullptr;
    };
    static constexpr int kMaxObjects = 16;
    Object objects_[kMaxObjects];
    int count_ = 0;
};

}  // namespace pipespin::interpose
