#!/usr/bin/env bash
# fuse.numpy: numpy reads a mount as users will (Debian's /usr/bin/python3).
# For every container: numpy.load(data.npy, mmap_mode='r') has the shape and
# dtype of meta.json and the same bytes as numpy.fromfile(data) and as the
# c-blosc2 reference; slices and a chunk read with numpy.fromfile equal the
# matching part of the array; structured and big-endian dtypes keep their
# meaning. Skips (77) only when /usr/bin/python3 has no numpy.
# Usage: fuse_numpy.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init numpy "$1"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  log "SKIP: $PY has no numpy"
  exit 77
fi
require_fuse

make_fixtures "$TMP"
R=$TMP/ref
M=$TMP/mnt
# Whole-array references from c-blosc2, one file per container.
mkdir -p "$TMP/want"
i=0
while IFS=$'\t' read -r _ _ reference _ _; do
  ndim=$(info_field "$R/$reference" ndim)
  if ((ndim == 0)); then box=-; else box=$(printf ':%.0s,' $(seq "$ndim") | sed 's/,$//'); fi
  ref_slice "$R/$reference" "$box" "$TMP/want/$i.bin"
  i=$((i + 1))
done <"$R/manifest.tsv"

mount_fs "$TMP/src" "$M" -o cache_size=64M || exit 1

check "numpy reads" "$PY" - "$M" "$R/manifest.tsv" "$TMP/want" <<'EOF'
import ast
import json
import os
import sys

import numpy as np

mount, manifest, want_dir = sys.argv[1:4]
failures = []


def fail(container, what):
    failures.append(f"{container}: {what}")
    print(f"MISMATCH {container}: {what}", file=sys.stderr)


def dtype_of(meta):
    d = meta["dtype"]
    # A dtype meta.json calls unusable (unparsable, or of another item size):
    # the files serve opaque items of the chunks' size.
    if d is None or any(n.startswith(f"dtype '{d}'") for n in meta.get("notes", [])):
        return np.dtype(f"V{meta['itemsize']}")
    if d.startswith("[") or d.startswith("{"):
        return np.dtype(ast.literal_eval(d))
    return np.dtype(d)


checked = 0
with open(manifest) as f:
    entries = [line.rstrip("\n").split("\t") for line in f if line.strip()]
for i, (rel, kind, reference, desc, itemsize) in enumerate(entries):
    base = f"{mount}/{rel}"
    with open(f"{base}/meta.json") as f:
        meta = json.load(f)
    shape = tuple(meta["shape"])
    dt = dtype_of(meta)
    if dt.itemsize != int(itemsize):
        fail(rel, f"dtype {dt} from meta.json has itemsize {dt.itemsize}, expected {itemsize}")
        continue
    a = np.load(f"{base}/data.npy", mmap_mode="r")
    if a.shape != shape:
        fail(rel, f"data.npy shape {a.shape}, meta.json says {shape}")
        continue
    if meta["dtype"] is not None and a.dtype != dt:
        fail(rel, f"data.npy dtype {a.dtype}, meta.json says {dt}")
    if a.dtype.itemsize != dt.itemsize:
        fail(rel, f"data.npy itemsize {a.dtype.itemsize}, expected {dt.itemsize}")
        continue
    if a.size and not isinstance(a, np.memmap):
        fail(rel, "numpy.load(mmap_mode='r') did not give a memmap")
    raw = np.fromfile(f"{base}/data", dtype=dt)
    if raw.size != int(np.prod(shape, dtype=np.int64)):
        fail(rel, f"data holds {raw.size} items, shape {shape} needs more or fewer")
        continue
    b = raw.reshape(shape)
    want = open(f"{want_dir}/{i}.bin", "rb").read()
    if a.tobytes() != want:
        fail(rel, "data.npy (mmap) differs from the c-blosc2 reference")
    if b.tobytes() != want:
        fail(rel, "numpy.fromfile(data) differs from the c-blosc2 reference")
    # Slices along every axis (the middle one) and the first chunk.
    for axis in range(len(shape)):
        if shape[axis] == 0:
            continue
        idx = shape[axis] // 2
        width = len(str(shape[axis] - 1))
        s = np.fromfile(f"{base}/slices/{axis}/{idx:0{width}d}", dtype=dt)
        # A list index keeps an array (a scalar of a 1-D >U array would come
        # back in native byte order).
        part = np.ascontiguousarray(np.take(a, [idx], axis=axis))
        if s.tobytes() != part.tobytes() or s.size != part.size:
            fail(rel, f"slices/{axis}/{idx:0{width}d} differs from numpy.take of data.npy")
    if len(shape) > 0 and a.size:
        cs = meta["chunkshape"]
        if kind.endswith("schunk"):
            # A plain super-chunk's chunks may differ in length (meta.json
            # gives the longest): the first one's is in the reference sidecar.
            with open(os.path.join(os.path.dirname(manifest), reference + ".json")) as f:
                cs = [json.load(f)["chunk_items"][0]]
        name = ".".join("0" for _ in shape)
        c = np.fromfile(f"{base}/chunks/{name}", dtype=dt)
        region = tuple(slice(0, min(cs[k], shape[k])) for k in range(len(shape)))
        if c.tobytes() != np.ascontiguousarray(a[region]).tobytes():
            fail(rel, f"chunks/{name} differs from data.npy[{region}]")
    checked += 1

# Meaning, not only bytes: structured and big-endian dtypes.
s = np.load(f"{mount}/dtypes/struct_i4_f8.b2nd/data.npy", mmap_mode="r")
if s.dtype != np.dtype([("a", "<i4"), ("b", "<f8")]):
    fail("dtypes/struct_i4_f8.b2nd", f"dtype {s.dtype}")
elif not np.array_equal(s["a"].ravel(), np.arange(s.size, dtype="<i4")):
    fail("dtypes/struct_i4_f8.b2nd", "field 'a' is not the linear index")
s = np.load(f"{mount}/dtypes/struct_i4_f8_bitshuffle.b2nd/data.npy", mmap_mode="r")
if not np.array_equal(s["a"], np.arange(s.size, dtype="<i4")):
    fail("dtypes/struct_i4_f8_bitshuffle.b2nd", "field 'a' is not the linear index")
for name, typestr in [("f4_be", ">f4"), ("f8_be", ">f8"), ("i2_be", ">i2"), ("c16_be", ">c16")]:
    rel = f"dtypes/{name}.b2nd"
    x = np.load(f"{mount}/{rel}/data.npy", mmap_mode="r")
    if x.dtype != np.dtype(typestr):
        fail(rel, f"dtype {x.dtype}, expected {typestr}")
        continue
    native = x.astype(x.dtype.newbyteorder("="))
    # The fixture's values are smooth and small: read with the wrong byte
    # order they would be huge or tiny.
    mags = np.abs(native.astype(np.complex128)).ravel()
    if not (np.all(np.isfinite(mags)) and mags.max() < 1e6 and mags.max() > 1):
        fail(rel, f"values look byte-swapped: max |x| = {mags.max()}")
    y = np.fromfile(f"{mount}/{rel}/data", dtype=typestr).reshape(x.shape)
    if not np.array_equal(x, y):
        fail(rel, "numpy.fromfile with the big-endian dtype differs from data.npy")
z = np.load(f"{mount}/ndim/0d_f8.b2nd/data.npy", mmap_mode="r")
if z.shape != () or z.dtype != np.dtype("<f8"):
    fail("ndim/0d_f8.b2nd", f"data.npy is {z.shape} {z.dtype}, expected () float64")
print(f"numpy: {checked} containers checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF
finish
