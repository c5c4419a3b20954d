// Statistics: counters that survive their fd, the JSON line, the A/B arms.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>

#include "core/fd_table.h"
#include "owned_table.h"
#include "core/stats.h"

using namespace pipespin;

namespace {

OwnedTable table() {
    return make_table();
}

void count(DirState& d, std::uint64_t calls, std::uint64_t waits, std::uint64_t hits) {
    for (std::uint64_t i = 0; i < calls; ++i) bump(d.calls);
    d.waits.fetch_add(waits);
    d.spins.fetch_add(waits);
    d.spin_hits.fetch_add(hits);
}

std::string line_for(const StatsHeader& h, const Options& o, const StatsSnapshot& s) {
    char buf[kStatsLineMax + 1];
    const std::size_t n = render_stats_line(buf, sizeof buf, h, o, s);
    return std::string(buf, n);
}

// A field's integer value in a rendered line: "key":N, the first occurrence
// after `after`.
std::uint64_t field(const std::string& line, const std::string& after, const std::string& key) {
    std::size_t at = line.find(after);
    REQUIRE(at != std::string::npos);
    at = line.find("\"" + key + "\":", at);
    REQUIRE(at != std::string::npos);
    return std::stoull(line.substr(at + key.size() + 3));
}

}  // namespace

TEST_CASE("stats: a closed pipe's counters are kept, a new pipe on its number starts at zero",
          "[stats]") {
    auto t = table();
    t->set_pipe(3, 4);
    count(t->state(3)->dir[0], 10, 4, 3);
    t->forget(3);  // close(3)
    CHECK(t->state(3)->dir[0].calls.load() == 0);
    t->set_pipe(3, 5);  // a new pipe on the same number
    count(t->state(3)->dir[0], 2, 1, 1);

    StatsSnapshot s;
    t->snapshot(s);
    const Counters& r = s.at(StatKind::Pipe, StatDir::Read);
    CHECK(r.calls == 12);
    CHECK(r.waits == 5);
    CHECK(r.spin_hits == 4);
    CHECK(r.spin_misses() == 1);
}

TEST_CASE("stats: set_pipe over a slot whose close was never seen folds it too", "[stats]") {
    auto t = table();
    t->set_pipe(6, 7);
    count(t->state(7)->dir[1], 5, 0, 0);
    t->set_pipe(7, 6);  // the numbers were reused behind our back
    StatsSnapshot s;
    t->snapshot(s);
    CHECK(s.at(StatKind::Pipe, StatDir::Write).calls == 5);
    CHECK(t->state(7)->dir[1].calls.load() == 0);
}

TEST_CASE("stats: close_range and FIFOs: the kind the fd had when it was forgotten", "[stats]") {
    auto t = table();
    t->set_pipe(10, 11);
    FdInfo fifo = t->lookup(12, [](int) noexcept {
        return fdbits::kKnown | fdbits::kPipe | fdbits::kReadable | fdbits::kFifo;
    });
    REQUIRE(fifo.kind() == StatKind::Fifo);
    count(fifo.state->dir[0], 7, 2, 2);
    count(t->state(10)->dir[0], 3, 0, 0);
    t->forget_range(0, 100);
    StatsSnapshot s;
    t->snapshot(s);
    CHECK(s.at(StatKind::Fifo, StatDir::Read).calls == 7);
    CHECK(s.at(StatKind::Fifo, StatDir::Read).spin_hits == 2);
    CHECK(s.at(StatKind::Pipe, StatDir::Read).calls == 3);
    CHECK(s.total().calls == 10);
}

TEST_CASE("stats: a new process (a child after fork) counts from zero, writing one word",
          "[stats]") {
    auto t = table();
    t->set_pipe(3, 4);
    count(t->state(3)->dir[0], 4, 1, 1);
    t->process().at(StatKind::Pipe, StatDir::Poll).waits.fetch_add(9);
    t->process().count_via(Via::Stdio, true);
    t->forget(4);
    StatsSnapshot before;
    t->snapshot(before);
    CHECK(before.via[static_cast<int>(Via::Stdio)].spin_hits == 1);
    CHECK(before.total().calls == 4);
    t->new_process();
    // Nothing was cleared: the parent's counts are still in the pages the
    // child shares with it, and read as zero.
    CHECK(t->state(3)->dir[0].calls.load() == 4);
    StatsSnapshot s;
    t->snapshot(s);
    CHECK(s.total().calls == 0);
    CHECK(s.total().waits == 0);
    CHECK(s.via[static_cast<int>(Via::Stdio)].spins == 0);
    // The child's own use of fd 3 starts from zero, and a close folds only
    // what the child counted.
    FdInfo info = t->lookup(3, nullptr);
    REQUIRE(info.pipe());
    count(info.state->dir[0], 2, 0, 0);
    t->forget(3);
    t->snapshot(s);
    CHECK(s.at(StatKind::Pipe, StatDir::Read).calls == 2);
}

TEST_CASE("stats: spins per hook family, hits among them", "[stats]") {
    auto t = table();
    t->process().count_via(Via::Epoll, true);
    t->process().count_via(Via::Epoll, false);
    t->process().count_via(Via::Io, true);
    StatsSnapshot s;
    t->snapshot(s);
    CHECK(s.via[static_cast<int>(Via::Epoll)].spins == 2);
    CHECK(s.via[static_cast<int>(Via::Epoll)].spin_hits == 1);
    CHECK(s.via[static_cast<int>(Via::Io)].spins == 1);
    CHECK(s.via[static_cast<int>(Via::Select)].spins == 0);
    CHECK(via_name(Via::Epoll) == "epoll");
    CHECK(via_name(Via::Splice) == "splice");
}

TEST_CASE("stats: the line carries the header, the config and every counter", "[stats]") {
    Options o;
    o.mode_v = static_cast<std::uint32_t>(Mode::Fixed);
    REQUIRE(apply_option(*find_option("stats"), "/tmp/x \"quoted\" \\ %p", o) == ParseStatus::Ok);
    StatsSnapshot s;
    s.at(StatKind::Pipe, StatDir::Read) = {.calls = 100,
                                           .bytes = 400,
                                           .waits = 30,
                                           .spins = 30,
                                           .spin_hits = 25,
                                           .spin_ns = 1000,
                                           .sleep_ns = 2000};
    s.at(StatKind::Fifo, StatDir::Poll) = {
        .calls = 5, .waits = 2, .spins = 2, .spin_hits = 1, .spin_ns = 10, .sleep_ns = 20};
    s.via[static_cast<int>(Via::Stdio)] = {7, 6};
    StatsHeader h;
    h.pid = 1234;
    h.ppid = 1;
    h.program = "my\"prog";
    h.event = StatsEvent::Exec;
    h.arm = Arm::Treatment;
    h.wall_us = 99;
    const std::string line = line_for(h, o, s);
    CHECK(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    CHECK(
        line.starts_with("{\"v\":2,\"pid\":1234,\"ppid\":1,\"program\":\"my\\\"prog\","
                         "\"event\":\"exec\",\"arm\":\"treatment\","));
    CHECK(line.find("\"mode\":\"fixed\"") != std::string::npos);
    CHECK(line.find("\"spin_us\":50,") != std::string::npos);  // numbers stay numbers
    CHECK(line.find("\"stats\":\"/tmp/x \\\"quoted\\\" \\\\ %p\"") != std::string::npos);
    CHECK(field(line, "\"pipe\":{\"read\"", "calls") == 100);
    CHECK(field(line, "\"pipe\":{\"read\"", "bytes") == 400);
    CHECK(field(line, "\"pipe\":{\"read\"", "spin_misses") == 5);
    CHECK(field(line, "\"pipe\":{\"read\"", "sleep_ns") == 2000);
    CHECK(field(line, "\"fifo\":{", "calls") == 0);
    CHECK(field(line, "\"fifo\":{\"read\"", "spin_hits") == 0);
    CHECK(field(line, "\"poll\":{", "calls") == 0);  // the pipe's poll
    CHECK(field(line, "\"sleeps_avoided\"", "sleeps_avoided") == 26);
    CHECK(field(line, "\"via\":{\"io\"", "spins") == 0);
    CHECK(field(line, "\"stdio\":{", "spins") == 7);
    CHECK(field(line, "\"stdio\":{", "spin_hits") == 6);
    CHECK(line.find("\"splice\":{\"spins\":0,\"spin_hits\":0}}}\n") != std::string::npos);
    CHECK(line.find("truncated") == std::string::npos);
}

TEST_CASE("stats: a wait's duration lands in its log2 bucket", "[stats][waits]") {
    CHECK(wait_bucket(0) == 0);
    CHECK(wait_bucket(1023) == 0);
    CHECK(wait_bucket(1024) == 1);  // [2^10, 2^11) ns
    CHECK(wait_bucket(2047) == 1);
    CHECK(wait_bucket(2048) == 2);
    CHECK(wait_bucket(kPlainFloorNs - 1) == 2);
    CHECK(wait_bucket(kPlainFloorNs) == 3);  // the floor starts a bucket
    CHECK(wait_bucket((1ull << 28) - 1) == kWaitBuckets - 2);
    CHECK(wait_bucket(1ull << 28) == kWaitBuckets - 1);  // ~268 ms and up: one bucket
    CHECK(wait_bucket(~0ull) == kWaitBuckets - 1);
}

TEST_CASE("stats: waits are counted per kind, direction and end, and survive a fork's reset",
          "[stats][waits]") {
    auto t = table();
    ProcessCounters& pc = t->process();
    pc.count_wait(StatKind::Pipe, StatDir::Read, WaitEnd::Hit, 500);
    pc.count_wait(StatKind::Pipe, StatDir::Read, WaitEnd::Hit, 1500);
    pc.count_wait(StatKind::Pipe, StatDir::Read, WaitEnd::Miss, 40'000);
    pc.count_wait(StatKind::Fifo, StatDir::Poll, WaitEnd::Plain, 3'000'000'000ull);
    StatsSnapshot s;
    t->snapshot(s);
    const WaitHist& hit = s.wait[0][0][static_cast<int>(WaitEnd::Hit)];
    CHECK(hit.n[0] == 1);
    CHECK(hit.n[1] == 1);
    CHECK(hit.count() == 2);
    CHECK(hit.ns == 2000);
    CHECK(s.wait[0][0][static_cast<int>(WaitEnd::Miss)].n[wait_bucket(40'000)] == 1);
    const WaitHist& plain = s.wait[1][2][static_cast<int>(WaitEnd::Plain)];
    CHECK(plain.n[kWaitBuckets - 1] == 1);
    CHECK(plain.ns == 3'000'000'000ull);
    CHECK(s.wait[0][1][0].count() == 0);
    t->new_process();  // a child after fork: its own waits only
    t->snapshot(s);
    CHECK(s.wait[0][0][static_cast<int>(WaitEnd::Hit)].count() == 0);
    CHECK(s.wait[1][2][static_cast<int>(WaitEnd::Plain)].ns == 0);
}

TEST_CASE("stats: a v2 line carries the resource usage and the wait histograms", "[stats][waits]") {
    Options o;
    StatsSnapshot s;
    s.wait[0][0][static_cast<int>(WaitEnd::Hit)].n[1] = 7;
    s.wait[0][0][static_cast<int>(WaitEnd::Hit)].n[3] = 2;
    s.wait[0][0][static_cast<int>(WaitEnd::Hit)].ns = 12345;
    s.wait[1][2][static_cast<int>(WaitEnd::Plain)].n[kWaitBuckets - 1] = 1;
    StatsHeader h;
    h.ru = {1500, 250, 42, 3, 9000};
    const std::string line = line_for(h, o, s);
    CHECK(line.find("\"rusage\":{\"utime_us\":1500,\"stime_us\":250,\"nvcsw\":42,"
                    "\"nivcsw\":3,\"maxrss_kb\":9000}") != std::string::npos);
    // Trailing empty buckets are left out; every end is there.
    CHECK(line.find("\"pipe\":{\"read\":{\"calls\":0,\"waits\":0,\"spins\":0,\"spin_hits\":0,"
                    "\"spin_misses\":0,\"spin_ns\":0,\"sleep_ns\":0,\"bytes\":0,"
                    "\"wait_ns\":{\"hit\":12345,\"miss\":0,\"plain\":0},"
                    "\"wait_log2\":{\"hit\":[0,7,0,2],\"miss\":[],\"plain\":[]}}") !=
          std::string::npos);
    CHECK(line.find("\"fifo\":{") != std::string::npos);
    CHECK(line.find("\"plain\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]}}") != std::string::npos);
}

TEST_CASE("stats: a line that would still be too long drops the buckets, keeping the sums",
          "[stats][waits]") {
    Options o;
    const std::string long_text(231, '"');
    for (const char* name : {"stats", "log_file"})
        REQUIRE(apply_option(*find_option(name), long_text, o) == ParseStatus::Ok);
    StatsSnapshot s;
    for (auto& kind : s.c)
        for (auto& dir : kind) dir = {~0ull, ~0ull, ~0ull, ~0ull, 1, ~0ull, ~0ull};
    for (auto& kind : s.wait)
        for (auto& dir : kind)
            for (WaitHist& w : dir) {
                for (auto& n : w.n) n = ~0ull;
                w.ns = ~0ull;
            }
    StatsHeader h;
    const std::string line = line_for(h, o, s);
    REQUIRE(!line.empty());
    CHECK(line.size() <= kStatsLineMax);
    CHECK(line.find("\"truncated\":true") != std::string::npos);
    CHECK(line.find("wait_log2") == std::string::npos);
    CHECK(line.find("\"wait_ns\":{\"hit\":18446744073709551615,") != std::string::npos);
    CHECK(line.ends_with("}}}\n"));
}

TEST_CASE("stats: a line too long for PIPE_BUF drops the config texts, never its shape",
          "[stats]") {
    Options o;
    const std::string long_text(231, '"');  // each escapes to two bytes
    for (const char* name : {"stats", "log_file"})
        REQUIRE(apply_option(*find_option(name), long_text, o) == ParseStatus::Ok);
    StatsSnapshot s;
    for (auto& kind : s.c)
        for (auto& dir : kind) dir = {~0ull, ~0ull, ~0ull, ~0ull, 1, ~0ull, ~0ull};
    for (auto& v : s.via) v = {~0ull, ~0ull};
    std::string program(300, '\x01');  // each escapes to six bytes
    StatsHeader h;
    h.program = program.c_str();
    h.pid = -1;
    const std::string line = line_for(h, o, s);
    REQUIRE(!line.empty());
    CHECK(line.size() <= kStatsLineMax);
    CHECK(line.find("\"truncated\":true") != std::string::npos);
    CHECK(line.find("\"log_file\"") == std::string::npos);
    CHECK(line.find("\"mode\":\"adaptive\"") != std::string::npos);
    CHECK(line.find("\"pid\":-1,") != std::string::npos);
    CHECK(line.ends_with("}}}\n"));

    char tiny[16];
    CHECK(render_stats_line(tiny, sizeof tiny, h, o, s) == 0);
    CHECK(tiny[0] == '\0');
}

TEST_CASE("stats: %p in the destination becomes the pid", "[stats]") {
    char buf[64];
    REQUIRE(expand_stats_path("/var/log/ps-%p.jsonl", 42, buf, sizeof buf));
    CHECK(std::string(buf) == "/var/log/ps-42.jsonl");
    REQUIRE(expand_stats_path("%p/%p%", 7, buf, sizeof buf));
    CHECK(std::string(buf) == "7/7%");
    CHECK_FALSE(expand_stats_path("/a/long/path/%p", 123456, buf, 10));
}

TEST_CASE("arm: the draw is deterministic, splits as asked and depends on the seed", "[arm]") {
    CHECK(draw_arm(0, 1, 100) == Arm::Control);
    CHECK(draw_arm(100, 1, 100) == Arm::Treatment);
    for (std::uint32_t ab : {10u, 50u, 90u}) {
        int treated = 0;
        for (std::uint32_t pid = 1; pid <= 20000; ++pid)
            treated += draw_arm(ab, 7, pid) == Arm::Treatment;
        // Binomial(20000, p): 5 sigma is under 350 processes.
        CHECK(std::abs(treated - static_cast<int>(ab) * 200) < 350);
    }
    int same = 0;
    for (std::uint32_t pid = 1; pid <= 1000; ++pid) {
        CHECK(draw_arm(50, 3, pid) == draw_arm(50, 3, pid));
        same += draw_arm(50, 3, pid) == draw_arm(50, 4, pid);
    }
    CHECK(same > 400);  // another seed is another draw, not the same one
    CHECK(same < 600);
}

TEST_CASE("arm: settled once, kept across reloads, none without an experiment", "[arm]") {
    Options o;
    o.ab = 50;
    CHECK(settle_arm(Arm::None, false, o, 1) == Arm::None);
    const Arm first = settle_arm(Arm::None, true, o, 12345);
    CHECK(first == draw_arm(50, 0, 12345));
    o.ab = first == Arm::Control ? 100 : 0;  // a reload that would draw the other arm
    o.ab_seed = 99;
    CHECK(settle_arm(first, true, o, 12345) == first);
    CHECK(settle_arm(first, false, o, 12345) == Arm::None);  // the experiment ended

    Options c;
    c.mode_v = static_cast<std::uint32_t>(Mode::Fixed);
    apply_arm(c, Arm::Treatment);
    CHECK(c.mode() == Mode::Fixed);
    apply_arm(c, Arm::None);
    CHECK(c.mode() == Mode::Fixed);
    apply_arm(c, Arm::Control);
    CHECK(c.mode() == Mode::Off);
    CHECK(c.spin_us == 50);  // only the mode: the control is the same shim, not spinning
}

TEST_CASE("arm: ab_period alternates from the drawn arm, on the image's schedule", "[arm]") {
    constexpr std::uint64_t kS = 1'000'000'000;
    for (Arm first : {Arm::Control, Arm::Treatment}) {
        const Arm other = first == Arm::Control ? Arm::Treatment : Arm::Control;
        CHECK(arm_at(first, 100 * kS, 0, 500 * kS) == first);  // no period: one arm
        CHECK(arm_at(first, 100 * kS, 10 * kS, 100 * kS) == first);
        CHECK(arm_at(first, 100 * kS, 10 * kS, 110 * kS - 1) == first);
        CHECK(arm_at(first, 100 * kS, 10 * kS, 110 * kS) == other);
        CHECK(arm_at(first, 100 * kS, 10 * kS, 125 * kS) == first);
        CHECK(arm_at(first, 100 * kS, 10 * kS, 99 * kS) == first);  // a clock read before it
        CHECK(next_switch_ns(first, 100 * kS, 10 * kS, 100 * kS) == 110 * kS);
        CHECK(next_switch_ns(first, 100 * kS, 10 * kS, 119 * kS) == 120 * kS);
        CHECK(next_switch_ns(first, 100 * kS, 10 * kS, 120 * kS) == 130 * kS);
        CHECK(next_switch_ns(first, 100 * kS, 0, 120 * kS) == 0);
    }
    CHECK(arm_at(Arm::None, 0, kS, 5 * kS) == Arm::None);  // no experiment, no switch
    CHECK(next_switch_ns(Arm::None, 0, kS, 5 * kS) == 0);
}

TEST_CASE("options: format_option_into matches format_option for every kind", "[options]") {
    Options o;
    o.spin_us = 4294967u;
    o.ab_seed = 4294967295u;
    REQUIRE(apply_option(*find_option("stats"), "stderr", o) == ParseStatus::Ok);
    for (const OptionSpec& spec : option_table()) {
        char buf[sizeof(TextValue::s)];
        REQUIRE(format_option_into(spec, o, buf, sizeof buf));
        CHECK(std::string(buf) == format_option(spec, o));
    }
    char small[3];
    CHECK_FALSE(format_option_into(*find_option("mode"), o, small, sizeof small));
    CHECK(std::string(small) == "ad");
}
