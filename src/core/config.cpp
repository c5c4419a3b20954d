// The config file's text (its sections and `key = value` lines) and the
// whole resolution of the options from defaults, the file and the
// environment. Reading the file is config_file.cpp, the environment
// config_env.cpp, [program NAME] matching config_match.cpp.
#include "core/config.h"

#include "core/ascii.h"
#include "core/out.h"

namespace pipespin {
namespace {

using ascii::iequals;
using ascii::is_blank;

// Config lines split on '\n': what is trimmed there is blanks.
constexpr std::string_view trim(std::string_view s) noexcept {
    return ascii::trim(s, is_blank);
}

// Up to the first '#' that starts the line or follows a blank: "50 # µs".
std::string_view strip_comment(std::string_view line) noexcept {
    for (std::size_t i = 0; i < line.size(); ++i)
        if (line[i] == '#' && (i == 0 || is_blank(line[i - 1]))) return sub(line, 0, i);
    return line;
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
// "" name none, nor do log_file's "syslog", "journal" and "syslog:/PATH").
bool relative_path(const OptionSpec& spec, std::string_view value) noexcept {
    if (spec.kind != OptionKind::Text || value.empty() || value == "stderr" || value.front() == '/')
        return false;
    if (spec.id == OptionId::LogFile &&
        (value == "syslog" || value == "journal" || value.starts_with("syslog:/")))
        return false;
    return true;
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
            for (std::size_t i = 0; i < key.size(); ++i) name[i] = ascii::lower(key[i]);
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
        std::size_t bad = std::string_view::npos;
        for (std::size_t i = 0; i < raw.size() && bad == std::string_view::npos; ++i) {
            const auto u = static_cast<unsigned char>(raw[i]);
            if ((u < 0x20 && u != '\t' && !(u == '\r' && i + 1 == raw.size())) || u == 0x7f)
                bad = i;
        }
        if (bad != std::string_view::npos) {
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

}  // namespace

unsigned apply_config_text(std::string_view text, const char* path, const ProgramId& program,
                           bool root_owned, Options& options, OptionSources& sources,
                           ConfigWarn warn, void* ctx) noexcept {
    Reporter rep{path, warn, ctx};
    Walker{program, root_owned, options, sources, rep, true}.run(text);
    Walker{program, root_owned, options, sources, rep, false}.run(text);
    return rep.count;
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
