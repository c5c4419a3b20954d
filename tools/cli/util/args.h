// Declaring a command's options on its CLI11 app (command.h), with the
// checks and the messages of pipespin's own: a value out of range, an
// unknown name in a list or an empty file name is a UsageError naming the
// command, the flag and what it accepts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/options.h"

namespace pipespin::cli {

// Command-line values for the shim's options: "--spin-us" for spin_us, and
// the value parsed strictly (anything parse_value would fix up is an error
// here, since the user is present to correct it).
std::string flag_name(const OptionSpec& spec);
std::uint32_t parse_flag_value(std::string_view command, const OptionSpec& spec,
                               std::string_view text);
// Any option kind: the value as the shim will read it from PIPESPIN_<NAME>
// (normalised: "fixed" for " FIXED "); throws UsageError when invalid.
std::string parse_flag_text(std::string_view command, const OptionSpec& spec,
                            std::string_view text);

// A whole number in [min, max], for a flag such as --iterations.
std::uint64_t parse_count(std::string_view command, std::string_view flag, std::string_view text,
                          std::uint64_t min, std::uint64_t max);

// `names` ("-n,--runs") takes a whole number in [min, max]; the default
// shown is into's value.
CLI::Option* add_count(CLI::App& app, const std::string& names, std::uint64_t& into,
                       std::uint64_t min, std::uint64_t max, const std::string& help,
                       const std::string& value = "N");

// --NAME of one of the shim's options (--spin-us, --mode), parsed as the
// option table says, its default the shim's.
CLI::Option* add_setting(CLI::App& app, const OptionSpec& spec, std::optional<std::uint32_t>& into,
                         const std::string& help);

// A comma-separated list of names, each one of `known` ("perf-pipe,seq-wc"),
// appended to `into`: empty items are skipped; an unknown name ("COMMAND:
// unknown WHAT 'x' (known: ...)") or no name at all is a UsageError.
CLI::Option* add_name_list(CLI::App& app, const std::string& flag, std::string_view what,
                           std::vector<std::string> known, std::vector<std::string>& into,
                           const std::string& help);

// A file name (an empty one is a UsageError).
CLI::Option* add_file(CLI::App& app, const std::string& flag, std::optional<std::string>& into,
                      const std::string& help, const std::string& value = "FILE");

// --quick and --rounds R (1..1000): the options of the commands that run
// rounds of whole programs (pipespin-bench matrix, coverage).
void add_rounds_options(CLI::App& app, bool& quick, std::uint64_t& rounds);

}  // namespace pipespin::cli
