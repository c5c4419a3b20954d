// Small text helpers for code that may not allocate or call into the C++
// runtime (the shim's start-up, reload and exit paths): character classes,
// trimming, ASCII case folding and integer formatting. Everything here is
// constexpr or inline and touches nothing but its arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pipespin::ascii {

// std::string_view::substr without its std::out_of_range (a call into the
// C++ runtime, which the shim does not have): `pos` is clamped to the end.
constexpr std::string_view sub(std::string_view s, std::size_t pos,
                               std::size_t n = std::string_view::npos) noexcept {
    if (pos > s.size()) pos = s.size();
    return {s.data() + pos, n < s.size() - pos ? n : s.size() - pos};
}

// A blank within a line (config files split words on these).
constexpr bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}
// A blank or a newline.
constexpr bool is_space(char c) noexcept {
    return c == '\n' || is_blank(c);
}

// Without leading and trailing characters of the class `is`: blanks and
// newlines, or (is_blank) blanks only.
constexpr std::string_view trim(std::string_view s, bool (*is)(char) noexcept = is_space) noexcept {
    while (!s.empty() && is(s.front())) s.remove_prefix(1);
    while (!s.empty() && is(s.back())) s.remove_suffix(1);
    return s;
}

constexpr char lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
constexpr char upper(char c) noexcept {
    return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}

// Equal but for ASCII case.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

// Room for any std::uint64_t in any base from 8 up (22 octal digits).
using Digits = char[24];

// v in `base` (8, 10 or 16; lower-case digits), written into the end of buf: a
// view of it. By hand rather than snprintf: this runs in signal handlers,
// exec wrappers and at exit.
constexpr std::string_view uint_text(std::uint64_t v, Digits& buf, unsigned base = 10) noexcept {
    constexpr char kDigits[] = "0123456789abcdef";
    std::size_t n = sizeof buf;
    do {
        buf[--n] = kDigits[v % base];
        v /= base;
    } while (v != 0 && n > 0);
    return {buf + n, sizeof buf - n};
}

}  // namespace pipespin::ascii
