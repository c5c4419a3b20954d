// The option table's entry for a name the test knows exists (a test
// failure, not a crash, if it does not).
#pragma once

#include <catch2/catch.hpp>

#include <string_view>

#include "core/options.h"

namespace pipespin::test {

inline const OptionSpec& spec(std::string_view name) {
    const OptionSpec* s = find_option(name);
    REQUIRE(s != nullptr);
    return *s;
}

}  // namespace pipespin::test
