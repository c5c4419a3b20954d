// matrix --plot: grouped bars of the wall ratio (no shim / arm) per
// case and arm, on a log scale, each bar labelled with its value. The bars
// are the wall ratios of the report's table, in its order; the footprint,
// which has no time, is left out.
#include <algorithm>

#include <fmt/format.h>

#include "bench/matrix/matrix.h"

namespace pipespin::bench::matrix {

Chart matrix_chart(const Report& rep) {
    double lo = 1, hi = 1;
    std::string rows = "case";
    for (std::size_t i : rep.arms) rows += fmt::format(" \"{}\"", kArms[i].name);
    rows += "\n";
    for (const CaseRun& r : rep.runs) {
        if (!times_runs(r.spec)) continue;
        rows += r.spec.id;
        for (std::size_t i : rep.arms) {
            const double ratio = r.arms[i].wall_ratio;
            rows += fmt::format(" {:.4f}", ratio);
            if (ratio > 0) {
                lo = std::min(lo, ratio);
                hi = std::max(hi, ratio);
            }
        }
        rows += "\n";
    }
    const std::size_t arms = rep.arms.size();
    return {
        .width = 1400,
        .data = gnuplot_datablock("ratios", rows),
        .title = fmt::format(
            "pipespin-bench matrix: wall-time speed-up per case (no shim / arm), median of {} "
            "round(s){}",
            rep.args->rounds, rep.args->quick ? " (--quick)" : ""),
        .commands = fmt::format(
            "set style data histograms\n"
            "set style histogram clustered gap 1\n"
            "set style fill solid 0.85 border -1\n"
            "set logscale y 2\n"
            "set ytics (0.0625, 0.125, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 8, 16, 32, 64, 128)\n"
            "set yrange [{:g}:{:g}]\n"
            "set ylabel 'no-shim wall / arm wall (log scale; above 1 = faster)'\n"
            "set grid ytics\n"
            "set key below center horizontal autotitle columnheader\n"
            "set xtics nomirror rotate by -20\n"
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 front\n"
            "plot for [i=2:{}] $ratios using i:xtic(1), \\\n"
            "     for [i=2:{}] $ratios using ($0 + (i - {:.1f}) / {:.1f}):i:(sprintf('%.2f', "
            "column(i))) with labels font ',7' offset 0,0.6 notitle\n",
            lo / 1.6, hi * 1.6, arms + 1, arms + 1,
            // Bar i of a cluster of `arms` with a gap of 1 sits at (i - centre) / (arms + 1);
            // written with a decimal point, or gnuplot divides integers.
            2 + (static_cast<double>(arms) - 1) / 2, static_cast<double>(arms) + 1),
    };
}

}  // namespace pipespin::bench::matrix
