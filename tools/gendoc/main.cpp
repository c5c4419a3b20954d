// pipespin-gendoc: writes one of pipespin's generated files (docs.h). The
// build runs it; it is never installed.
//
//   pipespin-gendoc man1 [--libdir DIR] [--docdir DIR] [--config FILE]
//   pipespin-gendoc man5 --example FILE [--docdir DIR] [--config FILE]
//   pipespin-gendoc bash-completion
//   pipespin-gendoc system-config --example FILE   (/etc/pipespin.conf)
// Each takes --output FILE (else standard output).
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "gendoc/docs.h"

#ifndef PIPESPIN_VERSION
#error "PIPESPIN_VERSION must be defined by the build (tools/gendoc/CMakeLists.txt)"
#endif

namespace pipespin::gendoc {
namespace {

using cli::Action;
using cli::Args;
using cli::Failure;
using cli::kExitFailure;
using cli::kExitOk;

// Written whole or not at all: a failed build must not leave half a page.
int write(const std::string& text, const std::string& output) {
    if (output.empty()) {
        std::fputs(text.c_str(), stdout);
        return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
    }
    const std::string tmp = output + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f << text;
        f.close();
        if (!f) throw Failure(kExitFailure, fmt::format("cannot write {}", tmp));
    }
    if (std::rename(tmp.c_str(), output.c_str()) != 0)
        throw Failure(kExitFailure, fmt::format("cannot write {}", output));
    return kExitOk;
}

struct Values {
    Paths paths;
    std::string output;
};

// The options of a command that writes `what`: --output always, the paths
// it names in its text.
template <typename Make>
Action writer(CLI::App& app, std::string_view what, bool paths, bool example, Make make) {
    auto v = std::make_shared<Values>();
    app.description(fmt::format("Write {}.", what));
    if (paths) {
        app.add_option("--libdir", v->paths.libdir, "where the libraries are installed")
            ->type_name("DIR")
            ->default_str(v->paths.libdir);
        app.add_option("--docdir", v->paths.docdir, "where the example config is installed")
            ->type_name("DIR");
        app.add_option("--config", v->paths.config, "the system config file, if one is installed")
            ->type_name("FILE");
    }
    if (example)
        app.add_option("--example", v->paths.example, "preload.conf.example, to read")
            ->type_name("FILE")
            ->required();
    app.add_option("--output", v->output, "write here (else to stdout)")->type_name("FILE");
    return [v, make](Args) { return write(make(v->paths), v->output); };
}

Action define_man1(CLI::App& app) {
    return writer(app, "pipespin(1)", true, false, man1);
}
Action define_man5(CLI::App& app) {
    return writer(app, "pipespin.conf(5)", true, true, man5);
}
Action define_completion(CLI::App& app) {
    return writer(app, "the bash completion of pipespin", false, false,
                  [](const Paths&) { return bash_completion(); });
}
Action define_system_config(CLI::App& app) {
    return writer(app, "/etc/pipespin.conf: the example, every setting commented out", false, true,
                  system_config);
}

constexpr cli::Command kCommands[] = {
    {"man1", "pipespin(1)", "man1 [--libdir DIR] [--docdir DIR] [--config FILE] [--output FILE]",
     define_man1},
    {"man5", "pipespin.conf(5)",
     "man5 --example FILE [--libdir DIR] [--docdir DIR] [--config FILE] [--output FILE]",
     define_man5},
    {"bash-completion", "the bash completion", "bash-completion [--output FILE]",
     define_completion},
    {"system-config", "/etc/pipespin.conf", "system-config --example FILE [--output FILE]",
     define_system_config},
};

}  // namespace

std::vector<cli::CommandDoc> visible_commands() {
    const cli::Parser parser = cli::make_parser(cli::pipespin_program());
    return cli::describe_visible(cli::pipespin_program(), *parser.app);
}

}  // namespace pipespin::gendoc

int main(int argc, char** argv) {
    using namespace pipespin;
    static const cli::Program program{"pipespin-gendoc", PIPESPIN_VERSION,
                                      "pipespin's generated manual pages, completion and config",
                                      gendoc::kCommands};
    return cli::run_program(program, argc, argv);
}
