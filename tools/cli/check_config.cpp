// pipespin check-config: what a config file resolves to, and why.
//
// The parser is the shim's own (src/core/config.h), run here with its
// problems collected, so that the checker and the shim cannot disagree.
// Also the generator of preload.conf.example (--example) from the option
// table.
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/resolved.h"
#include "cli/util/json.h"
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

std::string example_text() {
    std::string out;
    auto para = [&](std::string_view text) { out += comment_lines(text, 2); };
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
        "from a call that is about to spin or block, at most every reload_ms and "
        "first reload_ms after their first such call (they read the file when they "
        "started), and then apply all of it again, to every fd. A process that never "
        "waits on a pipe never looks. Replace the file by rename(2) (as editors do) so "
        "that no process reads half of it. A process in mode off with nothing to report (no stats, "
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
        out += comment_lines(spec.help, 4);
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

Action define_check_config(CLI::App& app) {
    struct Values {
        std::optional<std::string> program;
        bool example = false;
        JsonOutput json;
        std::vector<std::string> files;
    };
    auto v = std::make_shared<Values>();
    app.description(
        "Read FILE as libpipespin.so would (the same parser and checks) and print every "
        "option's resolved value and where it came from (default or FILE:LINE), for NAME's "
        "[program] sections when given, else for [global] only. Problems go to stderr (an "
        "unknown key with the nearest known one: did you mean); the exit status is 1 if "
        "there was any. The environment is not consulted (see run --print-config).\n"
        "--example prints a config file documenting every option with its default "
        "(preload.conf.example).");
    app.add_option("--program", v->program,
                   "resolve for this program: a basename, or a path to match path sections")
        ->type_name("NAME");
    app.add_flag("--example", v->example,
                 "print a config file that documents every option, instead of checking one");
    add_json_options(app, v->json, "the resolved table and the problems");
    app.add_option("FILE", v->files, "the config file to check")->type_name("FILE");
    return [v](Args) {
        if (v->example) {
            if (!v->files.empty()) throw UsageError("check-config: --example takes no FILE");
            if (v->json.wanted()) throw UsageError("check-config: --example is a file, not JSON");
            std::fputs(example_text().c_str(), stdout);
            return kExitOk;
        }
        if (v->files.empty()) throw UsageError("check-config: missing FILE");
        if (v->files.size() > 1)
            throw UsageError(fmt::format("check-config: unexpected '{}'", printable(v->files[1])));
        const std::string& file = v->files.front();
        if (file.empty()) throw UsageError("check-config: FILE is empty");
        if (v->program && v->program->empty())
            throw UsageError("check-config: --program needs a NAME");
        ProgramNames names;
        const ProgramId id = v->program ? program_id_for(*v->program, names) : ProgramId{};
        const ConfigCheck c =
            check_config(file, true, id, nullptr, nullptr, static_cast<unsigned>(::geteuid()));
        return print_resolved(c, file, id, v->json, "check-config");
    };
}

}  // namespace pipespin::cli
