#!/usr/bin/env bash
# Installs dependencies (scripts/setup.sh) and builds b2ndfs into build/ (or $B2NDFS_BUILD_DIR).
# Arguments go to cmake's first configuration of the build tree.
# B2NDFS_BUILD_TARGETS="t1 t2": build only these targets, after installing only
# what building needs (scripts/setup.sh --build); the demo does this.
# Compiles go through ccache when it is installed (setup.sh installs it), with
# a cache outside the clone (scripts/lib/ccache.sh; B2NDFS_CCACHE=0: none),
# and in unity batches (B2NDFS_UNITY in CMakeLists.txt; -DB2NDFS_UNITY=OFF as
# an argument compiles file by file).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
TARGETS=()
if [ -n "${B2NDFS_BUILD_TARGETS:-}" ]; then
  read -r -a TARGETS <<<"$B2NDFS_BUILD_TARGETS"
  bash "$ROOT/scripts/setup.sh" --build
else
  bash "$ROOT/scripts/setup.sh"
fi
# shellcheck source=lib/ccache.sh
source "$ROOT/scripts/lib/ccache.sh"
ccache_setup "$ROOT"
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" "${CCACHE_LAUNCHER[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DB2NDFS_WERROR=ON -DB2NDFS_UNITY=ON "$@" >/dev/null
fi
if [ "${#TARGETS[@]}" -gt 0 ]; then
  cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"
else
  cmake --build "$BUILD" -j"$(nproc)"
fi
