#include "cli/util/library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "cli/util/errors.h"
#include "cli/util/text.h"

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

}  // namespace pipespin::cli
