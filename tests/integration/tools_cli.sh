#!/usr/bin/env bash
# tools.cli: the command-line contract of the helper programs: --help prints
# usage on stdout and succeeds, a wrong command line fails with 2 on stderr,
# and no option is ever taken for a file or directory name.
set -uo pipefail
BUILD=$1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
  echo "[tools.cli] FAIL: $*"
  failures=$((failures + 1))
}
expect() {  # expect RC STREAM(stdout|stderr) PATTERN -- COMMAND...
  local want=$1 stream=$2 pattern=$3
  shift 4
  (cd "$TMP" && "$@" >"$TMP/out" 2>"$TMP/err")
  local rc=$?
  [[ $rc == "$want" ]] || fail "$*: exit $rc, expected $want"
  local file=$TMP/out
  [[ $stream == stderr ]] && file=$TMP/err
  grep -q -- "$pattern" "$file" || fail "$*: no '$pattern' on $stream"
}
expect 0 stdout usage -- "$BUILD/src/tools/b2ndfs-inspect" --help
expect 2 stderr usage -- "$BUILD/src/tools/b2ndfs-inspect"
expect 0 stdout usage -- "$BUILD/src/tools/b2ndfs-make-samples" --help
expect 2 stderr usage -- "$BUILD/src/tools/b2ndfs-make-samples" --scale
expect 0 stdout "cache_size" -- "$BUILD/src/app/b2ndfs" --help
expect 0 stdout "c-blosc2 " -- "$BUILD/src/app/b2ndfs" --version
expect 0 stdout "libfuse " -- "$BUILD/src/app/b2ndfs" --version
expect 0 stdout "demo.sh --keep" -- bash "$ROOT/scripts/demo.sh" --help
expect 2 stderr "unknown argument" -- bash "$ROOT/scripts/demo.sh" --bogus
[[ -z $(ls -A "$TMP" | grep -v '^out$\|^err$') ]] || fail "an option became a file: $(ls -A "$TMP")"
((failures == 0)) && echo "[tools.cli] passed"
exit $((failures > 0))
