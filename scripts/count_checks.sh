#!/usr/bin/env bash
# Counts the checks of each tier of the test suite (issue #35: "the unit tier
# holds at least half of the checks by count").
#
#   scripts/count_checks.sh            check sites in the sources (no build)
#   scripts/count_checks.sh BUILD      also the Catch2 assertions the unit
#                                      tests run (each unit test program of
#                                      BUILD/tests once, -r compact)
#
# A check site is one place in a test's source that can fail on its own:
#   unit      a Catch2 assertion macro in tests/unit (REQUIRE, CHECK,
#             REQUIRE_FALSE, CHECK_THAT, REQUIRE_THROWS..., FAIL, ...);
#   other     everything else (mounted FUSE tests, remote conformance, stress,
#             docs, package, the core comparison programs and fixtures):
#             in shell, a call of fail, check, expect or read_fails (lib.sh's
#             and the scripts' own helpers; `cond || fail "..."` is one
#             check); in Python (inline in a script or a .py helper), an
#             assert statement or a call of the script's check(...)/fail(...); in the C++ test programs, a call of Fail(...)
#             or of a Check*/Expect* helper.
# Definitions of the helpers themselves and comment lines are not counted.
# Run-time counts differ (a check in a loop runs many times; a Catch2
# assertion over random shapes too); the static count is the one compared.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# count_re REGEX FILES...: lines matching REGEX (comment lines skipped).
count_re() {
  local re=$1
  shift
  (($# == 0)) && { echo 0; return; }
  grep -hE -- "$re" "$@" 2>/dev/null | grep -cvE '^[[:space:]]*(#|//)' || true
}

shopt -s nullglob
unit_files=(tests/unit/*.cc tests/unit/*.h)
unit=$(count_re '\b(REQUIRE|CHECK|REQUIRE_FALSE|CHECK_FALSE|REQUIRE_THAT|CHECK_THAT|REQUIRE_THROWS[A-Z_]*|CHECK_THROWS[A-Z_]*|REQUIRE_NOTHROW|CHECK_NOTHROW|FAIL|FAIL_CHECK)[[:space:]]*\(' \
  "${unit_files[@]}")

other_dirs=(tests/integration tests/stress tests/docs tests/package tests/fixtures tests/fuzz)
shell_files=() py_files=() cc_files=()
for d in "${other_dirs[@]}"; do
  for f in "$d"/*.sh; do shell_files+=("$f"); done
  for f in "$d"/*.py; do py_files+=("$f"); done
  for f in "$d"/*.cc "$d"/*.h; do cc_files+=("$f"); done
done
# Shell: fail/check/expect/read_fails called (not defined: "name() {").
shell=$(count_re '(^|[;&|{(!]|[[:space:]])(fail|check|expect|read_fails)[[:space:]]+[^(=]' \
  "${shell_files[@]}")
python=$(count_re '(^|[[:space:]:;])assert[[:space:](]' "${shell_files[@]}" "${py_files[@]}")
# ... and calls of a script's own Python check(...)/fail(...) helpers.
python=$((python + $(grep -hE '(^|[^A-Za-z_.])(check|fail)\(' "${shell_files[@]}" "${py_files[@]}" |
  grep -vE '^[[:space:]]*(#|def )' | grep -c . || true)))
# C++ test programs: calls, not the helpers' declarations or definitions.
cxx=$(grep -hE '\b(Fail|Check[A-Z][A-Za-z]*|Expect[A-Z][A-Za-z]*)\(' "${cc_files[@]}" 2>/dev/null |
  grep -vE '^[[:space:]]*(//|(static |inline )?(bool|void|int|std::string|Status)[[:space:]]+[A-Za-z:]+\()' |
  grep -c . || true)
other=$((shell + python + cxx))
total=$((unit + other))
share=$(awk -v u="$unit" -v t="$total" 'BEGIN { printf "%.1f", t ? 100 * u / t : 0 }')

printf 'check sites (static)\n'
printf '  unit (Catch2 assertions in tests/unit)        %6d\n' "$unit"
printf '  other tiers                                   %6d\n' "$other"
printf '    shell fail/check/expect/read_fails          %6d\n' "$shell"
printf '    python asserts, check(), fail()             %6d\n' "$python"
printf '    C++ test programs (Fail, Check*, Expect*)   %6d\n' "$cxx"
printf '  unit share                                    %5s%%\n' "$share"

if (($# >= 1)); then
  build=$1
  ran=0 programs=0 failed=0
  for exe in "$build"/tests/*_test; do
    [[ -x $exe && -f $ROOT/tests/unit/$(basename "$exe").cc ]] || continue
    # The summary: "Passed all 4 test cases with 64 assertions." (a failing
    # program says only how many failed: it is counted as failing).
    line=$("$exe" -r compact 2>/dev/null | grep -E 'assertions?\.' | tail -n 1) ||
      failed=$((failed + 1))
    n=$(grep -oE 'with [0-9]+ assertions?' <<<"$line" | grep -oE '[0-9]+' || true)
    ran=$((ran + ${n:-0}))
    programs=$((programs + 1))
  done
  printf 'Catch2 assertions run (%d unit programs in %s%s)  %d\n' "$programs" "$build" \
    "$( ((failed > 0)) && echo ", $failed failing")" "$ran"
fi
