// Messages from the shim: start-up warnings, the exit summary, debug lines.
// Never called on the hot path.
//
// The spdlog sink lives in libpipespin-log.so beside libpipespin.so and is
// loaded on the first message that passes the level, so a process with
// nothing to say never pays for it. If it cannot be loaded, messages go out
// with a plain write(2) in the same format. Warnings are capped per
// process. Lines read "pipespin: <level>: <text>".
//
// Destination (log_file): stderr, or a file each message is appended to. The
// file is opened for each message (O_APPEND | O_CREAT | O_NOFOLLOW |
// O_CLOEXEC, mode 0600) and closed again, so the shim keeps no fd open in the
// host program that the program could close, reuse or inherit. If it cannot
// be opened, the message goes to stderr, with one warning saying why.
#pragma once

#include <string_view>

#include "core/options.h"

namespace pipespin::report {

void set_level(LogLevel level) noexcept;
bool enabled(LogLevel level) noexcept;
// "stderr" or "" for stderr, else a path. Safe against concurrent write().
void set_log_file(std::string_view path) noexcept;
// may_load: false from inside a program's call (a live reload): the line is
// written with a raw write(2), never through the sink (no dlopen, no lock,
// no cancellation point there).
void write(LogLevel level, const char* message, bool may_load = true) noexcept;

// The program closed its fd 2 (close, close_range, closefrom): whatever
// takes that number next (a file it opens) is not its stderr, and nothing
// of the shim's is written there from now on, in this process and the
// children it forks (a new program, after exec, has a stderr of its own
// again). Messages meant for stderr are dropped; a log file or statistics
// file named by path still gets them.
void release_stderr() noexcept;
bool stderr_released() noexcept;

}  // namespace pipespin::report
