// Case exec: a program exec'd from a shimmed process inherits LD_PRELOAD and
// the PIPESPIN_* variables and is shimmed: its exit report appears, and
// shows spins in fixed mode (its read of an empty pipe that a thread fills
// once the read waits must be seen spinning). The child is exec'd four
// ways: fork + execv (inherited environ), posix_spawn, system() (through
// /bin/sh, itself shimmed), and fork + execve with PIPESPIN_MODE=off added
// to the environment, whose report must show spins=0 (the child reads its
// own environment, it does not inherit the parent's settings some other
// way). Without the shim the children print nothing about pipespin.
//
//   exec            the parent (checks the children's stderr)
//   exec child      a child: one waited-on read, then exit normally
//
// How a naive shim fails: one that removes itself from LD_PRELOAD (to avoid
// "double" loading) or that children reach without PIPESPIN_* (a shim that
// parses its settings into a file or a shared segment only the first
// process sees) gives no report, or the wrong mode, in the child.
#include <spawn.h>

#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rel.h"

extern char** environ;

using namespace rel;

namespace {

int child_main() {
    int r[2];
    make_pipe(r);
    const bool spun = read_seen_in_call(r[0], r[1], "x") == InCall::Spinning;
    const char* mode = std::getenv("PIPESPIN_MODE");
    const bool off = mode != nullptr && std::strcmp(mode, "off") == 0;
    if (config() == Config::Fixed && !off && !spun)
        fail(__FILE__, __LINE__, "fixed, 1 s budget: the exec'd child's read was seen spinning", 0);
    std::printf("child pid %d %s\n", static_cast<int>(getpid()), spun ? "spun" : "slept");
    return 0;
}

// Reads all of fd until EOF.
std::string slurp(int fd) {
    std::string s;
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n >= 0);
        if (n == 0) break;
        s.append(buf, static_cast<size_t>(n));
    }
    return s;
}

// The child's own read report: "pipespin[PROG:PID]: info: exit pid=P read: waits=W spins=S ...".
long report_spins(const std::string& err, pid_t pid) {
    const std::string key = "]: info: exit pid=" + std::to_string(pid) + " read: ";
    const size_t at = err.find(key);
    if (at == std::string::npos) return -1;
    const size_t sp = err.find(" spins=", at);
    CHECK(sp != std::string::npos);
    return std::strtol(err.c_str() + sp + 7, nullptr, 10);
}

pid_t pid_from_stdout(const std::string& out) {
    const size_t at = out.find("child pid ");
    CHECK(at != std::string::npos);
    return static_cast<pid_t>(std::strtol(out.c_str() + at + 10, nullptr, 10));
}

enum class How { Execv, Spawn, System, ModeOff };

void run_child(const char* self, How how, const char* name) {
    PROGRESS("child by %s", name);
    int out[2], err[2];
    make_pipe(out);
    make_pipe(err);
    std::string cmd = std::string("exec '") + self + "' child";
    char* const argv[] = {const_cast<char*>(self), const_cast<char*>("child"), nullptr};
    std::vector<char*> env;
    std::string off = "PIPESPIN_MODE=off";
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "PIPESPIN_MODE=", 14) != 0) env.push_back(*e);
    env.push_back(off.data());
    env.push_back(nullptr);

    std::fflush(nullptr);
    pid_t pid = -1;
    if (how == How::Spawn) {
        posix_spawn_file_actions_t fa;
        CHECK_EQ(posix_spawn_file_actions_init(&fa), 0);
        CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, out[1], 1), 0);
        CHECK_EQ(posix_spawn_file_actions_adddup2(&fa, err[1], 2), 0);
        CHECK_EQ(posix_spawn(&pid, self, &fa, nullptr, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
    } else {
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            dup2(out[1], 1);
            dup2(err[1], 2);
            if (how == How::Execv) execv(self, argv);
            if (how == How::ModeOff) execve(self, argv, env.data());
            if (how == How::System) _exit(std::system(cmd.c_str()) == 0 ? 0 : 1);
            _exit(127);
        }
    }
    close(out[1]);
    close(err[1]);
    const std::string o = slurp(out[0]);
    const std::string e = slurp(err[0]);
    close(out[0]);
    close(err[0]);
    wait_ok(pid);
    std::fprintf(stderr, "  child stdout: %s  child stderr: %s", o.c_str(), e.c_str());
    const pid_t child = pid_from_stdout(o);
    const long spins = report_spins(e, child);
    if (config() == Config::NoShim) {
        CHECK(e.find("pipespin") == std::string::npos);
        return;
    }
    if (spins < 0)
        fail(__FILE__, __LINE__, "the exec'd child wrote its exit report (it is shimmed)", 0);
    if (how == How::ModeOff || config() == Config::Off)
        CHECK_EQ(spins, 0);
    else if (config() == Config::Fixed)
        CHECK(spins > 0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string_view(argv[1]) == "child") return child_main();
    announce_main_pid();
    CHECK(argc == 1);
    run_child(argv[0], How::Execv, "fork + execv");
    run_child(argv[0], How::Spawn, "posix_spawn");
    run_child(argv[0], How::System, "system() through /bin/sh");
    run_child(argv[0], How::ModeOff, "fork + execve with the mode set to off");
    PROGRESS("ok");
    return 0;
}
