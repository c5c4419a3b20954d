#include "interpose/next_symbol.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cstdint>

// Called through its GOT slot, bound when the library is loaded, not
// through the PLT: the first hook a process calls finds the real functions
// here, and a lazy binding would cost it a page fault on the PLT's page (a
// 64 KiB window of code of its own, far from the rest of what a short
// process runs) besides the same symbol look-up.
extern "C" int _dl_find_object(void*, dl_find_object*) noexcept __attribute__((noplt));

namespace pipespin::interpose {
namespace {

// A dynamic-section pointer. glibc relocates these in place for the objects
// it loads (x86_64, aarch64), but not everywhere: an address below the
// object's base is still an offset.
unsigned long at(unsigned long base, ElfW(Addr) ptr) noexcept {
    return ptr < base ? base + ptr : ptr;
}

// dl_new_hash: the GNU hash of a name.
std::uint32_t gnu_hash(const char* s) noexcept {
    std::uint32_t h = 5381;
    for (; *s != '\0'; ++s) h = h * 33 + static_cast<unsigned char>(*s);
    return h;
}

bool same(const char* a, const char* b) noexcept {
    for (; *a != '\0' && *a == *b; ++a, ++b) {
    }
    return *a == *b;
}

}  // namespace

NextSymbols::NextSymbols(const void* self) noexcept {
    dl_find_object found;
    if (_dl_find_object(const_cast<void*>(self), &found) != 0 || found.dlfo_link_map == nullptr)
        return;
    const link_map* map = found.dlfo_link_map;
    for (const link_map* l = map->l_next; l != nullptr && count_ < kMaxObjects; l = l->l_next) {
        Object o;
        o.base = l->l_addr;
        for (const ElfW(Dyn)* d = l->l_ld; d != nullptr && d->d_tag != DT_NULL; ++d) {
            switch (d->d_tag) {
                case DT_SYMTAB:
                    o.symtab = reinterpret_cast<const void*>(at(o.base, d->d_un.d_ptr));
                    break;
                case DT_STRTAB:
                    o.strtab = reinterpret_cast<const char*>(at(o.base, d->d_un.d_ptr));
                    break;
                case DT_GNU_HASH:
                    o.gnu_hash = reinterpret_cast<const unsigned*>(at(o.base, d->d_un.d_ptr));
                    break;
                case DT_VERSYM:
                    o.versym = reinterpret_cast<const unsigned short*>(at(o.base, d->d_un.d_ptr));
                    break;
                default:
                    break;
            }
        }
        // An object without a GNU hash table could hold the name: past it,
        // nothing found here would be what dlsym finds.
        if (o.symtab == nullptr || o.strtab == nullptr || o.gnu_hash == nullptr) break;
        objects_[count_++] = o;
    }
}

void* NextSymbols::find(const char* name) const noexcept {
    const std::uint32_t hash = gnu_hash(name);
    for (int k = 0; k < count_; ++k) {
        const Object& o = objects_[k];
        const std::uint32_t nbuckets = o.gnu_hash[0];
        const std::uint32_t symoffset = o.gnu_hash[1];
        const std::uint32_t bloom_size = o.gnu_hash[2];
        const std::uint32_t bloom_shift = o.gnu_hash[3];
        if (nbuckets == 0 || bloom_size == 0) continue;
        const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(o.gnu_hash + 4);
        constexpr std::uint32_t kBits = sizeof(ElfW(Addr)) * 8;
        const ElfW(Addr) word = bloom[(hash / kBits) % bloom_size];
        const ElfW(Addr) mask =
            (ElfW(Addr){1} << (hash % kBits)) | (ElfW(Addr){1} << ((hash >> bloom_shift) % kBits));
        if ((word & mask) != mask) continue;
        const auto* buckets = reinterpret_cast<const std::uint32_t*>(bloom + bloom_size);
        const std::uint32_t* chain = buckets + nbuckets;
        std::uint32_t idx = buckets[hash % nbuckets];
        if (idx < symoffset) continue;
        const auto* syms = static_cast<const ElfW(Sym)*>(o.symtab);
        for (;; ++idx) {
            const std::uint32_t h = chain[idx - symoffset];
            if ((h | 1) == (hash | 1)) {
                const ElfW(Sym)& s = syms[idx];
                const unsigned type = ELF64_ST_TYPE(s.st_info);
                const unsigned bind = ELF64_ST_BIND(s.st_info);
                const bool hidden_version = o.versym != nullptr && (o.versym[idx] & 0x8000) != 0;
                if (s.st_value != 0 && s.st_shndx != SHN_UNDEF && !hidden_version &&
                    (bind == STB_GLOBAL || bind == STB_WEAK) &&
                    (type == STT_FUNC || type == STT_OBJECT || type == STT_GNU_IFUNC) &&
                    same(name, o.strtab + s.st_name)) {
                    // An IFUNC's address is its resolver's: let dlsym run it.
                    if (type == STT_GNU_IFUNC) return nullptr;
                    return reinterpret_cast<void*>(o.base + s.st_value);
                }
            }
            if (h & 1) break;  // the end of this bucket's chain
        }
    }
    return nullptr;
}

}  // namespace pipespin::interpose
