// Will the dynamic loader preload into this program? It will not when no
// loader runs (a static executable: no PT_INTERP program header), when the
// kernel starts the program in secure-execution mode (setuid/setgid to
// someone else, file capabilities), or when the program is of another ELF
// class than the library. Each of those runs the program silently without
// the shim, which is exactly what a user must be told before a measurement.
#include "cli/util/preload_check.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/util/library.h"

namespace pipespin::cli {
namespace {

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

bool read_at(int fd, void* buf, std::size_t n, std::uint64_t offset) {
    ssize_t got = ::pread(fd, buf, n, static_cast<off_t>(offset));
    return got >= 0 && static_cast<std::size_t>(got) == n;
}

constexpr unsigned char kNativeData =
    std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;

// Whether the kernel will set AT_SECURE, in which case ld.so ignores preload
// entries that contain a '/'. A set-id bit that does not change our ids, or
// one on a nosuid mount, changes nothing.
std::optional<std::string> secure_exec_reason(const std::string& path, const struct stat& st) {
    struct statvfs vfs {};
    if (::statvfs(path.c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOSUID) != 0) return std::nullopt;
    if ((st.st_mode & S_ISUID) != 0 && st.st_uid != ::getuid())
        return fmt::format("is setuid (owner uid {})", st.st_uid);
    if ((st.st_mode & S_ISGID) != 0 && st.st_gid != ::getgid())
        return fmt::format("is setgid (group gid {})", st.st_gid);
    // root already holds every capability, so file capabilities grant it nothing new.
    if (::getuid() != 0 && ::getxattr(path.c_str(), "security.capability", nullptr, 0) > 0)
        return std::string("has file capabilities");
    return std::nullopt;
}

// True when the ELF64 file has a PT_INTERP header; nullopt when the headers
// cannot be read sensibly (then we say nothing rather than guess).
std::optional<bool> elf64_has_interp(int fd) {
    Elf64_Ehdr eh;
    if (!read_at(fd, &eh, sizeof eh, 0)) return std::nullopt;
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) return std::nullopt;
    if (eh.e_phentsize < sizeof(Elf64_Phdr) || eh.e_phoff == 0) return std::nullopt;

    std::uint64_t count = eh.e_phnum;
    if (count == PN_XNUM) {
        // Too many headers for e_phnum: the real count is in section 0.
        Elf64_Shdr sh0;
        if (eh.e_shoff == 0 || !read_at(fd, &sh0, sizeof sh0, eh.e_shoff)) return std::nullopt;
        count = sh0.sh_info;
    }
    // A real program has a dozen; a huge count is a damaged file.
    if (count == 0 || count > 65536) return std::nullopt;

    std::vector<unsigned char> table(count * eh.e_phentsize);
    if (!read_at(fd, table.data(), table.size(), eh.e_phoff)) return std::nullopt;
    for (std::uint64_t i = 0; i < count; ++i) {
        Elf64_Phdr ph;
        std::memcpy(&ph, table.data() + i * eh.e_phentsize, sizeof ph);
        if (ph.p_type == PT_INTERP) return true;
    }
    return false;
}

}  // namespace

std::optional<std::uint64_t> elf_bss_bytes(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    Elf64_Ehdr eh;
    if (fd.get() < 0 || !read_at(fd.get(), &eh, sizeof eh, 0) ||
        std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != kNativeData || eh.e_shoff == 0 ||
        eh.e_shentsize < sizeof(Elf64_Shdr))
        return std::nullopt;
    std::uint64_t count = eh.e_shnum;
    if (count == 0) {
        // Too many sections for e_shnum: the real count is in section 0.
        Elf64_Shdr sh0;
        if (!read_at(fd.get(), &sh0, sizeof sh0, eh.e_shoff)) return std::nullopt;
        count = sh0.sh_size;
    }
    if (count == 0 || count > 65536) return std::nullopt;
    std::vector<unsigned char> table(count * eh.e_shentsize);
    if (!read_at(fd.get(), table.data(), table.size(), eh.e_shoff)) return std::nullopt;
    std::uint64_t bytes = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
        Elf64_Shdr sh;
        std::memcpy(&sh, table.data() + i * eh.e_shentsize, sizeof sh);
        if (sh.sh_type == SHT_NOBITS && (sh.sh_flags & SHF_ALLOC) != 0) bytes += sh.sh_size;
    }
    return bytes;
}

std::vector<std::string> preload_obstacles(const std::string& path) {
    std::vector<std::string> out;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return out;

    if (auto why = secure_exec_reason(path, st))
        out.push_back(
            fmt::format("{}: the loader runs it in secure-execution mode and ignores "
                        "LD_PRELOAD paths",
                        *why));

    unsigned char ident[EI_NIDENT];
    // A script (#!) is fine: the preload applies to its interpreter.
    if (!read_at(fd.get(), ident, sizeof ident, 0) || std::memcmp(ident, ELFMAG, SELFMAG) != 0)
        return out;
    if (ident[EI_DATA] != kNativeData) return out;  // will not run here anyway

    constexpr unsigned char kOurClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
    if (ident[EI_CLASS] != kOurClass) {
        out.push_back(fmt::format("is a {}-bit program: the {}-bit {} cannot be loaded into it",
                                  ident[EI_CLASS] == ELFCLASS64 ? 64 : 32, sizeof(void*) * 8,
                                  kLibraryName));
        return out;
    }
    if (ident[EI_CLASS] == ELFCLASS64 && elf64_has_interp(fd.get()) == false)
        out.push_back(
            "is statically linked (no PT_INTERP): no dynamic loader runs, so nothing is preloaded");
    return out;
}

}  // namespace pipespin::cli
