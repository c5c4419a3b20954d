#include <catch2/catch.hpp>

#include <string>

#include "core/ascii.h"
#include "core/options.h"
#include "option_spec.h"

using namespace pipespin;
using pipespin::test::spec;

TEST_CASE("every option has a name, help and a default that parses back", "[options]") {
    for (const OptionSpec& s : option_table()) {
        CAPTURE(s.name);
        CHECK(!s.name.empty());
        CHECK(!s.help.empty());
        Options o;
        CHECK(apply_option(s, format_default(s), o) == ParseStatus::Ok);
        CHECK(format_option(s, o) == format_default(s));
    }
}

TEST_CASE("env names are PIPESPIN_ and the upper-case key", "[options]") {
    CHECK(env_name(spec("spin_us")) == "PIPESPIN_SPIN_US");
    CHECK(env_name(spec("mode")) == "PIPESPIN_MODE");
}

TEST_CASE("enum values parse case-insensitively, trimmed", "[options]") {
    const auto& mode = spec("mode");
    CHECK(parse_value(mode, "off", 1).value == static_cast<std::uint32_t>(Mode::Off));
    CHECK(parse_value(mode, " Adaptive ", 1).value == static_cast<std::uint32_t>(Mode::Adaptive));
    CHECK(parse_value(mode, "FIXED", 0).problem.empty());
}

TEST_CASE("a bad enum value keeps the fallback and says why", "[options]") {
    ParsedValue pv = parse_value(spec("probe"), "spinny", 1);
    CHECK(pv.value == 1);
    CHECK(pv.problem.find("spinny") != std::string::npos);
    CHECK(pv.problem.find("fionread|poll|nowait") != std::string::npos);
    CHECK(pv.problem.find("using poll") != std::string::npos);
}

TEST_CASE("numbers: whole, in range, clamped, or refused", "[options]") {
    const auto& us = spec("spin_us");
    CHECK(parse_value(us, "75", 50).value == 75);
    CHECK(parse_value(us, "75", 50).problem.empty());
    CHECK(parse_value(us, "0", 50).value == 0);

    ParsedValue big = parse_value(us, "99999999999999999999999", 50);
    CHECK(big.value == us.max);
    CHECK(big.problem.find("maximum") != std::string::npos);

    for (const char* bad : {"", "abc", "-5", "12us", "1.5", "0x10"}) {
        CAPTURE(bad);
        ParsedValue pv = parse_value(us, bad, 50);
        CHECK(pv.value == 50);
        CHECK(!pv.problem.empty());
    }
}

TEST_CASE("text options take a trimmed printable value and refuse the rest", "[options]") {
    const auto& stats = spec("stats");
    Options o;
    CHECK(apply_option(stats, " /tmp/s-%p.json ", o) == ParseStatus::Ok);
    CHECK(format_option(stats, o) == "/tmp/s-%p.json");
    char why[256];
    CHECK(apply_option(stats, "a\x01" "b", o, why, sizeof why) == ParseStatus::Bad);
    CHECK(format_option(stats, o) == "/tmp/s-%p.json");
    CHECK(std::string(why).find("\\x01") != std::string::npos);
    CHECK(apply_option(stats, std::string(400, 'x'), o, why, sizeof why) == ParseStatus::TooLong);
    CHECK(format_option(stats, o) == "/tmp/s-%p.json");
    CHECK(std::string(why).find("too long") != std::string::npos);
    CHECK(apply_option(stats, "", o) == ParseStatus::Ok);
    CHECK(format_option(stats, o).empty());
}

TEST_CASE("every option's index matches its place in the table", "[options]") {
    std::size_t i = 0;
    for (const OptionSpec& s : option_table()) {
        CHECK(option_index(s) == i++);
        CHECK(&option_spec(s.id) == &s);
        CHECK(find_option(s.name) == &s);
    }
    CHECK(i == kOptionCount);
    CHECK(option_spec(OptionId::Mode).name == "mode");
    CHECK(option_spec(OptionId::ReloadMs).name == "reload_ms");
}

TEST_CASE("choice names come from their enums' lists", "[options]") {
    CHECK(option_spec(OptionId::Mode).choices.data() == kModeNames);
    CHECK(option_spec(OptionId::Log).choices.data() == kLogLevelNames);
    CHECK(name_of(Mode::Adaptive) == "adaptive");
    CHECK(name_of(LogLevel::Warn) == "warn");
    CHECK(format_default(option_spec(OptionId::SpinRead)) == name_of(Switch::On));
}

TEST_CASE("messages never echo control bytes or unbounded input", "[options]") {
    std::string junk(500, 'x');
    junk[3] = '\x1b';
    ParsedValue pv = parse_value(spec("mode"), junk, 1);
    CHECK(pv.problem.find('\x1b') == std::string::npos);
    CHECK(pv.problem.find("\\x1b") != std::string::npos);
    CHECK(pv.problem.size() < 200);
}

TEST_CASE("ascii helpers: trim, case, integers", "[options]") {
    CHECK(ascii::trim(" \t x y\n") == "x y");
    CHECK(ascii::trim("\nx\n", ascii::is_blank) == "\nx\n");
    CHECK(ascii::iequals("FiXeD", "fixed"));
    CHECK_FALSE(ascii::iequals("fixed", "fixe"));
    ascii::Digits d;
    CHECK(ascii::uint_text(0, d) == "0");
    CHECK(ascii::uint_text(18446744073709551615ull, d) == "18446744073709551615");
    CHECK(ascii::uint_text(0644, d, 8) == "644");
    CHECK(ascii::uint_text(01777777777777777777777ull, d, 8) == "1777777777777777777777");
    CHECK(ascii::sub("abc", 5).empty());
}
