// Case cancel: pthread_cancel on a thread waiting in read (empty pipe),
// write (full pipe), poll(-1) or fread (a FILE on an empty pipe), all
// cancellation points. Nobody ever delivers, so only the cancellation can
// end the call. The thread must end (pthread_join gives PTHREAD_CANCELED)
// and its pthread_cleanup_push handler must run. After an fread, the main
// thread then reads from the same FILE: glibc's fread releases the stream's
// lock when it is cancelled, so the stream must be usable (a lock left held
// by the dead thread deadlocks here; a watchdog turns that into a failure).
//
//   cancel spin     cancel while the call spins (fixed, 1 s budget: the
//                   helper checks that it saw the thread spinning), 10 times
//                   per call;
//   cancel blocked  cancel once the thread sleeps in the real syscall (after
//                   the spin ran out), once per call.
//
// How a naive spin fails: cancelled while it spins (deferred cancellation:
// glibc only marks the thread and acts at the next cancellation point), a
// naive spin goes on for the rest of its 1 s budget before it reaches the
// real call, which then acts on the cancellation. "Promptly" is checked the
// way run.sh checks nothing else: the 10 cancellations of one call together
// must take less than half of 10 budgets (5 s). That is a correctness bound
// (it fails only if cancellations wait for the spin to end), not a
// performance one; each takes microseconds when the spin notices. A wrapper
// without unwind tables, or declared noexcept, turns the forced unwind out
// of the blocked real call into an abort (the blocked variant).
#include <cinttypes>
#include <string_view>

#include "rel.h"

using namespace rel;

namespace {

constexpr std::uint64_t kBudgetNs = 1'000'000'000;  // run.sh's fixed budget

struct Job {
    Wait op;
    int rfd, wfd;
    int announce_w;
    FILE* file = nullptr;  // Fread: a stream on rfd
    pid_t tid = 0;
    volatile int cleaned = 0;
    volatile int returned = 0;
    long result = 0;
    int err = 0;
};

void cleanup(void* arg) {
    static_cast<Job*>(arg)->cleaned = 1;
}

void* body(void* arg) {
    Job* job = static_cast<Job*>(arg);
    job->tid = gettid_();
    pthread_cleanup_push(cleanup, job);
    const std::uint64_t base = thread_cpu_ns();
    write_full(job->announce_w, &base, sizeof base);
    char buf[16];
    job->result = make_call(job->op, job->rfd, job->wfd, buf, sizeof buf, job->file);
    job->err = errno;
    job->returned = 1;
    pthread_cleanup_pop(0);
    return nullptr;
}

long syscall_of(Wait op) {
    return op == Wait::Write ? SYS_write : op == Wait::Poll ? SYS_poll : SYS_read;
}

// A hang is a failure with a reason, not CTest's timeout: a deadlock on the
// stream's lock never ends, and 10 s is ages for reading one queued byte.
void watchdog(int) {
    static const char msg[] =
        "the FILE is still locked after the cancelled fread: the next use deadlocks\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

// After a cancelled fread: the main thread reads from the same stream.
void use_stream_again(FILE* f, int wfd) {
    write_full(wfd, "xy", 2);
    install(SIGALRM, watchdog, 0);
    arm_alarm_us(10'000'000);
    char got[2] = {};
    const size_t n = fread(got, 1, 2, f);
    arm_alarm_us(0);
    CHECK_EQ(n, 2u);
    CHECK(got[0] == 'x' && got[1] == 'y');
    CHECK(!ferror(f) && !feof(f));
}

// One cancellation; returns the ns from pthread_cancel to pthread_join's return.
std::uint64_t cancel_once(Wait op, bool blocked) {
    int p[2], ann[2];
    make_pipe(p);
    make_pipe(ann);
    CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, kPipeSize), kPipeSize);
    if (op == Wait::Write) {
        static char full[kPipeSize];
        write_full(p[1], full, sizeof full);
    }
    Job job{op, p[0], p[1], ann[1]};
    if (op == Wait::Fread) CHECK((job.file = fdopen(p[0], "r")) != nullptr);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, nullptr, body, &job), 0);
    std::uint64_t base = 0;
    CHECK_EQ(read_full(ann[0], &base, sizeof base), sizeof base);
    const InCall in =
        wait_in_call(job.tid, cpu_clock_of(t), base, {syscall_of(op), SYS_ppoll}, blocked);
    if (!blocked && config() == Config::Fixed && in != InCall::Spinning)
        fail(__FILE__, __LINE__, "fixed, 1 s budget: the thread was seen spinning", 0);
    const std::uint64_t start = now_ns();
    CHECK_EQ(pthread_cancel(t), 0);
    void* ret = nullptr;
    CHECK_EQ(pthread_join(t, &ret), 0);
    const std::uint64_t took = now_ns() - start;
    if (job.returned) {
        std::fprintf(stderr, "%s returned %ld (errno %d) instead of being cancelled\n",
                     wait_name(op), job.result, job.err);
        fail(__FILE__, __LINE__, "the call is cancelled", job.err);
    }
    CHECK(ret == PTHREAD_CANCELED);
    CHECK_EQ(job.cleaned, 1);
    if (job.file != nullptr) {
        use_stream_again(job.file, p[1]);
        CHECK_EQ(fclose(job.file), 0);
    } else {
        close(p[0]);
    }
    for (int fd : {p[1], ann[0], ann[1]}) close(fd);
    return took;
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    CHECK(argc == 2);
    const std::string_view mode = argv[1];
    CHECK(mode == "spin" || mode == "blocked");
    const bool blocked = mode == "blocked";
    const int trials = blocked ? 1 : 10;
    for (Wait op : {Wait::Read, Wait::Write, Wait::Poll, Wait::Fread}) {
        PROGRESS("%s: cancel %s, %d time(s)", wait_name(op),
                 blocked ? "once it sleeps in the syscall" : "while it waits", trials);
        std::uint64_t total = 0;
        for (int i = 0; i < trials; ++i) total += cancel_once(op, blocked);
        PROGRESS("  ok: pthread_cancel to pthread_join took %.3f ms on average",
                 total / 1e6 / trials);
        if (!blocked && total >= trials * kBudgetNs / 2)
            fail(__FILE__, __LINE__,
                 "a cancellation during a spin does not wait for the spin's budget to run out", 0);
    }
    return 0;
}
