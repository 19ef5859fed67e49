#!/usr/bin/env bash
# Builds b2ndfs and runs every test:
#   1. the whole ctest suite (unit tests, core tests against c-blosc2's own
#      reads, FUSE tests that really mount, fuzz corpus replays, stress);
#   2. the same suite built with AddressSanitizer + UBSan (LeakSanitizer
#      included), unless B2NDFS_SANITIZERS=0;
#   3. a short libFuzzer smoke run of every fuzz target, unless B2NDFS_FUZZ_SMOKE=0.
# Extra arguments go to ctest (e.g. -R fuse).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
JOBS="$(nproc)"

bash "$ROOT/scripts/build.sh"
echo "== tests (${BUILD})"
(cd "$BUILD" && ctest --output-on-failure -j"$JOBS" --timeout 900 "$@")

if [ "${B2NDFS_SANITIZERS:-1}" = 1 ]; then
  ASAN_BUILD="${BUILD}-asan"
  echo "== tests under AddressSanitizer + UBSan (${ASAN_BUILD})"
  GEN=()
  if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
  if [ ! -f "$ASAN_BUILD/CMakeCache.txt" ]; then
    # No -Werror here: GCC's flow warnings are noisier under sanitizers.
    cmake -S "$ROOT" -B "$ASAN_BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DB2NDFS_SANITIZE=ON >/dev/null
  fi
  cmake --build "$ASAN_BUILD" -j"$JOBS"
  (cd "$ASAN_BUILD" &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --output-on-failure -j"$JOBS" --timeout 1800 "$@")
fi

if [ "${B2NDFS_FUZZ_SMOKE:-1}" = 1 ] && [ -f "$ROOT/scripts/fuzz.sh" ]; then
  echo "== fuzz smoke run"
  bash "$ROOT/scripts/fuzz.sh" --smoke
fi
