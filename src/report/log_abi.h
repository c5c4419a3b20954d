// The seam between libpipespin.so and its message library,
// libpipespin-log.so (src/report/sink.cpp), which the shim dlopens from its
// own directory on its first message. The two are built together but loaded
// separately, so this header is their whole contract, used by both sides.
//
// Version 1: the library exports exactly one function, PIPESPIN_LOG_ENTRY
// (its name carries the version), of type LogFn: it formats one line
// "pipespin: <level>: <message>", writes it to fd with one write(2), and
// returns 0, or -1 if nothing could be written (the shim then writes the
// line itself). It never throws. An incompatible change gets a new name
// (pipespin_log_fd_v2): a shim that does not find the name it knows falls
// back to its own writer, so a mismatched pair never calls through the
// wrong type.
//
// Plain preprocessor definitions first: the library's linker version script
// (sink.map.in) is generated from this file.
#pragma once

#define PIPESPIN_LOG_ABI_VERSION 1
#define PIPESPIN_LOG_ENTRY pipespin_log_fd_v1

#define PIPESPIN_LOG_STR2(x) #x
#define PIPESPIN_LOG_STR(x) PIPESPIN_LOG_STR2(x)

#ifdef __cplusplus
namespace pipespin::log_abi {

// The entry point's name, for dlsym.
inline constexpr const char* kEntryName = PIPESPIN_LOG_STR(PIPESPIN_LOG_ENTRY);
inline constexpr int kVersion = PIPESPIN_LOG_ABI_VERSION;

// Levels as the entry point takes them (pipespin::LogLevel has the same
// values; report.cpp checks it). 0 (off) is never passed.
inline constexpr int kError = 1;
inline constexpr int kWarn = 2;
inline constexpr int kInfo = 3;
inline constexpr int kDebug = 4;

using LogFn = int (*)(int fd, int level, const char* message) noexcept;

}  // namespace pipespin::log_abi
#endif
