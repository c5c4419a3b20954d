// Start-up, configuration, warning and exit-report messages. Never called on
// the hot path. The spdlog logger is created on the first message, so a
// process that has nothing to say pays nothing for it. Messages read
// "pipespin: <level>: <text>" on stderr; warnings are capped per process.
#pragma once

#include <string_view>

#include "core/options.h"

namespace pipespin::log {

void set_level(LogLevel level) noexcept;
LogLevel level() noexcept;
bool enabled(LogLevel level) noexcept;

void write(LogLevel level, std::string_view message) noexcept;
inline void warn(std::string_view m) noexcept { write(LogLevel::Warn, m); }
inline void info(std::string_view m) noexcept { write(LogLevel::Info, m); }
inline void error(std::string_view m) noexcept { write(LogLevel::Error, m); }

}  // namespace pipespin::log
