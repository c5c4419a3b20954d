// The installed `pipespin`: its commands, one file each, and its command
// table (commands.cpp), which tools/gendoc also reads for the manual page
// and the bash completion. Adding a command is its file (listed in
// tools/cli/CMakeLists.txt), its define_NAME() here and one row in the
// table. A lab command goes to tools/bench, never here.
#pragma once

#include "cli/util/command.h"

namespace pipespin::cli {

Action define_run(CLI::App& app);           // run.cpp
Action define_check_config(CLI::App& app);  // check_config.cpp
Action define_stats(CLI::App& app);         // stats.cpp
Action define_ab(CLI::App& app);            // ab.cpp
Action define_pingpong(CLI::App& app);      // pingpong.cpp
// Hidden: what pingpong re-executes once per sample (worker.cpp).
Action define_pingpong_worker(CLI::App& app);

const Program& pipespin_program();
// The exit statuses of pipespin, one paragraph (--help, pipespin(1)).
std::string exit_status_text();

}  // namespace pipespin::cli
