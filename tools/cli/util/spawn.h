// Starting a child with a given argv and environment, and measuring it from
// outside: wall time, CPU time and context switches of its process tree, and
// what it wrote.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/util/environment.h"

namespace pipespin::cli {

// An anonymous file in memory (memfd), closed when the object goes: what a
// child writes, read back whole without a pipe to keep the parent awake.
class MemoryFile {
public:
    explicit MemoryFile(const char* name);  // throws Failure(kExitFailure)
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    ~MemoryFile();

    int fd() const noexcept { return fd_; }
    // Everything in it, from offset 0.
    std::string contents() const;
    // Writes `text` at offset 0 (the offset a dup2'ed fd then reads from).
    void fill(std::string_view text) const;

private:
    int fd_;
};

struct Captured {
    int wait_status = 0;  // as from waitpid
    std::string out;      // everything the child wrote to stdout
};
// Runs `path` with argv and env; stdin and stderr are inherited, stdout is
// captured. Throws Failure(kExitFailure) if the child could not be started.
Captured spawn_capture(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env);

// What spawn_measure saw of a child.
struct Measured {
    // Context switches of the child and its waited-for descendants, from the
    // same rusage: voluntary ones are the waits that slept.
    long vol_cs = 0, invol_cs = 0;
    int wait_status = 0;  // as from waitpid
    std::string out;      // the child's stdout
    std::string err;      // its stderr, when captured
    double wall_us = 0;   // steady clock from the spawn to the reaping
    // User + system CPU of the child and of every descendant it waited for
    // (wait4's rusage): for `sh -c 'a | b'` the shell and both stages.
    double cpu_us = 0;
    double user_us = 0, sys_us = 0;  // the two halves of cpu_us
};
struct SpawnIo {
    bool null_stdin = false;             // stdin from /dev/null rather than inherited
    bool capture_stderr = false;         // stderr into Measured::err rather than inherited
    std::optional<std::string> input{};  // stdin reads this text (overrides null_stdin)
};
// A running child of spawn_measure's kind, for a caller that looks at it
// (in /proc) before it ends. Destroying a child that was not waited for
// kills and reaps it.
class Child {
public:
    Child(const std::string& path, const std::vector<std::string>& argv, const Environment& env,
          const SpawnIo& io);
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;
    ~Child();

    int pid() const noexcept { return pid_; }
    Measured wait();  // once

private:
    class Files;
    std::unique_ptr<Files> files_;
    int pid_ = -1;
    bool reaped_ = false;
    std::chrono::steady_clock::time_point start_;
};
// Runs `path` with argv and env and waits for it. Output goes to memory
// files, not pipes, so the parent stays asleep while the child runs. Throws
// Failure(kExitFailure) if the child could not be started.
Measured spawn_measure(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env, SpawnIo io = {});
// True when the child exited with status 0.
bool exited_ok(int wait_status);
// "exited with status 3", "killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int wait_status);

}  // namespace pipespin::cli
