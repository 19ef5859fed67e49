# shellcheck shell=bash
# Shared by tests/stress/*.sh: a private temp dir, mounting b2ndfs in the
# foreground, and ALWAYS cleaning up: the EXIT trap kills the reader
# processes this test started (by pid), unmounts every mount it made
# (fusermount3 -u, then -uz, aborting the FUSE connection if a dead daemon
# left it hanging), stops its daemons (by pid) and removes the temp dir once
# nothing is mounted below it.
# Source it, then call stress_init NAME BUILD_DIR.
# Exit status convention: 0 pass, 1 fail, 77 skip (only when /dev/fuse cannot
# be used at all).

STRESS_FAILURES=0
STRESS_MOUNTS=()
STRESS_DAEMONS=()
STRESS_CHILDREN=()

stress_init() {
  STRESS_NAME=$1
  BUILD=$(cd "$2" && pwd)
  B2NDFS=$BUILD/src/app/b2ndfs
  FIXTURE=$BUILD/tests/fixtures/b2nd_fixture
  READER=$BUILD/tests/stress/stress_reader
  local p
  for p in "$B2NDFS" "$FIXTURE" "$READER"; do
    [[ -x $p ]] || {
      echo "[$STRESS_NAME] $p is not built" >&2
      exit 2
    }
  done
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/b2ndfs-$STRESS_NAME.XXXXXX")
  STRESS_T0=$(date +%s.%N)
  trap stress_cleanup EXIT
  trap 'exit 130' INT TERM
}

log() { echo "[$STRESS_NAME] $*"; }

fail() {
  echo "[$STRESS_NAME] FAIL: $*" >&2
  STRESS_FAILURES=$((STRESS_FAILURES + 1))
}

# Is exactly this path a mountpoint now (a dead FUSE daemon's too)?
is_mounted() {
  awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

in_proc_mounts() {
  awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
}

pid_alive() { kill -0 "$1" 2>/dev/null; }

# wait_until SECONDS CMD...: polls CMD every 0.1 s; non-zero on timeout.
wait_until() {
  local limit=$1
  shift
  local deadline=$(($(date +%s%N) + limit * 1000000000))
  until "$@"; do
    (($(date +%s%N) > deadline)) && return 1
    sleep 0.1
  done
  return 0
}

# wait_exit PID SECONDS: waits for a child to exit; its status in WAIT_RC
# (non-zero return if it did not exit in time).
# shellcheck disable=SC2034  # WAIT_RC is read by the callers
wait_exit() {
  local pid=$1 limit=$2
  if ! wait_until "$limit" eval "! kill -0 $pid 2>/dev/null"; then
    return 1
  fi
  WAIT_RC=0
  wait "$pid" 2>/dev/null || WAIT_RC=$?
  return 0
}

# Skips (exit 77) when /dev/fuse cannot be used at all.
require_fuse() {
  if [[ ! -c /dev/fuse ]]; then
    log "SKIP: /dev/fuse is missing"
    exit 77
  fi
  if ! { exec 9<>/dev/fuse; } 2>/dev/null; then
    log "SKIP: /dev/fuse cannot be opened"
    exit 77
  fi
  exec 9>&-
  command -v fusermount3 >/dev/null || {
    log "SKIP: fusermount3 is missing"
    exit 77
  }
}

# mount_fs SOURCE MOUNTPOINT [b2ndfs options...]: b2ndfs -f in the
# background (pid in DAEMON_PID, stderr in MOUNTPOINT.log); waits until the
# mount answers. Skips the test (77) if the very first mount is refused for
# lack of privileges.
mount_fs() {
  local src=$1 mnt=$2
  shift 2
  mkdir -p "$mnt"
  "$B2NDFS" -f "$@" "$src" "$mnt" 2>"$mnt.log" &
  DAEMON_PID=$!
  STRESS_DAEMONS+=("$DAEMON_PID")
  STRESS_MOUNTS+=("$mnt")
  if ! wait_until 20 is_mounted "$mnt"; then
    if ((${#STRESS_MOUNTS[@]} == 1)) && grep -qiE "fuse: device not found|failed to open /dev/fuse|Operation not permitted|Permission denied" "$mnt.log"; then
      log "SKIP: FUSE mounts are not possible here: $(head -c 300 "$mnt.log")"
      exit 77
    fi
    fail "b2ndfs did not mount $mnt within 20 s: $(cat "$mnt.log")"
    return 1
  fi
  wait_until 10 stat "$mnt/." >/dev/null 2>&1 || {
    fail "$mnt does not answer stat"
    return 1
  }
}

# Aborts the FUSE connection of MOUNTPOINT (unsticks readers of a dead daemon).
abort_connection() {
  local dev minor
  dev=$(awk -v m="$1" '$5 == m { print $3 }' /proc/self/mountinfo | head -n1)
  [[ -n $dev ]] || return 0
  minor=${dev#*:}
  [[ -w /sys/fs/fuse/connections/$minor/abort ]] && echo 1 >"/sys/fs/fuse/connections/$minor/abort"
  return 0
}

# force_unmount MOUNTPOINT: -u (a few tries), then -uz, then abort.
force_unmount() {
  local mnt=$1 _
  for _ in 1 2 3 4 5; do
    is_mounted "$mnt" || return 0
    fusermount3 -u "$mnt" 2>/dev/null && return 0
    sleep 0.2
  done
  abort_connection "$mnt"
  fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
}

# daemon_log_clean LOGFILE: no sanitizer report in a daemon's stderr.
daemon_log_clean() {
  if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer" "$1"; then
    fail "sanitizer report in $1:"
    grep -E -A30 "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|ThreadSanitizer" "$1" |
      head -n 60 >&2
    return 1
  fi
  return 0
}

stress_cleanup() {
  local rc=$? pid mnt
  set +e
  for pid in "${STRESS_CHILDREN[@]}"; do
    pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
  done
  for mnt in "${STRESS_MOUNTS[@]}"; do
    force_unmount "$mnt"
  done
  for pid in "${STRESS_DAEMONS[@]}"; do
    if pid_alive "$pid"; then
      wait_until 5 eval "! kill -0 $pid 2>/dev/null" || kill -TERM "$pid" 2>/dev/null
      wait_until 3 eval "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null
    fi
  done
  if [[ -n ${TMP:-} && -d $TMP ]]; then
    if grep -qF " $TMP/" /proc/self/mountinfo; then
      echo "[$STRESS_NAME] WARNING: something is still mounted below $TMP; not removing it" >&2
    elif [[ -n ${B2NDFS_KEEP_TMP:-} && $rc -ne 0 ]]; then
      echo "[$STRESS_NAME] kept $TMP" >&2
    else
      rm -rf "$TMP"
    fi
  fi
  exit "$rc"
}

# finish: summary, exit 0 or 1.
finish() {
  local t
  t=$(awk -v a="$STRESS_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if ((STRESS_FAILURES > 0)); then
    log "$STRESS_FAILURES failure(s) in ${t} s"
    exit 1
  fi
  log "passed in ${t} s"
  exit 0
}
