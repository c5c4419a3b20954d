// The pipespin command line: the subcommand table, argument parsing and the
// errors a subcommand reports.
//
// Contract for subcommands: a subcommand is `int NAME_main(Args)` in its own
// file (cli_NAME.cpp), declared here and listed once in main.cpp's command
// table. It receives the arguments after its name, returns the exit status,
// and reports problems by throwing UsageError (the user asked for something
// that does not parse: exit 2) or Failure (a valid request that could not be
// carried out: its own exit status). main() prints both as
// "pipespin: ...", so subcommands never print their own error prefix, and
// nothing but main() ends the process. --help is main()'s too: a
// subcommand's ArgCursor throws HelpRequested at it, and main() prints the
// help text of the subcommand's row.
#pragma once

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/config.h"

namespace pipespin::cli {

// Exit statuses of pipespin itself; `run` otherwise exits with its command's.
// 125..127 follow env(1), nice(1) and timeout(1) so that scripts can tell
// "pipespin could not set up" from "the command could not be run" from
// "the command ran and failed".
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // e.g. a benchmark worker failed
inline constexpr int kExitUsage = 2;        // bad subcommand, flag or value
inline constexpr int kExitSetup = 125;      // libpipespin.so not found or unusable
inline constexpr int kExitCannotRun = 126;  // CMD found but could not be executed
inline constexpr int kExitNotFound = 127;   // CMD not found

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Failure : std::runtime_error {
    Failure(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
    int exit_code;
};

// "--help" or "-h" where a subcommand looks for a flag. For a subcommand with
// a help text main() prints it and exits 0; a hidden one has none, and there
// it is the unknown option the message names.
struct HelpRequested : UsageError {
    using UsageError::UsageError;
};

using Args = std::span<char* const>;

// Walks a subcommand's arguments (cli/util/args.cpp). Flags are "--name VALUE",
// "--name=VALUE" or a bare "--name"; parsing stops at "--" or at the first
// word that is not a flag, so that `pipespin run ls -l` leaves "-l" to ls.
class ArgCursor {
public:
    ArgCursor(std::string_view command, Args args) : command_(command), args_(args) {}

    bool done() const noexcept { return pos_ >= args_.size(); }
    std::string_view peek() const noexcept { return done() ? std::string_view{} : args_[pos_]; }
    bool at_flag() const noexcept;  // the next word starts with '-' and is not "--"

    // Consumes the next word if it is exactly `name`.
    bool take_flag(std::string_view name);
    // Consumes "--name VALUE" or "--name=VALUE"; throws UsageError if VALUE is missing.
    std::optional<std::string_view> take_value(std::string_view name);
    // Consumes a lone "--" if it is next.
    bool take_separator();

    std::string_view take_word();
    Args rest() const noexcept { return args_.subspan(pos_); }

    // Throws HelpRequested if the next word is "--help" or "-h".
    void check_help() const;
    // For the word no flag of the subcommand takes: HelpRequested for
    // "--help" and "-h", else a UsageError ("unknown option",
    // "unexpected argument") naming the subcommand.
    [[noreturn]] void fail_unknown() const;
    const std::string& command() const noexcept { return command_; }

private:
    std::string command_;
    Args args_;
    std::size_t pos_ = 0;
};

// The subcommands. Each *_usage() returns its lines for --help, indented by
// two spaces and ending in a newline.
int run_main(Args args);
std::string run_usage();

int bench_main(Args args);
std::string bench_usage();
// `bench matrix` (bench/matrix/matrix.cpp), reached through bench_main's table.
int bench_matrix(ArgCursor& cur);
std::string bench_matrix_usage();

int stats_main(Args args);
std::string stats_usage();

int ab_main(Args args);
std::string ab_usage();

int check_config_main(Args args);
std::string check_config_usage();

// Hidden: what `bench` re-executes under each configuration's environment.
int bench_worker_main(Args args);
// bench-worker relay|feed, the loops of `coverage` (bench/coverage/worker.cpp).
int coverage_worker(std::string_view kind, ArgCursor& cur);

// `pipespin coverage` (bench/coverage/coverage.cpp).
int coverage_main(Args args);
std::string coverage_usage();
// The worker flag that makes it fail unless the shim is (or is not) loaded.
inline std::string_view expect_shim_flag(bool shim) {
    return shim ? "--expect-shim" : "--expect-no-shim";
}

// Hidden: writes pipespin(1), pipespin.conf(5) or the bash completion from
// the command table and the option table (gendoc/main.cpp); the build runs it.
int gen_docs_main(Args args);

// A row of the command table (main.cpp).
struct Command {
    std::string_view name;
    int (*main)(Args);
    std::string (*usage)();  // nullptr: hidden from --help (internal helpers)
    std::string (*help)();   // what its --help prints; nullptr for a hidden one
};
std::span<const Command> commands();

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
// Prints problems (stderr) and the resolved table (stdout); the exit status.
int print_resolved(const ConfigCheck& check, std::string_view file, const ProgramId& program);

// Full --help text (main.cpp), which most subcommands print on "--help".
std::string full_usage();
// The "Exit status" paragraph of --help, unwrapped.
std::string exit_status_text();

}  // namespace pipespin::cli
