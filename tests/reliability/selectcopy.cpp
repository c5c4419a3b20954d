// Case select_nocopy: select and pselect with a timeout never copy the
// caller's fd_sets through process_vm_readv, which a strict seccomp profile
// may forbid or kill the program for (Docker's default profile allows it
// only with CAP_SYS_PTRACE; systemd's @system-service set leaves it out).
// run.sh runs this under no_syscall.sh, which fails if any process_vm_readv
// shows up. (The shim asks the kernel whether sets it has not seen before
// can be read with rt_sigprocmask, which every profile allows.)
//
// The waits: sockets only (with a pipe the shim knows at a lower fd, so that
// a shim that looks at the sets has a reason to), the pipe and a socket, the
// pipe alone; each once timing out on nothing and once ready; select and
// pselect (with a mask). The results must be what the kernel says.
#include <sys/select.h>
#include <sys/socket.h>

#include "rel.h"

using namespace rel;

namespace {

constexpr int kRounds = 200;

// One select or pselect with a 1 ms timeout on `fds` (read set); returns
// the count and checks that exactly `ready` is left in the set.
void wait_on(bool use_pselect, std::initializer_list<int> fds, int ready) {
    fd_set r;
    FD_ZERO(&r);
    int nfds = 0;
    for (int fd : fds) {
        FD_SET(fd, &r);
        if (fd >= nfds) nfds = fd + 1;
    }
    int got;
    if (use_pselect) {
        const timespec ts{0, 1000000};
        sigset_t none;
        sigemptyset(&none);
        got = pselect(nfds, &r, nullptr, nullptr, &ts, &none);
    } else {
        timeval tv{0, 1000};
        got = select(nfds, &r, nullptr, nullptr, &tv);
    }
    CHECK_EQ(got, ready >= 0 ? 1 : 0);
    for (int fd : fds) CHECK_EQ(FD_ISSET(fd, &r) != 0, fd == ready);
}

}  // namespace

int main() {
    announce_main_pid();
    int p[2], s[2];
    make_pipe(p);
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s), 0);
    CHECK(p[0] < s[0]);
    for (int i = 0; i < kRounds; ++i) {
        const bool use_pselect = i % 2 != 0;
        wait_on(use_pselect, {s[0]}, -1);
        wait_on(use_pselect, {p[0], s[0]}, -1);
        wait_on(use_pselect, {p[0]}, -1);
        send_byte(s[1]);
        wait_on(use_pselect, {s[0]}, s[0]);
        wait_on(use_pselect, {p[0], s[0]}, s[0]);
        recv_byte(s[0]);
        send_byte(p[1]);
        wait_on(use_pselect, {p[0], s[0]}, p[0]);
        wait_on(use_pselect, {p[0]}, p[0]);
        recv_byte(p[0]);
    }
    PROGRESS("select_nocopy (%s): %d rounds, results as the kernel gave them", config_name(),
             kRounds);
    return 0;
}
