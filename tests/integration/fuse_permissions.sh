#!/usr/bin/env bash
# fuse.permissions: owner, group, permission bits and times of everything
# under a container come from its source (directories get x where the source
# had r), so that -o allow_other exposes nothing the source did not: an
# unprivileged user reads a 0644 container but gets EACCES on a 0640 one.
# Usage: fuse_permissions.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init permissions "$1"
require_fuse
command -v setpriv >/dev/null || { fail "setpriv is missing (util-linux)"; finish; }

make_fixtures "$TMP"
R=$TMP/ref
S=$TMP/perm
M=$TMP/mnt
mkdir -p "$S"
chmod 0755 "$S"
cp "$TMP/src/ndim/2d_i4.b2nd" "$S/open.b2nd"
cp "$TMP/src/ndim/2d_i4.b2nd" "$S/secret.b2nd"
cp "$TMP/src/ndim/2d_i4.b2nd" "$S/others.b2nd"
cp -r "$TMP/src/frames/sparse_f4.b2nd" "$S/sparse_dir.b2nd"
printf 'public\n' >"$S/public.txt"
printf 'private\n' >"$S/private.txt"
chown root:root "$S/open.b2nd" "$S/secret.b2nd"
chmod 0644 "$S/open.b2nd"
chmod 0640 "$S/secret.b2nd"
chown 1234:5678 "$S/others.b2nd"
chmod 0604 "$S/others.b2nd"
chmod 0750 "$S/sparse_dir.b2nd"
chmod 0644 "$S/public.txt"
chmod 0600 "$S/private.txt"
touch -d '2020-02-03 04:05:06' "$S/open.b2nd"
touch -d '2019-01-02 03:04:05' "$S/secret.b2nd"
touch -d '2018-07-08 09:10:11' "$S/sparse_dir.b2nd"

mount_fs "$S" "$M" -o allow_other || exit 1

# expect_attr PATH "MODE UID:GID"
expect_attr() {
  local got
  got=$(stat -c '%a %u:%g' "$M/$1" 2>&1)
  [[ $got == "$2" ]] || fail "$1: '$got', expected '$2'"
}
# Files inherit the r bits; directories get r and x where the source had r.
for f in "" /data /data.npy /meta.json /chunks/1.1 /slices/0/07 /slices/1/66; do
  if [[ -z $f ]]; then d=1; else d=0; fi
  expect_attr "open.b2nd$f" "$( ((d)) && echo 555 || echo 444) 0:0"
  expect_attr "secret.b2nd$f" "$( ((d)) && echo 550 || echo 440) 0:0"
  expect_attr "others.b2nd$f" "$( ((d)) && echo 505 || echo 404) 1234:5678"
done
for d in chunks slices slices/0 slices/1; do
  expect_attr "open.b2nd/$d" "555 0:0"
  expect_attr "secret.b2nd/$d" "550 0:0"
  expect_attr "others.b2nd/$d" "505 1234:5678"
done
# A sparse frame's source is a directory: its r bits count the same way.
expect_attr sparse_dir.b2nd "550 0:0"
expect_attr sparse_dir.b2nd/data "440 0:0"
expect_attr sparse_dir.b2nd/chunks "550 0:0"
expect_attr public.txt "444 0:0"
expect_attr private.txt "400 0:0"

# Times equal the source's mtime.
for c in open.b2nd secret.b2nd sparse_dir.b2nd; do
  want=$(stat -c %Y "$S/$c")
  for f in "" /data /data.npy /meta.json /chunks /chunks/0.0 /slices/0; do
    [[ -e $M/$c$f ]] || continue
    got=$(stat -c '%Y' "$M/$c$f")
    [[ $got == "$want" ]] || fail "$c$f: mtime $got, source $want"
    # ctime: the source's mtime, or its own ctime (both say when it changed).
    got=$(stat -c '%Z' "$M/$c$f")
    [[ $got == "$want" || $got == $(stat -c %Z "$S/$c") ]] ||
      fail "$c$f: ctime $got, source mtime $want, ctime $(stat -c %Z "$S/$c")"
  done
done

# As nobody, through allow_other.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
ref_slice "$(ref_of "$R" ndim/2d_i4.b2nd)" ":,:" "$TMP/want"
chmod 0644 "$TMP/want"
check "nobody reads open.b2nd/data" as_nobody cmp "$M/open.b2nd/data" "$TMP/want"
check "nobody reads open.b2nd/chunks/0.0" as_nobody cat "$M/open.b2nd/chunks/0.0" >/dev/null
check "nobody lists open.b2nd/slices/0" as_nobody ls "$M/open.b2nd/slices/0" >/dev/null
check "nobody reads public.txt" as_nobody cat "$M/public.txt" >/dev/null
check "nobody reads others.b2nd/data (o+r)" as_nobody cmp "$M/others.b2nd/data" "$TMP/want"
# expect_eacces DESCRIPTION CMD...: fails with "Permission denied".
expect_eacces() {
  local what=$1 out
  shift
  if out=$(as_nobody "$@" 2>&1 >/dev/null); then
    fail "nobody: $what succeeded (expected EACCES)"
  elif ! grep -q 'Permission denied' <<<"$out"; then
    fail "nobody: $what failed with '$out', expected Permission denied"
  fi
}
expect_eacces "cat secret.b2nd/data" cat "$M/secret.b2nd/data"
expect_eacces "cat secret.b2nd/meta.json" cat "$M/secret.b2nd/meta.json"
expect_eacces "ls secret.b2nd" ls "$M/secret.b2nd"
expect_eacces "cat secret.b2nd/chunks/0.0" cat "$M/secret.b2nd/chunks/0.0"
expect_eacces "cat sparse_dir.b2nd/data" cat "$M/sparse_dir.b2nd/data"
expect_eacces "cat private.txt" cat "$M/private.txt"
# The group of a 0640 file may read: nobody in group 0 may.
check "uid 65534 in group 0 reads secret.b2nd/data" \
  setpriv --reuid=65534 --regid=0 --clear-groups -- cmp "$M/secret.b2nd/data" "$TMP/want"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
unmount_fs "$M"

# Without allow_other, other users cannot enter the mount at all.
M2=$TMP/mnt2
if mount_fs "$S" "$M2"; then
  expect_eacces "stat of a mount without allow_other" stat "$M2/open.b2nd/data"
  check "root reads the mount without allow_other" cmp "$M2/open.b2nd/data" "$TMP/want"
fi
finish
