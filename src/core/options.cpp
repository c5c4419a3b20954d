#include "core/options.h"

#include <cstdio>
#include <cstring>

namespace pipespin {
namespace {

constexpr std::string_view kModes[] = {"off", "fixed", "adaptive"};
constexpr std::string_view kProbes[] = {"fionread", "poll", "nowait"};
constexpr std::string_view kLevels[] = {"off", "error", "warn", "info", "debug"};

constexpr OptionSpec kTable[] = {
    {"mode", &Options::mode_v, kModes, 0, 0, "",
     "off: interpose but never spin (the A/B control arm); fixed: spin up to spin_us "
     "before every blocking pipe wait; adaptive: learn per fd whether spinning pays, "
     "under spin_us (docs/policy.md)"},
    {"spin_us",
     &Options::spin_us,
     {},
     0,
     1000000,
     "µs",
     "spin budget per wait (fixed) or its ceiling (adaptive); 0 disables spinning"},
    {"probe", &Options::probe_v, kProbes, 0, 0, "",
     "how a spin looks at the pipe: nowait (preadv2/pwritev2 RWF_NOWAIT, then poll), "
     "poll (zero-timeout poll), fionread (ioctl FIONREAD; takes the pipe mutex)"},
    {"log", &Options::log_v, kLevels, 0, 0, "",
     "what the shim reports on stderr (off|error|warn|info|debug); info adds an exit summary"},
};
static_assert(std::size(kTable) == kOptionCount);

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

// A bounded writer into a fixed buffer: never overflows, always terminated.
struct Out {
    char* buf;
    std::size_t size;
    std::size_t len = 0;
    void put(std::string_view s) {
        for (char c : s) {
            if (len + 1 >= size) break;
            buf[len++] = c;
        }
        if (size) buf[len < size ? len : size - 1] = '\0';
    }
    void num(std::uint64_t v) {
        char tmp[24];
        std::snprintf(tmp, sizeof tmp, "%llu", static_cast<unsigned long long>(v));
        put(tmp);
    }
    // Shown in messages: bounded and printable, whatever the input was.
    void printable(std::string_view s) {
        char tmp[8];
        for (char c : s.substr(0, 64)) {
            auto u = static_cast<unsigned char>(c);
            if (u >= 0x20 && u < 0x7f) {
                put(std::string_view(&c, 1));
            } else {
                std::snprintf(tmp, sizeof tmp, "\\x%02x", u);
                put(tmp);
            }
        }
        if (s.size() > 64) put("...");
    }
    void value(const OptionSpec& spec, std::uint32_t v) {
        if (spec.choices.empty())
            num(v);
        else
            put(v < spec.choices.size() ? spec.choices[v] : "?");
    }
    void accepted(const OptionSpec& spec) {
        if (spec.choices.empty()) {
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

}  // namespace

std::span<const OptionSpec> option_table() noexcept {
    return kTable;
}

const OptionSpec* find_option(std::string_view name) noexcept {
    for (const auto& spec : kTable)
        if (spec.name == name) return &spec;
    return nullptr;
}

RawParse parse_raw(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) noexcept {
    std::string_view t = trim(text);
    if (!spec.choices.empty()) {
        for (std::uint32_t i = 0; i < spec.choices.size(); ++i)
            if (iequals(t, spec.choices[i])) return {i, ParseStatus::Ok};
        return {fallback, ParseStatus::Bad};
    }
    if (t.empty()) return {fallback, ParseStatus::Bad};
    std::uint64_t v = 0;
    bool overflow = false;
    for (char c : t) {
        if (c < '0' || c > '9') return {fallback, ParseStatus::Bad};
        if (v > (~0ull - 9) / 10)
            overflow = true;
        else
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (overflow || v > spec.max) return {spec.max, ParseStatus::AboveMax};
    if (v < spec.min) return {spec.min, ParseStatus::BelowMin};
    return {static_cast<std::uint32_t>(v), ParseStatus::Ok};
}

bool env_name_into(const OptionSpec& spec, char* buf, std::size_t size) noexcept {
    constexpr std::string_view kPrefix = "PIPESPIN_";
    if (kPrefix.size() + spec.name.size() + 1 > size) return false;
    std::size_t n = 0;
    for (char c : kPrefix) buf[n++] = c;
    for (char c : spec.name)
        buf[n++] = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    buf[n] = '\0';
    return true;
}

void describe_problem(const OptionSpec& spec, ParseStatus status, std::string_view text,
                      std::uint32_t used, char* buf, std::size_t size) noexcept {
    Out o{buf, size};
    if (size) buf[0] = '\0';
    switch (status) {
        case ParseStatus::Ok:
            return;
        case ParseStatus::Bad:
            o.put("bad value '");
            o.printable(text);
            o.put(spec.choices.empty() ? "' (expected a whole number " : "' (expected ");
            o.accepted(spec);
            o.put(")");
            break;
        case ParseStatus::AboveMax:
        case ParseStatus::BelowMin:
            o.put("value '");
            o.printable(text);
            o.put(status == ParseStatus::AboveMax ? "' is above the maximum "
                                                  : "' is below the minimum ");
            o.num(status == ParseStatus::AboveMax ? spec.max : spec.min);
            break;
    }
    o.put("; using ");
    o.value(spec, used);
}

void read_env(GetEnv getenv_fn, void* ctx, Options& options, EnvProblems& problems,
              EnvSources& sources) noexcept {
    char name[64];
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const OptionSpec& spec = kTable[i];
        if (!env_name_into(spec, name, sizeof name)) continue;
        const char* text = getenv_fn(name, ctx);
        if (text == nullptr) continue;
        std::uint32_t& slot = options.*spec.field;
        RawParse pr = parse_raw(spec, text, slot);
        if (pr.status != ParseStatus::Ok && problems.count < kOptionCount) {
            Out o{problems.lines[problems.count], sizeof problems.lines[0]};
            o.put(name);
            o.put(": ");
            describe_problem(spec, pr.status, text, pr.value, o.buf + o.len, o.size - o.len);
            ++problems.count;
        }
        slot = pr.value;
        sources.from_env[i] = true;
    }
}

}  // namespace pipespin
