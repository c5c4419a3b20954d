// pipespin gen-docs: the manual pages and the bash completion, written from
// the command table (cli/main.cpp: each visible command's --help entry) and the
// option table (core/options.h), so that neither can drift from --help or
// from what the library reads. Hidden from --help; the build runs it
// (cmake/Install.cmake) and installs what it prints.
//
//   pipespin gen-docs man1 [--libdir DIR] [--docdir DIR] [--config FILE]
//   pipespin gen-docs man5 --example FILE [--docdir DIR] [--config FILE]
//   pipespin gen-docs bash-completion
//   pipespin gen-docs system-config --example FILE   (/etc/pipespin.conf)
// Each takes --output FILE (else standard output).
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/util/text.h"
#include "gendoc/docs.h"

namespace pipespin::cli {

using namespace docs;

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