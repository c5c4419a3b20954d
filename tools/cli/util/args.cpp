#include "cli/util/args.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/text.h"

namespace pipespin::cli {

namespace {

bool asks_for_help(std::string_view word) {
    return word == "--help" || word == "-h";
}

}  // namespace

bool ArgCursor::at_flag() const noexcept {
    std::string_view w = peek();
    return w.size() > 1 && w.front() == '-' && w != "--";
}

bool ArgCursor::take_flag(std::string_view name) {
    if (done() || peek() != name) return false;
    ++pos_;
    return true;
}

std::optional<std::string_view> ArgCursor::take_value(std::string_view name) {
    std::string_view w = peek();
    if (w == name) {
        if (pos_ + 1 >= args_.size())
            throw UsageError(fmt::format("{}: {} needs a value", command_, name));
        std::string_view value = args_[pos_ + 1];
        pos_ += 2;
        return value;
    }
    if (w.size() > name.size() && w.starts_with(name) && w[name.size()] == '=') {
        ++pos_;
        return w.substr(name.size() + 1);
    }
    return std::nullopt;
}

bool ArgCursor::take_separator() {
    return take_flag("--");
}

std::string_view ArgCursor::take_word() {
    return done() ? std::string_view{} : args_[pos_++];
}

void ArgCursor::check_help() const {
    if (!done() && asks_for_help(peek()))
        throw HelpRequested(fmt::format("{}: unknown option '{}'", command_, peek()));
}

void ArgCursor::fail_unknown() const {
    check_help();
    if (at_flag())
        throw UsageError(fmt::format("{}: unknown option '{}'", command_, printable(peek())));
    throw UsageError(fmt::format("{}: unexpected argument '{}'", command_, printable(peek())));
}

bool take_rounds_flag(ArgCursor& cur, std::string_view command, bool& quick,
                      std::uint64_t& rounds) {
    if (cur.take_flag("--quick")) {
        quick = true;
        return true;
    }
    if (auto v = cur.take_value("--rounds")) {
        rounds = parse_count(command, "--rounds", *v, 1, 1000);
        return true;
    }
    return false;
}

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

void parse_name_list(std::string_view command, std::string_view flag, std::string_view what,
                     std::string_view text, const std::vector<std::string>& known,
                     std::vector<std::string>& into) {
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

}  // namespace pipespin::cli
