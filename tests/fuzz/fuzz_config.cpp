// Fuzz target for the config parser (libFuzzer's entry point; see
// tools/fuzz.sh, which also builds standalone.cpp as the driver where clang
// is absent).
//
// The input is a config file's text, run through the same functions the
// shim runs in its constructor and on a reload: apply_config_text() for a
// few programs, the environment path (apply_option on every option with a
// slice of the input), and the glob matcher. Beyond the sanitizers' checks
// it traps on a broken invariant: every resolved value within its range,
// every text value terminated, every message NUL-terminated, bounded and
// printable, every source line inside the file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/config.h"

using namespace pipespin;

namespace {

struct Seen {
    unsigned messages = 0;
};

void check_message(void* ctx, const char* message) {
    const std::size_t n = std::strlen(message);
    if (n == 0 || n >= 512) __builtin_trap();
    for (std::size_t i = 0; i < n; ++i) {
        const auto u = static_cast<unsigned char>(message[i]);
        if (u < 0x20 || u >= 0x7f) __builtin_trap();
    }
    ++static_cast<Seen*>(ctx)->messages;
}

void check_options(const Options& o, const OptionSources& s, std::size_t lines) {
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        const OptionSpec& spec = option_table()[i];
        switch (spec.kind) {
            case OptionKind::Choice:
                if (o.*spec.field >= spec.choices.size()) __builtin_trap();
                break;
            case OptionKind::Number:
                if (o.*spec.field < spec.min || o.*spec.field > spec.max) __builtin_trap();
                break;
            case OptionKind::Text: {
                const TextValue& t = o.*spec.text;
                if (::strnlen(t.s, sizeof t.s) >= sizeof t.s) __builtin_trap();
                break;
            }
        }
        if (s.kind[i] == SourceKind::File && (s.line[i] == 0 || s.line[i] > lines))
            __builtin_trap();
    }
}

}  // namespace

// sys.cpp's cancellation helpers live in cancel.c with the engine; the
// parser never reaches them.
extern "C" void pipespin_test_cancel_holding(int) {
    __builtin_trap();
}
extern "C" void pipespin_call_holding(void (*)(void*), void*, int) {
    __builtin_trap();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > kConfigMaxBytes) return 0;  // the loader refuses these whole
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::size_t lines = 1;
    for (char c : text) lines += c == '\n';

    static const ProgramId kPrograms[] = {
        {"/usr/bin/python3.11", "python3.11", "python3"},
        {},  // nothing known: no [program] section may match
    };
    // A file owned by root refuses relative paths: both ways.
    for (const bool root_owned : {false, true})
        for (const ProgramId& program : kPrograms) {
            Options o;
            OptionSources s;
            Seen seen;
            const unsigned problems = apply_config_text(text, "fuzz.conf", program, root_owned, o,
                                                        s, check_message, &seen);
            if (seen.messages > problems || seen.messages > 51) __builtin_trap();
            check_options(o, s, lines);
            if (&program != kPrograms) continue;
            // Without a callback: the same problems counted, the same values.
            Options o2;
            OptionSources s2;
            if (apply_config_text(text, "fuzz.conf", program, root_owned, o2, s2, nullptr,
                                  nullptr) != problems ||
                std::memcmp(s.line, s2.line, sizeof s.line) != 0)
                __builtin_trap();
        }

    // Every option parsed from (a slice of) the input, as from the environment.
    const std::string_view value = text.substr(0, 300);
    for (const OptionSpec& spec : option_table()) {
        Options o;
        char why[256];
        apply_option(spec, value, o, why, sizeof why);
        if (::strnlen(why, sizeof why) >= sizeof why) __builtin_trap();
        OptionSources s;
        check_options(o, s, 0);
    }

    // The glob matcher: the first line as a pattern against the second.
    const std::size_t nl = text.find('\n');
    if (nl != std::string_view::npos && nl <= kConfigMaxLine) {
        const std::string_view rest = text.substr(nl + 1);
        const std::string_view subject =
            rest.substr(0, std::min<std::size_t>(rest.find('\n'), 4096));
        glob_match(text.substr(0, nl), subject);
    }
    return 0;
}
