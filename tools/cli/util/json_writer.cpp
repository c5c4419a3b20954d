#include "cli/util/json_writer.h"

#include <cmath>

namespace pipespin::cli {

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (u < 0x20)
                    out += fmt::format("\\u{:04x}", u);
                else
                    out += c;  // UTF-8 passes through; JSON allows it
        }
    }
    return out + "\"";
}

std::string json_fixed(std::optional<double> v, int digits) {
    return v && std::isfinite(*v) ? fmt::format("{:.{}f}", *v, digits) : "null";
}

std::string json_array(std::span<const std::string> items) {
    return fmt::format("[{}]", fmt::join(items, ","));
}

std::string json_fixed_array(std::span<const double> values, int digits) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        out += fmt::format("{}{:.{}f}", i ? "," : "", values[i], digits);
    return out + "]";
}

JsonObject& JsonObject::raw(std::string_view key, std::string_view json) {
    if (text_.size() > 1) text_ += ',';
    text_ += json_string(key);
    text_ += ':';
    text_ += json;
    return *this;
}

JsonObject& JsonObject::str(std::string_view key, std::string_view text) {
    return raw(key, json_string(text));
}

JsonObject& JsonObject::fixed(std::string_view key, double v, int digits) {
    return raw(key, fmt::format("{:.{}f}", v, digits));
}

}  // namespace pipespin::cli
