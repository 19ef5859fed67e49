#!/usr/bin/env bash
# Builds b2ndfs and runs every test pass, each one even when an earlier one
# failed. What a pass runs is said by ctest labels (tests/CMakeLists.txt
# lists them), not by regexes here:
#   main     every test in BUILD (unit tests, core tests against c-blosc2's
#            own reads, FUSE tests that really mount, the conformance scripts
#            again through http, s3 and az, fuzz corpus replays, stress, docs)
#            but package.deb:
#   package  package.deb, on the Debian package that scripts/build_deb.sh
#            builds once, in the background at the lowest CPU priority while
#            the main pass runs, with DEB_BUILD_OPTIONS=nocheck (the main
#            pass runs the same unit tests); the test starts when it is there
#            (as root only: elsewhere the test skips and nothing is built);
#   asan     the tests of BUILD-asan, built with AddressSanitizer + UBSan
#            (LeakSanitizer included), labelled unit, core, fuzz-replay,
#            stress, tools or asan (the mounts that reach daemon code the
#            others do not, and each remote protocol once; not the remote
#            variants, scale reports, documents, clients, nor tests whose
#            subject is what a client makes of files other tests read byte by
#            byte): B2NDFS_ASAN_LABELS, a ctest -L regex (empty: every test);
#   tsan     the tests labelled tsan, in BUILD-tsan, a ThreadSanitizer build
#            (-DB2NDFS_TSAN=ON) of only the programs they run; a TSan report
#            from any process (the daemons too) fails the pass;
#   fuzz     a 10 s libFuzzer smoke run of every fuzz target (scripts/fuzz.sh,
#            in build-fuzz/), JOBS targets at a time (each one process).
# In the sanitizer builds the tests' own oracles and clients are not
# instrumented (b2ndfs_uninstrumented in CMakeLists.txt); they are built at
# -O1 with line tables only (what the sanitizers' documentation recommends;
# half the compile time of -O2 -g).
# The asan, tsan and fuzz trees are built one after the other in the
# background from the start, at the lowest CPU priority (nice 19); each pass
# waits for its build, raising the builds' priority meanwhile. Their output
# goes to LOGS/build-{asan,tsan,fuzz}.log; a failed build fails its pass.
# Every tree is a unity build (B2NDFS_UNITY in CMakeLists.txt: sources
# compiled in batches, the unit tests with one precompiled header).
# Every compile goes through ccache when it is installed (scripts/setup.sh
# installs it), with a cache outside the clone (scripts/lib/ccache.sh:
# /var/cache/b2ndfs-ccache as root, else ~/.cache/b2ndfs-ccache; CCACHE_DIR
# chooses another, B2NDFS_CCACHE=0 none), so a second run, even of a fresh
# clone elsewhere, compiles only what changed.
# At the end: one summary line per pass (a pass that did not run says why),
# a last line "N passed, N failed" (ctest tests over all passes, skipped ones
# are neither; each fuzz target one test; a build that fails one failed
# test), and a table of every phase's start, end and length (setup, the
# minimal root, the demo, each build, each pass, the package, fuzz).
# Exit status 1 if anything failed.
# Extra arguments go to every ctest run (e.g. -R fuse; given here, they also
# replace the TSan pass's label, and its tree builds every target).
# Where the main pass runs (B2NDFS_MINBASE):
#   auto  (default) as root, in a fresh minimal Debian root of this machine's
#         release (debootstrap --variant=minbase; scripts/check_minbase.sh):
#         the README's main command (scripts/demo.sh) runs there first, then
#         this script itself, from a copy of the sources as a user gets them,
#         with nothing installed by hand, so every run also checks that the
#         README's two commands work on a minimal machine (the demo's line in
#         the summary); its output here has lines starting "[root] ". The
#         other passes run here meanwhile, as soon as their builds are done:
#         builds and package installs overlap, but one ctest run at a time
#         (the test slot, scripts/lib/passes.sh). When that cannot be done
#         (not root, the archive unreachable), the main pass runs here and
#         its summary line says why.
#   0     the main pass here, first (quicker for development).
#   1     every pass, and the README's main command first, in a fresh
#         minimal root.
# Environment: B2NDFS_BUILD_DIR (default ROOT/build); B2NDFS_SANITIZERS=0
# skips asan and tsan, B2NDFS_TSAN=0 only tsan, B2NDFS_FUZZ_SMOKE=0 fuzz;
# B2NDFS_TSAN_TESTS: a ctest -R regex for the TSan pass instead of its label
# (every target built); B2NDFS_JOBS (default: CPUs, at most 2) for builds and
# ctest -j; B2NDFS_SUMMARY_FILE: also write each summary line there,
# tab-separated (pass, passed, failed, skipped, detail); B2NDFS_PHASES_FILE:
# also write the phases there (scripts/lib/phases.sh); B2NDFS_MAIN_ONLY=1:
# the main and package passes only, and no line for the others (what
# check_minbase.sh --main-only runs in its root); B2NDFS_TEST_SLOT: the
# test slot's lock file.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_T0=$EPOCHSECONDS

MINBASE=${B2NDFS_MINBASE:-auto}
if [[ $MINBASE == 1 ]]; then
  exec bash "$ROOT/scripts/check_minbase.sh" "$@"
fi
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
JOBS="${B2NDFS_JOBS:-$(($(nproc) < 2 ? $(nproc) : 2))}"
# The fuzz smoke run's seconds per target: a smoke test of each target's
# harness and of the inputs it reaches first (scripts/fuzz.sh TARGET SECONDS
# fuzzes for longer).
FUZZ_SMOKE_SECONDS=10
ASAN_LABELS=${B2NDFS_ASAN_LABELS-^(unit|core|fuzz-replay|stress|tools|asan)$}
MAIN_ONLY=${B2NDFS_MAIN_ONLY:-0}
# The TSan tree builds only what its label's tests run: the daemon and the
# helpers that tests/integration/lib.sh and tests/stress/stress_lib.sh start,
# and the unit test programs. Another selection (B2NDFS_TSAN_TESTS, or ctest
# arguments given here) builds every target.
TSAN_HELPERS=(b2ndfs b2nd_fixture fuse_compare lifecycle_probe stress_reader)
TSAN_SELECT=(-L '^tsan$')
TSAN_SUBSET=1
if [[ -n ${B2NDFS_TSAN_TESTS:-} ]]; then
  TSAN_SELECT=(-R "$B2NDFS_TSAN_TESTS")
  TSAN_SUBSET=0
elif (($# > 0)); then
  TSAN_SELECT=()
  TSAN_SUBSET=0
fi
ASAN_BUILD="${BUILD}-asan"
TSAN_BUILD="${BUILD}-tsan"
LOGS="$BUILD-testlogs"
mkdir -p "$LOGS"

# shellcheck source=lib/ccache.sh
source "$ROOT/scripts/lib/ccache.sh"
PHASES_FILE=$LOGS/phases.tsv
# shellcheck source=lib/phases.sh
source "$ROOT/scripts/lib/phases.sh"
: >"$PHASES_FILE"
# shellcheck source=lib/passes.sh
source "$ROOT/scripts/lib/passes.sh"
# shellcheck source=lib/background.sh
source "$ROOT/scripts/lib/background.sh"
trap bg_stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi

# configure DIR CMAKE_ARGS...: configures DIR (the generator and the compiler
# cache only the first time) with the options given.
configure() {
  local dir=$1
  shift
  local first=()
  [[ -f $dir/CMakeCache.txt ]] || first=("${GEN[@]}" "${CCACHE_LAUNCHER[@]}")
  cmake -S "$ROOT" -B "$dir" "${first[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$LOGS/configure-$(basename "$dir").log" 2>&1 ||
    {
      tail -n 30 "$LOGS/configure-$(basename "$dir").log"
      return 1
    }
}

# npm_wait: before a pass's tests, the npm packages' install (bg_start npm
# below, a step of its own: LOGS/build-npm.log) has ended, waited for and
# recorded once; when it failed, wait_step shows its log (the tests that
# need the packages then fail or skip, saying what is missing).
npm_wait() {
  [[ -n ${BG_PIDS[npm]:-} ]] || return 0
  wait_step npm npm
  unset 'BG_PIDS[npm]'
}

# --- the main pass and the package ------------------------------------------
# main_here NOTE [ctest args]: the main pass in this machine's build tree;
# NOTE (may be empty) ends its summary line: why not in a minimal root. The
# package pass runs alongside, on the package built in the background.
main_here() {
  local note=${1:+"; $1"} e0=$EPOCHSECONDS
  shift
  echo "== build ($BUILD; $CCACHE_STATE)"
  : >"$LOGS/ccache-main.log"
  if ! CCACHE_STATSLOG=$LOGS/ccache-main.log bash "$ROOT/scripts/build.sh"; then
    phase_since "build main" "$e0" "FAILED"
    record main 0 1 0 "(build failed; $((EPOCHSECONDS - e0)) s$note)"
    return
  fi
  local cc
  cc=$(ccache_count "$LOGS/ccache-main.log")
  phase_since "build main" "$e0" "${cc:+ccache: $cc}"
  package_start "$@"
  npm_wait
  slot_take "the main pass"
  echo "== tests ($BUILD)"
  run_ctest main "$BUILD" -- --timeout 900 -LE '^package$' "$@"
  [[ -n $note ]] && SUMMARY[-1]+="$note"
  package_finish "$@"
  slot_release
}

# package_start [ctest args]: when package.deb is selected and can run here
# (as root), builds the package in the background (nice 19), then runs the
# test on it (at this script's priority: mostly package installs).
PACKAGE=none
package_start() {
  local n
  n=$(cd "$BUILD" && ctest -N -L '^package$' "$@" 2>/dev/null | sed -n 's/^Total Tests: //p')
  if [[ ${n:-0} == 0 ]]; then
    PACKAGE=none
  elif [[ $(id -u) != 0 ]]; then
    PACKAGE=skip # the test says why (it needs root) and skips
  else
    PACKAGE=built
    rm -f "$LOGS/build-package.rc" "$LOGS/package-test.rc"
    echo "== the Debian package: built in the background (log: $LOGS/build-package.log), then package.deb"
    bg_start package 19 package_job "$@"
  fi
}
package_job() {
  # nocheck: the package's unit tests (dh_auto_test) are the main pass's
  # unit tests, from the same sources; it has run them (debian/rules).
  bg_step package env B2NDFS_JOBS="$JOBS" DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
    bash -c 'bash "$1" "$2" >"$3"' _ "$ROOT/scripts/build_deb.sh" "$BUILD/deb" "$LOGS/package-deb.path"
  local rc deb e0
  read -r rc _ <"$LOGS/build-package.rc"
  deb=$(tail -n1 "$LOGS/package-deb.path" 2>/dev/null)
  [[ $rc == 0 && -f $deb ]] || return 0
  renice -n "$MY_NICE" -p "$BASHPID" >/dev/null
  e0=$EPOCHSECONDS
  (cd "$BUILD" && B2NDFS_PREBUILT_DEB=$deb ctest --output-on-failure --timeout 2400 -L '^package$' "$@") \
    >"$LOGS/package.log" 2>&1
  echo "$? $e0 $EPOCHSECONDS" >"$LOGS/package-test.rc"
}

# package_finish [ctest args]: waits for the package pass; records it.
package_finish() {
  case $PACKAGE in
    none) return ;;
    skip)
      run_ctest package "$BUILD" -- --timeout 2400 -L '^package$' "$@"
      return
      ;;
  esac
  if ! wait_step package package; then
    record package 0 1 0 "(the package build failed after $STEP_SECONDS s; $LOGS/build-package.log)"
    return
  fi
  local w0=$EPOCHSECONDS rc e0 e1
  bg_wait package
  ((EPOCHSECONDS - w0 > 1)) && phase_since "wait for package.deb" "$w0"
  if [[ ! -f $LOGS/package-test.rc ]] || ! read -r rc e0 e1 <"$LOGS/package-test.rc"; then
    record package 0 1 0 "(package.deb did not run: $LOGS/build-package.log)"
    return
  fi
  echo "== package.deb ($(tail -n1 "$LOGS/package-deb.path"))"
  cat "$LOGS/package.log"
  ctest_record package "$LOGS/package.log" "$rc" "$e0" "$e1"
}

# root_start [ctest args]: the demo and the main pass in a fresh minimal
# root (see above), in the background; root_finish records them (their
# summary becomes this one's, their phases are shown indented) or returns
# 77, having recorded nothing, when no minimal root could be made here.
ROOT_RC=$LOGS/root.rc
root_start() {
  echo "== the demo and the main pass in a fresh minimal Debian root (scripts/check_minbase.sh --main-only; lines [root])"
  rm -f "$LOGS/minbase-summary.tsv" "$LOGS/minbase-phases.tsv" "$ROOT_RC"
  BG_GRACE["root"]=120 # its cleanup stops what runs in the root and unmounts
  bg_start root "$MY_NICE" root_job "$@"
}
root_job() {
  local e0=$EPOCHSECONDS
  # sed and tee ignore SIGTERM: when the run is stopped, they still pass on
  # what check_minbase.sh says while it cleans up (unmounts, stops what runs
  # in the root), and end when it ends.
  bash "$ROOT/scripts/check_minbase.sh" --main-only --summary "$LOGS/minbase-summary.tsv" \
    --phases "$LOGS/minbase-phases.tsv" --slot "$B2NDFS_TEST_SLOT" "$@" 2>&1 |
    (
      trap '' TERM INT
      sed -u 's/^/[root] /' | tee "$LOGS/minbase.log"
    )
  echo "${PIPESTATUS[0]} $e0 $EPOCHSECONDS" >"$ROOT_RC"
}
root_finish() {
  local rc e0 e1 inner=$LOGS/minbase-summary.tsv
  bg_wait root
  rc=1 e0=$RUN_T0 e1=$EPOCHSECONDS
  [[ -f $ROOT_RC ]] && read -r rc e0 e1 <"$ROOT_RC"
  if [[ ! -s $inner ]]; then
    ((rc == 77)) && return 77
    phase_add "minimal root" "$e0" "$e1" "FAILED"
    record main 0 1 0 "(no summary from the minimal root: check_minbase.sh exited $rc; $LOGS/minbase.log)"
    return 0
  fi
  phase_add "minimal root" "$e0" "$e1" "check_minbase.sh: the demo and the main pass"
  phase_import "$LOGS/minbase-phases.tsv" "  "
  local name passed failed skipped detail inner_failed=0
  while IFS=$'\t' read -r name passed failed skipped detail; do
    record "$name" "$passed" "$failed" "$skipped" "${detail%)}; in a minimal root)"
    inner_failed=$((inner_failed + failed))
  done <"$inner"
  ((rc == 0 || inner_failed > 0)) || record main 0 1 0 "(check_minbase.sh exited $rc)"
}

# --- builds of the other passes ------------------------------------------------
# The sanitizer trees at -O1 with line tables only (-g1: file and line in
# every report, no variables): what the sanitizers' own documentation
# recommends, and GCC compiles them in half the time of -O2 -g (ASan+UBSan
# 25 s -> 10 s for src/store/container.cc). Reports name the same lines.
# In unity batches, as every tree the scripts configure (CMakeLists.txt).
SANITIZER_FLAGS=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DB2NDFS_UNITY=ON)
# build_pass NAME: configures and builds the tree of pass NAME (asan, tsan,
# fuzz); status 0 when built.
build_pass() {
  case $1 in
    asan)
      # No -Werror here: GCC's flow warnings are noisier under sanitizers.
      configure "$ASAN_BUILD" -DB2NDFS_SANITIZE=ON -DB2NDFS_TSAN=OFF -DB2NDFS_BUILD_BENCH=OFF \
        "${SANITIZER_FLAGS[@]}" && cmake --build "$ASAN_BUILD" -j"$JOBS"
      ;;
    tsan)
      configure "$TSAN_BUILD" -DB2NDFS_TSAN=ON -DB2NDFS_SANITIZE=OFF -DB2NDFS_BUILD_BENCH=OFF \
        "${SANITIZER_FLAGS[@]}" || return 1
      local targets=()
      if ((TSAN_SUBSET)); then
        # From the names of the tests selected (ctest -N cannot name the
        # programs of a tree not built yet): unit.NAME runs the program NAME
        # (b2ndfs_unit_test in tests/CMakeLists.txt), the fuse and stress
        # scripts start the helpers; any other test: every target.
        targets=("${TSAN_HELPERS[@]}")
        local name
        while read -r name; do
          case $name in
            unit.*) targets+=("${name#unit.}") ;;
            fuse.mount_helper) targets=() && break ;; # it installs the whole build
            fuse.* | stress.*) ;;
            *) targets=() && break ;;
          esac
        done < <(cd "$TSAN_BUILD" && ctest -N "${TSAN_SELECT[@]}" | sed -n 's/^ *Test *#[0-9]*: //p')
        if ((${#targets[@]} > 0)); then
          echo "== TSan targets: ${targets[*]}"
          targets=(--target "${targets[@]}")
        fi
      fi
      cmake --build "$TSAN_BUILD" -j"$JOBS" "${targets[@]}"
      ;;
    fuzz) FUZZ_JOBS=$JOBS bash "$ROOT/scripts/fuzz.sh" --build-only ;;
  esac
}

# HOST_BUILDS: the passes (asan, tsan, fuzz) that run, after their builds;
# WHY_NOT[pass]: why one does not (its summary line; none with MAIN_ONLY).
HOST_BUILDS=()
declare -A WHY_NOT=()
if [[ $MAIN_ONLY == 1 ]]; then
  :
elif [[ ${B2NDFS_SANITIZERS:-1} == 1 ]]; then
  HOST_BUILDS+=(asan)
  if [[ ${B2NDFS_TSAN:-1} == 1 ]]; then HOST_BUILDS+=(tsan); else WHY_NOT[tsan]="B2NDFS_TSAN=0"; fi
else
  WHY_NOT[asan]="B2NDFS_SANITIZERS=0"
  WHY_NOT[tsan]="B2NDFS_SANITIZERS=0"
fi
if [[ $MAIN_ONLY == 1 ]]; then
  :
elif [[ ${B2NDFS_FUZZ_SMOKE:-1} != 1 ]]; then
  WHY_NOT[fuzz]="B2NDFS_FUZZ_SMOKE=0"
elif [[ ! -f $ROOT/scripts/fuzz.sh ]]; then
  WHY_NOT[fuzz]="no scripts/fuzz.sh"
else
  HOST_BUILDS+=(fuzz)
fi
# runs_pass NAME: pass NAME (asan, tsan, fuzz) runs, after its build; when
# it does not, its summary line says why.
runs_pass() {
  [[ " ${HOST_BUILDS[*]} " == *" $1 "* ]] && return 0
  [[ -n ${WHY_NOT[$1]:-} ]] && not_run "$1" "${WHY_NOT[$1]}"
  return 1
}
# Without the fuzz pass, its compilers need not be installed.
[[ " ${HOST_BUILDS[*]} " == *" fuzz "* ]] || export B2NDFS_SETUP_FUZZ=${B2NDFS_SETUP_FUZZ:-0}

# The builds of the other passes, one after the other, in one job.
host_builds() {
  local b
  for b in "${HOST_BUILDS[@]}"; do bg_step "$b" build_pass "$b"; done
}

# --- the other passes ---------------------------------------------------------
asan_pass() {
  if ! wait_step host asan; then
    record asan 0 1 0 "(build failed after $STEP_SECONDS s; $LOGS/build-asan.log)"
    return
  fi
  local select=()
  [[ -n $ASAN_LABELS ]] && select=(-L "$ASAN_LABELS")
  npm_wait
  slot_take "the asan pass"
  echo "== tests under AddressSanitizer + UBSan (${ASAN_BUILD}): labels ${ASAN_LABELS:-(any)}"
  run_ctest asan "$ASAN_BUILD" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1 -- --timeout 1800 "${select[@]}" "$@"
  slot_release
}

tsan_pass() {
  if ! wait_step host tsan; then
    record tsan 0 1 0 "(build failed after $STEP_SECONDS s; $LOGS/build-tsan.log)"
    return
  fi
  npm_wait
  slot_take "the tsan pass"
  echo "== tests under ThreadSanitizer (${TSAN_BUILD}): ${TSAN_SELECT[*]:-$*}"
  # TSan maps its shadow at fixed addresses; with a randomised layout
  # (large vm.mmap_rnd_bits, as on recent kernels) its runtime may find
  # them taken and abort. setarch -R turns randomisation off for ctest
  # and everything it starts, the FUSE daemons included.
  if setarch "$(uname -m)" -R true 2>/dev/null; then CTEST_PREFIX=(setarch "$(uname -m)" -R); fi
  # Reports go to files (the daemons' stderr is not always looked at); any
  # file there afterwards fails the pass.
  local reports=$TSAN_BUILD/tsan-reports e0=$EPOCHSECONDS n
  rm -rf "$reports"
  mkdir -p "$reports"
  run_ctest tsan "$TSAN_BUILD" \
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/report" \
    -- --timeout 1800 "${TSAN_SELECT[@]}" "$@"
  CTEST_PREFIX=()
  slot_release
  if compgen -G "$reports/report*" >/dev/null; then
    n=$(cat "$reports"/report* | grep -c '^WARNING: ThreadSanitizer')
    echo "== ThreadSanitizer reports ($n) in $reports:"
    grep -h -A12 '^WARNING: ThreadSanitizer' "$reports"/report* | head -n 80
    record tsan-reports 0 1 0 "($n ThreadSanitizer report(s) in $reports; $((EPOCHSECONDS - e0)) s)"
  fi
}

fuzz_pass() {
  echo "== fuzz smoke run"
  if ! wait_step host fuzz; then
    record fuzz 0 "$(bash "$ROOT/scripts/fuzz.sh" --list | wc -l)" 0 "(build failed after $STEP_SECONDS s; $LOGS/build-fuzz.log)"
    return
  fi
  slot_take "the fuzz smoke run"
  local e0=$EPOCHSECONDS passed=0 failed=0 failed_names="" targets batch pids i j target
  # JOBS targets at a time: each run is one process, on one CPU.
  mapfile -t targets < <(bash "$ROOT/scripts/fuzz.sh" --list)
  for ((i = 0; i < ${#targets[@]}; i += JOBS)); do
    batch=("${targets[@]:i:JOBS}")
    pids=()
    for target in "${batch[@]}"; do
      FUZZ_NO_BUILD=1 bash "$ROOT/scripts/fuzz.sh" "$target" "$FUZZ_SMOKE_SECONDS" >"$LOGS/fuzz-$target.log" 2>&1 &
      pids+=($!)
    done
    for j in "${!batch[@]}"; do
      target=${batch[j]}
      if wait "${pids[j]}"; then
        passed=$((passed + 1))
        echo "fuzz_$target: no findings"
      else
        failed=$((failed + 1))
        failed_names+="$target "
        echo "fuzz_$target: FOUND A PROBLEM (log: $LOGS/fuzz-$target.log)"
        tail -n 30 "$LOGS/fuzz-$target.log"
      fi
    done
  done
  slot_release
  phase_since "fuzz smoke" "$e0" "${#targets[@]} targets, $FUZZ_SMOKE_SECONDS s each, $JOBS at a time"
  local detail="($((EPOCHSECONDS - e0)) s)"
  [[ -n $failed_names ]] && detail="findings in: ${failed_names% } $detail"
  record fuzz "$passed" "$failed" 0 "$detail"
}

# --- the run --------------------------------------------------------------------
# Everything the builds and the other passes need (and debootstrap, and
# ccache) is installed here first; the npm packages, which only tests run,
# in the background while the builds start (npm_wait).
e0=$EPOCHSECONDS
if bash "$ROOT/scripts/setup.sh" --no-npm; then
  phase_since setup "$e0"
  bg_start npm "$MY_NICE" bg_step npm bash "$ROOT/scripts/setup.sh" --npm
else
  phase_since setup "$e0" "FAILED"
  echo "== scripts/setup.sh failed: the passes below will say what is missing"
fi
ccache_setup "$ROOT"
echo "== $CCACHE_STATE"
if ((${#HOST_BUILDS[@]} > 0)); then
  bg_start host 19 host_builds
  echo "== building ${HOST_BUILDS[*]} in the background (logs: $LOGS/build-*.log)"
fi
IN_ROOT=0
if [[ $MINBASE == auto && $(id -u) == 0 ]] && command -v debootstrap >/dev/null; then
  IN_ROOT=1
  if [[ -z ${B2NDFS_TEST_SLOT:-} ]]; then
    mkdir -p "$LOGS/slot"
    B2NDFS_TEST_SLOT=$LOGS/slot/lock
  fi
  : >>"$B2NDFS_TEST_SLOT"
  root_start "$@"
elif [[ $MINBASE == auto ]]; then
  main_here "not in a minimal root: $([[ $(id -u) != 0 ]] && echo "that needs root" || echo "no debootstrap")" "$@"
else
  main_here "" "$@"
fi
runs_pass asan && asan_pass "$@"
runs_pass tsan && tsan_pass "$@"
runs_pass fuzz && fuzz_pass
if ((IN_ROOT)); then
  root_finish
  (($? == 77)) && main_here "not in a minimal root: the archive is unreachable" "$@"
fi

phase_add total "$RUN_T0" "$EPOCHSECONDS" "$CCACHE_STATE"
[[ -n ${B2NDFS_PHASES_FILE:-} ]] && cp "$PHASES_FILE" "$B2NDFS_PHASES_FILE"
echo "== summary (logs in $LOGS)"
summary_print
phase_table "$RUN_T0"
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
((TOTAL_FAILED == 0))
