// The control API's exported functions: the only names libpipespin.so
// exports besides the libc names of hooks.def. Programs call them through
// the inline functions of include/pipespin/pipespin.h, which find them by
// name at run time; PIPESPIN_EXPORTS_V1 there lists them, and the linker
// version script is generated from that list (exports.map.in).
//
// Contract: thin, as the wrappers are: the work is in core/control.cpp.
// They may be called before the shim's constructor ran or from a signal
// handler: nothing here allocates, locks or changes errno.
#include <type_traits>

#include "core/control.h"
#include "interpose/wrap.h"
#include "pipespin/pipespin.h"

#if !defined(PIPESPIN_VERSION_MAJOR) || !defined(PIPESPIN_VERSION_MINOR) || \
    !defined(PIPESPIN_VERSION_PATCH)
#error "PIPESPIN_VERSION_MAJOR/MINOR/PATCH must be defined by the build (CMakeLists.txt)"
#endif

PIPESPIN_EXPORT unsigned pipespin_version_v1(void) {
    return PIPESPIN_VERSION_CODE(PIPESPIN_VERSION_MAJOR, PIPESPIN_VERSION_MINOR,
                                 PIPESPIN_VERSION_PATCH);
}

PIPESPIN_EXPORT int pipespin_fd_hint_v1(int fd, int dirs, int budget_us) {
    return pipespin::control_fd_hint(fd, dirs, budget_us);
}

PIPESPIN_EXPORT int pipespin_thread_spin_v1(int enable) {
    return pipespin::control_thread_spin(enable);
}

PIPESPIN_EXPORT int pipespin_get_stats_v1(struct pipespin_stats* out) {
    return pipespin::control_get_stats(out);
}

// Each listed function is defined here, with the type the header gives it.
#define PIPESPIN_CHECK_EXPORT(ret, name, params)              \
    static_assert(std::is_same_v<decltype(&name), name##_fn>, \
                  #name " is defined with the type pipespin.h lists");
PIPESPIN_EXPORTS_V1(PIPESPIN_CHECK_EXPORT)
#undef PIPESPIN_CHECK_EXPORT
