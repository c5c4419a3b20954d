#include "cli/util/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "cli/util/errors.h"

namespace pipespin::cli {

Captured spawn_capture(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env) {
    Measured m = spawn_measure(path, argv, env);
    return {m.wait_status, std::move(m.out)};
}

namespace {

double to_us(const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec);
}

}  // namespace

MemoryFile::MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) throw Failure(kExitFailure, fmt::format("memfd_create: {}", std::strerror(errno)));
}

MemoryFile::~MemoryFile() {
    ::close(fd_);
}

std::string MemoryFile::contents() const {
    std::string out;
    char buf[65536];
    for (off_t at = 0;;) {
        ssize_t n = ::pread(fd_, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
        at += n;
    }
    return out;
}

void MemoryFile::fill(std::string_view text) const {
    for (std::size_t at = 0; at < text.size();) {
        ssize_t n = ::pwrite(fd_, text.data() + at, text.size() - at, static_cast<off_t>(at));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw Failure(kExitFailure,
                          fmt::format("writing a child's input: {}", std::strerror(errno)));
        at += static_cast<std::size_t>(n);
    }
}

// The child's input and output; the fds it reads and writes are dup2'ed
// copies, so these close in the parent only.
class Child::Files {
public:
    MemoryFile out{"pipespin-stdout"};
    std::optional<MemoryFile> err, in;
};

Child::Child(const std::string& path, const std::vector<std::string>& argv, const Environment& env,
             const SpawnIo& io)
    : files_(std::make_unique<Files>()) {
    if (io.capture_stderr) files_->err.emplace("pipespin-stderr");
    if (io.input) {
        files_->in.emplace("pipespin-stdin");
        files_->in->fill(*io.input);
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // A memory file read through a dup2'ed fd starts at offset 0: pwrite
    // left the shared offset there.
    if (files_->in)
        posix_spawn_file_actions_adddup2(&actions, files_->in->fd(), STDIN_FILENO);
    else if (io.null_stdin)
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    // dup2 onto 1 and 2 clears FD_CLOEXEC there; the originals close at exec.
    posix_spawn_file_actions_adddup2(&actions, files_->out.fd(), STDOUT_FILENO);
    if (files_->err) posix_spawn_file_actions_adddup2(&actions, files_->err->fd(), STDERR_FILENO);

    std::vector<char*> cargv, cenv;
    for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const std::string& e : env.entries()) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);

    start_ = std::chrono::steady_clock::now();
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw Failure(kExitFailure, fmt::format("cannot run {}: {}", path, std::strerror(rc)));
    pid_ = pid;
}

Child::~Child() {
    if (reaped_) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

Measured Child::wait() {
    Measured m;
    struct rusage ru {};
    while (::wait4(pid_, &m.wait_status, 0, &ru) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    m.wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
                    .count();
    m.user_us = to_us(ru.ru_utime);
    m.sys_us = to_us(ru.ru_stime);
    m.cpu_us = m.user_us + m.sys_us;
    m.vol_cs = ru.ru_nvcsw;
    m.invol_cs = ru.ru_nivcsw;
    m.out = files_->out.contents();
    if (files_->err) m.err = files_->err->contents();
    return m;
}

Measured spawn_measure(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env, SpawnIo io) {
    return Child(path, argv, env, io).wait();
}

bool exited_ok(int wait_status) {
    return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string describe_wait_status(int wait_status) {
    if (WIFEXITED(wait_status))
        return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
    if (WIFSIGNALED(wait_status))
        return fmt::format("killed by signal {} ({})", WTERMSIG(wait_status),
                           ::strsignal(WTERMSIG(wait_status)));
    return fmt::format("ended with wait status {:#x}", wait_status);
}

}  // namespace pipespin::cli
