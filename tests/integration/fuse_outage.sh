#!/usr/bin/env bash
# fuse.outage: a short outage is reported and forgotten (README.md,
# "Containers that change"). For a web server (nginx) and an S3 server
# (s3rver) in turn: a mount with a cache that holds the whole container reads
# X.b2nd/data whole; the server is stopped for 5 s (s3rver: then also frozen,
# so that requests time out instead of being refused); meanwhile `stat` of the
# known names (the container, data, data.npy, meta.json) and reads of data
# and data.npy (new opens, and reads with the kernel's cached pages dropped,
# so that they reach the daemon) must all succeed, byte-exact, from the
# cache; the server comes back with the same files; data read again (cached
# pages dropped): .b2ndfs/stats must show no block decompressed again and no
# block data fetched again (blocks_decompressed, source_reads,
# compressed_bytes_fetched, source_bytes_read unchanged). A mount with a
# short timeout=, so that a failed check of the source costs little. While
# the server is down (stopped, and frozen), `stat` of known names answers
# quickly (the median of ten under 100 ms: the daemon does not wait for the
# server about names it knows) and a name never looked up (Y.b2nd, on the
# server all along) fails within the timeout.
# Usage: fuse_outage.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init outage "$1"
require_fuse
READER=("$PY" "$(dirname "${BASH_SOURCE[0]}")/open_reader.py")
OUTAGE_S=${B2NDFS_OUTAGE_SECONDS:-5}
COUNTERS=(reads.blocks_decompressed reads.source_reads reads.compressed_bytes_fetched
  reads.source_bytes_read)

SRC=$TMP/src
R=$TMP/ref
W=$TMP/want
X=$TMP/x
mkdir -p "$SRC" "$R" "$W" "$X"
# ~3 MiB of float32 (random: compressed, it is about as large), 24 chunks.
"$FIXTURE" write "$SRC/X.b2nd" --ref "$R/X.b2nd" --dtype '<f4' --shape 96,128,64 \
  --chunks 32,64,64 --blocks 8,32,64 --seed 51 >/dev/null || {
  fail "b2nd_fixture write"
  exit 1
}
ref_slice "$R/X.b2nd" ":,:,:" "$W/data"
cp "$SRC/X.b2nd" "$SRC/Y.b2nd"  # never looked up before the outage
SHAPE=$(info_field "$R/X.b2nd" shape)

# counters MOUNT: the COUNTERS of its stats, space-separated.
counters() {
  local c out=""
  cat "$1/.b2ndfs/stats" >"$X/stats.json" 2>/dev/null || return 1
  for c in "${COUNTERS[@]}"; do out+="$(json_field "$X/stats.json" "$c") "; done
  echo "${out% }"
}

# settled MOUNT: the counters no longer move (read-ahead done); sets SETTLED.
settled() {
  local a b
  a=$(counters "$1") || return 1
  sleep 0.3
  b=$(counters "$1") || return 1
  SETTLED=$b
  [[ $a == "$b" ]]
}

# reads_from_cache WHAT MOUNT: stat of the known names and reads of data and
# data.npy (new opens; cached pages dropped) succeed and are byte-exact.
reads_from_cache() {
  local what=$1 d=$2/X.b2nd f err
  for f in "" /data /data.npy /meta.json; do
    stat "$d$f" >/dev/null 2>"$X/stat.err" || fail "$what: stat X.b2nd$f: $(cat "$X/stat.err")"
  done
  if "${READER[@]}" cat "$d/data" "$X/got" 2>"$X/cat.err"; then
    cmp -s "$X/got" "$W/data" || fail "$what: X.b2nd/data (cached pages dropped) is not the container's bytes"
  else
    fail "$what: X.b2nd/data (cached pages dropped): $(cat "$X/cat.err")"
  fi
  cmp -s "$d/data" "$W/data" 2>"$X/cmp.err" ||
    fail "$what: cat X.b2nd/data: $(cmp "$d/data" "$W/data" 2>&1 | head -c 200)"
  if "${READER[@]}" cat "$d/data.npy" "$X/got.npy" 2>"$X/cat.err"; then
    err=$(npy_matches "$X/got.npy" "$W/data" "$SHAPE" 2>&1) || fail "$what: X.b2nd/data.npy: $err"
  else
    fail "$what: X.b2nd/data.npy (cached pages dropped): $(cat "$X/cat.err")"
  fi
}

# stat_median_ms PATH...: the median time of a stat of each PATH, in whole
# milliseconds. Names the kernel has not looked up yet reach the daemon.
stat_median_ms() {
  "$PY" - "$@" <<'PYEOF'
import os, statistics, sys, time
times = []
for p in sys.argv[1:]:
    t0 = time.monotonic()
    os.stat(p)
    times.append((time.monotonic() - t0) * 1000)
print(int(statistics.median(times)))
PYEOF
}

# down_checks WHAT MOUNT FIRST: names of the known container that the kernel
# has not looked up (slices/0/FIRST.. FIRST+9, each a lookup the daemon
# answers) stat quickly; a new container fails within the timeout
# (timeout=2 and its retry, plus slack for a busy machine).
down_checks() {
  local what=$1 d=$2 first=$3 ms t0 out i paths=()
  for ((i = first; i < first + 10; i++)); do paths+=("$d/X.b2nd/slices/0/$i"); done
  sleep 1.1  # past the container directory's attribute timeout: it is asked too
  if ms=$(stat_median_ms "$d/X.b2nd" "${paths[@]}" 2>"$X/median.err"); then
    log "$what: stat of 11 names of the known container, median: $ms ms"
    ((ms < 100)) || fail "$what: stat of known names took $ms ms (median of 11): the daemon waits for the server"
  else
    fail "$what: stat of known names failed: $(head -c 200 "$X/median.err")"
  fi
  t0=$(now)
  out=$(cat "$d/Y.b2nd/meta.json" 2>&1 >/dev/null) && fail "$what: Y.b2nd, never looked up, read while the server is down"
  within 6 "$t0" || fail "$what: a lookup of a new name took $(elapsed "$t0") s with timeout=2"
  log "$what: a new name failed after $(elapsed "$t0") s: ${out:0:120}"
}

# outage NAME URL STOP START [b2ndfs options]: the whole scenario for one
# server.
outage() {
  local name=$1 url=$2 stop=$3 start=$4 mnt=$TMP/mnt_$1 before after t0 rounds=0
  shift 4
  mount_fs "$url" "$mnt" -o cache_size=64M,timeout=2,retries=1 "$@" || return 1
  check "$name: X.b2nd/data" cmp "$mnt/X.b2nd/data" "$W/data"
  reads_from_cache "$name, server up" "$mnt"
  wait_until 10 settled "$mnt" || fail "$name: the stats still move 10 s after the reads"
  before=$SETTLED
  log "$name: read whole; ${COUNTERS[*]#reads.}: $before"

  "$stop"
  t0=$(now)
  # Until the outage is OUTAGE_S old: the daemon's checks of the source fail
  # all along (it revalidates what it knows after a second).
  while within "$OUTAGE_S" "$t0"; do
    rounds=$((rounds + 1))
    reads_from_cache "$name, server stopped for $(elapsed "$t0") s" "$mnt"
    sleep 0.5
  done
  down_checks "$name, server stopped" "$mnt" 10
  log "$name: $rounds rounds of stats and reads in $(elapsed "$t0") s of outage"
  "$start" || return 1

  reads_from_cache "$name, server back" "$mnt"
  wait_until 10 settled "$mnt" || fail "$name: the stats still move 10 s after the reads"
  after=$SETTLED
  log "$name: after the outage and another read: $after"
  local -a b a
  read -ra b <<<"$before"
  read -ra a <<<"$after"
  local i
  for i in "${!COUNTERS[@]}"; do
    [[ ${a[i]:-x} == "${b[i]:-y}" ]] ||
      fail "$name: ${COUNTERS[i]} went from ${b[i]:-?} to ${a[i]:-?}: what the cache held was fetched or decompressed again after a $OUTAGE_S s outage"
  done
  if [[ -n ${FREEZE:-} ]]; then
    # A server that accepts connections and never answers: every check of
    # the source times out (timeout=2). Compared with the counters after
    # the restart.
    b=("${a[@]}")
    "$FREEZE"
    t0=$(now)
    rounds=0
    # Past the daemon's revalidation interval (a second), so that its checks
    # of the source reach the frozen server.
    while within 3 "$t0"; do
      rounds=$((rounds + 1))
      reads_from_cache "$name, server frozen for $(elapsed "$t0") s" "$mnt"
      sleep 0.5
    done
    down_checks "$name, server frozen" "$mnt" 20
    log "$name: $rounds rounds of stats and reads in $(elapsed "$t0") s with the server frozen"
    "$THAW"
    wait_until 10 settled "$mnt" || fail "$name: the stats still move 10 s after the reads"
    log "$name: after the server was frozen: $SETTLED"
    read -ra a <<<"$SETTLED"
    for i in "${!COUNTERS[@]}"; do
      [[ ${a[i]:-x} == "${b[i]:-y}" ]] ||
        fail "$name: ${COUNTERS[i]} went from ${b[i]:-?} to ${a[i]:-?}: what the cache held was fetched or decompressed again after the server did not answer for a while"
    done
  fi
  local replaced
  replaced=$(stats_field "$mnt" containers.generations_replaced)
  [[ $replaced == 0 ]] ||
    fail "$name: containers.generations_replaced is '$replaced': the outage ended the container's generation"
  pid_alive "$DAEMON_PID" || fail "$name: b2ndfs died"
  unmount_fs "$mnt"
}

# --- nginx ---------------------------------------------------------------------
nginx_start "web=$SRC" || exit 1
outage nginx "$NGINX_URL/web/" nginx_stop nginx_launch

# --- s3rver --------------------------------------------------------------------
s3rver_start outage || exit 1
# Both servers are stopped at the end (s3rver_start's trap knows only its own).
trap 'ITEST_RC=$?; s3rver_stop; nginx_stop; (exit $ITEST_RC); itest_cleanup' EXIT
s3_put outage "$SRC" || exit 1
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
export AWS_SHARED_CREDENTIALS_FILE=$TMP/no-such-credentials AWS_CONFIG_FILE=$TMP/no-such-config
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION
# Then frozen (SIGSTOP): timeouts instead of refused connections.
FREEZE=s3rver_freeze THAW=s3rver_thaw outage s3rver s3://outage "s3rver_stop" "s3rver_launch" -o "endpoint=$S3_URL"
finish
