#!/usr/bin/env bash
# The README's two commands on a minimal Debian root with nothing added by
# hand: makes a fresh root of this machine's release (debootstrap
# --variant=minbase, from the archive this machine's apt uses), copies the
# sources into /root/b2ndfs there as a user gets them (no build trees, no
# .deps, no .git), and runs inside it, as root:
#   bash scripts/demo.sh    the main command (install, build, mount, show)
#   bash scripts/test.sh    the test command (every pass), whose summary and
#                           exit status become this script's
# By hand (B2NDFS_MINBASE=1 bash scripts/test.sh runs this too):
#   bash scripts/check_minbase.sh [--keep] [--main-only] [--summary FILE]
#                                 [--phases FILE] [--slot FILE] [ctest args...]
# --keep       leaves the root (and its build trees) for a look afterwards.
# --main-only  runs only test.sh's main pass after the demo (scripts/test.sh
#              does this on every run as root: its other passes run outside).
# --summary F  writes test.sh's summary there (B2NDFS_SUMMARY_FILE, see
#              test.sh), copied out of the root before it is removed, and a
#              line of its own for the demo.
# --phases F   writes the phases (scripts/lib/phases.sh) there: making the
#              root, the demo, test.sh and, indented, test.sh's own.
# --slot F     the test slot's lock file (scripts/lib/passes.sh): its
#              directory is bound into the root, so that test.sh's ctest runs
#              there and those of the caller here take turns.
# The compiler cache (scripts/lib/ccache.sh) is bound into the root at the
# same path, so that the builds there share it with this machine's and with
# earlier runs; the apt package cache too (scripts/lib/minbase.sh), and the
# installed npm packages (scripts/setup.sh, B2NDFS_NPM_CACHE).
# The demo runs first, on the fresh root (it installs only what building
# needs; once it has, the tests' packages are installed alongside the rest of
# the demo); the test command then reuses its build tree, and the package test
# does not run the demo again on a root of its own (B2NDFS_MINBASE_DEMO=0).
# Needs root and debootstrap (scripts/setup.sh installs it). Exit status 77
# when the archive is unreachable.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib/minbase.sh
source "$ROOT/scripts/lib/minbase.sh"
# shellcheck source=lib/ccache.sh
source "$ROOT/scripts/lib/ccache.sh"
# shellcheck source=lib/phases.sh
source "$ROOT/scripts/lib/phases.sh"
KEEP=0
MAIN_ONLY=0
SLOT=
SUMMARY_OUT=
while (($# > 0)); do
  case $1 in
    --keep) KEEP=1 ;;
    --main-only) MAIN_ONLY=1 ;;
    --summary)
      SUMMARY_OUT=${2:?--summary needs a file}
      shift
      ;;
    --phases)
      PHASES_FILE=${2:?--phases needs a file}
      : >"$PHASES_FILE"
      shift
      ;;
    --slot)
      SLOT=${2:?--slot needs a file}
      shift
      ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *) break ;;
  esac
  shift
done
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
e0=$EPOCHSECONDS
minbase_make "$R" "$WORK/debootstrap.log"
rc=$?
((rc == 0)) || exit "$rc"
minbase_copy_sources "$ROOT" "$R/root/b2ndfs"
ccache_setup "$ROOT"
shared_settings=()
if [[ -n ${CCACHE_DIR:-} ]]; then
  if minbase_share "$CCACHE_DIR" "$R"; then
    shared_settings=(CCACHE_DIR="$CCACHE_DIR")
    log "compiler cache $CCACHE_DIR shared with the root"
  else
    log "cannot bind $CCACHE_DIR into the root: it compiles without a cache"
  fi
fi
NPM_CACHE=${B2NDFS_NPM_CACHE:-$(kept_cache_dir npm)}
if [[ $NPM_CACHE != 0 ]] && mkdir -p "$NPM_CACHE" && minbase_share "$NPM_CACHE" "$R"; then
  shared_settings+=(B2NDFS_NPM_CACHE="$NPM_CACHE")
else
  shared_settings+=(B2NDFS_NPM_CACHE=0)
fi
if [[ -n $SLOT ]]; then
  if minbase_share "$(dirname "$SLOT")" "$R" /run/b2ndfs-slot; then
    shared_settings+=(B2NDFS_TEST_SLOT="/run/b2ndfs-slot/$(basename "$SLOT")")
  else
    log "cannot bind the test slot's directory into the root: its tests may run alongside others"
  fi
fi
phase_since "debootstrap" "$e0" "a minimal root, the sources copied in"

# The test passes' own settings (B2NDFS_SANITIZERS, B2NDFS_JOBS, ...) go
# along; paths of this machine do not. Inside, test.sh runs on that root
# itself (B2NDFS_MINBASE=0).
mapfile -t settings < <(env | grep -E '^B2NDFS_(SANITIZERS|TSAN|TSAN_TESTS|FUZZ_SMOKE|JOBS)=')
settings+=(B2NDFS_MINBASE=0 B2NDFS_SUMMARY_FILE=/root/test-summary.tsv
  B2NDFS_PHASES_FILE=/root/test-phases.tsv "${shared_settings[@]}")
[[ -n ${B2NDFS_CCACHE:-} ]] && settings+=(B2NDFS_CCACHE="$B2NDFS_CCACHE")
((MAIN_ONLY)) && settings+=(B2NDFS_SANITIZERS=0 B2NDFS_FUZZ_SMOKE=0 B2NDFS_MAIN_ONLY=1)
log "README's main command: bash scripts/demo.sh"
demo_t0=$SECONDS
e0=$EPOCHSECONDS
# The demo's first step, what building needs (scripts/setup.sh --build), on
# the fresh root; then the rest of the demo (its build goes through the shared
# compiler cache too) and, alongside it, the test passes' packages: the demo
# has checked what a minimal machine lacks by then, and installing is disk and
# network where building is CPU.
setup_fuzz=1
((MAIN_ONLY)) && setup_fuzz=0
tests_setup_pid=
if minbase_run "$R" bash -c 'cd /root/b2ndfs && bash scripts/setup.sh --build' >"$WORK/demo-setup.log" 2>&1; then
  minbase_run "$R" B2NDFS_SETUP_FUZZ=$setup_fuzz bash -c 'cd /root/b2ndfs && bash scripts/setup.sh' \
    >"$WORK/tests-setup.log" 2>&1 &
  tests_setup_pid=$! tests_setup_t0=$EPOCHSECONDS
fi
minbase_demo "$R" "$WORK/demo.log" "${shared_settings[@]}"
demo_rc=$?
phase_since demo "$e0" "bash scripts/demo.sh (installs, builds, mounts)"
if [[ -n $tests_setup_pid ]]; then
  if wait "$tests_setup_pid"; then
    phase_since "the tests' packages" "$tests_setup_t0" "scripts/setup.sh, alongside the demo"
  else
    phase_since "the tests' packages" "$tests_setup_t0" "FAILED (test.sh runs it again)"
    tail -n 20 "$WORK/tests-setup.log"
  fi
fi
demo_detail="bash scripts/demo.sh on the fresh root, $((SECONDS - demo_t0)) s"
if ((demo_rc == 0)); then
  tail -n 25 "$WORK/demo.log"
else
  log "FAIL: the README's main command on the minimal root (above)"
  demo_detail+="; failed, see check_minbase.sh's log"
fi
# The package test need not repeat the demo on its own minimal root.
settings+=(B2NDFS_MINBASE_DEMO=0)

args=""
(($# > 0)) && args=$(printf ' %q' "$@")
log "README's test command: bash scripts/test.sh$args"
e0=$EPOCHSECONDS
minbase_run "$R" "${settings[@]}" bash -c "cd /root/b2ndfs && bash scripts/test.sh$args"
test_rc=$?
phase_since "test.sh$( ((MAIN_ONLY)) && echo ' --main-only')" "$e0"
if [[ -s $R/root/test-phases.tsv ]]; then
  grep -v '^total	' "$R/root/test-phases.tsv" >"$WORK/test-phases.tsv"
  phase_import "$WORK/test-phases.tsv" "  "
fi
if [[ -n $SUMMARY_OUT ]]; then
  cp "$R/root/test-summary.tsv" "$SUMMARY_OUT" 2>/dev/null
  printf 'demo\t%d\t%d\t0\t(%s)\n' $((demo_rc == 0)) $((demo_rc != 0)) "$demo_detail" >>"$SUMMARY_OUT"
fi
log "demo: exit $demo_rc; tests: exit $test_rc ($(((SECONDS - T0) / 60)) min in all)"
((demo_rc == 0 && test_rc == 0))
