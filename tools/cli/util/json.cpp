#include "cli/util/json.h"

#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/text.h"

namespace pipespin::cli {

Json json_number(std::optional<double> v, int digits) {
    if (!v || !std::isfinite(*v)) return nullptr;
    const double scale = std::pow(10.0, digits);
    const double r = std::round(*v * scale) / scale;
    return std::isfinite(r) ? Json(r) : Json(*v);
}

Json json_numbers(std::span<const double> values, int digits) {
    Json out = Json::array();
    for (double v : values) out.push_back(json_number(v, digits));
    return out;
}

std::optional<Json> parse_json(std::string_view text, std::string* error) {
    try {
        return Json::parse(text.begin(), text.end());
    } catch (const Json::exception& e) {
        if (error != nullptr) {
            // "[json.exception.parse_error.101] parse error at line 1, column 2: ..."
            const std::string what = e.what();
            const std::size_t at = what.find("] ");
            *error = at == std::string::npos ? what : what.substr(at + 2);
        }
        return std::nullopt;
    }
}

const Json* json_member(const Json& object, std::string_view key) {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
}

double json_num(const Json& object, std::string_view key, double fallback) {
    const Json* v = json_member(object, key);
    return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

std::uint64_t json_count(const Json& object, std::string_view key) {
    const Json* v = json_member(object, key);
    if (v == nullptr || !v->is_number()) return 0;
    if (v->is_number_unsigned()) return v->get<std::uint64_t>();
    const double d = v->get<double>();
    return d > 0 ? static_cast<std::uint64_t>(d) : 0;
}

std::string json_str(const Json& object, std::string_view key, std::string_view fallback) {
    const Json* v = json_member(object, key);
    return v != nullptr && v->is_string() ? v->get<std::string>() : std::string(fallback);
}

void add_json_options(CLI::App& app, JsonOutput& out, const std::string& what) {
    app.add_flag("--json", out.print, fmt::format("print {} as one JSON document instead", what));
    app.add_option("--export-json", out.file, "write the same JSON document to FILE as well")
        ->type_name("FILE")
        ->check([](const std::string& f) {
            return f.empty() ? std::string("--export-json needs a FILE") : std::string();
        });
}

std::string json_text(const Json& doc) {
    return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool emit_json(std::string_view command, const JsonOutput& out, const Json& doc) {
    if (out.file) {
        std::ofstream f(*out.file, std::ios::binary | std::ios::trunc);
        if (!(f << json_text(doc) << '\n') || !f.flush())
            throw Failure(kExitFailure, fmt::format("{}: cannot write --export-json '{}'", command,
                                                    printable(*out.file)));
    }
    if (out.print) fmt::print("{}\n", json_text(doc));
    return !out.print;
}

}  // namespace pipespin::cli
