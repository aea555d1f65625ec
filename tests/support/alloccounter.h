// SPDX-License-Identifier: GPL-2.0-or-later
// Heap-allocation counting for hot-path tests ("no allocation per append").
// Include from exactly one translation unit of a test executable: it defines
// the process's malloc family.
#pragma once

#include "sanitizer.h"

#include <atomic>
#include <cstdlib>

// Counts heap allocations made by this process (malloc family, which both
// operator new and Qt's containers end up in) while `g_countAllocs` is set.
// glibc: the executable's malloc interposes libc's and forwards to the
// __libc_* entry points glibc exports for this purpose.
// Under AddressSanitizer (make test's Qt 6 tree, build-asan) its own
// allocator replaces malloc and operator new, so interposing would hand its
// memory to __libc_free; it calls the hook installed with
// __sanitizer_install_malloc_and_free_hooks() on every allocation instead
// (compiler-rt's sanitizer/allocator_interface.h; GCC ships the runtime, not
// the header, hence the declaration here). Same counts either way: ASan's
// realloc is one new allocation, as glibc's is counted once.
#if defined(TETHER_ASAN)
#define TETHER_COUNT_ALLOCS 1
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*mallocHook)(const volatile void *, size_t),
                                                          void (*freeHook)(const volatile void *));
namespace {
std::atomic<bool> g_countAllocs{false};
std::atomic<long> g_allocs{0};
void countAllocation(const volatile void *, size_t)
{
    if (g_countAllocs.load(std::memory_order_relaxed))
        g_allocs.fetch_add(1, std::memory_order_relaxed);
}
void ignoreFree(const volatile void *) {}
// Installed before main(); the runtime keeps a few hook slots, one is ours.
[[maybe_unused]] const int g_hookInstalled = __sanitizer_install_malloc_and_free_hooks(countAllocation, ignoreFree);
}
#elif defined(__GLIBC__)
#define TETHER_COUNT_ALLOCS 1
extern "C" {
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
}
namespace {
std::atomic<bool> g_countAllocs{false};
std::atomic<long> g_allocs{0};
}
extern "C" {
void *malloc(size_t n)
{
    if (g_countAllocs.load(std::memory_order_relaxed))
        g_allocs.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    if (g_countAllocs.load(std::memory_order_relaxed))
        g_allocs.fetch_add(1, std::memory_order_relaxed);
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    if (g_countAllocs.load(std::memory_order_relaxed))
        g_allocs.fetch_add(1, std::memory_order_relaxed);
    return __libc_realloc(p, n);
}
void free(void *p)
{
    __libc_free(p);
}
}
#endif
#ifdef TETHER_COUNT_ALLOCS
namespace {
/// Heap allocations made while running f.
template<typename F> long allocationsDuring(F &&f)
{
    const long before = g_allocs.load();
    g_countAllocs = true;
    f();
    g_countAllocs = false;
    return g_allocs.load() - before;
}
/// Exactly one heap allocation (and its free), to check the counter works:
/// through a volatile pointer, since GCC -O2 removes a plain
/// free(malloc(16)) as dead code (it did under ASan).
inline void oneAllocation()
{
    void *volatile p = malloc(16);
    free(p);
}
}
#endif
