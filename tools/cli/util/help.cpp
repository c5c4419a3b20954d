#include "cli/util/help.h"

#include <algorithm>

#include <fmt/format.h>

#include "cli/util/text.h"

namespace pipespin::cli {
namespace {

constexpr std::size_t kNameColumn = 14;  // the command names of --help

std::vector<std::string> lines_of(std::string_view text) {
    std::vector<std::string> out;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        out.emplace_back(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    }
    return out;
}

// The names of `app` below the program: "run", "worker pingpong".
std::string path_of(const CLI::App& app) {
    std::string path = app.get_name();
    for (const CLI::App* p = app.get_parent(); p != nullptr && p->get_parent() != nullptr;
         p = p->get_parent())
        path = p->get_name() + " " + path;
    return path;
}

// A usage line for a command without a row of its own (a nested one).
std::string generic_synopsis(const Program& program, const CLI::App& app) {
    std::string out = fmt::format("{} {}", program.name, path_of(app));
    if (!app.get_options([](const CLI::Option* o) { return o->nonpositional(); }).empty())
        out += " [OPTIONS]";
    for (const CLI::Option* o : app.get_options(
             [](const CLI::Option* o) { return o->get_positional() && !o->get_group().empty(); }))
        out += " " + o->get_name(true, false) + (o->get_expected_max() > 1 ? "..." : "");
    if (!app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }).empty())
        out += " COMMAND ...";
    return out;
}

OptionDoc option_doc(const CLI::Option& o) {
    OptionDoc d;
    for (const std::string& s : o.get_snames()) d.flags.push_back("-" + s);
    for (const std::string& l : o.get_lnames()) d.flags.push_back("--" + l);
    if (o.get_type_size() != 0) d.value = o.get_type_name();
    d.default_text = o.get_default_str();
    d.help = o.get_description();
    return d;
}

// A usage line broken before a word that would pass column 79, never
// inside [...]; the continuation lines start under the command's first
// option ("pipespin run [--print-config] ...").
std::string usage_lines(std::string_view head, std::string_view form) {
    std::vector<std::string> words{""};
    int depth = 0;
    for (char c : form) {
        if (c == ' ' && depth == 0) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        depth += c == '[' ? 1 : c == ']' ? -1 : 0;
        words.back() += c;
    }
    std::string out(head);
    std::size_t col = head.size(), indent = head.size();
    for (std::size_t i = 0; i < words.size(); ++i) {
        if (i > 0 && col + 1 + words[i].size() > 79) {
            out += "\n" + std::string(indent, ' ');
            col = indent;
        } else if (i > 0) {
            out += ' ';
            ++col;
        }
        out += words[i];
        col += words[i].size();
        if (i == 1) indent = col + 1;
    }
    return out + "\n";
}

std::string option_head(const OptionDoc& o) {
    std::string out = fmt::format("{}", fmt::join(o.flags, ", "));
    if (!o.value.empty()) out += " " + o.value;
    if (!o.default_text.empty()) out += fmt::format(" (default: {})", o.default_text);
    return out;
}

}  // namespace

CommandDoc describe(const Program& program, const CLI::App& app) {
    CommandDoc d;
    d.path = path_of(app);
    const Command* row = app.get_parent() != nullptr && app.get_parent()->get_parent() == nullptr
                             ? find_command(program, app.get_name())
                             : nullptr;
    if (row != nullptr) {
        for (const std::string& line : lines_of(row->synopsis))
            d.synopsis.push_back(fmt::format("{} {}", program.name, line));
        d.examples = row->examples;
    } else {
        d.synopsis.push_back(generic_synopsis(program, app));
    }
    for (const std::string& p : lines_of(app.get_description()))
        if (!p.empty()) d.paragraphs.push_back(p);
    const CLI::Option* help = nullptr;
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_positional() || o->get_group().empty()) continue;
        if (o->get_lnames() == std::vector<std::string>{"help"}) {
            help = o;
            continue;
        }
        d.options.push_back(option_doc(*o));
    }
    if (help != nullptr) d.options.push_back(option_doc(*help));
    for (const CLI::App* s :
         app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
        d.subcommands.push_back(s->get_name());
    d.takes_command = std::any_of(d.synopsis.begin(), d.synopsis.end(), [](const std::string& s) {
        return s.find("CMD [ARGS...]") != std::string::npos;
    });
    return d;
}

std::vector<CommandDoc> describe_visible(const Program& program, const CLI::App& top) {
    std::vector<CommandDoc> out;
    for (const Command& c : program.commands)
        if (!c.hidden) out.push_back(describe(program, *top.get_subcommand(std::string(c.name))));
    return out;
}

std::string help_text(const CommandDoc& doc) {
    std::string out;
    for (std::size_t i = 0; i < doc.synopsis.size(); ++i)
        out += usage_lines(i == 0 ? "Usage: " : "       ", doc.synopsis[i]);
    for (const std::string& p : doc.paragraphs) out += "\n" + wrap(p, 0);
    if (!doc.subcommands.empty())
        out += "\n" + wrap(fmt::format("Commands: {}", fmt::join(doc.subcommands, ", ")), 0);
    if (!doc.options.empty()) out += "\nOptions:\n";
    for (const OptionDoc& o : doc.options) out += "  " + option_head(o) + "\n" + wrap(o.help, 6);
    if (!doc.examples.empty()) out += "\nExamples:\n";
    for (const Example& e : doc.examples)
        out += fmt::format("  {}\n{}", e.command, wrap(e.says, 6));
    return out;
}

std::string program_help(const Program& program) {
    std::string out = fmt::format("{} {}: {}\n\n", program.name, program.version, program.summary);
    out += fmt::format(
        "Usage: {0} COMMAND [ARGS...]\n"
        "       {0} COMMAND --help   (that command's options and examples)\n"
        "       {0} --help | --version\n\nCommands:\n",
        program.name);
    for (const Command& c : program.commands)
        if (!c.hidden) out += fmt::format("  {:<{}}{}\n", c.name, kNameColumn, c.summary);
    if (program.footer != nullptr) out += "\n" + program.footer();
    return out;
}

std::string short_usage(const Program& program) {
    std::vector<std::string_view> names;
    for (const Command& c : program.commands)
        if (!c.hidden) names.push_back(c.name);
    std::string out = fmt::format("Usage: {} COMMAND [ARGS...]\nCommands: {}\n", program.name,
                                  fmt::join(names, ", "));
    for (const Command& c : program.commands)
        if (!c.hidden && !c.examples.empty()) {
            out += fmt::format("Example: {}\n", c.examples.front().command);
            break;
        }
    out += fmt::format("'{0} --help' says more; '{0} COMMAND --help' shows one command.\n",
                       program.name);
    return out;
}

}  // namespace pipespin::cli
