#include "cli/util/environment.h"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "cli/util/args.h"
#include "cli/util/library.h"

extern char** environ;

namespace pipespin::cli {

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

}  // namespace pipespin::cli
