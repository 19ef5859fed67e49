#!/usr/bin/env bash
# stress.readers: 16 threads read the whole fixture set (`b2nd_fixture make`,
# ~90 containers) through a mount whose block cache (4 MiB) is far smaller
# than the working set, at random offsets and lengths, sequentially and
# through mmap, for B2NDFS_STRESS_SECONDS (default 20) seconds; every byte is
# compared with c-blosc2 (stress_reader). Fails on any error or wrong byte,
# or when the daemon's peak RSS passes cache_size + the bound below. Then the
# daemon must unmount and exit cleanly (status 0, no sanitizer report).
# Usage: stress_readers.sh BUILD_DIR
# Environment: B2NDFS_STRESS_SECONDS; B2NDFS_STRESS_SANITIZED=1 (set by
# CMake for -DB2NDFS_SANITIZE=ON builds) reports RSS without bounding it;
# B2NDFS_STRESS_RSS_SLACK_MB overrides the bound.
set -euo pipefail
# shellcheck source=stress_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/stress_lib.sh"
stress_init readers "$1"
require_fuse

SECONDS_TO_RUN=${B2NDFS_STRESS_SECONDS:-20}
CACHE_MB=4
# RSS bound: cache_size + SLACK_MB. What the daemon holds beyond the cache,
# measured on the development machine (2 CPUs, threads=2, 16 readers, 4 MiB
# cache, several runs): ~13 MiB at rest (binary, libfuse, c-blosc2, glibc),
# a peak of 49-51 MiB under this load. The difference is what the design
# allows besides the cache: blocks pinned by readers outside it (the
# mount-wide PinBudget: max(16 MiB, cache/4)), libfuse's request buffers
# (1 MiB + 4 KiB per worker thread, up to 10 of them) and b2ndfs's reply
# buffer kept per FUSE thread (up to 1 MiB each), c-blosc2's scratch
# per decompression context, what glibc's per-thread arenas keep of
# freed blocks, and the free part of the block memory's 2 MiB slabs (at most
# 8 MiB, cache/buffer_memory.h; this run peaks 6-10 MiB higher with them). 74 MiB leaves ~15 MiB for allocator noise, while a leak or an
# unbounded buffer still shows: the working set read here (~18 MiB of data
# decompressed over and over, ~1.3 GB served) would push RSS far past it.
SLACK_MB=${B2NDFS_STRESS_RSS_SLACK_MB:-74}
if [[ ${B2NDFS_STRESS_SANITIZED:-0} == 1 ]]; then
  # ASan's shadow memory and quarantine dwarf the daemon's own use.
  RSS_LIMIT=0
  log "sanitized build: RSS is reported, not bounded"
else
  RSS_LIMIT=$(((CACHE_MB + SLACK_MB) * 1024 * 1024))
fi

"$FIXTURE" make "$TMP/src" "$TMP/ref" >/dev/null
MNT=$TMP/mnt
mount_fs "$TMP/src" "$MNT" -o cache_size=${CACHE_MB}M,threads=2
DAEMON=$DAEMON_PID

rc=0
"$READER" --mount "$MNT" --ref "$TMP/ref" --threads 16 --seconds "$SECONDS_TO_RUN" \
  --pid "$DAEMON" --rss-limit "$RSS_LIMIT" >"$TMP/reader.out" 2>"$TMP/reader.err" || rc=$?
cat "$TMP/reader.out"
head -n 40 "$TMP/reader.err" >&2
case $rc in
  0) ;;
  3) fail "a reader hung (see above)" ;;
  *) fail "stress_reader exited $rc" ;;
esac
if [[ -r $MNT/.b2ndfs/stats ]]; then
  log "daemon stats: $(tr -s ' \n' ' ' <"$MNT/.b2ndfs/stats" | head -c 1500)"
fi
summary=$(grep -o 'MBps=[0-9.]*\|errors=[0-9]*\|mismatches=[0-9]*\|rss_peak_bytes=[0-9-]*\|rss_hwm_bytes=[0-9-]*' "$TMP/reader.out" | tr '\n' ' ' || true)
log "summary: $summary(cache ${CACHE_MB} MiB, RSS limit $((RSS_LIMIT / 1048576)) MiB)"

# Clean end: unmount, the daemon exits 0 by itself.
if ! fusermount3 -u "$MNT" 2>"$TMP/umount.err"; then
  fail "fusermount3 -u after the readers finished: $(cat "$TMP/umount.err")"
fi
if wait_exit "$DAEMON" 10; then
  ((WAIT_RC == 0)) || fail "daemon exited with status $WAIT_RC after unmount"
else
  fail "daemon still running 10 s after its unmount"
fi
daemon_log_clean "$MNT.log" || true
finish
