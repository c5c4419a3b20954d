// pipespin: run programs with the shim preloaded, and measure what it buys.
// The commands are in commands.cpp's table; parsing, --help and errors in
// util/command.cpp.
#include "cli/commands.h"

int main(int argc, char** argv) {
    return pipespin::cli::run_program(pipespin::cli::pipespin_program(), argc, argv);
}
