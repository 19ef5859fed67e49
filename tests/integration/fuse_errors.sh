#!/usr/bin/env bash
# fuse.errors: command-line errors exit non-zero before daemonizing and
# leave nothing mounted; fstab-style options are accepted; broken containers
# (b2nd_fixture hostile) appear as directories whose meta.json says "error",
# their damaged data reads fail with EIO, and the daemon survives all of it:
# good containers still read right afterwards. SIGTERM unmounts cleanly.
# Usage: fuse_errors.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init errors "$1"
require_fuse

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
MNT=$TMP/mnt
mkdir -p "$MNT"

# --- command-line errors -------------------------------------------------------
# expect_usage_error DESCRIPTION ARGS...: b2ndfs ARGS must exit non-zero,
# say something on stderr, return promptly and mount nothing.
expect_usage_error() {
  local what=$1 rc
  shift
  timeout 20 "$B2NDFS" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  if ((rc == 0)); then
    fail "$what: exit status 0 (expected an error)"
  elif ((rc == 124)); then
    fail "$what: still running after 20 s"
  fi
  [[ -s $TMP/err ]] || fail "$what: nothing on stderr"
  local strays
  strays=$(unmount_strays)
  [[ -z $strays ]] || fail "$what: mounted something anyway, at $strays"
  local pid
  if pid=$(daemon_pid "$MNT"); then
    fail "$what: left a b2ndfs process ($pid) behind"
    ITEST_PIDS+=("$pid")
    stop_pid "$pid"
  fi
}
expect_usage_error "no arguments"
expect_usage_error "only SOURCE" "$S"
expect_usage_error "missing SOURCE" "$TMP/no-such-source" "$MNT"
expect_usage_error "nonexistent MOUNTPOINT" "$S" "$TMP/no-such-mountpoint"
# The root is a directory: a regular file cannot be its mountpoint.
expect_usage_error "MOUNTPOINT is a regular file" "$S" "$S/notes.txt"
expect_usage_error "cache_size=abc" -o cache_size=abc "$S" "$MNT"
expect_usage_error "cache_size= (empty)" -o cache_size= "$S" "$MNT"
expect_usage_error "cache_size=-5M" -o cache_size=-5M "$S" "$MNT"
expect_usage_error "cache_size=12Q" -o cache_size=12Q "$S" "$MNT"
expect_usage_error "cache_size=99999999999999999999999" -o cache_size=99999999999999999999999 "$S" "$MNT"
expect_usage_error "threads=0" -o threads=0 "$S" "$MNT"
expect_usage_error "threads=-1" -o threads=-1 "$S" "$MNT"
expect_usage_error "threads=two" -o threads=two "$S" "$MNT"
expect_usage_error "--bogus" --bogus "$S" "$MNT"
expect_usage_error "-o with no value" "$S" "$MNT" -o
expect_usage_error "three positional arguments" "$S" "$MNT" "$TMP/third"
# Errors come before daemonizing even in the foreground and debug modes.
expect_usage_error "-f with cache_size=abc" -f -o cache_size=abc "$S" "$MNT"

out=$("$B2NDFS" --help 2>&1)
rc=$?
((rc == 0)) || fail "b2ndfs --help: exit status $rc"
grep -q 'cache_size' <<<"$out" || fail "b2ndfs --help does not mention cache_size"
grep -qi 'usage' <<<"$out" || fail "b2ndfs --help prints no usage"

# --- fstab-style options ---------------------------------------------------------
if mount_daemon "$S" "$MNT" -o ro,nofail,_netdev,noauto,defaults,x-systemd.automount,cache_size=64M,threads=2; then
  ref=$(ref_of "$R" ndim/3d_f4.b2nd)
  ref_slice "$ref" ":,:,:" "$TMP/want"
  check "read through a mount with fstab options" cmp "$MNT/ndim/3d_f4.b2nd/data" "$TMP/want"
  check "unmount the fstab-options mount" unmount_fs "$MNT"
  # (20 s: on a loaded machine, process exit alone has taken over 5 s.)
  if [[ -n $DAEMON_PID ]] && ! threads=$(exits_within 20 "$DAEMON_PID"); then
    fail "the daemon did not exit within 20 s of its unmount; its threads (tid:state:wchan): $threads"
  fi
fi
# -o rw is accepted (fstab) but the mount stays read-only.
if mount_daemon "$S" "$MNT" -o rw; then
  if touch "$MNT/ndim/3d_f4.b2nd/data" 2>/dev/null; then fail "-o rw made the mount writable"; fi
  unmount_fs "$MNT"
fi

# --- SIGTERM ends it cleanly (what systemctl stop does) ---------------------------
if mount_fs "$S" "$MNT"; then
  kill -TERM "$DAEMON_PID"
  if wait_until 10 eval "! is_mounted '$MNT'"; then
    wait "$DAEMON_PID"
    rc=$?
    ((rc == 0)) || fail "b2ndfs -f exited with status $rc on SIGTERM (expected 0: a clean stop)"
  else
    fail "SIGTERM did not unmount $MNT"
  fi
fi
# Relative SOURCE and MOUNTPOINT, as typed in a shell: SIGTERM must still
# unmount (no 'Transport endpoint is not connected' left behind).
if (cd "$TMP" && mount_daemon src mnt && echo "$DAEMON_PID" >"$TMP/rel.pid"); then
  ITEST_MOUNTS+=("$MNT")
  pid=$(cat "$TMP/rel.pid" 2>/dev/null)
  if [[ -n $pid ]]; then
    ITEST_PIDS+=("$pid")
    ls "$MNT/ndim" >/dev/null || fail "the mount made with relative paths does not answer"
    kill -TERM "$pid"
    threads=$(exits_within 20 "$pid") || fail "b2ndfs ignored SIGTERM; its threads (tid:state:wchan): $threads"
    if is_mounted "$MNT"; then
      fail "after SIGTERM, a mount made with a relative MOUNTPOINT is left behind: $(stat "$MNT" 2>&1 | head -1)"
      unmount_fs "$MNT"
    fi
  else
    fail "cannot find the daemon of the relative-path mount"
  fi
else
  fail "mounting with relative paths failed"
fi

# --- hostile containers -------------------------------------------------------------
H=$TMP/hostile
"$FIXTURE" hostile "$H/out" >/dev/null || { fail "b2nd_fixture hostile failed"; finish; }
cp "$S/ndim/3d_f4.b2nd" "$H/out/zz_good.b2nd"
cp -r "$S/frames/sparse_f4.b2nd" "$H/out/zz_good_sparse.b2nd"
HM=$TMP/hmnt
mount_fs "$H/out" "$HM" -o cache_size=8M || finish
check "fuse_compare hostile" timeout 60 "$FUSE_COMPARE" hostile "$HM" "$H"
# Read every file of every broken container: errors are fine, hangs and
# crashes are not.
timeout 60 find "$HM" -type f -exec cat {} + >/dev/null 2>&1
(($? == 124)) && fail "reading every file of the hostile set hung"
timeout 30 find "$HM" -type f -exec dd bs=4097 skip=1 count=3 status=none if={} of=/dev/null \; 2>/dev/null
(($? == 124)) && fail "dd of every file of the hostile set hung"
pid_alive "$DAEMON_PID" || fail "b2ndfs died on the hostile set: $(tail -20 "$HM.log")"
{ is_mounted "$HM" && stat "$HM/." >/dev/null 2>&1; } || fail "the hostile mount no longer answers"
# EIO, by the plain tools.
out=$(cat "$HM/chunk_corrupt_payload.b2nd/chunks/0.1" 2>&1 >/dev/null)
grep -q 'Input/output error' <<<"$out" || fail "cat of a damaged chunk: '$out', expected Input/output error"
out=$(dd if="$HM/chunk_corrupt_payload.b2nd/data" of=/dev/null bs=1M status=none 2>&1)
grep -q 'Input/output error' <<<"$out" || fail "dd of a damaged array: '$out', expected Input/output error"
grep -q '"error"' "$HM/random_bytes.b2nd/meta.json" || fail "random_bytes.b2nd/meta.json has no \"error\""
# The reason is logged, naming the file.
grep -q 'chunk_corrupt_payload' "$HM.log" || fail "the damaged chunk was not logged"
# Good containers next to them still read right.
ref_slice "$(ref_of "$R" ndim/3d_f4.b2nd)" ":,:,:" "$TMP/want"
check "a good container after the hostile ones" cmp "$HM/zz_good.b2nd/data" "$TMP/want"
ref_slice "$(ref_of "$R" frames/sparse_f4.b2nd)" ":,:,:" "$TMP/want"
check "a good sparse container after the hostile ones" cmp "$HM/zz_good_sparse.b2nd/data" "$TMP/want"
check "readable chunk of a damaged container" cmp \
  "$HM/chunk_corrupt_payload.b2nd/chunks/1.2" "$HM/chunk_corrupt_payload.b2nd/chunks/1.2"
check "unmount the hostile mount" unmount_fs "$HM"
finish
