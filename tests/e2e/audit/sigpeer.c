/* A preload that interposes signal() and sigset(), as the JDK's libjsig
 * does: each call says so on stderr, then goes to the next definition.
 * Loaded after libpipespin.so (LD_PRELOAD="libpipespin.so:THIS"), it must
 * see the program's calls as it does without the shim (check_sigchain.sh). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

typedef void (*handler_t)(int);

static void say(const char* s, unsigned n) {
    if (write(2, s, n) < 0) return;
}

handler_t signal(int sig, handler_t h) {
    say("peer: signal\n", 13);
    handler_t (*next)(int, handler_t) = (handler_t(*)(int, handler_t))dlsym(RTLD_NEXT, "signal");
    return next(sig, h);
}

handler_t sigset(int sig, handler_t h) {
    say("peer: sigset\n", 13);
    handler_t (*next)(int, handler_t) = (handler_t(*)(int, handler_t))dlsym(RTLD_NEXT, "sigset");
    return next(sig, h);
}
