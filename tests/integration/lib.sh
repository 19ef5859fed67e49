# Shared by the FUSE tests (tests/integration/fuse_*.sh): paths to the built
# programs, a private temp dir, mounting and ALWAYS unmounting, waiting, and
# failure bookkeeping. Source it, then call itest_init NAME BUILD_DIR.
#
# B2NDFS_ITEST_THROUGH=http, s3 or az (set by tests/integration/CMakeLists.txt
# for the conformance scripts' .http/.s3/.az runs): every directory mount_fs is given
# is served by a real server of the test's own instead (remote_lib.sh
# through_source) and mounted from there, so the same script checks the same
# files read through a remote source.
#
# Every mount made with mount_fs / mount_daemon is recorded; the EXIT trap
# unmounts each (fusermount3 -u, then -uz as a last resort), stops the
# daemons this test started (by pid only) and removes the temp dir, but only
# when nothing is mounted below it any more.
# Exit status convention: 0 pass, 1 fail, 77 skip (only when /dev/fuse
# cannot be used at all).

set -uo pipefail

ITEST_FAILURES=0
ITEST_MOUNTS=()
ITEST_PIDS=()
# Helpers the test started (proxies, servers): stopped at cleanup, TERM then
# KILL. ITEST_PIDS holds daemons, which stop_pid signals only while they are
# still b2ndfs.
ITEST_HELPERS=()
# Debian's python3, as users have it (numpy, zarr, GDAL...); a python3 found
# first on PATH may be another one, or a pyenv shim that costs ~0.3 s a call.
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3

itest_init() {
  ITEST_NAME=$1
  BUILD=$(cd "$2" && pwd) || { echo "no build dir $2" >&2; exit 2; }
  B2NDFS=$BUILD/src/app/b2ndfs
  FIXTURE=$BUILD/tests/fixtures/b2nd_fixture
  FUSE_COMPARE=$BUILD/tests/integration/fuse_compare
  for p in "$B2NDFS" "$FIXTURE" "$FUSE_COMPARE"; do
    [[ -x $p ]] || { echo "$ITEST_NAME: $p is not built" >&2; exit 2; }
  done
  ITEST_THROUGH=${B2NDFS_ITEST_THROUGH:-}
  case $ITEST_THROUGH in
    "") ;;
    http | s3 | az)
      ITEST_NAME=$ITEST_NAME.$ITEST_THROUGH
      source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
      ;;
    *) echo "$ITEST_NAME: B2NDFS_ITEST_THROUGH=$ITEST_THROUGH: http, s3 or az" >&2; exit 2 ;;
  esac
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/b2ndfs-$ITEST_NAME.XXXXXX")
  chmod 755 "$TMP"  # other users (fuse.permissions) must reach the mounts
  ITEST_T0=$(date +%s.%N)
  trap itest_cleanup EXIT
  trap 'exit 130' INT TERM
  itest_watchdog
  [[ -z $ITEST_THROUGH ]] || through_begin
}

# ctest kills a test that runs out of time with SIGKILL, which no trap
# survives: its mounts and servers would stay. ITEST_TIMEOUT (ctest's
# TIMEOUT, set by tests/integration/CMakeLists.txt) arms a watchdog that
# stops this script 15 s before that (its children TERMed, so that a command
# hanging in the foreground lets the EXIT trap run).
itest_watchdog() {
  local limit=${ITEST_TIMEOUT:-0}
  if [[ ! $limit =~ ^[0-9]+$ ]] || ((limit <= 30)); then return 0; fi
  command -v pkill >/dev/null || return 0  # it needs procps (scripts/setup.sh)
  (
    # Stopped early (cleanup kills the sleep): nothing more to do.
    # sleep holds no end of ctest's output pipe: ctest reads it until all close.
    { sleep $((limit - 15)) >/dev/null; } 2>/dev/null || exit 0
    echo "[$ITEST_NAME] FAIL: stopped after $((limit - 15)) s, 15 s before ctest's limit of $limit s" >&2
    kill -TERM $$
    pkill -TERM -P $$
  ) &
  ITEST_WATCHDOG=$!
}

log() {
  local t
  t=$(awk -v a="$ITEST_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  echo "[$ITEST_NAME +${t}s] $*"
}

# A failure is also written down in $TMP/.failures, which finish counts: a
# fail called in a subshell ($(...), ( ... ), a pipeline, a background job)
# cannot change this shell's ITEST_FAILURES.
fail() {
  echo "[$ITEST_NAME] FAIL: $*" >&2
  ITEST_FAILURES=$((ITEST_FAILURES + 1))
  [[ -n ${TMP:-} && -d $TMP ]] && echo x >>"$TMP/.failures"
}

# check DESCRIPTION CMD...: runs CMD, records a failure if it exits non-zero.
check() {
  local what=$1
  shift
  if "$@"; then return 0; fi
  fail "$what (command: $*)"
  return 1
}

# Is exactly this path a mountpoint now (a dead FUSE daemon counts too)?
is_mounted() {
  local m
  m=$(realpath -ms -- "$1")
  awk -v m="$m" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s.
wait_until() {
  local limit=$1
  shift
  local deadline
  deadline=$(($(date +%s%N) + limit * 1000000000))
  until "$@"; do
    (($(date +%s%N) > deadline)) && return 1
    sleep 0.1
  done
}

pid_alive() { kill -0 "$1" 2>/dev/null; }

# The pid of the b2ndfs process serving MOUNTPOINT, found by its exact command
# line (for daemons started without -f).
daemon_pid() {
  local mnt=$1 p a
  local -a args
  for p in /proc/[0-9]*; do
    mapfile -d '' args 2>/dev/null <"$p/cmdline" || continue
    if ((${#args[@]} < 3)) || [[ ${args[0]} != *b2ndfs ]]; then continue; fi
    for a in "${args[@]:1}"; do
      if [[ $a == "$mnt" ]]; then
        echo "${p#/proc/}"
        return 0
      fi
    done
  done
  return 1
}

# Skips the test (exit 77) when /dev/fuse cannot be used; a probe mount
# decides. Any other failure of the probe is a test failure.
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
  mkdir -p "$TMP/probe_src" "$TMP/probe_mnt"
  if "$B2NDFS" "$TMP/probe_src" "$TMP/probe_mnt" 2>"$TMP/probe.log"; then
    ITEST_MOUNTS+=("$TMP/probe_mnt")
    local pid
    pid=$(daemon_pid "$TMP/probe_mnt") && ITEST_PIDS+=("$pid")
    unmount_fs "$TMP/probe_mnt"
    return 0
  fi
  if grep -qiE "device not found|failed to open /dev/fuse|mount failed: (Operation not permitted|Permission denied)|fusermount3?: .*(not permitted|denied)" \
    "$TMP/probe.log"; then
    log "SKIP: FUSE mounts are not possible here: $(head -c 300 "$TMP/probe.log")"
    exit 77
  fi
  fail "probe mount failed: $(cat "$TMP/probe.log")"
  exit 1
}

# mount_fs SOURCE MOUNTPOINT [b2ndfs options...]: runs b2ndfs in the
# foreground in the background (its pid in DAEMON_PID, stderr in
# MOUNTPOINT.log) and waits until the mount is in place. With ITEST_THROUGH, a
# directory SOURCE is mounted from this test's server instead.
mount_fs() {
  local src=$1 mnt=$2
  shift 2
  if [[ -n ${ITEST_THROUGH:-} && -d $src ]]; then
    through_source "$src" || return 1
    src=$THROUGH_SOURCE
    set -- "$@" "${THROUGH_OPTIONS[@]}"
  fi
  mkdir -p "$mnt"
  "$B2NDFS" -f "$@" "$src" "$mnt" 2>"$mnt.log" &
  DAEMON_PID=$!
  ITEST_PIDS+=("$DAEMON_PID")
  ITEST_MOUNTS+=("$mnt")
  # (|| true: the check below reports a timeout, also for set -e callers.)
  wait_until 20 eval "is_mounted '$mnt' || ! kill -0 $DAEMON_PID 2>/dev/null" || true
  if ! is_mounted "$mnt"; then
    if pid_alive "$DAEMON_PID"; then
      fail "b2ndfs did not mount $mnt within 20 s: $(cat "$mnt.log")"
    else
      fail "b2ndfs -f $* exited without mounting $mnt: $(cat "$mnt.log")"
    fi
    return 1
  fi
  # The mount exists; wait until it answers.
  wait_until 10 stat "$mnt/." >/dev/null 2>&1 || fail "$mnt does not answer stat"
}

# mount_daemon SOURCE MOUNTPOINT [options...]: b2ndfs as users start it (it
# daemonizes and returns once mounted). Sets DAEMON_PID.
mount_daemon() {
  local src=$1 mnt=$2
  shift 2
  mkdir -p "$mnt"
  ITEST_MOUNTS+=("$mnt")
  if ! "$B2NDFS" "$@" "$src" "$mnt" 2>"$mnt.log"; then
    fail "b2ndfs $* $src $mnt exited non-zero: $(cat "$mnt.log")"
    return 1
  fi
  if ! is_mounted "$mnt"; then
    fail "b2ndfs returned before $mnt was mounted"
    wait_until 10 is_mounted "$mnt" || return 1
  fi
  DAEMON_PID=$(daemon_pid "$mnt") || DAEMON_PID=""
  [[ -n $DAEMON_PID ]] && ITEST_PIDS+=("$DAEMON_PID")
  return 0
}

# unmount_fs MOUNTPOINT: fusermount3 -u (retried while busy), -uz last.
# Returns non-zero if the clean unmount did not work.
unmount_fs() {
  local mnt=$1
  is_mounted "$mnt" || return 0
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    if fusermount3 -u "$mnt" 2>>"$TMP/unmount.log"; then
      # The daemon exits once unmounted.
      return 0
    fi
    sleep 0.3
  done
  fusermount3 -uz "$mnt" 2>>"$TMP/unmount.log" || umount -l "$mnt" 2>>"$TMP/unmount.log"
  return 1
}

# names_tmp PID: an argument of process PID names this test's dir ($TMP):
# the process is this test's, not another's that reuses a pid this test
# remembers (pid_max is 32768: pids wrap within a minute of a busy CI run;
# seen: fuse.http's cleanup stopped fuse.s3's no_sign mount).
names_tmp() {
  local -a args
  local a
  mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
  for a in "${args[@]}"; do
    [[ $a == *"$TMP"* ]] && return 0
  done
  return 1
}

# is_b2ndfs PID: the process is (still) a b2ndfs of this test (its mount
# point lies below $TMP), not a reused pid.
is_b2ndfs() {
  local -a args
  mapfile -d '' args 2>/dev/null <"/proc/$1/cmdline" || return 1
  [[ ${args[0]:-} == *b2ndfs ]] && names_tmp "$1"
}

# is_child PID: PID is (still) a child of this shell.
is_child() {
  local stat ppid
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  read -r _ ppid _ <<<"$stat"
  [[ $ppid == "$$" ]]
}

# is_own_helper PID: PID is still a helper this test started (a child of
# this shell, or naming this test's dir), not a reused pid.
is_own_helper() { is_child "$1" || names_tmp "$1"; }

# exits_within SECONDS PID: waits for PID to end; if it does not, prints
# what each of its threads is blocked in (for the failure message).
exits_within() {
  local limit=$1 pid=$2 task
  wait_until "$limit" eval "! kill -0 $pid 2>/dev/null" && return 0
  for task in /proc/"$pid"/task/*; do
    printf '%s:%s:%s ' "${task##*/}" "$(awk '/^State/ {print $2}' "$task/status" 2>/dev/null)" \
      "$(cat "$task/wchan" 2>/dev/null)"
  done
  return 1
}

# stop_pid PID: waits for a daemon to exit after its unmount, then TERM, KILL
# (only while PID is still a b2ndfs process).
stop_pid() {
  local pid=$1
  is_b2ndfs "$pid" || return 0
  wait_until 5 eval "! kill -0 $pid 2>/dev/null" && return 0
  is_b2ndfs "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  wait_until 3 eval "! kill -0 $pid 2>/dev/null" && return 0
  is_b2ndfs "$pid" && kill -KILL "$pid" 2>/dev/null
}

# Mountpoints below this test's temp dir, one per line.
mounts_below_tmp() {
  awk -v t="$TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo
}

# unmount_strays: unmounts whatever is mounted below $TMP (and stops its
# daemon); prints the mountpoints it found.
unmount_strays() {
  local mnt pid
  for mnt in $(mounts_below_tmp); do
    echo "$mnt"
    pid=$(daemon_pid "$mnt") && ITEST_PIDS+=("$pid")
    unmount_fs "$mnt"
  done
}

itest_cleanup() {
  local rc=$? mnt pid
  set +e
  if [[ -n ${ITEST_WATCHDOG:-} ]]; then
    pkill -P "$ITEST_WATCHDOG" 2>/dev/null  # its sleep: then it ends
    wait "$ITEST_WATCHDOG" 2>/dev/null
  fi
  for mnt in "${ITEST_MOUNTS[@]}"; do
    unmount_fs "$mnt"
  done
  unmount_strays >/dev/null
  for pid in "${ITEST_PIDS[@]}"; do
    stop_pid "$pid"
  done
  local helpers=()
  for pid in "${ITEST_HELPERS[@]}"; do
    is_own_helper "$pid" && helpers+=("$pid")
  done
  for pid in "${helpers[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${helpers[@]}"; do
    wait_until 3 eval "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null
  done
  if [[ -n ${TMP:-} && -d $TMP ]]; then
    if [[ -n $(mounts_below_tmp) ]]; then
      echo "[$ITEST_NAME] WARNING: still mounted below $TMP, not removing it: $(mounts_below_tmp | tr "\n" " ")" >&2
    elif [[ -n ${B2NDFS_KEEP_TMP:-} && $rc -ne 0 ]]; then
      echo "[$ITEST_NAME] kept $TMP" >&2
    else
      rm -rf "$TMP"
    fi
  fi
  exit "$rc"
}

# finish: prints the summary and exits 0 or 1.
finish() {
  local t
  t=$(awk -v a="$ITEST_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  [[ -f $TMP/.failures ]] && ITEST_FAILURES=$(($(wc -l <"$TMP/.failures")))
  if ((ITEST_FAILURES > 0)); then
    log "$ITEST_FAILURES failure(s) in ${t} s"
    exit 1
  fi
  log "passed in ${t} s"
  exit 0
}

# make_fixtures DIR: the container set in DIR/src, references in DIR/ref.
# b2nd_fixture writes the same bytes on every run (its data is seeded), so
# the first test of a build tree that needs the set makes it once, under a
# lock, into BUILD/tests/fixtures/set (again when b2nd_fixture is rebuilt),
# and each test copies that (with new times, as if just made): some forty
# tests a pass each made the same set.
make_fixtures() {
  local kept=$BUILD/tests/fixtures/set
  if ! (
    flock 9 || exit 1
    if [[ ! -f $kept/.made || $FIXTURE -nt $kept/.made ]]; then
      rm -rf "$kept" "$kept.new" &&
        "$FIXTURE" make "$kept.new/src" "$kept.new/ref" >/dev/null &&
        touch "$kept.new/.made" && mv "$kept.new" "$kept"
    fi
  ) 9>"$kept.lock"; then
    fail "b2nd_fixture make failed"
    exit 1
  fi
  mkdir -p "$1" && cp -R "$kept/src" "$1/src" && cp -R "$kept/ref" "$1/ref" ||
    { fail "copying the fixture set from $kept"; exit 1; }
}

# ref_slice REF BOX OUT [--itemsize N]: the reference bytes of a box.
ref_slice() {
  "$FIXTURE" slice "$@" || fail "b2nd_fixture slice $*"
}

# ref_of REFDIR CONTAINER: the reference path of a manifest entry.
ref_of() {
  local r
  r=$(awk -F'\t' -v c="$2" '$1 == c { print $3 }' "$1/manifest.tsv")
  [[ -n $r ]] || { fail "$2 is not in $1/manifest.tsv"; return 1; }
  echo "$1/$r"
}

# info_field REFPATH FIELD: an array field of `b2nd_fixture info` as "a,b,c",
# or a number.
# `b2nd_fixture info` runs once per reference (while it is not rewritten):
# some tests ask hundreds of times, and under ASan each run costs ~0.15 s.
info_field() {
  local cache=$TMP/.info/${1//\//%} line value re='"'"$2"'":(\[[^]]*\]|[^,}]*)'
  if [[ ! $cache -nt $1 ]]; then
    mkdir -p "$TMP/.info" && "$FIXTURE" info "$1" >"$cache" || { rm -f "$cache"; return 1; }
  fi
  read -r line <"$cache"
  [[ $line =~ $re ]] || return 1
  value=${BASH_REMATCH[1]//[/}
  echo "${value//]/}"
}

# full_box REFPATH: the whole array as b2nd_fixture slice wants it (":,:,:"
# for a 3-D reference, "-" for 0-D).
full_box() {
  local n
  n=$(info_field "$1" ndim)
  if ((n == 0)); then echo "-"; else printf ':%.0s,' $(seq "$n") | sed 's/,$//'; fi
}

# want_data REFDIR CONTAINER OUT: c-blosc2's bytes of a manifest entry's
# whole array (what its data file must hold).
want_data() {
  local ref
  ref=$(ref_of "$1" "$2") || return 1
  ref_slice "$ref" "$(full_box "$ref")" "$3"
}

# now / elapsed T0 (seconds since T0, one decimal) / within SECONDS T0
# (less than SECONDS passed since T0): timing of fault tests.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
within() { awk -v a="$2" -v b="$(now)" -v s="$1" 'BEGIN { exit !(b - a < s) }'; }

# chunk_box REFPATH NAME: the box of chunk NAME ("1.0.2") as b2nd_fixture
# slice wants it ("8:16,0:8,16:24").
chunk_box() {
  local shape chunks
  shape=$(info_field "$1" shape)
  chunks=$(info_field "$1" chunkshape)
  awk -v s="$shape" -v c="$chunks" -v n="$2" 'BEGIN {
    split(s, S, ","); split(c, C, ","); k = split(n, N, ".");
    out = "";
    for (i = 1; i <= k; i++) {
      a = N[i] * C[i]; b = a + C[i]; if (b > S[i]) b = S[i];
      out = out (i > 1 ? "," : "") a ":" b;
    }
    print out }'
}

# ---------------------------------------------------------------------------
# Lifecycle tests (fuse_generations, fuse_many, fuse_plainfile,
# fuse_wholechunk): the probe program, descriptors held across a change, and
# JSON fields.

declare -A HOLD_FD=() HOLD_PID=() HOLD_CHECKS=()

# lifecycle_init NAME BUILD_DIR: itest_init, the probe, and a cleanup that
# lets go of held descriptors before lib.sh unmounts.
lifecycle_init() {
  itest_init "$1" "$2"
  PROBE=$BUILD/tests/integration/lifecycle_probe
  [[ -x $PROBE ]] || {
    echo "$1: $PROBE is not built" >&2
    exit 2
  }
  # shellcheck disable=SC2154  # ITEST_RC is set by the trap itself
  trap 'ITEST_RC=$?; hold_stop_all; (exit $ITEST_RC); itest_cleanup' EXIT
}

# hold_start ID [--mmap] FILE REF [FILE REF ...]: a probe opens (and maps)
# each FILE, checks it reads as REF, and keeps it open until hold_stop ID.
hold_start() {
  local id=$1 fifo=$TMP/hold.$1.in fd
  shift
  rm -f "$fifo" "$TMP/hold.$id.out" "$TMP/hold.$id.err"
  mkfifo "$fifo"
  "$PROBE" hold "$@" <"$fifo" >"$TMP/hold.$id.out" 2>"$TMP/hold.$id.err" &
  HOLD_PID[$id]=$!
  exec {fd}>"$fifo"
  HOLD_FD[$id]=$fd
  HOLD_CHECKS[$id]=0
  if ! wait_until 30 eval "grep -q '^ready' '$TMP/hold.$id.out' || ! kill -0 ${HOLD_PID[$id]} 2>/dev/null"; then
    fail "hold $id: the probe did not get ready in 30 s"
    return 1
  fi
  if ! grep -q '^ready' "$TMP/hold.$id.out"; then
    fail "hold $id: the files did not read right when opened: $(head -c 600 "$TMP/hold.$id.err")"
    hold_stop "$id"
    return 1
  fi
}

# hold_check ID WHAT: the probe reads everything it holds again; every read
# must give the old bytes or EIO (see lifecycle_probe.cc).
hold_check() {
  local id=$1 what=$2 n
  [[ -n ${HOLD_FD[$id]:-} ]] || return 1
  n=$((HOLD_CHECKS[$id] + 1))
  HOLD_CHECKS[$id]=$n
  # In a subshell: if the probe is gone, SIGPIPE ends that, not the test.
  (echo check >&"${HOLD_FD[$id]}") 2>/dev/null
  if ! wait_until 60 eval "(( \$(grep -c '^checked' '$TMP/hold.$id.out') >= $n )) || ! kill -0 ${HOLD_PID[$id]} 2>/dev/null"; then
    fail "$what: held descriptors: no answer in 60 s (a read hangs?)"
    return 1
  fi
  local line
  line=$(grep '^checked' "$TMP/hold.$id.out" | sed -n "${n}p")
  if [[ -z $line ]]; then
    fail "$what: the probe holding descriptors died: $(tail -c 600 "$TMP/hold.$id.err")"
    return 1
  fi
  log "$what: held descriptors: ${line#checked }"
  if [[ $line != *" bad=0" ]]; then
    fail "$what: a held descriptor or mapping returned bytes that are not the old generation's: $(grep '^BAD' "$TMP/hold.$id.err" | tail -n 8)"
    return 1
  fi
}

# hold_stop ID: closes the probe's input; it exits with its verdict.
hold_stop() {
  local id=$1 rc=0 fd
  [[ -n ${HOLD_FD[$id]:-} ]] || return 0
  fd=${HOLD_FD[$id]}
  exec {fd}>&-
  unset "HOLD_FD[$id]"
  if wait_until 30 eval "! kill -0 ${HOLD_PID[$id]} 2>/dev/null"; then
    wait "${HOLD_PID[$id]}" 2>/dev/null || rc=$?
  else
    kill -TERM "${HOLD_PID[$id]}" 2>/dev/null
    rc=124
  fi
  unset "HOLD_PID[$id]"
  return "$rc"
}

hold_stop_all() {
  local id
  for id in "${!HOLD_FD[@]}"; do hold_stop "$id" >/dev/null 2>&1; done
  for id in "${!HOLD_PID[@]}"; do kill -KILL "${HOLD_PID[$id]}" 2>/dev/null; done
  return 0
}

# json_field FILE KEY.PATH: a field of a JSON document, lists as "a,b,c"
# (python3's json module; no numpy needed). Fails if FILE cannot be read or
# parsed or has no such field.
json_field() {
  "$PY" -c '
import json, sys
with open(sys.argv[1]) as f:
    v = json.load(f)
for k in sys.argv[2].split("."):
    v = v[k]
print(",".join(str(x) for x in v) if isinstance(v, list) else v)' "$1" "$2" 2>/dev/null
}

# stats_field MOUNTPOINT KEY.PATH: a field of MOUNTPOINT/.b2ndfs/stats.
stats_field() {
  local snap=$TMP/stats.$$.json
  cat "$1/.b2ndfs/stats" >"$snap" 2>/dev/null || return 1
  json_field "$snap" "$2"
}

# read_fails WHAT FILE: reading FILE must fail and yield no bytes.
read_fails() {
  local what=$1 file=$2 out=$TMP/read_fails.out
  if cat "$file" >"$out" 2>"$out.err"; then
    fail "$what: reading $file succeeded ($(stat -c %s "$out") bytes); it must fail"
    return 1
  fi
  if [[ -s $out ]]; then
    fail "$what: reading $file failed but returned $(stat -c %s "$out") bytes first"
    return 1
  fi
  return 0
}

# npy_matches NPY RAW SHAPE: NPY is an .npy file whose header has SHAPE
# ("45,67") and whose payload is exactly the bytes of RAW.
npy_matches() {
  "$PY" -c '
import ast, sys
npy, raw, shape = sys.argv[1], sys.argv[2], tuple(int(x) for x in sys.argv[3].split(",") if x)
b = open(npy, "rb").read()
if b[:6] != b"\x93NUMPY":
    sys.exit("not an .npy file")
hl = int.from_bytes(b[8:10], "little") if b[6] == 1 else int.from_bytes(b[8:12], "little")
start = (10 if b[6] == 1 else 12) + hl
header = ast.literal_eval(b[10 if b[6] == 1 else 12:start].decode("latin1"))
if tuple(header["shape"]) != shape:
    sys.exit("header shape %r, expected %r" % (header["shape"], shape))
if b[start:] != open(raw, "rb").read():
    sys.exit("payload differs from %s" % raw)' "$1" "$2" "$3"
}

# ---------------------------------------------------------------------------
# Readers that keep a file open while the test changes its container
# (fuse_open_replace, fuse_sparse_rewrite; tests/integration/open_reader.py).
# They share the HOLD_* bookkeeping, so lifecycle_init's trap (hold_stop_all)
# lets go of them before lib.sh unmounts.

# reader_start ID CMD...: CMD in the background, its stdin a fifo this shell
# holds, its output in $TMP/hold.ID.out (.err); waits (30 s at most) until it
# prints "ready". Fails (and stops it) if it dies first.
reader_start() {
  local id=$1 fifo=$TMP/hold.$1.in fd
  shift
  rm -f "$fifo" "$TMP/hold.$id.out" "$TMP/hold.$id.err"
  mkfifo "$fifo"
  # Without the write ends of the other readers' fifos: each reader must see
  # the end of its own input when this shell closes it.
  (
    for fd in "${HOLD_FD[@]}"; do eval "exec $fd>&-"; done
    exec "$@"
  ) <"$fifo" >"$TMP/hold.$id.out" 2>"$TMP/hold.$id.err" &
  HOLD_PID[$id]=$!
  exec {fd}>"$fifo"
  HOLD_FD[$id]=$fd
  HOLD_CHECKS[$id]=0
  if ! wait_until 30 eval "grep -q '^ready' '$TMP/hold.$id.out' || ! kill -0 ${HOLD_PID[$id]} 2>/dev/null" ||
    ! grep -q '^ready' "$TMP/hold.$id.out"; then
    fail "reader $id did not get ready: $(head -c 600 "$TMP/hold.$id.err")"
    hold_stop "$id"
    return 1
  fi
}

# reader_check ID: asks the reader for one more check and waits (60 s at
# most) for it; sets READER_SAID to what the reader said for it (the lines
# before its "checked"), or to how it died. Returns non-zero if the reader
# died or did not answer (a failure is counted only for no answer). Call it
# directly, not in $( ): a failure counted in a subshell is lost.
reader_check() {
  local id=$1 n rc=0
  READER_SAID=""
  [[ -n ${HOLD_FD[$id]:-} ]] || { READER_SAID="reader $id is not running"; return 1; }
  n=$((HOLD_CHECKS[$id] + 1))
  HOLD_CHECKS[$id]=$n
  (echo check >&"${HOLD_FD[$id]}") 2>/dev/null
  if ! wait_until 60 eval "(( \$(grep -c '^checked' '$TMP/hold.$id.out') >= $n )) || ! kill -0 ${HOLD_PID[$id]} 2>/dev/null"; then
    fail "reader $id: no answer in 60 s (a read hangs?)"
    READER_SAID="no answer"
    return 1
  fi
  # The n-th block of lines ending in "checked".
  READER_SAID=$(awk -v n="$n" '/^checked/ { k++; next } k == n - 1 && !/^ready/' "$TMP/hold.$id.out")
  (($(grep -c '^checked' "$TMP/hold.$id.out") >= n)) && return 0
  wait "${HOLD_PID[$id]}" 2>/dev/null || rc=$?
  if ((rc > 128)); then
    READER_SAID+=" died of signal $((rc - 128))$( ((rc == 135)) && echo ' (SIGBUS)'):"
  else
    READER_SAID+=" exited with status $rc:"
  fi
  READER_SAID+=" $(head -n 2 "$TMP/hold.$id.err" | head -c 300 | tr '\n' ' ')"
  return 1
}
