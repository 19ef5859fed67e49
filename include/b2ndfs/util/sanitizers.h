// util/sanitizers: which sanitizer this translation unit is built with, for
// the few places that must do without something a sanitizer cannot follow.
// B2NDFS_THREAD_SANITIZER is defined under ThreadSanitizer (GCC says so with
// __SANITIZE_THREAD__, clang through __has_feature), B2NDFS_ADDRESS_SANITIZER
// under AddressSanitizer.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define B2NDFS_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define B2NDFS_ADDRESS_SANITIZER 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define B2NDFS_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define B2NDFS_THREAD_SANITIZER 1
#endif
#endif
