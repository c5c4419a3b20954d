// The charts of `ab --plot`, `bench matrix --plot` and `stats --compare
// --plot`: gnuplot scripts that
// carry their data in inline data blocks, so that one text is both what
// gnuplot draws the PNG from and, written out as FILE.gp, a script the user
// can restyle and the tests can render into a table (tests/cli/check_chart.py).
//
// A chart is drawn from the same figures the report prints: boxes are the
// quartiles summarize() computed (candlesticks, not gnuplot's own boxplot,
// whose statistics and grouping are its own), bars the ratios the tables show.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cli/util/environment.h"

namespace pipespin::cli {

// A gnuplot single-quoted string: only the quote itself needs doubling.
std::string gnuplot_string(std::string_view s);
// An inline data block named $name holding `rows` (each ending in '\n').
std::string gnuplot_datablock(std::string_view name, std::string_view rows);

// A chart's script is the terminal and output lines, then `data`, the
// title, and `commands`.
struct Chart {
    int width = 900, height = 600;  // pixels of the PNG
    std::string data;               // its inline data blocks (gnuplot_datablock)
    std::string title;              // as it reads; quoted when written
    std::string commands;           // styles, axes and the plot command
};

// True when `path` asks for the script rather than the picture (FILE.gp).
bool chart_is_script(std::string_view path);

// gnuplot, when `path` asks for the picture: its path; nullopt for a script,
// which needs no gnuplot. Throws Failure ("COMMAND: --plot needs gnuplot
// (Debian package ...)") when the picture is asked for and gnuplot is not
// installed, so that a subcommand says so before its runs rather than after.
std::optional<std::string> gnuplot_for(std::string_view command, std::string_view path);

// Writes `chart` to `path`: FILE.gp gets the script, which draws FILE.png
// when run (`gnuplot FILE.gp`); any other name gets the PNG, drawn now by
// `gnuplot` (which may then be nullopt only for a script). `command` names
// the subcommand in errors.
void write_chart(std::string_view command, const Chart& chart, const std::string& path,
                 const std::optional<std::string>& gnuplot, const Environment& env);

}  // namespace pipespin::cli
