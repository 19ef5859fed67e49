#!/usr/bin/env bash
# The b2ndfs benchmark: builds what it needs, generates the data into bench/out/,
# runs every route side by side (the 1 GiB main array, then the geometry and
# codec sweep on smaller arrays) and writes bench/RESULTS.md.
#
#   bash bench/run.sh [--size-mb N] [--quick] [--reps N] [--no-sweep] [--regen] [--help]
#
# Needs /dev/fuse, fusermount3, squashfuse, mksquashfs and Debian's numpy
# (scripts/setup.sh installs them). Run as root (or a user allowed to mount FUSE).
# Whatever happens, everything it mounted under bench/out/mnt is unmounted.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build-bench}"
OUT="$ROOT/bench/out"
for a in "$@"; do [[ $a == --remote ]] && exec bash "$ROOT/bench/remote.sh"; done  # bench/REMOTE.md

for a in "$@"; do
  if [[ $a == -h || $a == --help ]]; then exec /usr/bin/python3 "$ROOT/bench/bench.py" --help; fi
done

cleanup() {
  # A safety net behind bench.py's own unmounting: anything still mounted below OUT.
  local m
  [[ -r /proc/self/mountinfo ]] || return 0
  awk -v p="$OUT/mnt/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | while read -r m; do
    fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "[bench] building into $BUILD" >&2
TARGETS=(b2ndfs bench_make_array bench_inprocess bench_memfs bench_reader)
if ! B2NDFS_BUILD_DIR="$BUILD" bash "$ROOT/scripts/build.sh" -DB2NDFS_BUILD_TESTS=OFF >&2; then
  # Something else in the tree (a test, a tool) may be mid-edit: build only what we run.
  echo "[bench] full build failed; building only ${TARGETS[*]}" >&2
  [[ -f $BUILD/CMakeCache.txt ]] || exit 1
  cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}" >&2
fi
for tool in bench/bench_make_array bench/bench_inprocess bench/bench_memfs bench/bench_reader \
  src/app/b2ndfs; do
  [[ -x $BUILD/$tool ]] || { echo "[bench] $BUILD/$tool was not built" >&2; exit 1; }
done
for cmd in fusermount3 squashfuse mksquashfs; do
  command -v "$cmd" >/dev/null || { echo "[bench] $cmd is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done
/usr/bin/python3 -c 'import numpy' || { echo "[bench] /usr/bin/python3 lacks numpy" >&2; exit 1; }

mkdir -p "$OUT"
# In the background, so that a signal to this script reaches it at once (bash runs a trap
# only after a foreground child ends); bench.py unmounts what it mounted on SIGTERM.
/usr/bin/python3 "$ROOT/bench/bench.py" --build "$BUILD" --out "$OUT" "$@" &
PY=$!
stop() { kill -TERM "$PY" 2>/dev/null; wait "$PY"; exit "$1"; }
trap 'stop 130' INT
trap 'stop 143' TERM
wait "$PY"
