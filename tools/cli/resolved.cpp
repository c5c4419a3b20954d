#include "cli/resolved.h"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <vector>

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

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

// "...: unknown key 'spin-us'; ignored" gets "; did you mean 'spin_us'?"
// when a known key is close (a third of its letters, at least 2, differ).
std::string with_suggestion(const std::string& problem) {
    constexpr std::string_view kUnknown = "unknown key '";
    const std::size_t at = problem.find(kUnknown);
    if (at == std::string::npos) return problem;
    const std::size_t start = at + kUnknown.size();
    const std::size_t end = problem.find('\'', start);
    if (end == std::string::npos) return problem;
    const std::string_view key = std::string_view(problem).substr(start, end - start);
    std::string_view best;
    std::size_t best_d = std::max<std::size_t>(2, key.size() / 3) + 1;
    for (const OptionSpec& spec : option_table()) {
        const std::size_t d = edit_distance(key, spec.name);
        if (d < best_d) best = spec.name, best_d = d;
    }
    return best.empty() ? problem : fmt::format("{}; did you mean '{}'?", problem, best);
}

}  // namespace

int print_resolved(const ConfigCheck& check, std::string_view file, const ProgramId& program,
                   const JsonOutput& json, std::string_view command) {
    ConfigCheck c = check;
    for (std::string& p : c.problems) p = with_suggestion(p);
    for (const std::string& p : c.problems) fmt::print(stderr, "pipespin: {}\n", p);
    Json options = Json::array();
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const OptionSpec& spec = option_table()[i];
        options.push_back(
            {{"name", spec.name}, {"value", format_option(spec, c.options)}, {"from", c.where[i]}});
    }
    Json who = nullptr;
    if (!program.exe_name.empty())
        who = {{"name", program.exe_name},
               {"argv0", program.argv0_name},
               {"path", program.exe_path.empty() ? Json(nullptr) : Json(program.exe_path)}};
    const Json doc = {{"config", file.empty() ? Json(nullptr) : Json(file)},
                      {"program", std::move(who)},
                      {"options", std::move(options)},
                      {"problems", c.problems},
                      {"problem_count", c.problem_count}};
    if (!emit_json(command, json, doc)) return c.problem_count != 0 ? kExitFailure : kExitOk;
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
