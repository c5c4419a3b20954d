// Messages from the shim: start-up warnings, the exit summary, debug lines.
// Never called on the hot path.
//
// The spdlog sink lives in libpipespin-log.so beside libpipespin.so and is
// loaded on the first message that passes the level, so a process with
// nothing to say never pays for it. If it cannot be loaded, messages go out
// with a plain write(2) in the same format. Warnings are capped per
// process. Lines read "pipespin[<program>:<pid>]: <level>: <text>", one
// write each (report/log_abi.h), the program glibc's
// program_invocation_short_name; on a stderr that is the journal's
// (JOURNAL_STREAM names its device and inode: looked at per message, never
// at start-up) they begin with sd-daemon's priority prefix, "<4>" for a
// warning.
//
// Destination (log_file): stderr, or a file each message is appended to. The
// file is opened for each message (O_APPEND | O_CREAT | O_NOFOLLOW |
// O_CLOEXEC, mode 0600) and closed again, so the shim keeps no fd open in the
// host program that the program could close, reuse or inherit. If it cannot
// be opened, the message goes to stderr, with one warning saying why.
// log_file=syslog (or journal, or /dev/log; syslog:PATH for another
// socket): each message is one datagram to the syslog socket, sent by the
// message library (opened and closed per message too); from inside a
// program's call (a reload), or when the socket takes nothing, it goes to
// stderr instead (with one warning).
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
