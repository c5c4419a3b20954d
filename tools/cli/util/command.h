// A command-line program made of commands (pipespin, pipespin-bench): its
// command table, its parser (CLI11) and its main().
//
// Contract for a command: one row of its program's table. define() declares
// the command's options on the CLI11 app it is given, each option once, with
// its value name, default and one line of help (the parser, --help, the
// manual page and the bash completion all read them from there), sets the
// app's description, and returns the command's action. The action runs once
// the whole command line has parsed; it gets the words after the command's
// name (for a report that quotes its command line), returns the exit status
// and reports problems by throwing UsageError or Failure (errors.h).
// run_program() prints those, and --help, and nothing else ends the process.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/util/errors.h"

namespace pipespin::cli {

using Args = std::span<char* const>;
using Action = std::function<int(Args words)>;

// A command line a user would type, and what it does: the manual's EXAMPLES
// and the end of the command's --help.
struct Example {
    std::string_view command;  // "pipespin run -- make -j8"
    std::string_view says;     // one sentence
};

struct Command {
    std::string_view name;
    std::string_view summary;  // one line in the program's --help
    // Its usage after the program's name, one form a line
    // ("run [--print-config] [OPTIONS] [--] CMD [ARGS...]").
    std::string_view synopsis;
    Action (*define)(CLI::App& app);
    std::span<const Example> examples = {};
    bool hidden = false;  // an internal helper: in no --help, manual or completion
};

struct Program {
    std::string_view name;  // "pipespin"
    std::string_view version;
    std::string_view summary;  // what it is, one line
    std::span<const Command> commands;
    // The end of the program's --help (environment, exit status): one
    // screen with the command list, so a few lines at most.
    std::string (*footer)() = nullptr;
};

// The program's CLI11 app: one subcommand per command, as its define()
// declared it, and the action of each.
struct Parser {
    std::unique_ptr<CLI::App> app;
    std::vector<std::pair<const CLI::App*, Action>> actions;
};
Parser make_parser(const Program& program);

// For a command with commands of its own (pipespin-bench worker LOOP): the
// action of the one that was parsed. Makes one of them required.
Action dispatch(CLI::App& app, std::vector<std::pair<const CLI::App*, Action>> subcommands);

// The row of `program` named `name`, or null.
const Command* find_command(const Program& program, std::string_view name);

// main(): parses, runs the chosen command, and turns --help, --version,
// usage errors and failures into output and an exit status.
int run_program(const Program& program, int argc, char** argv);

}  // namespace pipespin::cli
