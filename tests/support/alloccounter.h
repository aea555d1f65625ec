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
// glibc only: the executable's malloc interposes libc's and forwards to the
// __libc_* entry points glibc exports for this purpose.
// Not under AddressSanitizer (make test's build-asan): its own allocator
// replaces malloc, and memory it hands out (strdup, operator new) would reach
// __libc_free here; the counting tests skip there.
#if defined(__GLIBC__) && !defined(TETHER_ASAN)
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
}
#endif
