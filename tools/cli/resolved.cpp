#include "cli/resolved.h"

#include <limits.h>
#include <stdlib.h>

#include <fstream>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/text.h"

namespace pipespin::cli {

ProgramId program_id_for(std::string_view name, ProgramNames& storage) {
    storage.exe_path.clear();
    storage.exe_name.clear();
    storage.argv0_name = std::string(base_name(name));
    if (name.find('/') != std::string_view::npos) {
        char resolved[PATH_MAX];
        storage.exe_path =
            ::realpath(std::string(name).c_str(), resolved) ? resolved : std::string(name);
    }
    storage.exe_name =
        storage.exe_path.empty() ? storage.argv0_name : std::string(base_name(storage.exe_path));
    return {storage.exe_path, storage.exe_name, storage.argv0_name};
}

ProgramId program_id_for_command(const std::string& path, std::string_view argv0,
                                 ProgramNames& storage) {
    ProgramId id = program_id_for(path, storage);
    storage.argv0_name = std::string(base_name(argv0));
    // A script runs as its interpreter: that is the process the shim is in.
    std::ifstream f(path, std::ios::binary);
    char head[2] = {};
    if (f.read(head, 2) && head[0] == '#' && head[1] == '!') {
        std::string line;
        std::getline(f, line);
        const std::size_t start = line.find_first_not_of(" \t");
        if (start != std::string::npos) {
            const std::size_t end = line.find_first_of(" \t\r", start);
            const std::string interp = line.substr(start, end - start);
            id = program_id_for(interp, storage);
            storage.argv0_name = std::string(base_name(interp));
        }
    }
    id.argv0_name = storage.argv0_name;
    id.exe_name = storage.exe_name;
    id.exe_path = storage.exe_path;
    return id;
}

int print_resolved(const ConfigCheck& c, std::string_view file, const ProgramId& program) {
    for (const std::string& p : c.problems) fmt::print(stderr, "pipespin: {}\n", p);
    fmt::print("config:  {}\n", file.empty() ? "none" : printable(file));
    if (!program.exe_name.empty()) {
        fmt::print("program: {}", printable(program.exe_name));
        if (program.argv0_name != program.exe_name)
            fmt::print(" (argv[0] {})", printable(program.argv0_name));
        if (!program.exe_path.empty()) fmt::print(" at {}", printable(program.exe_path));
        fmt::print("\n");
    }
    fmt::print("\n{:<16} {:<24} {}\n", "option", "value", "from");
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const OptionSpec& spec = option_table()[i];
        std::string value = format_option(spec, c.options);
        if (spec.kind == OptionKind::Text) value = value.empty() ? "''" : printable(value);
        fmt::print("{:<16} {:<24} {}\n", spec.name, value, printable(c.where[i]));
    }
    if (c.problem_count != 0) {
        fmt::print(stderr, "pipespin: {} problem{}\n", c.problem_count,
                   c.problem_count == 1 ? "" : "s");
        return kExitFailure;
    }
    return kExitOk;
}

}  // namespace pipespin::cli
