// The seam between libpipespin.so and its message library,
// libpipespin-log.so (src/report/sink.cpp), which the shim dlopens from its
// own directory on its first message. The two are built together but loaded
// separately, so this header is their whole contract, used by both sides.
//
// Version 1: the library exports exactly one function, PIPESPIN_LOG_ENTRY
// (its name carries the version), of type LogFn: it formats one line
// "pipespin: <level>: <message>" (<level>: the level's label in
// PIPESPIN_LOG_LEVELS), writes it to fd with one write(2), and
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

// The levels, one row each: identifier, the value the entry point takes,
// the word that selects it (PIPESPIN_LOG=warn, the option table's choices),
// and the word a message line carries ("pipespin: warning: ..."). Level
// values are the row's index; 0 (off) is never passed.
#define PIPESPIN_LOG_LEVELS(X)    \
    X(Off, 0, "off", "off")       \
    X(Error, 1, "error", "error") \
    X(Warn, 2, "warn", "warning") \
    X(Info, 3, "info", "info")    \
    X(Debug, 4, "debug", "debug")

#define PIPESPIN_LOG_STR2(x) #x
#define PIPESPIN_LOG_STR(x) PIPESPIN_LOG_STR2(x)

#ifdef __cplusplus
namespace pipespin::log_abi {

// The entry point's name, for dlsym.
inline constexpr const char* kEntryName = PIPESPIN_LOG_STR(PIPESPIN_LOG_ENTRY);
inline constexpr int kVersion = PIPESPIN_LOG_ABI_VERSION;

// Levels as the entry point takes them (pipespin::LogLevel is made from the
// same list): kError, kWarn, ...
#define PIPESPIN_LOG_LEVEL_VALUE(id, value, word, label) inline constexpr int k##id = value;
PIPESPIN_LOG_LEVELS(PIPESPIN_LOG_LEVEL_VALUE)
#undef PIPESPIN_LOG_LEVEL_VALUE

// The word a message line carries for each level, indexed by its value.
inline constexpr const char* kLabels[] = {
#define PIPESPIN_LOG_LEVEL_LABEL(id, value, word, label) label,
    PIPESPIN_LOG_LEVELS(PIPESPIN_LOG_LEVEL_LABEL)
#undef PIPESPIN_LOG_LEVEL_LABEL
};
inline constexpr int kLevels = static_cast<int>(sizeof kLabels / sizeof kLabels[0]);
static_assert(
    [] {
        int i = 0;
#define PIPESPIN_LOG_LEVEL_AT(id, value, word, label) \
    if (value != i++) return false;
        PIPESPIN_LOG_LEVELS(PIPESPIN_LOG_LEVEL_AT)
#undef PIPESPIN_LOG_LEVEL_AT
        return true;
    }(),
    "a level's value is its row's index");

using LogFn = int (*)(int fd, int level, const char* message) noexcept;

}  // namespace pipespin::log_abi
#endif
