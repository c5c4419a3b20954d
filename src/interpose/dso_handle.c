/* The library is linked without the compiler's start files (-nostartfiles,
 * CMakeLists.txt): they would add a destructor walk (__do_global_dtors_aux)
 * that runs in every process at exit and writes a flag in the library's
 * data, a copy-on-write page fault in every forked child of a wrapped
 * shell. The one thing of theirs the library uses is this handle: libc's
 * pthread_atfork() names the object that registers a fork handler with it,
 * so that a dlclose() could drop the handler (the library is never unloaded:
 * it is preloaded). It is hidden, as the start files' own is.
 */
__attribute__((visibility("hidden"))) void *__dso_handle = &__dso_handle;
