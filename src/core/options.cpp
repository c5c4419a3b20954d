#include "core/options.h"

#include "core/ascii.h"
#include "core/out.h"

namespace pipespin {
namespace {

using ascii::trim;

// clang-format off
constexpr OptionSpec kTable[] = {
#define PIPESPIN_CHOICE(id, name, field, Enum, def, help) \
    {OptionId::id, #name, OptionKind::Choice, &Options::field, nullptr, k##Enum##Names, \
     0, 0, "", help},
#define PIPESPIN_NUMBER(id, name, def, min, max, unit, help) \
    {OptionId::id, #name, OptionKind::Number, &Options::name, nullptr, {}, \
     min, max, unit, help},
#define PIPESPIN_TEXT(id, name, def, accepts, help) \
    {OptionId::id, #name, OptionKind::Text, nullptr, &Options::name, {}, \
     0, 0, accepts, help},
#include "core/options.def"
#undef PIPESPIN_CHOICE
#undef PIPESPIN_NUMBER
#undef PIPESPIN_TEXT
};
// clang-format on
static_assert(std::size(kTable) == kOptionCount);
static_assert(
    [] {
        for (std::size_t i = 0; i < kOptionCount; ++i)
            if (index_of(kTable[i].id) != i) return false;
        return true;
    }(),
    "the table is in OptionId order");

}  // namespace

std::span<const OptionSpec> option_table() noexcept {
    return kTable;
}

const OptionSpec& option_spec(OptionId id) noexcept {
    return kTable[index_of(id)];
}

std::size_t option_index(const OptionSpec& spec) noexcept {
    return index_of(spec.id);
}

const OptionSpec* find_option(std::string_view name) noexcept {
    for (const auto& spec : kTable)
        if (spec.name == name) return &spec;
    return nullptr;
}

RawParse parse_raw(const OptionSpec& spec, std::string_view text, std::uint32_t fallback) noexcept {
    std::string_view t = trim(text);
    if (spec.kind == OptionKind::Text) return {fallback, ParseStatus::Bad};
    if (spec.kind == OptionKind::Choice) {
        for (std::uint32_t i = 0; i < spec.choices.size(); ++i)
            if (ascii::iequals(t, spec.choices[i])) return {i, ParseStatus::Ok};
        return {fallback, ParseStatus::Bad};
    }
    if (t.empty()) return {fallback, ParseStatus::Bad};
    std::uint64_t v = 0;
    bool overflow = false;
    for (char c : t) {
        if (c < '0' || c > '9') return {fallback, ParseStatus::Bad};
        if (v > (~0ull - 9) / 10)
            overflow = true;
        else
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (overflow || v > spec.max) return {spec.max, ParseStatus::AboveMax};
    if (v < spec.min) return {spec.min, ParseStatus::BelowMin};
    return {static_cast<std::uint32_t>(v), ParseStatus::Ok};
}

bool format_option_into(const OptionSpec& spec, const Options& options, char* buf,
                        std::size_t size) noexcept {
    if (size == 0) return false;
    buf[0] = '\0';
    std::string_view v;
    ascii::Digits digits;
    if (spec.kind == OptionKind::Text) {
        v = (options.*spec.text).view();
    } else if (spec.kind == OptionKind::Choice) {
        const std::uint32_t i = options.*spec.field;
        v = i < spec.choices.size() ? spec.choices[i] : "?";
    } else {
        v = ascii::uint_text(options.*spec.field, digits);
    }
    const std::size_t n = v.size() < size - 1 ? v.size() : size - 1;
    __builtin_memcpy(buf, v.data(), n);
    buf[n] = '\0';
    return n == v.size();
}

bool env_name_into(const OptionSpec& spec, char* buf, std::size_t size) noexcept {
    if (kEnvPrefix.size() + spec.name.size() + 1 > size) return false;
    std::size_t n = 0;
    for (char c : kEnvPrefix) buf[n++] = c;
    for (char c : spec.name) buf[n++] = ascii::upper(c);
    buf[n] = '\0';
    return true;
}

void describe_problem(const OptionSpec& spec, ParseStatus status, std::string_view text,
                      std::uint32_t used, char* buf, std::size_t size) noexcept {
    Out o{buf, size};
    if (size) buf[0] = '\0';
    switch (status) {
        case ParseStatus::Ok:
            return;
        case ParseStatus::Bad:
            o.put("bad value '");
            o.printable(text);
            o.put(spec.kind == OptionKind::Number ? "' (expected a whole number " : "' (expected ");
            o.accepted(spec);
            o.put(")");
            break;
        case ParseStatus::TooLong:  // texts only, described by apply_option
        case ParseStatus::AboveMax:
        case ParseStatus::BelowMin:
            o.put("value '");
            o.printable(text);
            o.put(status == ParseStatus::AboveMax ? "' is above the maximum "
                                                  : "' is below the minimum ");
            o.num(status == ParseStatus::AboveMax ? spec.max : spec.min);
            break;
    }
    o.put("; using ");
    o.value(spec, used);
}

ParseStatus apply_option(const OptionSpec& spec, std::string_view text, Options& options, char* why,
                         std::size_t why_size) noexcept {
    if (why != nullptr && why_size) why[0] = '\0';
    if (spec.kind != OptionKind::Text) {
        std::uint32_t& slot = options.*spec.field;
        RawParse pr = parse_raw(spec, text, slot);
        if (pr.status != ParseStatus::Ok && why != nullptr)
            describe_problem(spec, pr.status, text, pr.value, why, why_size);
        slot = pr.value;
        return pr.status;
    }
    TextValue& slot = options.*spec.text;
    const std::string_view t = trim(text);
    ParseStatus status = ParseStatus::Ok;
    if (t.size() >= sizeof slot.s) status = ParseStatus::TooLong;
    for (char c : t)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) status = ParseStatus::Bad;
    if (status == ParseStatus::Ok) {
        __builtin_memcpy(slot.s, t.data(), t.size());
        slot.s[t.size()] = '\0';
        return status;
    }
    if (why != nullptr) {
        Out o{why, why_size};
        o.put(status == ParseStatus::TooLong ? "value '" : "bad value '");
        o.printable(text);
        o.put(status == ParseStatus::TooLong ? "' is too long (at most 231 bytes)"
                                             : "' (control characters)");
        o.put("; using '");
        o.printable(slot.view());
        o.put("'");
    }
    return status;
}

}  // namespace pipespin
