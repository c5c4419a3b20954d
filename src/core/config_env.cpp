// The PIPESPIN_* variables: captured once at start-up, applied over the
// file at every resolution (config.h, "the environment").
#include "core/ascii.h"
#include "core/config.h"
#include "core/out.h"

namespace pipespin {
namespace {

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
    o.printable(ascii::trim(sub(start, 0, 32), ascii::is_blank));
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

// Appends option i's value at `used` (a count kept by the caller: the
// overlay itself is only written, see EnvOverlay). Each option is put at
// most once, so the values always fit.
void put(EnvOverlay& env, std::size_t i, const char* text, std::size_t& used) noexcept {
    char* out = env.text + used;
    std::size_t n = 0;
    while (text[n] != '\0' && n + 1 < EnvOverlay::kSlot) {
        out[n] = text[n];
        ++n;
    }
    out[n] = '\0';
    env.at[i] = static_cast<std::uint16_t>(used);
    used += n + 1;
    while (text[n] != '\0') ++n;
    env.length[i] = n;
    env.set[i] = true;
}

// The value of `var` ("PIPESPIN_SPIN_US=50") if its name is spec's
// variable, else null.
const char* value_for(const OptionSpec& spec, const char* var) noexcept {
    for (char c : kEnvPrefix)
        if (*var++ != c) return nullptr;
    for (char c : spec.name)
        if (*var++ != ascii::upper(c)) return nullptr;
    return *var == '=' ? var + 1 : nullptr;
}

}  // namespace

unsigned capture_env(GetEnv getenv_fn, void* ctx, EnvOverlay& env) noexcept {
    char name[64];
    unsigned captured = 0;
    std::size_t used = 0;
    for (const OptionSpec& spec : option_table()) {
        const std::size_t i = index_of(spec.id);
        if (!env_name_into(spec, name, sizeof name)) continue;
        const char* text = getenv_fn(name, ctx);
        if (text == nullptr) continue;
        put(env, i, text, used);
        ++captured;
    }
    return captured;
}

unsigned capture_env_vars(const char* const* vars, int count, EnvOverlay& env) noexcept {
    unsigned captured = 0;
    std::size_t used = 0;
    // Which are taken, kept here: reading env.set first would be a read
    // fault on the overlay's page, then the write a second one.
    bool taken[kOptionCount] = {};
    for (int k = 0; k < count; ++k) {
        for (const OptionSpec& spec : option_table()) {
            const std::size_t i = index_of(spec.id);
            const char* text = value_for(spec, vars[k]);
            if (text == nullptr) continue;
            if (!taken[i]) {  // the first one, as getenv takes
                taken[i] = true;
                put(env, i, text, used);
                ++captured;
            }
            break;
        }
    }
    return captured;
}

unsigned apply_env(const EnvOverlay& env, Options& options, OptionSources& sources, ConfigWarn warn,
                   void* ctx) noexcept {
    unsigned problems = 0;
    char name[64];
    char why[256];
    for (const OptionSpec& spec : option_table()) {
        const std::size_t i = index_of(spec.id);
        if (!env.set[i]) continue;
        if (env.too_long(i)) {
            ++problems;
            if (warn != nullptr && env_name_into(spec, name, sizeof name))
                warn_too_long(name, spec, env.value(i), env.length[i], options, warn, ctx);
            continue;
        }
        const ParseStatus status =
            apply_option(spec, env.value(i), options, warn ? why : nullptr, sizeof why);
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

}  // namespace pipespin
