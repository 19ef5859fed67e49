#!/usr/bin/env bash
# The remote benchmark rows (issue #11): builds b2ndfs and bench_remote_blocks,
# then runs bench/remote.py, which writes bench/REMOTE.md.
#
#   bash bench/remote.sh [--reps N]          (also: bash bench/run.sh --remote)
#
# Needs /dev/fuse, fusermount3, nginx (Debian), curl, and s3rver in .deps/npm
# (scripts/setup.sh) for the S3 row. Everything it mounts or starts is stopped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
echo "[remote] building into $BUILD" >&2
if [[ -f $BUILD/build.ninja || -f $BUILD/Makefile ]]; then
  cmake --build "$BUILD" -j2 --target b2ndfs bench_remote_blocks >&2
else
  B2NDFS_BUILD_DIR="$BUILD" bash "$ROOT/scripts/build.sh" >&2
fi
for cmd in fusermount3 curl /usr/sbin/nginx; do
  command -v "$cmd" >/dev/null || { echo "[remote] $cmd is missing" >&2; exit 1; }
done
exec /usr/bin/python3 "$ROOT/bench/remote.py" --build "$BUILD" "$@"
