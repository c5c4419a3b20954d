// coverage: the programs it runs, at which scale, and the inputs
// the feed programs read.
#include <fstream>

#include <fmt/format.h>

#include "bench/coverage/coverage.h"
#include "cli/util/spawn.h"
#include "cli/util/text.h"
#include "cli/util/tool_lookup.h"

namespace pipespin::bench::coverage {
namespace fs = std::filesystem;

std::vector<Program> all_programs(const Scale& s) {
    const std::string n = std::to_string(s.perf_loops);
    return {
        {"cat", {"cat"}, Role::Relay},
        {"wc", {"wc", "-l"}, Role::Feed, Input::Text},
        {"grep", {"grep", "--line-buffered", "line"}, Role::Relay},
        {"sed", {"sed", "-u", "s/line/LINE/"}, Role::Relay},
        {"sort", {"sort", "-r"}, Role::Feed, Input::Text},
        // mawk reads ahead to fill its buffer unless -W interactive.
        {"awk", {"awk", "-W", "interactive", "{ print $2 }"}, Role::Relay},
        {"gzip", {"gzip", "-dc"}, Role::Feed, Input::Gzip},
        // xz decodes some 20 MB/s here: slower still, or it never waits.
        {"xz", {"xz", "-dc"}, Role::Feed, Input::Xz, 500},
        {"zstd", {"zstd", "-dcq"}, Role::Feed, Input::Zstd},
        {"tar", {"tar", "-xOf", "-"}, Role::Feed, Input::Tar},
        {"python3",
         {"python3", "-u", "-c", "import sys; [sys.stdout.write(l) for l in sys.stdin]"},
         Role::Relay},
        {"perl", {"perl", "-ne", "$| = 1; print"}, Role::Relay},
        {"bash-read",
         {"bash", "-c", "while IFS= read -r l; do printf '%s\\n' \"$l\"; done"},
         Role::Relay},
        {"perf-pipe", {"perf", "bench", "sched", "pipe", "-l", n}, Role::Own},
        {"hackbench",
         {"hackbench", "-p", "-g", "1", "-f", "5", "-l", std::to_string(s.hackbench_loops)},
         Role::Own},
    };
}

std::vector<std::string> program_ids() {
    std::vector<std::string> ids;
    for (const Program& p : all_programs(kFull)) ids.push_back(p.id);
    return ids;
}
void make_inputs(Inputs& in, const Scale& s, const Environment& env) {
    const fs::path text = in.dir / "text.txt";
    {
        std::ofstream out(text);
        // Half of each line is noise, so that compressed input is not tiny.
        std::uint64_t x = 0x9e3779b97f4a7c15ull;
        for (std::uint64_t i = 0; i < s.text_lines; ++i) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out << fmt::format("line {:06d} {:016x}\n", i, x);
        }
    }
    in.files[Input::Text] = text;
    auto compress = [&](Input kind, std::string_view tool, std::vector<std::string> argv,
                        std::string_view ext) {
        const std::optional<std::string> path = resolve_command(tool);
        if (!path) return;  // the program itself is reported missing
        const fs::path target = in.dir / fmt::format("text.{}", ext);
        Measured m = spawn_measure(*path, argv, env, {.null_stdin = true, .capture_stderr = true});
        if (!exited_ok(m.wait_status)) {
            in.problems[kind] =
                fmt::format("'{}' {}", shell_join(argv), describe_wait_status(m.wait_status));
            return;
        }
        if (kind != Input::Tar) std::ofstream(target, std::ios::binary) << m.out;
        in.files[kind] = kind == Input::Tar ? in.dir / "text.tar" : target;
    };
    compress(Input::Gzip, "gzip", {"gzip", "-c", text.string()}, "gz");
    compress(Input::Xz, "xz", {"xz", "-c", text.string()}, "xz");
    compress(Input::Zstd, "zstd", {"zstd", "-qc", text.string()}, "zst");
    compress(Input::Tar, "tar",
             {"tar", "-cf", (in.dir / "text.tar").string(), "-C", in.dir.string(), "text.txt"},
             "tar");
}

}  // namespace pipespin::bench::coverage
