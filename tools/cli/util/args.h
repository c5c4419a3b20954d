// The values of a subcommand's flags: counts, lists of names, and the
// options of the shim's table given on the command line. Each throws
// UsageError naming the subcommand, the flag and what it accepts. The words
// themselves are walked by ArgCursor (cli/cli.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"

namespace pipespin::cli {

class ArgCursor;

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

// Appends a comma-separated list of names, each one of `known`
// ("perf-pipe,seq-wc"), to `into`: empty items are skipped; an unknown name
// ("COMMAND: unknown WHAT 'x' (known: ...)") or `into` still empty ("COMMAND:
// FLAG is empty") is a UsageError.
void parse_name_list(std::string_view command, std::string_view flag, std::string_view what,
                     std::string_view text, const std::vector<std::string>& known,
                     std::vector<std::string>& into);

// A whole number for a flag such as --iterations, within [min, max].
std::uint64_t parse_count(std::string_view command, std::string_view flag, std::string_view text,
                          std::uint64_t min, std::uint64_t max);

// The flags of the subcommands that run rounds of whole programs (bench
// matrix, coverage): --quick (scaled-down runs) and --rounds R (1..1000).
// Takes one of them if it is next; false when neither is.
bool take_rounds_flag(ArgCursor& cur, std::string_view command, bool& quick, std::uint64_t& rounds);

}  // namespace pipespin::cli
