// A small JSON reader for what the tools read back: the shim's statistics
// lines (one object per line). Full JSON syntax, a plain tree; numbers are
// doubles (the counters stay exact below 2^53).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pipespin::cli {

struct JsonValue {
    enum class Type { Null, Bool, Number, String, Array, Object } type = Type::Null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<JsonValue> array;
    std::map<std::string, JsonValue, std::less<>> object;

    // Member `key` of an object, or null when absent (or not an object).
    const JsonValue* get(std::string_view key) const;
    // Number member, or `fallback`.
    double num(std::string_view key, double fallback = 0) const;
    // String member, or `fallback`.
    std::string str(std::string_view key, std::string_view fallback = "") const;
};

// The whole text as one JSON value; nullopt (and `error` set) on a syntax
// error or trailing garbage.
std::optional<JsonValue> parse_json(std::string_view text, std::string* error = nullptr);

}  // namespace pipespin::cli
