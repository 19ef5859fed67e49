#!/usr/bin/env bash
# The README's two commands on a minimal Debian root with nothing added by
# hand: makes a fresh root of this machine's release (debootstrap
# --variant=minbase, from the archive this machine's apt uses), copies the
# sources into /root/b2ndfs there as a user gets them (no build trees, no
# .deps, no .git), and runs inside it, as root:
#   bash scripts/demo.sh    the main command (install, build, mount, show)
#   bash scripts/test.sh    the test command (every pass), whose summary and
#                           exit status become this script's
# scripts/test.sh runs this itself when it can (see there); by hand:
#   bash scripts/check_minbase.sh [--keep] [ctest args...]
# --keep leaves the root (and its build trees) for a look afterwards.
# Needs root and debootstrap (scripts/setup.sh installs it). Exit status 77
# when the archive is unreachable.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/minbase.sh
source "$ROOT/scripts/lib/minbase.sh"
KEEP=0
if [[ ${1:-} == --keep ]]; then
  KEEP=1
  shift
elif [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
  exit 0
fi
T0=$SECONDS
log() { echo "[minbase +$((SECONDS - T0))s] $*"; }

if [[ $(id -u) != 0 ]]; then
  log "needs root (debootstrap and chroot)"
  exit 2
fi
command -v debootstrap >/dev/null || {
  log "debootstrap is missing: apt-get install debootstrap (scripts/setup.sh installs it)"
  exit 2
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/b2ndfs-minbase.XXXXXX")
R=$WORK/root
cleanup() {
  minbase_release "$R"
  if ((KEEP)); then
    log "kept the root: $R (sources and build trees in $R/root/b2ndfs)"
  elif awk -v r="$WORK/" 'index($5, r) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    log "leaving $WORK: something is still mounted below it"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "debootstrap --variant=minbase of this machine's release into $R"
minbase_make "$R" "$WORK/debootstrap.log"
rc=$?
((rc == 0)) || exit "$rc"
minbase_copy_sources "$ROOT" "$R/root/b2ndfs"

log "README's main command: bash scripts/demo.sh"
minbase_run "$R" bash -c 'cd /root/b2ndfs && bash scripts/demo.sh' 2>&1 | tee "$WORK/demo.log" | tail -n 25
demo_rc=${PIPESTATUS[0]}
((demo_rc == 0)) || log "FAIL: bash scripts/demo.sh exited $demo_rc on the minimal root"

# Inside, test.sh runs on that root itself (B2NDFS_MINBASE=0), and the
# package test skips the demo it would repeat on its own minimal root.
args=""
(($# > 0)) && args=$(printf ' %q' "$@")
log "README's test command: bash scripts/test.sh$args"
# The test passes' own settings (B2NDFS_SANITIZERS, B2NDFS_JOBS, ...) go
# along; paths of this machine do not.
mapfile -t settings < <(env | grep -E '^B2NDFS_(SANITIZERS|TSAN|TSAN_TESTS|FUZZ_SMOKE|JOBS)=')
minbase_run "$R" "${settings[@]}" B2NDFS_MINBASE=0 B2NDFS_MINBASE_DEMO=0 \
  bash -c "cd /root/b2ndfs && bash scripts/test.sh$args"
test_rc=$?
log "demo: exit $demo_rc; tests: exit $test_rc ($(((SECONDS - T0) / 60)) min in all)"
((demo_rc == 0 && test_rc == 0))
