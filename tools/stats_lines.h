// Reading the shim's statistics lines back (PIPESPIN_STATS files), for
// `pipespin stats` and `pipespin ab`.
//
// A process image (a pid and its start) may have written several lines:
// interval lines, then its exit or exec line. Each carries cumulative
// counters, so only the last one (highest seq) of each image counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/stats.h"

namespace pipespin::cli {

struct ProcessRecord {
    std::int64_t pid = 0, ppid = 0;
    std::string program, event, arm;
    std::uint64_t start_us = 0, wall_us = 0, seq = 0;
    StatsSnapshot counters;
};

struct LoadedStats {
    std::vector<ProcessRecord> records;  // one per process image, in file order
    std::size_t lines = 0;               // lines read
    std::size_t bad_lines = 0;           // not JSON, or not a stats line
    std::string first_problem;           // "FILE:LINE: why", for the warning
};

// Reads every file (throws Failure when one cannot be read).
LoadedStats load_stats(const std::vector<std::string>& files);
// The same from text already in memory (`name` for messages).
void add_stats_text(LoadedStats& out, std::string_view text, std::string_view name);

// Per program and arm.
struct StatsGroup {
    std::string program, arm;
    std::size_t processes = 0;
    std::size_t running = 0;  // whose last line is an interval line
    std::uint64_t wall_us = 0;
    StatsSnapshot counters;
};
std::vector<StatsGroup> group_stats(const std::vector<ProcessRecord>& records);
// Everything of one arm ("" for all).
StatsGroup total_of(const std::vector<ProcessRecord>& records, std::string_view arm = "");

// One set of counters as a JSON object (the shim's field names).
std::string counters_json(const Counters& c);
// A whole snapshot: {"pipe":{"read":{...},...},"fifo":{...},"total":{...}}.
std::string snapshot_json(const StatsSnapshot& s);
// The spins per hook family, as in the shim's line: {"io":{"spins":N,"spin_hits":N},...},
// every family in the order of Via.
std::string via_json(const StatsSnapshot& s);

}  // namespace pipespin::cli
