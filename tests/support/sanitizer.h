// SPDX-License-Identifier: GPL-2.0-or-later
// TETHER_ASAN is defined when this translation unit is built with
// AddressSanitizer (make test's build-asan; GCC says so with
// __SANITIZE_ADDRESS__, clang with __has_feature). Tests that measure memory
// or count allocations need to know: ASan keeps freed memory in quarantine
// and replaces malloc.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TETHER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TETHER_ASAN 1
#endif
#endif
