// Writing the JSON the subcommands print (--json, bench matrix --json):
// compact text, no blanks, members in the order they are added. The caller
// chooses how many decimals a figure gets, so that every report keeps the
// precision its readers (tests/cli, scripts) expect. json_reader.h reads it
// back.
#pragma once

#include <concepts>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace pipespin::cli {

// A JSON string literal, quotes included.
std::string json_string(std::string_view s);
// `v` with `digits` decimals, or null when it is absent, infinite or NaN.
std::string json_fixed(std::optional<double> v, int digits);
// [a,b,...] from values that are JSON text already.
std::string json_array(std::span<const std::string> items);
// [a,b,...] of numbers with `digits` decimals each.
std::string json_fixed_array(std::span<const double> values, int digits);

// One object, built member by member: JsonObject().str("id", id).fixed(...).text().
class JsonObject {
public:
    // A member whose value is JSON text already: a nested object or array, null.
    JsonObject& raw(std::string_view key, std::string_view json);
    JsonObject& str(std::string_view key, std::string_view text);
    // A number or bool as fmt prints it ("{}"): integers exactly, doubles in
    // their shortest round-trip form, true/false.
    template <typename T>
    requires std::integral<T> || std::floating_point<T> JsonObject& num(std::string_view key, T v) {
        return raw(key, fmt::format("{}", v));
    }
    // A number with `digits` decimals (fmt's {:.Nf}, so inf prints as inf).
    JsonObject& fixed(std::string_view key, double v, int digits);

    std::string text() const { return text_ + "}"; }

private:
    std::string text_ = "{";
};

}  // namespace pipespin::cli
