#include "cli/util/command.h"

#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/util/help.h"
#include "cli/util/text.h"

namespace pipespin::cli {

Parser make_parser(const Program& program) {
    Parser p;
    p.app = std::make_unique<CLI::App>(std::string(program.summary), std::string(program.name));
    // Inherited by every command: its --help is its own (run_program prints it).
    p.app->set_help_flag("-h,--help", "show this help and exit");
    p.app->require_subcommand(1);
    for (const Command& c : program.commands) {
        CLI::App* sub = p.app->add_subcommand(std::string(c.name), std::string(c.summary));
        if (c.hidden) sub->group("");
        p.actions.emplace_back(sub, c.define(*sub));
    }
    return p;
}

Action dispatch(CLI::App& app, std::vector<std::pair<const CLI::App*, Action>> subcommands) {
    app.require_subcommand(1);
    return [subs = std::move(subcommands)](Args words) {
        for (const auto& [sub, action] : subs)
            if (sub->parsed()) return action(words.empty() ? words : words.subspan(1));
        throw UsageError("missing command");  // require_subcommand() makes this unreachable
    };
}

const Command* find_command(const Program& program, std::string_view name) {
    for (const Command& c : program.commands)
        if (c.name == name) return &c;
    return nullptr;
}

namespace {

// The innermost command the parse reached: the one whose --help was asked for.
const CLI::App& innermost(const CLI::App& top) {
    const CLI::App* app = &top;
    while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
    return *app;
}

bool asks_for_help(std::string_view word) {
    return word == "--help" || word == "-h" || word == "help";
}

// CLI11 reads "--name=" with nothing after the '=' as "--name" and takes
// the next word as the value ("--probe= -- true": probe "--"). The empty
// value is what was typed, and an error: say so, for the options before the
// first word that is not one.
void check_empty_values(const CLI::App& app, Args words) {
    for (std::string_view w : words) {
        if (w == "--" || !w.starts_with("-")) return;
        if (!w.starts_with("--") || !w.ends_with("=")) continue;
        const std::string flag(w.substr(0, w.size() - 1));
        if (app.get_option_no_throw(flag) != nullptr)
            throw UsageError(fmt::format("{}: {} needs a value", app.get_name(), flag));
    }
}

int run_command(const Program& program, const Command& command, int argc, char** argv) {
    Parser p = make_parser(program);
    check_empty_values(*p.app->get_subcommand(std::string(command.name)),
                       Args(argv + 2, static_cast<std::size_t>(argc - 2)));
    try {
        p.app->parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(help_text(describe(program, innermost(*p.app))).c_str(), stdout);
        return kExitOk;
    } catch (const CLI::ParseError& e) {
        throw UsageError(fmt::format("{}: {}", command.name, e.what()));
    }
    const Args words(argv + 2, static_cast<std::size_t>(argc - 2));
    for (const auto& [app, action] : p.actions)
        if (app->parsed()) return action(words);
    throw UsageError("missing command");  // require_subcommand() makes this unreachable
}

int run_words(const Program& program, int argc, char** argv, std::string& hint) {
    const Args args(argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0));
    if (args.empty()) {
        std::fputs(short_usage(program).c_str(), stderr);
        return kExitUsage;
    }
    const std::string_view first = args[0];
    if (asks_for_help(first) && args.size() == 1) {
        std::fputs(program_help(program).c_str(), stdout);
        return kExitOk;
    }
    if (first == "--version") {
        fmt::print("{} {}\n", program.name, program.version);
        return kExitOk;
    }
    // `pipespin help COMMAND` is `pipespin COMMAND --help`.
    const std::string_view name = first == "help" ? args[1] : first;
    const Command* command = find_command(program, name);
    if (command == nullptr)
        throw UsageError(fmt::format(
            "unknown {} '{}'", name.starts_with("-") ? "option" : "command", printable(name)));
    hint = fmt::format("{} {} --help", program.name, command->name);
    if (first == "help") {
        char help_flag[] = "--help";
        char* words[] = {argv[0], argv[2], help_flag, nullptr};
        return run_command(program, *command, 3, words);
    }
    return run_command(program, *command, argc, argv);
}

}  // namespace

int run_program(const Program& program, int argc, char** argv) {
    std::string hint = fmt::format("{} --help", program.name);
    try {
        return run_words(program, argc, argv, hint);
    } catch (const UsageError& e) {
        fmt::print(stderr, "{}: {}\nTry '{}'.\n", program.name, e.what(), hint);
        return kExitUsage;
    } catch (const Failure& e) {
        fmt::print(stderr, "{}: error: {}\n", program.name, e.what());
        return e.exit_code;
    } catch (const std::exception& e) {
        fmt::print(stderr, "{}: error: {}\n", program.name, e.what());
        return kExitFailure;
    }
}

}  // namespace pipespin::cli
