#include "common.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "cli.h"

extern char** environ;

namespace pipespin::cli {
namespace fs = std::filesystem;

namespace {

// ld.so splits LD_PRELOAD on these, so a path containing one cannot be named.
constexpr std::string_view kPreloadSeparators = ": ";

bool is_readable_file(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
           ::access(path.c_str(), R_OK) == 0;
}

bool same_file(const std::string& a, const std::string& b) {
    struct stat sa {};
    struct stat sb {};
    return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

std::string canonical_or_throw(const std::string& path, std::string_view why) {
    std::error_code ec;
    fs::path real = fs::canonical(path, ec);
    if (ec)
        throw Failure(kExitSetup, fmt::format("{} '{}': {}", why, printable(path), ec.message()));
    return real.string();
}

}  // namespace

// ArgCursor (cli.h) lives here with the other pieces every subcommand uses.
bool ArgCursor::at_flag() const noexcept {
    std::string_view w = peek();
    return w.size() > 1 && w.front() == '-' && w != "--";
}

bool ArgCursor::take_flag(std::string_view name) {
    if (done() || peek() != name) return false;
    ++pos_;
    return true;
}

std::optional<std::string_view> ArgCursor::take_value(std::string_view name) {
    std::string_view w = peek();
    if (w == name) {
        if (pos_ + 1 >= args_.size())
            throw UsageError(fmt::format("{}: {} needs a value", command_, name));
        std::string_view value = args_[pos_ + 1];
        pos_ += 2;
        return value;
    }
    if (w.size() > name.size() && w.starts_with(name) && w[name.size()] == '=') {
        ++pos_;
        return w.substr(name.size() + 1);
    }
    return std::nullopt;
}

bool ArgCursor::take_separator() {
    return take_flag("--");
}

std::string_view ArgCursor::take_word() {
    return done() ? std::string_view{} : args_[pos_++];
}

void ArgCursor::fail_unknown() const {
    if (at_flag())
        throw UsageError(fmt::format("{}: unknown option '{}'", command_, printable(peek())));
    throw UsageError(fmt::format("{}: unexpected argument '{}'", command_, printable(peek())));
}

std::string self_exe() {
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw Failure(kExitSetup, fmt::format("cannot read /proc/self/exe: {}", ec.message()));
    return p.string();
}

std::string find_library() {
    std::string chosen;
    if (const char* env = ::getenv(std::string(kLibraryEnv).c_str()); env != nullptr && *env) {
        // An explicit choice that does not exist is a mistake to report, not
        // a reason to quietly load some other copy.
        if (!is_readable_file(env))
            throw Failure(kExitSetup,
                          fmt::format("{}={} is not a readable file", kLibraryEnv, printable(env)));
        chosen = canonical_or_throw(env, "cannot resolve");
    } else {
        const std::vector<std::string> tried = library_search_path();
        for (const std::string& path : tried) {
            if (is_readable_file(path)) {
                chosen = canonical_or_throw(path, "cannot resolve");
                break;
            }
        }
        if (chosen.empty())
            throw Failure(kExitSetup,
                          fmt::format("cannot find {}; looked in:\n  {}\nset {} to its path",
                                      kLibraryName, fmt::join(tried, "\n  "), kLibraryEnv));
    }
    if (chosen.find_first_of(kPreloadSeparators) != std::string::npos)
        throw Failure(kExitSetup,
                      fmt::format("'{}' contains ':' or a space, which LD_PRELOAD cannot express; "
                                  "install or link the library elsewhere and set {}",
                                  printable(chosen), kLibraryEnv));
    return chosen;
}

std::vector<std::string> library_search_path() {
    std::vector<fs::path> candidates;
    // Without /proc (a bare chroot) only the install libdir is left to try.
    std::error_code ec;
    if (fs::path exe = fs::read_symlink("/proc/self/exe", ec); !ec) {
        const fs::path lib_dir = exe.parent_path() / ".." / "lib";
        candidates.push_back(lib_dir / kLibraryName);
        if (!kMultiarch.empty()) candidates.push_back(lib_dir / kMultiarch / kLibraryName);
    }
    if (!kInstallLibdir.empty()) candidates.push_back(fs::path(kInstallLibdir) / kLibraryName);
    std::vector<std::string> out;
    for (const fs::path& c : candidates) {
        std::string path = c.lexically_normal().string();
        if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
    }
    return out;
}

std::optional<std::string> empty_library_beside(const std::string& library) {
    const std::string path = (fs::path(library).parent_path() / kEmptyLibraryName).string();
    if (!is_readable_file(path) || path.find_first_of(kPreloadSeparators) != std::string::npos)
        return std::nullopt;
    return path;
}

std::vector<std::string> split_preload(std::string_view value) {
    std::vector<std::string> out;
    while (!value.empty()) {
        std::size_t end = value.find_first_of(kPreloadSeparators);
        std::string_view item = value.substr(0, end);
        if (!item.empty()) out.emplace_back(item);
        if (end == std::string_view::npos) break;
        value.remove_prefix(end + 1);
    }
    return out;
}

bool is_shim_entry(std::string_view entry) {
    std::size_t slash = entry.rfind('/');
    std::string_view base = slash == std::string_view::npos ? entry : entry.substr(slash + 1);
    // libpipespin.so, and versioned names (libpipespin.so.0) should they appear.
    return base == kLibraryName ||
           (base.starts_with(kLibraryName) && base[kLibraryName.size()] == '.');
}

std::string preload_with(std::string_view existing, const std::string& library,
                         std::vector<std::string>* dropped) {
    std::vector<std::string> items = split_preload(existing);
    for (const std::string& item : items)
        if (item == library || same_file(item, library)) return std::string(existing);

    std::vector<std::string> kept{library};
    for (std::string& item : items) {
        if (is_shim_entry(item)) {
            if (dropped != nullptr) dropped->push_back(item);
            continue;
        }
        kept.push_back(std::move(item));
    }
    return fmt::format("{}", fmt::join(kept, ":"));
}

std::string preload_without_shim(std::string_view existing) {
    std::vector<std::string> items = split_preload(existing);
    std::erase_if(items, [](const std::string& item) { return is_shim_entry(item); });
    return fmt::format("{}", fmt::join(items, ":"));
}

Environment Environment::current() {
    Environment env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.entries_.emplace_back(*e);
    return env;
}

namespace {
bool has_name(const std::string& entry, std::string_view name) {
    return entry.size() > name.size() && entry[name.size()] == '=' && entry.starts_with(name);
}
}  // namespace

std::optional<std::string_view> Environment::get(std::string_view name) const {
    for (const std::string& e : entries_)
        if (has_name(e, name)) return std::string_view(e).substr(name.size() + 1);
    return std::nullopt;
}

void Environment::set(std::string_view name, std::string_view value) {
    unset(name);
    entries_.push_back(fmt::format("{}={}", name, value));
}

void Environment::unset(std::string_view name) {
    std::erase_if(entries_, [&](const std::string& e) { return has_name(e, name); });
}

void Environment::unset_prefix(std::string_view prefix) {
    std::erase_if(entries_, [&](const std::string& e) { return e.starts_with(prefix); });
}

void Environment::set_preload(const std::string& value) {
    if (value.empty())
        unset("LD_PRELOAD");
    else
        set("LD_PRELOAD", value);
}

ArmEnvironments::ArmEnvironments(std::string library, std::optional<std::uint32_t> spin_us,
                                 std::optional<std::string> empty_library)
    : library_(std::move(library)),
      empty_library_(std::move(empty_library)),
      spin_us_(spin_us),
      base_(Environment::current()) {
    base_.unset_prefix("PIPESPIN_");
    other_preloads_ = preload_without_shim(base_.get("LD_PRELOAD").value_or(""));
    base_.set_preload(other_preloads_);
}

Environment ArmEnvironments::of(const ArmKind& arm) const {
    if (arm.empty_preload) {
        if (!empty_library_)
            throw std::logic_error("an empty preload arm without libpipespin-empty.so");
        Environment env = base_;
        env.set_preload(other_preloads_.empty() ? *empty_library_
                                                : *empty_library_ + ":" + other_preloads_);
        return env;
    }
    if (!arm.mode) return base_;
    Environment env = base_;
    env.set_preload(preload_with(other_preloads_, library_));
    const OptionSpec& mode = option_spec(OptionId::Mode);
    env.set(env_name(mode), format_value(mode, static_cast<std::uint32_t>(*arm.mode)));
    if (spin_us_) {
        const OptionSpec& spin = option_spec(OptionId::SpinUs);
        env.set(env_name(spin), format_value(spin, *spin_us_));
    }
    return env;
}

Captured spawn_capture(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env) {
    Measured m = spawn_measure(path, argv, env);
    return {m.wait_status, std::move(m.out)};
}

namespace {

// An anonymous file; closed on scope exit.
class MemoryFile {
public:
    explicit MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
        if (fd_ < 0)
            throw Failure(kExitFailure, fmt::format("memfd_create: {}", std::strerror(errno)));
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    ~MemoryFile() { ::close(fd_); }

    int fd() const noexcept { return fd_; }
    std::string contents() const {
        std::string out;
        char buf[4096];
        for (off_t at = 0;;) {
            ssize_t n = ::pread(fd_, buf, sizeof buf, at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            out.append(buf, static_cast<std::size_t>(n));
            at += n;
        }
        return out;
    }
    void fill(std::string_view text) const {
        for (std::size_t at = 0; at < text.size();) {
            ssize_t n = ::pwrite(fd_, text.data() + at, text.size() - at, static_cast<off_t>(at));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0)
                throw Failure(kExitFailure,
                              fmt::format("writing a child's input: {}", std::strerror(errno)));
            at += static_cast<std::size_t>(n);
        }
    }

private:
    int fd_;
};

double to_us(const timeval& tv) {
    return static_cast<double>(tv.tv_sec) * 1e6 + static_cast<double>(tv.tv_usec);
}

}  // namespace

// The child's input and output; the fds it reads and writes are dup2'ed
// copies, so these close in the parent only.
class Child::Files {
public:
    MemoryFile out{"pipespin-stdout"};
    std::optional<MemoryFile> err, in;
};

Child::Child(const std::string& path, const std::vector<std::string>& argv, const Environment& env,
             const SpawnIo& io)
    : files_(std::make_unique<Files>()) {
    if (io.capture_stderr) files_->err.emplace("pipespin-stderr");
    if (io.input) {
        files_->in.emplace("pipespin-stdin");
        files_->in->fill(*io.input);
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // A memory file read through a dup2'ed fd starts at offset 0: pwrite
    // left the shared offset there.
    if (files_->in)
        posix_spawn_file_actions_adddup2(&actions, files_->in->fd(), STDIN_FILENO);
    else if (io.null_stdin)
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    // dup2 onto 1 and 2 clears FD_CLOEXEC there; the originals close at exec.
    posix_spawn_file_actions_adddup2(&actions, files_->out.fd(), STDOUT_FILENO);
    if (files_->err) posix_spawn_file_actions_adddup2(&actions, files_->err->fd(), STDERR_FILENO);

    std::vector<char*> cargv, cenv;
    for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const std::string& e : env.entries()) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);

    start_ = std::chrono::steady_clock::now();
    pid_t pid = -1;
    int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        throw Failure(kExitFailure, fmt::format("cannot run {}: {}", path, std::strerror(rc)));
    pid_ = pid;
}

Child::~Child() {
    if (reaped_) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

Measured Child::wait() {
    Measured m;
    struct rusage ru {};
    while (::wait4(pid_, &m.wait_status, 0, &ru) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    m.wall_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start_)
                    .count();
    m.user_us = to_us(ru.ru_utime);
    m.sys_us = to_us(ru.ru_stime);
    m.cpu_us = m.user_us + m.sys_us;
    m.vol_cs = ru.ru_nvcsw;
    m.invol_cs = ru.ru_nivcsw;
    m.out = files_->out.contents();
    if (files_->err) m.err = files_->err->contents();
    return m;
}

Measured spawn_measure(const std::string& path, const std::vector<std::string>& argv,
                       const Environment& env, SpawnIo io) {
    return Child(path, argv, env, io).wait();
}

std::string describe_wait_status(int wait_status) {
    if (WIFEXITED(wait_status))
        return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
    if (WIFSIGNALED(wait_status))
        return fmt::format("killed by signal {} ({})", WTERMSIG(wait_status),
                           ::strsignal(WTERMSIG(wait_status)));
    return fmt::format("ended with wait status {:#x}", wait_status);
}

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

std::string flag_name(const OptionSpec& spec) {
    std::string out = "--";
    for (char c : spec.name) out += c == '_' ? '-' : c;
    return out;
}

std::uint32_t parse_flag_value(std::string_view command, const OptionSpec& spec,
                               std::string_view text) {
    ParsedValue pv = parse_value(spec, text, Options{}.*spec.field);
    if (!pv.problem.empty())
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {})", command,
                                     printable(text), flag_name(spec), accepted_values(spec)));
    return pv.value;
}

std::string parse_flag_text(std::string_view command, const OptionSpec& spec,
                            std::string_view text) {
    Options o;
    if (apply_option(spec, text, o) != ParseStatus::Ok)
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {})", command,
                                     printable(text), flag_name(spec), accepted_values(spec)));
    return format_option(spec, o);
}

void parse_name_list(std::string_view command, std::string_view flag, std::string_view what,
                     std::string_view text, const std::vector<std::string>& known,
                     std::vector<std::string>& into) {
    std::string_view rest = text;
    while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        const std::string id(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
        if (id.empty()) continue;
        if (std::find(known.begin(), known.end(), id) == known.end())
            throw UsageError(fmt::format("{}: unknown {} '{}' (known: {})", command, what,
                                         printable(id), fmt::join(known, ", ")));
        into.push_back(id);
    }
    if (into.empty()) throw UsageError(fmt::format("{}: {} is empty", command, flag));
}

std::uint64_t parse_count(std::string_view command, std::string_view flag, std::string_view text,
                          std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < min || v > max)
        throw UsageError(fmt::format("{}: invalid value '{}' for {} (accepted: {}..{})", command,
                                     printable(text), flag, min, max));
    return v;
}

std::optional<double> parse_decimal(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    double v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return v;
}

Summary summarize(std::span<const double> samples) {
    if (samples.empty()) return {};
    std::vector<double> v(samples.begin(), samples.end());
    std::sort(v.begin(), v.end());
    auto quantile = [&](double p) {
        const double h = static_cast<double>(v.size() - 1) * p;
        const auto lo = static_cast<std::size_t>(h);
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
    };
    return {quantile(0.5), v.front(), v.back(), quantile(0.25), quantile(0.75)};
}

TempDir::TempDir(std::string_view what) {
    std::string tmpl = (fs::temp_directory_path() / fmt::format("{}.XXXXXX", what)).string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw Failure(kExitFailure, fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
    path_ = std::move(tmpl);
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::string shell_quote(std::string_view arg) {
    constexpr std::string_view kSafe =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%_+=:,./-";
    if (!arg.empty() && arg.find_first_not_of(kSafe) == std::string_view::npos)
        return std::string(arg);
    std::string out = "'";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string shell_join(std::span<const std::string> words) {
    std::vector<std::string> quoted;
    for (const std::string& w : words) quoted.push_back(shell_quote(w));
    return fmt::format("{}", fmt::join(quoted, " "));
}

std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 200)) {
        auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f)
            out += c;
        else
            out += fmt::format("\\x{:02x}", u);
    }
    if (s.size() > 200) out += "...";
    return out;
}

std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (u < 0x20)
                    out += fmt::format("\\u{:04x}", u);
                else
                    out += c;  // UTF-8 passes through; JSON allows it
        }
    }
    return out + "\"";
}

std::string wrap(std::string_view text, std::size_t indent, std::size_t width) {
    const std::string pad(indent, ' ');
    std::string out, line;
    auto flush = [&] {
        if (!line.empty()) out += pad + line + "\n";
        line.clear();
    };
    while (!text.empty()) {
        std::size_t sp = text.find(' ');
        std::string_view word = text.substr(0, sp);
        text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
        if (word.empty()) continue;
        if (!line.empty() && indent + line.size() + 1 + word.size() > width) flush();
        if (!line.empty()) line += ' ';
        line += word;
    }
    flush();
    return out;
}

std::string usage_entry(std::string_view synopsis, std::string_view text) {
    return std::string(synopsis) + wrap(text, 6);
}

}  // namespace pipespin::cli
