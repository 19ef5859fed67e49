#!/usr/bin/env bash
# stress.shutdown: the daemon goes away cleanly while 16 threads (two
# stress_reader processes in hammer mode) are reading through it.
#  (a) fusermount3 -u during the reads: succeeds, or fails with EBUSY while
#      files are open; then the readers are killed and a second
#      fusermount3 -u must succeed.
#  (b) SIGTERM to the daemon during the reads.
# Both times: the daemon exits by itself within 5 s with status 0 and no
# sanitizer report, the mount is gone from /proc/mounts, the mountpoint
# does not answer "Transport endpoint is not connected", and the readers end
# within 10 s with errors, never hang (stress_reader exits 3 on an operation
# stuck for 8 s), and never see wrong bytes.
# Usage: stress_shutdown.sh BUILD_DIR
set -euo pipefail
# shellcheck source=stress_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/stress_lib.sh"
stress_init shutdown "$1"
require_fuse

"$FIXTURE" make "$TMP/src" "$TMP/ref" >/dev/null
MNT=$TMP/mnt
READERS=()

# start_readers: two hammer-mode readers of 8 threads; returns once both
# read (their references are loaded) and reads have been in flight for 2 s.
start_readers() {
  READERS=()
  local i
  for i in 1 2; do
    rm -f "$TMP/ready.$i"
    "$READER" --mount "$MNT" --ref "$TMP/ref" --threads 8 --seconds 60 --mode hammer \
      --mmap-percent 0 --max-op-seconds 8 --ready-file "$TMP/ready.$i" \
      >"$TMP/reader.$i.out" 2>"$TMP/reader.$i.err" &
    READERS+=($!)
    STRESS_CHILDREN+=($!)
  done
  for i in 1 2; do
    wait_until 60 test -e "$TMP/ready.$i" || {
      fail "reader $i did not start: $(cat "$TMP/reader.$i.err")"
      return 1
    }
  done
  sleep 2
}

# check_readers_end SECONDS: every reader exits by itself in time, with 0
# (hammer mode: errors are expected, wrong bytes and hangs are not).
check_readers_end() {
  local i pid
  for i in "${!READERS[@]}"; do
    pid=${READERS[$i]}
    if ! wait_exit "$pid" "$1"; then
      fail "reader $((i + 1)) (pid $pid) still running $1 s after the daemon went away (hung)"
      kill -KILL "$pid" 2>/dev/null || true
      continue
    fi
    case $WAIT_RC in
      0) ;;
      3) fail "reader $((i + 1)) hung: $(grep HANG "$TMP/reader.$((i + 1)).err")" ;;
      *) fail "reader $((i + 1)) exited $WAIT_RC: $(head -n 5 "$TMP/reader.$((i + 1)).err")" ;;
    esac
    log "reader $((i + 1)): $(grep -o ' reads=[0-9]*\|errors=[0-9]*\|mismatches=[0-9]*' \
      "$TMP/reader.$((i + 1)).out" | tr '\n' ' ' || true)"
  done
}

# check_gone DAEMON_PID WHAT: the daemon exits 0 within 5 s and leaves no
# mount behind.
check_gone() {
  local pid=$1 what=$2
  if wait_exit "$pid" 5; then
    ((WAIT_RC == 0)) || fail "$what: the daemon exited with status $WAIT_RC"
  else
    fail "$what: the daemon is still running 5 s later"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if in_proc_mounts "$MNT"; then
    fail "$what: $MNT is still in /proc/mounts"
    force_unmount "$MNT"
  fi
  local err
  err=$(stat "$MNT" 2>&1 >/dev/null || true)
  if [[ $err == *"Transport endpoint is not connected"* ]]; then
    fail "$what: $MNT: Transport endpoint is not connected"
    force_unmount "$MNT"
  fi
  daemon_log_clean "$MNT.log" || true
  cp "$MNT.log" "$TMP/daemon-$what.log" 2>/dev/null || true
}

# --- (a) fusermount3 -u during reads -------------------------------------
mount_fs "$TMP/src" "$MNT" -o cache_size=4M,threads=2
DAEMON=$DAEMON_PID
start_readers
if fusermount3 -u "$MNT" 2>"$TMP/umount.err"; then
  log "(a) fusermount3 -u succeeded at once"
  check_readers_end 10
else
  if grep -qi "busy" "$TMP/umount.err"; then
    log "(a) fusermount3 -u: busy while files are open (expected); killing the readers"
  else
    fail "(a) fusermount3 -u failed unexpectedly: $(cat "$TMP/umount.err")"
  fi
  for pid in "${READERS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${READERS[@]}"; do
    wait_exit "$pid" 10 || fail "(a) reader $pid did not die within 10 s of SIGTERM (stuck in a read)"
  done
  # The kernel may still be releasing the files for a moment.
  wait_until 5 fusermount3 -u "$MNT" 2>"$TMP/umount.err" ||
    fail "(a) fusermount3 -u after the readers died: $(cat "$TMP/umount.err")"
fi
check_gone "$DAEMON" "(a)"

# --- (b) SIGTERM during reads ----------------------------------------------
mount_fs "$TMP/src" "$MNT" -o cache_size=4M,threads=2
DAEMON=$DAEMON_PID
start_readers
t0=$(date +%s%N)
kill -TERM "$DAEMON"
check_gone "$DAEMON" "(b)"
log "(b) the daemon exited $((($(date +%s%N) - t0) / 1000000)) ms after SIGTERM"
check_readers_end 10
finish
