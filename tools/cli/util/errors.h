// How a command of pipespin or pipespin-bench reports a problem, and the
// exit statuses it means.
//
// A command throws UsageError (the user asked for something that does not
// parse: exit 2) or Failure (a valid request that could not be carried out:
// its own exit status); run_program() (command.h) prints either as
// "pipespin: ...", so commands never print their own error prefix, and
// nothing but main() ends the process.
#pragma once

#include <stdexcept>
#include <string>

namespace pipespin::cli {

// Exit statuses of pipespin itself; `run` otherwise exits with its command's.
// 125..127 follow env(1), nice(1) and timeout(1) so that scripts can tell
// "pipespin could not set up" from "the command could not be run" from
// "the command ran and failed".
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;      // e.g. a benchmark worker failed
inline constexpr int kExitUsage = 2;        // bad command, flag or value
inline constexpr int kExitSetup = 125;      // libpipespin.so not found or unusable
inline constexpr int kExitCannotRun = 126;  // CMD found but could not be executed
inline constexpr int kExitNotFound = 127;   // CMD not found

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Failure : std::runtime_error {
    Failure(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
    int exit_code;
};

}  // namespace pipespin::cli
