// pipespin gen-docs: the --help entries of the command table, parsed into
// synopses, paragraphs and preformatted lines (the contract is in docs.h).
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/cli.h"
#include "gendoc/docs.h"

namespace pipespin::cli::docs {
namespace {

std::size_t indent_of(std::string_view line) {
    std::size_t n = line.find_first_not_of(' ');
    return n == std::string_view::npos ? line.size() : n;
}

std::vector<Entry> parse_usage(std::string_view command, const std::string& usage) {
    std::vector<Entry> out;
    bool in_synopsis = false;
    std::istringstream in(usage);
    for (std::string line; std::getline(in, line);) {
        const std::size_t indent = indent_of(line);
        const std::string body = line.substr(indent);
        if (body.empty()) continue;
        if (indent == 2 && body.starts_with("pipespin ")) {
            out.push_back({body, {body}, {}});
            in_synopsis = true;
        } else if (out.empty()) {
            throw std::logic_error(fmt::format(
                "gen-docs: the usage of '{}' does not start with '  pipespin ...': '{}'", command,
                line));
        } else if (indent == 6) {
            std::vector<Block>& b = out.back().body;
            if (!b.empty() && !b.back().pre)
                b.back().text += " " + body;
            else
                b.push_back({false, body});
            in_synopsis = false;
        } else if (indent > 6 && in_synopsis) {
            out.back().synopsis += " " + body;
            out.back().synopsis_lines.push_back(line.substr(2));
        } else {
            out.back().body.push_back({true, line.substr(std::min<std::size_t>(indent, 6))});
            in_synopsis = false;
        }
    }
    return out;
}

}  // namespace

std::vector<VisibleCommand> visible_commands() {
    std::vector<VisibleCommand> out;
    for (const Command& c : commands())
        if (c.usage != nullptr) out.push_back({c.name, parse_usage(c.name, c.usage())});
    return out;
}

}  // namespace pipespin::cli::docs
