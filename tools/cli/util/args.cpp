#include "cli/util/args.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/text.h"

namespace pipespin::cli {

std::string flag_name(const OptionSpec& spec) {
    std::string out = "--";
    for (char c : spec.name) out += c == '_' ? '-' : c;
    return out;
}

std::uint32_t parse_flag_value(std::string_view command, const OptionSpec& spec,
                               std::string_view text) {
    ParsedValue pv = parse_value(spec, text, Options{}.*spec.field);
    if (!pv.problem.empty())
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {})", command,
                                     printable(text), flag_name(spec), accepted_values(spec)));
    return pv.value;
}

std::string parse_flag_text(std::string_view command, const OptionSpec& spec,
                            std::string_view text) {
    Options o;
    if (apply_option(spec, text, o) != ParseStatus::Ok)
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {})", command,
                                     printable(text), flag_name(spec), accepted_values(spec)));
    return format_option(spec, o);
}

std::uint64_t parse_count(std::string_view command, std::string_view flag, std::string_view text,
                          std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < min || v > max)
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {}..{})", command,
                                     printable(text), flag, min, max));
    return v;
}

namespace {

// The name a message gives a flag: its long name if it has one.
std::string shown_name(const CLI::Option& o) {
    if (!o.get_lnames().empty()) return "--" + o.get_lnames().front();
    if (!o.get_snames().empty()) return "-" + o.get_snames().front();
    return o.get_name(true, false);
}

// Option `names` whose value `apply` checks and stores; given twice, the
// last one counts.
CLI::Option* add_checked(
    CLI::App& app, const std::string& names, const std::string& help, const std::string& value,
    std::function<void(std::string_view command, std::string_view flag, const std::string& text)>
        apply) {
    CLI::Option* opt = app.add_option(names, help);
    opt->type_name(value)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    opt->each([&app, opt, apply = std::move(apply)](const std::string& text) {
        apply(app.get_name(), shown_name(*opt), text);
    });
    return opt;
}

}  // namespace

CLI::Option* add_count(CLI::App& app, const std::string& names, std::uint64_t& into,
                       std::uint64_t min, std::uint64_t max, const std::string& help,
                       const std::string& value) {
    return add_checked(app, names, help, value,
                       [&into, min, max](std::string_view command, std::string_view flag,
                                         const std::string& text) {
                           into = parse_count(command, flag, text, min, max);
                       })
        ->default_str(std::to_string(into));
}

CLI::Option* add_setting(CLI::App& app, const OptionSpec& spec, std::optional<std::uint32_t>& into,
                         const std::string& help) {
    return add_checked(
               app, flag_name(spec), help, std::string(value_hint(spec)),
               [&into, &spec](std::string_view command, std::string_view, const std::string& text) {
                   into = parse_flag_value(command, spec, text);
               })
        ->default_str(format_default(spec));
}

CLI::Option* add_name_list(CLI::App& app, const std::string& flag, std::string_view what,
                           std::vector<std::string> known, std::vector<std::string>& into,
                           const std::string& help) {
    return add_checked(
        app, flag, help, "LIST",
        [&into, what = std::string(what), known = std::move(known)](
            std::string_view command, std::string_view flag, const std::string& text) {
            into.clear();
            std::string_view rest = text;
            while (!rest.empty()) {
                const std::size_t comma = rest.find(',');
                const std::string id(rest.substr(0, comma));
                rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
                if (id.empty()) continue;
                if (std::find(known.begin(), known.end(), id) == known.end())
                    throw UsageError(fmt::format("{}: unknown {} '{}' (known: {})", command, what,
                                                 printable(id), fmt::join(known, ", ")));
                into.push_back(id);
            }
            if (into.empty()) throw UsageError(fmt::format("{}: {} is empty", command, flag));
        });
}

CLI::Option* add_file(CLI::App& app, const std::string& flag, std::optional<std::string>& into,
                      const std::string& help, const std::string& value) {
    return add_checked(
        app, flag, help, value,
        [&into](std::string_view command, std::string_view flag, const std::string& text) {
            if (text.empty())
                throw UsageError(fmt::format("{}: {} needs a file name", command, flag));
            into = text;
        });
}

void add_rounds_options(CLI::App& app, bool& quick, std::uint64_t& rounds) {
    add_count(app, "--rounds", rounds, 1, 1000, "rounds to run, each arm once a round", "R");
    app.add_flag("--quick", quick, "scale every run down, for smoke tests");
}

}  // namespace pipespin::cli
