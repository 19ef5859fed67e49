#!/usr/bin/env bash
# fuse.shared: a mount many users share (README.md, "Permissions"), mounted
# as root with allow_other as the shipped unit does, and read by two
# unprivileged users, alice (2001) and bob (2002), through setpriv:
#  * a carrier alice saves over bob's container (a relative operand
#    ../bob/secret.b2nd, and one reached through a symbolic link alice made
#    inside SOURCE) is readable by bob alone, never by alice; one over her
#    own files stays hers; an operand reached through a link out of SOURCE
#    is refused (meta.json says why, no data);
#  * a .b2d store of alice's: a 0600 leaf only she reads; members behind a
#    link into bob's private directory only bob; a link out of SOURCE is
#    not shown;
#  * a CTable of bob's with a private column: its valid/ file and leaf
#    readable by bob only, the other columns' by both;
#  * every refused read is "Permission denied", and root reads everything.
# Skips (77) only when /dev/fuse is unusable.
# Usage: fuse_shared.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init shared "$1"
require_fuse
command -v setpriv >/dev/null || { fail "setpriv is missing (util-linux)"; finish; }
[[ $(id -u) == 0 ]] || { log "SKIP: needs root (chown to two users)"; exit 77; }
STORE_FIXTURE=$BUILD/tests/fixtures/store_fixture

"$FIXTURE" vlen "$TMP/v" "$TMP/vref" >/dev/null || { fail "b2nd_fixture vlen"; finish; }
"$STORE_FIXTURE" "$TMP/st" >/dev/null || { fail "store_fixture"; finish; }
S=$TMP/shared
OUT=$TMP/outside
mkdir -p "$S/alice" "$S/bob" "$OUT"
chmod 0755 "$S" "$TMP"
cp "$TMP/v/lazy/x.b2nd" "$S/bob/secret.b2nd"
cp "$TMP/v/lazy/x.b2nd" "$S/alice/mine.b2nd"
cp "$TMP/v/lazy/x.b2nd" "$OUT/x.b2nd"
"$FIXTURE" carrier "$S/alice/up.b2nd" "o0 + 1" o0=../bob/secret.b2nd || fail "carrier up"
"$FIXTURE" carrier "$S/alice/via.b2nd" "o0 + 1" o0=link/bob/secret.b2nd || fail "carrier via"
"$FIXTURE" carrier "$S/alice/own.b2nd" "o0 + 1" o0=mine.b2nd || fail "carrier own"
"$FIXTURE" carrier "$S/alice/away.b2nd" "o0 + 1" o0=out/x.b2nd || fail "carrier away"
ln -s "$S" "$S/alice/link"
ln -s "$OUT" "$S/alice/out"
cp -r "$TMP/st/src/tree.b2d" "$S/alice/tree.b2d"
mkdir -p "$S/bob/private"
cp "$TMP/st/src/tree.b2d/arr2d.b2nd" "$S/bob/private/hidden.b2nd"
cp "$TMP/st/src/tree.b2d/arr2d.b2nd" "$OUT/far.b2nd"
ln -s ../../bob/private "$S/alice/tree.b2d/linked"
ln -s "$OUT" "$S/alice/tree.b2d/escape"
cp -r "$TMP/st/src/tables.b2d" "$S/bob/tables.b2d"
chown -R 2001:2001 "$S/alice"
chown -h 2001:2001 "$S/alice/link" "$S/alice/out"
chown -R 2002:2002 "$S/bob"
chmod -R u+rwX,go+rX "$S/alice" "$S/bob"
chmod 0700 "$S/bob/private"
chmod 0600 "$S/alice/tree.b2d/arr2d.b2nd" "$S/bob/tables.b2d/mixed/_cols/s.b2nd" \
  "$S/bob/secret.b2nd"
chmod 0711 "$S/bob"  # searchable, not listable

M=$TMP/mnt
mount_fs "$S" "$M" -o allow_other,cache_size=64M || exit 1

as() {
  local uid=$1
  shift
  setpriv --reuid="$uid" --regid="$uid" --clear-groups -- "$@"
}
# reads WHO PATH: WHO reads PATH whole, the same bytes as root.
reads() {
  local who=$1 path=$2
  if ! as "$who" cat "$M/$path" >"$TMP/got" 2>"$TMP/err"; then
    fail "uid $who cannot read $path: $(cat "$TMP/err")"
  elif ! cmp -s "$TMP/got" <(cat "$M/$path"); then
    fail "uid $who read other bytes of $path than root"
  fi
}
# refused WHO PATH: WHO gets "Permission denied" for PATH.
refused() {
  local who=$1 path=$2 out
  if out=$(as "$who" cat "$M/$path" 2>&1 >/dev/null); then
    fail "uid $who read $path (expected Permission denied)"
  elif ! grep -q 'Permission denied' <<<"$out"; then
    fail "uid $who: $path failed with '$out', expected Permission denied"
  fi
}
ALICE=2001
BOB=2002

# Carriers over bob's container: bob's alone.
for c in up via; do
  for f in data data.npy meta.json slices/0/07 view/3:9,2; do
    refused $ALICE "alice/$c.b2nd/$f"
    refused 65534 "alice/$c.b2nd/$f"
    reads $BOB "alice/$c.b2nd/$f"
  done
  got=$(stat -c '%u %a' "$M/alice/$c.b2nd/data")
  [[ $got == "$BOB 400" ]] || fail "alice/$c.b2nd/data is '$got', expected '$BOB 400'"
done
check "the carrier over bob's container computes o0 + 1" "$PY" - "$M" <<'PYEOF'
import os, sys
import numpy as np
m = sys.argv[1]
x = np.load(os.path.join(m, "bob/secret.b2nd/data.npy"))
for c in ("up", "via"):
    got = np.load(os.path.join(m, "alice", c + ".b2nd", "data.npy"))
    assert got.dtype == x.dtype and (got == x + 1).all(), c
PYEOF
refused $ALICE bob/secret.b2nd/data
for f in data meta.json; do
  reads $ALICE "alice/own.b2nd/$f"
  reads 65534 "alice/own.b2nd/$f"
done
[[ ! -e $M/alice/away.b2nd/data ]] || fail "a carrier over a link out of SOURCE has data"
grep -q "out of the mount" "$M/alice/away.b2nd/meta.json" ||
  fail "alice/away.b2nd/meta.json does not say why: $(cat "$M/alice/away.b2nd/meta.json")"
reads $ALICE alice/away.b2nd/meta.json

# alice's .b2d: her 0600 leaf, a link into bob's private directory, a link out.
reads $ALICE alice/tree.b2d/arr2d/data
refused $BOB alice/tree.b2d/arr2d/data
reads $BOB alice/tree.b2d/group/temp/data
for f in hidden/data hidden/meta.json; do
  refused $ALICE "alice/tree.b2d/linked/$f"
  reads $BOB "alice/tree.b2d/linked/$f"
done
if ls "$M/alice/tree.b2d" | grep -qx escape; then
  fail "a .b2d member linked out of SOURCE is listed"
fi
[[ ! -e $M/alice/tree.b2d/escape/far/data ]] || fail "a .b2d member out of SOURCE is served"

# bob's CTable with a private column s.
refused $ALICE bob/tables.b2d/mixed/valid/s.npy
refused $ALICE bob/tables.b2d/mixed/_cols/s/data
reads $BOB bob/tables.b2d/mixed/valid/s.npy
reads $BOB bob/tables.b2d/mixed/_cols/s/data
reads $ALICE bob/tables.b2d/mixed/valid/b.npy
reads $ALICE bob/tables.b2d/mixed/_cols/b/data

pid_alive "$DAEMON_PID" || fail "b2ndfs died"
unmount_fs "$M"
finish
