// Case efault: a pointer the program passes is read by the shim only after
// the kernel accepted it, or in a way that cannot fault: where the kernel
// says EFAULT the program gets EFAULT, never SIGSEGV, while a pipe the shim
// knows is in (or below) the set.
//   - select and pselect with a read, write or except set on a PROT_NONE
//     page (LTP's select03);
//   - select with sets the kernel read before, at the same addresses, whose
//     page was made PROT_NONE since (mprotect, and syscall(SYS_mprotect));
//   - poll and ppoll on an array the kernel read before, at the same address
//     and length, that was made PROT_NONE or unmapped since (munmap,
//     mprotect, mmap MAP_FIXED over it, syscall(SYS_munmap)).
// Each call has a 10 ms timeout, so that the shim would wait on it.
//
// How a naive spin fails: copying the fd_sets (or reading a pollfd array
// the kernel read last time) in user space to find the pipe faults where
// the kernel would have returned EFAULT.
#include <poll.h>
#include <sys/mman.h>
#include <sys/select.h>

#include <string_view>

#include "rel.h"

using namespace rel;

namespace {

long page() {
    return sysconf(_SC_PAGESIZE);
}

void* map_page() {
    void* p = mmap(nullptr, static_cast<size_t>(page()), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    return p;
}

void expect_efault(long r, const char* what) {
    if (r != -1 || errno != EFAULT) {
        std::fprintf(stderr, "%s returned %ld, errno %d\n", what, r, errno);
        fail(__FILE__, __LINE__, "the call fails with EFAULT", errno);
    }
    PROGRESS("%s: EFAULT", what);
}

// A pipe the shim knows, with a byte nobody reads in it: its read end is
// readable, its write end writable, so a set of them is ready at once.
void known_pipe(int p[2]) {
    make_pipe(p);
    CHECK_EQ(write(p[1], "ab", 2), 2);
    char c;
    CHECK_EQ(read(p[0], &c, 1), 1);
}

void select_case() {
    int p[2];
    known_pipe(p);
    const int nfds = p[1] + 1;
    auto* bad = static_cast<fd_set*>(
        mmap(nullptr, static_cast<size_t>(page()), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(bad != MAP_FAILED);
    fd_set good;
    // A set that is not ready either: the shim would look and spin.
    int q[2];
    make_pipe(q);
    for (int k = 0; k < 3; ++k) {
        FD_ZERO(&good);
        FD_SET(q[0], &good);
        fd_set* sets[3] = {&good, nullptr, nullptr};
        sets[k] = bad;
        timeval tv{0, 10'000};
        expect_efault(select(std::max(nfds, q[0] + 1), sets[0], sets[1], sets[2], &tv),
                      k == 0   ? "select, read set PROT_NONE"
                      : k == 1 ? "select, write set PROT_NONE"
                               : "select, except set PROT_NONE");
        timespec ts{0, 10'000'000};
        expect_efault(pselect(std::max(nfds, q[0] + 1), sets[0], sets[1], sets[2], &ts, nullptr),
                      "pselect, a set PROT_NONE");
    }
    // Sets the kernel read before, at the same address, then protected.
    for (int how = 0; how < 2; ++how) {
        auto* sets = static_cast<fd_set*>(map_page());
        for (int round = 0; round < 3; ++round) {
            FD_ZERO(&sets[0]);
            FD_SET(q[0], &sets[0]);
            timeval tv{0, 10'000};
            CHECK_EQ(select(q[0] + 1, &sets[0], nullptr, nullptr, &tv), 0);
        }
        if (how == 0)
            CHECK_EQ(mprotect(sets, static_cast<size_t>(page()), PROT_NONE), 0);
        else
            CHECK_EQ(syscall(SYS_mprotect, sets, page(), PROT_NONE), 0);
        timeval tv{0, 10'000};
        expect_efault(select(q[0] + 1, &sets[0], nullptr, nullptr, &tv),
                      how == 0 ? "select, sets read before, mprotect PROT_NONE since"
                               : "select, sets read before, syscall(SYS_mprotect) since");
        munmap(sets, static_cast<size_t>(page()));
    }
    munmap(bad, static_cast<size_t>(page()));
    for (int fd : {p[0], p[1], q[0], q[1]}) close(fd);
}

void poll_case() {
    int q[2];
    make_pipe(q);
    CHECK_EQ(write(q[1], "k", 1), 1);  // known to the shim
    char c;
    CHECK_EQ(read(q[0], &c, 1), 1);
    const char* names[] = {"poll, array read before, munmap since",
                           "poll, array read before, mprotect PROT_NONE since",
                           "poll, array read before, mmap MAP_FIXED PROT_NONE over it since",
                           "poll, array read before, syscall(SYS_munmap) since",
                           "ppoll, array read before, munmap since"};
    for (int how = 0; how < 5; ++how) {
        auto* fds = static_cast<pollfd*>(map_page());
        for (int round = 0; round < 3; ++round) {
            fds[0] = {q[0], POLLIN, 0};
            CHECK_EQ(poll(fds, 1, 10), 0);
        }
        const size_t len = static_cast<size_t>(page());
        switch (how) {
            case 0:
            case 4:
                CHECK_EQ(munmap(fds, len), 0);
                break;
            case 1:
                CHECK_EQ(mprotect(fds, len, PROT_NONE), 0);
                break;
            case 2:
                CHECK(mmap(fds, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
                      fds);
                break;
            case 3:
                CHECK_EQ(syscall(SYS_munmap, fds, len), 0);
                break;
        }
        timespec ts{0, 10'000'000};
        expect_efault(how == 4 ? ppoll(fds, 1, &ts, nullptr) : poll(fds, 1, 10), names[how]);
        munmap(fds, len);
    }
    close(q[0]);
    close(q[1]);
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view mode = argv[1];
    if (mode == "select")
        select_case();
    else if (mode == "poll")
        poll_case();
    else
        return 2;
    PROGRESS("ok");
    return 0;
}
