/* Preloaded in front of libpipespin.so by syscalls_check.py (and alone in
 * the run without the shim): the loader runs the constructors of preloaded
 * libraries in the reverse of their order in LD_PRELOAD, so this one runs
 * after the shim's. Its one failing faccessat marks, in each program's
 * trace, where the start-up (the loader, the libraries' constructors, the
 * shim's own) ends and the program's own system calls begin. */
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void mark_startup_end(void) {
    syscall(SYS_faccessat, AT_FDCWD, "/nonexistent/pipespin-startup-done", F_OK);
}
