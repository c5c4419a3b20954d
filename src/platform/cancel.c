/* Cancellation clean-up for the shim, in C on purpose.
 *
 * The shim has no C++ runtime, so its C++ frames run no destructors when
 * pthread_cancel unwinds a thread. These two functions are plain C without
 * -fexceptions, where glibc's pthread_cleanup_push registers a setjmp
 * buffer that glibc's own unwinder runs on cancellation: no personality
 * routine of ours is involved (a static copy of libgcc's would fight the
 * libgcc_s that glibc unwinds with, and abort). So a thread cancelled while
 * the shim holds a reference fd does not leak it, and one cancelled inside
 * a stdio read the shim runs under the stream's lock leaves the lock free
 * (as glibc's own fread does, with its _IO_acquire_lock clean-up). */
#include <pthread.h>
#include <stdio.h>

/* engine.cpp: unregisters and closes a held reference. */
void pipespin_release_hold(int held_fd);

static void close_held(void* arg) {
    pipespin_release_hold((int)(long)arg);
}

void pipespin_test_cancel_holding(int held_fd) {
    if (held_fd < 0) {
        pthread_testcancel();
        return;
    }
    pthread_cleanup_push(close_held, (void*)(long)held_fd);
    pthread_testcancel();
    pthread_cleanup_pop(0);
}

void pipespin_call_holding(void (*fn)(void*), void* ctx, int held_fd) {
    pthread_cleanup_push(close_held, (void*)(long)held_fd);
    fn(ctx);
    pthread_cleanup_pop(0);
}

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
