// The one table of options, generated from options.def. Every way of
// setting an option (environment, config file, CLI flags), the checker,
// --help and the docs read this table, so they cannot drift apart; code
// names an option by its OptionId.
//
// Env names are PIPESPIN_<NAME>; config-file keys are the names as written
// in options.def (lower case).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/log_abi.h"

namespace pipespin {

// The values of the Choice options, each with its names (index = value):
// an enum class Type and kTypeNames, from one list of (Id, "name") rows.
#define PIPESPIN_ENUM_ID(id, name) id,
#define PIPESPIN_ENUM_NAME(id, name) name,
#define PIPESPIN_NAMED_ENUM(Type, LIST)                                              \
    enum class Type : std::uint32_t { LIST(PIPESPIN_ENUM_ID) };                      \
    inline constexpr std::string_view k##Type##Names[] = {LIST(PIPESPIN_ENUM_NAME)}; \
    constexpr std::string_view name_of(Type v) noexcept {                            \
        const auto i = static_cast<std::size_t>(v);                                  \
        return i < std::size(k##Type##Names) ? k##Type##Names[i] : "?";              \
    }

#define PIPESPIN_MODES(X) X(Off, "off") X(Fixed, "fixed") X(Adaptive, "adaptive")
#define PIPESPIN_PROBES(X) X(Fionread, "fionread") X(Poll, "poll") X(Nowait, "nowait")
#define PIPESPIN_SWITCHES(X) X(Off, "off") X(On, "on")
PIPESPIN_NAMED_ENUM(Mode, PIPESPIN_MODES)
PIPESPIN_NAMED_ENUM(Probe, PIPESPIN_PROBES)
PIPESPIN_NAMED_ENUM(Switch, PIPESPIN_SWITCHES)  // spin_read, spin_write, spin_poll
#undef PIPESPIN_NAMED_ENUM
#undef PIPESPIN_ENUM_ID
#undef PIPESPIN_ENUM_NAME
// The levels are the message library's (report/log_abi.h); a value is its index.
enum class LogLevel : std::uint32_t {
#define PIPESPIN_LOG_LEVEL_ID(id, value, word, label) id = value,
    PIPESPIN_LOG_LEVELS(PIPESPIN_LOG_LEVEL_ID)
#undef PIPESPIN_LOG_LEVEL_ID
};
inline constexpr std::string_view kLogLevelNames[] = {
#define PIPESPIN_LOG_LEVEL_WORD(id, value, word, label) word,
    PIPESPIN_LOG_LEVELS(PIPESPIN_LOG_LEVEL_WORD)
#undef PIPESPIN_LOG_LEVEL_WORD
};
constexpr std::string_view name_of(LogLevel v) noexcept {
    const auto i = static_cast<std::size_t>(v);
    return i < std::size(kLogLevelNames) ? kLogLevelNames[i] : "?";
}

// A text value (a path, "stderr"): a fixed buffer, so that Options stays a
// plain aggregate the shim can fill without allocating.
struct TextValue {
    char s[232] = {};
    std::string_view view() const noexcept { return {s, __builtin_strlen(s)}; }
    constexpr bool empty() const noexcept { return s[0] == '\0'; }
};

// Which option (options.def), in table order.
enum class OptionId : std::uint8_t {
#define PIPESPIN_CHOICE(id, name, field, Enum, def, help) id,
#define PIPESPIN_NUMBER(id, name, def, min, max, unit, help) id,
#define PIPESPIN_TEXT(id, name, def, accepts, help) id,
#include "core/options.def"
#undef PIPESPIN_CHOICE
#undef PIPESPIN_NUMBER
#undef PIPESPIN_TEXT
};

inline constexpr std::size_t kOptionCount = 0
#define PIPESPIN_CHOICE(id, name, field, Enum, def, help) +1
#define PIPESPIN_NUMBER(id, name, def, min, max, unit, help) +1
#define PIPESPIN_TEXT(id, name, def, accepts, help) +1
#include "core/options.def"
#undef PIPESPIN_CHOICE
#undef PIPESPIN_NUMBER
#undef PIPESPIN_TEXT
    ;

constexpr std::size_t index_of(OptionId id) noexcept {
    return static_cast<std::size_t>(id);
}

// Resolved values. Plain integers and fixed texts so that one table can
// describe them all; the typed accessors are what code uses.
// The members come from options.def.
// clang-format off
struct Options {
#define PIPESPIN_CHOICE(id, name, field, Enum, def, help) \
    std::uint32_t field = static_cast<std::uint32_t>(Enum::def);
#define PIPESPIN_NUMBER(id, name, def, min, max, unit, help) std::uint32_t name = def;
#define PIPESPIN_TEXT(id, name, def, accepts, help) TextValue name = {def};
#include "core/options.def"
#undef PIPESPIN_CHOICE
#undef PIPESPIN_NUMBER
#undef PIPESPIN_TEXT

    constexpr Mode mode() const noexcept { return static_cast<Mode>(mode_v); }
    constexpr Probe probe() const noexcept { return static_cast<Probe>(probe_v); }
    constexpr LogLevel log() const noexcept { return static_cast<LogLevel>(log_v); }
};
// clang-format on

enum class OptionKind : std::uint8_t { Choice, Number, Text };

struct OptionSpec {
    OptionId id;
    std::string_view name;  // "spin_us"
    OptionKind kind;
    std::uint32_t Options::*field;              // Choice, Number: where the value lives
    TextValue Options::*text;                   // Text: where the value lives
    std::span<const std::string_view> choices;  // Choice: names, index = value
    std::uint32_t min;                          // Number: inclusive range
    std::uint32_t max;
    std::string_view unit;  // "µs", "s", "%"; for Text what it accepts ("stderr|PATH")
    std::string_view help;  // one line: what it does, when to change it
};

// The whole table, in OptionId order.
std::span<const OptionSpec> option_table() noexcept;
// One option's entry.
const OptionSpec& option_spec(OptionId id) noexcept;
// For user text only (a config-file key, a variable or flag name): the
// option with this name, or null.
const OptionSpec* find_option(std::string_view name) noexcept;
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
// What every option's environment variable starts with.
inline constexpr std::string_view kEnvPrefix = "PIPESPIN_";

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
