// pipespin gen-docs: the pieces its files share.
//
//   main.cpp      the subcommand: what to write, and where
//   usage.cpp     the --help entries of the command table, parsed
//   man.cpp       pipespin(1), pipespin.conf(5) and /etc/pipespin.conf
//   completion.cpp the bash completion
//
// Contract with the subcommands' *_usage(): an entry starts with a line
// "  pipespin WORDS..." (synopsis; longer lines continue with a deeper
// indent), its prose is wrapped with an indent of six (usage_entry), and
// anything indented further after the prose (run's flag list) is kept as
// preformatted lines. A usage text that does not start with a synopsis line
// is a build error here, not a silently wrong manual.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/util/library.h"

namespace pipespin::cli::docs {

struct Block {
    bool pre;          // preformatted line (true) or a paragraph (false)
    std::string text;  // a paragraph is one line here; roff refills it
};

struct Entry {
    std::string synopsis;  // "pipespin bench pingpong [--threads] ..." on one line
    std::vector<std::string> synopsis_lines;  // as --help breaks it, less its indent of two
    std::vector<Block> body;                  // prose and preformatted lines, in order
};

struct VisibleCommand {
    std::string_view name;
    std::vector<Entry> entries;
};
// Every command of the table that --help shows, with its entries.
std::vector<VisibleCommand> visible_commands();

struct Paths {
    std::string libdir{kInstallLibdir};
    std::string docdir;
    std::string config;   // empty: no system config file is installed
    std::string example;  // preload.conf.example to read (man5)
};

std::string man1(const Paths& p);
std::string man5(const Paths& p);
// The system config file: the example with every setting commented out, so
// that installing it changes nothing until the admin uncomments a line.
std::string system_config(const Paths& p);
std::string bash_completion();

}  // namespace pipespin::cli::docs
