#include "cli/util/plot.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/spawn.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"

namespace pipespin::cli {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kScriptSuffix = ".gp";

// The PNG a script draws: FILE.gp draws FILE.png.
std::string png_of(const std::string& path) {
    return chart_is_script(path) ? path.substr(0, path.size() - kScriptSuffix.size()) + ".png"
                                 : path;
}

std::string script_text(const Chart& chart, const std::string& png) {
    return fmt::format(
        "set terminal pngcairo size {},{} noenhanced font 'sans,10'\n"
        "set output {}\n{}set title {}\n{}",
        chart.width, chart.height, gnuplot_string(png), chart.data, gnuplot_string(chart.title),
        chart.commands);
}

}  // namespace

std::string gnuplot_string(std::string_view s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

std::string gnuplot_datablock(std::string_view name, std::string_view rows) {
    return fmt::format("${} << EOD\n{}EOD\n", name, rows);
}

bool chart_is_script(std::string_view path) {
    return path.size() > kScriptSuffix.size() && path.ends_with(kScriptSuffix);
}

std::optional<std::string> gnuplot_for(std::string_view command, std::string_view path) {
    if (chart_is_script(path)) return std::nullopt;
    std::optional<std::string> gnuplot = resolve_command("gnuplot");
    if (!gnuplot)
        throw Failure(kExitFailure, fmt::format("{}: --plot needs gnuplot (Debian package {})",
                                                command, package_of("gnuplot")));
    return gnuplot;
}

void write_chart(std::string_view command, const Chart& chart, const std::string& path,
                 const std::optional<std::string>& gnuplot, const Environment& env) {
    const std::string png = png_of(path);
    const std::string script = script_text(chart, png);
    if (chart_is_script(path)) {
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"),
                                                          std::fclose);
        if (!f || std::fputs(script.c_str(), f.get()) < 0 || std::fflush(f.get()) != 0)
            throw Failure(kExitFailure, fmt::format("{}: cannot write {}: {}", command,
                                                    printable(path), std::strerror(errno)));
        return;
    }
    if (!gnuplot) throw std::logic_error("write_chart: a PNG without gnuplot");
    std::error_code ec;
    fs::remove(png, ec);  // so that its existence afterwards is gnuplot's doing
    // A script file, not commands on stdin: gnuplot stops at the first error
    // and names its line.
    const Measured m = spawn_measure(*gnuplot, {"gnuplot", "/dev/stdin"}, env,
                                     {.capture_stderr = true, .input = script});
    if (!exited_ok(m.wait_status) || fs::file_size(png, ec) == 0 || ec)
        throw Failure(kExitFailure,
                      fmt::format("{}: gnuplot {} and did not write {}: {}", command,
                                  describe_wait_status(m.wait_status), png, printable(m.err)));
}

}  // namespace pipespin::cli
