// The std::string face of the option table, for the CLI, the checker and the
// tests. The shim itself uses only the allocation-free functions.
#include <fmt/format.h>

#include "core/options.h"

namespace pipespin {

std::string env_name(const OptionSpec& spec) {
    char buf[64];
    return env_name_into(spec, buf, sizeof buf) ? std::string(buf) : std::string();
}

std::string format_value(const OptionSpec& spec, std::uint32_t value) {
    if (spec.kind == OptionKind::Choice)
        return value < spec.choices.size() ? std::string(spec.choices[value]) : "?";
    return std::to_string(value);
}

std::string format_option(const OptionSpec& spec, const Options& options) {
    if (spec.kind == OptionKind::Text) return std::string((options.*spec.text).view());
    return format_value(spec, options.*spec.field);
}

std::string format_default(const OptionSpec& spec) {
    return format_option(spec, Options{});
}

std::string accepted_values(const OptionSpec& spec) {
    if (spec.kind == OptionKind::Text) return std::string(spec.unit);
    if (spec.kind == OptionKind::Choice) return fmt::format("{}", fmt::join(spec.choices, "|"));
    return fmt::format("{}..{}", spec.min, spec.max);
}

std::string value_hint(const OptionSpec& spec) {
    if (spec.kind != OptionKind::Number || spec.unit.empty()) return accepted_values(spec);
    return fmt::format("{} {}", accepted_values(spec), spec.unit);
}

ParsedValue parse_value(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) {
    RawParse pr = parse_raw(spec, text, fallback);
    ParsedValue pv{pr.value, {}};
    if (pr.status != ParseStatus::Ok) {
        char buf[256];
        describe_problem(spec, pr.status, text, pr.value, buf, sizeof buf);
        pv.problem = buf;
    }
    return pv;
}

}  // namespace pipespin
