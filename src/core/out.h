// A bounded writer into a fixed buffer, for messages built where nothing may
// allocate (the shim's start-up and reload): never overflows, always
// NUL-terminated, silently truncates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/ascii.h"
#include "core/options.h"

namespace pipespin {

using ascii::sub;

struct Out {
    char* buf;
    std::size_t size;
    std::size_t len = 0;

    void put(std::string_view s) noexcept {
        for (char c : s) {
            if (len + 1 >= size) break;
            buf[len++] = c;
        }
        if (size) buf[len < size ? len : size - 1] = '\0';
    }
    void num(std::uint64_t v, unsigned base = 10) noexcept {
        ascii::Digits digits;
        put(ascii::uint_text(v, digits, base));
    }
    // User input in messages: printable whatever it was (control bytes and
    // non-ASCII as \xNN), and at most `max` characters of it as shown, so
    // that the rest of the message (what was used instead) always fits.
    void printable(std::string_view s, std::size_t max = 64) noexcept {
        static constexpr char kHex[] = "0123456789abcdef";
        std::size_t shown = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            const auto u = static_cast<unsigned char>(s[i]);
            const bool plain = u >= 0x20 && u < 0x7f;
            if (shown + (plain ? 1 : 4) > max) {
                put("...");
                return;
            }
            if (plain) {
                put(sub(s, i, 1));
            } else {
                const char esc[4] = {'\\', 'x', kHex[u >> 4], kHex[u & 15]};
                put({esc, 4});
            }
            shown += plain ? 1 : 4;
        }
    }
    void value(const OptionSpec& spec, std::uint32_t v) noexcept {
        if (spec.kind == OptionKind::Number)
            num(v);
        else
            put(v < spec.choices.size() ? spec.choices[v] : "?");
    }
    void accepted(const OptionSpec& spec) noexcept {
        if (spec.kind == OptionKind::Text) {
            put(spec.unit);
            return;
        }
        if (spec.kind == OptionKind::Number) {
            num(spec.min);
            put("..");
            num(spec.max);
            return;
        }
        for (std::size_t i = 0; i < spec.choices.size(); ++i) {
            if (i) put("|");
            put(spec.choices[i]);
        }
    }
};

}  // namespace pipespin
