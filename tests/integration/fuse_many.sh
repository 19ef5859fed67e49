#!/usr/bin/env bash
# fuse.many: any number of containers can be read, whatever the descriptor
# limit (README.md, "What the daemon holds"), within cache_size plus a
# bounded overhead (the same section, "Memory"). 20,000 small containers in
# one directory (7 distinct ones written by c-blosc2, copied byte for byte:
# a mix-up reads wrong); the daemon runs under `ulimit -n 1024` (soft and hard, so it cannot
# raise it) with -o cache_size=64M. Listing the directory, then reading every
# meta.json (shape and dtype) and three ranges of every `data` (compared with
# c-blosc2's bytes) must all succeed, twice (in the second pass, in reverse
# order, containers closed meanwhile are opened again); "Too many open
# files" must appear nowhere; the daemon's peak RSS (VmHWM) must stay within
# cache_size + RSS_SLACK_MB (below). Then 2,000 of them through a mount
# with -o max_open=8, read by 4 threads.
# Usage: fuse_many.sh BUILD_DIR
# Environment: B2NDFS_MANY_COUNT (default 20000); B2NDFS_SANITIZED=1
# reports RSS without bounding it; B2NDFS_MANY_RSS_SLACK_MB overrides it.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lifecycle_init many "$1"
require_fuse

COUNT=${B2NDFS_MANY_COUNT:-20000}
NOFILE=1024
CACHE_MB=64
# What the daemon may hold besides the cache, in MiB. At rest it is ~13 MiB
# (binary, libfuse, c-blosc2, glibc); the FUSE request threads add their
# buffers (libfuse: 1 MiB + a page each, up to 10 threads by default) and
# glibc arenas ~10 MiB more. What grows with the number of containers is
# what the kernel makes the daemon keep: one inode per name it has looked up
# and not yet forgotten (here up to 3 per container -- the directory,
# meta.json and data -- 60,000 in all), a few hundred bytes each with its
# name: ~20-30 MiB. Open containers themselves (frame index, metalayers,
# descriptor) are bounded by max_open, whatever COUNT is. 96 MiB leaves
# ~30 MiB for allocator slack; a daemon that keeps every container it ever
# opened (~2+ KiB each, ~50 MiB here and growing with COUNT) or that leaks
# per request goes past it.
RSS_SLACK_MB=${B2NDFS_MANY_RSS_SLACK_MB:-96}

S=$TMP/src
R=$TMP/ref
M=$TMP/mnt
log "writing $COUNT containers"
"$FIXTURE" many "$S" "$R" "$COUNT" >/dev/null || {
  fail "b2nd_fixture many failed"
  exit 1
}

# The limit applies to this shell and everything it starts from here on:
# the daemon, and the probe (which needs few descriptors).
ulimit -n "$NOFILE" || {
  fail "cannot set ulimit -n $NOFILE"
  exit 1
}
mount_fs "$S" "$M" -o cache_size=${CACHE_MB}M || exit 1
limits=$(awk '/^Max open files/ { print $4, $5 }' "/proc/$DAEMON_PID/limits")
[[ $limits == "$NOFILE $NOFILE" ]] || fail "the daemon's descriptor limits are '$limits', not $NOFILE $NOFILE"

names=("$M"/*.b2nd) # readdir only: listing must not open containers
listed=${#names[@]}
((listed == COUNT)) || fail "ls lists $listed containers, expected $COUNT"

log "pass 1: every container, in order"
"$PROBE" many "$M" "$R/many.tsv" --threads 4 >"$TMP/pass1.out" 2>"$TMP/pass1.err" ||
  fail "pass 1: $(cat "$TMP/pass1.out") $(head -c 1500 "$TMP/pass1.err")"
log "$(cat "$TMP/pass1.out")"
log "pass 2: every container, in reverse order"
tac "$R/many.tsv" >"$TMP/reverse.tsv"
"$PROBE" many "$M" "$TMP/reverse.tsv" --threads 4 >"$TMP/pass2.out" 2>"$TMP/pass2.err" ||
  fail "pass 2: $(cat "$TMP/pass2.out") $(head -c 1500 "$TMP/pass2.err")"
log "$(cat "$TMP/pass2.out")"

fds=$(find "/proc/$DAEMON_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$DAEMON_PID/status")
log "daemon: $fds descriptors open now, peak RSS $((hwm_kb / 1024)) MiB (cache $CACHE_MB MiB + slack $RSS_SLACK_MB MiB)"
if grep -qi 'too many open files' "$M.log" "$TMP/pass1.err" "$TMP/pass2.err"; then
  fail "\"Too many open files\": $(grep -hi 'too many open files' "$M.log" "$TMP/pass1.err" "$TMP/pass2.err" | head -n 3)"
fi
errors=$(stats_field "$M" reads.errors)
[[ $errors == 0 ]] || fail "reads.errors is $errors"
if [[ ${B2NDFS_SANITIZED:-0} == 1 ]]; then
  log "sanitized build: RSS is reported, not bounded"
elif ((hwm_kb > (CACHE_MB + RSS_SLACK_MB) * 1024)); then
  fail "peak RSS $((hwm_kb / 1024)) MiB is over cache_size $CACHE_MB MiB + $RSS_SLACK_MB MiB"
fi
pid_alive "$DAEMON_PID" || fail "b2ndfs died"

# A tight -o max_open: 4 readers over 2,000 containers with room for 8 open
# at once, so containers are closed while others still use them.
log "max_open=8: 2,000 containers, 4 threads"
head -n 2000 "$R/many.tsv" >"$TMP/some.tsv"
mount_fs "$S" "$TMP/mnt_lru" -o cache_size=16M,max_open=8 &&
  {
    "$PROBE" many "$TMP/mnt_lru" "$TMP/some.tsv" --threads 4 >"$TMP/lru.out" 2>"$TMP/lru.err" ||
      fail "max_open=8: $(cat "$TMP/lru.out") $(head -c 1500 "$TMP/lru.err")"
    log "$(cat "$TMP/lru.out")"
  }
finish
