#!/usr/bin/env bash
# Builds b2ndfs and runs every test pass, each one even when an earlier one
# failed. What a pass runs is said by ctest labels (tests/CMakeLists.txt
# lists them), not by regexes here:
#   main     every test in BUILD (unit tests, core tests against c-blosc2's
#            own reads, FUSE tests that really mount, the conformance scripts
#            again through http, s3 and az, fuzz corpus replays, stress, docs)
#            but package.deb, which runs next:
#   package  package.deb, installing the Debian package that
#            scripts/build_deb.sh built once, in the background at the lowest
#            CPU priority while the main pass ran (as root only: elsewhere the
#            test skips, and nothing is built for it);
#   asan     the tests of BUILD-asan, built with AddressSanitizer + UBSan
#            (LeakSanitizer included), but those labelled remote-variant (each
#            remote backend's own test, label remote, runs once) and scale
#            (RSS and request-count reports over thousands of containers):
#            B2NDFS_ASAN_EXCLUDE, a ctest -LE regex (empty: none excluded);
#   tsan     the tests labelled tsan, in BUILD-tsan, a ThreadSanitizer build
#            (-DB2NDFS_TSAN=ON) of only the programs they run; a TSan report
#            from any process (the daemons too) fails the pass;
#   fuzz     a 20 s libFuzzer smoke run of every fuzz target (scripts/fuzz.sh,
#            in build-fuzz/), JOBS targets at a time (each one process).
# In the sanitizer builds the tests' own oracles and clients are not
# instrumented (b2ndfs_uninstrumented in CMakeLists.txt).
# The asan, tsan and fuzz trees are built one after the other in the
# background from the start, at the lowest CPU priority (nice 19), while the
# main pass runs (in a minimal root much of that is package installs and
# downloads); each pass waits for its build, raising the builds' priority
# meanwhile. Their output goes to LOGS/build-{asan,tsan,fuzz}.log; a failed
# build fails its pass.
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
#         the summary). The other passes run here. When that cannot be done (not
#         root, the archive unreachable), the main pass runs here and its
#         summary line says why.
#   0     the main pass here (quicker for development).
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
# check_minbase.sh --main-only runs in its root).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUN_T0=$EPOCHSECONDS

MINBASE=${B2NDFS_MINBASE:-auto}
if [[ $MINBASE == 1 ]]; then
  exec bash "$ROOT/scripts/check_minbase.sh" "$@"
fi
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
JOBS="${B2NDFS_JOBS:-$(($(nproc) < 2 ? $(nproc) : 2))}"
ASAN_EXCLUDE=${B2NDFS_ASAN_EXCLUDE-^(remote-variant|scale)$}
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

SUMMARY=()
TOTAL_PASSED=0
TOTAL_FAILED=0

GEN=()
if command -v ninja >/dev/null; then GEN=(-G Ninja); fi

elapsed() { echo "$((SECONDS - $1)) s"; }

# record NAME PASSED FAILED SKIPPED DETAIL
record() {
  TOTAL_PASSED=$((TOTAL_PASSED + $2))
  TOTAL_FAILED=$((TOTAL_FAILED + $3))
  SUMMARY+=("$(printf '%-7s %4d passed, %d failed, %d skipped  %s' "$1" "$2" "$3" "$4" "$5")")
  [[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$B2NDFS_SUMMARY_FILE"
  return 0
}
# not_run NAME WHY: a pass that did not run, and why (counted in neither).
not_run() {
  SUMMARY+=("$(printf '%-7s not run: %s' "$1" "$2")")
  [[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && printf '%s\t0\t0\t0\t(not run: %s)\n' "$1" "$2" >>"$B2NDFS_SUMMARY_FILE"
  return 0
}
[[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && : >"$B2NDFS_SUMMARY_FILE"

# run_ctest NAME DIR [ENV=VALUE...] -- [ctest args...]: runs ctest in DIR
# with the environment given (and the command prefix CTEST_PREFIX), records
# the counts from its summary and the pass as a phase.
CTEST_PREFIX=()
run_ctest() {
  local name=$1 dir=$2 t0=$SECONDS e0=$EPOCHSECONDS
  shift 2
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  local log=$LOGS/$name.log
  (cd "$dir" && "${CTEST_PREFIX[@]}" env "${envs[@]}" ctest --output-on-failure -j"$JOBS" "$@") 2>&1 |
    tee "$log"
  local rc=${PIPESTATUS[0]}
  local total failed skipped failed_names
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n1)
  failed=$(sed -n 's/.* \([0-9]*\) tests failed out of .*/\1/p' "$log" | tail -n1)
  skipped=$(sed -n '/^The following tests did not run:/,/^$/p' "$log" | grep -c '(Skipped)')
  failed_names=$(sed -n '/^The following tests FAILED:/,/^$/p' "$log" |
    sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' | tr '\n' ' ')
  phase_since "$name tests" "$e0" "${total:-0} tests, ctest -j$JOBS"
  if [[ -z $total ]]; then
    # No summary: ctest found no tests, or could not run at all.
    if grep -q 'No tests were found' "$log"; then
      record "$name" 0 0 0 "(no tests matched; $(elapsed "$t0"))"
    else
      record "$name" 0 1 0 "(ctest exited $rc without a summary; $(elapsed "$t0"))"
    fi
    return
  fi
  failed=${failed:-0}
  local detail
  detail="($(elapsed "$t0"))"
  [[ -n $failed_names ]] && detail="failed: ${failed_names% } $detail"
  if ((rc != 0 && failed == 0)); then
    # ctest itself failed (e.g. a test it could not start): count that once.
    failed=1
    detail="ctest exited $rc $detail"
  fi
  record "$name" $((total - failed - skipped)) "$failed" "$skipped" "$detail"
}

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

# --- jobs in the background ---------------------------------------------------
# bg_start NAME CMD...: runs CMD at nice 19 in a process group of its own
# (set -m), so that its priority can be changed and it can be stopped as a
# whole; it writes LOGS/bg-NAME.rc: "STATUS START END" (epoch seconds).
declare -A BG_PIDS=()
MY_NICE=$(nice)
bg_start() {
  local name=$1
  shift
  rm -f "$LOGS/bg-$name.rc"
  set -m
  (
    set +m # its commands stay in its process group
    renice -n 19 -p "$BASHPID" >/dev/null
    "$@"
  ) </dev/null &
  BG_PIDS[$name]=$!
  set +m
}
bg_stop_all() {
  local name pid
  for name in "${!BG_PIDS[@]}"; do
    pid=${BG_PIDS[$name]}
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 1
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}
trap bg_stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bg_step JOB STEP CMD...: inside job JOB, runs CMD (output in
# LOGS/build-STEP.log, ccache's log in LOGS/ccache-STEP.log) and writes
# LOGS/build-STEP.rc: "STATUS START END".
bg_step() {
  local step=$2 t=$EPOCHSECONDS
  shift 2
  : >"$LOGS/ccache-$step.log"
  CCACHE_STATSLOG=$LOGS/ccache-$step.log "$@" >"$LOGS/build-$step.log" 2>&1
  echo "$? $t $EPOCHSECONDS" >"$LOGS/build-$step.rc"
}

# wait_step JOB STEP: waits for STEP of background job JOB, at this script's
# priority meanwhile (the steps after it go back to nice 19); records the
# step and the wait as phases. Status 0 when it succeeded; STEP_SECONDS: how
# long it took.
STEP_SECONDS=0
wait_step() {
  local job=$1 step=$2 rc_file=$LOGS/build-$2.rc rc start end w0=$EPOCHSECONDS waited=0
  local pid=${BG_PIDS[$job]:-}
  if [[ ! -f $rc_file && -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    echo "== waiting for the $step build (log: $LOGS/build-$step.log)"
    renice -n "$MY_NICE" -g "$pid" >/dev/null 2>&1
    while [[ ! -f $rc_file ]] && kill -0 "$pid" 2>/dev/null; do sleep 2; done
    renice -n 19 -g "$pid" >/dev/null 2>&1
    waited=1
  fi
  rc=1 start=$w0 end=$EPOCHSECONDS
  [[ -f $rc_file ]] && read -r rc start end <"$rc_file"
  STEP_SECONDS=$((end - start))
  local cc note=background
  cc=$(ccache_count "$LOGS/ccache-$step.log")
  [[ -n $cc ]] && note+="; ccache: $cc"
  [[ $rc != 0 ]] && note+="; FAILED"
  phase_add "build $step" "$start" "$end" "$note"
  ((waited)) && phase_since "wait for $step build" "$w0" "the pass waits, the build at full priority"
  if [[ $rc != 0 ]]; then
    echo "== the $step build failed (log: $LOGS/build-$step.log):"
    tail -n 30 "$LOGS/build-$step.log"
    return 1
  fi
  echo "== $step build: done in $STEP_SECONDS s (log: $LOGS/build-$step.log)"
}

# --- the main pass and the package ------------------------------------------
# main_here NOTE [ctest args]: the main pass in this machine's build tree;
# NOTE (may be empty) ends its summary line: why not in a minimal root. Then
# the package pass, on the package built in the background meanwhile.
main_here() {
  local note=${1:+"; $1"} t0=$SECONDS e0=$EPOCHSECONDS
  shift
  echo "== build ($BUILD; $CCACHE_STATE)"
  : >"$LOGS/ccache-main.log"
  if ! CCACHE_STATSLOG=$LOGS/ccache-main.log bash "$ROOT/scripts/build.sh"; then
    phase_since "build main" "$e0" "failed"
    record main 0 1 0 "(build failed; $(elapsed "$t0")$note)"
    return
  fi
  local cc
  cc=$(ccache_count "$LOGS/ccache-main.log")
  phase_since "build main" "$e0" "${cc:+ccache: $cc}"
  package_start "$@"
  echo "== tests ($BUILD)"
  run_ctest main "$BUILD" -- --timeout 900 -LE '^package$' "$@"
  [[ -n $note ]] && SUMMARY[-1]+="$note"
  package_pass "$@"
}

# package_start [ctest args]: builds the Debian package in the background
# when package.deb is selected and can run here (root).
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
    echo "== building the Debian package in the background (log: $LOGS/build-package.log)"
    bg_start package bg_step package package \
      env B2NDFS_JOBS="$JOBS" bash -c 'bash "$1" "$2" >"$3"' _ "$ROOT/scripts/build_deb.sh" "$BUILD/deb" \
      "$LOGS/package-deb.path"
  fi
}

# package_pass [ctest args]: package.deb, on the package built meanwhile.
package_pass() {
  case $PACKAGE in
    none) return ;;
    skip)
      run_ctest package "$BUILD" -- --timeout 2400 -L '^package$' "$@"
      return
      ;;
  esac
  local deb
  if wait_step package package && deb=$(tail -n1 "$LOGS/package-deb.path") && [[ -f $deb ]]; then
    echo "== package test ($deb)"
    run_ctest package "$BUILD" B2NDFS_PREBUILT_DEB="$deb" -- --timeout 2400 -L '^package$' "$@"
  else
    record package 0 1 0 "(the package build failed after $STEP_SECONDS s; $LOGS/build-package.log)"
  fi
}

# main_in_minbase: the main pass in a fresh minimal root (see above); its
# summary becomes this one's, its phases are shown indented under it.
# Returns 77 (having recorded nothing) when no minimal root can be made here.
main_in_minbase() {
  local t0=$SECONDS e0=$EPOCHSECONDS inner=$LOGS/minbase-summary.tsv phases=$LOGS/minbase-phases.tsv rc
  echo "== the demo and the main pass in a fresh minimal Debian root (scripts/check_minbase.sh --main-only)"
  rm -f "$inner" "$phases"
  bash "$ROOT/scripts/check_minbase.sh" --main-only --summary "$inner" --phases "$phases" "$@"
  rc=$?
  if [[ ! -s $inner ]]; then
    ((rc == 77)) && return 77
    phase_since "minimal root" "$e0" "failed"
    record main 0 1 0 "(no summary from the minimal root: check_minbase.sh exited $rc; $(elapsed "$t0"))"
    return 0
  fi
  phase_since "minimal root" "$e0" "check_minbase.sh: the demo and the main pass"
  phase_import "$phases" "  "
  local name passed failed skipped detail
  while IFS=$'\t' read -r name passed failed skipped detail; do
    record "$name" "$passed" "$failed" "$skipped" "${detail%)}; in a minimal root)"
  done <"$inner"
  ((rc == 0 || TOTAL_FAILED > 0)) || record main 0 1 0 "(check_minbase.sh exited $rc; $(elapsed "$t0"))"
}

# --- builds of the other passes ------------------------------------------------
# The sanitizer trees at -O1 with line tables only (-g1: file and line in
# every report, no variables): what the sanitizers' own documentation
# recommends, and GCC compiles them in half the time of -O2 -g (ASan+UBSan
# 25 s -> 10 s for src/store/container.cc). The code the sanitizers check is
# the same; reports name the same lines.
SANITIZER_FLAGS=(-DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
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
  for b in "${HOST_BUILDS[@]}"; do bg_step host "$b" build_pass "$b"; done
}

# --- setup and main -----------------------------------------------------------
# Everything the other passes need (and debootstrap, and ccache) is installed
# here first.
e0=$EPOCHSECONDS
if bash "$ROOT/scripts/setup.sh"; then
  phase_since setup "$e0"
else
  phase_since setup "$e0" "failed"
  echo "== scripts/setup.sh failed: the passes below will say what is missing"
fi
ccache_setup "$ROOT"
echo "== $CCACHE_STATE"
if ((${#HOST_BUILDS[@]} > 0)); then
  bg_start host host_builds
  echo "== building ${HOST_BUILDS[*]} in the background (logs: $LOGS/build-*.log)"
fi
if [[ $MINBASE == auto && $(id -u) == 0 ]] && command -v debootstrap >/dev/null; then
  main_in_minbase "$@"
  (($? == 77)) && main_here "not in a minimal root: the archive is unreachable" "$@"
elif [[ $MINBASE == auto ]]; then
  main_here "not in a minimal root: $([[ $(id -u) != 0 ]] && echo "that needs root" || echo "no debootstrap")" "$@"
else
  main_here "" "$@"
fi

# --- asan ---------------------------------------------------------------------
if runs_pass asan; then
  if wait_step host asan; then
    asan_select=()
    [[ -n $ASAN_EXCLUDE ]] && asan_select=(-LE "$ASAN_EXCLUDE")
    echo "== tests under AddressSanitizer + UBSan (${ASAN_BUILD}): all but labels ${ASAN_EXCLUDE:-(none)}"
    run_ctest asan "$ASAN_BUILD" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
      UBSAN_OPTIONS=print_stacktrace=1 -- --timeout 1800 "${asan_select[@]}" "$@"
  else
    record asan 0 1 0 "(build failed after $STEP_SECONDS s; $LOGS/build-asan.log)"
  fi
fi

# --- tsan ---------------------------------------------------------------------
if runs_pass tsan; then
  if wait_step host tsan; then
    echo "== tests under ThreadSanitizer (${TSAN_BUILD}): ${TSAN_SELECT[*]:-$*}"
    # TSan maps its shadow at fixed addresses; with a randomised layout
    # (large vm.mmap_rnd_bits, as on recent kernels) its runtime may find
    # them taken and abort. setarch -R turns randomisation off for ctest
    # and everything it starts, the FUSE daemons included.
    if setarch "$(uname -m)" -R true 2>/dev/null; then CTEST_PREFIX=(setarch "$(uname -m)" -R); fi
    # Reports go to files (the daemons' stderr is not always looked at); any
    # file there afterwards fails the pass.
    reports=$TSAN_BUILD/tsan-reports
    rm -rf "$reports"
    mkdir -p "$reports"
    tsan_t0=$SECONDS
    run_ctest tsan "$TSAN_BUILD" \
      TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/report" \
      -- --timeout 1800 "${TSAN_SELECT[@]}" "$@"
    CTEST_PREFIX=()
    if compgen -G "$reports/report*" >/dev/null; then
      n=$(cat "$reports"/report* | grep -c '^WARNING: ThreadSanitizer')
      echo "== ThreadSanitizer reports ($n) in $reports:"
      grep -h -A12 '^WARNING: ThreadSanitizer' "$reports"/report* | head -n 80
      record tsan-reports 0 1 0 "($n ThreadSanitizer report(s) in $reports; $(elapsed "$tsan_t0"))"
    fi
  else
    record tsan 0 1 0 "(build failed after $STEP_SECONDS s; $LOGS/build-tsan.log)"
  fi
fi

# --- fuzz smoke ---------------------------------------------------------------
if runs_pass fuzz; then
  echo "== fuzz smoke run"
  if wait_step host fuzz; then
    t0=$SECONDS
    e0=$EPOCHSECONDS
    passed=0
    failed=0
    failed_names=""
    # JOBS targets at a time: each run is one process, on one CPU.
    mapfile -t targets < <(bash "$ROOT/scripts/fuzz.sh" --list)
    for ((i = 0; i < ${#targets[@]}; i += JOBS)); do
      batch=("${targets[@]:i:JOBS}")
      pids=()
      for target in "${batch[@]}"; do
        FUZZ_NO_BUILD=1 bash "$ROOT/scripts/fuzz.sh" "$target" 20 >"$LOGS/fuzz-$target.log" 2>&1 &
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
    phase_since "fuzz smoke" "$e0" "${#targets[@]} targets, 20 s each, $JOBS at a time"
    detail="($(elapsed "$t0"))"
    [[ -n $failed_names ]] && detail="findings in: ${failed_names% } $detail"
    record fuzz "$passed" "$failed" 0 "$detail"
  else
    record fuzz 0 "$(bash "$ROOT/scripts/fuzz.sh" --list | wc -l)" 0 "(build failed after $STEP_SECONDS s; $LOGS/build-fuzz.log)"
  fi
fi

phase_add total "$RUN_T0" "$EPOCHSECONDS" "$CCACHE_STATE"
[[ -n ${B2NDFS_PHASES_FILE:-} ]] && cp "$PHASES_FILE" "$B2NDFS_PHASES_FILE"
echo "== summary (logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
phase_table "$RUN_T0"
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
((TOTAL_FAILED == 0))
