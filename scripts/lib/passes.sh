# shellcheck shell=bash
# Sourced by scripts/test.sh: a pass's ctest run, its summary line, and the
# test slot. Needs LOGS, JOBS and scripts/lib/phases.sh.
#
#   record NAME PASSED FAILED SKIPPED DETAIL
#                       a summary line (and a line of B2NDFS_SUMMARY_FILE,
#                       tab-separated), counted in TOTAL_PASSED/TOTAL_FAILED
#   not_run NAME WHY    a line for a pass that did not run, counted in neither
#   summary_print       the lines, passes in the order of PASS_ORDER
#   run_ctest NAME DIR [ENV=VALUE...] -- [ctest args...]
#                       ctest in DIR with that environment (and the command
#                       prefix CTEST_PREFIX), its output in LOGS/NAME.log;
#                       records the counts of its summary and a phase
#   ctest_record NAME LOG RC START [END]
#                       the same record from the log of a ctest run that
#                       exited RC, began at START and ended at END (epoch s;
#                       default now)
#   slot_take WHAT, slot_release, slot_busy
#                       the test slot: at most one ctest run at a time
#                       between this script and the minimal root's (a lock
#                       on B2NDFS_TEST_SLOT, when set), so that a pass's
#                       timings are not those of two passes on the CPUs;
#                       builds and package installs go on meanwhile;
#                       slot_busy: another run holds it now
SUMMARY=()
TOTAL_PASSED=0
TOTAL_FAILED=0
PASS_ORDER=(main package demo asan tsan tsan-reports fuzz)
CTEST_PREFIX=()
[[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && : >"$B2NDFS_SUMMARY_FILE"

record() {
  TOTAL_PASSED=$((TOTAL_PASSED + $2))
  TOTAL_FAILED=$((TOTAL_FAILED + $3))
  SUMMARY+=("$1"$'\t'"$(printf '%-7s %4d passed, %d failed, %d skipped  %s' "$1" "$2" "$3" "$4" "$5")")
  [[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$B2NDFS_SUMMARY_FILE"
  return 0
}

not_run() {
  SUMMARY+=("$1"$'\t'"$(printf '%-7s not run: %s' "$1" "$2")")
  [[ -n ${B2NDFS_SUMMARY_FILE:-} ]] && printf '%s\t0\t0\t0\t(not run: %s)\n' "$1" "$2" >>"$B2NDFS_SUMMARY_FILE"
  return 0
}

summary_print() {
  local pass line printed=()
  for pass in "${PASS_ORDER[@]}" ""; do
    for line in "${SUMMARY[@]}"; do
      if [[ ${line%%$'\t'*} == "$pass" || ($pass == "" && " ${PASS_ORDER[*]} " != *" ${line%%$'\t'*} "*) ]]; then
        printed+=("${line#*$'\t'}")
      fi
    done
  done
  printf '%s\n' "${printed[@]}"
}

run_ctest() {
  local name=$1 dir=$2 e0=$EPOCHSECONDS
  shift 2
  local envs=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  (cd "$dir" && "${CTEST_PREFIX[@]}" env "${envs[@]}" ctest --output-on-failure -j"$JOBS" "$@") 2>&1 |
    tee "$LOGS/$name.log"
  ctest_record "$name" "$LOGS/$name.log" "${PIPESTATUS[0]}" "$e0"
}

ctest_record() {
  local name=$1 log=$2 rc=$3 e0=$4 e1=${5:-$EPOCHSECONDS}
  local took="$((e1 - e0)) s"
  local total failed skipped failed_names
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n1)
  failed=$(sed -n 's/.* \([0-9]*\) tests failed out of .*/\1/p' "$log" | tail -n1)
  skipped=$(sed -n '/^The following tests did not run:/,/^$/p' "$log" | grep -c '(Skipped)')
  failed_names=$(sed -n '/^The following tests FAILED:/,/^$/p' "$log" |
    sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' | tr '\n' ' ')
  phase_add "$name tests" "$e0" "$e1" "${total:-0} tests, ctest -j$JOBS"
  if [[ -z $total ]]; then
    # No summary: ctest found no tests, or could not run at all.
    if grep -q 'No tests were found' "$log"; then
      record "$name" 0 0 0 "(no tests matched; $took)"
    else
      record "$name" 0 1 0 "(ctest exited $rc without a summary; $took)"
    fi
    return
  fi
  failed=${failed:-0}
  local detail="($took)"
  [[ -n $failed_names ]] && detail="failed: ${failed_names% } $detail"
  if ((rc != 0 && failed == 0)); then
    # ctest itself failed (e.g. a test it could not start): count that once.
    failed=1
    detail="ctest exited $rc $detail"
  fi
  record "$name" $((total - failed - skipped)) "$failed" "$skipped" "$detail"
}

SLOT_FD=
slot_take() {
  [[ -n ${B2NDFS_TEST_SLOT:-} ]] || return 0
  exec {SLOT_FD}>>"$B2NDFS_TEST_SLOT" || return 0
  flock -n "$SLOT_FD" && return 0
  echo "== $1 waits for the other ctest run to end (test slot $B2NDFS_TEST_SLOT)"
  local w0=$EPOCHSECONDS
  flock "$SLOT_FD"
  phase_since "wait for the test slot" "$w0" "$1: the other run's tests ran"
}

slot_busy() {
  [[ -n ${B2NDFS_TEST_SLOT:-} && -z $SLOT_FD ]] || return 1
  ! flock -n "$B2NDFS_TEST_SLOT" true
}

slot_release() {
  [[ -n $SLOT_FD ]] || return 0
  flock -u "$SLOT_FD"
  exec {SLOT_FD}>&-
  SLOT_FD=
}
