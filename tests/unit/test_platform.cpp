#include <catch2/catch.hpp>

#include <cstring>

#include "platform/sys.h"

using namespace pipespin;

namespace {

long running(const char* text) {
    return sys::parse_running(text, static_cast<long>(std::strlen(text)));
}

}  // namespace

TEST_CASE("the run queue's length is the number before the '/' of /proc/loadavg", "[platform]") {
    CHECK(running("0.10 0.20 0.30 3/120 4567\n") == 3);
    CHECK(running("12.00 9.50 8.25 17/2048 99\n") == 17);
    CHECK(running("0.00 0.00 0.00 0/1 1") == 0);
    // Only the first n bytes count.
    CHECK(sys::parse_running("0.1 0.2 0.3 42/7 1", 13) == -1);
    CHECK(sys::parse_running("0.1 0.2 0.3 42/7 1", 15) == 42);
}

TEST_CASE("a text without a run-queue field gives -1", "[platform]") {
    CHECK(running("") == -1);
    CHECK(running("0.10 0.20 0.30") == -1);
    CHECK(running("0.10 0.20 0.30 /120 4567") == -1);
}
