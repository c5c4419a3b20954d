// Micro-benchmarks of what the shim adds where it should add nothing:
//   file   N   - 4 KiB read() calls over a cached regular file (ns per read)
//   pipe   N   - write(1 byte) + read(1 byte) on a pipe that has data (ns per pair)
//   spawn  N   - posix_spawn + wait of /bin/true, with LD_PRELOAD taken from
//                PIPESPIN_CHILD_PRELOAD for the child only (µs per process)
// Prints one number on stdout. overhead.sh runs it with and without the shim,
// interleaved, and reports medians.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

int die(const char* what) {
    std::perror(what);
    return 1;
}

int bench_file(long n) {
    char path[] = "/tmp/pipespin-overhead-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return die("mkstemp");
    unlink(path);
    constexpr std::size_t kFile = 8 << 20, kChunk = 4096;
    std::vector<char> buf(kChunk, 'x');
    for (std::size_t off = 0; off < kFile; off += kChunk)
        if (write(fd, buf.data(), kChunk) != static_cast<ssize_t>(kChunk)) return die("write");
    auto read_all = [&](long limit) {
        long calls = 0;
        while (calls < limit) {
            if (lseek(fd, 0, SEEK_SET) != 0) return -1L;
            for (std::size_t off = 0; off < kFile && calls < limit; off += kChunk, ++calls)
                if (read(fd, buf.data(), kChunk) != static_cast<ssize_t>(kChunk)) return -1L;
        }
        return calls;
    };
    read_all(kFile / kChunk);  // warm the page cache
    auto t0 = Clock::now();
    if (read_all(n) != n) return die("read");
    std::printf("%.1f\n", since(t0) / n);
    return 0;
}

int bench_pipe(long n) {
    int p[2];
    if (pipe(p) != 0) return die("pipe");
    char c = 'x';
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i)
        if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1) return die("pipe io");
    std::printf("%.1f\n", since(t0) / n);
    return 0;
}

int bench_spawn(long n) {
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env_store.emplace_back(*e);
    if (const char* pre = std::getenv("PIPESPIN_CHILD_PRELOAD"); pre && *pre)
        env_store.push_back(std::string("LD_PRELOAD=") + pre);
    std::vector<char*> envp;
    for (auto& s : env_store) envp.push_back(s.data());
    envp.push_back(nullptr);
    char arg0[] = "/bin/true";
    char* argv[] = {arg0, nullptr};
    auto t0 = Clock::now();
    for (long i = 0; i < n; ++i) {
        pid_t pid;
        if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, envp.data()) != 0)
            return die("posix_spawn");
        int st;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return die("child");
    }
    std::printf("%.1f\n", since(t0) / n / 1000.0);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s file|pipe|spawn N\n", argv[0]);
        return 2;
    }
    long n = std::atol(argv[2]);
    if (n <= 0) return 2;
    if (!std::strcmp(argv[1], "file")) return bench_file(n);
    if (!std::strcmp(argv[1], "pipe")) return bench_pipe(n);
    if (!std::strcmp(argv[1], "spawn")) return bench_spawn(n);
    std::fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
