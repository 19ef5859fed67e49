#!/usr/bin/env bash
# Installs dependencies (scripts/setup.sh) and builds b2ndfs into build/ (or $B2NDFS_BUILD_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/setup.sh"
GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DB2NDFS_WERROR=ON "$@" >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)"
