#!/usr/bin/env bash
# fuse.dtypes: dtypes and metalayers as today's writers write them, read as
# users will (Debian's /usr/bin/python3 with numpy).
# - np.load(data.npy) gives NumPy's own dtype for U/S/structured (list and
#   dict forms, titles, sub-arrays, >U) and 16-D arrays, with the reference
#   bytes; text reads back as text;
# - a dtype that disagrees with the chunks' item size, or that b2ndfs cannot
#   parse: data is served by the item size, meta.json keeps the dtype as
#   written and says why, data.npy is |V<n>, headers and zarr/ are absent;
# - early 6-entry b2nd metalayers: served, meta.json says which layout;
# - vlmeta: msgpack values rendered losslessly ($bin, $ext, $float, $map);
# - 16-D: chunk names, slices and view/ expressions.
# Skips (77) only when /usr/bin/python3 has no numpy or /dev/fuse is unusable.
# Usage: fuse_dtypes.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init dtypes "$1"
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  log "SKIP: $PY has no numpy"
  exit 77
fi
require_fuse

make_fixtures "$TMP"
R=$TMP/ref
M=$TMP/mnt
mkdir -p "$TMP/want"
for rel in dtypes/u5.b2nd dtypes/struct_titled_offsets.b2nd dtypes/mismatch_u1_on_4byte.b2nd \
  ndim/16d_u1.b2nd meta/six_entry_dtype.b2nd.ref.b2nd meta/six_entry_header.b2nd; do
  ndim=$(info_field "$R/$rel" ndim)
  box=$(printf ':%.0s,' $(seq "$ndim") | sed 's/,$//')
  ref_slice "$R/$rel" "$box" "$TMP/want/${rel//\//_}.bin"
done

mount_fs "$TMP/src" "$M" -o cache_size=64M || exit 1

check "dtypes, metalayers and vlmeta" "$PY" - "$M" "$TMP/want" <<'PYEOF'
import ast
import json
import math
import os
import sys

import numpy as np

mount, want_dir = sys.argv[1:3]
failures = []


def fail(rel, what):
    failures.append(f"{rel}: {what}")
    print(f"MISMATCH {rel}: {what}", file=sys.stderr)


def meta(rel):
    with open(f"{mount}/{rel}/meta.json") as f:
        return json.load(f)


def want(rel):
    with open(f"{want_dir}/{rel.replace('/', '_')}.bin", "rb") as f:
        return f.read()


# NumPy's own dtypes, as str(dtype) prints them and python-blosc2 stores them.
expect = {
    "dtypes/u5.b2nd": np.dtype("<U5"),
    "dtypes/u3_be.b2nd": np.dtype(">U3"),
    "dtypes/s7_text.b2nd": np.dtype("S7"),
    "dtypes/struct_subarray.b2nd": np.dtype([("a", "<i4"), ("c", "<f4", (2, 3))]),
    "dtypes/struct_nested.b2nd": np.dtype([("n", [("x", "<i2"), ("y", ">f8")]), ("s", "S3")]),
    "dtypes/struct_titled_offsets.b2nd": np.dtype(
        {"names": ["b", "a"], "formats": [("<f4", (2,)), "<i4"], "offsets": [0, 8],
         "titles": [None, "TA"], "itemsize": 16}),
    "dtypes/struct_aligned.b2nd": np.dtype(
        {"names": ["a", "b"], "formats": ["<i4", "<f8"], "offsets": [0, 8]}, align=True),
    "dtypes/struct_title_be_u.b2nd": np.dtype([(("title A", "a"), "<i4"), ("b", ">U2")]),
    "ndim/16d_u1.b2nd": np.dtype("|u1"),
}
for rel, dt in expect.items():
    m = meta(rel)
    if m["dtype"] != str(dt) and m["dtype"] != dt.str:
        fail(rel, f"meta.json dtype {m['dtype']!r}, NumPy prints {str(dt)!r}")
    if "notes" in m and rel != "ndim/16d_u1.b2nd":
        fail(rel, f"unexpected notes {m['notes']}")
    a = np.load(f"{mount}/{rel}/data.npy", mmap_mode="r")
    if a.dtype != dt or a.dtype.descr != dt.descr:
        fail(rel, f"np.load dtype {a.dtype!r}, expected {dt!r}")
    if tuple(m["shape"]) != a.shape:
        fail(rel, f"np.load shape {a.shape}, meta.json {m['shape']}")
    raw = np.fromfile(f"{mount}/{rel}/data", dtype=dt).reshape(a.shape)
    if raw.tobytes() != a.tobytes():
        fail(rel, "data and data.npy differ")
for rel in ["dtypes/u5.b2nd", "dtypes/struct_titled_offsets.b2nd", "ndim/16d_u1.b2nd"]:
    if np.load(f"{mount}/{rel}/data.npy").tobytes() != want(rel):
        fail(rel, "data.npy differs from the c-blosc2 reference")
# Text reads back as text: non-empty words from the fixture's alphabet.
u = np.load(f"{mount}/dtypes/u5.b2nd/data.npy")
letters = set("abcdefghijklmnopqrstuvwxyz\u00e9\u03bb\u2603")
if not all(0 < len(w) <= 5 and set(w) <= letters for w in u.ravel().tolist()):
    fail("dtypes/u5.b2nd", f"not words: {u.ravel()[:5]}")
if not any(set(w) - set("abcdefghijklmnopqrstuvwxyz") for w in u.ravel().tolist()):
    fail("dtypes/u5.b2nd", "no non-ASCII character came back")
ube = np.load(f"{mount}/dtypes/u3_be.b2nd/data.npy")
if not all(0 < len(w) <= 3 and set(w) <= letters for w in ube.tolist()):
    fail("dtypes/u3_be.b2nd", f"big-endian text misread: {ube[:5]}")
s7 = np.load(f"{mount}/dtypes/s7_text.b2nd/data.npy")
if not all(0 < len(w) <= 7 and w.isalpha() for w in s7.ravel().tolist()):
    fail("dtypes/s7_text.b2nd", f"not ASCII words: {s7.ravel()[:5]}")
st = np.load(f"{mount}/dtypes/struct_titled_offsets.b2nd/data.npy")
if st["TA"].tobytes() != st["a"].tobytes():
    fail("dtypes/struct_titled_offsets.b2nd", "title TA is not field a")
if not np.all(np.isfinite(st["b"])) or np.abs(st["b"]).max() > 1e3:
    fail("dtypes/struct_titled_offsets.b2nd", "field b (offset 0) misread")

# Inconsistent or unknown dtypes: served by the chunks' item size.
for rel, dtype, itemsize in [("dtypes/mismatch_u1_on_4byte.b2nd", "|u1", 4),
                             ("dtypes/unparsable.b2nd", "my_custom<4>", 4)]:
    m = meta(rel)
    if m.get("dtype") != dtype or m.get("itemsize") != itemsize:
        fail(rel, f"meta.json dtype/itemsize {m.get('dtype')!r}/{m.get('itemsize')}")
    notes = m.get("notes", [])
    if not any(n.startswith(f"dtype '{dtype}'") and f"'|V{itemsize}'" in n for n in notes):
        fail(rel, f"meta.json does not say what is inconsistent: {notes}")
    a = np.load(f"{mount}/{rel}/data.npy", mmap_mode="r")
    if a.dtype != np.dtype(f"V{itemsize}") or list(a.shape) != m["shape"]:
        fail(rel, f"data.npy is {a.dtype} {a.shape}")
    size = os.path.getsize(f"{mount}/{rel}/data")
    if size != itemsize * int(np.prod(m["shape"])):
        fail(rel, f"data is {size} bytes")
    for name in ["data.nhdr", "data.mhd", "zarr"]:
        f = m["files"].get(name, {})
        if "absent" not in f or os.path.exists(f"{mount}/{rel}/{name}"):
            fail(rel, f"{name} should be absent with a reason: {f}")
    for name in ["data", "data.npy", "chunks"]:
        if not os.path.exists(f"{mount}/{rel}/{name}"):
            fail(rel, f"{name} missing")
rel = "dtypes/mismatch_u1_on_4byte.b2nd"
if np.fromfile(f"{mount}/{rel}/data", dtype="V4").tobytes() != want(rel):
    fail(rel, "data differs from c-blosc2's read")

# Early 6-entry metalayers.
m = meta("meta/six_entry_header.b2nd")
if m["dtype"] != "<i4" or not any("says 6 entries" in n for n in m.get("notes", [])):
    fail("meta/six_entry_header.b2nd", f"dtype {m['dtype']}, notes {m.get('notes')}")
if np.load(f"{mount}/meta/six_entry_header.b2nd/data.npy").tobytes() != want(
        "meta/six_entry_header.b2nd"):
    fail("meta/six_entry_header.b2nd", "data.npy differs from c-blosc2's read")
m = meta("meta/six_entry_dtype.b2nd")
if m.get("dtype") != "<f8" or m.get("dtype_format") is not None or not any(
        "6 entries" in n for n in m.get("notes", [])):
    fail("meta/six_entry_dtype.b2nd", f"meta.json {m.get('dtype')} {m.get('notes')}")
a = np.load(f"{mount}/meta/six_entry_dtype.b2nd/data.npy")
if a.dtype != np.dtype("<f8") or a.tobytes() != want("meta/six_entry_dtype.b2nd.ref.b2nd"):
    fail("meta/six_entry_dtype.b2nd", "data.npy differs from its 7-entry twin")

# vlmeta rendered losslessly.
v = meta("meta/vlmeta_python.b2nd")["vlmeta"]
checks = {
    "title": "Temperature (K)",
    "tags": ["a", 2, None],
    "blob": {"$bin": "AP8QgA=="},
    "array": {"$ext": 42, "data": "AQIDBAU="},
    "nan": {"$float": "NaN"},
    "big": 18446744073709551615,
}
for key, value in checks.items():
    if v.get(key) != value:
        fail("meta/vlmeta_python.b2nd", f"vlmeta[{key}] = {v.get(key)!r}, expected {value!r}")
when = v.get("when", {})
if when.get("$ext") != -1 or when.get("timestamp") != "2024-01-02T03:04:05.000000006Z":
    fail("meta/vlmeta_python.b2nd", f"timestamp {when}")
attrs = v.get("attrs", {})
pairs = attrs.get("$map", [])
if [p[0] for p in pairs] != ["units", "scale", "$weird", "levels"] or pairs[3][1] != {
        "$map": [[1, "low"], [2, "high"]]}:
    fail("meta/vlmeta_python.b2nd", f"attrs {attrs}")

# 16-D: names and lookups at 16 axes.
rel = "ndim/16d_u1.b2nd"
a = np.load(f"{mount}/{rel}/data.npy")
m = meta(rel)
if m["ndim"] != 16 or a.ndim != 16:
    fail(rel, f"ndim {m['ndim']} / {a.ndim}")
chunks = sorted(os.listdir(f"{mount}/{rel}/chunks"))
grid = [-(-s // c) for s, c in zip(m["shape"], m["chunkshape"])]
if len(chunks) != int(np.prod(grid)) or any(len(c.split(".")) != 16 for c in chunks):
    fail(rel, f"chunks/ lists {len(chunks)} names, grid {grid}")
last = ".".join(str(g - 1) for g in grid)
box = tuple(slice((g - 1) * c, None) for g, c in zip(grid, m["chunkshape"]))
if np.fromfile(f"{mount}/{rel}/chunks/{last}", dtype="u1").tobytes() != a[box].tobytes():
    fail(rel, f"chunks/{last} differs")
if sorted(os.listdir(f"{mount}/{rel}/slices")) != sorted(str(i) for i in range(16)):
    fail(rel, "slices/ does not list 16 axes")
s = np.fromfile(f"{mount}/{rel}/slices/15/2", dtype="u1")
if s.tobytes() != np.ascontiguousarray(a[..., 2]).tobytes():
    fail(rel, "slices/15/2 differs")
expr = "1,...,::2,-1"
v16 = np.load(f"{mount}/{rel}/view/{expr}.npy")
if v16.shape != a[1, ..., ::2, -1].shape or v16.tobytes() != np.ascontiguousarray(
        a[1, ..., ::2, -1]).tobytes():
    fail(rel, f"view/{expr}.npy differs from numpy")
for name in ["data.hdr", "data.nii"]:  # NRRD allows 16 axes
    if "absent" not in m["files"].get(name, {}):
        fail(rel, f"{name} should be absent at 16-D with a reason")
print(f"dtypes: {len(failures)} failures")
sys.exit(1 if failures else 0)
PYEOF
finish
