# shellcheck shell=bash
# Sourced by scripts/test.sh: jobs in the background, each a process group
# of its own (set -m), so that its priority can be changed and it can be
# stopped as a whole. Needs LOGS, scripts/lib/phases.sh and
# scripts/lib/ccache.sh.
#
#   bg_start NAME NICE CMD...  runs CMD (a command or a function) at nice NICE
#                              (19: only what the foreground leaves idle)
#   bg_step STEP CMD...        inside a job: runs CMD, its output in
#                              LOGS/build-STEP.log and ccache's log of its
#                              compiles in LOGS/ccache-STEP.log, and writes
#                              LOGS/build-STEP.rc: "STATUS START END" (epoch s)
#   wait_step JOB STEP         waits for STEP of job JOB, the job at this
#                              script's priority meanwhile (back to 19 after)
#                              but while another ctest run holds the test
#                              slot (slot_busy, scripts/lib/passes.sh);
#                              records STEP (and the wait, if any) as phases;
#                              status 0 when STEP succeeded; STEP_SECONDS: how
#                              long STEP took
#   bg_wait JOB                waits for job JOB to end, at this script's
#                              priority; status: the job's
#   bg_stop_all                stops the jobs still running: TERM to each
#                              group, KILL after BG_GRACE[JOB] seconds (1)
declare -A BG_PIDS=()
declare -A BG_GRACE=()
MY_NICE=$(nice)

bg_start() {
  local name=$1 niceness=$2
  shift 2
  set -m
  (
    set +m # its commands stay in its process group
    ((niceness > MY_NICE)) && renice -n "$niceness" -p "$BASHPID" >/dev/null
    "$@"
  ) </dev/null &
  BG_PIDS[$name]=$!
  set +m
}

bg_step() {
  local step=$1 t=$EPOCHSECONDS
  shift
  : >"$LOGS/ccache-$step.log"
  CCACHE_STATSLOG=$LOGS/ccache-$step.log "$@" >"$LOGS/build-$step.log" 2>&1
  echo "$? $t $EPOCHSECONDS" >"$LOGS/build-$step.rc"
}

STEP_SECONDS=0
wait_step() {
  local job=$1 step=$2 rc_file=$LOGS/build-$2.rc rc start end w0=$EPOCHSECONDS waited=0
  local pid=${BG_PIDS[$job]:-}
  if [[ ! -f $rc_file && -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    echo "== waiting for the $step build (log: $LOGS/build-$step.log)"
    local want now=19
    while [[ ! -f $rc_file ]] && kill -0 "$pid" 2>/dev/null; do
      # Another run's tests keep the CPUs first: their timings count.
      want=$MY_NICE
      declare -F slot_busy >/dev/null && slot_busy && want=19
      if [[ $want != "$now" ]]; then
        renice -n "$want" -g "$pid" >/dev/null 2>&1
        now=$want
      fi
      sleep 1
    done
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
  ((waited)) && phase_since "wait for $step build" "$w0" "the pass waits; its build at full priority while no tests run"
  if [[ $rc != 0 ]]; then
    echo "== the $step build failed (log: $LOGS/build-$step.log):"
    tail -n 30 "$LOGS/build-$step.log"
    return 1
  fi
  echo "== $step build: done in $STEP_SECONDS s (log: $LOGS/build-$step.log)"
}

bg_wait() {
  local pid=${BG_PIDS[$1]:-}
  [[ -n $pid ]] || return 1
  renice -n "$MY_NICE" -g "$pid" >/dev/null 2>&1
  wait "$pid"
}

bg_stop_all() {
  local name pid i
  for name in "${!BG_PIDS[@]}"; do
    pid=${BG_PIDS[$name]}
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM -- "-$pid" 2>/dev/null
    for ((i = 0; i < ${BG_GRACE[$name]:-1} * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}
