// [program NAME] sections: which programs a section's names match (shell
// globs against the executable's basename, argv[0] or full path).
#include "core/ascii.h"
#include "core/config.h"

namespace pipespin {
namespace {

using ascii::is_blank;
using ascii::sub;

bool class_match(std::string_view p, std::size_t& pi, char c) noexcept {
    // p[pi] == '['. On return pi is past the class; no closing ']' makes
    // the '[' a literal.
    std::size_t j = pi + 1;
    bool negate = false;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        negate = true;
        ++j;
    }
    const std::size_t first = j;
    bool hit = false;
    while (j < p.size() && (p[j] != ']' || j == first)) {
        char lo = p[j];
        if (lo == '\\' && j + 1 < p.size()) lo = p[++j];
        char hi = lo;
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            hi = p[j + 2];
            if (hi == '\\' && j + 3 < p.size()) hi = p[++j + 2];
            j += 2;
        }
        if (c >= lo && c <= hi) hit = true;
        ++j;
    }
    if (j >= p.size()) {  // unterminated: a literal '['
        ++pi;
        return c == '[';
    }
    pi = j + 1;
    return hit != negate;
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) noexcept {
    std::size_t pi = 0, ti = 0, star_p = std::string_view::npos, star_t = 0;
    while (ti < t.size()) {
        if (pi < p.size()) {
            const char c = p[pi];
            if (c == '*') {
                star_p = ++pi;
                star_t = ti;
                continue;
            }
            std::size_t next = pi + 1;
            bool ok;
            if (c == '?') {
                ok = true;
            } else if (c == '[') {
                next = pi;
                ok = class_match(p, next, t[ti]);
            } else if (c == '\\' && pi + 1 < p.size()) {
                next = pi + 2;
                ok = p[pi + 1] == t[ti];
            } else {
                ok = c == t[ti];
            }
            if (ok) {
                pi = next;
                ++ti;
                continue;
            }
        }
        if (star_p == std::string_view::npos) return false;
        pi = star_p;
        ti = ++star_t;
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

std::string_view base_name(std::string_view path) noexcept {
    const std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : sub(path, slash + 1);
}

bool program_matches(std::string_view names, const ProgramId& program) noexcept {
    std::size_t i = 0;
    while (i < names.size()) {
        while (i < names.size() && is_blank(names[i])) ++i;
        std::size_t j = i;
        while (j < names.size() && !is_blank(names[j])) ++j;
        const std::string_view name = sub(names, i, j - i);
        i = j;
        if (name.empty()) continue;
        if (name.find('/') != std::string_view::npos) {
            if (!program.exe_path.empty() && glob_match(name, program.exe_path)) return true;
        } else {
            if (!program.exe_name.empty() && glob_match(name, program.exe_name)) return true;
            if (!program.argv0_name.empty() && glob_match(name, program.argv0_name)) return true;
        }
    }
    return false;
}

}  // namespace pipespin
