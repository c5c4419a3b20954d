// Finding libpipespin.so, and putting it into (or taking it out of) an
// LD_PRELOAD list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The compile-time answers of where this build installs the library
// (tools/CMakeLists.txt defines both for the CLI; empty elsewhere).
#ifndef PIPESPIN_INSTALL_LIBDIR
#define PIPESPIN_INSTALL_LIBDIR ""
#endif
#ifndef PIPESPIN_MULTIARCH
#define PIPESPIN_MULTIARCH ""
#endif

namespace pipespin::cli {

inline constexpr std::string_view kLibraryName = "libpipespin.so";
// A library with one symbol and nothing else, built beside libpipespin.so
// (tools/bench/empty_preload.c; never installed): the benchmarks' measure of
// what any preload costs a process.
inline constexpr std::string_view kEmptyLibraryName = "libpipespin-empty.so";
inline constexpr std::string_view kInstallLibdir = PIPESPIN_INSTALL_LIBDIR;
inline constexpr std::string_view kMultiarch = PIPESPIN_MULTIARCH;  // Debian's lib subdirectory
inline constexpr std::string_view kLibraryEnv = "PIPESPIN_LIBRARY";

// Real path of the running executable (/proc/self/exe), so that a symlinked
// or PATH-found pipespin still finds the library installed beside it.
std::string self_exe();

// The absolute path of libpipespin.so, looked for in this order:
//   $PIPESPIN_LIBRARY (must exist when set),
//   <exe_dir>/../lib/libpipespin.so            (build tree, /usr/local),
//   <exe_dir>/../lib/<multiarch>/libpipespin.so (Debian layout),
//   the install libdir chosen at build time.
// Throws Failure(kExitSetup) naming every place it looked.
std::string find_library();
// The places after $PIPESPIN_LIBRARY, in order, for --help and errors.
std::vector<std::string> library_search_path();
// libpipespin-empty.so in the directory of `library`, if it is there.
std::optional<std::string> empty_library_beside(const std::string& library);

// LD_PRELOAD is a list separated by ':' or ' ' (ld.so(8)).
std::vector<std::string> split_preload(std::string_view value);
// True for any copy of the shim: a second copy in one process would keep a
// second fd table, and the "no shim" arm of a benchmark must have none.
bool is_shim_entry(std::string_view entry);
// `existing` with `library` in front, unless that very file is already in it
// (then `existing` unchanged: the user chose the order). Other copies of the
// shim are dropped and reported in `dropped`.
std::string preload_with(std::string_view existing, const std::string& library,
                         std::vector<std::string>* dropped = nullptr);
// `existing` without any copy of the shim.
std::string preload_without_shim(std::string_view existing);

}  // namespace pipespin::cli
