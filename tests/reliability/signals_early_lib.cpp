// A library whose constructor installs a SIGALRM handler (no SA_RESTART) by
// a raw rt_sigaction system call. A program linked with it runs this
// constructor before the constructor of an LD_PRELOADed shim (the shim is
// not one of its dependencies): the shim neither saw the install nor could
// have wrapped it then. Used by `signals early` (signals.cpp), whose main()
// sets rel_early_hook to its own handler.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rel.h"

extern "C" {
__attribute__((visibility("default"))) void (*rel_early_hook)(int) = nullptr;
__attribute__((visibility("default"))) const char* rel_early_error = nullptr;
}

namespace {

using rel::KernelAction;

void early_handler(int sig) {
    if (rel_early_hook != nullptr) rel_early_hook(sig);
}

__attribute__((constructor)) void early_install() {
    // glibc's restorer, from an action glibc installed.
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    KernelAction k{};
    if (sigaction(SIGALRM, &sa, nullptr) != 0 ||
        syscall(SYS_rt_sigaction, SIGALRM, nullptr, &k, 8) != 0 || k.restorer == nullptr) {
        rel_early_error = "signals_early_lib: cannot read glibc's restorer";
        return;
    }
    k.handler = reinterpret_cast<void*>(early_handler);
    k.flags = rel::kSaRestorer;
    k.mask = 0;
    if (syscall(SYS_rt_sigaction, SIGALRM, &k, nullptr, 8) != 0)
        rel_early_error = "signals_early_lib: the raw rt_sigaction failed";
}

}  // namespace
