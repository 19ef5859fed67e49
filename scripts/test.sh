#!/usr/bin/env bash
# Builds b2ndfs and runs every test pass, each one even when an earlier one
# failed:
#   main  the whole ctest suite in BUILD (unit tests, core tests against
#         c-blosc2's own reads, FUSE tests that really mount, fuzz corpus
#         replays, stress);
#   asan  the same suite built with AddressSanitizer + UBSan (LeakSanitizer
#         included) in BUILD-asan (the tests' own oracles and clients are
#         not instrumented there nor under TSan: b2ndfs_uninstrumented in
#         CMakeLists.txt);
#   tsan  a ThreadSanitizer build (-DB2NDFS_TSAN=ON) in BUILD-tsan running
#         the concurrency, stress, remote-read and read-ahead (page pusher) tests and
#         the cache, memory, worker, pool, read-plan, container and once-flag unit
#         tests (B2NDFS_TSAN_TESTS, a ctest -R regex); a TSan report from any process
#         (the daemons too) fails the pass;
#   fuzz  a 20 s libFuzzer smoke run of every fuzz target (scripts/fuzz.sh),
#         JOBS targets at a time (each one process).
# The asan, tsan and fuzz trees are built in the background from the start,
# at the lowest CPU priority (nice 19), while the main pass runs (in a
# minimal root much of that is package installs and downloads); each pass
# waits for its build, raising the builds' priority meanwhile. Their output
# goes to LOGS/build-{asan,tsan,fuzz}.log; a failed build fails its pass. The
# TSan tree builds only what the default selection runs (see TSAN_HELPERS).
# Then one summary line per pass and a last line "N passed, N failed": ctest
# tests over all passes (skipped ones are neither), each fuzz target one
# test, a build that fails one failed test. Exit status 1 if anything
# failed.
# Extra arguments go to every ctest run (e.g. -R fuse; a -R given here also
# replaces the TSan pass's selection).
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
# B2NDFS_JOBS (default: CPUs, at most 2) for builds and ctest -j;
# B2NDFS_SUMMARY_FILE: also write each summary line there, tab-separated
# (pass, passed, failed, skipped, detail).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

MINBASE=${B2NDFS_MINBASE:-auto}
if [[ $MINBASE == 1 ]]; then
  exec bash "$ROOT/scripts/check_minbase.sh" "$@"
fi
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
JOBS="${B2NDFS_JOBS:-$(($(nproc) < 2 ? $(nproc) : 2))}"
TSAN_TESTS="${B2NDFS_TSAN_TESTS:-^(fuse\.(concurrency|wholechunk|async_reads|http|readahead)|stress\..*|unit\..*(cache|memory|worker|pool|read_plan|container|once|vfs).*)$}"
# What the default TSan selection runs besides its unit tests (found with
# ctest -N): the daemon and the helpers that tests/integration/lib.sh and
# tests/stress/stress_lib.sh start. Any other selection (B2NDFS_TSAN_TESTS,
# or ctest arguments given here) builds every target.
TSAN_HELPERS=(b2ndfs b2nd_fixture fuse_compare lifecycle_probe stress_reader)
TSAN_SUBSET=0
[[ -z ${B2NDFS_TSAN_TESTS:-} && $# == 0 ]] && TSAN_SUBSET=1
ASAN_BUILD="${BUILD}-asan"
TSAN_BUILD="${BUILD}-tsan"
LOGS="$BUILD-testlogs"
mkdir -p "$LOGS"

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
  SUMMARY+=("$(printf '%-5s %4d passed, %d failed, %d skipped  %s' "$1" "$2" "$3" "$4" "$5")")
  [[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$B2NDFS_SUMMARY_FILE"
  return 0
}
[[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && : >"$B2NDFS_SUMMARY_FILE"

# run_ctest NAME DIR [ENV=VALUE...] -- [ctest args...]: runs ctest in DIR
# with the environment given (and the command prefix CTEST_PREFIX), records
# the counts from its summary.
CTEST_PREFIX=()
run_ctest() {
  local name=$1 dir=$2 t0=$SECONDS
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

# configure DIR CMAKE_ARGS...: configures DIR (the generator only the first
# time) with the options given.
configure() {
  local dir=$1
  shift
  local gen=()
  [[ -f $dir/CMakeCache.txt ]] || gen=("${GEN[@]}")
  cmake -S "$ROOT" -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$LOGS/configure-$(basename "$dir").log" 2>&1 ||
    {
      tail -n 30 "$LOGS/configure-$(basename "$dir").log"
      return 1
    }
}

# main_here NOTE [ctest args]: the main pass in this machine's build tree;
# NOTE (may be empty) ends its summary line: why not in a minimal root.
main_here() {
  local note=${1:+"; $1"} t0=$SECONDS
  shift
  echo "== build ($BUILD)"
  if bash "$ROOT/scripts/build.sh"; then
    echo "== tests ($BUILD)"
    run_ctest main "$BUILD" -- --timeout 900 "$@"
    [[ -n $note ]] && SUMMARY[-1]+="$note"
  else
    record main 0 1 0 "(build failed; $(elapsed "$t0")$note)"
  fi
}

# main_in_minbase: the main pass in a fresh minimal root (see above); its
# summary becomes this one's. Returns 77 (having recorded nothing) when no
# minimal root can be made here.
main_in_minbase() {
  local t0=$SECONDS inner=$LOGS/minbase-summary.tsv rc
  echo "== the demo and the main pass in a fresh minimal Debian root (scripts/check_minbase.sh --main-only)"
  rm -f "$inner"
  bash "$ROOT/scripts/check_minbase.sh" --main-only --summary "$inner" "$@"
  rc=$?
  if [[ ! -s $inner ]]; then
    ((rc == 77)) && return 77
    record main 0 1 0 "(no summary from the minimal root: check_minbase.sh exited $rc; $(elapsed "$t0"))"
    return 0
  fi
  local name passed failed skipped detail
  while IFS=$'\t' read -r name passed failed skipped detail; do
    record "$name" "$passed" "$failed" "$skipped" "${detail%)}; in a minimal root, $(elapsed "$t0") with its set-up)"
  done <"$inner"
  ((rc == 0 || TOTAL_FAILED > 0)) || record main 0 1 0 "(check_minbase.sh exited $rc; $(elapsed "$t0"))"
}

# --- builds of the other passes, in the background ----------------------------
# build_pass NAME: configures and builds the tree of pass NAME (asan, tsan,
# fuzz); status 0 when built.
build_pass() {
  case $1 in
    asan)
      # No -Werror here: GCC's flow warnings are noisier under sanitizers.
      configure "$ASAN_BUILD" -DB2NDFS_SANITIZE=ON -DB2NDFS_TSAN=OFF -DB2NDFS_BUILD_BENCH=OFF &&
        cmake --build "$ASAN_BUILD" -j"$JOBS"
      ;;
    tsan)
      configure "$TSAN_BUILD" -DB2NDFS_TSAN=ON -DB2NDFS_SANITIZE=OFF -DB2NDFS_BUILD_BENCH=OFF || return 1
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
        done < <(cd "$TSAN_BUILD" && ctest -N -R "$TSAN_TESTS" | sed -n 's/^ *Test *#[0-9]*: //p')
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

HOST_BUILDS=()
if [[ ${B2NDFS_SANITIZERS:-1} == 1 ]]; then
  HOST_BUILDS+=(asan)
  [[ ${B2NDFS_TSAN:-1} == 1 ]] && HOST_BUILDS+=(tsan)
fi
[[ ${B2NDFS_FUZZ_SMOKE:-1} == 1 && -f $ROOT/scripts/fuzz.sh ]] && HOST_BUILDS+=(fuzz)
# runs_pass NAME: pass NAME (asan, tsan, fuzz) runs, after its build.
runs_pass() { [[ " ${HOST_BUILDS[*]} " == *" $1 "* ]]; }
# Without the fuzz pass, its compilers need not be installed.
runs_pass fuzz || export B2NDFS_SETUP_FUZZ=${B2NDFS_SETUP_FUZZ:-0}

# The builds run one after the other in one background job, a process group
# of its own (set -m), so that its priority can be changed and it can be
# stopped as a whole. Each writes LOGS/build-NAME.rc: "STATUS SECONDS".
BG_PID=
MY_NICE=$(nice)
start_host_builds() {
  ((${#HOST_BUILDS[@]} > 0)) || return 0
  local b
  for b in "${HOST_BUILDS[@]}"; do rm -f "$LOGS/build-$b.rc"; done
  set -m
  (
    set +m # its commands stay in its process group
    renice -n 19 -p "$BASHPID" >/dev/null
    for b in "${HOST_BUILDS[@]}"; do
      t=$SECONDS
      build_pass "$b" >"$LOGS/build-$b.log" 2>&1
      echo "$? $((SECONDS - t))" >"$LOGS/build-$b.rc"
    done
  ) </dev/null &
  BG_PID=$!
  set +m
  echo "== building ${HOST_BUILDS[*]} in the background (logs: $LOGS/build-*.log)"
}
stop_host_builds() {
  [[ -n $BG_PID ]] && kill -0 "$BG_PID" 2>/dev/null || return 0
  kill -TERM -- "-$BG_PID" 2>/dev/null
  sleep 1
  kill -KILL -- "-$BG_PID" 2>/dev/null
  wait "$BG_PID" 2>/dev/null
}
trap stop_host_builds EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_build NAME: waits for pass NAME's build, at this script's priority
# meanwhile (the main pass is done; the builds after it go back to the
# background); status 0 when it built. BUILD_SECONDS: how long it took.
BUILD_SECONDS=0
wait_build() {
  local rc_file=$LOGS/build-$1.rc rc
  if [[ ! -f $rc_file ]] && kill -0 "$BG_PID" 2>/dev/null; then
    echo "== waiting for the $1 build (log: $LOGS/build-$1.log)"
    renice -n "$MY_NICE" -g "$BG_PID" >/dev/null 2>&1
    while [[ ! -f $rc_file ]] && kill -0 "$BG_PID" 2>/dev/null; do sleep 2; done
    renice -n 19 -g "$BG_PID" >/dev/null 2>&1
  fi
  read -r rc BUILD_SECONDS 2>/dev/null <"$rc_file" || rc=1
  if [[ $rc != 0 ]]; then
    echo "== the $1 build failed (log: $LOGS/build-$1.log):"
    tail -n 30 "$LOGS/build-$1.log"
    return 1
  fi
  echo "== $1 build: done in $BUILD_SECONDS s (log: $LOGS/build-$1.log)"
}

# --- main ---------------------------------------------------------------------
# Everything the other passes need (and debootstrap) is installed here first.
bash "$ROOT/scripts/setup.sh" || echo "== scripts/setup.sh failed: the passes below will say what is missing"
start_host_builds
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
  if wait_build asan; then
    echo "== tests under AddressSanitizer + UBSan (${ASAN_BUILD})"
    run_ctest asan "$ASAN_BUILD" ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
      UBSAN_OPTIONS=print_stacktrace=1 -- --timeout 1800 "$@"
  else
    record asan 0 1 0 "(build failed after $BUILD_SECONDS s; $LOGS/build-asan.log)"
  fi
fi

# --- tsan ---------------------------------------------------------------------
if runs_pass tsan; then
  if wait_build tsan; then
    echo "== tests under ThreadSanitizer (${TSAN_BUILD}): $TSAN_TESTS"
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
      -- --timeout 1800 -R "$TSAN_TESTS" "$@"
    CTEST_PREFIX=()
    if compgen -G "$reports/report*" >/dev/null; then
      n=$(cat "$reports"/report* | grep -c '^WARNING: ThreadSanitizer')
      echo "== ThreadSanitizer reports ($n) in $reports:"
      grep -h -A12 '^WARNING: ThreadSanitizer' "$reports"/report* | head -n 80
      record tsan-reports 0 1 0 "($n ThreadSanitizer report(s) in $reports; $(elapsed "$tsan_t0"))"
    fi
  else
    record tsan 0 1 0 "(build failed after $BUILD_SECONDS s; $LOGS/build-tsan.log)"
  fi
fi

# --- fuzz smoke ---------------------------------------------------------------
if runs_pass fuzz; then
  echo "== fuzz smoke run"
  if wait_build fuzz; then
    t0=$SECONDS
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
    detail="($(elapsed "$t0"))"
    [[ -n $failed_names ]] && detail="findings in: ${failed_names% } $detail"
    record fuzz "$passed" "$failed" 0 "$detail"
  else
    record fuzz 0 "$(bash "$ROOT/scripts/fuzz.sh" --list | wc -l)" 0 "(build failed after $BUILD_SECONDS s; $LOGS/build-fuzz.log)"
  fi
fi

echo "== summary (logs in $LOGS)"
printf '%s\n' "${SUMMARY[@]}"
echo "$TOTAL_PASSED passed, $TOTAL_FAILED failed"
((TOTAL_FAILED == 0))
