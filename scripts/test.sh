#!/usr/bin/env bash
# Builds b2ndfs and runs every test: unit tests (Catch2), core integration tests
# against c-blosc2's own reads, and FUSE tests that mount for real.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/build.sh"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" --timeout 900 "$@"
