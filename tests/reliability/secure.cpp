// Case secure (driven by secure.sh): in secure-execution mode (AT_SECURE:
// a setuid program run by another user) the shim ignores PIPESPIN_*.
//
// glibc does not preload a library named by a path into a setuid program,
// so this helper is linked against libpipespin.so instead (an absolute
// RUNPATH, which the loader honours for setuid programs): the shim is loaded
// and initialised as in any process, and reads its settings with
// secure_getenv(). The helper does a read that waits on a pipe (a thread
// fills it once the read is in progress) and prints AT_SECURE and its ids.
// secure.sh runs it with PIPESPIN_LOG=info and PIPESPIN_MODE=fixed: as a
// plain program the exit report must appear; as a setuid-root copy run by
// nobody it must not (nor any warning for a bad PIPESPIN_SPIN_US).
//
// How a naive shim fails: getenv() instead of secure_getenv() lets any user
// steer a setuid program's shim (log to stderr, spin for a second on every
// read), and its exit report appears.
#include <sys/auxv.h>

#include <thread>

#include "rel.h"

using namespace rel;

int main() {
    int r[2];
    make_pipe(r);
    read_seen_in_call(r[0], r[1], "x");
    std::printf("at_secure=%lu uid=%d euid=%d\n", getauxval(AT_SECURE), static_cast<int>(getuid()),
                static_cast<int>(geteuid()));
    return 0;
}
