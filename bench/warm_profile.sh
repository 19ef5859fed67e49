#!/usr/bin/env bash
# Instruction-count profile of the warm read path (block cache hits), for a
# machine too busy for wall-clock benchmarks: the daemon (or bench_memfs, the
# FUSE ceiling) runs under callgrind, the block cache is warmed by two reads
# of `data` with instrumentation off, then each operation is read through FUSE
# with instrumentation on (the kernel's pages of the file dropped first, as
# bench.py's warm route does) and its instructions are dumped on their own.
# Prints, per operation, bytes served and the daemon's user-space
# instructions per MiB served; leaves the callgrind files (for
# callgrind_annotate) in the work directory.
#
#   bash bench/warm_profile.sh [--fs b2ndfs|memfs] [--size-mb N] [--geometry NAME]
#                              [--ops "data slice0 slice1 slice2 rand cubes"]
#                              [--slices K] [--work DIR]
#
# NAME is one of bench/geometry.py's (default b16k-c256k-lz4-shuffle). Slices:
# K files of each axis (spread evenly), each read whole with 1 MiB read()s.
# Needs valgrind, fusermount3 and a build in $B2NDFS_BUILD_DIR (default build/);
# $B2NDFS_BIN overrides the daemon (e.g. another build's, for a before/after);
# $RUN_TAG names the run's directory (WORK/run-FS-NAME-TAG).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
FS=b2ndfs
SIZE_MB=128
GEOMETRY=b16k-c256k-lz4-shuffle
OPS="data slice0 slice1 slice2 rand cubes"
SLICES=8
WORK=/tmp/b2ndfs-warm-profile
while [[ $# -gt 0 ]]; do
  case $1 in
    --fs) FS=$2; shift 2 ;;
    --size-mb) SIZE_MB=$2; shift 2 ;;
    --geometry) GEOMETRY=$2; shift 2 ;;
    --ops) OPS=$2; shift 2 ;;
    --slices) SLICES=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done

READER="$BUILD/bench/bench_reader"
DATA="$WORK/data-$GEOMETRY-${SIZE_MB}mb"
MNT="$WORK/mnt-$FS"
RUN="$WORK/run-$FS-$GEOMETRY${RUN_TAG:+-$RUN_TAG}"
mkdir -p "$DATA/src" "$MNT" "$RUN"
rm -f "$RUN"/callgrind.*

# The array, once per geometry and size.
if [[ ! -f $DATA/made.json ]]; then
  read -r -a MAKE_ARGS < <(cd "$ROOT/bench" && /usr/bin/python3 -c \
    "import geometry; print(' '.join(geometry.make_args(geometry.by_name('$GEOMETRY'))))")
  "$BUILD/bench/bench_make_array" --size-mb "$SIZE_MB" --b2nd "$DATA/src/array.b2nd" \
    "${MAKE_ARGS[@]}" >"$DATA/made.json"
fi
read -r N0 N1 N2 < <(/usr/bin/python3 -c \
  "import json; print(*json.load(open('$DATA/made.json'))['shape'])")
ITEMSIZE=4
TOTAL=$((N0 * N1 * N2 * ITEMSIZE))

PID=
cleanup() {
  if mountpoint -q "$MNT"; then fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" || true; fi
  if [[ -n $PID ]]; then wait "$PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

VG=(valgrind --tool=callgrind --trace-children=no --instr-atstart=no
  --callgrind-out-file="$RUN/callgrind.out" --log-file="$RUN/valgrind.log")
if [[ $FS == b2ndfs ]]; then
  "${VG[@]}" "${B2NDFS_BIN:-$BUILD/src/app/b2ndfs}" -f "$DATA/src" "$MNT" \
    -o cache_size=2048M,threads=2 2>"$RUN/daemon.err" &
  PID=$!
  FILE_DATA="$MNT/array.b2nd/data"
  STATS="$MNT/.b2ndfs/stats"
  served() { /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["reads"]; print(r["requests"], r["bytes_served"])' "$STATS"; }
  slice_file() {
    local width=${#2}
    printf '%s/array.b2nd/slices/%d/%0*d' "$MNT" "$1" "$width" "$3"
  }
else
  "${VG[@]}" "$BUILD/bench/bench_memfs" "$MNT" "data=$TOTAL" "slice0=$((TOTAL / N0))" \
    "slice1=$((TOTAL / N1))" "slice2=$((TOTAL / N2))" -f 2>"$RUN/daemon.err" &
  PID=$!
  FILE_DATA="$MNT/data"
  STATS="$MNT/.stats"
  served() { /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["requests"], r["bytes"])' "$STATS"; }
  slice_file() { printf '%s/slice%d' "$MNT" "$1"; }
fi
for _ in $(seq 600); do
  [[ -e $FILE_DATA ]] && break
  kill -0 "$PID" 2>/dev/null || { cat "$RUN/daemon.err"; exit 1; }
  sleep 0.5
done
[[ -e $FILE_DATA ]] || { echo "mount did not come up" >&2; exit 1; }

# Warm the block cache: every block decompressed once (read-ahead may leave a
# few behind the first pass; the second catches them).
"$READER" --drop-cache seq "$FILE_DATA" >/dev/null
"$READER" --drop-cache seq "$FILE_DATA" >/dev/null

cg() { callgrind_control "$@" "$PID" >/dev/null 2>&1; }
bytes_of() { /usr/bin/python3 -c 'import json,sys; print(sum(json.loads(l)["bytes"] for l in sys.stdin))'; }

# Ir/MiB: the daemon's instructions over the bytes it served (FUSE replies:
# the kernel's read-ahead may fetch more than the reader asked for).
printf '%-8s %12s %12s %9s %14s %12s\n' op read served requests instructions 'Ir/MiB'
for op in $OPS; do
  read -r req0 served0 < <(served)
  cg -i on
  case $op in
    data) out=$("$READER" --drop-cache seq "$FILE_DATA") ;;
    slice[0-9])
      axis=${op#slice}
      extents=("$N0" "$N1" "$N2")
      n=${extents[$axis]}
      out=$(for k in $(seq 0 $((SLICES - 1))); do
        "$READER" --drop-cache seq "$(slice_file "$axis" "$((n - 1))" $((k * n / SLICES)))"
      done)
      ;;
    rand) out=$("$READER" --drop-cache rand "$FILE_DATA" 64 1048576 7) ;;
    cubes) out=$("$READER" --drop-cache cubes "$FILE_DATA" "$N0" "$N1" "$N2" "$ITEMSIZE" 4 64 7) ;;
    *) echo "unknown op $op" >&2; exit 2 ;;
  esac
  cg --dump="$op"
  cg -i off
  read -r req1 served1 < <(served)
  bytes=$(bytes_of <<<"$out")
  file=$(grep -l "^desc: Trigger: Client Request: $op\$\|dump $op\$" "$RUN"/callgrind.out.* 2>/dev/null |
    tail -1 || true)
  [[ -n $file ]] || file=$(ls -t "$RUN"/callgrind.out.* | head -1)
  ir=$(awk '/^totals:/ { print $2; exit }' "$file")
  mv "$file" "$RUN/callgrind.$op"
  printf '%-8s %12d %12d %9d %14d %12.0f\n' "$op" "$bytes" $((served1 - served0)) \
    $((req1 - req0)) "$ir" "$(echo "$ir * 1048576 / ($served1 - $served0)" | bc -l)"
done
echo "callgrind files: $RUN/callgrind.OP (callgrind_annotate --inclusive=yes FILE)"
