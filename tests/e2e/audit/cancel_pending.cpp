// Case audit_cancel_pending (from the faithfulness audit): a deferred
// cancellation is already pending when a thread calls a cancellation point
// whose answer is ready at once: read or readv on a pipe that holds data,
// write on a pipe with room, poll, ppoll, epoll_wait or select on a
// readable pipe, fgets on a stream over it. glibc acts on the pending
// cancellation at the call's entry, before the system call: the thread ends
// (pthread_join gives PTHREAD_CANCELED), the statement after the call never
// runs, and the pipe is left as it was (the data still queued, nothing
// written). A shim whose first look is the call itself (the nowait probe's
// RWF_NOWAIT read or write, a set's zero-timeout look) and returns its answer
// without passing a cancellation point consumes the data or writes, and the
// thread runs on.
//
// No timing: the thread spins on an atomic flag (no cancellation point)
// until the main thread has cancelled it, and only then makes its call.
#include <pthread.h>
#include <sys/select.h>
#include <sys/uio.h>

#include <atomic>
#include <cstring>

#include "../../support/helpers.h"

using namespace support;

namespace {

enum class Op { Read, Readv, Write, Poll, Ppoll, Epoll, Select, Fgets };

struct Job {
    Op op;
    int rfd, wfd, epfd;
    FILE* file;  // Fgets: a stream of its own on a dup of rfd, its buffer empty
    std::atomic<bool> go{false};
    volatile bool after = false;
};

void* body(void* arg) {
    Job* job = static_cast<Job*>(arg);
    while (!job->go.load()) {
    }
    char buf[64];
    switch (job->op) {
        case Op::Read:
            (void)!read(job->rfd, buf, sizeof buf);
            break;
        case Op::Readv: {
            iovec v{buf, sizeof buf};
            (void)!readv(job->rfd, &v, 1);
            break;
        }
        case Op::Write:
            (void)!write(job->wfd, "xyz", 3);
            break;
        case Op::Poll: {
            pollfd f{job->rfd, POLLIN, 0};
            (void)poll(&f, 1, -1);
            break;
        }
        case Op::Ppoll: {
            pollfd f{job->rfd, POLLIN, 0};
            (void)ppoll(&f, 1, nullptr, nullptr);
            break;
        }
        case Op::Epoll: {
            epoll_event ev{};
            (void)epoll_wait(job->epfd, &ev, 1, -1);
            break;
        }
        case Op::Select: {
            fd_set s;
            FD_ZERO(&s);
            FD_SET(job->rfd, &s);
            (void)select(job->rfd + 1, &s, nullptr, nullptr, nullptr);
            break;
        }
        case Op::Fgets:
            (void)!fgets(buf, sizeof buf, job->file);
            break;
    }
    job->after = true;
    return nullptr;
}

int failures = 0;

// Each op is checked on its own; every failing op is named, then the case fails.
void one(Op op, const char* name) {
    for (int round = 0; round < 5; ++round) {
        int p[2];
        make_pipe(p);
        const bool writes = op == Op::Write;
        if (!writes) write_full(p[1], "hello", 5);
        // A few calls first, so that the fds are well known to the shim.
        for (int i = 0; i < 3; ++i) {
            pollfd f{p[0], POLLIN, 0};
            CHECK_EQ(poll(&f, 1, 0), writes ? 0 : 1);
        }
        FILE* file = nullptr;
        if (op == Op::Fgets) {
            file = fdopen(dup(p[0]), "r");
            CHECK(file != nullptr);
        }
        Job job{op, p[0], p[1], epoll_watching(p[0]), file};
        pthread_t t;
        CHECK_EQ(pthread_create(&t, nullptr, body, &job), 0);
        CHECK_EQ(pthread_cancel(t), 0);
        job.go.store(true);
        void* res = nullptr;
        CHECK_EQ(pthread_join(t, &res), 0);
        bool bad = false;
        if (res != PTHREAD_CANCELED || job.after) {
            std::fprintf(stderr, "%s: the pending cancellation did not act at the call\n", name);
            bad = true;
        }
        // The pipe is as it was: the 5 bytes still queued, or nothing written.
        set_nonblock(p[0], true);
        char buf[64];
        const ssize_t n = read(p[0], buf, sizeof buf);
        if (writes && !(n < 0 && errno == EAGAIN)) {
            std::fprintf(stderr, "%s: the cancelled write wrote (read gave %zd)\n", name, n);
            bad = true;
        } else if (!writes && n != 5) {
            std::fprintf(stderr, "%s: the cancelled call consumed data (%zd bytes left of 5)\n",
                         name, n);
            bad = true;
        }
        if (file != nullptr) fclose(file);
        close(job.epfd);
        close(p[0]);
        close(p[1]);
        if (bad) {
            ++failures;
            return;
        }
    }
}

}  // namespace

int main() {
    one(Op::Read, "read");
    one(Op::Readv, "readv");
    one(Op::Write, "write");
    one(Op::Poll, "poll");
    one(Op::Ppoll, "ppoll");
    one(Op::Epoll, "epoll_wait");
    one(Op::Select, "select");
    one(Op::Fgets, "fgets");
    if (failures != 0) return 1;
    std::printf("cancel_pending: ok\n");
    return 0;
}
