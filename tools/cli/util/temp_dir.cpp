#include "cli/util/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "cli/util/errors.h"

namespace pipespin::cli {
namespace fs = std::filesystem;

TempDir::TempDir(std::string_view what) {
    std::string tmpl = (fs::temp_directory_path() / fmt::format("{}.XXXXXX", what)).string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw Failure(kExitFailure, fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
    path_ = std::move(tmpl);
}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

}  // namespace pipespin::cli
