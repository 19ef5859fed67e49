#!/usr/bin/env bash
# fuse.images: data.tiff and images/A/IDX.{tiff,pgm} (README.md, "Layout")
# through a real mount, against c-blosc2's own reads of the same containers
# (b2nd_fixture slice). For arrays written here by c-blosc2 (2-D and 3-D, every
# integer and float type TIFF holds, both byte orders, bool, one and several
# strips per page) and the fixture set: tifffile reads data.tiff (one page,
# or shape[0] pages) and every images/A/IDX.tiff as numpy slicing of the
# reference; PGM files hold the same samples, big-endian; the names of
# images/A are padded as in slices/; stat sizes equal meta.json's and the
# bytes read; reads at odd offsets give the same bytes. libtiff's tiffinfo,
# ImageMagick's identify and convert, and netpbm's pamfile and
# pnmtoplainpnm accept the files and see the same pixels. Where meta.json
# says a kind is absent (complex, 64-bit integers, strings, structured,
# ndim other than 2/3, images/ for 2-D), it is neither listed nor found.
# Skips (77) when /dev/fuse is unusable or a reader is missing
# (scripts/setup.sh installs python3-tifffile, libtiff-tools, imagemagick,
# netpbm).
# Usage: fuse_images.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init images "$1"
if ! "$PY" -c 'import numpy, tifffile' 2>/dev/null; then
  log "SKIP: $PY lacks numpy or tifffile (python3-tifffile; scripts/setup.sh installs it)"
  exit 77
fi
# ImageMagick's own convert (not a stand-in earlier on PATH).
IM_CONVERT=/usr/bin/convert
for tool in tiffinfo identify "$IM_CONVERT" pamfile pnmtoplainpnm; do
  if ! command -v "$tool" >/dev/null; then
    log "SKIP: $tool is missing (libtiff-tools, imagemagick, netpbm; scripts/setup.sh installs them)"
    exit 77
  fi
done
require_fuse

make_fixtures "$TMP"
S=$TMP/src/images
R=$TMP/images_ref
mkdir -p "$S" "$R"
# NAME DTYPE SHAPE CHUNKS BLOCKS. u2_strips / f8_strips: pages of several
# strips (rows of 2000 and 8000 bytes, strips of about 1 MiB).
while read -r name dtype shape chunks blocks; do
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 9 >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
  box=$(sed -E 's/[0-9]+/:/g' <<<"$shape")
  ref_slice "$S/$name.b2nd" "$box" "$R/$name.raw"
done <<'EOF2'
u1_2d |u1 37,53 16,16 8,8
i1_2d |i1 20,31 8,8 4,4
u2_2d <u2 30,41 16,16 8,8
i4be_2d >i4 19,23 8,8 4,4
f4_2d <f4 25,17 10,8 5,4
u1_3d |u1 12,10,8 5,4,4 2,2,2
u2_3d <u2 5,12,9 2,5,4 1,3,2
u2be_3d >u2 4,7,11 2,4,4 1,2,2
i2_3d <i2 6,5,7 3,3,3 1,2,2
u4_3d <u4 3,9,4 2,4,4 1,2,2
f4be_3d >f4 6,9,11 4,4,4 2,2,3
f8_3d <f8 4,6,5 2,3,3 1,2,2
u2_strips <u2 3,600,1000 1,200,500 1,100,100
f8_strips <f8 300,1000 100,500 50,100
c8_2d <c8 13,10 8,8 4,4
i8_3d <i8 3,5,7 2,2,2 1,2,2
s4_3d |S4 3,3,3 2,2,2 1,1,1
f4_1d <f4 100 32 8
f4_4d <f4 2,3,4,5 2,2,2,2 1,1,1,1
EOF2

M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=64M || exit 1

check "tifffile and PGM pixels equal c-blosc2's" "$PY" - "$M" "$R" <<'EOF2'
import json
import os
import random
import sys

import numpy as np
import tifffile

mount, refdir = sys.argv[1], sys.argv[2]
failures = []
stats = {"data_tiff": 0, "pages": 0, "images": 0, "pgm": 0, "absent": 0, "strips": 0, "mm": 0}
rng = random.Random(3)


def fail(name, what):
    failures.append(f"{name}: {what}")
    print(f"MISMATCH {name}: {what}", file=sys.stderr)


def tiff_ok(dt, shape):
    kind, size = dt.kind, dt.itemsize
    typed = (kind in "iub" and size <= 4) or (kind == "f" and size in (4, 8))
    return typed and len(shape) in (2, 3) and all(shape)


def same(got, want):
    """Equal items, whatever the byte order (bool read as uint8)."""
    if want.dtype.kind == "b":
        want = want.view(np.uint8)
    native = want.dtype.newbyteorder("=")
    if got.shape != want.shape or got.dtype.kind != native.kind or got.dtype.itemsize != native.itemsize:
        return False
    return got.astype(native).tobytes() == want.astype(native).tobytes()


def check_reads(path, whole):
    """Reads at odd offsets give the bytes of the whole file."""
    with open(path, "rb") as f:
        for _ in range(12):
            off = rng.randrange(len(whole))
            n = rng.randrange(1, 70000)
            f.seek(off)
            if f.read(n) != whole[off : off + n]:
                fail(path, f"read of {n} at {off} differs")


def check_tiff(path, want, pages, big_endian):
    whole = open(path, "rb").read()
    if len(whole) != os.stat(path).st_size:
        fail(path, f"stat size {os.stat(path).st_size}, read {len(whole)}")
    check_reads(path, whole)
    with tifffile.TiffFile(path) as tif:
        if len(tif.pages) != pages:
            fail(path, f"{len(tif.pages)} pages, expected {pages}")
            return
        if tif.byteorder != (">" if big_endian else "<"):
            fail(path, f"byte order {tif.byteorder}")
        if tif.pages[0].tags["StripOffsets"].count > 1:
            stats["strips"] += 1
        got = np.stack([p.asarray() for p in tif.pages])
        if not same(got, want.reshape(got.shape)) or got.size != want.size:
            fail(path, f"pixels differ ({got.dtype} {got.shape} vs {want.dtype} {want.shape})")


def check_pgm(path, want):
    data = open(path, "rb").read()
    h, w = want.shape
    maxval = 255 if want.dtype.itemsize == 1 else 65535
    head = f"P5\n{w} {h}\n{maxval}\n".encode()
    if not data.startswith(head):
        fail(path, f"header {data[:20]!r}")
        return
    check_reads(path, data)
    got = np.frombuffer(data[len(head):], dtype=">u1" if maxval == 255 else ">u2").reshape(h, w)
    if not same(got, want):
        fail(path, "samples differ")


def check_container(c, meta, ref):
    files = meta["files"]
    dt, shape = ref.dtype, list(ref.shape)
    listed = os.listdir(c)
    want_tiff = tiff_ok(dt, shape)
    desc = files.get("data.tiff")
    if desc is None:
        fail(c, "meta.json files has no data.tiff")
    elif want_tiff == bool(desc.get("absent")):
        fail(c, f"data.tiff: {desc}, expected {'present' if want_tiff else 'absent'}")
    elif not want_tiff:
        stats["absent"] += 1
        if "data.tiff" in listed or os.path.exists(os.path.join(c, "data.tiff")):
            fail(c, f"data.tiff exists though meta.json says {desc['absent']}")
    else:
        path = os.path.join(c, "data.tiff")
        if os.stat(path).st_size != desc["size"]:
            fail(c, f"data.tiff stat {os.stat(path).st_size} != meta.json {desc['size']}")
        pages = shape[0] if len(shape) == 3 else 1
        check_tiff(path, ref, pages, dt.byteorder == ">")
        stats["data_tiff"] += 1
        stats["pages"] += pages
        if dt.byteorder == ">":
            stats["mm"] += 1
    want_images = want_tiff and len(shape) == 3
    if not want_images:
        if "images" in listed or os.path.exists(os.path.join(c, "images")):
            fail(c, "images/ exists")
        if not files.get("images", {}).get("absent"):
            fail(c, "meta.json does not say why images/ is absent")
        return
    want_pgm = dt.kind == "u" and dt.itemsize <= 2
    if sorted(os.listdir(os.path.join(c, "images"))) != ["0", "1", "2"]:
        fail(c, "images/ does not list 0 1 2")
    for axis in range(3):
        d = os.path.join(c, "images", str(axis))
        width = len(str(max(shape[axis] - 1, 0)))
        names = []
        for i in range(shape[axis]):
            if want_pgm:
                names.append(f"{i:0{width}d}.pgm")
            names.append(f"{i:0{width}d}.tiff")
        if os.listdir(d) != names:
            fail(d, f"lists {os.listdir(d)[:6]}..., expected {names[:6]}...")
        pgm_desc = files.get(f"images/{axis}/IDX.pgm", {})
        if want_pgm == bool(pgm_desc.get("absent")):
            fail(d, f"meta.json IDX.pgm: {pgm_desc}")
        # Every index of short axes; the ends and a sample of long ones.
        indices = range(shape[axis])
        if shape[axis] > 40:
            indices = sorted({0, shape[axis] - 1, *rng.sample(range(shape[axis]), 20)})
        for i in indices:
            want = np.take(ref, i, axis=axis)
            name = f"{i:0{width}d}"
            path = os.path.join(d, name + ".tiff")
            if os.stat(path).st_size != files[f"images/{axis}/IDX.tiff"]["size"]:
                fail(path, "stat size differs from meta.json")
            check_tiff(path, want, 1, dt.byteorder == ">")
            stats["images"] += 1
            if want_pgm:
                check_pgm(os.path.join(d, name + ".pgm"), want)
                stats["pgm"] += 1
            elif os.path.exists(os.path.join(d, name + ".pgm")):
                fail(d, f"{name}.pgm exists for {dt}")
        # An unpadded name is the same file.
        if width > 1:
            a = open(os.path.join(d, f"{1:0{width}d}.tiff"), "rb").read()
            if open(os.path.join(d, "1.tiff"), "rb").read() != a:
                fail(d, "1.tiff differs from its padded name")
    if os.path.exists(os.path.join(c, "images", "3")):
        fail(c, "images/3 exists")


for name in sorted(os.listdir(os.path.join(mount, "images"))):
    c = os.path.join(mount, "images", name)
    with open(os.path.join(c, "meta.json")) as f:
        meta = json.load(f)
    raw = os.path.join(refdir, name[: -len(".b2nd")] + ".raw")
    try:
        dt = np.dtype(meta["dtype"])
        ref = np.fromfile(raw, dtype=dt).reshape(meta["shape"])
        check_container(c, meta, ref)
    except Exception as e:  # a failure of this container, not of the test
        fail(c, f"{type(e).__name__}: {e}")

# The fixture set: every container whose meta.json offers data.tiff reads
# as its data.npy (which fuse.numpy compares with c-blosc2), absent ones
# are neither listed nor found.
for root, dirs, files in os.walk(mount):
    if "meta.json" not in files or root.startswith(os.path.join(mount, "images")):
        continue
    dirs[:] = []
    meta = json.load(open(os.path.join(root, "meta.json")))
    if "error" in meta:
        continue
    desc = meta["files"].get("data.tiff")
    if desc is None:
        fail(root, "meta.json files has no data.tiff")
    elif desc.get("absent"):
        if os.path.exists(os.path.join(root, "data.tiff")):
            fail(root, "data.tiff exists though absent")
        stats["absent"] += 1
    else:
        data = np.load(os.path.join(root, "data.npy"), mmap_mode="r")
        pages = data.shape[0] if data.ndim == 3 else 1
        check_tiff(os.path.join(root, "data.tiff"), np.asarray(data), pages, data.dtype.byteorder == ">")
        stats["data_tiff"] += 1

print(f"{stats}; {len(failures)} failures")
if (stats["data_tiff"] < 18 or stats["images"] < 100 or stats["pgm"] < 40 or stats["absent"] < 8
        or stats["strips"] < 2 or stats["mm"] < 3):
    fail("coverage", f"too few cases: {stats}")
sys.exit(1 if failures else 0)
EOF2

I=$M/images
# libtiff: tiffinfo reads every directory without a warning or an error.
for f in u1_2d.b2nd/data.tiff f4be_3d.b2nd/data.tiff u2_strips.b2nd/data.tiff \
  f8_3d.b2nd/images/2/4.tiff i2_3d.b2nd/images/0/1.tiff i4be_2d.b2nd/data.tiff; do
  if ! out=$(tiffinfo "$I/$f" 2>&1 >/dev/null) || [[ -n $out ]]; then
    fail "tiffinfo $f: $out"
  fi
done
pages=$(tiffinfo "$I/f4be_3d.b2nd/data.tiff" 2>/dev/null | grep -c '^TIFF Directory')
[[ $pages == 6 ]] || fail "tiffinfo sees $pages directories in f4be_3d data.tiff, expected 6"
tiffinfo "$I/u2_strips.b2nd/data.tiff" 2>/dev/null | grep -q 'Rows/Strip: 524' ||
  fail "tiffinfo: u2_strips does not have 524 rows per strip"

# ImageMagick: frames, width, height and depth of stacks and slices.
expect_identify() {  # FILE "n w h depth" (first frame; n = frames)
  local got
  got=$(identify -format '%n %w %h %z\n' "$I/$1" 2>&1 | head -n1)
  [[ $got == "$2" ]] || fail "identify $1: [$got], expected [$2]"
}
expect_identify u1_3d.b2nd/data.tiff "12 8 10 8"
expect_identify u2be_3d.b2nd/data.tiff "4 11 7 16"
expect_identify u2_2d.b2nd/data.tiff "1 41 30 16"
expect_identify u1_3d.b2nd/images/1/03.tiff "1 8 12 8"
expect_identify u2_3d.b2nd/images/2/5.pgm "1 12 5 16"

# PGM through netpbm and ImageMagick: the same samples as c-blosc2's slice.
check_pgm_tools() {  # CONTAINER AXIS INDEX
  local c=$1 axis=$2 idx=$3 f box
  f=$(ls "$I/$c/images/$axis/" | grep -E "^0*$idx\.pgm$")
  f=$I/$c/images/$axis/$f
  box=$(awk -v a="$axis" -v i="$idx" 'BEGIN { for (k = 0; k < 3; k++) printf "%s%s", (k ? "," : ""), (k == a ? i : ":") }')
  ref_slice "$S/$c" "$box" "$TMP/pgm_ref.raw"
  pamfile "$f" | grep -qE 'PGM raw, [0-9]+ by [0-9]+ +maxval (255|65535)' || fail "pamfile $f: $(pamfile "$f" 2>&1)"
  pnmtoplainpnm "$f" >"$TMP/netpbm.txt" 2>/dev/null || fail "pnmtoplainpnm $f"
  "$IM_CONVERT" "$f" -compress none pgm:"$TMP/magick.txt" 2>/dev/null || fail "convert $f"
  "$PY" - "$TMP/pgm_ref.raw" "$I/$c/meta.json" "$TMP/netpbm.txt" "$TMP/magick.txt" <<'EOF3' || fail "plain PGM values of $f differ from c-blosc2's"
import json, sys
import numpy as np
ref_path, meta_path, *plains = sys.argv[1:]
want = np.fromfile(ref_path, dtype=np.dtype(json.load(open(meta_path))["dtype"])).astype(np.int64)
for p in plains:
    tokens = open(p).read().split()
    assert tokens[0] == "P2", (p, tokens[:4])
    values = np.array([int(t) for t in tokens[4:]])
    if values.shape != want.shape or (values != want).any():
        print(f"{p}: {values[:8]} vs {want[:8]}", file=sys.stderr)
        sys.exit(1)
EOF3
}
check_pgm_tools u1_3d.b2nd 0 7
check_pgm_tools u2_3d.b2nd 2 3
check_pgm_tools u2be_3d.b2nd 1 6

# dd across the end of the header and into the pixels reads like cat.
f=$I/f4be_3d.b2nd/data.tiff
check "dd of data.tiff at an odd offset" cmp <(dd if="$f" bs=13 skip=5 count=200 status=none) \
  <(tail -c +66 "$f" | head -c 2600)

finish
