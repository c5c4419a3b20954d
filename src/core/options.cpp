#include "core/options.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

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
    {"spin_us", &Options::spin_us, {}, 0, 1000000, "µs",
     "spin budget per wait (fixed) or its ceiling (adaptive); 0 disables spinning"},
    {"probe", &Options::probe_v, kProbes, 0, 0, "",
     "how a spin looks at the pipe: nowait (preadv2/pwritev2 RWF_NOWAIT, then poll), "
     "poll (zero-timeout poll), fionread (ioctl FIONREAD; takes the pipe mutex)"},
    {"log", &Options::log_v, kLevels, 0, 0, "",
     "what the shim reports on stderr (off|error|warn|info|debug); info adds an exit summary"},
};
static_assert(std::size(kTable) == std::tuple_size_v<decltype(Resolved::sources)>);

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

// Shown in messages: bounded and printable, whatever the input was.
std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 64)) {
        auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f) out += c;
        else out += fmt::format("\\x{:02x}", u);
    }
    if (s.size() > 64) out += "...";
    return out;
}

}  // namespace

std::span<const OptionSpec> option_table() noexcept { return kTable; }

const OptionSpec* find_option(std::string_view name) noexcept {
    for (const auto& spec : kTable)
        if (spec.name == name) return &spec;
    return nullptr;
}

std::string env_name(const OptionSpec& spec) {
    std::string out = "PIPESPIN_";
    for (char c : spec.name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

std::string format_value(const OptionSpec& spec, std::uint32_t value) {
    if (!spec.choices.empty())
        return value < spec.choices.size() ? std::string(spec.choices[value]) : "?";
    return std::to_string(value);
}

std::string format_default(const OptionSpec& spec) {
    return format_value(spec, Options{}.*spec.field);
}

std::string accepted_values(const OptionSpec& spec) {
    if (!spec.choices.empty()) return fmt::format("{}", fmt::join(spec.choices, "|"));
    return fmt::format("{}..{}", spec.min, spec.max);
}

ParsedValue parse_value(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) {
    std::string_view t = trim(text);
    if (!spec.choices.empty()) {
        for (std::uint32_t i = 0; i < spec.choices.size(); ++i)
            if (iequals(t, spec.choices[i])) return {i, {}};
        return {fallback, fmt::format("bad value '{}' (expected {}); using {}", printable(text),
                                      accepted_values(spec), format_value(spec, fallback))};
    }
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    bool overflow = ec == std::errc::result_out_of_range;
    if (t.empty() || (ec != std::errc{} && !overflow) || end != t.data() + t.size())
        return {fallback, fmt::format("bad value '{}' (expected a whole number {}); using {}",
                                      printable(text), accepted_values(spec),
                                      format_value(spec, fallback))};
    if (overflow || v > spec.max)
        return {spec.max, fmt::format("value '{}' is above the maximum {}; using {}",
                                      printable(text), spec.max, spec.max)};
    if (v < spec.min)
        return {spec.min, fmt::format("value '{}' is below the minimum {}; using {}",
                                      printable(text), spec.min, spec.min)};
    return {static_cast<std::uint32_t>(v), {}};
}

Resolved resolve_from_env(GetEnv getenv_fn, void* ctx) {
    Resolved r;
    for (std::size_t i = 0; i < std::size(kTable); ++i) {
        const OptionSpec& spec = kTable[i];
        std::string name = env_name(spec);
        const char* text = getenv_fn(name.c_str(), ctx);
        if (text == nullptr) continue;
        std::uint32_t& slot = r.options.*spec.field;
        ParsedValue pv = parse_value(spec, text, slot);
        if (!pv.problem.empty()) r.warnings.push_back(fmt::format("{}: {}", name, pv.problem));
        slot = pv.value;
        r.sources[i].where = name;
    }
    return r;
}

}  // namespace pipespin
