// The environment a child gets: an editable copy of this process's, and the
// per-arm environments every benchmark compares.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.h"

namespace pipespin::cli {

// A copy of an environment that can be edited and handed to a child.
class Environment {
public:
    static Environment current();  // snapshot of environ

    std::optional<std::string_view> get(std::string_view name) const;
    void set(std::string_view name, std::string_view value);
    void unset(std::string_view name);
    // Drops every variable whose name starts with prefix.
    void unset_prefix(std::string_view prefix);
    // Sets LD_PRELOAD, or removes it when value is empty (an empty LD_PRELOAD
    // and none differ for nobody, but a clean env is easier to read).
    void set_preload(const std::string& value);

    const std::vector<std::string>& entries() const noexcept { return entries_; }

private:
    std::vector<std::string> entries_;  // "NAME=value"
};

// The arms every benchmark compares, in the order they run in each round.
// An arm without a mode runs with no copy of the shim at all; the empty
// preload arm has libpipespin-empty.so in its place.
struct ArmKind {
    std::string_view name;
    std::optional<Mode> mode;
    bool empty_preload = false;
};
inline constexpr ArmKind kArmKinds[] = {
    {"no shim", std::nullopt},
    {name_of(Mode::Off), Mode::Off},
    {name_of(Mode::Fixed), Mode::Fixed},
    {name_of(Mode::Adaptive), Mode::Adaptive},
};
inline constexpr ArmKind kEmptyPreloadArm{"empty preload", std::nullopt, true};

// The environment of each arm, from the caller's: PIPESPIN_* variables the
// user happened to export are dropped and every copy of the shim leaves
// LD_PRELOAD; the shim arms then put `library` in front and set
// PIPESPIN_MODE (and PIPESPIN_SPIN_US when given); the empty preload arm
// puts `empty_library` there instead. The user's other preloads stay in
// every arm, so the shim is the only difference.
class ArmEnvironments {
public:
    ArmEnvironments(std::string library, std::optional<std::uint32_t> spin_us,
                    std::optional<std::string> empty_library = std::nullopt);
    Environment of(const ArmKind& arm) const;

private:
    std::string library_;
    std::optional<std::string> empty_library_;
    std::optional<std::uint32_t> spin_us_;
    std::string other_preloads_;
    Environment base_;
};

}  // namespace pipespin::cli
