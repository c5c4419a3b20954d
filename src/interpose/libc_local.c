/* The few string functions the library's own code calls (the compiler
 * turns std::string_view of a C string into strlen, structure copies and
 * comparisons into memcpy and memcmp), defined here, hidden, so that those
 * calls bind inside the library at link time.
 *
 * Otherwise each is a call through the PLT into libc, bound lazily: the
 * first one in every process (the constructor's, in a process that
 * starts and exits at once) costs a page fault on the PLT's page, a save
 * of the whole register state and a symbol look-up through every object
 * of the process, each time a process starts. These are used on short
 * strings (option names, paths) and small structures, never on the data a
 * program reads or writes: byte loops are all they need. They are not
 * exported (the version script exports only the hooks), so nothing else
 * in the process sees them.
 *
 * The loops must not be turned back into calls of themselves: the file is
 * compiled with -fno-builtin and without loop-to-call transformations
 * (CMakeLists.txt).
 */
#include <stddef.h>

#define LOCAL __attribute__((visibility("hidden")))

LOCAL size_t strlen(const char *s) {
    const char *p = s;
    while (*p != '\0') ++p;
    return (size_t)(p - s);
}

LOCAL void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = dst;
    const unsigned char *s = src;
    while (n-- != 0) *d++ = *s++;
    return dst;
}

LOCAL int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n != 0; --n, ++x, ++y)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}
