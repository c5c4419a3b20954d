// What a program and its commands say about themselves: --help, the short
// usage of a bare invocation, and the model of a command that --help, the
// manual page and the bash completion (tools/gendoc) are all written from.
// The model is read off the command table (command.h) and the options each
// command declared with CLI11, so the three cannot drift apart.
#pragma once

#include <string>
#include <vector>

#include "cli/util/command.h"

namespace pipespin::cli {

struct OptionDoc {
    std::vector<std::string> flags;  // "-n", "--runs"
    std::string value;               // "N", "off|fixed|adaptive"; empty for a flag
    std::string default_text;        // empty: no default is shown
    std::string help;
};

struct CommandDoc {
    std::string path;                      // "run", or "worker pingpong" for a nested one
    std::vector<std::string> synopsis;     // whole lines: "pipespin run [OPTIONS] [--] CMD"
    std::vector<std::string> paragraphs;   // the description
    std::vector<OptionDoc> options;        // in declaration order, --help last
    std::vector<std::string> subcommands;  // the names of its own commands, if any
    std::span<const Example> examples;
    bool takes_command = false;  // runs a CMD [ARGS...] given after its options
};

// `app` is a command of `program`'s parser (make_parser), at any depth.
CommandDoc describe(const Program& program, const CLI::App& app);
// The commands a user is shown, in table order.
std::vector<CommandDoc> describe_visible(const Program& program, const CLI::App& top);

// `PROGRAM COMMAND --help`.
std::string help_text(const CommandDoc& doc);
// `PROGRAM --help`: one screen.
std::string program_help(const Program& program);
// A bare `PROGRAM`: a few lines, for stderr.
std::string short_usage(const Program& program);

}  // namespace pipespin::cli
