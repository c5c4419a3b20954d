// The seam between libpipespin.so and its message library,
// libpipespin-log.so (src/report/sink.cpp), which the shim dlopens from its
// own directory on its first message. The two are built together but loaded
// separately, so this header is their whole contract, used by both sides.
//
// Version 2: the library exports exactly one function, PIPESPIN_LOG_ENTRY
// (its name carries the version), of type LogFn, which takes one Record.
// It formats one line and returns 0, or -1 if nothing could be written (the
// shim then writes the line itself, to stderr for syslog). It never throws.
//   - fd >= 0 (stderr or the log file): "[<P>]pipespin[PROG:PID]: LEVEL:
//     MESSAGE\n" written to fd with one write(2), where <P> is the
//     sd-daemon priority prefix (kPriorities: "<4>" for a warning), present
//     only with kJournalPrefix (the shim sets it when fd 2 is the journal's
//     stream: JOURNAL_STREAM names its device and inode).
//   - fd == kSyslog: one datagram "<PRI>Mmm dd hh:mm:ss pipespin[PID]: PROG:
//     LEVEL: MESSAGE" (RFC 3164, as glibc's syslog(3) writes it; facility
//     user) sent through an spdlog sink to the unix datagram socket
//     syslog_path (/dev/log, where syslogd or journald listen).
// An incompatible change gets a new name (pipespin_log_v3): a shim that
// does not find the name it knows falls back to its own writer, so a
// mismatched pair never calls through the wrong type.
//
// Plain preprocessor definitions first: the library's linker version script
// (sink.map.in) is generated from this file.
#pragma once

#define PIPESPIN_LOG_ABI_VERSION 2
#define PIPESPIN_LOG_ENTRY pipespin_log_v2

// The levels, one row each: identifier, the value the entry point takes,
// the word that selects it (PIPESPIN_LOG=warn, the option table's choices),
// and the word a message line carries ("pipespin[cat:12]: warning: ...").
// Level values are the row's index; 0 (off) is never passed.
// (src/core/options.h makes LogLevel from this list too.)
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

// The syslog severity of each level, indexed by its value: sd-daemon's
// priority prefix ("<4>") and syslog's PRI (LOG_ERR 3, LOG_WARNING 4,
// LOG_INFO 6, LOG_DEBUG 7).
inline constexpr int kSeverities[] = {7, 3, 4, 6, 7};
static_assert(sizeof kSeverities / sizeof kSeverities[0] == kLevels, "a severity per level");
inline constexpr int kSyslogFacilityUser = 1;
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

// Record::fd for a message to the syslog socket.
inline constexpr int kSyslog = -1;
// Record::flags: the line starts with its sd-daemon priority prefix.
inline constexpr unsigned kJournalPrefix = 1;
// The socket log_file=syslog (or journal) sends to.
inline constexpr const char* kSyslogPath = "/dev/log";

struct Record {
    int fd;                   // the destination, or kSyslog
    int level;                // a level value above
    unsigned flags;           // kJournalPrefix
    long pid;                 // the process's
    const char* program;      // program_invocation_short_name ("" if none)
    const char* message;      // one line, no newline
    const char* syslog_path;  // for kSyslog: the socket
};

using LogFn = int (*)(const Record* record) noexcept;

}  // namespace pipespin::log_abi
#endif
