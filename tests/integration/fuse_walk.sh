#!/usr/bin/env bash
# fuse.walk: a tree walk stays within the memory budget (README.md, "Containers
# that change, and what the daemon holds"): memory stays within cache_size
# plus a bounded overhead, also while a tool walks every virtual file, as
# backup tools, updatedb, du and file managers do. 200 containers of 1,024
# chunks each (one written by c-blosc2, copied: ~20 MB of source) show over
# 500,000 virtual files (chunks/, slices/, zarr/, data, headers...); the
# mount's own listing counts them. With -o cache_size=64M, `find MNT` and
# then `du -s MNT` (a lookup and a stat of every name) must leave the
# daemon's peak RSS (VmHWM, also sampled during the walk) within
# cache_size + 64 MiB.
# Usage: fuse_walk.sh BUILD_DIR
# Environment: B2NDFS_WALK_CONTAINERS (default 200); B2NDFS_SANITIZED=1
# reports the peak without bounding it (sanitizers' shadow memory is not the
# daemon's).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init walk "$1"
require_fuse

COUNT=${B2NDFS_WALK_CONTAINERS:-200}
CACHE_MB=64
SLACK_MB=64
MIN_FILES=500000

S=$TMP/src
M=$TMP/mnt
mkdir -p "$S"
# 256 x 256 uint8 in 8 x 8 chunks: 1,024 chunk files, as many zarr chunk
# files, 512 slices, and the container's own files: ~2,577 names each.
"$FIXTURE" write "$TMP/one.b2nd" --dtype '|u1' --shape 256,256 --chunks 8,8 --blocks 4,8 \
  --seed 61 --clevel 1 >/dev/null || {
  fail "b2nd_fixture write"
  exit 1
}
for ((i = 1; i <= COUNT; i++)); do
  cp "$TMP/one.b2nd" "$S/$(printf 'c%04d' "$i").b2nd" || exit 1
done

mount_fs "$S" "$M" -o cache_size=${CACHE_MB}M || exit 1

# The daemon's resident size every 0.2 s while the walk runs.
(
  while kill -0 "$DAEMON_PID" 2>/dev/null; do
    awk '/^VmRSS/ { print $2 }' "/proc/$DAEMON_PID/status" 2>/dev/null
    sleep 0.2
  done
) >"$TMP/rss.samples" &
ITEST_HELPERS+=($!)

hwm_mb() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$DAEMON_PID/status"; }

t0=$(now)
find "$M" >"$TMP/find.out" 2>"$TMP/find.err" || fail "find $M: $(head -c 300 "$TMP/find.err")"
files=$(wc -l <"$TMP/find.out")
log "find: $files names in $(elapsed "$t0") s; daemon peak RSS $(hwm_mb) MiB"
((files >= MIN_FILES)) || fail "the mount lists $files names, fewer than the $MIN_FILES the walk needs"
t0=$(now)
du -s "$M" >"$TMP/du.out" 2>"$TMP/du.err" || fail "du -s $M: $(head -c 300 "$TMP/du.err")"
log "du -s: $(cut -f1 "$TMP/du.out") KiB in $(elapsed "$t0") s; daemon peak RSS $(hwm_mb) MiB"

pid_alive "$DAEMON_PID" || fail "b2ndfs died"
peak_sampled=$(sort -n "$TMP/rss.samples" | tail -n 1)
peak_sampled=$((${peak_sampled:-0} / 1024))
hwm=$(hwm_mb)
rss=$(awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$DAEMON_PID/status")
inodes=$(stats_field "$M" inodes)
log "after the walk: VmHWM $hwm MiB, VmRSS $rss MiB (largest sample during the walk $peak_sampled MiB), $inodes inodes; bound: cache_size $CACHE_MB MiB + $SLACK_MB MiB"
if [[ ${B2NDFS_SANITIZED:-0} == 1 ]]; then
  log "sanitized build: the peak is reported, not bounded"
elif ((hwm > CACHE_MB + SLACK_MB)); then
  fail "a walk of $files names left the daemon's peak RSS at $hwm MiB, over cache_size $CACHE_MB MiB + $SLACK_MB MiB"
fi
finish
