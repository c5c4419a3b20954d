// The one table of options. Every way of setting an option (environment,
// later the config file), the checker, --help and the docs read this table,
// so they cannot drift apart.
//
// Env names are PIPESPIN_<NAME>; config-file keys are the names as written
// here (lower case).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipespin {

enum class Mode : std::uint32_t { Off = 0, Fixed = 1, Adaptive = 2 };
enum class Probe : std::uint32_t { Fionread = 0, Poll = 1, Nowait = 2 };
enum class LogLevel : std::uint32_t { Off = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Resolved values. Plain integers so that one table can describe them all;
// the typed accessors are what code uses.
struct Options {
    std::uint32_t mode_v = static_cast<std::uint32_t>(Mode::Adaptive);
    std::uint32_t spin_us = 50;
    std::uint32_t probe_v = static_cast<std::uint32_t>(Probe::Nowait);
    std::uint32_t log_v = static_cast<std::uint32_t>(LogLevel::Warn);

    Mode mode() const noexcept { return static_cast<Mode>(mode_v); }
    Probe probe() const noexcept { return static_cast<Probe>(probe_v); }
    LogLevel log() const noexcept { return static_cast<LogLevel>(log_v); }
};

struct OptionSpec {
    std::string_view name;                      // "spin_us"
    std::uint32_t Options::*field;              // where the value lives
    std::span<const std::string_view> choices;  // enum names, index = value; empty for numbers
    std::uint32_t min;                          // numbers: inclusive range
    std::uint32_t max;
    std::string_view unit;  // "µs", or "" for enums
    std::string_view help;  // one line: what it does, when to change it
};

std::span<const OptionSpec> option_table() noexcept;
const OptionSpec* find_option(std::string_view name) noexcept;
inline constexpr std::size_t kOptionCount = 4;

// ---- allocation-free: what the shim uses at start-up -----------------------

enum class ParseStatus : std::uint8_t { Ok, Bad, AboveMax, BelowMin };
struct RawParse {
    std::uint32_t value;  // the value to use (the fallback when Bad, clamped when out of range)
    ParseStatus status;
};
RawParse parse_raw(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) noexcept;

// "PIPESPIN_SPIN_US" for spin_us, NUL-terminated; false if it does not fit.
bool env_name_into(const OptionSpec& spec, char* buf, std::size_t size) noexcept;

// Why a text was not taken as is, e.g. "bad value 'x' (expected
// off|fixed|adaptive); using fixed". Always NUL-terminated, truncated to fit.
void describe_problem(const OptionSpec& spec, ParseStatus status, std::string_view text,
                      std::uint32_t used, char* buf, std::size_t size) noexcept;

// Reads every PIPESPIN_* variable through `getenv_fn` (secure_getenv in the
// shim, a map in tests) into `options`; problems are described into
// `problems` (one "NAME: why" line each, at most kOptionCount).
using GetEnv = const char* (*)(const char* name, void* ctx);
struct EnvProblems {
    char lines[kOptionCount][256];
    std::size_t count = 0;
};
struct EnvSources {
    bool from_env[kOptionCount] = {};
};
void read_env(GetEnv getenv_fn, void* ctx, Options& options, EnvProblems& problems,
              EnvSources& sources) noexcept;

// ---- with std::string: for the CLI, the checker and tests -------------------

// "PIPESPIN_SPIN_US" for "spin_us".
std::string env_name(const OptionSpec& spec);
// The value as a user would write it ("fixed", "50").
std::string format_value(const OptionSpec& spec, std::uint32_t value);
std::string format_default(const OptionSpec& spec);
// What the option accepts, for --help and errors ("off|fixed|adaptive", "0..1000000").
std::string accepted_values(const OptionSpec& spec);

struct ParsedValue {
    std::uint32_t value = 0;
    std::string problem;  // empty when the text was accepted as is
};

// Parses text for spec. On a bad value returns nullopt in .value semantics:
// `fallback` is used and `problem` says why. Out-of-range numbers are clamped.
ParsedValue parse_value(const OptionSpec& spec, std::string_view text, std::uint32_t fallback);

// Where a resolved value came from, for warnings and check-config.
struct Source {
    std::string where = "default";  // "default", "PIPESPIN_MODE", later "file:line"
};

struct Resolved {
    Options options;
    std::array<Source, kOptionCount> sources;  // parallel to option_table()
    std::vector<std::string> warnings;
};

Resolved resolve_from_env(GetEnv getenv_fn, void* ctx);

}  // namespace pipespin
