#include "core/config.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "core/out.h"
#include "platform/sys.h"

namespace pipespin {
namespace {

constexpr std::size_t kNpos = static_cast<std::size_t>(-1);

bool is_blank(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
    return s;
}

char lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

// Up to the first '#' that starts the line or follows a blank: "50 # µs".
std::string_view strip_comment(std::string_view line) noexcept {
    for (std::size_t i = 0; i < line.size(); ++i)
        if (line[i] == '#' && (i == 0 || is_blank(line[i - 1]))) return sub(line, 0, i);
    return line;
}

void put_octal(Out& o, std::uint32_t v) noexcept {
    char tmp[12];
    std::size_t n = 0;
    do {
        tmp[n++] = static_cast<char>('0' + (v & 7));
        v >>= 3;
    } while (v != 0 && n < sizeof tmp);
    o.put("0");
    for (std::size_t i = n; i > 0; --i) o.put({&tmp[i - 1], 1});
}

// strerror() is not async-signal-safe (locales): the few a config file meets.
const char* errno_text(long e) noexcept {
    switch (e) {
        case EACCES:
            return "permission denied";
        case EPERM:
            return "operation not permitted";
        case ENOENT:
            return "no such file";
        case ENOTDIR:
            return "a path component is not a directory";
        case ELOOP:
            return "too many levels of symbolic links";
        case ENAMETOOLONG:
            return "file name too long";
        case EISDIR:
            return "is a directory";
        case EIO:
            return "input/output error";
        case EMFILE:
        case ENFILE:
            return "too many open files";
        case ENOMEM:
            return "out of memory";
        default:
            return nullptr;
    }
}

void put_errno(Out& o, long e) noexcept {
    if (const char* t = errno_text(e)) {
        o.put(t);
    } else {
        o.put("errno ");
        o.num(static_cast<std::uint64_t>(e));
    }
}

// Problems in one file: counted always, passed on as messages up to a cap
// (a binary file must not produce thousands of lines).
struct Reporter {
    const char* path;
    ConfigWarn warn;
    void* ctx;
    unsigned count = 0;
    static constexpr unsigned kMaxShown = 50;

    template <class Fill>
    void at(unsigned line, Fill&& fill) noexcept {
        ++count;
        if (warn == nullptr || count > kMaxShown + 1) return;
        char msg[512];
        Out o{msg, sizeof msg};
        o.printable(path, 200);
        if (count == kMaxShown + 1) {
            o.put(": further problems not shown (see pipespin check-config)");
        } else {
            o.put(":");
            o.num(line);
            o.put(": ");
            fill(o);
        }
        warn(ctx, msg);
    }
};

enum class Section : std::uint8_t { Global, Program, Ignored };

// A text option's value that names a file by a relative path ("stderr" and
// "" name none).
bool relative_path(const OptionSpec& spec, std::string_view value) noexcept {
    return spec.kind == OptionKind::Text && !value.empty() && value != "stderr" &&
           value.front() != '/';
}

// One walk over the file. The checking walk reports every problem in every
// section and applies [global]; the second walk applies the matching
// [program] sections, silently (their problems were reported by the first).
struct Walker {
    const ProgramId& program;
    bool root_owned;
    Options& options;
    OptionSources& sources;
    Reporter& rep;
    bool checking;

    Section section = Section::Global;
    bool matches = false;

    void header(unsigned line, std::string_view raw, std::string_view text) noexcept {
        section = Section::Ignored;
        matches = false;
        if (text.size() < 2 || text.back() != ']') {
            if (checking)
                rep.at(line, [&](Out& o) {
                    o.put("bad section header '");
                    o.printable(raw);
                    o.put("' (no closing ']'); lines up to the next section are ignored");
                });
            return;
        }
        const std::string_view inner = trim(sub(text, 1, text.size() - 2));
        std::size_t sp = 0;
        while (sp < inner.size() && !is_blank(inner[sp])) ++sp;
        const std::string_view word = sub(inner, 0, sp);
        const std::string_view rest = trim(sub(inner, sp));
        if (iequals(word, "global") && rest.empty()) {
            section = Section::Global;
        } else if (iequals(word, "program") && !rest.empty()) {
            section = Section::Program;
            matches = program_matches(rest, program);
        } else if (checking) {
            rep.at(line, [&](Out& o) {
                if (iequals(word, "program")) {
                    o.put(
                        "section [program] needs a NAME (the executable's basename, a glob or "
                        "a path)");
                } else {
                    o.put("unknown section '");
                    o.printable(text);
                    o.put("' (expected [global] or [program NAME])");
                }
                o.put("; lines up to the next section are ignored");
            });
        }
    }

    void entry(unsigned line, std::string_view text) noexcept {
        const std::size_t eq = text.find('=');
        if (eq == std::string_view::npos) {
            if (checking)
                rep.at(line, [&](Out& o) {
                    o.put("not a 'key = value' line: '");
                    o.printable(text);
                    o.put("'; ignored");
                });
            return;
        }
        const std::string_view key = trim(sub(text, 0, eq));
        const std::string_view value = trim(sub(text, eq + 1));
        if (section == Section::Ignored) return;  // the header was reported
        char name[32];
        const OptionSpec* spec = nullptr;
        if (!key.empty() && key.size() < sizeof name) {
            for (std::size_t i = 0; i < key.size(); ++i) name[i] = lower(key[i]);
            spec = find_option({name, key.size()});
        }
        if (spec == nullptr) {
            if (!checking) return;
            rep.at(line, [&](Out& o) {
                if (key.empty()) {
                    o.put("no key before '=': '");
                    o.printable(text);
                    o.put("'; ignored");
                    return;
                }
                o.put("unknown key '");
                o.printable(key);
                o.put("'");
                constexpr std::string_view kPrefix = "pipespin_";
                if (key.size() > kPrefix.size() && iequals(sub(key, 0, kPrefix.size()), kPrefix) &&
                    find_option({name + kPrefix.size(), key.size() - kPrefix.size()})) {
                    o.put(" (keys are written without PIPESPIN_: ");
                    o.put({name + kPrefix.size(), key.size() - kPrefix.size()});
                    o.put(")");
                }
                o.put("; ignored");
            });
            return;
        }
        const bool apply = section == Section::Global ? checking : (!checking && matches);
        if (!apply && !checking) return;
        if (root_owned && relative_path(*spec, value)) {
            if (checking)
                rep.at(line, [&](Out& o) {
                    o.put(spec->name);
                    o.put(": relative path '");
                    o.printable(value);
                    o.put(
                        "' refused in a file owned by root (each process would resolve it in its "
                        "own working directory); using '");
                    o.printable((options.*spec->text).view());
                    o.put("'");
                });
            return;
        }
        char why[256];
        ParseStatus status;
        if (apply) {
            status = apply_option(*spec, value, options, checking ? why : nullptr, sizeof why);
        } else {
            // A [program] line, checked against what it would replace now.
            Options scratch = options;
            status = apply_option(*spec, value, scratch, why, sizeof why);
        }
        if (checking && status != ParseStatus::Ok)
            rep.at(line, [&](Out& o) {
                o.put(spec->name);
                o.put(": ");
                o.put(why);
            });
        const bool taken = status == ParseStatus::Ok || status == ParseStatus::AboveMax ||
                           status == ParseStatus::BelowMin;
        if (apply && taken) {
            const std::size_t i = option_index(*spec);
            sources.kind[i] = SourceKind::File;
            sources.line[i] = line;
        }
    }

    void run(std::string_view text) noexcept {
        if (sub(text, 0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a UTF-8 BOM
        unsigned line = 0;
        std::size_t pos = 0;
        while (pos < text.size()) {
            std::size_t end = text.find('\n', pos);
            if (end == std::string_view::npos) end = text.size();
            const std::string_view raw = sub(text, pos, end - pos);
            pos = end + 1;
            ++line;
            one_line(line, raw);
        }
    }

    void one_line(unsigned line, std::string_view raw) noexcept {
        if (raw.size() > kConfigMaxLine) {
            if (checking)
                rep.at(line, [&](Out& o) {
                    o.put("line too long (");
                    o.num(raw.size());
                    o.put(" bytes, at most ");
                    o.num(kConfigMaxLine);
                    o.put("): '");
                    o.printable(raw, 40);
                    o.put("'; ignored");
                });
            return;
        }
        std::size_t bad = kNpos;
        for (std::size_t i = 0; i < raw.size() && bad == kNpos; ++i) {
            const auto u = static_cast<unsigned char>(raw[i]);
            if ((u < 0x20 && u != '\t' && !(u == '\r' && i + 1 == raw.size())) || u == 0x7f)
                bad = i;
        }
        if (bad != kNpos) {
            if (checking)
                rep.at(line, [&](Out& o) {
                    o.put("binary data (a control byte at column ");
                    o.num(bad + 1);
                    o.put("): '");
                    o.printable(raw, 40);
                    o.put("'; ignored");
                });
            return;
        }
        const std::string_view text = trim(strip_comment(raw));
        if (text.empty()) return;
        if (text.front() == '[')
            header(line, raw, text);
        else
            entry(line, text);
    }
};

bool class_match(std::string_view p, std::size_t& pi, char c) noexcept {
    // p[pi] == '['. On return pi is past the class; no closing ']' makes
    // the '[' a literal.
    std::size_t j = pi + 1;
    bool negate = false;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        negate = true;
        ++j;
    }
    const std::size_t first = j;
    bool hit = false;
    while (j < p.size() && (p[j] != ']' || j == first)) {
        char lo = p[j];
        if (lo == '\\' && j + 1 < p.size()) lo = p[++j];
        char hi = lo;
        if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            hi = p[j + 2];
            if (hi == '\\' && j + 3 < p.size()) hi = p[++j + 2];
            j += 2;
        }
        if (c >= lo && c <= hi) hit = true;
        ++j;
    }
    if (j >= p.size()) {  // unterminated: a literal '['
        ++pi;
        return c == '[';
    }
    pi = j + 1;
    return hit != negate;
}

// "PIPESPIN_MODE: a value of 309 bytes starting 'fixed' is too long (at
// most 255); using adaptive".
void warn_too_long(const char* name, const OptionSpec& spec, std::string_view start,
                   std::size_t length, const Options& options, ConfigWarn warn,
                   void* ctx) noexcept {
    char msg[512];
    Out o{msg, sizeof msg};
    o.put(name);
    o.put(": a value of ");
    o.num(length);
    o.put(" bytes starting '");
    o.printable(trim(sub(start, 0, 32)));
    o.put("' is too long (at most ");
    o.num(EnvOverlay::kSlot - 1);
    o.put("); using ");
    char used[sizeof(TextValue::s)];
    format_option_into(spec, options, used, sizeof used);
    if (spec.kind == OptionKind::Text) o.put("'");
    o.printable(used, 100);
    if (spec.kind == OptionKind::Text) o.put("'");
    warn(ctx, msg);
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) noexcept {
    std::size_t pi = 0, ti = 0, star_p = kNpos, star_t = 0;
    while (ti < t.size()) {
        if (pi < p.size()) {
            const char c = p[pi];
            if (c == '*') {
                star_p = ++pi;
                star_t = ti;
                continue;
            }
            std::size_t next = pi + 1;
            bool ok;
            if (c == '?') {
                ok = true;
            } else if (c == '[') {
                next = pi;
                ok = class_match(p, next, t[ti]);
            } else if (c == '\\' && pi + 1 < p.size()) {
                next = pi + 2;
                ok = p[pi + 1] == t[ti];
            } else {
                ok = c == t[ti];
            }
            if (ok) {
                pi = next;
                ++ti;
                continue;
            }
        }
        if (star_p == kNpos) return false;
        pi = star_p;
        ti = ++star_t;
    }
    while (pi < p.size() && p[pi] == '*') ++pi;
    return pi == p.size();
}

std::string_view base_name(std::string_view path) noexcept {
    const std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : sub(path, slash + 1);
}

bool program_matches(std::string_view names, const ProgramId& program) noexcept {
    std::size_t i = 0;
    while (i < names.size()) {
        while (i < names.size() && is_blank(names[i])) ++i;
        std::size_t j = i;
        while (j < names.size() && !is_blank(names[j])) ++j;
        const std::string_view name = sub(names, i, j - i);
        i = j;
        if (name.empty()) continue;
        if (name.find('/') != std::string_view::npos) {
            if (!program.exe_path.empty() && glob_match(name, program.exe_path)) return true;
        } else {
            if (!program.exe_name.empty() && glob_match(name, program.exe_name)) return true;
            if (!program.argv0_name.empty() && glob_match(name, program.argv0_name)) return true;
        }
    }
    return false;
}

unsigned apply_config_text(std::string_view text, const char* path, const ProgramId& program,
                           bool root_owned, Options& options, OptionSources& sources,
                           ConfigWarn warn, void* ctx) noexcept {
    Reporter rep{path, warn, ctx};
    Walker{program, root_owned, options, sources, rep, true}.run(text);
    Walker{program, root_owned, options, sources, rep, false}.run(text);
    return rep.count;
}

FileStamp stamp_path(const char* path) noexcept {
    FileStamp s;
    sys::FileInfo fi;
    if (sys::stat_path(path, fi) != 0) return s;
    s = {true, fi.dev, fi.ino, fi.size, fi.mtime_s, fi.ctime_s, fi.mtime_ns, fi.ctime_ns, fi.uid};
    return s;
}

LoadStatus load_config_file(const char* path, unsigned euid, char* buf, std::size_t cap,
                            std::size_t& len, FileStamp& stamp, char* why,
                            std::size_t why_size) noexcept {
    len = 0;
    stamp = {};
    Out o{why, why_size};
    o.put("");
    const long fd = sys::open_read(path);
    if (fd < 0) {
        put_errno(o, -fd);
        return fd == -ENOENT ? LoadStatus::Missing : LoadStatus::Unreadable;
    }
    struct Closer {
        int fd;
        ~Closer() { sys::close(fd); }
    } closer{static_cast<int>(fd)};
    sys::FileInfo fi;
    if (const long r = sys::stat_fd(closer.fd, fi); r != 0) {
        o.put("cannot examine it: ");
        put_errno(o, -r);
        return LoadStatus::Unreadable;
    }
    if (!S_ISREG(fi.mode)) {
        o.put(S_ISDIR(fi.mode) ? "a directory" : "not a regular file");
        return LoadStatus::NotRegular;
    }
    if (fi.uid != 0 && fi.uid != euid) {
        o.put("refused: owned by uid ");
        o.num(fi.uid);
        o.put(", neither root nor the running user (uid ");
        o.num(euid);
        o.put(")");
        return LoadStatus::Insecure;
    }
    if ((fi.mode & S_IWOTH) || ((fi.mode & S_IWGRP) && fi.gid != 0)) {
        o.put("refused: writable by ");
        o.put((fi.mode & S_IWOTH) ? "everybody" : "its group");
        o.put(" (mode ");
        put_octal(o, fi.mode & 07777);
        if (!(fi.mode & S_IWOTH)) {
            o.put(", group ");
            o.num(fi.gid);
        }
        o.put(")");
        return LoadStatus::Insecure;
    }
    if (fi.size > kConfigMaxBytes) {
        o.put("too large (");
        o.num(fi.size);
        o.put(" bytes, at most ");
        o.num(kConfigMaxBytes);
        o.put(")");
        return LoadStatus::TooLarge;
    }
    const std::size_t want = cap < kConfigMaxBytes + 1 ? cap : kConfigMaxBytes + 1;
    while (len < want) {
        const long n = sys::read(closer.fd, buf + len, want - len);
        if (n == -EINTR) continue;
        if (n < 0) {
            o.put("cannot read it: ");
            put_errno(o, -n);
            len = 0;
            return LoadStatus::Unreadable;
        }
        if (n == 0) break;
        len += static_cast<std::size_t>(n);
    }
    if (len > kConfigMaxBytes) {  // it grew while we read
        o.put("too large (more than ");
        o.num(kConfigMaxBytes);
        o.put(" bytes)");
        len = 0;
        return LoadStatus::TooLarge;
    }
    stamp = {true,       fi.dev,      fi.ino,      fi.size, fi.mtime_s,
             fi.ctime_s, fi.mtime_ns, fi.ctime_ns, fi.uid};
    return LoadStatus::Ok;
}

unsigned capture_env(GetEnv getenv_fn, void* ctx, EnvOverlay& env) noexcept {
    char name[64];
    unsigned captured = 0;
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        if (!env_name_into(option_table()[i], name, sizeof name)) continue;
        const char* text = getenv_fn(name, ctx);
        if (text == nullptr) continue;
        std::size_t n = 0;
        while (text[n] != '\0' && n + 1 < EnvOverlay::kSlot) {
            env.text[i][n] = text[n];
            ++n;
        }
        env.text[i][n] = '\0';
        while (text[n] != '\0') ++n;
        env.length[i] = n;
        env.set[i] = true;
        ++captured;
    }
    return captured;
}

unsigned apply_env(const EnvOverlay& env, Options& options, OptionSources& sources, ConfigWarn warn,
                   void* ctx) noexcept {
    unsigned problems = 0;
    char name[64];
    char why[256];
    for (std::size_t i = 0; i < kOptionCount; ++i) {
        if (!env.set[i]) continue;
        const OptionSpec& spec = option_table()[i];
        if (env.too_long(i)) {
            ++problems;
            if (warn != nullptr && env_name_into(spec, name, sizeof name))
                warn_too_long(name, spec, env.text[i], env.length[i], options, warn, ctx);
            continue;
        }
        const ParseStatus status =
            apply_option(spec, env.text[i], options, warn ? why : nullptr, sizeof why);
        if (status == ParseStatus::Ok || status == ParseStatus::AboveMax ||
            status == ParseStatus::BelowMin) {
            sources.kind[i] = SourceKind::Env;
            sources.line[i] = 0;
        }
        if (status == ParseStatus::Ok) continue;
        ++problems;
        if (warn == nullptr || !env_name_into(spec, name, sizeof name)) continue;
        char msg[512];
        Out o{msg, sizeof msg};
        o.put(name);
        o.put(": ");
        o.put(why);
        warn(ctx, msg);
    }
    return problems;
}

unsigned resolve_options(const ResolveInput& in, Options& options, OptionSources& sources,
                         FileStamp& stamp, ConfigWarn warn, void* ctx) noexcept {
    options = Options{};
    sources = OptionSources{};
    stamp = FileStamp{};
    unsigned problems = 0;
    if (in.path != nullptr && in.path[0] != '\0') {
        std::size_t len = 0;
        char why[256];
        const LoadStatus st =
            load_config_file(in.path, in.euid, in.buf, in.cap, len, stamp, why, sizeof why);
        if (st == LoadStatus::Ok) {
            problems += apply_config_text({in.buf, len}, in.path, in.program, stamp.uid == 0,
                                          options, sources, warn, ctx);
        } else {
            // Whatever is there now, so that a re-check sees when it changes.
            stamp = stamp_path(in.path);
            if (st != LoadStatus::Missing || in.must_exist) {
                ++problems;
                if (warn != nullptr) {
                    char msg[512];
                    Out o{msg, sizeof msg};
                    o.printable(in.path, 200);
                    o.put(": ");
                    o.put(why);
                    o.put("; file ignored, using the defaults and the environment");
                    warn(ctx, msg);
                }
            }
        }
    }
    if (in.env != nullptr) problems += apply_env(*in.env, options, sources, warn, ctx);
    return problems;
}

}  // namespace pipespin
