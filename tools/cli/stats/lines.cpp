#include "cli/stats/lines.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/json.h"
#include "cli/util/text.h"

namespace pipespin::cli {
namespace {

Counters counters_of(const Json& v) {
    Counters c;
#define PIPESPIN_COUNTER(name, help) c.name = json_count(v, #name);
#include "core/counters.def"
    return c;
}

void add_rusage(Rusage& to, const Rusage& r) {
    to.utime_us += r.utime_us;
    to.stime_us += r.stime_us;
    to.nvcsw += r.nvcsw;
    to.nivcsw += r.nivcsw;
    to.maxrss_kb = std::max(to.maxrss_kb, r.maxrss_kb);
}

void add_record(LoadedStats& out, std::map<std::pair<std::int64_t, std::uint64_t>, std::size_t>& at,
                ProcessRecord r) {
    const auto key = std::make_pair(r.pid, r.start_us);
    auto it = at.find(key);
    if (it == at.end()) {
        at.emplace(key, out.records.size());
        out.records.push_back(std::move(r));
        return;
    }
    ProcessRecord& have = out.records[it->second];
    // The usage is per line: the image's is the sum over its lines.
    Rusage sum = have.rusage;
    add_rusage(sum, r.rusage);
    const bool any = have.has_rusage || r.has_rusage;
    if (r.seq >= have.seq) have = std::move(r);
    have.rusage = sum;
    have.has_rusage = any;
}

WaitHist hist_of(const Json* ns, const Json* log2, std::string_view end) {
    WaitHist h;
    if (ns != nullptr) h.ns = json_count(*ns, end);
    if (const Json* a = log2 != nullptr ? json_member(*log2, end) : nullptr; a && a->is_array()) {
        for (std::size_t b = 0; b < a->size(); ++b)
            if ((*a)[b].is_number())
                h.n[std::min<std::size_t>(b, kWaitBuckets - 1)] +=
                    static_cast<std::uint64_t>((*a)[b].get<double>());
    }
    return h;
}

// later - earlier, for cumulative counters (a counter that went down, which
// only a mixed-up file can show, reads as 0).
std::uint64_t minus(std::uint64_t later, std::uint64_t earlier) {
    return later > earlier ? later - earlier : 0;
}

StatsSnapshot difference(const StatsSnapshot& later, const StatsSnapshot& earlier) {
    StatsSnapshot d;
    for (int k = 0; k < kStatKinds; ++k) {
        for (int dir = 0; dir < kStatDirs; ++dir) {
            const Counters& a = later.c[k][dir];
            const Counters& b = earlier.c[k][dir];
            Counters& c = d.c[k][dir];
#define PIPESPIN_COUNTER(name, help) c.name = minus(a.name, b.name);
#include "core/counters.def"
            c.spin_hits = std::min(c.spin_hits, c.spins);
            for (int e = 0; e < kWaitEnds; ++e) {
                for (int i = 0; i < kWaitBuckets; ++i)
                    d.wait[k][dir][e].n[i] =
                        minus(later.wait[k][dir][e].n[i], earlier.wait[k][dir][e].n[i]);
                d.wait[k][dir][e].ns = minus(later.wait[k][dir][e].ns, earlier.wait[k][dir][e].ns);
            }
        }
    }
    for (int h = 0; h < kViaCount; ++h) {
        d.via[h].spins = minus(later.via[h].spins, earlier.via[h].spins);
        d.via[h].spin_hits = minus(later.via[h].spin_hits, earlier.via[h].spin_hits);
    }
    return d;
}

void add_snapshot(StatsSnapshot& to, const StatsSnapshot& s) {
    for (int k = 0; k < kStatKinds; ++k)
        for (int d = 0; d < kStatDirs; ++d) {
            to.c[k][d] += s.c[k][d];
            for (int e = 0; e < kWaitEnds; ++e) to.wait[k][d][e] += s.wait[k][d][e];
        }
    for (int h = 0; h < kViaCount; ++h) {
        to.via[h].spins += s.via[h].spins;
        to.via[h].spin_hits += s.via[h].spin_hits;
    }
}

// A line of a switchback image: what happened since its previous line,
// added to the period that line was in when it is the same arm (an
// interval line of stats_interval inside a period), else a new period.
void add_period(LoadedStats& out, const ProcessRecord& r) {
    const auto key = std::make_pair(r.pid, r.start_us);
    auto it = out.last_line.find(key);
    const bool first = it == out.last_line.end();
    std::size_t period = SIZE_MAX;
    if (first ? r.seq != 0 : r.seq != it->second.seq + 1) {
        // A line is missing (or out of order): what happened in between
        // cannot be told apart by arm.
        ++out.periods_lost;
    } else {
        const std::uint64_t wall_us = first ? r.wall_us : minus(r.wall_us, it->second.wall_us);
        const StatsSnapshot counters =
            first ? r.counters : difference(r.counters, it->second.counters);
        const std::size_t before = first ? SIZE_MAX : it->second.period;
        if (before != SIZE_MAX && out.periods[before].arm == r.arm) {
            period = before;
            Period& p = out.periods[period];
            p.wall_us += wall_us;
            p.period_us = r.ab_period * 1'000'000;
            add_snapshot(p.counters, counters);
            add_rusage(p.rusage, r.rusage);
            p.has_rusage = p.has_rusage && r.has_rusage;
        } else {
            Period p;
            p.program = r.program;
            p.arm = r.arm;
            p.wall_us = wall_us;
            p.period_us = r.ab_period * 1'000'000;
            p.counters = counters;
            p.has_rusage = r.has_rusage;
            p.rusage = r.rusage;
            period = out.periods.size();
            out.periods.push_back(std::move(p));
        }
    }
    LoadedStats::LastLine& last = out.last_line[key];
    if (first || r.seq > last.seq) last = {r.seq, r.wall_us, r.counters, period};
}

}  // namespace

void add_stats_text(LoadedStats& out, std::string_view text, std::string_view name) {
    std::map<std::pair<std::int64_t, std::uint64_t>, std::size_t> at;
    for (std::size_t i = 0; i < out.records.size(); ++i)
        at.emplace(std::make_pair(out.records[i].pid, out.records[i].start_us), i);
    std::size_t lineno = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        ++lineno;
        if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        ++out.lines;
        std::string why;
        std::optional<Json> parsed = parse_json(line, &why);
        if (parsed &&
            (json_member(*parsed, "pid") == nullptr || json_member(*parsed, "pipe") == nullptr))
            why = "not a stats line";
        if (!parsed || !why.empty()) {
            if (out.bad_lines++ == 0)
                out.first_problem = fmt::format("{}:{}: {}", name, lineno, why);
            continue;
        }
        const Json& v = *parsed;
        ProcessRecord r;
        r.pid = static_cast<std::int64_t>(json_num(v, "pid"));
        r.ppid = static_cast<std::int64_t>(json_num(v, "ppid"));
        r.program = json_str(v, "program", "?");
        r.event = json_str(v, "event", "?");
        r.arm = json_str(v, "arm", "none");
        r.start_us = json_count(v, "start_us");
        r.wall_us = json_count(v, "wall_us");
        r.seq = json_count(v, "seq");
        r.version = static_cast<int>(json_num(v, "v", 1));
        if (const Json* config = json_member(v, "config")) {
            r.ab_period = json_count(*config, "ab_period");
            r.mode = json_str(*config, "mode");
            r.spin_us = json_count(*config, "spin_us");
            r.probe = json_str(*config, "probe");
        }
        if (const Json* ru = json_member(v, "rusage")) {
            r.has_rusage = true;
            r.rusage.utime_us = json_count(*ru, "utime_us");
            r.rusage.stime_us = json_count(*ru, "stime_us");
            r.rusage.nvcsw = json_count(*ru, "nvcsw");
            r.rusage.nivcsw = json_count(*ru, "nivcsw");
            r.rusage.maxrss_kb = json_count(*ru, "maxrss_kb");
        }
        for (int k = 0; k < kStatKinds; ++k) {
            const Json* kind = json_member(v, kind_name(static_cast<StatKind>(k)));
            if (kind == nullptr) continue;
            for (int d = 0; d < kStatDirs; ++d) {
                const Json* dir = json_member(*kind, dir_name(static_cast<StatDir>(d)));
                if (dir == nullptr) continue;
                r.counters.c[k][d] = counters_of(*dir);
                const Json* ns = json_member(*dir, "wait_ns");
                const Json* log2 = json_member(*dir, "wait_log2");
                for (int e = 0; e < kWaitEnds; ++e)
                    r.counters.wait[k][d][e] =
                        hist_of(ns, log2, wait_end_name(static_cast<WaitEnd>(e)));
            }
        }
        if (const Json* via = json_member(v, "via")) {
            for (int h = 0; h < kViaCount; ++h) {
                if (const Json* one = json_member(*via, via_name(static_cast<Via>(h)))) {
                    r.counters.via[h].spins = json_count(*one, "spins");
                    r.counters.via[h].spin_hits = json_count(*one, "spin_hits");
                }
            }
        }
        if (r.switchback()) add_period(out, r);
        add_record(out, at, std::move(r));
    }
}

LoadedStats load_stats(const std::vector<std::string>& files) {
    LoadedStats out;
    for (const std::string& f : files) {
        std::ifstream in(f, std::ios::binary);
        if (!in) throw Failure(kExitFailure, fmt::format("stats: cannot read '{}'", printable(f)));
        std::stringstream ss;
        ss << in.rdbuf();
        add_stats_text(out, ss.str(), f);
    }
    return out;
}

namespace {
void add_to(StatsGroup& g, const ProcessRecord& r) {
    ++g.processes;
    if (r.event == "interval") ++g.running;
    g.wall_us += r.wall_us;
    add_rusage(g.rusage, r.rusage);
    add_snapshot(g.counters, r.counters);
    if (r.mode == "fixed")
        for (int d = 0; d < kStatDirs; ++d) g.fixed[d] += r.counters.total(static_cast<StatDir>(d));
}
}  // namespace

std::vector<StatsGroup> group_stats(const std::vector<ProcessRecord>& records) {
    std::map<std::pair<std::string, std::string>, StatsGroup> groups;
    for (const ProcessRecord& r : records) {
        const std::string arm = table_arm(r);
        StatsGroup& g = groups[{r.program, arm}];
        g.program = r.program;
        g.arm = arm;
        add_to(g, r);
    }
    std::vector<StatsGroup> out;
    for (auto& [key, g] : groups) out.push_back(std::move(g));
    return out;
}

StatsGroup total_of(const std::vector<ProcessRecord>& records, std::string_view arm) {
    StatsGroup g;
    g.program = "(all)";
    g.arm = arm.empty() ? "(all)" : std::string(arm);
    for (const ProcessRecord& r : records)
        if (arm.empty() || table_arm(r) == arm) add_to(g, r);
    return g;
}

std::string table_arm(const ProcessRecord& r) {
    return r.switchback() ? "switchback" : r.arm;
}

std::vector<FixedMisses> fixed_misses(const StatsGroup& g) {
    std::vector<FixedMisses> out;
    for (int d = 0; d < kStatDirs; ++d) {
        const Counters& t = g.fixed[d];
        if (!fixed_mostly_missed(t.spins, t.spin_hits)) continue;
        out.push_back({static_cast<StatDir>(d), t.spins, t.spin_hits});
    }
    return out;
}

std::string fixed_misses_text(const FixedMisses& m) {
    return fmt::format(
        "mode fixed: {} of {} spins missed ({}%): the peer answers later than spin_us, or "
        "shares this CPU; adaptive mode would have stopped spinning",
        m.missed(), m.spins, m.percent());
}

Json fixed_misses_json(const StatsGroup& g) {
    Json out = Json::array();
    for (const FixedMisses& m : fixed_misses(g))
        out.push_back({{"direction", dir_name(m.dir)},
                       {"spins", m.spins},
                       {"spin_hits", m.spin_hits},
                       {"missed", m.missed()},
                       {"percent", m.percent()},
                       {"text", fixed_misses_text(m)}});
    return out;
}

void total_waits(const StatsSnapshot& s, WaitHist (&out)[kWaitEnds]) {
    for (WaitHist& h : out) h = WaitHist{};
    for (int k = 0; k < kStatKinds; ++k)
        for (int d = 0; d < kStatDirs; ++d)
            for (int e = 0; e < kWaitEnds; ++e) out[e] += s.wait[k][d][e];
}

Json waits_json(const WaitHist (&w)[kWaitEnds]) {
    Json out = Json::object();
    for (int e = 0; e < kWaitEnds; ++e)
        out[std::string(wait_end_name(static_cast<WaitEnd>(e)))] = {
            {"ns", w[e].ns},
            {"log2", std::vector<std::uint64_t>(std::begin(w[e].n), std::end(w[e].n))}};
    return out;
}

Json rusage_json(const Rusage& r) {
    return {{"utime_us", r.utime_us},
            {"stime_us", r.stime_us},
            {"nvcsw", r.nvcsw},
            {"nivcsw", r.nivcsw},
            {"maxrss_kb", r.maxrss_kb}};
}

Json counters_json(const Counters& c) {
    Json out = Json::object();
#define PIPESPIN_COUNTER(name, help) out[#name] = c.name;
#define PIPESPIN_DERIVED_COUNTER(name, expr, help) out[#name] = c.name();
#include "core/counters.def"
    return out;
}

Json snapshot_json(const StatsSnapshot& s) {
    Json out = Json::object();
    for (int k = 0; k < kStatKinds; ++k) {
        Json kind = Json::object();
        for (int d = 0; d < kStatDirs; ++d)
            kind[std::string(dir_name(static_cast<StatDir>(d)))] = counters_json(s.c[k][d]);
        out[std::string(kind_name(static_cast<StatKind>(k)))] = std::move(kind);
    }
    out["total"] = counters_json(s.total());
    return out;
}

Json via_json(const StatsSnapshot& s) {
    Json out = Json::object();
    for (int h = 0; h < kViaCount; ++h)
        out[std::string(via_name(static_cast<Via>(h)))] = {{"spins", s.via[h].spins},
                                                           {"spin_hits", s.via[h].spin_hits}};
    return out;
}

}  // namespace pipespin::cli
