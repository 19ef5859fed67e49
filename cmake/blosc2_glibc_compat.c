/* glibc 2.38 compatibility for a c-blosc2 static library built on Debian forky.
 *
 * glibc 2.38's <stdlib.h> redirects strtol to __isoc23_strtol when compiling
 * for C2x or with _GNU_SOURCE, so libblosc2.a built there references it; older
 * glibc (bookworm has 2.36) does not define it. cmake/FindBlosc2.cmake adds
 * this file to the link only when the C library lacks the symbol.
 *
 * The C23 variant differs only in also accepting a "0b"/"0B" prefix for base 0
 * and 2; c-blosc2 parses decimal numbers (environment variables such as
 * BLOSC_NTHREADS), so plain strtol is equivalent for its calls. Thread-safe
 * as strtol is; errors are reported through errno as by strtol. */
#include <stdlib.h>

long __isoc23_strtol(const char* nptr, char** endptr, int base);

long __isoc23_strtol(const char* nptr, char** endptr, int base) {
  return strtol(nptr, endptr, base);
}
