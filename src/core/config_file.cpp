// Reading the config file with the checks the shim needs (config.h,
// "the file"): raw system calls only, messages without strerror().
#include <fcntl.h>
#include <sys/stat.h>

#include "core/config.h"
#include "core/out.h"
#include "platform/sys.h"

namespace pipespin {
namespace {

// strerror() is not async-signal-safe (locales): the few a config file meets.
const char* errno_text(long e) noexcept {
    switch (e) {
        case EACCES:
            return "permission denied";
        case EPERM:
            return "operation not permitted";
        case ENOENT:
            return "no such file";
        case ENOTDIR:
            return "a path component is not a directory";
        case ELOOP:
            return "too many levels of symbolic links";
        case ENAMETOOLONG:
            return "file name too long";
        case EISDIR:
            return "is a directory";
        case EIO:
            return "input/output error";
        case EMFILE:
        case ENFILE:
            return "too many open files";
        case ENOMEM:
            return "out of memory";
        default:
            return nullptr;
    }
}

void put_errno(Out& o, long e) noexcept {
    if (const char* t = errno_text(e)) {
        o.put(t);
    } else {
        o.put("errno ");
        o.num(static_cast<std::uint64_t>(e));
    }
}

FileStamp stamp_of(const sys::FileInfo& fi) noexcept {
    return {true,       fi.dev,      fi.ino,      fi.size, fi.mtime_s,
            fi.ctime_s, fi.mtime_ns, fi.ctime_ns, fi.uid};
}

}  // namespace

FileStamp stamp_path(const char* path) noexcept {
    sys::FileInfo fi;
    if (sys::stat_path(path, fi) != 0) return {};
    return stamp_of(fi);
}

LoadStatus load_config_file(const char* path, unsigned euid, char* buf, std::size_t cap,
                            std::size_t& len, FileStamp& stamp, char* why,
                            std::size_t why_size) noexcept {
    len = 0;
    stamp = {};
    Out o{why, why_size};
    o.put("");
    const long fd = sys::open_read(path);
    if (fd < 0) {
        put_errno(o, -fd);
        return fd == -ENOENT ? LoadStatus::Missing : LoadStatus::Unreadable;
    }
    struct Closer {
        int fd;
        ~Closer() { sys::close(fd); }
    } closer{static_cast<int>(fd)};
    sys::FileInfo fi;
    if (const long r = sys::stat_fd(closer.fd, fi); r != 0) {
        o.put("cannot examine it: ");
        put_errno(o, -r);
        return LoadStatus::Unreadable;
    }
    if (!S_ISREG(fi.mode)) {
        o.put(S_ISDIR(fi.mode) ? "a directory" : "not a regular file");
        return LoadStatus::NotRegular;
    }
    if (fi.uid != 0 && fi.uid != euid) {
        o.put("refused: owned by uid ");
        o.num(fi.uid);
        o.put(", neither root nor the running user (uid ");
        o.num(euid);
        o.put(")");
        return LoadStatus::Insecure;
    }
    if ((fi.mode & S_IWOTH) || ((fi.mode & S_IWGRP) && fi.gid != 0)) {
        o.put("refused: writable by ");
        o.put((fi.mode & S_IWOTH) ? "everybody" : "its group");
        o.put(" (mode ");
        o.put("0");
        o.num(fi.mode & 07777, 8);
        if (!(fi.mode & S_IWOTH)) {
            o.put(", group ");
            o.num(fi.gid);
        }
        o.put(")");
        return LoadStatus::Insecure;
    }
    if (fi.size > kConfigMaxBytes) {
        o.put("too large (");
        o.num(fi.size);
        o.put(" bytes, at most ");
        o.num(kConfigMaxBytes);
        o.put(")");
        return LoadStatus::TooLarge;
    }
    const std::size_t want = cap < kConfigMaxBytes + 1 ? cap : kConfigMaxBytes + 1;
    while (len < want) {
        const long n = sys::read(closer.fd, buf + len, want - len);
        if (n == -EINTR) continue;
        if (n < 0) {
            o.put("cannot read it: ");
            put_errno(o, -n);
            len = 0;
            return LoadStatus::Unreadable;
        }
        if (n == 0) break;
        len += static_cast<std::size_t>(n);
    }
    if (len > kConfigMaxBytes) {  // it grew while we read
        o.put("too large (more than ");
        o.num(kConfigMaxBytes);
        o.put(" bytes)");
        len = 0;
        return LoadStatus::TooLarge;
    }
    stamp = stamp_of(fi);
    return LoadStatus::Ok;
}

}  // namespace pipespin
