// Reading the shim's statistics lines back (PIPESPIN_STATS files), for
// `pipespin stats` and `pipespin ab`.
//
// A process image (a pid and its start) may have written several lines:
// interval lines, then its exit or exec line. Each carries cumulative
// counters, so only the last one (highest seq) of each image counts; the
// resource usage (version 2) is per line, so it is summed over them. Lines
// of versions 1 and 2 are read alike (docs/stats.md); what version 1 does
// not carry reads as absent.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/util/json.h"
#include "core/stats.h"

namespace pipespin::cli {

struct ProcessRecord {
    std::int64_t pid = 0, ppid = 0;
    std::string program, event, arm;
    std::uint64_t start_us = 0, wall_us = 0, seq = 0;
    int version = 1;
    std::uint64_t ab_period = 0;  // config.ab_period: a switchback process when > 0 and in an arm
    std::string mode, probe;      // config.mode, config.probe ("" when absent)
    std::uint64_t spin_us = 0;    // config.spin_us
    StatsSnapshot counters;
    bool has_rusage = false;  // version 2
    Rusage rusage;            // summed over the image's lines; maxrss_kb the largest
    bool switchback() const { return ab_period > 0 && arm != "none"; }
};

// What happened during one period of a switchback process (ab_period): the
// difference between two consecutive lines of its image, in the arm the
// later one says it covered; the first line's period starts at the image's
// start.
//
// The pieces between an image's consecutive lines in one arm (stats_interval
// lines inside a period) are one period: the arms alternate at each switch.
// A period shorter than half of ab_period (the stretch between the last
// switch and the exit or exec, a child forked late in a period) is partial:
// its figures are dominated by what the process did around its start or
// end, so `stats --compare` leaves it out (and says how many).
struct Period {
    std::string program, arm;
    std::uint64_t wall_us = 0;
    std::uint64_t period_us = 0;  // ab_period of its last line
    StatsSnapshot counters;
    bool has_rusage = false;
    Rusage rusage;
    bool partial() const { return wall_us * 2 < period_us; }
};

struct LoadedStats {
    std::vector<ProcessRecord> records;  // one per process image, in file order
    std::vector<Period> periods;         // of switchback processes, in file order
    std::size_t periods_lost = 0;        // a line missing in between: not attributable
    std::size_t lines = 0;               // lines read
    std::size_t bad_lines = 0;           // not JSON, or not a stats line
    std::string first_problem;           // "FILE:LINE: why", for the warning
    // The last line read of each switchback image (pid, start), for the next
    // period: files are read one after the other.
    struct LastLine {
        std::uint64_t seq = 0, wall_us = 0;
        StatsSnapshot counters;
        std::size_t period = SIZE_MAX;  // its period in `periods`, SIZE_MAX: none
    };
    std::map<std::pair<std::int64_t, std::uint64_t>, LastLine> last_line;
};

// Reads every file (throws Failure when one cannot be read).
LoadedStats load_stats(const std::vector<std::string>& files);
// The same from text already in memory (`name` for messages).
void add_stats_text(LoadedStats& out, std::string_view text, std::string_view name);

// Per program and arm. A switchback process (whose image ran in both arms)
// counts under the arm "switchback".
struct StatsGroup {
    std::string program, arm;
    std::size_t processes = 0;
    std::size_t running = 0;  // whose last line is an interval line
    std::uint64_t wall_us = 0;
    StatsSnapshot counters;
    Rusage rusage;  // summed (maxrss_kb: the largest)
    // Per direction, both kinds: the counters of the processes whose
    // config.mode is fixed (fixed_misses()).
    Counters fixed[kStatDirs];
};
std::vector<StatsGroup> group_stats(const std::vector<ProcessRecord>& records);
// Everything of one arm ("" for all).
StatsGroup total_of(const std::vector<ProcessRecord>& records, std::string_view arm = "");

// Mode fixed spins on every wait. Where its spins mostly missed, it paid
// CPU (and, with both ends on one CPU, time) for nothing, which adaptive
// mode would not have: the shim's exit report says so per process, and
// `pipespin stats` per group, by the same rule (fixed_mostly_missed(),
// core/stats.h) over the group's processes in mode fixed. The lines are
// per process, kind and direction, not per fd.
struct FixedMisses {
    StatDir dir;
    std::uint64_t spins = 0, spin_hits = 0;
    std::uint64_t missed() const { return spins - spin_hits; }
    std::uint64_t percent() const { return 100 * missed() / spins; }  // rounded down, as the shim
};
std::vector<FixedMisses> fixed_misses(const StatsGroup& g);
// "mode fixed: N of M spins missed (P%): ...; adaptive mode would have
// stopped spinning", the exit report's words.
std::string fixed_misses_text(const FixedMisses& m);
// [{"direction":"read","spins":M,"spin_hits":H,"missed":N,"percent":P,"text":"..."},...]
Json fixed_misses_json(const StatsGroup& g);

// One set of counters as a JSON object (the shim's field names).
Json counters_json(const Counters& c);
// A whole snapshot: {"pipe":{"read":{...},...},"fifo":{...},"total":{...}}.
Json snapshot_json(const StatsSnapshot& s);
// The spins per hook family, as in the shim's line: {"io":{"spins":N,"spin_hits":N},...},
// every family in the order of Via.
Json via_json(const StatsSnapshot& s);
// The waits of a snapshot summed over fd kinds and directions, per end.
void total_waits(const StatsSnapshot& s, WaitHist (&out)[kWaitEnds]);
// {"hit":{"ns":N,"log2":[...]},"miss":...,"plain":...}: every bucket.
Json waits_json(const WaitHist (&w)[kWaitEnds]);
// {"utime_us":N,...}, the line's names.
Json rusage_json(const Rusage& r);
// The arm a record counts under in the table: its own, or "switchback".
std::string table_arm(const ProcessRecord& r);

}  // namespace pipespin::cli
