// SPDX-License-Identifier: GPL-2.0-or-later
// memmove for the executables of the sanitized tree (build-asan) only.
//
// GCC 12's libasan replaces memmove in every library of the process, and its
// replacement checks the ranges and then copies through internal_memmove, a
// plain byte loop, not glibc's memmove. libvterm (uninstrumented) moves its
// whole cell buffer with memmove on every scrolled line, so a flood through
// the server's screen, or the tests' reference renderer, spent 87-91 % of its
// CPU there (perf, tst_session) and the screen tests failed on time
// (docs/reliability.md, "The screen's tests and libasan's memmove"). An executable's
// definition comes first in symbol lookup, libasan's and libc's after it.
//
// Built on memcpy of chunks that do not overlap, through a bounce buffer:
// libasan's memcpy checks both ranges as its memmove did, then calls glibc's.
#include <stddef.h>
#include <string.h>

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (d == s || n == 0)
        return dst;
    if ((size_t)(d > s ? d - s : s - d) >= n)
        return memcpy(dst, src, n);
    unsigned char buf[4096];
    if (d < s) {
        // Forward: a chunk's destination may cover source bytes already read.
        for (size_t i = 0; i < n;) {
            const size_t c = n - i < sizeof buf ? n - i : sizeof buf;
            memcpy(buf, s + i, c);
            memcpy(d + i, buf, c);
            i += c;
        }
    } else {
        // Backward, for the same reason from the other end.
        for (size_t left = n; left > 0;) {
            const size_t c = left < sizeof buf ? left : sizeof buf;
            left -= c;
            memcpy(buf, s + left, c);
            memcpy(d + left, buf, c);
        }
    }
    return dst;
}
