#!/usr/bin/env bash
# fuse.preview: preview.png and preview/A/IDX.png (README.md, "Previews")
# through a real mount, decoded by two independent readers, GDAL's PNG driver
# (libpng) and ImageMagick (`convert PNG gray:-`), and compared pixel for
# pixel with the scaling computed here in NumPy from the container's own
# data.npy: per slice, the 0.5th and 99.5th percentiles of its finite items
# as float64 (numpy.percentile, method linear; slices of more than 2^22
# pixels: of a[::s, ::s]), floor((v - lo) / (hi - lo) * 255 + 0.5) between
# them, 0 at or below lo and for NaN, 255 at or above hi, all 0 when hi <= lo;
# bool False 0, True 255. Arrays written here by c-blosc2: float32 with NaN
# (2-D and 3-D), float16, float64, uint16, int8, big-endian int64, uint64,
# bool, a constant array (b2nd_full) and an all-NaN one, a 4-D array
# (preview.png only: the middle index of the two leading axes), a 2100x2100
# array (sampled percentiles, several IDAT blocks), and 1-D, complex and
# string arrays (absent, with meta.json's reason). Also: every PNG's size is
# 75 + 17 * ceil(h * (w + 1) / 65535) + h * (w + 1), equal to stat's and
# meta.json's; its chunks' CRC-32 and the zlib stream's Adler-32 are checked
# here (zlib.decompress of the IDATs); reads at odd offsets and lengths give
# the same bytes; preview/A/ names are padded as in slices/ and unpadded ones
# are found; `ls` of a container lists preview.png and preview.
# Skips (77) when /dev/fuse is unusable or a reader is missing
# (python3-gdal, imagemagick; scripts/setup.sh installs them).
# Usage: fuse_preview.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init preview "$1"
if ! "$PY" -c 'import numpy; from osgeo import gdal' 2>/dev/null; then
  log "SKIP: $PY lacks numpy or GDAL (python3-gdal; scripts/setup.sh installs it)"
  exit 77
fi
IM_CONVERT=/usr/bin/convert
if ! command -v "$IM_CONVERT" >/dev/null; then
  log "SKIP: $IM_CONVERT is missing (imagemagick; scripts/setup.sh installs it)"
  exit 77
fi
require_fuse

S=$TMP/src
mkdir -p "$S"
# NAME DTYPE SHAPE CHUNKS BLOCKS [EXTRA OPTIONS]
while read -r name dtype shape chunks blocks extra; do
  # shellcheck disable=SC2086 # EXTRA is a list of options
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 3 $extra >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
done <<'EOF2'
f4nan_2d <f4 40,57 16,16 8,8 --nan-fill 5:30,10:50
f4nan_3d <f4 7,20,17 4,8,8 2,4,4 --nan-fill 1:6,3:18,:
f2_3d <f2 6,20,17 4,8,8 2,4,4
f8be_2d >f8 33,21 16,16 8,8
u2_2d <u2 300,400 64,64 16,16
i1_3d |i1 7,9,11 4,4,4 2,2,2
i8be_2d >i8 25,31 8,8 4,4
u8_3d <u8 3,12,10 2,8,8 1,4,4
b1_2d |b1 20,30 8,8 4,4
b1_3d |b1 5,6,7 4,4,4 2,2,2
f4_4d <f4 3,4,10,12 2,2,8,8 1,2,4,4
big_2d |u1 2100,2100 512,512 128,128
i4_1d <i4 100 32 8
c8_2d <c8 10,12 8,8 4,4
EOF2
"$FIXTURE" write "$S/const_2d.b2nd" --dtype '<i4' --shape 11,13 --chunks 8,8 --blocks 4,4 \
  --nan-fill 0:0,0:0 >/dev/null 2>&1 && fail "--nan-fill accepted an int dtype"
# A constant array: an int array whose every value is one (b2nd_full in the
# fixture set), and a string array.
make_fixtures "$TMP/set"

M=$TMP/mnt
mount_fs "$TMP" "$M" -o cache_size=64M || exit 1

check "previews decode to the NumPy scaling" "$PY" - "$M" "$IM_CONVERT" <<'EOF2'
import json
import math
import os
import subprocess
import sys
import zlib

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
mount, convert = sys.argv[1], sys.argv[2]
failures = []
count = {"png": 0, "absent": 0}


def fail(what):
    failures.append(what)
    print("MISMATCH " + what, file=sys.stderr)


def expected(a):
    """The gray levels of 2-D slice a, as README.md, "Previews" says."""
    v = a.astype(np.float64)
    if a.dtype == np.bool_:
        return np.where(a, 255, 0).astype(np.uint8)
    h, w = v.shape
    step = 1
    while math.ceil(h / step) * math.ceil(w / step) > (1 << 22):
        step += 1
    sample = v[::step, ::step]
    finite = sample[np.isfinite(sample)]
    if finite.size == 0:
        return np.zeros(v.shape, np.uint8)
    lo, hi = np.percentile(finite, [0.5, 99.5])
    if not hi > lo:
        return np.zeros(v.shape, np.uint8)
    with np.errstate(invalid="ignore"):
        t = np.floor((v - lo) / (hi - lo) * 255.0 + 0.5)
        out = np.where(np.isnan(v) | (v <= lo), 0, np.where(v >= hi, 255, t))
    return out.astype(np.uint8)


def png_structure(path, h, w):
    """Chunk CRCs, IHDR, and the zlib stream (its Adler-32) by hand."""
    data = open(path, "rb").read()
    filtered = h * (w + 1)
    want = 75 + 17 * -(-filtered // 65535) + filtered
    if len(data) != want or os.stat(path).st_size != want:
        fail(f"{path}: {len(data)} bytes, stat {os.stat(path).st_size}, formula {want}")
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: no PNG signature")
        return
    pos, idat, types = 8, b"", []
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc = int.from_bytes(data[pos + 8 + n:pos + 12 + n], "big")
        if zlib.crc32(kind + body) != crc:
            fail(f"{path}: bad CRC in a {kind} chunk at {pos}")
        if kind == b"IHDR":
            if (int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big")) != (w, h) \
                    or body[8:] != b"\x08\x00\x00\x00\x00":
                fail(f"{path}: IHDR {body.hex()}")
        if kind == b"IDAT":
            idat += body
        types.append(kind)
        pos += 12 + n
    if types[0] != b"IHDR" or types[-1] != b"IEND":
        fail(f"{path}: chunks {types[:3]}...{types[-2:]}")
    raw = zlib.decompress(idat)  # checks the Adler-32
    rows = np.frombuffer(raw, np.uint8).reshape(h, w + 1)
    if rows[:, 0].any():
        fail(f"{path}: a row's filter byte is not 0")
    return rows[:, 1:], data


def check_png(path, want):
    h, w = want.shape
    parsed = png_structure(path, h, w)
    if parsed is None:
        return
    rows, data = parsed
    g = gdal.Open(path).ReadAsArray()
    im = subprocess.run([convert, "png:" + path, "-depth", "8", "gray:-"],
                        check=True, capture_output=True).stdout
    im = np.frombuffer(im, np.uint8).reshape(h, w)
    for who, got in (("zlib", rows), ("GDAL", g), ("ImageMagick", im)):
        if got.shape != want.shape or not np.array_equal(got, want):
            bad = np.argwhere(got != want)[:3] if got.shape == want.shape else got.shape
            fail(f"{path}: {who} differs from NumPy's scaling at {bad}")
    # Reads at odd offsets and lengths, across the end.
    with open(path, "rb") as f:
        for off, n in ((1, 7), (46, 3), (47, 20), (60, 65550), (len(data) - 30, 100),
                       (len(data) // 2, 3), (len(data) - 16, 4)):
            f.seek(off)
            if f.read(n) != data[off:off + n]:
                fail(f"{path}: read at {off} length {n} differs")
    count["png"] += 1


for name in sorted(os.listdir(os.path.join(mount, "src"))):
    c = os.path.join(mount, "src", name)
    meta = json.load(open(os.path.join(c, "meta.json")))
    files = meta["files"]
    listed = os.listdir(c)
    a = np.load(os.path.join(c, "data.npy"))
    if files["preview.png"].get("absent"):
        count["absent"] += 1
        if "preview.png" in listed or os.path.exists(os.path.join(c, "preview.png")):
            fail(f"{name}: preview.png exists though meta.json says {files['preview.png']}")
        if not name.startswith(("i4_1d", "c8_2d")):
            fail(f"{name}: preview.png absent: {files['preview.png']}")
        continue
    if "preview.png" not in listed:
        fail(f"{name}: preview.png not listed")
    whole = a
    while whole.ndim > 2:
        whole = whole[whole.shape[0] // 2]
    if files["preview.png"]["shape"] != list(whole.shape):
        fail(f"{name}: meta.json preview.png {files['preview.png']}")
    if files["preview.png"]["size"] != os.stat(os.path.join(c, "preview.png")).st_size:
        fail(f"{name}: meta.json size differs from stat")
    check_png(os.path.join(c, "preview.png"), expected(whole))
    if a.ndim != 3:
        if "preview" in listed or os.path.exists(os.path.join(c, "preview")):
            fail(f"{name}: preview/ exists for a {a.ndim}-D array")
        if "absent" not in files["preview"]:
            fail(f"{name}: meta.json has no reason for preview/")
        continue
    if "preview" not in listed or sorted(os.listdir(os.path.join(c, "preview"))) != ["0", "1", "2"]:
        fail(f"{name}: preview/ not listed as 0 1 2")
    for axis in range(3):
        d = os.path.join(c, "preview", str(axis))
        width = len(str(a.shape[axis] - 1))
        names = sorted(os.listdir(d))
        if names != [f"{i:0{width}d}.png" for i in range(a.shape[axis])]:
            fail(f"{name}: preview/{axis} lists {names}")
        for i in range(a.shape[axis]):
            check_png(os.path.join(d, f"{i:0{width}d}.png"), expected(np.take(a, i, axis=axis)))
        if not os.path.exists(os.path.join(d, f"{a.shape[axis] - 1}.png")):
            fail(f"{name}: unpadded name not found")
        if os.path.exists(os.path.join(d, f"{a.shape[axis]}.png")):
            fail(f"{name}: index past the end found")

# The fixture set: a constant array (all black), structured and string
# arrays (absent).
special = os.path.join(mount, "set", "src", "special")
for name in ("full_i2.b2nd", "nans_f4.b2nd"):
    c = os.path.join(special, name)
    a = np.load(os.path.join(c, "data.npy"))
    want = expected(a)
    if want.any():
        fail(f"{name}: the reference is not all black")
    check_png(os.path.join(c, "preview.png"), want)
print(f"{count['png']} PNGs decoded alike by zlib, GDAL and ImageMagick; "
      f"{count['absent']} absent; {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF2

unmount_fs "$M"
finish
