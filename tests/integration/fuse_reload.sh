#!/usr/bin/env bash
# fuse.reload: a container that changes on disk while mounted is seen afresh
# (README.md, "Containers that change": on the next lookup, stat, listing
# or open of a name inside it): replaced by rename, overwritten in place; and
# containers added to or removed from SOURCE appear and disappear.
# Usage: fuse_reload.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init reload "$1"
require_fuse

make_fixtures "$TMP"
R=$TMP/ref
S=$TMP/live
M=$TMP/mnt
mkdir -p "$S" "$TMP/want"
ref_slice "$(ref_of "$R" ndim/2d_i4.b2nd)" ":,:" "$TMP/want/2d"
ref_slice "$(ref_of "$R" ndim/3d_f4.b2nd)" ":,:,:" "$TMP/want/3d"
ref_slice "$(ref_of "$R" dtypes/f8.b2nd)" ":,:" "$TMP/want/f8"
cp "$TMP/src/ndim/2d_i4.b2nd" "$S/live.b2nd"
touch -d '2020-01-01' "$S/live.b2nd"
mount_fs "$S" "$M" || exit 1

check "before: data" cmp "$M/live.b2nd/data" "$TMP/want/2d"
grep -q '"shape": \[45, 67\]' "$M/live.b2nd/meta.json" || fail "before: meta.json shape is not [45, 67]"
# Keep a file open across the change: it must go on reading the old bytes or
# fail, never mix generations.
exec 7<"$M/live.b2nd/data"

# Replaced by rename (a new inode, new size, new shape).
cp "$TMP/src/ndim/3d_f4.b2nd" "$S/.live.tmp"
mv "$S/.live.tmp" "$S/live.b2nd"
grep -q '"shape": \[23, 19, 31\]' "$M/live.b2nd/meta.json" ||
  fail "after rename: meta.json is not the new container's: $(grep '"shape"' "$M/live.b2nd/meta.json")"
check "after rename: data is the new array" cmp "$M/live.b2nd/data" "$TMP/want/3d"
[[ $(stat -c %s "$M/live.b2nd/data") == $(stat -c %s "$TMP/want/3d") ]] ||
  fail "after rename: stat size of data $(stat -c %s "$M/live.b2nd/data"), expected $(stat -c %s "$TMP/want/3d")"
[[ -e $M/live.b2nd/chunks/2.2.3 ]] || fail "after rename: chunks/2.2.3 of the new shape is missing"
[[ -e $M/live.b2nd/slices/1/66 ]] && fail "after rename: slices/1/66 of the old shape is still there"
if dd bs=4096 count=1 status=none <&7 >"$TMP/oldfd" 2>/dev/null && [[ -s $TMP/oldfd ]]; then
  n=$(stat -c %s "$TMP/oldfd")
  cmp -s "$TMP/oldfd" <(head -c "$n" "$TMP/want/2d") || cmp -s "$TMP/oldfd" <(head -c "$n" "$TMP/want/3d") ||
    fail "a file opened before the change returned bytes of neither generation"
fi
exec 7<&-

# Overwritten in place (same inode, other size).
cat "$TMP/src/dtypes/f8.b2nd" >"$S/live.b2nd"
check "after overwrite: data is the new array" cmp "$M/live.b2nd/data" "$TMP/want/f8"
grep -q '"dtype": "<f8"' "$M/live.b2nd/meta.json" || fail "after overwrite: meta.json dtype is not <f8"

# Containers come and go.
cp "$TMP/src/ndim/2d_i4.b2nd" "$S/new.b2nd"
wait_until 5 test -e "$M/new.b2nd/data" || fail "a container added to SOURCE did not appear within 5 s"
check "the added container reads right" cmp "$M/new.b2nd/data" "$TMP/want/2d"
rm "$S/new.b2nd"
wait_until 5 eval "! ls '$M' | grep -qx new.b2nd" || fail "a container removed from SOURCE is still listed after 5 s"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
