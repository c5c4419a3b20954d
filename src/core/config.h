// The config file and the resolution of every option from its sources:
// built-in defaults < the file's [global] section < the file's matching
// [program NAME] sections < PIPESPIN_* environment variables.
//
// The file (preload.conf.example documents it key by key):
//
//   # a comment
//   [global]
//   spin_us = 50
//   [program nginx php-fpm*]      # basenames or globs, separated by blanks
//   mode = fixed                  # a '#' after a blank starts a comment
//   [program /opt/db/bin/*]       # a name with a '/' matches the full path
//   mode = off
//
// Lines before the first section belong to [global]. A [program] section
// matches when one of its names matches the basename of the executable
// (/proc/self/exe, symlinks resolved) or of argv[0] (what ps shows); a name
// with a '/' matches the executable's full path. Names are globs (* ? [...]).
// Every matching section applies, in file order, so a later section wins
// over an earlier one where both set a key; all of them win over [global],
// wherever [global] is in the file. Keys are the option names
// (option_table()).
//
// Contract: everything here is allocation-free and lock-free, reads files
// with raw system calls only, and never aborts: the shim runs it in its
// constructor and again, on a live reload, inside some thread's read().
// Problems go to a callback, one complete message each, naming file:line,
// the offending text (printable, bounded) and what was used instead; the
// rest of the file still applies.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"

namespace pipespin {

// Files above this size are refused whole; longer lines are skipped.
inline constexpr std::size_t kConfigMaxBytes = 64 * 1024;
inline constexpr std::size_t kConfigMaxLine = 1024;
// The file the shim reads when PIPESPIN_CONFIG is not set.
inline constexpr const char* kDefaultConfigPath = "/etc/pipespin.conf";

enum class SourceKind : std::uint8_t { Default, File, Env };

// Where each resolved value came from (parallel to option_table()).
struct OptionSources {
    SourceKind kind[kOptionCount] = {};
    std::uint32_t line[kOptionCount] = {};  // File: its line number
};

// Who is running: what [program NAME] sections match against. Views into
// the caller's storage; empty when unknown.
struct ProgramId {
    std::string_view exe_path;    // "/usr/bin/python3.11"
    std::string_view exe_name;    // "python3.11"
    std::string_view argv0_name;  // "python3"
};

// One complete problem message ("FILE:LINE: ..."), NUL-terminated.
using ConfigWarn = void (*)(void* ctx, const char* message);

// Shell-style glob: * (any run), ? (one character), [abc] [a-z] [!x], and
// \ to quote the next character.
bool glob_match(std::string_view pattern, std::string_view text) noexcept;
// Does a [program ...] section with these blank-separated names match?
bool program_matches(std::string_view names, const ProgramId& program) noexcept;
// The part after the last '/'.
std::string_view base_name(std::string_view path) noexcept;

// Applies the file's text to options: [global] lines, then the lines of
// every section that matches `program`. Every line of every section is
// checked, matching or not. `path` names the file in messages. In a file
// owned by root (`root_owned`), a path option (log_file, stats) must be
// absolute: the file applies to every user's processes, setuid ones
// included, and each would resolve a relative path in its own working
// directory. Returns the number of problems (0: the file is clean).
unsigned apply_config_text(std::string_view text, const char* path, const ProgramId& program,
                           bool root_owned, Options& options, OptionSources& sources,
                           ConfigWarn warn, void* ctx) noexcept;

// ---- the file --------------------------------------------------------------

enum class LoadStatus : std::uint8_t {
    Ok,
    Missing,     // no such file (ENOENT)
    Unreadable,  // cannot be opened, examined or read
    NotRegular,  // a directory, FIFO, device...
    Insecure,    // writable by others, or not owned by root or the user
    TooLarge,    // above kConfigMaxBytes
};

// The identity and version of a file, for the live re-check: any change in
// these means "read it again" (an edit in place changes mtime/ctime/size, a
// replacement by rename changes the inode).
struct FileStamp {
    bool exists = false;
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_s = 0, ctime_s = 0;
    std::uint32_t mtime_ns = 0, ctime_ns = 0;
    std::uint32_t uid = 0;  // the owner (a chown changes ctime too)
    bool operator==(const FileStamp&) const = default;
};
// The stamp of whatever is at path now (exists = false if nothing is).
FileStamp stamp_path(const char* path) noexcept;

// Reads the file at path into buf (at most cap bytes, cap >= kConfigMaxBytes
// is enough for any accepted file), with the checks the shim needs: a
// regular file, not writable by anybody but its owner (and root's group),
// owned by root or by `euid`. Symlinks are followed; the checks apply to
// the file actually opened. On failure `why` says what and why.
LoadStatus load_config_file(const char* path, unsigned euid, char* buf, std::size_t cap,
                            std::size_t& len, FileStamp& stamp, char* why,
                            std::size_t why_size) noexcept;

// ---- the environment -------------------------------------------------------

// The PIPESPIN_* variables as read once at start-up, so that a live reload
// can apply them again over the new file without calling getenv (which
// another thread's setenv may race with). A value that does not fit a slot
// (no valid value is that long) is kept only as its length and first
// bytes: apply_env() refuses it whole, as a bad value, never a cut one.
struct EnvOverlay {
    static constexpr std::size_t kSlot = 256;  // a value's bytes kept at most, with its '\0'
    // Flags, lengths and offsets first, then the values one after another
    // in the order they were captured: a process with a few short
    // PIPESPIN_* variables writes the first few hundred bytes of the
    // overlay only (the shim keeps those where they cost no page fault of
    // their own, settings.cpp).
    bool set[kOptionCount] = {};
    std::uint16_t at[kOptionCount] = {};    // where the value starts in text
    std::size_t length[kOptionCount] = {};  // the value's full length
    char text[kOptionCount * kSlot] = {};
    bool too_long(std::size_t i) const noexcept { return length[i] >= kSlot; }
    const char* value(std::size_t i) const noexcept { return text + at[i]; }
};
static_assert(sizeof(EnvOverlay::text) <= 65536, "EnvOverlay::at reaches every value");
// Into a fresh (all clear) overlay, which only what is set is written to
// (the shim's constructor touches no page of it when nothing is set).
// Returns how many PIPESPIN_* variables are set (0: nothing to apply).
unsigned capture_env(GetEnv getenv_fn, void* ctx, EnvOverlay& env) noexcept;
// The same from the variables themselves ("PIPESPIN_MODE=off", in the
// environment's order), as the shim finds them in one pass over it: where a
// name is there twice the first counts, as for getenv. Each is matched
// against the table (a few compares) instead of each option's name being
// built and looked for in the list.
unsigned capture_env_vars(const char* const* vars, int count, EnvOverlay& env) noexcept;
// Applies the captured values (a bad one keeps what the file or the default
// gave, with a "PIPESPIN_X: why" message). Returns the number of problems.
unsigned apply_env(const EnvOverlay& env, Options& options, OptionSources& sources, ConfigWarn warn,
                   void* ctx) noexcept;

// ---- all together ----------------------------------------------------------

// The whole resolution, as the shim runs it at start-up and on a reload:
// defaults, then the file at `path` (none when null or empty), then env.
// A missing file is a problem only when `must_exist` (an explicit
// PIPESPIN_CONFIG). `stamp` is the file's as read, for the re-check.
// Returns the number of problems.
struct ResolveInput {
    const char* path = nullptr;
    bool must_exist = false;
    unsigned euid = 0;
    ProgramId program;
    const EnvOverlay* env = nullptr;
    char* buf = nullptr;  // scratch for the file, kConfigMaxBytes at least
    std::size_t cap = 0;
};
unsigned resolve_options(const ResolveInput& in, Options& options, OptionSources& sources,
                         FileStamp& stamp, ConfigWarn warn, void* ctx) noexcept;

// ---- with std::string: for the CLI and the tests (config_text.cpp) --------

struct ConfigCheck {
    Options options;
    OptionSources sources;
    std::array<std::string, kOptionCount> where;  // "default", "FILE:LINE", "PIPESPIN_X"
    std::vector<std::string> problems;            // every one, uncapped in count
    unsigned problem_count = 0;
    bool file_read = false;  // the file was there and accepted
};
// resolve_options() with the problems collected. `getenv_fn` null: no env.
ConfigCheck check_config(const std::string& path, bool must_exist, const ProgramId& program,
                         GetEnv getenv_fn, void* ctx, unsigned euid);

}  // namespace pipespin
