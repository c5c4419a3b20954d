// Case altstack: handlers on alternate signal stacks that leave no room,
// or no write access, for anything between the kernel and the handler.
//
//   altstack readonly
//     An empty SIGHUP handler (`ret`, plus a locked increment of a global)
//     runs on a sigaltstack (SA_ONSTACK) that another thread flips between
//     read-write and read-only with mprotect, and an empty SIGSEGV handler on
//     the normal stack absorbs the deliveries the kernel cannot write onto
//     the read-only stack (the Linux Test Project checks the kernel's FPU
//     state handling this way). 30000 SIGHUPs; each must end in exactly one
//     of the two handlers. The SIGHUP handler only reads its stack, so without
//     the shim the program exits 0. A shim that wraps handlers and pushes
//     anything on the way (a call's return address, a frame) faults when the
//     flip lands between the kernel's frame and the handler, and a fault on
//     the alternate stack cannot be delivered: the program dies of SIGSEGV.
//     Why spinning modes may differ: in mode off (and wherever nothing can
//     spin) the shim installs the program's handlers as they are; while
//     something can spin it installs a trampoline in front of each, which on
//     x86_64 writes and reads nothing on the stack (so this case runs in every
//     mode there). Elsewhere the trampoline is C: the bound is one call frame
//     (0 bytes when the compiler makes the call a tail call, as it does when
//     optimising), and the case is skipped in the spinning modes.
//
//   altstack tight
//     1. A handler (plain and SA_SIGINFO, 200 signals each) on an alternate
//        stack of sysconf(_SC_MINSIGSTKSZ) bytes (the kernel's own minimum
//        for this CPU), with an inaccessible page below it.
//     2. x86_64: the stack pointer the handler sees. A handler installed by a
//        raw rt_sigaction system call (never wrapped) records its stack
//        pointer: the kernel's frame is D bytes below the top. Then the same
//        handler, installed with sigaction(), on a stack of D bytes rounded
//        up to 64 with an inaccessible page below: it must find the stack
//        pointer exactly D bytes below the top, i.e. nothing between the
//        kernel and the handler used a byte of the stack (a call frame would
//        also run into the guard page and kill the program).
#include <sys/auxv.h>
#include <sys/mman.h>

#include <string_view>
#include <thread>

#include "rel.h"

using namespace rel;

extern "C" {
volatile int rel_hups = 0;
volatile int rel_sp_hits = 0;
volatile unsigned long rel_sp = 0;
void rel_empty_hup(int);
void rel_record_sp(int);
}

#if defined(__x86_64__)
// Handlers that touch no stack but the return address they read.
asm(R"(
    .text
    .globl rel_empty_hup
    .type rel_empty_hup, @function
rel_empty_hup:
    lock incl rel_hups(%rip)
    ret
    .size rel_empty_hup, .-rel_empty_hup
    .globl rel_record_sp
    .type rel_record_sp, @function
rel_record_sp:
    movq %rsp, rel_sp(%rip)
    lock incl rel_sp_hits(%rip)
    ret
    .size rel_record_sp, .-rel_record_sp
)");
constexpr bool kAsmHandlers = true;
#else
extern "C" void rel_empty_hup(int) {
    __atomic_add_fetch(&rel_hups, 1, __ATOMIC_RELAXED);
}
extern "C" void rel_record_sp(int) {}
constexpr bool kAsmHandlers = false;
#endif

namespace {

volatile sig_atomic_t g_segvs = 0;
void on_segv(int) {
    g_segvs = g_segvs + 1;
}

volatile sig_atomic_t g_ran = 0;
void count_plain(int sig) {
    if (sig == SIGUSR1) g_ran = g_ran + 1;
}
void count_info(int sig, siginfo_t* si, void*) {
    if (sig == SIGUSR1 && si != nullptr && si->si_signo == SIGUSR1) g_ran = g_ran + 1;
}

long page_size() {
    return sysconf(_SC_PAGESIZE);
}

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

// An alternate stack of exactly `size` bytes with an inaccessible page
// right below it; returns its lowest address.
char* guarded_stack(std::size_t size) {
    const std::size_t page = static_cast<std::size_t>(page_size());
    const std::size_t len = page + round_up(size, page);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    char* base = static_cast<char*>(p);
    CHECK_EQ(mprotect(base, page, PROT_NONE), 0);
    return base + page;
}

void use_altstack(char* sp, std::size_t size) {
    stack_t ss{};
    ss.ss_sp = sp;
    ss.ss_size = size;
    CHECK_EQ(sigaltstack(&ss, nullptr), 0);
}

void send_self(int sig) {
    CHECK_EQ(syscall(SYS_tgkill, getpid(), gettid_(), sig), 0);
}

bool spinning_config() {
    return config() == Config::Fixed || config() == Config::Adaptive;
}

int readonly_case() {
    if (!kAsmHandlers && spinning_config()) {
        std::printf("SKIP: the C trampoline of this architecture may use a call frame\n");
        return 77;
    }
    constexpr int kSignals = 30000;
    const std::size_t size = 64 * 1024;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    use_altstack(static_cast<char*>(p), size);

    struct sigaction hup {};
    hup.sa_handler = rel_empty_hup;
    hup.sa_flags = SA_ONSTACK | SA_RESTART;
    sigemptyset(&hup.sa_mask);
    CHECK_EQ(sigaction(SIGHUP, &hup, nullptr), 0);
    struct sigaction segv {};
    segv.sa_handler = on_segv;
    sigemptyset(&segv.sa_mask);
    CHECK_EQ(sigaction(SIGSEGV, &segv, nullptr), 0);

    std::atomic<bool> stop{false};
    std::atomic<long> flips{0};
    std::thread flipper([&] {
        block_signal(SIGHUP, true);
        while (!stop.load(std::memory_order_relaxed)) {
            CHECK_EQ(mprotect(p, size, PROT_READ), 0);
            CHECK_EQ(mprotect(p, size, PROT_READ | PROT_WRITE), 0);
            flips.fetch_add(1, std::memory_order_relaxed);
        }
    });
    PROGRESS("readonly: %d SIGHUPs onto a stack flipped read-only and back", kSignals);
    for (int i = 0; i < kSignals; ++i) send_self(SIGHUP);
    stop.store(true);
    flipper.join();
    const int hups = rel_hups, segvs = g_segvs;
    PROGRESS(
        "  %d ran on the alternate stack, %d could not be delivered there (SIGSEGV), %ld "
        "flips",
        hups, segvs, flips.load());
    if (segvs == 0) PROGRESS("  NOTE: no delivery met the read-only stack (a loaded machine?)");
    CHECK_EQ(hups + segvs, kSignals);
    PROGRESS("ok");
    return 0;
}

void deliver_on(char* sp, std::size_t size, bool siginfo, int times) {
    use_altstack(sp, size);
    struct sigaction sa {};
    if (siginfo)
        sa.sa_sigaction = count_info;
    else
        sa.sa_handler = count_plain;
    sa.sa_flags = SA_ONSTACK | (siginfo ? SA_SIGINFO : 0);
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
    g_ran = 0;
    for (int i = 0; i < times; ++i) send_self(SIGUSR1);
    CHECK_EQ(g_ran, times);
}

// The kernel's restorer, from an action glibc installed (a raw install
// needs one).
void* libc_restorer() {
    struct sigaction sa {};
    sa.sa_handler = count_plain;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR2, &sa, nullptr), 0);
    return kernel_action(SIGUSR2).restorer;
}

int tight_case() {
    long min = sysconf(_SC_MINSIGSTKSZ);
    if (min < 2048) min = 2048;
    const std::size_t min_size = static_cast<std::size_t>(min);
    PROGRESS("tight: plain and SA_SIGINFO handlers on a %zu-byte alternate stack", min_size);
    char* sp = guarded_stack(min_size);
    deliver_on(sp, min_size, false, 200);
    deliver_on(sp, min_size, true, 200);

    if (!kAsmHandlers) {
        PROGRESS("  (the stack pointer check needs the x86_64 handlers: not run)");
        PROGRESS("ok");
        return 0;
    }
    // The kernel's frame, measured with a handler no shim wraps.
    const std::size_t big = 256 * 1024;
    char* calib = guarded_stack(big);
    use_altstack(calib, big);
    const KernelAction k{reinterpret_cast<void*>(rel_record_sp), SA_ONSTACK | kSaRestorer,
                         libc_restorer(), 0};
    CHECK_EQ(syscall(SYS_rt_sigaction, SIGUSR1, &k, nullptr, 8), 0);
    rel_sp_hits = 0;
    send_self(SIGUSR1);
    CHECK_EQ(rel_sp_hits, 1);
    const std::size_t frame = reinterpret_cast<std::uintptr_t>(calib + big) - rel_sp;
    CHECK(frame > 0 && frame < big);

    const std::size_t size = round_up(frame, 64);
    PROGRESS(
        "tight: the kernel's frame takes %zu bytes; a handler on a %zu-byte stack must find "
        "the stack pointer where the kernel left it",
        frame, size);
    char* tight = guarded_stack(size);
    use_altstack(tight, size);
    for (bool siginfo : {false, true}) {
        struct sigaction sa {};
        sa.sa_handler = rel_record_sp;
        sa.sa_flags = SA_ONSTACK | (siginfo ? SA_SIGINFO : 0);
        sigemptyset(&sa.sa_mask);
        CHECK_EQ(sigaction(SIGUSR1, &sa, nullptr), 0);
        for (int i = 0; i < 100; ++i) {
            rel_sp_hits = 0;
            rel_sp = 0;
            send_self(SIGUSR1);
            CHECK_EQ(rel_sp_hits, 1);
            const std::size_t seen = reinterpret_cast<std::uintptr_t>(tight + size) - rel_sp;
            if (seen != frame) {
                std::fprintf(stderr, "the handler found %zu bytes used below the top, not %zu\n",
                             seen, frame);
                fail(__FILE__, __LINE__,
                     "nothing uses the stack between the kernel and the handler", 0);
            }
        }
    }
    PROGRESS("ok");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    announce_main_pid();
    const std::string_view what = argc == 2 ? argv[1] : "";
    if (what == "readonly") return readonly_case();
    if (what == "tight") return tight_case();
    std::fprintf(stderr, "usage: altstack readonly|tight\n");
    return 2;
}
