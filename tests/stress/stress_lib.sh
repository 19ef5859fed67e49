# shellcheck shell=bash
# Shared by tests/stress/*.sh: everything of tests/integration/lib.sh (temp
# dir, mounting, ALWAYS unmounting, failure bookkeeping, exit 77 only when
# /dev/fuse cannot be used), plus what the stress tests need besides: the
# reader program, reader processes killed on exit, an unmount that aborts
# the FUSE connection a dead daemon left hanging, a child's exit status, and
# a sanitizer check of a daemon's log.
# Source it, then call stress_init NAME BUILD_DIR.

# shellcheck source=../integration/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

STRESS_CHILDREN=()

stress_init() {
  itest_init "$1" "$2"
  READER=$BUILD/tests/stress/stress_reader
  [[ -x $READER ]] || {
    echo "[$1] $READER is not built" >&2
    exit 2
  }
  trap stress_cleanup EXIT
}

in_proc_mounts() {
  awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts
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

# Kills the readers first (they may hold the mount busy) and unsticks
# connections of dead daemons, then lib.sh's cleanup unmounts and removes.
stress_cleanup() {
  local rc=$? pid mnt
  set +e
  # Only while still this shell's children: a pid that ended may be another
  # test's process by now (pids wrap quickly on a busy machine).
  for pid in "${STRESS_CHILDREN[@]}"; do
    is_child "$pid" && kill -KILL "$pid" 2>/dev/null
  done
  for mnt in "${ITEST_MOUNTS[@]}"; do
    is_mounted "$mnt" && force_unmount "$mnt"
  done
  (exit "$rc")
  itest_cleanup
}
