// pipespin-gendoc: the manual pages, the bash completion and
// /etc/pipespin.conf of the installed `pipespin`, written at build time
// (cmake/Install.cmake) from what --help is written from: the command
// table (tools/cli/commands.cpp), the options each command declares
// (described by tools/cli/util/help.h) and the shim's option table
// (src/core/options.def). Never by hand, so none of them can drift from
// --help or from what the library reads.
//
//   main.cpp        the generator's commands: what to write, and where
//   man.cpp         pipespin(1), pipespin.conf(5) and /etc/pipespin.conf
//   completion.cpp  the bash completion
#pragma once

#include <string>
#include <vector>

#include "cli/util/help.h"
#include "cli/util/library.h"

namespace pipespin::gendoc {

struct Paths {
    std::string libdir{cli::kInstallLibdir};
    std::string docdir;
    std::string config;   // empty: no system config file is installed
    std::string example;  // preload.conf.example to read (man5, system-config)
};

// The commands of `pipespin` a user is shown, as --help describes them.
std::vector<cli::CommandDoc> visible_commands();

std::string man1(const Paths& p);
std::string man5(const Paths& p);
// The system config file: the example with every setting commented out, so
// that installing it changes nothing until the admin uncomments a line.
std::string system_config(const Paths& p);
std::string bash_completion();

}  // namespace pipespin::gendoc
