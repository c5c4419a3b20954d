// The config file: precedence, matching, every class of bad input, the file
// checks, and preload.conf.example against the option table.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "option_spec.h"

using namespace pipespin;
using pipespin::test::spec;

namespace {

std::size_t idx(std::string_view name) {
    return option_index(spec(name));
}

struct Parsed {
    Options options;
    OptionSources sources;
    std::vector<std::string> problems;
    unsigned count = 0;
    std::string all() const {
        std::string s;
        for (const auto& p : problems) s += p + "\n";
        return s;
    }
};

void collect(void* ctx, const char* message) {
    static_cast<std::vector<std::string>*>(ctx)->emplace_back(message);
}

const ProgramId kCat{"/usr/bin/cat", "cat", "cat"};

Parsed parse(const std::string& text, const ProgramId& program = kCat, bool root_owned = false) {
    Parsed p;
    p.count = apply_config_text(text, "t.conf", program, root_owned, p.options, p.sources, collect,
                                &p.problems);
    return p;
}

struct Env {
    std::map<std::string, std::string> vars;
    static const char* get(const char* name, void* ctx) {
        auto& self = *static_cast<Env*>(ctx);
        auto it = self.vars.find(name);
        return it == self.vars.end() ? nullptr : it->second.c_str();
    }
};

// A scratch directory, removed at the end.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/pipespin-config-test.XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
    std::string write(const std::string& name, const std::string& text, mode_t mode = 0644) {
        const std::string p = path + "/" + name;
        {
            std::ofstream f(p, std::ios::binary | std::ios::trunc);
            f << text;
        }
        REQUIRE(::chmod(p.c_str(), mode) == 0);
        return p;
    }
};

struct Loaded {
    LoadStatus status;
    std::string text;
    std::string why;
};

Loaded load(const std::string& path, unsigned euid = static_cast<unsigned>(::geteuid())) {
    std::vector<char> buf(kConfigMaxBytes + 1);
    std::size_t len = 0;
    FileStamp stamp;
    char why[256];
    LoadStatus st =
        load_config_file(path.c_str(), euid, buf.data(), buf.size(), len, stamp, why, sizeof why);
    return {st, std::string(buf.data(), len), why};
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

// ---- precedence ---------------------------------------------------------------

TEST_CASE("config: defaults < [global] < [program] < environment", "[config]") {
    TempDir dir;
    const std::string path = dir.write("p.conf",
                                       "[program cat]\n"
                                       "spin_us = 300\n"
                                       "probe = poll\n"
                                       "[global]\n"
                                       "spin_us = 100\n"
                                       "mode = fixed\n"
                                       "probe = fionread\n"
                                       "log = info\n");
    Env env;
    env.vars["PIPESPIN_PROBE"] = "nowait";
    ConfigCheck c = check_config(path, true, kCat, &Env::get, &env, ::geteuid());
    INFO(c.problems.size());
    CHECK(c.problem_count == 0);
    CHECK(c.options.mode() == Mode::Fixed);  // [global]
    CHECK(c.where[idx("mode")] == path + ":6");
    CHECK(c.options.spin_us == 300);  // [program] beats [global], even above it in the file
    CHECK(c.where[idx("spin_us")] == path + ":2");
    CHECK(c.options.probe() == Probe::Nowait);  // env beats both
    CHECK(c.where[idx("probe")] == "PIPESPIN_PROBE");
    CHECK(c.options.reload_ms == Options{}.reload_ms);  // default
    CHECK(c.where[idx("reload_ms")] == "default");
    CHECK(c.file_read);
}

TEST_CASE("config: without the program's section only [global] applies", "[config]") {
    Parsed p = parse("[global]\nspin_us = 100\n[program sort]\nspin_us = 300\n");
    CHECK(p.count == 0);
    CHECK(p.options.spin_us == 100);
    CHECK(p.sources.line[idx("spin_us")] == 2);
}

TEST_CASE("config: lines before any section are [global]", "[config]") {
    Parsed p = parse("spin_us = 7\n[program cat]\nmode = off\n");
    CHECK(p.count == 0);
    CHECK(p.options.spin_us == 7);
    CHECK(p.options.mode() == Mode::Off);
}

TEST_CASE("config: several matching sections apply in file order, the last wins", "[config]") {
    Parsed p = parse(
        "[program c*]\nspin_us = 1\nmode = off\n"
        "[program cat]\nspin_us = 2\n"
        "[program /usr/bin/*]\nprobe = poll\n");
    CHECK(p.count == 0);
    CHECK(p.options.spin_us == 2);
    CHECK(p.sources.line[idx("spin_us")] == 5);
    CHECK(p.options.mode() == Mode::Off);  // only the first set it
    CHECK(p.options.probe() == Probe::Poll);
}

TEST_CASE("config: a key repeated in one section: the last line wins", "[config]") {
    Parsed p = parse("[global]\nspin_us = 1\nspin_us = 2\n");
    CHECK(p.options.spin_us == 2);
    CHECK(p.sources.line[idx("spin_us")] == 3);
}

TEST_CASE("config: a bad environment value keeps the file's value", "[config]") {
    TempDir dir;
    const std::string path = dir.write("e.conf", "spin_us = 100\nlog_file = /tmp/x.log\n");
    Env env;
    env.vars["PIPESPIN_SPIN_US"] = "lots";
    env.vars["PIPESPIN_MODE"] = "OFF";
    env.vars["PIPESPIN_LOG_FILE"] = std::string(300, 'x');
    ConfigCheck c = check_config(path, true, kCat, &Env::get, &env, ::geteuid());
    CHECK(c.options.spin_us == 100);
    CHECK(c.where[idx("spin_us")] == path + ":1");
    CHECK(c.options.mode() == Mode::Off);
    CHECK(c.where[idx("mode")] == "PIPESPIN_MODE");
    CHECK(std::string(c.options.log_file.view()) == "/tmp/x.log");
    REQUIRE(c.problem_count == 2);
    CHECK(contains(c.problems[0], "PIPESPIN_SPIN_US: bad value 'lots'"));
    CHECK(contains(c.problems[0], "using 100"));
    CHECK(contains(c.problems[1], "PIPESPIN_LOG_FILE"));
    CHECK(contains(c.problems[1], "too long"));
}

TEST_CASE("config: an over-long environment value is refused whole, not cut", "[config]") {
    // Cut to its first 255 bytes, each of these would be a valid value.
    Env env;
    env.vars["PIPESPIN_MODE"] = "fixed" + std::string(300, ' ') + "junk";
    env.vars["PIPESPIN_SPIN_US"] = std::string(300, '0') + "1";
    env.vars["PIPESPIN_LOG_FILE"] = "/tmp/x.log" + std::string(300, ' ') + "junk";
    EnvOverlay overlay;
    capture_env(&Env::get, &env, overlay);
    CHECK(overlay.set[idx("mode")]);
    CHECK_FALSE(overlay.set[idx("probe")]);
    Options o;
    OptionSources s;
    std::vector<std::string> problems;
    CHECK(apply_env(overlay, o, s, collect, &problems) == 3);
    CHECK(o.mode() == Mode::Adaptive);  // the default
    CHECK(o.spin_us == 50);
    CHECK(o.log_file.view() == "stderr");
    CHECK(s.kind[idx("mode")] == SourceKind::Default);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0] ==
          "PIPESPIN_MODE: a value of 309 bytes starting 'fixed' is too long (at most 255); "
          "using adaptive");
    CHECK(problems[1] ==
          "PIPESPIN_SPIN_US: a value of 301 bytes starting '00000000000000000000000000000000' is "
          "too long (at most 255); using 50");
    CHECK(problems[2] ==
          "PIPESPIN_LOG_FILE: a value of 314 bytes starting '/tmp/x.log' is too long (at most "
          "255); using 'stderr'");
}

TEST_CASE("config: the variables as listed capture what getenv would", "[config]") {
    // The shim's start-up form: the PIPESPIN_* entries of the environment,
    // in its order. Names match exactly (case and length), and where one is
    // there twice the first counts, as getenv takes.
    const std::string long_value = "/tmp/x.log" + std::string(300, ' ');
    const std::vector<std::string> entries = {
        "PIPESPIN_MODE=fixed",   "PIPESPIN_SPIN_US=30",
        "PIPESPIN_MODE=off",     "PIPESPIN_mode=off",
        "PIPESPIN_SPIN=1",       "PIPESPIN_SPIN_US_X=2",
        "PIPESPIN_CONFIG=/nope", "PIPESPIN_LOG=",
        "PIPESPIN_PROBE",        "PIPESPIN_LOG_FILE=" + long_value};
    std::vector<const char*> vars;
    for (const auto& e : entries) vars.push_back(e.c_str());
    EnvOverlay listed;
    CHECK(capture_env_vars(vars.data(), static_cast<int>(vars.size()), listed) == 4);
    Env env;
    env.vars["PIPESPIN_MODE"] = "fixed";
    env.vars["PIPESPIN_SPIN_US"] = "30";
    env.vars["PIPESPIN_LOG"] = "";
    env.vars["PIPESPIN_LOG_FILE"] = long_value;
    EnvOverlay looked_up;
    CHECK(capture_env(&Env::get, &env, looked_up) == 4);
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        INFO("option " << i);
        CHECK(listed.set[i] == looked_up.set[i]);
        CHECK(listed.length[i] == looked_up.length[i]);
        CHECK(std::string(listed.value(i)) == std::string(looked_up.value(i)));
    }
    CHECK(std::string(listed.value(idx("mode"))) == "fixed");
    CHECK(listed.too_long(idx("log_file")));
    CHECK_FALSE(listed.set[idx("probe")]);
}

TEST_CASE("config: an environment value of 255 bytes is whole", "[config]") {
    Env env;
    env.vars["PIPESPIN_MODE"] = std::string(250, ' ') + "fixed";
    env.vars["PIPESPIN_SPIN_US"] = std::string(256, '0');
    EnvOverlay overlay;
    capture_env(&Env::get, &env, overlay);
    Options o;
    OptionSources s;
    std::vector<std::string> problems;
    CHECK(apply_env(overlay, o, s, collect, &problems) == 1);
    CHECK(o.mode() == Mode::Fixed);
    CHECK(s.kind[idx("mode")] == SourceKind::Env);
    CHECK(o.spin_us == 50);
    REQUIRE(problems.size() == 1);
    CHECK(contains(problems[0], "PIPESPIN_SPIN_US: a value of 256 bytes"));
}

TEST_CASE("config: an over-long environment value keeps the file's value", "[config]") {
    TempDir dir;
    const std::string path = dir.write("l.conf", "mode = off\n");
    Env env;
    env.vars["PIPESPIN_MODE"] = "fixed" + std::string(300, ' ');
    ConfigCheck c = check_config(path, true, kCat, &Env::get, &env, ::geteuid());
    CHECK(c.options.mode() == Mode::Off);
    CHECK(c.where[idx("mode")] == path + ":1");
    REQUIRE(c.problem_count == 1);
    CHECK(contains(c.problems[0], "PIPESPIN_MODE: a value of 305 bytes starting 'fixed'"));
    CHECK(contains(c.problems[0], "using off"));
}

TEST_CASE("config: a file owned by root names files by absolute paths only", "[config]") {
    const std::string text =
        "log_file = rel.log\nstats = ./s.jsonl\n[program cat]\nstats = s/%p.jsonl\n"
        "[program other]\nlog_file = x.log\n";
    Parsed root = parse(text, kCat, true);
    CHECK(root.count == 4);  // the [program other] line is checked too
    CHECK(root.options.log_file.view() == "stderr");
    CHECK(root.options.stats.empty());
    CHECK(root.sources.kind[idx("stats")] == SourceKind::Default);
    REQUIRE(root.problems.size() == 4);
    CHECK(root.problems[0] ==
          "t.conf:1: log_file: relative path 'rel.log' refused in a file owned by root (each "
          "process would resolve it in its own working directory); using 'stderr'");
    CHECK(contains(root.problems[1], "t.conf:2: stats: relative path './s.jsonl' refused"));
    CHECK(contains(root.problems[1], "using ''"));
    CHECK(contains(root.problems[2], "t.conf:4: stats: relative path 's/%p.jsonl'"));
    CHECK(contains(root.problems[3], "t.conf:6: log_file: relative path 'x.log'"));
    // Absolute paths, stderr and empty are fine; so is anything in a user's file.
    Parsed ok = parse("log_file = /var/log/p.log\nstats = stderr\nstats =\n", kCat, true);
    CHECK(ok.count == 0);
    CHECK(ok.options.log_file.view() == "/var/log/p.log");
    // log_file's destinations that are no file.
    for (const char* dest : {"syslog", "journal", "syslog:/run/my.sock"}) {
        Parsed d = parse(std::string("log_file = ") + dest + "\n", kCat, true);
        CHECK(d.count == 0);
        CHECK(d.options.log_file.view() == dest);
    }
    Parsed rel = parse("log_file = syslog:my.sock\nstats = syslog\n", kCat, true);
    CHECK(rel.count == 2);
    Parsed user = parse(text, kCat, false);
    CHECK(user.count == 0);
    CHECK(user.options.log_file.view() == "rel.log");
    CHECK(user.options.stats.view() == "s/%p.jsonl");
}

TEST_CASE("config: the loader knows who owns the file", "[config]") {
    TempDir dir;
    const std::string path = dir.write("o.conf", "stats = rel.jsonl\n");
    ConfigCheck c = check_config(path, true, kCat, nullptr, nullptr, ::geteuid());
    if (::geteuid() == 0) {
        REQUIRE(c.problem_count == 1);
        CHECK(contains(c.problems[0], "o.conf:1: stats: relative path 'rel.jsonl' refused"));
        CHECK(c.options.stats.empty());
    } else {
        CHECK(c.problem_count == 0);
        CHECK(c.options.stats.view() == "rel.jsonl");
    }
}

// ---- matching -----------------------------------------------------------------

TEST_CASE("config: globs", "[config]") {
    CHECK(glob_match("cat", "cat"));
    CHECK_FALSE(glob_match("cat", "cats"));
    CHECK_FALSE(glob_match("cats", "cat"));
    CHECK(glob_match("*", ""));
    CHECK(glob_match("*", "anything"));
    CHECK(glob_match("py*", "python3.11"));
    CHECK(glob_match("*3.1?", "python3.11"));
    CHECK_FALSE(glob_match("*3.1?", "python3.1"));
    CHECK(glob_match("a*b*c", "aXbYbZc"));
    CHECK_FALSE(glob_match("a*b*c", "aXbYbZ"));
    CHECK(glob_match("[ch]at", "hat"));
    CHECK_FALSE(glob_match("[ch]at", "bat"));
    CHECK(glob_match("[a-c]at", "bat"));
    CHECK(glob_match("[!a-c]at", "rat"));
    CHECK_FALSE(glob_match("[!a-c]at", "bat"));
    CHECK(glob_match("[]]x", "]x"));
    CHECK(glob_match("\\*", "*"));
    CHECK_FALSE(glob_match("\\*", "a"));
    CHECK(glob_match("[ab", "[ab"));  // unterminated class: a literal '['
    CHECK(glob_match("/usr/*/cat", "/usr/bin/cat"));
}

TEST_CASE("config: [program] matches basename, argv[0], paths and lists", "[config]") {
    const ProgramId py{"/usr/bin/python3.11", "python3.11", "python3"};
    CHECK(program_matches("python3.11", py));
    CHECK(program_matches("python3", py));  // argv[0]: the symlink's name
    CHECK(program_matches("nginx python3", py));
    CHECK(program_matches("nginx\tpy*", py));
    CHECK(program_matches("/usr/bin/python3.11", py));
    CHECK(program_matches("/usr/bin/*", py));
    CHECK_FALSE(program_matches("/usr/bin/python3", py));  // a path is the executable's
    CHECK_FALSE(program_matches("bin/python3.11", py));    // full path, not a suffix
    CHECK_FALSE(program_matches("nginx", py));
    CHECK_FALSE(program_matches("", py));
    CHECK_FALSE(program_matches("python", py));
    const ProgramId unknown{};
    CHECK_FALSE(program_matches("*", unknown));
    CHECK(base_name("/a/b/c") == "c");
    CHECK(base_name("c") == "c");
}

TEST_CASE("config: section names are case-insensitive, program names are not", "[config]") {
    Parsed p = parse("[GLOBAL]\nspin_us = 3\n[Program CAT]\nspin_us = 4\n");
    CHECK(p.count == 0);
    CHECK(p.options.spin_us == 3);
}

// ---- the format -----------------------------------------------------------------

TEST_CASE("config: comments, blanks, CRLF, a BOM, case of keys", "[config]") {
    Parsed p = parse(
        "\xEF\xBB\xBF# header comment\r\n"
        "\r\n"
        "   [global]   # the defaults for everyone\r\n"
        "\tSPIN_US\t=\t80   # µs\r\n"
        "log_file = /tmp/a#b.log\n"
        "stats =\n"
        "mode = fixed#not-a-comment\n");
    INFO(p.all());
    CHECK(p.options.spin_us == 80);
    CHECK(std::string(p.options.log_file.view()) == "/tmp/a#b.log");
    CHECK(p.options.stats.empty());
    CHECK(p.sources.kind[idx("stats")] == SourceKind::File);
    // '#' not after a blank is part of the value.
    REQUIRE(p.count == 1);
    CHECK(contains(p.problems[0], "t.conf:7: mode: bad value 'fixed#not-a-comment'"));
}

TEST_CASE("config: an empty file and a file of comments change nothing", "[config]") {
    for (const char* text : {"", "\n\n", "# only\n# comments", "[global]\n"}) {
        Parsed p = parse(text);
        CHECK(p.count == 0);
        for (std::size_t i = 0; i < kOptionCount; ++i)
            CHECK(p.sources.kind[i] == SourceKind::Default);
    }
}

// ---- bad input: one problem each, with file:line, the text, and what was used ---

TEST_CASE("config: every class of bad line is reported and the rest applies", "[config]") {
    const std::string text =
        "[global]\n"                          // 1
        "spin_us = 10\n"                      // 2
        "frobnicate = 3\n"                    // 3 unknown key
        "mode = sometimes\n"                  // 4 bad value
        "spin_us = 5000000\n"                 // 5 above max
        "PIPESPIN_MODE = off\n"               // 6 env name
        "just words\n"                        // 7 not key=value
        "= 5\n"                               // 8 no key
        "[nonsense]\n"                        // 9 bad section
        "probe = poll\n"                      // 10 (ignored)
        "[program]\n"                         // 11 no name
        "probe = poll\n"                      // 12 (ignored)
        "[program cat\n"                      // 13 no ']'
        "probe = poll\n"                      // 14 (ignored)
        "[global]\n"                          // 15
        "log = loud\n"                        // 16 bad value
        "bad\x01line = 1\n"                   // 17 binary
        + std::string("nul\0byte = 1\n", 13)  // 18 binary
        + std::string(kConfigMaxLine + 1, 'x') +
        "\n"  // 19 too long
        "log_file = " +
        std::string(240, 'p') +
        "\n"                   // 20 text too long
        "[program cat]\n"      // 21
        "spin_read = maybe\n"  // 22 bad value
        "spin_write = off\n";  // 23 applies
    Parsed p = parse(text);
    INFO(p.all());
    REQUIRE(p.problems.size() == 15);
    CHECK(p.count == 15);
    const char* expected[] = {
        "t.conf:3: unknown key 'frobnicate'; ignored",
        "t.conf:4: mode: bad value 'sometimes' (expected off|fixed|adaptive); using adaptive",
        "t.conf:5: spin_us: value '5000000' is above the maximum 1000000; using 1000000",
        "t.conf:6: unknown key 'PIPESPIN_MODE' (keys are written without PIPESPIN_: mode)",
        "t.conf:7: not a 'key = value' line: 'just words'; ignored",
        "t.conf:8: no key before '=': '= 5'; ignored",
        "t.conf:9: unknown section '[nonsense]' (expected [global] or [program NAME]); lines "
        "up to the next section are ignored",
        "t.conf:11: section [program] needs a NAME",
        "t.conf:13: bad section header '[program cat' (no closing ']')",
        "t.conf:16: log: bad value 'loud' (expected off|error|warn|info|debug); using warn",
        "t.conf:17: binary data (a control byte at column 4): 'bad\\x01line = 1'; ignored",
        "t.conf:18: binary data (a control byte at column 4): 'nul\\x00byte = 1'; ignored",
        "t.conf:19: line too long (1025 bytes, at most 1024): 'xxxx",
        "t.conf:20: log_file: value 'ppp",
        "t.conf:22: spin_read: bad value 'maybe' (expected off|on); using on",
    };
    for (std::size_t i = 0; i < std::size(expected); ++i) {
        CAPTURE(i, p.problems[i]);
        CHECK(contains(p.problems[i], expected[i]));
    }
    CHECK(contains(p.problems[13], "too long (at most 231 bytes); using 'stderr'"));
    // The rest applied: [global]'s good lines, the clamped value, cat's good line.
    CHECK(p.options.spin_us == 1000000);
    CHECK(p.sources.line[idx("spin_us")] == 5);
    CHECK(p.options.mode() == Mode::Adaptive);
    CHECK(p.sources.kind[idx("mode")] == SourceKind::Default);
    CHECK(p.options.probe() == Probe::Nowait);  // every probe line was in a bad section
    CHECK(p.options.spin_read == 1);
    CHECK(p.options.spin_write == 0);
    CHECK(p.sources.line[idx("spin_write")] == 23);
}

TEST_CASE("config: offending text in messages is printable and bounded", "[config]") {
    Parsed p = parse("mode = " + std::string(500, '\xff') + "\n");
    REQUIRE(p.problems.size() == 1);
    CHECK(p.problems[0].size() < 512);
    CHECK(contains(p.problems[0], "\\xff\\xff"));
    CHECK(contains(p.problems[0], "..."));
    for (char c : p.problems[0]) CHECK((c >= 0x20 && c < 0x7f));
}

TEST_CASE("config: a binary file gives a bounded number of messages", "[config]") {
    std::string junk;
    for (int i = 0; i < 2000; ++i) junk += std::string("\x01\x02 = \x7f\n", 7);
    Parsed p = parse(junk);
    CHECK(p.count == 2000);
    REQUIRE(p.problems.size() == 51);
    CHECK(contains(p.problems.back(), "further problems not shown"));
}

TEST_CASE("config: problems in sections that do not match are reported too", "[config]") {
    Parsed p = parse("[program nginx]\nspin_us = fast\nwhatever = 1\n");
    REQUIRE(p.count == 2);
    CHECK(contains(p.problems[0], "t.conf:2: spin_us: bad value 'fast'"));
    CHECK(p.options.spin_us == Options{}.spin_us);
}

// ---- the file ---------------------------------------------------------------------

TEST_CASE("config file: a good file loads", "[config]") {
    TempDir dir;
    Loaded l = load(dir.write("ok.conf", "spin_us = 5\n"));
    CHECK(l.status == LoadStatus::Ok);
    CHECK(l.text == "spin_us = 5\n");
}

TEST_CASE("config file: missing, a directory, unreadable", "[config]") {
    TempDir dir;
    CHECK(load(dir.path + "/none.conf").status == LoadStatus::Missing);
    CHECK(load(dir.path).status == LoadStatus::NotRegular);
    Loaded l = load(dir.write("f", "x") + "/below");  // a file used as a directory
    CHECK(l.status == LoadStatus::Unreadable);
    CHECK(l.why == "a path component is not a directory");
    REQUIRE(::mkfifo((dir.path + "/fifo").c_str(), 0644) == 0);
    CHECK(load(dir.path + "/fifo").status == LoadStatus::NotRegular);  // and did not block
    REQUIRE(::symlink("loop", (dir.path + "/loop").c_str()) == 0);
    CHECK(load(dir.path + "/loop").status == LoadStatus::Unreadable);
}

TEST_CASE("config file: too large is refused whole", "[config]") {
    TempDir dir;
    Loaded l = load(dir.write("big.conf", std::string(kConfigMaxBytes + 1, '#')));
    CHECK(l.status == LoadStatus::TooLarge);
    CHECK(contains(l.why, "65537 bytes, at most 65536"));
    CHECK(load(dir.write("max.conf", std::string(kConfigMaxBytes, '#'))).status == LoadStatus::Ok);
}

TEST_CASE("config file: writable by others is refused", "[config]") {
    TempDir dir;
    Loaded l = load(dir.write("w.conf", "x = 1\n", 0666));
    CHECK(l.status == LoadStatus::Insecure);
    CHECK(contains(l.why, "writable by everybody (mode 0666)"));
    // Group-writable: refused unless the group is root's.
    const std::string g = dir.write("g.conf", "x = 1\n", 0664);
    REQUIRE((::chown(g.c_str(), static_cast<uid_t>(-1), 0) == 0 || ::geteuid() != 0));
    struct stat st {};
    REQUIRE(::stat(g.c_str(), &st) == 0);
    CHECK(load(g).status == (st.st_gid == 0 ? LoadStatus::Ok : LoadStatus::Insecure));
    if (::geteuid() == 0) {
        REQUIRE(::chown(g.c_str(), static_cast<uid_t>(-1), 65534) == 0);
        Loaded lg = load(g);
        CHECK(lg.status == LoadStatus::Insecure);
        CHECK(contains(lg.why, "writable by its group (mode 0664, group 65534)"));
    }
}

TEST_CASE("config file: owned by neither root nor the user is refused", "[config]") {
    TempDir dir;
    const std::string path = dir.write("o.conf", "x = 1\n");
    if (::geteuid() == 0) {
        CHECK(load(path, 0).status == LoadStatus::Ok);
        REQUIRE(::chown(path.c_str(), 65534, static_cast<gid_t>(-1)) == 0);
        Loaded l = load(path, 0);
        CHECK(l.status == LoadStatus::Insecure);
        CHECK(contains(l.why, "owned by uid 65534, neither root nor the running user (uid 0)"));
        CHECK(load(path, 65534).status == LoadStatus::Ok);
    } else {
        const unsigned me = static_cast<unsigned>(::geteuid());
        CHECK(load(path, me).status == LoadStatus::Ok);
        CHECK(load(path, me + 1).status == LoadStatus::Insecure);
    }
}

TEST_CASE("config file: a symlink is followed, the checks are on its target", "[config]") {
    TempDir dir;
    const std::string target = dir.write("t.conf", "spin_us = 9\n");
    REQUIRE(::symlink(target.c_str(), (dir.path + "/link.conf").c_str()) == 0);
    CHECK(load(dir.path + "/link.conf").status == LoadStatus::Ok);
    REQUIRE(::chmod(target.c_str(), 0666) == 0);
    CHECK(load(dir.path + "/link.conf").status == LoadStatus::Insecure);
}

TEST_CASE("config file: a refused or missing file is one problem, defaults apply", "[config]") {
    TempDir dir;
    const std::string path = dir.write("w.conf", "spin_us = 5\n", 0666);
    ConfigCheck c = check_config(path, false, kCat, nullptr, nullptr, ::geteuid());
    REQUIRE(c.problem_count == 1);
    CHECK(contains(c.problems[0], "w.conf: refused: writable by everybody"));
    CHECK(contains(c.problems[0], "file ignored, using the defaults and the environment"));
    CHECK(c.options.spin_us == Options{}.spin_us);
    CHECK_FALSE(c.file_read);
    // Missing: a problem only when the file was asked for.
    CHECK(check_config(dir.path + "/no.conf", false, kCat, nullptr, nullptr, 0).problem_count == 0);
    ConfigCheck m = check_config(dir.path + "/no.conf", true, kCat, nullptr, nullptr, 0);
    REQUIRE(m.problem_count == 1);
    CHECK(contains(m.problems[0], "no.conf: no such file"));
    // No path at all: nothing to read, nothing to report.
    CHECK(check_config("", true, kCat, nullptr, nullptr, 0).problem_count == 0);
}

TEST_CASE("config file: the stamp changes on an edit and on a replacement", "[config]") {
    TempDir dir;
    const std::string path = dir.write("s.conf", "spin_us = 5\n");
    const FileStamp a = stamp_path(path.c_str());
    CHECK(a.exists);
    CHECK(stamp_path(path.c_str()) == a);
    dir.write("s.conf", "spin_us = 50\n");  // in place, one byte longer
    const FileStamp b = stamp_path(path.c_str());
    CHECK_FALSE(b == a);
    const std::string other = dir.write("new.conf", "spin_us = 51\n");  // same size
    REQUIRE(::rename(other.c_str(), path.c_str()) == 0);
    const FileStamp c = stamp_path(path.c_str());
    CHECK_FALSE(c == b);
    CHECK(c.ino != b.ino);
    REQUIRE(::unlink(path.c_str()) == 0);
    CHECK_FALSE(stamp_path(path.c_str()).exists);
}

// ---- preload.conf.example cannot drift from the table -------------------------

TEST_CASE("preload.conf.example documents every option with its default", "[config]") {
    const std::string path = std::string(PIPESPIN_SOURCE_DIR) + "/preload.conf.example";
    std::ifstream f(path);
    REQUIRE(f.good());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    // Used as is, it is a valid file that changes nothing.
    Parsed p = parse(text, ProgramId{"/usr/bin/x", "x", "x"});
    INFO(p.all());
    CHECK(p.count == 0);
    const Options defaults;
    for (const OptionSpec& s : option_table()) {
        CAPTURE(s.name);
        CHECK(format_option(s, p.options) == format_option(s, defaults));
        // Set explicitly, to its default, in [global]...
        CHECK(p.sources.kind[option_index(s)] == SourceKind::File);
        // ...and documented with its range and default above that line.
        const std::string doc = "# " + std::string(s.name) + " = " + value_hint(s);
        CHECK(contains(text, doc));
        const std::string def = format_default(s);
        CHECK(contains(text, "(default: " + (def.empty() ? std::string("empty") : def) + ")"));
    }
}
