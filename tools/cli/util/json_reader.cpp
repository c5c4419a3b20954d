#include "cli/util/json_reader.h"

#include <charconv>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

namespace pipespin::cli {

const JsonValue* JsonValue::get(std::string_view key) const {
    if (type != Type::Object) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
}

double JsonValue::num(std::string_view key, double fallback) const {
    const JsonValue* v = get(key);
    return v != nullptr && v->type == Type::Number ? v->number : fallback;
}

std::string JsonValue::str(std::string_view key, std::string_view fallback) const {
    const JsonValue* v = get(key);
    return v != nullptr && v->type == Type::String ? v->string : std::string(fallback);
}

namespace {

struct Parser {
    std::string_view s;
    std::size_t i = 0;
    std::string error;
    int depth = 0;

    bool fail(std::string_view what) {
        if (error.empty()) error = fmt::format("{} at offset {}", what, i);
        return false;
    }
    void ws() {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    }
    bool literal(std::string_view word) {
        if (s.substr(i, word.size()) != word) return fail("unexpected text");
        i += word.size();
        return true;
    }
    static void utf8(std::string& out, std::uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        }
    }
    bool hex4(std::uint32_t& v) {
        if (i + 4 > s.size()) return fail("short \\u escape");
        auto [end, ec] = std::from_chars(s.data() + i, s.data() + i + 4, v, 16);
        if (ec != std::errc{} || end != s.data() + i + 4) return fail("bad \\u escape");
        i += 4;
        return true;
    }
    bool string(std::string& out) {
        ++i;  // the opening quote
        while (i < s.size()) {
            char c = s[i++];
            if (c == '"') return true;
            if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (i >= s.size()) break;
            switch (s[i++]) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    std::uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xd800 && cp < 0xdc00 && s.substr(i, 2) == "\\u") {
                        i += 2;
                        std::uint32_t lo = 0;
                        if (!hex4(lo)) return false;
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    }
                    utf8(out, cp);
                    break;
                }
                default:
                    return fail("bad escape");
            }
        }
        return fail("unterminated string");
    }
    bool number(JsonValue& v) {
        std::size_t start = i;
        if (i < s.size() && s[i] == '-') ++i;
        while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == 'e' ||
                                s[i] == 'E' || s[i] == '+' || s[i] == '-'))
            ++i;
        auto [end, ec] = std::from_chars(s.data() + start, s.data() + i, v.number);
        if (ec != std::errc{} || end != s.data() + i) return fail("bad number");
        v.type = JsonValue::Type::Number;
        return true;
    }
    // The members of an object or the items of an array, from the opening
    // bracket to `close`, separated by commas: `item` reads one.
    template <typename Item>
    bool items(char close, Item item) {
        ++i;  // the opening bracket
        ws();
        if (i < s.size() && s[i] == close) {
            ++i;
            return true;
        }
        for (;;) {
            if (!item()) return false;
            ws();
            if (i < s.size() && s[i] == ',') {
                ++i;
                continue;
            }
            if (i < s.size() && s[i] == close) {
                ++i;
                return true;
            }
            return fail(fmt::format("expected ',' or '{}'", close));
        }
    }
    bool value(JsonValue& v) {
        if (++depth > 64) return fail("nested too deeply");
        ws();
        if (i >= s.size()) return fail("unexpected end");
        bool ok = true;
        switch (s[i]) {
            case '{':
                v.type = JsonValue::Type::Object;
                ok = items('}', [&] {
                    ws();
                    if (i >= s.size() || s[i] != '"') return fail("expected a key");
                    std::string key;
                    if (!string(key)) return false;
                    ws();
                    if (i >= s.size() || s[i] != ':') return fail("expected ':'");
                    ++i;
                    JsonValue member;
                    if (!value(member)) return false;
                    v.object[std::move(key)] = std::move(member);
                    return true;
                });
                break;
            case '[':
                v.type = JsonValue::Type::Array;
                ok = items(']', [&] {
                    JsonValue item;
                    if (!value(item)) return false;
                    v.array.push_back(std::move(item));
                    return true;
                });
                break;
            case '"':
                v.type = JsonValue::Type::String;
                ok = string(v.string);
                break;
            case 't':
                v.type = JsonValue::Type::Bool;
                v.boolean = true;
                ok = literal("true");
                break;
            case 'f':
                v.type = JsonValue::Type::Bool;
                ok = literal("false");
                break;
            case 'n':
                ok = literal("null");
                break;
            default:
                ok = number(v);
        }
        --depth;
        return ok;
    }
};

}  // namespace

std::optional<JsonValue> parse_json(std::string_view text, std::string* error) {
    Parser p;
    p.s = text;
    JsonValue v;
    bool ok = p.value(v);
    if (ok) {
        p.ws();
        if (p.i != text.size()) ok = p.fail("trailing text");
    }
    if (!ok) {
        if (error != nullptr) *error = p.error;
        return std::nullopt;
    }
    return v;
}

}  // namespace pipespin::cli
