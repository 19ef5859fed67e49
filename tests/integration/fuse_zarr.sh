#!/usr/bin/env bash
# fuse.zarr: NAME.b2nd/zarr/ (README.md, "Layout") opened by zarr-python through
# a real mount. For every container: where meta.json offers "zarr",
# zarr.open(zarr/, mode='r')[...] equals data.npy (whose bytes fuse.numpy
# compares with c-blosc2), .zarray has the layout's shape and chunks, .zattrs
# equals meta.json's "vlmeta", every chunk file listed has the FULL chunk size,
# and an edge chunk holds the array's part in place and zeros elsewhere; where
# meta.json says "absent", zarr/ is neither listed nor found. Containers: the
# b2nd_fixture make set (vlmetalayers, structured, 0-D, empty axes ...) and
# arrays written here by c-blosc2, 1-D to 4-D, with edge chunks, several
# dtypes in both byte orders. zarr/.zmetadata consolidates .zarray and
# .zattrs (zarr.open_consolidated gives the same array), .zattrs names the
# axes for xarray (_ARRAY_DIMENSIONS), and the container directory is a
# consolidated group (.zgroup, .zmetadata) whose member NAME (the container's
# name without extension: an unlisted directory of zarr/'s files) is the
# array: xarray.open_zarr(NAME.b2nd) gives the values c-blosc2 reads
# (b2nd_fixture slice) as variable NAME (consolidated=False: as zarr, the
# directory's listed member). Skips (77) when /dev/fuse is unusable
# or /usr/bin/python3 lacks numpy, zarr or xarray (scripts/setup.sh installs
# them).
# Usage: fuse_zarr.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init zarr "$1"
if ! "$PY" -c 'import numpy, zarr, xarray' 2>/dev/null; then
  log "SKIP: $PY lacks numpy, zarr or xarray (python3-zarr, python3-xarray; scripts/setup.sh)"
  exit 77
fi
require_fuse

make_fixtures "$TMP"
S=$TMP/src/zarr_written
R=$TMP/zarr_ref
mkdir -p "$S" "$R"
# NAME DTYPE SHAPE CHUNKS BLOCKS: edge chunks on most axes.
while read -r name dtype shape chunks blocks; do
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 5 >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
  ref_slice "$S/$name.b2nd" "$(sed -E 's/[0-9]+/:/g' <<<"$shape")" "$R/$name.raw"
done <<'EOF2'
i1_1d |i1 41 16 8
f8be_1d >f8 1000 128 32
f4_2d <f4 23,17 10,8 4,4
i2be_2d >i2 20,16 10,8 5,4
u1_3d |u1 5,6,7 2,4,4 1,2,2
f4be_3d >f4 6,9,11 4,4,4 2,2,3
c8_2d <c8 13,10 8,8 4,4
u2_4d <u2 3,4,5,6 2,2,3,4 1,2,2,2
i8be_4d >i8 3,5,2,7 2,2,2,3 1,2,1,3
s4_2d |S4 5,5 3,3 2,2
f8_even <f8 8,8 4,4 2,2
EOF2

M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=64M || exit 1

check "zarr reads the stores" "$PY" - "$M" <<'EOF2'
import json
import math
import os
import sys

import numpy as np
import zarr

mount = sys.argv[1]
failures = []
stats = {"stores": 0, "absent": 0, "edge": 0, "vlmeta": 0}


def fail(name, what):
    failures.append(f"{name}: {what}")
    print(f"MISMATCH {name}: {what}", file=sys.stderr)


def check_store(c, meta):
    zdir = os.path.join(c, "zarr")
    data = np.load(os.path.join(c, "data.npy"), mmap_mode="r")
    shape, chunks = meta["shape"], meta["chunkshape"]
    with open(os.path.join(zdir, ".zarray")) as f:
        zarray = json.load(f)
    if zarray["shape"] != shape or zarray["chunks"] != chunks or zarray["zarr_format"] != 2:
        fail(c, f".zarray {zarray} vs shape {shape} chunks {chunks}")
    if np.dtype(zarray["dtype"]) != data.dtype:
        fail(c, f".zarray dtype {zarray['dtype']} vs data.npy {data.dtype}")
    with open(os.path.join(zdir, ".zattrs")) as f:
        zattrs = json.load(f)
    dims = [f"dim_{i}" for i in range(len(shape))]
    if "_ARRAY_DIMENSIONS" not in meta["vlmeta"]:
        if zattrs.pop("_ARRAY_DIMENSIONS", None) != dims:
            fail(c, f".zattrs lacks _ARRAY_DIMENSIONS {dims}")
    if zattrs != meta["vlmeta"]:
        fail(c, f".zattrs {zattrs} != meta.json vlmeta {meta['vlmeta']}")
    if zattrs:
        stats["vlmeta"] += 1
    z = zarr.open(zdir, mode="r")
    if z.shape != data.shape or z.dtype != data.dtype:
        fail(c, f"zarr sees {z.shape} {z.dtype}, data.npy {data.shape} {data.dtype}")
        return
    got = z[...]
    if got.tobytes() != np.ascontiguousarray(data).tobytes():
        fail(c, "zarr's z[...] differs from data.npy")
    if {k: v for k, v in z.attrs.items() if k != "_ARRAY_DIMENSIONS"} != meta["vlmeta"]:
        fail(c, "z.attrs differs from meta.json vlmeta")
    # Every chunk file holds the full chunk; edge chunks padded with zeros.
    grid = [math.ceil(s / k) for s, k in zip(shape, chunks)]
    want_names = sorted(".".join(map(str, idx)) if idx else "0" for idx in np.ndindex(*grid))
    names = sorted(n for n in os.listdir(zdir) if not n.startswith("."))
    if names != want_names:
        fail(c, f"chunk files {names[:5]}... != {want_names[:5]}...")
    full = math.prod(chunks) * data.dtype.itemsize
    for n in names:
        size = os.stat(os.path.join(zdir, n)).st_size
        if size != full:
            fail(c, f"zarr/{n} is {size} bytes, not {full}")
    if not names or data.ndim == 0:
        return
    last = [g - 1 for g in grid]
    raw = np.fromfile(os.path.join(zdir, ".".join(map(str, last))), dtype=data.dtype)
    block = raw.reshape(chunks)
    start = [i * k for i, k in zip(last, chunks)]
    inside = tuple(slice(0, min(k, s - b)) for k, s, b in zip(chunks, shape, start))
    region = tuple(slice(b, b + i.stop) for b, i in zip(start, inside))
    if block[inside].tobytes() != np.ascontiguousarray(data[region]).tobytes():
        fail(c, "last chunk's in-array part differs from data.npy")
    mask = np.ones(chunks, dtype=bool)
    mask[inside] = False
    if mask.any():
        stats["edge"] += 1
        if raw.view(np.uint8).reshape(*chunks, -1)[mask].any():
            fail(c, "last chunk's padding is not zero")
    # Unaligned reads across the padding: the same bytes as the whole file.
    whole = raw.tobytes()
    with open(os.path.join(zdir, ".".join(map(str, last))), "rb") as f:
        for off in range(0, len(whole), max(1, len(whole) // 7)):
            f.seek(off + 1)
            part = f.read(len(whole) // 3 + 3)
            if part != whole[off + 1 : off + 1 + len(part)] or (
                off + 1 < len(whole) and not part
            ):
                fail(c, f"read at {off + 1} differs")


for root, dirs, files in os.walk(mount):
    if "meta.json" not in files:
        continue
    dirs[:] = []  # a container: its own entries are checked below
    with open(os.path.join(root, "meta.json")) as f:
        meta = json.load(f)
    if "error" in meta:
        continue
    desc = meta["files"].get("zarr")
    listed = "zarr" in os.listdir(root)
    if desc is None:
        fail(root, "meta.json files has no zarr entry")
    elif desc.get("absent"):
        stats["absent"] += 1
        if listed or os.path.exists(os.path.join(root, "zarr")):
            fail(root, f"zarr/ exists though meta.json says {desc['absent']}")
    elif not listed:
        fail(root, "zarr/ is not listed")
    else:
        stats["stores"] += 1
        try:
            check_store(root, meta)
        except Exception as e:  # a failure of this container, not of the test
            fail(root, f"{type(e).__name__}: {e}")

print(f"{stats}; {len(failures)} failures")
if stats["stores"] < 15 or stats["absent"] < 1 or stats["edge"] < 8 or stats["vlmeta"] < 1:
    fail("coverage", f"too few cases: {stats}")
sys.exit(1 if failures else 0)
EOF2

check "consolidated metadata and xarray" "$PY" - "$M/zarr_written" "$R" <<'EOF2'
import json
import os
import sys

import numpy as np
import xarray as xr
import zarr

root, refdir = sys.argv[1], sys.argv[2]
failures = []
count = 0


def fail(name, what):
    failures.append(f"{name}: {what}")
    print(f"MISMATCH {name}: {what}", file=sys.stderr)


def same(got, want):
    native = want.dtype.newbyteorder("=")
    got = np.asarray(got)
    return got.shape == want.shape and got.astype(native).tobytes() == want.astype(native).tobytes()


def load(path):
    with open(path) as f:
        return json.load(f)


for name in sorted(os.listdir(root)):
    c = os.path.join(root, name)
    meta = load(os.path.join(c, "meta.json"))
    if meta["files"]["zarr"].get("absent"):
        continue
    try:
        ref = np.fromfile(os.path.join(refdir, name[: -len(".b2nd")] + ".raw"),
                          dtype=np.dtype(meta["dtype"])).reshape(meta["shape"])
        zdir = os.path.join(c, "zarr")
        zarray, zattrs = load(os.path.join(zdir, ".zarray")), load(os.path.join(zdir, ".zattrs"))
        zmeta = load(os.path.join(zdir, ".zmetadata"))
        want = {"zarr_consolidated_format": 1, "metadata": {".zarray": zarray, ".zattrs": zattrs}}
        if zmeta != want:
            fail(c, f"zarr/.zmetadata {zmeta} != {want}")
        z = zarr.open_consolidated(zdir, mode="r")
        if not isinstance(z, zarr.Array) or not same(z[...], ref):
            fail(c, "zarr.open_consolidated(zarr/) differs from c-blosc2's read")
        # The variable is named after the container (its unlisted
        # directory holds zarr/'s files); consolidated=False lists the
        # directory and finds zarr/ instead.
        var = name[: -len(".b2nd")]
        gmeta = load(os.path.join(c, ".zmetadata"))
        want = {"zarr_consolidated_format": 1,
                "metadata": {".zgroup": {"zarr_format": 2}, var + "/.zarray": zarray,
                             var + "/.zattrs": zattrs}}
        if gmeta != want or load(os.path.join(c, ".zgroup")) != {"zarr_format": 2}:
            fail(c, f"group .zmetadata {gmeta} != {want}")
        if var in os.listdir(c) or sorted(os.listdir(os.path.join(c, var))) != sorted(
                os.listdir(zdir)):
            fail(c, f"{var}/ is listed, or differs from zarr/")
        for consolidated in (True, False):
            # xarray's defaults (mask_and_scale): .zarray's fill_value is
            # null, so no item is masked and integers stay integers.
            ds = xr.open_zarr(c, consolidated=consolidated)
            vname = var if consolidated else "zarr"
            v = ds[vname]
            if list(ds.data_vars) != [vname] or list(v.dims) != zattrs["_ARRAY_DIMENSIONS"]:
                fail(c, f"xarray sees {list(ds.data_vars)} dims {v.dims}")
            if not same(v.values, ref):
                fail(c, f"xarray (consolidated={consolidated}) differs from c-blosc2's read")
            # xarray hands out native byte order; kind and size must stay.
            if v.dtype != ref.dtype.newbyteorder("="):
                fail(c, f"xarray gives dtype {v.dtype}, c-blosc2's is {ref.dtype}")
            attrs = dict(v.attrs)
            if attrs != meta["vlmeta"]:
                fail(c, f"xarray attrs {dict(v.attrs)} != vlmeta {meta['vlmeta']}")
        count += 1
    except Exception as e:  # a failure of this container, not of the test
        fail(c, f"{type(e).__name__}: {e}")

print(f"{count} containers through xarray; {len(failures)} failures")
if count < 9:
    fail("coverage", f"only {count} containers")
sys.exit(1 if failures else 0)
EOF2

# A chunk file read with dd at an odd offset gives its bytes like cat does.
f=$M/zarr_written/f4_2d.b2nd/zarr/2.2
check "dd of an edge chunk" cmp <(dd if="$f" bs=7 skip=3 status=none) <(tail -c +22 "$f")

finish
