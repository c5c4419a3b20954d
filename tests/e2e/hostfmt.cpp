// Case hostfmt: a program with its own (shared, Debian) fmt and spdlog runs
// under the shim, which carries hidden copies of both. The program's logger
// and formatting must behave exactly as without the shim, including a logger
// that shares the shim's logger name.
#include <link.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "../support/helpers.h"

using namespace support;

namespace {

// The premise of the case: the real shared libraries are loaded.
bool loaded(const char* soname_prefix) {
    struct Ctx {
        const char* prefix;
        bool found;
    } ctx{soname_prefix, false};
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* data) {
            auto* c = static_cast<Ctx*>(data);
            const char* slash = std::strrchr(info->dlpi_name, '/');
            const char* base = slash != nullptr ? slash + 1 : info->dlpi_name;
            if (std::strncmp(base, c->prefix, std::strlen(c->prefix)) == 0) c->found = true;
            return 0;
        },
        &ctx);
    return ctx.found;
}

}  // namespace

int main() {
    CHECK(loaded("libfmt.so"));
    CHECK(loaded("libspdlog.so"));
    // Under the shim at debug level its logging library (with the hidden
    // copies) is already loaded too; the driver looks for this line.
    if (loaded("libpipespin-log.so")) std::fprintf(stderr, "hostfmt: libpipespin-log.so loaded\n");

    auto log = spdlog::stdout_logger_mt("pipespin");
    log->set_pattern("[%n] %l: %v");
    log->set_level(spdlog::level::debug);
    CHECK(spdlog::get("pipespin") == log);

    // Some of what goes to the log travels through a pipe first.
    int p[2];
    make_pipe(p);
    const std::string sent = fmt::format("{:>8}|{:<6}|{:#x}|{:.3f}|{}", "fmt", 42, 255, 3.14159,
                                         std::vector<int>{1, 2, 3});
    write_full(p[1], sent.data(), sent.size());
    close(p[1]);
    char buf[256];
    const size_t n = read_full(p[0], buf, sizeof buf);
    close(p[0]);
    CHECK_EQ(n, sent.size());
    const std::string received(buf, n);
    CHECK(received == sent);

    log->info("received {} bytes: {}", n, received);
    log->warn("{:*^20}", " centred ");
    log->debug("{}", fmt::join(std::vector<std::string>{"a", "b", "c"}, "+"));
    log->flush();
    spdlog::drop_all();
    std::printf("%s\n", fmt::format("hostfmt: {}", "ok").c_str());
    return 0;
}
