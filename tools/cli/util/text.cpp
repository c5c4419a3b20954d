#include "cli/util/text.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

namespace pipespin::cli {

std::string shell_quote(std::string_view arg) {
    constexpr std::string_view kSafe =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-";
    if (!arg.empty() && arg.find_first_not_of(kSafe) == std::string_view::npos)
        return std::string(arg);
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string shell_join(std::span<const std::string> words) {
    std::vector<std::string> quoted;
    for (const std::string& w : words) quoted.push_back(shell_quote(w));
    return fmt::format("{}", fmt::join(quoted, " "));
}

std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 200)) {
        auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f)
            out += c;
        else
            out += fmt::format("\\x{:02x}", u);
    }
    if (s.size() > 200) out += "...";
    return out;
}

std::string wrap(std::string_view text, std::size_t indent, std::size_t width) {
    const std::string pad(indent, ' ');
    std::string out, line;
    auto flush = [&] {
        if (!line.empty()) out += pad + line + "\n";
        line.clear();
    };
    while (!text.empty()) {
        std::size_t sp = text.find(' ');
        std::string_view word = text.substr(0, sp);
        text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
        if (word.empty()) continue;
        if (!line.empty() && indent + line.size() + 1 + word.size() > width) flush();
        if (!line.empty()) line += ' ';
        line += word;
    }
    flush();
    return out;
}

std::optional<double> parse_decimal(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return v;
}

std::string comment_lines(std::string_view text, std::size_t indent) {
    std::string out;
    const std::string w = wrap(text, indent, 79);
    std::string_view rest = w;
    while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) nl = rest.size();
        out.push_back('#');
        out.append(rest.substr(1, nl - 1));
        out.push_back('\n');
        rest.remove_prefix(nl < rest.size() ? nl + 1 : nl);
    }
    return out;
}

}  // namespace pipespin::cli
