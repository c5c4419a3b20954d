// coverage: the verdict on each program and the Markdown table.
#include <sys/utsname.h>

#include <fmt/format.h>

#include "bench/coverage/coverage.h"
#include "cli/util/statistics.h"
#include "cli/util/text.h"
#include "platform/sys.h"

namespace pipespin::bench::coverage {
namespace {

// What each Role is, in the order of the enum.
constexpr std::string_view kRoleText[] = {
    "relay: consumer and producer",
    "consumer of a paced producer",
    "its own pipes",
};

std::string_view role_text(Role r) {
    return kRoleText[static_cast<std::size_t>(r)];
}

struct Verdict {
    std::string engaged, output, no_shim, shim, speedup;
    bool ok = true;  // engaged and identical (or did not run)
};

std::string ms_text(double us) {
    return us >= 1e6 ? fmt::format("{:.2f} s", us / 1e6) : fmt::format("{:.1f} ms", us / 1e3);
}

Verdict judge(const Row& row) {
    Verdict v;
    if (!row.ran) return v;
    ShimCounters total;
    for (const Sample& s : row.arms[1]) total.add(s.shim);
    std::vector<std::string> hooks;
    for (const auto& [hook, n] : total.spins_by_hook)
        if (n > 0) hooks.push_back(fmt::format("{} {}", hook, n));
    const bool engaged = total.spins > 0;
    v.engaged = engaged ? fmt::format("yes: {} spins ({})", total.spins, fmt::join(hooks, ", "))
                        : fmt::format("NO ({} processes, {} waits)", total.processes, total.waits);
    bool same = true;
    const std::string& first = row.arms[0].front().output;
    for (const auto& arm : row.arms)
        for (const Sample& s : arm) same = same && s.output == first;
    v.output = same ? (row.spec.role == Role::Own ? "identical (timings masked)" : "identical")
                    : "DIFFERENT";
    std::vector<double> walls[2];
    for (int a = 0; a < 2; ++a)
        for (const Sample& s : row.arms[a]) walls[a].push_back(s.wall_us);
    const double base = summarize(walls[0]).median, with = summarize(walls[1]).median;
    v.no_shim = ms_text(base);
    v.shim = ms_text(with);
    v.speedup = with > 0 ? fmt::format("{:.2f}x", base / with) : "?";
    v.ok = engaged && same;
    return v;
}

// A table cell: '|' would end it.
std::string cell(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '|') out += '\\';
        out += c == '\n' ? ' ' : c;
    }
    return out;
}

}  // namespace

std::string markdown(const std::vector<Row>& rows, const std::string& command,
                     const CoverageArgs& a, const std::string& library) {
    utsname u{};
    ::uname(&u);
    std::string out = fmt::format(
        "Produced by `{}` ({} rounds, no shim and shim interleaved; shim mode {}; library "
        "{}; kernel {}, {} usable CPUs).\n\n",
        command, a.rounds, name_of(a.mode), library, u.release, sys::usable_cpus());
    out +=
        "| program | command | role | linked | engaged (spins, by hook) | output | no shim | "
        "shim | speedup |\n|---|---|---|---|---|---|---:|---:|---:|\n";
    for (const Row& r : rows) {
        const Verdict v = judge(r);
        out += fmt::format("| {} | `{}` | {} | {} | {} | {} | {} | {} | {} |\n", r.spec.id,
                           cell(shell_join(r.spec.argv)), role_text(r.spec.role), cell(r.status),
                           v.engaged, v.output, v.no_shim, v.shim, v.speedup);
    }
    return out;
}

bool row_ok(const Row& row) {
    return judge(row).ok;
}

}  // namespace pipespin::bench::coverage
