// Case sandbox_spin: a seccomp filter installed while a read() spins ends the
// spin's probes before the filter is in place: the program lives, and its
// read returns the byte written after the filter.
//   sandboxspin handler  a SIGALRM handler with SA_RESTART, 50 ms into the
//                        read of an empty pipe (fixed mode spins up to 1 s),
//                        sets no_new_privs, installs a filter that kills
//                        the process for any system call this program does
//                        not make itself (the shim's preadv2, poll, fcntl,
//                        ioctl, open...), then writes the byte;
//   sandboxspin thread   another thread, once it sees the main thread
//                        inside its read (asleep in it, or spinning),
//                        installs the same filter on every thread at once
//                        (seccomp(2) with SECCOMP_FILTER_FLAG_TSYNC), then
//                        writes the byte.
// How a naive spin fails: the step-aside is checked before a spin, not
// during it: the next probe after the filter is a preadv2, and SIGSYS.
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

#include <string_view>
#include <thread>

#include "rel.h"

using namespace rel;

namespace {

#define ALLOW(nr) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

// What this program calls after the filter, and nothing else: read, write,
// the return from the handler, _exit.
sock_filter g_filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    ALLOW(__NR_read),
    ALLOW(__NR_write),
    ALLOW(__NR_rt_sigreturn),
    ALLOW(__NR_rt_sigprocmask),
    ALLOW(__NR_futex),
    ALLOW(__NR_madvise),
    ALLOW(__NR_munmap),
    ALLOW(__NR_rseq),
    ALLOW(__NR_exit),
    ALLOW(__NR_exit_group),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
sock_fprog g_prog{static_cast<unsigned short>(sizeof g_filter / sizeof g_filter[0]), g_filter};

int g_pipe[2];

// Async-signal-safe: prctl, seccomp and write.
void sandbox_and_write(bool all_threads) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(11);
    const long r = all_threads ? syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                         SECCOMP_FILTER_FLAG_TSYNC, &g_prog)
                               : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &g_prog);
    if (r != 0) _exit(12);
    if (write(g_pipe[1], "s", 1) != 1) _exit(13);
}

void on_alarm(int) {
    sandbox_and_write(false);
}

// The read, and what comes after the filter: write and _exit only.
void read_and_report() {
    char c = 0;
    ssize_t r;
    while ((r = read(g_pipe[0], &c, 1)) < 0 && errno == EINTR) {
    }
    if (r != 1 || c != 's') _exit(14);
    static const char ok[] = "sandbox_spin: the read returned the byte written after the filter\n";
    if (write(2, ok, sizeof ok - 1) < 0) _exit(15);
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view mode = argv[1];
    make_pipe(g_pipe);
    std::fflush(nullptr);  // nothing of stdio after the filter
    if (mode == "handler") {
        install(SIGALRM, on_alarm, SA_RESTART);
        arm_alarm_us(50'000);
        read_and_report();
        _exit(0);
    }
    if (mode == "thread") {
        const pid_t me = gettid_();
        const clockid_t cpu = cpu_clock_of(pthread_self());
        const std::uint64_t base = thread_cpu_ns();
        int never[2];
        make_pipe(never);
        std::thread sandboxer([&] {
            wait_in_call(me, cpu, base, {SYS_read});
            sandbox_and_write(true);
            // A thread's exit frees memory (an mmap for malloc's arena):
            // it waits instead, in a call the filter allows, for _exit.
            char c;
            (void)!read(never[0], &c, 1);
        });
        read_and_report();
        _exit(0);
    }
    return 2;
}
