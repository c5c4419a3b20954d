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

// A text value (a path, "stderr"): a fixed buffer, so that Options stays a
// plain aggregate the shim can fill without allocating.
struct TextValue {
    char s[232] = {};
    std::string_view view() const noexcept { return {s, __builtin_strlen(s)}; }
    constexpr bool empty() const noexcept { return s[0] == '\0'; }
};

// Resolved values. Plain integers and fixed texts so that one table can
// describe them all; the typed accessors are what code uses.
struct Options {
    std::uint32_t mode_v = static_cast<std::uint32_t>(Mode::Adaptive);
    std::uint32_t spin_us = 50;
    std::uint32_t probe_v = static_cast<std::uint32_t>(Probe::Nowait);
    std::uint32_t spin_read = 1;   // off|on: spin before a read (and stdio refill)
    std::uint32_t spin_write = 1;  // off|on: spin before a write into a full pipe
    std::uint32_t spin_poll = 1;   // off|on: spin in poll/select/epoll waits
    std::uint32_t log_v = static_cast<std::uint32_t>(LogLevel::Warn);
    TextValue log_file = {"stderr"};  // "stderr" or a path (appended)
    TextValue stats = {};             // "" (none), "stderr", or a path; %p = pid
    std::uint32_t stats_interval = 0;  // s; 0: only at exit
    std::uint32_t ab = 100;            // % of processes in the treatment arm
    std::uint32_t ab_seed = 0;         // with the pid, decides the arm
    std::uint32_t ab_period = 0;       // s; switchback: alternate arms this often; 0: never
    std::uint32_t reload_ms = 1000;    // config file re-check period; 0: never

    constexpr Mode mode() const noexcept { return static_cast<Mode>(mode_v); }
    constexpr Probe probe() const noexcept { return static_cast<Probe>(probe_v); }
    constexpr LogLevel log() const noexcept { return static_cast<LogLevel>(log_v); }
};

enum class OptionKind : std::uint8_t { Choice, Number, Text };

struct OptionSpec {
    std::string_view name;                      // "spin_us"
    OptionKind kind;
    std::uint32_t Options::*field;              // Choice, Number: where the value lives
    TextValue Options::*text;                   // Text: where the value lives
    std::span<const std::string_view> choices;  // Choice: names, index = value
    std::uint32_t min;                          // Number: inclusive range
    std::uint32_t max;
    std::string_view unit;  // "µs", "s", "%"; for Text what it accepts ("stderr|PATH")
    std::string_view help;  // one line: what it does, when to change it
};

std::span<const OptionSpec> option_table() noexcept;
const OptionSpec* find_option(std::string_view name) noexcept;
inline constexpr std::size_t kOptionCount = 14;
// The index of spec in option_table() (for per-option arrays such as sources).
std::size_t option_index(const OptionSpec& spec) noexcept;

// ---- allocation-free: what the shim uses at start-up -----------------------

enum class ParseStatus : std::uint8_t { Ok, Bad, AboveMax, BelowMin, TooLong };
struct RawParse {
    std::uint32_t value;  // the value to use (the fallback when Bad, clamped when out of range)
    ParseStatus status;
};
// Choice and Number options only.
RawParse parse_raw(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) noexcept;

// Any option: parses text into options' field for spec. On a problem the
// field keeps its value (clamped for out-of-range numbers) and, when `why` is
// given, it says why ("bad value 'x' (expected off|fixed|adaptive); using
// fixed"). Allocation-free.
ParseStatus apply_option(const OptionSpec& spec, std::string_view text, Options& options,
                         char* why = nullptr, std::size_t why_size = 0) noexcept;

// The current value of spec in options as a user would write it ("fixed",
// "50", "/tmp/s"), NUL-terminated; false if it was truncated to fit.
bool format_option_into(const OptionSpec& spec, const Options& options, char* buf,
                        std::size_t size) noexcept;

// "PIPESPIN_SPIN_US" for spin_us, NUL-terminated; false if it does not fit.
bool env_name_into(const OptionSpec& spec, char* buf, std::size_t size) noexcept;

// Why a text was not taken as is, e.g. "bad value 'x' (expected
// off|fixed|adaptive); using fixed". Always NUL-terminated, truncated to fit.
// (Choice and Number options; apply_option covers all kinds.)
void describe_problem(const OptionSpec& spec, ParseStatus status, std::string_view text,
                      std::uint32_t used, char* buf, std::size_t size) noexcept;

// How the environment is read: secure_getenv in the shim, a map in tests
// (`ctx` is the caller's).
using GetEnv = const char* (*)(const char* name, void* ctx);

// ---- with std::string: for the CLI, the checker and tests -------------------

// "PIPESPIN_SPIN_US" for "spin_us".
std::string env_name(const OptionSpec& spec);
// The value as a user would write it ("fixed", "50"). Choice and Number.
std::string format_value(const OptionSpec& spec, std::uint32_t value);
// The current value of spec in options, any kind ("fixed", "50", "/tmp/s").
std::string format_option(const OptionSpec& spec, const Options& options);
std::string format_default(const OptionSpec& spec);
// What the option accepts, for --help and errors ("off|fixed|adaptive", "0..1000000").
std::string accepted_values(const OptionSpec& spec);
// accepted_values with the unit, for --help and docs ("0..1000000 µs").
std::string value_hint(const OptionSpec& spec);

struct ParsedValue {
    std::uint32_t value = 0;
    std::string problem;  // empty when the text was accepted as is
};

// Parses text for a Choice or Number spec. On a bad value `fallback` is used
// and `problem` says why. Out-of-range numbers are clamped.
ParsedValue parse_value(const OptionSpec& spec, std::string_view text, std::uint32_t fallback);

}  // namespace pipespin
