#include "cli/util/tool_lookup.h"

#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "cli/util/spawn.h"
#include "cli/util/text.h"

namespace pipespin::cli {
namespace fs = std::filesystem;

namespace {

struct ToolPackage {
    std::string_view tool, package;
};
constexpr ToolPackage kPackages[] = {
    {"perf", "linux-perf"},
    {"hackbench", "rt-tests"},
    {"gnuplot", "gnuplot-nox"},
    {"sh", "dash"},
    {"bash", "bash"},
    {"dd", "coreutils"},
    {"cat", "coreutils"},
    {"seq", "coreutils"},
    {"wc", "coreutils"},
    {"true", "coreutils"},
    {"sleep", "coreutils"},
    {"sort", "coreutils"},
    {"xargs", "findutils"},
    {"make", "make"},
    {"python3", "python3"},
    {"perl", "perl"},
    {"grep", "grep"},
    {"sed", "sed"},
    {"awk", "mawk"},
    {"gzip", "gzip"},
    {"xz", "xz-utils"},
    {"zstd", "zstd"},
    {"tar", "tar"},
};

std::string kernel_release() {
    utsname u{};
    return ::uname(&u) == 0 ? u.release : "?";
}

// Debian's /usr/bin/perf is a wrapper that runs perf_X.Y for the
// running kernel and, when there is none, prints "WARNING: perf not found for
// kernel X.Y" and fails. Then the newest perf_* beside it is the real one.
Located locate_perf(const std::string& wrapper, const Environment& env) {
    auto works = [&](const std::string& path) {
        Measured m = spawn_measure(path, {"perf", "version"}, env, {true, true});
        return std::make_pair(exited_ok(m.wait_status), m.out + m.err);
    };
    auto [ok, said] = works(wrapper);
    if (ok && said.find("perf not found for kernel") == std::string::npos) return {wrapper, ""};
    if (said.find("perf not found for kernel") == std::string::npos)
        return {std::nullopt, fmt::format("'{} version' failed: {}", wrapper,
                                          printable(said.substr(0, said.find('\n'))))};

    const fs::path dir = fs::path(wrapper).parent_path();
    std::string newest;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with("perf_") && ::access(e.path().c_str(), X_OK) == 0 &&
            (newest.empty() || ::strverscmp(name.c_str(), newest.c_str()) > 0))
            newest = name;
    }
    if (newest.empty() || !works((dir / newest).string()).first)
        return {std::nullopt,
                fmt::format("{} is Debian's wrapper and finds no perf for kernel {}, nor a "
                            "working perf_* beside it",
                            wrapper, kernel_release())};
    return {(dir / newest).string(),
            fmt::format("{} finds no perf for kernel {}; using {}", wrapper, kernel_release(),
                        (dir / newest).string())};
}

}  // namespace

std::optional<std::string> resolve_command(std::string_view cmd) {
    if (cmd.empty()) return std::nullopt;
    if (cmd.find('/') != std::string_view::npos) return std::string(cmd);

    std::string search;
    if (const char* p = ::getenv("PATH"); p != nullptr) {
        search = p;
    } else {
        // What execvp searches when PATH is unset.
        std::size_t n = ::confstr(_CS_PATH, nullptr, 0);
        search.resize(n);
        ::confstr(_CS_PATH, search.data(), n);
        search.resize(n > 0 ? n - 1 : 0);
    }
    std::string_view rest = search;
    for (;;) {
        std::size_t colon = rest.find(':');
        std::string_view dir = rest.substr(0, colon);
        // An empty element means the current directory, as for execvp.
        std::string candidate = dir.empty() ? std::string(cmd) : fmt::format("{}/{}", dir, cmd);
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        if (colon == std::string_view::npos) break;
        rest.remove_prefix(colon + 1);
    }
    return std::nullopt;
}

std::string_view package_of(std::string_view tool) {
    for (const ToolPackage& p : kPackages)
        if (p.tool == tool) return p.package;
    return "?";
}

Located locate_tool(std::string_view tool, const Environment& env) {
    std::optional<std::string> path = resolve_command(tool);
    if (!path)
        return {std::nullopt,
                fmt::format("{} is not installed (Debian package: {})", tool, package_of(tool))};
    if (tool == "perf") {
        Located perf = locate_perf(*path, env);
        if (!perf.path) perf.note += fmt::format(" (Debian package: {})", package_of(tool));
        return perf;
    }
    return {path, ""};
}

}  // namespace pipespin::cli
