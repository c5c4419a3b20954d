// The std::string face of the config resolution, for check-config,
// run --print-config and the tests. Same code as the shim's: it only
// collects what resolve_options() reports.
#include <fmt/format.h>

#include "core/config.h"

namespace pipespin {

ConfigCheck check_config(const std::string& path, bool must_exist, const ProgramId& program,
                         GetEnv getenv_fn, void* ctx, unsigned euid) {
    ConfigCheck c;
    std::vector<char> buf(kConfigMaxBytes + 1);
    EnvOverlay env;
    if (getenv_fn != nullptr) capture_env(getenv_fn, ctx, env);
    ResolveInput in;
    in.path = path.c_str();
    in.must_exist = must_exist;
    in.euid = euid;
    in.program = program;
    in.env = getenv_fn != nullptr ? &env : nullptr;
    in.buf = buf.data();
    in.cap = buf.size();
    FileStamp stamp;
    c.problem_count = resolve_options(
        in, c.options, c.sources, stamp,
        [](void* p, const char* message) {
            static_cast<std::vector<std::string>*>(p)->emplace_back(message);
        },
        &c.problems);
    std::size_t len = 0;
    char why[256];
    c.file_read = !path.empty() && load_config_file(path.c_str(), euid, buf.data(), buf.size(), len,
                                                    stamp, why, sizeof why) == LoadStatus::Ok;
    for (const OptionSpec& spec : option_table()) {
        const std::size_t i = index_of(spec.id);
        switch (c.sources.kind[i]) {
            case SourceKind::Default:
                c.where[i] = "default";
                break;
            case SourceKind::File:
                c.where[i] = fmt::format("{}:{}", path, c.sources.line[i]);
                break;
            case SourceKind::Env:
                c.where[i] = env_name(spec);
                break;
        }
    }
    return c;
}

}  // namespace pipespin
