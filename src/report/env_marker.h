// The seam between `pipespin run` and the shim in the processes it starts:
// "these PIPESPIN_* values were checked, and their problems reported, once
// for the whole process tree". Used by both sides (tools/cli/run.cpp sets
// it, src/interpose/settings.cpp reads it), so the two cannot disagree.
//
// Version 1: the variable PIPESPIN_CHECKED holds "1:" and 16 lower-case hex
// digits: the sum (mod 2^64) of the 64-bit FNV-1a hashes of every
// environment entry "PIPESPIN_NAME=value" except PIPESPIN_CHECKED itself,
// in any order. A shim whose PIPESPIN_* entries give the same sum stays
// quiet about the problems of those variables (a program that changed one
// of them, or a child that got a new one, sees a different sum and warns
// again); problems of the config file are not covered. An incompatible
// change gets a new version prefix, which an old reader ignores.
//
// Header-only and allocation-free: the shim calls it only when it has a
// warning about a variable to write, never at start-up.
#pragma once

#include <cstdint>

namespace pipespin::env_marker {

inline constexpr char kName[] = "PIPESPIN_CHECKED";
inline constexpr char kPrefix[] = "PIPESPIN_";
inline constexpr int kValueLength = 2 + 16;  // "1:" and the hex digits

// True for an entry "PIPESPIN_...=..." that counts (not the marker itself).
inline bool counts(const char* entry) noexcept {
    for (int i = 0; kPrefix[i] != '\0'; ++i)
        if (entry[i] != kPrefix[i]) return false;
    const char* rest = entry + sizeof kPrefix - 1;
    const char* own = kName + sizeof kPrefix - 1;
    while (*own != '\0' && *rest == *own) ++rest, ++own;
    return !(*own == '\0' && *rest == '=');
}

inline std::uint64_t entry_hash(const char* entry) noexcept {
    std::uint64_t h = 14695981039346656037ull;
    for (; *entry != '\0'; ++entry) {
        h ^= static_cast<unsigned char>(*entry);
        h *= 1099511628211ull;
    }
    return h;
}

// The sum over an environment (a null-terminated array of entries).
inline std::uint64_t sum(char* const* env) noexcept {
    std::uint64_t s = 0;
    for (; env != nullptr && *env != nullptr; ++env)
        if (counts(*env)) s += entry_hash(*env);
    return s;
}

// The variable's value for `sum`, NUL-terminated, into out[kValueLength + 1].
inline void format(std::uint64_t s, char (&out)[kValueLength + 1]) noexcept {
    out[0] = '1';
    out[1] = ':';
    for (int i = 0; i < 16; ++i) out[2 + i] = "0123456789abcdef"[(s >> (60 - 4 * i)) & 0xf];
    out[kValueLength] = '\0';
}

// True when `env` holds a marker that matches its own PIPESPIN_* entries.
inline bool matches(char* const* env) noexcept {
    const char* value = nullptr;
    for (char* const* e = env; e != nullptr && *e != nullptr; ++e) {
        const char* p = *e;
        int i = 0;
        while (kName[i] != '\0' && p[i] == kName[i]) ++i;
        if (kName[i] == '\0' && p[i] == '=') value = p + i + 1;
    }
    if (value == nullptr) return false;
    char want[kValueLength + 1];
    format(sum(env), want);
    for (int i = 0; i <= kValueLength; ++i)
        if (value[i] != want[i]) return false;
    return true;
}

}  // namespace pipespin::env_marker
