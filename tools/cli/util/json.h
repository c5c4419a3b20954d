// JSON in the CLI: nlohmann's json (Debian's nlohmann-json3-dev), members
// in the order they are added, and the one output convention of every
// command that reports: --json prints the report as one JSON document on
// stdout instead of its text, --export-json FILE writes the same document
// to FILE as well. The schemas of those documents are docs/*.schema.json.
//
// The shim writes its statistics lines itself (src/core/stats.h, no
// allocation); the CLI reads them back with parse_json().
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace pipespin::cli {

using Json = nlohmann::ordered_json;

// `v` rounded to `digits` decimals (a figure keeps the precision its
// readers expect), or null when absent, infinite or NaN.
Json json_number(std::optional<double> v, int digits);
// An array of json_number()s.
Json json_numbers(std::span<const double> values, int digits);

// The whole text as one JSON value; nullopt (and `error` set) on a syntax
// error or trailing text.
std::optional<Json> parse_json(std::string_view text, std::string* error = nullptr);
// A number member as a double, or `fallback` when absent or not a number.
double json_num(const Json& object, std::string_view key, double fallback = 0);
// A whole-number member (counters stay exact), or 0.
std::uint64_t json_count(const Json& object, std::string_view key);
// A string member, or `fallback`.
std::string json_str(const Json& object, std::string_view key, std::string_view fallback = "");
// A member, or null when absent (or `object` is not an object).
const Json* json_member(const Json& object, std::string_view key);

// --json and --export-json FILE of one command.
struct JsonOutput {
    bool print = false;
    std::optional<std::string> file;
    bool wanted() const { return print || file.has_value(); }
};
// Declares both options on `app`; `what` says what the document holds.
void add_json_options(CLI::App& app, JsonOutput& out, const std::string& what);
// Writes `doc` where `out` asks (throws Failure when FILE cannot be
// written). Returns true when the command should print its text: no --json.
bool emit_json(std::string_view command, const JsonOutput& out, const Json& doc);
// The text of a document as the CLI writes it: compact, one line, invalid
// UTF-8 in a string replaced rather than thrown on.
std::string json_text(const Json& doc);

}  // namespace pipespin::cli
