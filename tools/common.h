// Helpers that several subcommands share: finding libpipespin.so, building
// the environment a child gets (and the per-arm environments of the
// benchmarks), spawning a child and measuring it, checking whether a program
// can be preloaded at all, and small text and statistics utilities.
//
// Everything here runs in the CLI process, never inside a host program, so
// it may allocate, throw (cli::Failure / cli::UsageError) and print.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"

// The compile-time answers of where this build installs the library
// (tools/CMakeLists.txt defines both for the CLI; empty elsewhere).
#ifndef PIPESPIN_INSTALL_LIBDIR
#define PIPESPIN_INSTALL_LIBDIR ""
#endif
#ifndef PIPESPIN_MULTIARCH
#define PIPESPIN_MULTIARCH ""
#endif

namespace pipespin::cli {

inline constexpr std::string_view kLibraryName = "libpipespin.so";
// A library with one symbol and nothing else, built beside libpipespin.so
// (tools/bench/empty_preload.c; never installed): the benchmarks' measure of
// what any preload costs a process.
inline constexpr std::string_view kEmptyLibraryName = "libpipespin-empty.so";
inline constexpr std::string_view kInstallLibdir = PIPESPIN_INSTALL_LIBDIR;
inline constexpr std::string_view kMultiarch = PIPESPIN_MULTIARCH;  // Debian's lib subdirectory
inline constexpr std::string_view kLibraryEnv = "PIPESPIN_LIBRARY";

// Real path of the running executable (/proc/self/exe), so that a symlinked
// or PATH-found pipespin still finds the library installed beside it.
std::string self_exe();

// The absolute path of libpipespin.so, looked for in this order:
//   $PIPESPIN_LIBRARY (must exist when set),
//   <exe_dir>/../lib/libpipespin.so            (build tree, /usr/local),
//   <exe_dir>/../lib/<multiarch>/libpipespin.so (Debian layout),
//   the install libdir chosen at build time.
// Throws Failure(kExitSetup) naming every place it looked.
std::string find_library();
// The places after $PIPESPIN_LIBRARY, in order, for --help and errors.
std::vector<std::string> library_search_path();
// libpipespin-empty.so in the directory of `library`, if it is there.
std::optional<std::string> empty_library_beside(const std::string& library);

// LD_PRELOAD is a list separated by ':' or ' ' (ld.so(8)).
std::vector<std::string> split_preload(std::string_view value);
// True for any copy of the shim: a second copy in one process would keep a
// second fd table, and the "no shim" arm of a benchmark must have none.
bool is_shim_entry(std::string_view entry);
// `existing` with `library` in front, unless that very file is already in it
// (then `existing` unchanged: the user chose the order). Other copies of the
// shim are dropped and reported in `dropped`.
std::string preload_with(std::string_view existing, const std::string& library,
                         std::vector<std::string>* dropped = nullptr);
// `existing` without any copy of the shim.
std::string preload_without_shim(std::string_view existing);

// A copy of an environment that can be edited and handed to a child.
class Environment {
public:
    static Environment current();  // snapshot of environ

    std::optional<std::string_view> get(std::string_view name) const;
    void set(std::string_view name, std::string_view value);
    void unset(std::string_view name);
    // Drops every variable whose name starts with prefix.
    void unset_prefix(std::string_view prefix);
    // Sets LD_PRELOAD, or removes it when value is empty (an empty LD_PRELOAD
    // and none differ for nobody, but a clean env is easier to read).
    void set_preload(const std::string& value);

    const std::vector<std::string>& entries() const noexcept { return entries_; }

private:
    std::vector<std::string> entries_;  // "NAME=value"
};

// The arms every benchmark compares, in the order they run in each round.
// An arm without a mode runs with no copy of the shim at all; the empty
// preload arm has libpipespin-empty.so in its place.
struct ArmKind {
    std::string_view name;
    std::optional<Mode> mode;
    bool empty_preload = false;
};
inline constexpr ArmKind kArmKinds[] = {
    {"no shim", std::nullopt},
    {name_of(Mode::Off), Mode::Off},
    {name_of(Mode::Fixed), Mode::Fixed},
    {name_of(Mode::Adaptive), Mode::Adaptive},
};
inline constexpr ArmKind kEmptyPreloadArm{"empty preload", std::nullopt, true};

// The environment of each arm, from the caller's: PIPESPIN_* variables the
// user happened to export are dropped and every copy of the shim leaves
// LD_PRELOAD; the shim arms then put `library` in front and set
// PIPESPIN_MODE (and PIPESPIN_SPIN_US when given); the empty preload arm
// puts `empty_library` there instead. The user's other preloads stay in
// every arm, so the shim is the only difference.
class ArmEnvironments {
public:
    ArmEnvironments(std::string library, std::optional<std::uint32_t> spin_us,
                    std::optional<std::string> empty_library = std::nullopt);
    Environment of(const ArmKind& arm) const;

private:
    std::string library_;
    std::optional<std::string> empty_library_;
    std::optional<std::uint32_t> spin_us_;
    std::string other_preloads_;
    Environment base_;
};

struct Captured {
    int wait_status = 0;  // as from waitpid
    std::string out;      // everything the child wrote to stdout
};
// Runs `path` with argv and env; stdin and stderr are inherited, stdout is
// captured. Throws Failure(kExitFailure) if the child could not be started.
Captured spawn_capture(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env);

// What spawn_measure saw of a child.
struct Measured {
    // Context switches of the child and its waited-for descendants, from the
    // same rusage: voluntary ones are the waits that slept.
    long vol_cs = 0, invol_cs = 0;
    int wait_status = 0;  // as from waitpid
    std::string out;      // the child's stdout
    std::string err;      // its stderr, when captured
    double wall_us = 0;   // steady clock from the spawn to the reaping
    // User + system CPU of the child and of every descendant it waited for
    // (wait4's rusage): for `sh -c 'a | b'` the shell and both stages.
    double cpu_us = 0;
    double user_us = 0, sys_us = 0;  // the two halves of cpu_us
};
struct SpawnIo {
    bool null_stdin = false;             // stdin from /dev/null rather than inherited
    bool capture_stderr = false;         // stderr into Measured::err rather than inherited
    std::optional<std::string> input{};  // stdin reads this text (overrides null_stdin)
};
// A running child of spawn_measure's kind, for a caller that looks at it
// (in /proc) before it ends. Destroying a child that was not waited for
// kills and reaps it.
class Child {
public:
    Child(const std::string& path, const std::vector<std::string>& argv, const Environment& env,
          const SpawnIo& io);
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child();

    int pid() const noexcept { return pid_; }
    Measured wait();  // once

private:
    class Files;
    std::unique_ptr<Files> files_;
    int pid_ = -1;
    bool reaped_ = false;
    std::chrono::steady_clock::time_point start_;
};
// Runs `path` with argv and env and waits for it. Output goes to memory
// files, not pipes, so the parent stays asleep while the child runs. Throws
// Failure(kExitFailure) if the child could not be started.
Measured spawn_measure(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env, SpawnIo io = {});
// "exited with status 3", "killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int wait_status);

// What execvp would run for `cmd`: cmd itself when it contains '/', else the
// first executable match on PATH (or on confstr(_CS_PATH) when PATH is unset).
std::optional<std::string> resolve_command(std::string_view cmd);

// Reasons the dynamic loader would not preload into the program at `path`
// (statically linked, setuid/setgid, foreign ELF class); empty when there is
// none or the file is not an ELF (scripts, for one). Never throws for an
// unreadable file: the exec reports that better.
std::vector<std::string> preload_obstacles(const std::string& path);
// The bytes an ELF file's allocated NOBITS sections (.bss, .tbss) take in
// memory: what `size` reports as bss, the zero-filled part of its mapping.
// nullopt when the file is not an ELF of this class or cannot be read.
std::optional<std::uint64_t> elf_bss_bytes(const std::string& path);

// Command-line values for table options: "--spin-us" for spin_us, and the
// value parsed strictly (anything parse_value would fix up is an error here,
// since the user is present to correct it).
std::string flag_name(const OptionSpec& spec);
std::uint32_t parse_flag_value(std::string_view command, const OptionSpec& spec,
                               std::string_view text);
// Any option kind: the value as the shim will read it from PIPESPIN_<NAME>
// (normalised: "fixed" for " FIXED "); throws UsageError when invalid.
std::string parse_flag_text(std::string_view command, const OptionSpec& spec,
                            std::string_view text);
// A whole number for a flag such as --iterations, within [min, max].
// Appends a comma-separated list of names, each one of `known`
// ("perf-pipe,seq-wc"), to `into`: empty items are skipped; an unknown name
// ("COMMAND: unknown WHAT 'x' (known: ...)") or `into` still empty ("COMMAND:
// FLAG is empty") is a UsageError.
void parse_name_list(std::string_view command, std::string_view flag, std::string_view what,
                     std::string_view text, const std::vector<std::string>& known,
                     std::vector<std::string>& into);

std::uint64_t parse_count(std::string_view command, std::string_view flag, std::string_view text,
                          std::uint64_t min, std::uint64_t max);

// A decimal number making up all of `text` but for trailing blanks and
// newlines (what a bench-worker prints); nullopt for anything else.
std::optional<double> parse_decimal(std::string_view text);

struct Summary {
    double median = 0, min = 0, max = 0;
    double q1 = 0, q3 = 0;  // first and third quartiles
};
// Median (mean of the middle two for an even count), min, max and the
// quartiles, all interpolated linearly between order statistics at
// (n - 1) x p (Hyndman and Fan's type 7, numpy's default; p = 0.5 is the
// median). Empty in, zeros out.
Summary summarize(std::span<const double> samples);

// A private temporary directory (mkdtemp under $TMPDIR), removed with all
// it holds when the object goes. `what` names it ("pipespin-ab").
class TempDir {
public:
    explicit TempDir(std::string_view what);
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

// `arg` as a POSIX shell word: as is when it is safe, else single-quoted.
std::string shell_quote(std::string_view arg);
// The words quoted and joined by spaces, for "the exact command" lines.
std::string shell_join(std::span<const std::string> words);

// Bounded, printable rendering of user input for messages.
std::string printable(std::string_view s);
// A JSON string literal, quotes included.
std::string json_string(std::string_view s);
// `text` wrapped at `width` columns, every line indented by `indent` spaces.
std::string wrap(std::string_view text, std::size_t indent, std::size_t width = 79);
// One --help entry: the synopsis lines as written, then `text` wrapped below
// them with an indent of six.
std::string usage_entry(std::string_view synopsis, std::string_view text);

}  // namespace pipespin::cli
