#!/usr/bin/env bash
# fuse.inodes: every path of a mount has an inode number of its own
# (README.md, "Inode numbers"). A source of 50,000 empty files in 40
# directories, beside a container: `find MNT -printf '%i\n' | sort | uniq -d`
# is empty, readdir's d_ino is stat's st_ino, and the source's names are
# numbered above 2^32 by default, below with -o ino32 (names inside
# containers are below 2^32 either way). `.b2ndfs/stats` counts the names
# numbered (inode_numbers.paths) and what they cost (.bytes: under 40 bytes
# a name). The same at 200,000 names, without a mount: inode_numbers_test
# (the table, and a walk through vfs::Filesystem).
# Usage: fuse_inodes.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init inodes "$1"
require_fuse

DIRS=40
PER_DIR=1250
S=$TMP/src
mkdir -p "$S"
t0=$(now)
"$PY" - "$S" "$DIRS" "$PER_DIR" <<'EOF' || { fail "cannot make the source"; exit 1; }
import os, sys
root, dirs, per_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    path = os.path.join(root, f"d{d:02d}")
    os.mkdir(path)
    for f in range(per_dir):
        os.close(os.open(os.path.join(path, f"f{f:04d}"), os.O_CREAT | os.O_WRONLY, 0o644))
EOF
"$FIXTURE" write "$S/a.b2nd" --dtype '<f4' --shape 20,30 --chunks 10,10 --blocks 5,5 --seed 3 \
  >/dev/null || {
  fail "b2nd_fixture write"
  exit 1
}
log "source: $((DIRS * PER_DIR)) files in $(elapsed "$t0") s"

# check_numbers MNT MODE: the walk's numbers are unique; MODE wide or narrow.
check_numbers() {
  local m=$1 mode=$2 t0 names dups
  t0=$(now)
  find "$m" -printf '%i %p\n' >"$TMP/find.$mode" 2>"$TMP/find.err" ||
    fail "find $m: $(head -c 300 "$TMP/find.err")"
  names=$(wc -l <"$TMP/find.$mode")
  log "$mode: find of $names names in $(elapsed "$t0") s"
  ((names > DIRS * PER_DIR)) || fail "$mode: find saw $names names"
  dups=$(cut -d' ' -f1 "$TMP/find.$mode" | sort | uniq -d | head -n 3)
  [[ -z $dups ]] || fail "$mode: numbers shared by two names: $(grep -E "^(${dups//$'\n'/|}) " "$TMP/find.$mode" | head -n 6)"
  "$PY" - "$m" "$mode" <<'EOF' || fail "$mode: numbers out of their range"
import os, sys
mnt, mode = sys.argv[1], sys.argv[2]
bad = []
for d in ["", "d00", "d39", "a.b2nd", "a.b2nd/chunks"]:
    for e in os.scandir(os.path.join(mnt, d)):
        st = os.stat(e.path)
        inside = d.startswith("a.b2nd")
        if e.inode() != st.st_ino:
            bad.append(f"{d}/{e.name}: d_ino {e.inode()}, st_ino {st.st_ino}")
        elif (inside or mode == "narrow") != (st.st_ino < 2**32):
            bad.append(f"{d}/{e.name}: {st.st_ino}")
print("\n".join(bad[:5]))
sys.exit(1 if bad else 0)
EOF
  local paths bytes
  paths=$(stats_field "$m" inode_numbers.paths)
  bytes=$(stats_field "$m" inode_numbers.bytes)
  log "$mode: $paths names numbered, $bytes bytes"
  ((paths >= DIRS * PER_DIR && paths < DIRS * PER_DIR + 100)) ||
    fail "$mode: inode_numbers.paths is $paths"
  ((bytes < 40 * paths)) || fail "$mode: inode_numbers.bytes is $bytes for $paths names"
}

M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=64M || exit 1
check_numbers "$M" wide
# Stable while mounted: a second walk gives every name the same number.
find "$M" -printf '%i %p\n' >"$TMP/find.again" 2>/dev/null
cmp -s <(sort -k2 "$TMP/find.wide") <(sort -k2 "$TMP/find.again") ||
  fail "a second walk gave other numbers: $(diff <(sort -k2 "$TMP/find.wide") <(sort -k2 "$TMP/find.again") | head -n 4)"
check "unmount" unmount_fs "$M"

M32=$TMP/mnt32
mount_fs "$S" "$M32" -o cache_size=64M,ino32 || exit 1
check_numbers "$M32" narrow
check "unmount ino32" unmount_fs "$M32"
finish
