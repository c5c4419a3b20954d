// Text helpers of the command line: quoting for the shell, bounded rendering
// of user input for messages, --help layout, and reading a number a child
// printed.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pipespin::cli {

// `arg` as a POSIX shell word: as is when it is safe, else single-quoted.
std::string shell_quote(std::string_view arg);
// The words quoted and joined by spaces, for "the exact command" lines.
std::string shell_join(std::span<const std::string> words);

// Bounded, printable rendering of user input for messages.
std::string printable(std::string_view s);

// `text` wrapped at `width` columns, every line indented by `indent` spaces.
std::string wrap(std::string_view text, std::size_t indent, std::size_t width = 79);

// wrap()'s lines, indented by `indent` (>= 1), as comment lines of a
// config file: the first column of the indent becomes the '#'.
std::string comment_lines(std::string_view text, std::size_t indent);

// A decimal number making up all of `text` but for trailing blanks and
// newlines (what a worker prints); nullopt for anything else.
std::optional<double> parse_decimal(std::string_view text);

}  // namespace pipespin::cli
