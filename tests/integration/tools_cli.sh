#!/usr/bin/env bash
# tools.cli: the command-line contract of the helper programs: --help prints
# usage on stdout and succeeds, a wrong command line fails with 2 on stderr,
# and no option is ever taken for a file or directory name. A bad b2ndfs
# option value is one line and "see 'b2ndfs --help'", not the whole help.
# b2ndfs-inspect says each problem once: meta of a broken container prints
# its {"error": ...} and fails, read names the reason, check lists every
# container below a directory (ok / BROKEN, one line each) and fails when one
# is broken; it knows stores (a .b2z's meta.json and leaves, a truncated
# .b2z broken with its meta.json's words), CTables, carriers, items and
# batches, and why a view/EXPR is refused.
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

# lines FILE: its number of lines.
lines() { wc -l <"$1" | tr -d ' '; }
for bad in threads=x cache_size=lots views=bogus log_level=loud; do
  expect 2 stderr "^see 'b2ndfs --help'\$" -- "$BUILD/src/app/b2ndfs" -o "$bad" /nonexistent /mnt
  [[ $(lines "$TMP/err") == 2 ]] || fail "-o $bad: $(lines "$TMP/err") lines on stderr, expected 2"
  grep -q "^b2ndfs: bad value in '$bad'" "$TMP/err" || fail "-o $bad: $(head -1 "$TMP/err")"
done
expect 2 stderr "known: meta, data, npy" -- "$BUILD/src/app/b2ndfs" -o views=bogus /a /b
# Options neither b2ndfs's nor libfuse's fail here, in one line, not in
# libfuse after the command line was accepted ("unknown option(s)", exit 1).
for bad in bogus views=meta,nii ro,data fsname; do
  expect 2 stderr "^see 'b2ndfs --help'\$" -- "$BUILD/src/app/b2ndfs" -o "$bad" /nonexistent /mnt
  [[ $(lines "$TMP/err") == 2 ]] || fail "-o $bad: $(lines "$TMP/err") lines on stderr, expected 2"
done
expect 2 stderr "'nii' after views= is neither a kind of view" -- \
  "$BUILD/src/app/b2ndfs" -o views=meta,nii /nonexistent /mnt
for scale in 0 abc -3 2x 1001 ""; do
  expect 2 stderr "bad --scale" -- "$BUILD/src/tools/b2ndfs-make-samples" "$TMP/samples" --scale "$scale"
  [[ -e $TMP/samples ]] && fail "make-samples --scale '$scale' wrote $TMP/samples"
done
expect 2 stderr "unexpected arguments" -- "$BUILD/src/tools/b2ndfs-make-samples" "$TMP/samples" --scal 2

C=$(mktemp -d)
trap 'rm -rf "$TMP" "$C"' EXIT
INSPECT=$BUILD/src/tools/b2ndfs-inspect
FIXTURE=$BUILD/tests/fixtures/b2nd_fixture
mkdir -p "$C/ok/sub" "$C/mixed"
head -c 3000 /dev/zero | tr '\0' x >"$C/mixed/broken.b2nd"
expect 1 stdout '"error": "not a Blosc2 frame' -- "$INSPECT" meta "$C/mixed/broken.b2nd"
[[ -s $TMP/err ]] && fail "meta of a broken container: stderr repeats it: $(cat "$TMP/err")"
expect 1 stderr "cannot be decoded (not a Blosc2 frame" -- "$INSPECT" read "$C/mixed/broken.b2nd" data
[[ $(lines "$TMP/err") == 1 ]] || fail "read of a broken container: $(lines "$TMP/err") lines"
grep -q "data: data" "$TMP/err" && fail "read of a broken container says 'data: data'"
if [[ -x $FIXTURE ]]; then
  "$FIXTURE" write "$C/ok/sub/a.b2nd" --shape 20,30 --chunks 10,10 --blocks 5,5 >/dev/null
  cp "$C/ok/sub/a.b2nd" "$C/mixed/a.b2nd"
  # A chunk of the copy overwritten: the metadata decodes, the data does not.
  size=$(stat -c %s "$C/mixed/a.b2nd")
  cp "$C/mixed/a.b2nd" "$C/mixed/corrupt.b2nd"
  printf 'garbage%.0s' $(seq 40) |
    dd of="$C/mixed/corrupt.b2nd" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
  expect 0 stdout '"shape"' -- "$INSPECT" meta "$C/ok/sub/a.b2nd"
  expect 1 stderr "no file datax in it" -- "$INSPECT" read "$C/ok/sub/a.b2nd" datax
  expect 0 stdout "^ok      $C/ok/sub/a.b2nd\$" -- "$INSPECT" check "$C/ok"
  expect 1 stdout "^BROKEN  $C/mixed/broken.b2nd: not a Blosc2 frame" -- "$INSPECT" check "$C/mixed"
  [[ $(lines "$TMP/out") == 3 ]] || fail "check: $(lines "$TMP/out") lines for 3 containers"
  grep -q "^ok      $C/mixed/a.b2nd\$" "$TMP/out" || fail "check: $(cat "$TMP/out")"
  grep -q "^BROKEN  $C/mixed/corrupt.b2nd: chunk" "$TMP/out" || fail "check: $(cat "$TMP/out")"
  grep -q "3 container(s), 2 broken" "$TMP/err" || fail "check: $(cat "$TMP/err")"
  # --quick reads the metadata only: the corrupt chunk goes unnoticed.
  expect 1 stdout "^ok      $C/mixed/corrupt.b2nd\$" -- "$INSPECT" check --quick "$C/mixed"
  expect 1 stderr "chunk" -- "$INSPECT" read "$C/mixed/corrupt.b2nd" data
  [[ $(lines "$TMP/err") == 1 ]] || fail "read of a corrupt chunk: said $(lines "$TMP/err") times"
fi
expect 2 stderr usage -- "$INSPECT" check

# Stores, their leaves and tables, carriers, items and batches: the source is
# opened as the daemon opens it, so inspect says what a mount shows.
STORE_FIXTURE=$BUILD/tests/fixtures/store_fixture
PY=/usr/bin/python3
# json_error FILE: the "error" of the meta.json in FILE.
json_error() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["error"])' "$1"; }
if [[ -x $STORE_FIXTURE && -x $FIXTURE ]]; then
  ST=$C/stores
  D=$C/storecheck
  mkdir -p "$D"
  { "$STORE_FIXTURE" "$ST" && "$PY" "$ROOT/tests/fixtures/make_b2z.py" "$ST/src/tree.b2d" "$ST/src"; } \
    >/dev/null || fail "store fixtures"
  cp "$ST/src/tree.b2z" "$D/"
  size=$(stat -c %s "$D/tree.b2z")
  head -c $((size - 100)) "$D/tree.b2z" >"$D/truncated.b2z"
  expect 0 stdout '"store": "b2z"' -- "$INSPECT" meta "$D/tree.b2z"
  expect 0 stdout '"shape": \[20, 30\]' -- "$INSPECT" meta "$D/tree.b2z" arr2d
  expect 0 stdout "arr2d/" -- "$INSPECT" ls "$D/tree.b2z"
  "$INSPECT" read "$D/tree.b2z" arr2d/data >"$TMP/leaf" 2>"$TMP/err" || fail "read of a leaf: $(cat "$TMP/err")"
  cmp -s "$TMP/leaf" "$ST/ref/tree/arr2d.raw" || fail "read of a .b2z leaf differs from c-blosc2's"
  # A truncated .b2z: meta.json's error, and check says the same words.
  expect 1 stdout '"error"' -- "$INSPECT" meta "$D/truncated.b2z"
  err=$(json_error "$TMP/out")
  [[ -n $err ]] || fail "meta of a truncated .b2z: no error in $(cat "$TMP/out")"
  expect 1 stdout "^BROKEN  $D/truncated.b2z: " -- "$INSPECT" check "$D"
  grep -qxF "BROKEN  $D/truncated.b2z: $err" "$TMP/out" || fail "check of a truncated .b2z: $(cat "$TMP/out"), meta.json: $err"
  grep -q "^ok      $D/tree.b2z (b2z store: TreeStore, [0-9]* leaves)\$" "$TMP/out" || fail "check: no store line: $(cat "$TMP/out")"
  for leaf in arr2d group/temp small table/_cols/x table/_cols/pos/z; do
    grep -qx "ok      $D/tree.b2z/$leaf" "$TMP/out" || fail "check: no line for $leaf: $(cat "$TMP/out")"
  done
  grep -q "^ok      $D/tree.b2z/table (CTable: [0-9]* rows, [0-9]* live, 3 columns; 3 valid/ files read)\$" \
    "$TMP/out" || fail "check: no table line: $(cat "$TMP/out")"
  grep -q "container(s), 1 broken (1 store, 1 table); all data read: .*no checksum" "$TMP/err" || fail "check: $(cat "$TMP/err")"
  # A refused view/EXPR says why, as the mount logs it.
  expect 1 stderr "no file arr2d/view/0,999: .*999" -- "$INSPECT" read "$D/tree.b2z" 'arr2d/view/0,999'
  expect 1 stderr "no file arr2d/datax in it" -- "$INSPECT" read "$D/tree.b2z" arr2d/datax
  expect 1 stderr "plain directory" -- "$INSPECT" meta "$D"

  V=$C/vlen
  "$FIXTURE" vlen "$V/out" "$V/ref" >/dev/null || fail "b2nd_fixture vlen"
  rm -rf "$V/out/hostile"
  "$INSPECT" check "$V/out" >"$TMP/out" 2>"$TMP/err"
  grep -qx "ok      $V/out/lazy/sum.b2nd (carrier of '(o0 + o1) \* 2': evaluated)" "$TMP/out" ||
    fail "check: an evaluated carrier: $(cat "$TMP/out")"
  grep -qx "ok      $V/out/lazy.b2nd (carrier of 'o0 + o1 \* 2': not evaluated: operand 'o0' (a.b2nd): no such container in the mount)" \
    "$TMP/out" || fail "check: a carrier that is not evaluated: $(cat "$TMP/out")"
  grep -q "^ok      $V/out/c2ref.b2nd (carrier: .*no data)\$" "$TMP/out" ||
    fail "check: a C2Array reference: $(cat "$TMP/out")"
  grep -q "^ok      $V/out/objects.b2frame ([0-9]* item files read)\$" "$TMP/out" ||
    fail "check: an ObjectArray: $(cat "$TMP/out")"
  grep -q "^ok      $V/out/batches.b2b ([0-9]* batch files read)\$" "$TMP/out" ||
    fail "check: a BatchArray: $(cat "$TMP/out")"
fi
((failures == 0)) && echo "[tools.cli] passed"
exit $((failures > 0))
