// pipespin gen-docs: the manual pages and the bash completion, written from
// the command table (main.cpp: each visible command's --help entry) and the
// option table (core/options.h), so that neither can drift from --help or
// from what the library reads. Hidden from --help; the build runs it
// (cmake/Install.cmake) and installs what it prints.
//
//   pipespin gen-docs man1 [--libdir DIR] [--docdir DIR] [--config FILE]
//   pipespin gen-docs man5 --example FILE [--docdir DIR] [--config FILE]
//   pipespin gen-docs bash-completion
//   pipespin gen-docs system-config --example FILE   (/etc/pipespin.conf)
// Each takes --output FILE (else standard output).
//
// Contract with the subcommands' *_usage(): an entry starts with a line
// "  pipespin WORDS..." (synopsis; longer lines continue with a deeper
// indent), its prose is wrapped with an indent of six (usage_entry), and
// anything indented further after the prose (run's flag list) is kept as
// preformatted lines. A usage text that does not start with a synopsis line
// is a build error here, not a silently wrong manual.
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.h"
#include "common.h"
#include "core/config.h"
#include "core/options.h"

#ifndef PIPESPIN_VERSION
#error "PIPESPIN_VERSION must be defined by the build (tools/CMakeLists.txt)"
#endif

namespace pipespin::cli {
namespace {

// ---- the --help entries, parsed ------------------------------------------

struct Block {
    bool pre;          // preformatted line (true) or a paragraph (false)
    std::string text;  // a paragraph is one line here; roff refills it
};

struct Entry {
    std::string synopsis;  // "pipespin bench pingpong [--threads] ..." on one line
    std::vector<std::string> synopsis_lines;  // as --help breaks it, less its indent of two
    std::vector<Block> body;                  // prose and preformatted lines, in order
};

std::size_t indent_of(std::string_view line) {
    std::size_t n = line.find_first_not_of(' ');
    return n == std::string_view::npos ? line.size() : n;
}

std::vector<Entry> parse_usage(std::string_view command, const std::string& usage) {
    std::vector<Entry> out;
    bool in_synopsis = false;
    std::istringstream in(usage);
    for (std::string line; std::getline(in, line);) {
        const std::size_t indent = indent_of(line);
        const std::string body = line.substr(indent);
        if (body.empty()) continue;
        if (indent == 2 && body.starts_with("pipespin ")) {
            out.push_back({body, {body}, {}});
            in_synopsis = true;
        } else if (out.empty()) {
            throw std::logic_error(fmt::format(
                "gen-docs: the usage of '{}' does not start with '  pipespin ...': '{}'", command,
                line));
        } else if (indent == 6) {
            std::vector<Block>& b = out.back().body;
            if (!b.empty() && !b.back().pre)
                b.back().text += " " + body;
            else
                b.push_back({false, body});
            in_synopsis = false;
        } else if (indent > 6 && in_synopsis) {
            out.back().synopsis += " " + body;
            out.back().synopsis_lines.push_back(line.substr(2));
        } else {
            out.back().body.push_back({true, line.substr(std::min<std::size_t>(indent, 6))});
            in_synopsis = false;
        }
    }
    return out;
}

struct VisibleCommand {
    std::string_view name;
    std::vector<Entry> entries;
};

std::vector<VisibleCommand> visible_commands() {
    std::vector<VisibleCommand> out;
    for (const Command& c : commands())
        if (c.usage != nullptr) out.push_back({c.name, parse_usage(c.name, c.usage())});
    return out;
}

// ---- roff ---------------------------------------------------------------

// Text for a roff line: backslashes, hyphens (\- so that flags copy and paste
// as ASCII), a leading control character, and non-ASCII as \[uXXXX].
std::string roff(std::string_view s) {
    std::string out;
    if (!s.empty() && (s.front() == '.' || s.front() == '\'')) out += "\\&";
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto u = static_cast<unsigned char>(s[i]);
        if (u < 0x80) {
            if (s[i] == '\\')
                out += "\\e";
            else if (s[i] == '-')
                out += "\\-";
            else
                out += s[i];
            continue;
        }
        // UTF-8 sequence to a code point; a malformed byte becomes U+FFFD.
        const int len = u >= 0xf0 ? 4 : u >= 0xe0 ? 3 : u >= 0xc0 ? 2 : 0;
        std::uint32_t cp = 0xfffd;
        if (len > 0 && i + len <= s.size()) {
            cp = u & (0x7f >> len);
            for (int k = 1; k < len; ++k)
                cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
            i += static_cast<std::size_t>(len - 1);
        }
        out += fmt::format("\\[u{:04X}]", cp);
    }
    return out;
}

std::string bold(std::string_view s) {
    return "\\fB" + roff(s) + "\\fR";
}

std::string header(std::string_view title, int section, std::string_view volume) {
    return fmt::format(
        ".\\\" Generated by `pipespin gen-docs` from the command and option tables.\n"
        ".\\\" Do not edit: change --help or src/core/options.cpp instead.\n"
        ".TH {} {} \"\" \"pipespin {}\" \"{}\"\n"
        ".nh\n",
        title, section, PIPESPIN_VERSION, volume);
}

std::string paragraph(std::string_view text) {
    return ".PP\n" + roff(text) + "\n";
}

std::string tagged(std::string_view tag_roff, std::string_view text) {
    return ".TP\n" + std::string(tag_roff) + "\n" + roff(text) + "\n";
}

// As --help writes it: "NAME=off|fixed|adaptive (default: adaptive)".
std::string option_tag(const OptionSpec& spec, std::string_view name, std::string_view eq = "=") {
    const std::string def = format_default(spec);
    return fmt::format("{}{}{} (default: {})", bold(name), eq, roff(value_hint(spec)),
                       roff(def.empty() ? "empty" : def));
}

struct Paths {
    std::string libdir{kInstallLibdir};
    std::string docdir;
    std::string config;   // empty: no system config file is installed
    std::string example;  // preload.conf.example to read (man5)
};

std::string files_section(const Paths& p) {
    std::string out = ".SH FILES\n";
    if (!p.libdir.empty()) {
        out += tagged(bold(p.libdir + "/libpipespin.so"),
                      "The shim. pipespin run finds it beside its own executable (../lib or "
                      "../lib/<multiarch>) or here.");
        out += tagged(bold(p.libdir + "/libpipespin-log.so"),
                      "Its message sink (spdlog), loaded from beside libpipespin.so only when "
                      "the shim has something to say.");
    }
    if (!p.config.empty())
        out += tagged(bold(p.config),
                      "A copy of preload.conf.example with every line commented out, so that it "
                      "changes nothing until a line is uncommented; see pipespin.conf(5).");
    if (!p.docdir.empty())
        out += tagged(bold(p.docdir + "/preload.conf.example"),
                      "Every option with its default, range and when to change it.");
    return out;
}

std::string man1(const Paths& p) {
    const std::vector<VisibleCommand> cmds = visible_commands();
    std::string out = header("PIPESPIN", 1, "User Commands");
    out += ".SH NAME\npipespin \\- spin briefly on pipes before blocking, by LD_PRELOAD\n";

    out += ".SH SYNOPSIS\n.nf\n";
    for (const VisibleCommand& c : cmds)
        for (const Entry& e : c.entries)
            for (const std::string& line : e.synopsis_lines) out += roff(line) + "\n";
    out += "pipespin help | \\-\\-help | \\-h\npipespin \\-\\-version\n.fi\n";

    out += ".SH DESCRIPTION\n";
    out += paragraph(fmt::format(
        "{} is an LD_PRELOAD library that makes programs wait less on pipes: when a read would "
        "find an empty pipe (or a write a full one), it spin-polls the pipe for a short, per-fd "
        "budget before calling the real, blocking function. It never changes what the program "
        "computes: the real call is always the final authority.",
        kLibraryName));
    out += paragraph(
        "pipespin runs a command with the library preloaded and measures what it buys. The "
        "library reads its settings from the config file (pipespin.conf(5)) and from the "
        "environment variables below, which override it, in the program it is loaded into; "
        "children inherit them. The loader does not preload into statically linked "
        "programs, nor (through LD_PRELOAD) into setuid ones.");

    out += ".SH COMMANDS\n";
    for (const VisibleCommand& c : cmds) {
        for (const Entry& e : c.entries) {
            out += ".TP\n" + bold(e.synopsis) + "\n";
            bool first = true;
            bool in_pre = false;
            for (const Block& b : e.body) {
                if (b.pre && !in_pre) out += (first ? "" : ".IP\n") + std::string(".nf\n");
                if (!b.pre && in_pre) out += ".fi\n.IP\n";
                if (!b.pre && !in_pre && !first) out += ".IP\n";
                out += roff(b.text) + "\n";
                in_pre = b.pre;
                first = false;
            }
            if (in_pre) out += ".fi\n";
        }
    }
    out += tagged(bold("pipespin help | --help | -h"), "Show the usage on standard output.");
    out += tagged(bold("pipespin --version"), "Show the version.");

    out += ".SH ENVIRONMENT\n";
    out += ".PP\nRead by " + roff(kLibraryName) +
           " in the program it is preloaded into (pipespin run flags of the same names set "
           "them). A bad value never stops the program: the library warns once and uses the "
           "value it names. In secure-execution mode (setuid programs) they are ignored.\n";
    for (const OptionSpec& spec : option_table())
        out += tagged(option_tag(spec, env_name(spec)), spec.help);
    out += tagged(
        bold("PIPESPIN_CONFIG") + "=\\fIPATH\\fR (default: " + roff(kDefaultConfigPath) + ")",
        fmt::format("The config file, see pipespin.conf(5). {} is read only if it "
                    "exists; set but empty: no file at all.",
                    kDefaultConfigPath));
    out += tagged(bold(std::string(kLibraryEnv)) + "=\\fIPATH\\fR",
                  fmt::format("Read by pipespin itself: the {} to preload. When unset, the first "
                              "that exists of: ../lib/{} and ../lib/{}{}{} relative to the "
                              "directory of the pipespin executable (symlinks resolved){}{}.",
                              kLibraryName, kLibraryName, kMultiarch, kMultiarch.empty() ? "" : "/",
                              kLibraryName, p.libdir.empty() ? "" : ", then ",
                              p.libdir.empty() ? "" : p.libdir + "/" + std::string(kLibraryName)));

    out += files_section(p);
    out += ".SH EXIT STATUS\n" + paragraph(exit_status_text());
    out += ".SH SEE ALSO\n.BR pipespin.conf (5),\n.BR ld.so (8)\n";
    return out;
}

// The opening comment block of preload.conf.example, as paragraphs.
std::vector<std::string> example_preamble(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw Failure(kExitFailure, fmt::format("gen-docs: cannot read {}", path));
    std::vector<std::string> paras{""};
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("#")) break;
        std::string_view text = std::string_view(line).substr(1);
        if (text.starts_with(" ")) text.remove_prefix(1);
        if (text.empty()) {
            if (!paras.back().empty()) paras.emplace_back();
            continue;
        }
        if (!paras.back().empty()) paras.back() += ' ';
        paras.back() += text;
    }
    if (paras.back().empty()) paras.pop_back();
    return paras;
}

std::string man5(const Paths& p) {
    std::string out = header("PIPESPIN.CONF", 5, "File Formats");
    out += ".SH NAME\npipespin.conf \\- settings of the pipespin LD_PRELOAD library\n";
    out += ".SH DESCRIPTION\n";
    for (const std::string& para : example_preamble(p.example)) out += paragraph(para);
    out += ".SH OPTIONS\n";
    for (const OptionSpec& spec : option_table())
        out += tagged(option_tag(spec, spec.name, " = "), spec.help) +
               ".br\nEnvironment variable: " + bold(env_name(spec)) + "\n";
    Paths files = p;
    files.libdir.clear();
    out += files_section(files);
    out += ".SH SEE ALSO\n.BR pipespin (1)\n";
    return out;
}

// The system config file: the example with every setting commented out, so
// that installing it changes nothing until the admin uncomments a line.
std::string system_config(const Paths& p) {
    std::ifstream in(p.example);
    if (!in) throw Failure(kExitFailure, fmt::format("gen-docs: cannot read {}", p.example));
    std::string out =
        "# /etc/pipespin.conf: installed with every setting commented out, so it\n"
        "# changes nothing. Uncomment and edit a line to use it; the package keeps\n"
        "# your changes on upgrade and on remove (purge deletes them).\n"
        "# See pipespin.conf(5).\n#\n";
    for (std::string line; std::getline(in, line);) {
        const std::size_t first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] == '#')
            out += line + "\n";
        else
            out += "#" + line + "\n";
    }
    return out;
}

// ---- bash completion -------------------------------------------------------

bool is_word(std::string_view t) {
    if (t.empty() || t.front() < 'a' || t.front() > 'z') return false;
    for (char c : t)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    return true;
}

bool is_placeholder(std::string_view t) {
    if (t.empty() || t.front() < 'A' || t.front() > 'Z') return false;
    for (char c : t)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.'))
            return false;
    return true;
}

std::string strip_brackets(std::string_view t) {
    std::string out;
    for (char c : t)
        if (c != '[' && c != ']') out += c;
    return out;
}

std::vector<std::string> split_words(std::string_view s) {
    std::vector<std::string> out;
    std::istringstream in{std::string(s)};
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

struct Completion {
    std::map<std::string, std::set<std::string>> subs;   // path -> next words
    std::map<std::string, std::set<std::string>> flags;  // path -> flags
    // "path flag" -> what its value completes to: words, or "@file", or "" (anything)
    std::map<std::string, std::string> values;
    std::set<std::string> takes_command;  // paths whose synopsis ends in CMD
};

void add_flag(Completion& c, const std::string& path, const std::string& flag,
              std::optional<std::string> placeholder) {
    c.flags[path].insert(flag);
    for (const OptionSpec& spec : option_table()) {
        if (flag_name(spec) != flag) continue;
        std::string values;
        if (spec.kind == OptionKind::Choice)
            values = fmt::format("{}", fmt::join(spec.choices, " "));
        else if (spec.kind == OptionKind::Text && spec.unit.find("PATH") != std::string_view::npos)
            values = "@file";
        c.values[path + " " + flag] = values;
        return;
    }
    if (placeholder)
        c.values[path + " " + flag] = placeholder->find("FILE") != std::string::npos ? "@file" : "";
}

Completion completion_model() {
    Completion c;
    for (const VisibleCommand& cmd : visible_commands()) {
        for (const Entry& e : cmd.entries) {
            const std::vector<std::string> words = split_words(e.synopsis);
            std::string path;
            std::size_t i = 1;  // words[0] is "pipespin"
            for (; i < words.size() && is_word(words[i]); ++i) {
                c.subs[path].insert(words[i]);
                path += (path.empty() ? "" : " ") + words[i];
            }
            c.flags[path].insert("--help");
            for (; i < words.size(); ++i) {
                const std::string raw = words[i];
                const std::string t = strip_brackets(raw);
                if (t == "CMD") c.takes_command.insert(path);
                if (!t.starts_with("--") || t.size() < 3) continue;
                std::optional<std::string> placeholder;
                if (!raw.ends_with("]") && i + 1 < words.size() &&
                    is_placeholder(strip_brackets(words[i + 1])))
                    placeholder = strip_brackets(words[i + 1]);
                std::istringstream alts(t);
                for (std::string f; std::getline(alts, f, '|');)
                    if (f.starts_with("--"))
                        add_flag(c, path, f.substr(0, f.find('=')), placeholder);
            }
            // Preformatted lines are flag lists ("--mode  off|fixed|adaptive").
            for (const Block& b : e.body) {
                if (!b.pre) continue;
                const std::vector<std::string> w = split_words(b.text);
                if (!w.empty() && w[0].starts_with("--"))
                    add_flag(c, path, w[0], w.size() > 1 ? std::optional(w[1]) : std::nullopt);
            }
        }
    }
    c.subs[""].insert("help");
    c.flags[""] = {"--help", "-h", "--version"};
    return c;
}

std::string join_set(const std::set<std::string>& s) {
    return fmt::format("{}", fmt::join(s, " "));
}

std::string bash_completion() {
    const Completion c = completion_model();
    std::string out =
        "# bash completion for pipespin. Generated by `pipespin gen-docs bash-completion`\n"
        "# from the command and option tables: do not edit.\n\n";
    auto table = [&](std::string_view fn, const std::map<std::string, std::string>& rows) {
        out += fmt::format("{}() {{\n    case \"$1\" in\n", fn);
        for (const auto& [key, value] : rows)
            out += fmt::format("        {}) echo {} ;;\n", shell_quote(key), shell_quote(value));
        out += "    esac\n}\n\n";
    };
    std::map<std::string, std::string> subs, flags, cmds;
    for (const auto& [k, v] : c.subs) subs[k] = join_set(v);
    for (const auto& [k, v] : c.flags) flags[k] = join_set(v);
    for (const std::string& k : c.takes_command) cmds[k] = "yes";
    table("_pipespin_subs", subs);
    table("_pipespin_flags", flags);
    table("_pipespin_values", c.values);
    table("_pipespin_takes_command", cmds);
    // Which flags take a value at all (so that their value is skipped).
    out += "_pipespin_has_value() {\n    case \"$1\" in\n";
    for (const auto& [key, value] : c.values)
        out += fmt::format("        {}) return 0 ;;\n", shell_quote(key));
    out += "    esac\n    return 1\n}\n\n";
    out += R"BASH(_pipespin() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local path="" i=1 w subs
    # The command words (run, bench pingpong, ...) come first.
    while [ "$i" -lt "$COMP_CWORD" ]; do
        w=${COMP_WORDS[i]}
        subs=" $(_pipespin_subs "$path") "
        [[ $w != -* && $subs == *" $w "* ]] || break
        path="${path:+$path }$w"
        i=$((i + 1))
    done
    # A command that runs CMD: past the flags (or "--"), complete CMD and its words.
    if [ -n "$(_pipespin_takes_command "$path")" ]; then
        while [ "$i" -lt "$COMP_CWORD" ]; do
            w=${COMP_WORDS[i]}
            if [ "$w" = "--" ]; then i=$((i + 1)); break; fi
            [[ $w == -* ]] || break
            _pipespin_has_value "$path $w" && i=$((i + 1))
            i=$((i + 1))
        done
        if [ "$i" -le "$COMP_CWORD" ] && { [ "$i" -lt "$COMP_CWORD" ] || [[ $cur != -* ]] || [ "${COMP_WORDS[i-1]}" = "--" ]; }; then
            if [ "$i" -lt "$COMP_CWORD" ] && declare -F _command_offset >/dev/null; then
                _command_offset "$i"
            elif [ "$i" -eq "$COMP_CWORD" ]; then
                mapfile -t COMPREPLY < <(compgen -c -- "$cur")
            else
                mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            fi
            return 0
        fi
    fi
    if _pipespin_has_value "$path $prev"; then
        local values
        values=$(_pipespin_values "$path $prev")
        if [ "$values" = "@file" ]; then
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        else
            mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_pipespin_flags "$path")" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -W "$(_pipespin_subs "$path")" -- "$cur")
    fi
    return 0
}
complete -F _pipespin pipespin
)BASH";
    return out;
}

}  // namespace

int gen_docs_main(Args args) {
    ArgCursor cur("gen-docs", args);
    if (cur.done()) throw UsageError("gen-docs: missing what (man1, man5, bash-completion)");
    const std::string_view what = cur.take_word();
    Paths p;
    std::string output;
    while (!cur.done()) {
        if (auto v = cur.take_value("--libdir"))
            p.libdir = *v;
        else if (auto v2 = cur.take_value("--docdir"))
            p.docdir = *v2;
        else if (auto v3 = cur.take_value("--config"))
            p.config = *v3;
        else if (auto v4 = cur.take_value("--example"))
            p.example = *v4;
        else if (auto v5 = cur.take_value("--output"))
            output = *v5;
        else
            cur.fail_unknown();
    }
    std::string text;
    if (what == "man1") {
        text = man1(p);
    } else if (what == "man5") {
        if (p.example.empty()) throw UsageError("gen-docs man5: missing --example FILE");
        text = man5(p);
    } else if (what == "bash-completion") {
        text = bash_completion();
    } else if (what == "system-config") {
        if (p.example.empty()) throw UsageError("gen-docs system-config: missing --example FILE");
        text = system_config(p);
    } else {
        throw UsageError(
            fmt::format("gen-docs: unknown '{}' (man1, man5, bash-completion, system-config)",
                        printable(what)));
    }
    if (output.empty()) {
        std::fputs(text.c_str(), stdout);
        return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
    }
    // Written whole or not at all: a failed build must not leave half a page.
    const std::string tmp = output + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f << text;
        f.close();
        if (!f) throw Failure(kExitFailure, fmt::format("gen-docs: cannot write {}", tmp));
    }
    if (std::rename(tmp.c_str(), output.c_str()) != 0)
        throw Failure(kExitFailure, fmt::format("gen-docs: cannot write {}", output));
    return kExitOk;
}

}  // namespace pipespin::cli
