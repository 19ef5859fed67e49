#!/usr/bin/env bash
# fuse.damage: a damaged block costs only its own bytes, and damage is named
# as damage (README.md, "Errors").
# - One container's first block is damaged (its first stream's compressed
#   size overwritten): numpy opens data.npy with mmap_mode="r" (the .npy
#   header has a page of its own, which the kernel reads apart from the
#   block), the other blocks read right, and a read(2) that covers the header
#   and the block returns the header (short), the next one EIO.
# - Another's chunk header names filter id 90, which no c-blosc2 writes: the
#   log says the chunk is damaged, not that a plugin is missing.
# - A third's frame header names filter id 90: meta.json says the frame
#   header is damaged.
# - b2ndfs-inspect check names all three, as the mount does, and fails.
# Usage: fuse_damage.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init damage "$1"
require_fuse
INSPECT=$BUILD/src/tools/b2ndfs-inspect

S=$TMP/src
M=$TMP/mnt
mkdir -p "$S"
# 65,536 int32 in chunks of 16,384 and blocks of 2,048 items (8 KiB: two
# pages of data.npy each, page-aligned behind the 4 KiB header).
for name in intact first_block filter90 frame90; do
  "$FIXTURE" write "$S/$name.b2nd" --shape 65536 --chunks 16384 --blocks 2048 --dtype '<i4' \
    --codec lz4 >/dev/null || { fail "b2nd_fixture write $name"; finish; }
done
# damage FILE MODE: MODE "block0" overwrites the compressed size of block
# 0's first stream of chunk 0 (c-blosc2 checks it against the chunk's
# size); "filter90" sets chunk 0's first filter id to 90; "frame90" the
# frame header's first filter id.
damage() {
  "$PY" - "$1" "$2" <<'EOF'
import struct, sys
path, mode = sys.argv[1], sys.argv[2]
b = bytearray(open(path, "rb").read())
# A contiguous frame: the header (its length a big-endian int32 at 11), then
# the chunks in the order they were written.
at = struct.unpack(">i", b[11:15])[0]
flags = b[at + 2]
nbytes, blocksize, cbytes = struct.unpack("<iii", b[at + 4:at + 16])
assert nbytes == 65536 and blocksize == 8192, (nbytes, blocksize)
assert flags & 0x05 == 0x05, "no extended chunk header"
if mode == "frame90":
    # The filters: a fixext16 (0xd8) at 69, its type (the count) at 70, ids at 71.
    assert b[69] == 0xd8, hex(b[69])
    b[71] = 90
elif mode == "block0":
    bstart = struct.unpack("<i", b[at + 32:at + 36])[0]
    b[at + bstart:at + bstart + 4] = struct.pack("<i", cbytes * 4)
else:
    b[at + 16] = 90
open(path, "wb").write(b)
EOF
}
damage "$S/first_block.b2nd" block0 || fail "damaging first_block.b2nd"
damage "$S/filter90.b2nd" filter90 || fail "damaging filter90.b2nd"
damage "$S/frame90.b2nd" frame90 || fail "damaging frame90.b2nd"

# --- the mount ----------------------------------------------------------------
mount_fs "$S" "$M" || finish
"$PY" - "$M" <<'EOF' || fail "numpy over a container whose first block is damaged"
import errno, os, sys
import numpy as np
mnt = sys.argv[1]
bad = np.load(f"{mnt}/first_block.b2nd/data.npy", mmap_mode="r")
good = np.load(f"{mnt}/intact.b2nd/data.npy")
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
check(bad.shape == (65536,) and bad.dtype == np.int32, f"shape {bad.shape}, dtype {bad.dtype}")
# Every block but the first (never touch block 0 through the mapping: that
# is SIGBUS, as for any file whose page cannot be read).
check(np.array_equal(bad[2048:], good[2048:]), "blocks 1.. differ from the intact copy")
fd = os.open(f"{mnt}/first_block.b2nd/data.npy", os.O_RDONLY)
head = os.pread(fd, 8192, 0)
check(len(head) == 4096 and head[:6] == b"\x93NUMPY", f"read of header + block 0 gave {len(head)} bytes")
try:
    os.pread(fd, 4096, 4096)
    check(False, "a read at the damaged block succeeded")
except OSError as e:
    check(e.errno == errno.EIO, f"a read at the damaged block: {e}")
check(os.pread(fd, 8192, 4096 + 8192) == good[2048:4096].tobytes(), "block 1 by read(2)")
os.close(fd)
sys.exit(0 if ok else 1)
EOF
# The header flip: EIO, named as damage.
out=$(cat "$M/filter90.b2nd/chunks/0" 2>&1 >/dev/null)
grep -q 'Input/output error' <<<"$out" || fail "cat of a chunk naming filter 90: '$out'"
cmp -s "$M/filter90.b2nd/chunks/1" "$M/intact.b2nd/chunks/1" ||
  fail "chunk 1 of filter90.b2nd differs from the intact copy's"
wait_until 5 grep -q 'filter90.b2nd.*the chunk is damaged: it names filter id 90' "$M.log" ||
  fail "the log does not call filter id 90 damage: $(grep filter90 "$M.log")"
grep -q 'filter90.*never loads' "$M.log" && fail "filter id 90 logged as a missing plugin"
grep -q 'first_block.b2nd' "$M.log" || fail "the damaged block was not logged"
grep -q '"unsupported": "the frame header is damaged: it names filter id 90' "$M/frame90.b2nd/meta.json" ||
  fail "frame90.b2nd/meta.json: $(grep unsupported "$M/frame90.b2nd/meta.json")"
check "unmount" unmount_fs "$M"

# --- b2ndfs-inspect check says what the mount says ------------------------------
"$INSPECT" check "$S" >"$TMP/out" 2>"$TMP/err"
rc=$?
((rc == 1)) || fail "inspect check of damaged containers: exit $rc"
grep -q "^ok      $S/intact.b2nd\$" "$TMP/out" || fail "check: $(cat "$TMP/out")"
grep -q "^BROKEN  $S/first_block.b2nd: " "$TMP/out" || fail "check: $(cat "$TMP/out")"
grep -q "^BROKEN  $S/filter90.b2nd: .*the chunk is damaged: it names filter id 90" "$TMP/out" ||
  fail "check: $(cat "$TMP/out")"
grep -q "^BROKEN  $S/frame90.b2nd: the frame header is damaged: it names filter id 90" "$TMP/out" ||
  fail "check: $(cat "$TMP/out")"
grep -q "4 container(s), 3 broken" "$TMP/err" || fail "check: $(cat "$TMP/err")"
finish
