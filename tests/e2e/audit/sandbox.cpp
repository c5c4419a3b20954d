// Case audit_sandbox: a program that sandboxes itself the usual way
// (prctl PR_SET_NO_NEW_PRIVS, then a seccomp filter that allows exactly the
// system calls it makes itself and kills the process for any other), then
// runs a pipe ping-pong with a forked child, with polls, and exits. Without
// the shim's step-aside (before_sandbox() in init.cpp) its probes (preadv2,
// ppoll, fcntl) or its statistics line's open killed the program with
// SIGSYS in adaptive and fixed mode, and in mode off with statistics on.
// With the argument "raw" it installs the filter the way a privileged
// process may, with syscall(SYS_seccomp) and no no_new_privs (the shim's
// syscall() hook, x86_64, sees it; check_sandbox_raw.sh runs it, and skips
// where the process lacks CAP_SYS_ADMIN). First, either way, it checks that
// syscall() passes its arguments through (the seventh on the stack: a
// six-argument mmap at an offset).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../../support/helpers.h"

using namespace support;

namespace {

constexpr int kRounds = 2000;

#define ALLOW(nr) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

void sandbox(bool raw) {
    // What the rest of this program calls, and nothing else (strace):
    // glibc's fork is clone (clone3 on some), its child sets its robust list.
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        ALLOW(__NR_read),
        ALLOW(__NR_write),
        ALLOW(__NR_poll),
        ALLOW(__NR_pipe2),
        ALLOW(__NR_close),
        ALLOW(__NR_clone),
        ALLOW(__NR_clone3),
        ALLOW(__NR_set_robust_list),
        ALLOW(__NR_wait4),
        ALLOW(__NR_exit_group),
        ALLOW(__NR_exit),
        ALLOW(__NR_rt_sigreturn),
        ALLOW(__NR_rt_sigprocmask),
        ALLOW(__NR_futex),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (raw) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
            if (errno != EACCES) CHECK(false);
            std::fprintf(stderr, "SKIP: seccomp without no_new_privs needs CAP_SYS_ADMIN\n");
            std::exit(77);
        }
        return;
    }
    CHECK_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    CHECK_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

// syscall() with all six arguments after the number: an mmap of a file's
// second page, whose offset is the one passed on the stack.
void syscall_passes_arguments() {
    char path[] = "/tmp/pipespin-sandbox-XXXXXX";
    const int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    static char pages[8192];
    std::memset(pages, 'a', 4096);
    std::memset(pages + 4096, 'b', 4096);
    CHECK_EQ(write(fd, pages, sizeof pages), static_cast<ssize_t>(sizeof pages));
    const long m = syscall(SYS_mmap, 0L, 4096L, static_cast<long>(PROT_READ),
                           static_cast<long>(MAP_PRIVATE), static_cast<long>(fd), 4096L);
    CHECK(m != -1);
    const char* page = reinterpret_cast<const char*>(m);
    CHECK(page[0] == 'b' && page[4095] == 'b');
    CHECK_EQ(munmap(reinterpret_cast<void*>(m), 4096), 0);
    CHECK_EQ(syscall(SYS_getpid), static_cast<long>(getpid()));
    close(fd);
}

}  // namespace

int main(int argc, char** argv) {
    syscall_passes_arguments();
    std::fflush(nullptr);  // nothing of stdio after the filter: no fstat, no brk
    sandbox(argc > 1 && std::strcmp(argv[1], "raw") == 0);
    int a[2], b[2];
    CHECK_EQ(pipe2(a, 0), 0);
    CHECK_EQ(pipe2(b, 0), 0);
    char c = 'x';
    const pid_t pid = fork();
    CHECK(pid >= 0);
    // Each side closes the other's ends: a peer killed by the filter is an
    // EOF here, not a wait for ever.
    if (pid == 0) {
        close(a[1]);
        close(b[0]);
        for (int i = 0; i < kRounds; ++i)
            if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) _exit(3);
        _exit(0);
    }
    close(a[0]);
    close(b[1]);
    pollfd p{b[0], POLLIN, 0};
    for (int i = 0; i < kRounds; ++i) {
        CHECK_EQ(write(a[1], &c, 1), 1);
        if (i % 2) CHECK_EQ(poll(&p, 1, -1), 1);
        CHECK_EQ(read(b[0], &c, 1), 1);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    static const char ok[] = "sandbox: ok\n";
    CHECK_EQ(write(1, ok, sizeof ok - 1), static_cast<ssize_t>(sizeof ok - 1));
    return 0;
}
