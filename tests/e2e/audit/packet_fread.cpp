// Case audit_packet_fread (from the third faithfulness audit): fread from a
// pipe in packet mode (pipe2 O_DIRECT: each read returns one packet and
// drops what did not fit) through a stream whose buffer setvbuf made
// smaller than a packet, the writer's packets one page each, paced so that
// the reader waits for each. Without the shim glibc reads every fread of
// 8 KiB straight into the caller's buffer, whole packets, and all bytes
// arrive. The shim's fread cut the call into pieces after each wait, a
// piece of one byte made glibc refill its 1 KiB buffer, and the read of
// 1 KiB dropped the other 3 KiB of the packet: 64 KiB of the 256 KiB
// arrived in fixed mode. The same with O_DIRECT set on the writer's end
// only (the reader's fd does not show it).
#include <sys/wait.h>

#include "../../support/helpers.h"

using namespace support;

namespace {

constexpr int kPackets = 64;
constexpr size_t kPacket = 4096;

// The bytes one fread loop gets from a pipe made as `how` says.
size_t run(bool writer_end_only) {
    int p[2];
    if (writer_end_only) {
        CHECK_EQ(pipe(p), 0);
        CHECK_EQ(fcntl(p[1], F_SETFL, O_DIRECT), 0);
    } else {
        CHECK_EQ(pipe2(p, O_DIRECT), 0);
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        static char packet[kPacket];
        for (int i = 0; i < kPackets; ++i) {
            std::memset(packet, 'a' + i % 26, sizeof packet);
            // A slow writer: the reader waits for each packet (the case;
            // every outcome of the race must give all the bytes).
            usleep(300);
            if (write(p[1], packet, sizeof packet) != static_cast<ssize_t>(sizeof packet)) _exit(2);
        }
        _exit(0);
    }
    close(p[1]);
    FILE* f = fdopen(p[0], "r");
    CHECK(f != nullptr);
    static char vbuf[1024];
    CHECK_EQ(setvbuf(f, vbuf, _IOFBF, sizeof vbuf), 0);
    static char buf[8192];
    size_t total = 0, n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) total += n;
    CHECK(std::feof(f) && !std::ferror(f));
    CHECK_EQ(std::fclose(f), 0);
    wait_ok(pid);
    return total;
}

}  // namespace

int main() {
    const size_t sent = kPackets * kPacket;
    const size_t both = run(false);
    const size_t writer_only = run(true);
    if (both != sent || writer_only != sent) {
        std::printf("packet_fread: %zu and %zu bytes of %zu arrived\n", both, writer_only, sent);
        return 1;
    }
    std::printf("packet_fread: ok\n");
    return 0;
}
