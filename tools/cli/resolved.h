// What the shim would resolve in a program's process, as `check-config` and
// `run --print-config` print it: the names its [program] sections match,
// and the table of options with where each value came from.
#pragma once

#include <string>
#include <string_view>

#include "cli/util/json.h"
#include "core/config.h"

namespace pipespin::cli {

// Storage for the names a ProgramId views.
struct ProgramNames {
    std::string exe_path, exe_name, argv0_name;
};
// The names the shim would match for a program given as a basename or path.
ProgramId program_id_for(std::string_view name, ProgramNames& storage);
// ... for the process `run` would start: CMD found at path (a script runs as
// its #! interpreter), started as argv0.
ProgramId program_id_for_command(const std::string& path, std::string_view argv0,
                                 ProgramNames& storage);
// Prints problems (stderr) and the resolved table (stdout, or the same as
// JSON as `json` asks); the exit status. `command` names it in errors.
int print_resolved(const ConfigCheck& check, std::string_view file, const ProgramId& program,
                   const JsonOutput& json, std::string_view command);

}  // namespace pipespin::cli
