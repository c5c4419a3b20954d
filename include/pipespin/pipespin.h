/* pipespin.h: what a program can tell pipespin, and read back from it.
 *
 * pipespin is an LD_PRELOAD library (libpipespin.so) that spins briefly
 * before a read, write or poll would block on a pipe. A program that knows
 * more than any policy can say so here: spin on this fd with this budget,
 * never spin on it, never spin on this thread; and it can read the
 * process's counters. docs/api.md documents every call, its cost and its
 * return values.
 *
 * Contract: plain C99 (and C++), this header only. A program that includes
 * it compiles and links without libpipespin (it needs dlsym, in libc since
 * glibc 2.34, libdl before: `pkg-config --libs pipespin` and the CMake
 * target pipespin::api add it). Each call finds the shim at run time by
 * name (dlsym(RTLD_DEFAULT), once per call site's translation unit) and,
 * when the shim is not loaded into the process, does nothing and returns
 * PIPESPIN_ENOTPRESENT (or 0 for pipespin_version()). No call changes
 * errno. Calls are thread-safe and never block; none is async-signal-safe
 * on its first use in a translation unit (the dlsym look-up), every later
 * one is.
 *
 * Why dlsym and not weak symbols: a weak undefined reference is bound to
 * zero by the static linker in some link modes (non-PIE executables, some
 * toolchains' PIE), and then never sees a preloaded library; a look-up by
 * name at run time works in every link mode and needs nothing at link
 * time. */
#ifndef PIPESPIN_PIPESPIN_H
#define PIPESPIN_PIPESPIN_H

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

/* The version of this header's interface: the set of exported functions
 * below (their names end in _v1). */
#define PIPESPIN_API_VERSION 1

/* pipespin_version()'s encoding of a release. */
#define PIPESPIN_VERSION_CODE(major, minor, patch) \
    ((((major) + 0u) << 16) | (((minor) + 0u) << 8) | ((patch) + 0u))

/* What every call but pipespin_version() returns when the shim is not
 * loaded into this process. */
#define PIPESPIN_ENOTPRESENT (-ENOSYS)

/* Directions, for pipespin_fd_hint(): a read hint also covers stdio reads
 * and the poll, select and epoll waits for input on the fd; a write hint the
 * waits for room. */
#define PIPESPIN_READ 1
#define PIPESPIN_WRITE 2
#define PIPESPIN_BOTH (PIPESPIN_READ | PIPESPIN_WRITE)

/* Budgets, for pipespin_fd_hint(); any value from 1 to PIPESPIN_HINT_MAX_US
 * is a spin budget in microseconds. */
#define PIPESPIN_HINT_POLICY (-1) /* no hint: the configured policy decides (the default) */
#define PIPESPIN_HINT_NEVER 0     /* never spin on this fd (nor look before its calls) */
#define PIPESPIN_HINT_MAX_US 1000000

/* One set of counters: the same figures, under the same names, as a
 * statistics line's (README, "Statistics"). */
struct pipespin_counters {
    uint64_t calls;     /* calls on the pipe the shim examined */
    uint64_t bytes;     /* bytes they moved */
    uint64_t waits;     /* calls that found the pipe not ready (and blocking) */
    uint64_t spins;     /* waits that spun */
    uint64_t spin_hits; /* spins that ended with the pipe ready: a sleep avoided */
    uint64_t spin_ns;   /* time spent spinning */
    uint64_t sleep_ns;  /* time in the real call after a spin that missed */
};

/* Indexes of pipespin_stats.c: [kind][direction]. */
enum pipespin_stat_kind {
    PIPESPIN_KIND_PIPE = 0, /* made by pipe(), or inherited */
    PIPESPIN_KIND_FIFO = 1, /* a named FIFO opened by path */
    PIPESPIN_KINDS = 2
};
enum pipespin_stat_dir {
    PIPESPIN_STAT_READ = 0,
    PIPESPIN_STAT_WRITE = 1,
    PIPESPIN_STAT_POLL = 2, /* poll, ppoll, select, epoll_wait */
    PIPESPIN_STAT_DIRS = 3
};
/* Indexes of pipespin_stats.via: the families of hooks a spin came through
 * (a statistics line's "via" object). */
enum pipespin_stat_via {
    PIPESPIN_VIA_IO = 0, /* read, write */
    PIPESPIN_VIA_POLL = 1,
    PIPESPIN_VIA_STDIO = 2,
    PIPESPIN_VIA_VECTOR = 3, /* readv, writev */
    PIPESPIN_VIA_SELECT = 4,
    PIPESPIN_VIA_EPOLL = 5,
    PIPESPIN_VIA_SPLICE = 6, /* splice, tee */
    PIPESPIN_VIAS = 7
};

/* A snapshot of the process's counters (every pipe it has used, closed ones
 * included; a forked child's count from its fork). Versioned by its size,
 * which comes first: pipespin_get_stats() sets it to the size of the struct
 * it was compiled with, the library fills as much as both sides know and
 * sets it to that; the rest stays zero. Fields are only ever added at the
 * end. */
struct pipespin_stats {
    uint32_t size;
    uint32_t reserved; /* 0 */
    struct pipespin_counters c[PIPESPIN_KINDS][PIPESPIN_STAT_DIRS];
    struct {
        uint64_t spins, spin_hits;
    } via[PIPESPIN_VIAS];
};

/* The functions libpipespin.so exports, once: X(return type, name,
 * parameters). Its linker version script is generated from this list, and
 * each is called through the inline function of the same name without _v1
 * below. An incompatible change would add a _v2, never change a _v1. */
#define PIPESPIN_EXPORTS_V1(X)                                     \
    X(unsigned, pipespin_version_v1, (void))                       \
    X(int, pipespin_fd_hint_v1, (int fd, int dirs, int budget_us)) \
    X(int, pipespin_thread_spin_v1, (int enable))                  \
    X(int, pipespin_get_stats_v1, (struct pipespin_stats * out))

#if defined(__cplusplus) && __cplusplus >= 201103L
#define PIPESPIN_DETAIL_NULL nullptr
#else
#define PIPESPIN_DETAIL_NULL NULL
#endif

#define PIPESPIN_DETAIL_TYPEDEF(ret, name, params) typedef ret(*name##_fn) params;
PIPESPIN_EXPORTS_V1(PIPESPIN_DETAIL_TYPEDEF)
#undef PIPESPIN_DETAIL_TYPEDEF

/* The shim's function called `name`, or NULL. `cache` is the call site's:
 * a failed look-up is remembered too (the shim cannot arrive later: a
 * preload is loaded before the program starts). */
static inline void* pipespin_detail_lookup(void** cache, const char* name) {
    static char absent;
    void* p;
#if defined(__GNUC__)
    p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
#else
    p = *(void* volatile*)cache;
#endif
    if (!p) {
        const int saved = errno;
        /* RTLD_DEFAULT is ((void*)0) in glibc and musl, and is only declared
         * with _GNU_SOURCE: a C99 program may not have it. */
#ifdef RTLD_DEFAULT
        p = dlsym(RTLD_DEFAULT, name);
#else
        p = dlsym((void*)0, name);
#endif
        errno = saved;
        if (!p) p = &absent; /* no cast: the header is C and C++ */
#if defined(__GNUC__)
        __atomic_store_n(cache, p, __ATOMIC_RELEASE);
#else
        *(void* volatile*)cache = p;
#endif
    }
    return p == &absent ? PIPESPIN_DETAIL_NULL : p;
}

/* Declares `fn`, the shim's function `name` (NULL when it is not loaded).
 * memcpy: ISO C has no cast from an object pointer to a function pointer. */
#define PIPESPIN_DETAIL_FIND(name, fn)                              \
    name##_fn fn = PIPESPIN_DETAIL_NULL;                            \
    do {                                                            \
        static void* pipespin_cache_;                               \
        void* p_ = pipespin_detail_lookup(&pipespin_cache_, #name); \
        if (p_) memcpy(&fn, &p_, sizeof fn);                        \
    } while (0)

/* The loaded library's version (PIPESPIN_VERSION_CODE(major, minor,
 * patch)), or 0 when the shim is not loaded into this process. */
static inline unsigned pipespin_version(void) {
    PIPESPIN_DETAIL_FIND(pipespin_version_v1, fn);
    return fn ? fn() : 0u;
}

/* 1 when libpipespin.so is loaded into this process, else 0. */
static inline int pipespin_is_present(void) {
    return pipespin_version() != 0u;
}

/* Tells the shim how to wait on fd, a pipe or FIFO, in `dirs`
 * (PIPESPIN_READ, PIPESPIN_WRITE or both): spin up to budget_us
 * microseconds before each call that would block (1..PIPESPIN_HINT_MAX_US,
 * whatever the policy learnt and in place of spin_us), never spin
 * (PIPESPIN_HINT_NEVER), or let the policy decide again
 * (PIPESPIN_HINT_POLICY). Like the fd's other state, a hint is kept by its
 * dups (dup, dup2, dup3, F_DUPFD) and in a forked child, and dropped when
 * the fd is closed (or replaced, or the process execs). A hint never makes
 * a process spin where its configuration does not: mode off (the A/B
 * control arm), spin_us = 0, the direction switched off, one usable CPU, or
 * a thread switched off with pipespin_thread_spin().
 * Returns 0, or -EINVAL (dirs or budget_us out of range), -EBADF (fd is not
 * open), -ENOTSUP (fd is not a pipe or FIFO), PIPESPIN_ENOTPRESENT. */
static inline int pipespin_fd_hint(int fd, int dirs, int budget_us) {
    PIPESPIN_DETAIL_FIND(pipespin_fd_hint_v1, fn);
    return fn ? fn(fd, dirs, budget_us) : PIPESPIN_ENOTPRESENT;
}

/* enable 0: the calling thread never spins (nor looks before its calls),
 * whatever the fd, its hint or the policy; 1: it spins as the rest of the
 * process (the default, and where every new thread starts). A forked child
 * keeps the forking thread's setting. Returns the previous setting (0 or
 * 1), or -EINVAL, PIPESPIN_ENOTPRESENT. */
static inline int pipespin_thread_spin(int enable) {
    PIPESPIN_DETAIL_FIND(pipespin_thread_spin_v1, fn);
    return fn ? fn(enable) : PIPESPIN_ENOTPRESENT;
}

/* Fills *out with the process's counters now (struct pipespin_stats): what
 * its statistics line would say if it were written now. Returns 0, or
 * PIPESPIN_ENOTPRESENT (then *out is all zero, out->size included). */
static inline int pipespin_get_stats(struct pipespin_stats* out) {
    PIPESPIN_DETAIL_FIND(pipespin_get_stats_v1, fn);
    memset(out, 0, sizeof *out);
    if (!fn) return PIPESPIN_ENOTPRESENT;
    out->size = sizeof *out; /* far below 2^32 */
    return fn(out);
}

#endif /* PIPESPIN_PIPESPIN_H */
