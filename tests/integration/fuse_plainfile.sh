#!/usr/bin/env bash
# fuse.plainfile: a plain (non-container) file of SOURCE that is rewritten
# while mounted shows its new content on the next open, even when its size
# stays the same and its mtime stays in the same second (README.md, "Layout":
# other files appear unchanged; "Containers that change": a plain file that
# is rewritten is seen afresh on its next open). Variants, each run several
# times:
#   - rewritten in place, same size, mtime moved within the same second;
#   - rewritten in place, same size, mtime put back exactly (only ctime
#     tells; a rewrite that keeps mtime is what rsync -t or tar -x do);
#   - replaced by rename with a file of the same size and the same mtime.
# Each time, the mounted file is read before the change, so the kernel holds
# its pages and attributes.
# Usage: fuse_plainfile.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lifecycle_init plainfile "$1"
require_fuse

ROUNDS=${B2NDFS_PLAINFILE_ROUNDS:-9}
S=$TMP/src
M=$TMP/mnt
V=$TMP/versions
mkdir -p "$S" "$V"

# Versions of the same size (192 KiB: more than one read-ahead window) that
# differ everywhere: version k is a deterministic byte stream seeded by k.
make_version() {
  "$PY" -c '
import random, sys
r = random.Random(int(sys.argv[1]))
sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(192 * 1024)))' "$1" >"$V/$1"
}
for k in 0 1 2 3; do make_version "$k"; done
cp "$V/0" "$S/notes.dat"
printf 'short notes, version 0\n' >"$S/notes.txt"
mount_fs "$S" "$M" || exit 1

same_bytes() {
  cmp -s "$2" "$3" || {
    fail "$1: $2 does not read as $3 ($(cmp "$2" "$3" 2>&1 | head -c 200))"
    return 1
  }
}

# mtime_ns FILE / set_mtime FILE SECONDS.NANOSECONDS
mtime_ns() { stat -c %.9Y "$1"; }
set_mtime() { touch -m -d "@$2" "$1"; }

# same_second MTIME: an mtime in the same second as MTIME but another
# nanosecond.
same_second() {
  local sec=${1%.*} ns=${1#*.}
  printf '%s.%09d' "$sec" $(((10#$ns + 500000000) % 1000000000))
}

current=0
for ((round = 1; round <= ROUNDS; round++)); do
  next=$(((current + 1) % 4))
  variant=$((round % 3))
  # The kernel holds the pages and attributes of the current version.
  same_bytes "round $round: before" "$M/notes.dat" "$V/$current"
  stat "$M/notes.dat" >/dev/null
  old=$(mtime_ns "$S/notes.dat")
  case $variant in
    1)
      what="in place, same size, mtime in the same second"
      dd if="$V/$next" of="$S/notes.dat" conv=notrunc status=none
      set_mtime "$S/notes.dat" "$(same_second "$old")"
      ;;
    2)
      what="in place, same size, same mtime"
      dd if="$V/$next" of="$S/notes.dat" conv=notrunc status=none
      set_mtime "$S/notes.dat" "$old"
      ;;
    0)
      what="replaced by rename, same size, same mtime"
      cp "$V/$next" "$S/.notes.tmp"
      set_mtime "$S/.notes.tmp" "$old"
      mv -f "$S/.notes.tmp" "$S/notes.dat"
      ;;
  esac
  new=$(mtime_ns "$S/notes.dat")
  [[ ${new%.*} == "${old%.*}" ]] || fail "setup: mtime moved to another second ($old -> $new)"
  [[ $(stat -c %s "$S/notes.dat") == $((192 * 1024)) ]] || fail "setup: size changed"
  same_bytes "round $round ($what)" "$M/notes.dat" "$V/$next"
  # And again through another open, and a read in the middle.
  cmp -s <(dd if="$M/notes.dat" bs=4096 skip=20 count=3 status=none) \
    <(dd if="$V/$next" bs=4096 skip=20 count=3 status=none) ||
    fail "round $round ($what): a read in the middle is not the new version"
  current=$next
done

# A small text file, rewritten in place with the same length and mtime.
old=$(mtime_ns "$S/notes.txt")
grep -q 'version 0' "$M/notes.txt" || fail "notes.txt: $(cat "$M/notes.txt")"
printf 'short notes, version 1\n' | dd of="$S/notes.txt" conv=notrunc status=none
set_mtime "$S/notes.txt" "$old"
grep -q 'version 1' "$M/notes.txt" || fail "notes.txt rewritten in place: still $(cat "$M/notes.txt")"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
