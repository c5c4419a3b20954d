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

TEST_CASE("the run delay is the second number of schedstat", "[platform]") {
    auto delay = [](const char* t) { return sys::parse_run_delay(t, static_cast<long>(std::strlen(t))); };
    CHECK(delay("123456 7890 12\n") == 7890);
    CHECK(delay("0 0 0") == 0);
    CHECK(delay("5 123456789012345 3") == 123456789012345);
    // Only the first n bytes count: a field cut short is no field.
    CHECK(sys::parse_run_delay("5 1234 3", 5) == -1);
    CHECK(sys::parse_run_delay("5 1234 3", 6) == -1);
    CHECK(sys::parse_run_delay("5 1234 3", 7) == 1234);
    CHECK(delay("") == -1);
    CHECK(delay("123") == -1);
    CHECK(delay("123 ") == -1);
    CHECK(delay("x 5 6") == -1);
    CHECK(delay("1 y 6") == -1);
}

TEST_CASE("this thread's run delay can be read and never goes back", "[platform]") {
    const std::int64_t a = sys::run_delay_ns();
    if (a < 0) {
        WARN("/proc/thread-self/schedstat cannot be read here: the policy goes without run delays");
        return;
    }
    CHECK(sys::run_delay_ns() >= a);
}
