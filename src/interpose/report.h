// Messages from the shim: start-up warnings, the exit summary, debug lines.
// Never called on the hot path.
//
// The spdlog sink lives in libpipespin-log.so beside libpipespin.so and is
// loaded on the first message that passes the level, so a process with
// nothing to say never pays for it. If it cannot be loaded, messages go to
// stderr with a plain write(2) in the same format. Warnings are capped per
// process. Lines read "pipespin: <level>: <text>".
#pragma once

#include "core/options.h"

namespace pipespin::report {

void set_level(LogLevel level) noexcept;
bool enabled(LogLevel level) noexcept;
void write(LogLevel level, const char* message) noexcept;

}  // namespace pipespin::report
