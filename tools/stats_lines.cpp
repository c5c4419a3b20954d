#include "stats_lines.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "cli.h"
#include "common.h"
#include "json_reader.h"

namespace pipespin::cli {
namespace {

Counters counters_of(const JsonValue& v) {
    Counters c;
    auto u = [&](std::string_view k) { return static_cast<std::uint64_t>(v.num(k)); };
    c.calls = u("calls");
    c.bytes = u("bytes");
    c.waits = u("waits");
    c.spins = u("spins");
    c.spin_hits = u("spin_hits");
    c.spin_ns = u("spin_ns");
    c.sleep_ns = u("sleep_ns");
    return c;
}

void add_record(LoadedStats& out, std::map<std::pair<std::int64_t, std::uint64_t>, std::size_t>& at,
                ProcessRecord r) {
    const auto key = std::make_pair(r.pid, r.start_us);
    auto it = at.find(key);
    if (it == at.end()) {
        at.emplace(key, out.records.size());
        out.records.push_back(std::move(r));
    } else if (r.seq >= out.records[it->second].seq) {
        out.records[it->second] = std::move(r);
    }
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
        std::optional<JsonValue> v = parse_json(line, &why);
        if (v && (v->get("pid") == nullptr || v->get("pipe") == nullptr)) why = "not a stats line";
        if (!v || !why.empty()) {
            if (out.bad_lines++ == 0)
                out.first_problem = fmt::format("{}:{}: {}", name, lineno, why);
            continue;
        }
        ProcessRecord r;
        r.pid = static_cast<std::int64_t>(v->num("pid"));
        r.ppid = static_cast<std::int64_t>(v->num("ppid"));
        r.program = v->str("program", "?");
        r.event = v->str("event", "?");
        r.arm = v->str("arm", "none");
        r.start_us = static_cast<std::uint64_t>(v->num("start_us"));
        r.wall_us = static_cast<std::uint64_t>(v->num("wall_us"));
        r.seq = static_cast<std::uint64_t>(v->num("seq"));
        for (int k = 0; k < kStatKinds; ++k) {
            const JsonValue* kind = v->get(kind_name(static_cast<StatKind>(k)));
            if (kind == nullptr) continue;
            for (int d = 0; d < kStatDirs; ++d)
                if (const JsonValue* dir = kind->get(dir_name(static_cast<StatDir>(d))))
                    r.counters.c[k][d] = counters_of(*dir);
        }
        if (const JsonValue* via = v->get("via")) {
            for (int h = 0; h < kViaCount; ++h) {
                if (const JsonValue* one = via->get(via_name(static_cast<Via>(h)))) {
                    r.counters.via[h].spins = static_cast<std::uint64_t>(one->num("spins"));
                    r.counters.via[h].spin_hits = static_cast<std::uint64_t>(one->num("spin_hits"));
                }
            }
        }
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
    for (int k = 0; k < kStatKinds; ++k)
        for (int d = 0; d < kStatDirs; ++d) g.counters.c[k][d] += r.counters.c[k][d];
    for (int h = 0; h < kViaCount; ++h) {
        g.counters.via[h].spins += r.counters.via[h].spins;
        g.counters.via[h].spin_hits += r.counters.via[h].spin_hits;
    }
}
}  // namespace

std::vector<StatsGroup> group_stats(const std::vector<ProcessRecord>& records) {
    std::map<std::pair<std::string, std::string>, StatsGroup> groups;
    for (const ProcessRecord& r : records) {
        StatsGroup& g = groups[{r.program, r.arm}];
        g.program = r.program;
        g.arm = r.arm;
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
        if (arm.empty() || r.arm == arm) add_to(g, r);
    return g;
}

std::string counters_json(const Counters& c) {
    return fmt::format(
        "{{\"calls\":{},\"waits\":{},\"spins\":{},\"spin_hits\":{},\"spin_misses\":{},"
        "\"spin_ns\":{},\"sleep_ns\":{},\"bytes\":{}}}",
        c.calls, c.waits, c.spins, c.spin_hits, c.spin_misses(), c.spin_ns, c.sleep_ns, c.bytes);
}

std::string snapshot_json(const StatsSnapshot& s) {
    std::string out = "{";
    for (int k = 0; k < kStatKinds; ++k) {
        out += fmt::format("\"{}\":{{", kind_name(static_cast<StatKind>(k)));
        for (int d = 0; d < kStatDirs; ++d)
            out += fmt::format("{}\"{}\":{}", d ? "," : "", dir_name(static_cast<StatDir>(d)),
                               counters_json(s.c[k][d]));
        out += "},";
    }
    out += fmt::format("\"total\":{}}}", counters_json(s.total()));
    return out;
}

std::string via_json(const StatsSnapshot& s) {
    std::string out = "{";
    for (int h = 0; h < kViaCount; ++h)
        out += fmt::format("{}\"{}\":{{\"spins\":{},\"spin_hits\":{}}}", h ? "," : "",
                           via_name(static_cast<Via>(h)), s.via[h].spins, s.via[h].spin_hits);
    out += "}";
    return out;
}

}  // namespace pipespin::cli
