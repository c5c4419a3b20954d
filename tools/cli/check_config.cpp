// pipespin check-config: what a config file resolves to, and why.
//
// The parser is the shim's own (src/core/config.h), run here with its
// problems collected, so that the checker and the shim cannot disagree.
// Also the shared printing for `run --print-config`, and the generator of
// preload.conf.example (--example) from the option table.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/text.h"
#include "core/config.h"

namespace pipespin::cli {
namespace {

constexpr std::string_view kFormatHelp =
    "A plain text file of `key = value` lines in sections. [global] applies to "
    "every process; [program NAME...] to processes whose executable has one of "
    "these basenames (the file /proc/self/exe names, symlinks resolved, or argv[0] "
    "as ps shows it). A NAME may be a glob (* ? [...]); a NAME with a '/' matches "
    "the executable's full path. Lines before the first section belong to [global]. "
    "'#' starts a comment at the start of a line or after a blank. Keys are the "
    "option names below; PIPESPIN_<KEY> in the environment overrides them.";

// wrap()'s lines, indented by `indent` (>= 1), as comment lines: the first
// column of the indent becomes the '#'.
void comment_lines(std::string& out, std::string_view text, std::size_t indent) {
    const std::string w = wrap(text, indent, 79);
    std::string_view rest = w;
    while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) nl = rest.size();
        out.push_back('#');
        out.append(rest.substr(1, nl - 1));
        out.push_back('\n');
        rest.remove_prefix(nl < rest.size() ? nl + 1 : nl);
    }
}

std::string example_text() {
    std::string out;
    auto para = [&](std::string_view text) { comment_lines(out, text, 2); };
    out += "# pipespin configuration: /etc/pipespin.conf, or the file PIPESPIN_CONFIG names\n";
    out += "# (PIPESPIN_CONFIG set but empty: no file at all).\n#\n";
    para(kFormatHelp);
    out += "#\n";
    para(
        "Precedence, lowest first: built-in defaults, [global], every matching "
        "[program] section in file order (the last one wins where several set a "
        "key), PIPESPIN_* environment variables. A bad line never stops a program: "
        "pipespin warns once, naming file:line, the text and the value it used "
        "instead, and applies the rest of the file. `pipespin check-config FILE "
        "[--program NAME]` shows what a file resolves to and where each value came "
        "from; `pipespin run --print-config CMD` does the same for a command.");
    out += "#\n";
    para(
        fmt::format("The shim runs inside root's processes too, so it refuses (with a warning) a "
                    "file that is not a regular file, is larger than {} bytes, is writable by "
                    "everybody, or by a group other than root's, or is owned by anybody but root "
                    "or the user running the program. A symlink is followed; the checks apply "
                    "to the file it leads to. In a file owned by root, log_file and stats must "
                    "be absolute paths (every user's process, setuid ones included, would "
                    "resolve a relative one in its own working directory).",
                    kConfigMaxBytes));
    out += "#\n";
    para(
        "Running processes look for a changed file (modification time, size, inode) "
        "at most every reload_ms, from a call that is about to spin or block, and "
        "then apply all of it again, to every fd. So a change takes effect within "
        "reload_ms of the next pipe wait: a process that never waits on a pipe never "
        "looks. Replace the file by rename(2) (as editors do) so that no process "
        "reads half of it. A process in mode off with nothing to report (no stats, "
        "log below info) makes no system call of its own, so it never looks either: "
        "it keeps mode off until it restarts.");
    out += "#\n";
    para(
        "This file is generated from the option table by `pipespin check-config "
        "--example` (a test keeps it so). Used as is, it changes nothing: every "
        "value below is the built-in default.");
    out += "\n[global]\n";
    for (const OptionSpec& spec : option_table()) {
        const std::string def = format_default(spec);
        const std::string head = fmt::format("# {} = {}", spec.name, value_hint(spec));
        const std::string tail = fmt::format("(default: {})", def.empty() ? "empty" : def);
        out += "\n" + head;
        out +=
            std::string(head.size() + tail.size() < 78 ? 79 - head.size() - tail.size() : 1, ' ');
        out += tail + "\n";
        comment_lines(out, spec.help, 4);
        out += fmt::format("{} ={}{}\n", spec.name, def.empty() ? "" : " ", def);
    }
    out +=
        "\n# Per-program settings, for example:\n"
        "#\n"
        "# [program nginx php-fpm*]\n"
        "# mode = fixed\n"
        "# spin_us = 100\n"
        "#\n"
        "# [program /opt/db/bin/*]\n"
        "# mode = off\n";
    return out;
}

}  // namespace

std::string check_config_usage() {
    return usage_entry(
        "  pipespin check-config [--program NAME] FILE\n"
        "  pipespin check-config --example\n",
        "Read FILE as libpipespin.so would (the same parser and checks) and print every "
        "option's resolved value and where it came from (default or FILE:LINE), for "
        "NAME's [program] sections when given (a basename, or a path to match "
        "path sections), else for [global] only. Problems go to stderr; the exit "
        "status is 1 if there was any. The environment is not consulted (see run "
        "--print-config). --example prints a config file documenting every option "
        "with its default (preload.conf.example).");
}

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

int check_config_main(Args args) {
    ArgCursor cur("check-config", args);
    std::optional<std::string> program;
    bool example = false;
    while (cur.at_flag()) {
        if (cur.take_flag("--example")) {
            example = true;
        } else if (auto v = cur.take_value("--program")) {
            if (v->empty()) throw UsageError("check-config: --program needs a NAME");
            program = std::string(*v);
        } else {
            cur.fail_unknown();
        }
    }
    cur.take_separator();
    if (example) {
        if (!cur.done()) throw UsageError("check-config: --example takes no FILE");
        std::fputs(example_text().c_str(), stdout);
        return kExitOk;
    }
    if (cur.done()) throw UsageError("check-config: missing FILE");
    const std::string file(cur.take_word());
    if (!cur.done())
        throw UsageError(fmt::format("check-config: unexpected '{}'", printable(cur.peek())));
    if (file.empty()) throw UsageError("check-config: FILE is empty");
    ProgramNames names;
    const ProgramId id = program ? program_id_for(*program, names) : ProgramId{};
    const ConfigCheck c =
        check_config(file, true, id, nullptr, nullptr, static_cast<unsigned>(::geteuid()));
    return print_resolved(c, file, id);
}

}  // namespace pipespin::cli
