// The subcommands' scratch space: a private directory that goes away with
// everything in it, however the subcommand ends.
#pragma once

#include <string>
#include <string_view>

namespace pipespin::cli {

// A private temporary directory (mkdtemp under $TMPDIR, else /tmp), removed
// with all it holds when the object goes. `what` names it ("pipespin-ab").
class TempDir {
public:
    explicit TempDir(std::string_view what);
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    ~TempDir();
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

}  // namespace pipespin::cli
