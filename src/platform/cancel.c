/* Cancellation clean-up for the shim, in C on purpose.
 *
 * The shim has no C++ runtime, so its C++ frames run no destructors when
 * pthread_cancel unwinds a thread. This is plain C without -fexceptions,
 * where glibc's pthread_cleanup_push registers a setjmp buffer that glibc's
 * own unwinder runs on cancellation: no personality routine of ours is
 * involved (a static copy of libgcc's would fight the libgcc_s that glibc
 * unwinds with, and abort). So a thread cancelled inside a stdio read the
 * shim runs under the stream's lock leaves the lock free (as glibc's own
 * fread does, with its _IO_acquire_lock clean-up). */
#include <stdio.h>

#include <pthread.h>

static void unlock_stream(void* fp) {
    funlockfile((FILE*)fp);
}

/* hooks_stdio.cpp: fn(ctx) under the stream's lock, released also if the
 * thread is cancelled inside fn. */
void pipespin_call_stream_locked(void (*fn)(void*), void* ctx, FILE* fp) {
    flockfile(fp);
    pthread_cleanup_push(unlock_stream, fp);
    fn(ctx);
    pthread_cleanup_pop(1);
}
