#!/usr/bin/env bash
# fuse.xarray: every source directory is a consolidated Zarr v2 group whose
# variables are its containers (README.md, "Zarr groups and xarray").
# xarray.open_zarr(DIR) with dask opens a directory of containers written
# here by c-blosc2 (1-D to 4-D, several dtypes in both byte orders, one whose
# vlmetalayer "_ARRAY_DIMENSIONS" names its axes, two sharing those names)
# as one Dataset: its variables are the containers' names without extension
# (NAME.b2nd and NAME.b2frame: .b2nd wins; a container whose name is taken
# by a directory entry is left out), their dims come from the vlmeta or are
# NAME_dim_i, their attrs are the vlmetalayers, and .compute() equals
# numpy.load(NAME.b2nd/data.npy). A sub-directory is a group of its own
# (xr.open_zarr(DIR/sub)); a directory without containers has no .zgroup.
# `ls -a` of the directory shows none of .zgroup, .zmetadata, NAME, and
# listing it opens no container (.b2ndfs/stats containers.opened stays 0);
# opening the group opens each member once. A container's own group
# names its variable after it (xr.open_zarr(NAME.b2nd)).
# Skips (77) when /dev/fuse is unusable or /usr/bin/python3 lacks numpy,
# xarray, zarr or dask (python3-xarray, python3-dask; scripts/setup.sh).
# Usage: fuse_xarray.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init xarray "$1"
if ! "$PY" -c 'import numpy, zarr, xarray, dask.array' 2>/dev/null; then
  log "SKIP: $PY lacks numpy, zarr, xarray or dask (python3-xarray, python3-dask; scripts/setup.sh)"
  exit 77
fi
require_fuse

S=$TMP/src
mkdir -p "$S/ds" "$S/ds/sub" "$S/ds/taken" "$S/empty"
# DIR/NAME DTYPE SHAPE CHUNKS BLOCKS [EXTRA OPTIONS]
while read -r name dtype shape chunks blocks extra; do
  # shellcheck disable=SC2086 # EXTRA is a list of options
  "$FIXTURE" write "$S/$name" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 4 $extra >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
done <<'EOF2'
ds/temperature.b2nd <f4 6,20,17 4,8,8 2,4,4 --dims time,lat,lon
ds/pressure.b2nd >f8 6,20,17 3,10,10 3,5,5 --dims time,lat,lon
ds/counts.b2nd <u2 30,41 16,16 8,8
ds/series.b2nd >i8 1000 128 32
ds/grid4.b2nd |i1 3,4,5,6 2,2,3,4 1,2,2,2
ds/twice.b2nd <i4 5,5 4,4 2,2
ds/twice.b2frame <f8 7,7 4,4 2,2
ds/taken.b2nd <i4 4,4 2,2 2,2
ds/words.b2nd |S4 5,5 3,3 2,2
ds/sub/inner.b2nd <f4 9,9 4,4 2,2
EOF2

M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=64M || exit 1

check "ls opens no container" "$PY" - "$M" <<'EOF2'
import json, os, sys
m = sys.argv[1]
names = sorted(os.listdir(os.path.join(m, "ds")))
want = sorted(["temperature.b2nd", "pressure.b2nd", "counts.b2nd", "series.b2nd", "grid4.b2nd",
               "twice.b2nd", "twice.b2frame", "taken.b2nd", "taken", "words.b2nd", "sub"])
opened = json.load(open(os.path.join(m, ".b2ndfs", "stats")))["containers"]["opened"]
if names != want or opened != 0:
    sys.exit(f"ls -a shows {names}, {opened} containers opened")
EOF2

check "xarray and dask open the directory as one Dataset" "$PY" - "$M" <<'EOF2'
import json
import os
import sys

import dask
import numpy as np
import xarray as xr

m = sys.argv[1]
d = os.path.join(m, "ds")
failures = []


def fail(what):
    failures.append(what)
    print("MISMATCH " + what, file=sys.stderr)


ds = xr.open_zarr(d)  # consolidated (xarray's first try), chunked with dask
want_vars = ["counts", "grid4", "pressure", "series", "temperature", "twice", "words"]
if sorted(ds.data_vars) != want_vars:
    fail(f"variables {sorted(ds.data_vars)} != {want_vars}")
opened = json.load(open(os.path.join(m, ".b2ndfs", "stats")))["containers"]["opened"]
for name in want_vars:
    v = ds[name]
    ext = ".b2nd"
    a = np.load(os.path.join(d, name + ext, "data.npy"))
    meta = json.load(open(os.path.join(d, name + ext, "meta.json")))
    if not dask.is_dask_collection(v.data):
        fail(f"{name}: not a dask array")
    got = v.compute().values
    if got.shape != a.shape or not np.array_equal(got, a.astype(a.dtype.newbyteorder("="))):
        fail(f"{name}: values differ from data.npy")
    if v.dtype != a.dtype.newbyteorder("="):
        fail(f"{name}: dtype {v.dtype} != {a.dtype}")
    dims = meta["vlmeta"].get("_ARRAY_DIMENSIONS") or [f"{name}_dim_{i}" for i in range(a.ndim)]
    if list(v.dims) != dims:
        fail(f"{name}: dims {v.dims} != {dims}")
    attrs = {k: x for k, x in meta["vlmeta"].items() if k != "_ARRAY_DIMENSIONS"}
    if dict(v.attrs) != attrs:
        fail(f"{name}: attrs {dict(v.attrs)} != {attrs}")
# Shared axis names are one dimension of the Dataset.
if ds.sizes.get("time") != 6 or ds.sizes.get("lat") != 20:
    fail(f"dataset sizes {dict(ds.sizes)}")
# The whole Dataset at once, through dask's scheduler.
total = float(ds["temperature"].sum().compute())
if not np.isclose(total, np.load(os.path.join(d, "temperature.b2nd", "data.npy")).sum(dtype=np.float64)):
    fail("dask's sum differs")
# Opening the group opened each member once (not twice.b2frame, whose name
# twice.b2nd has, nor taken.b2nd, whose name a directory has).
if opened != len(want_vars):
    fail(f"{opened} containers opened for a group of {len(want_vars)}")
# The names behind it: unlisted, but there.
for hidden in (".zgroup", ".zmetadata", "counts", "twice"):
    if not os.path.exists(os.path.join(d, hidden)) or hidden in os.listdir(d):
        fail(f"{hidden}: not found, or listed")
for absent in ("taken/.zarray", "nothing", ".zarray", "twice.b2nd/twice/.zgroup"):
    if os.path.exists(os.path.join(d, absent)):
        fail(f"{absent} exists")
zmeta = json.load(open(os.path.join(d, ".zmetadata")))
if sorted(k for k in zmeta["metadata"] if k.endswith(".zarray")) != [
        v + "/.zarray" for v in want_vars]:
    fail(f".zmetadata members {sorted(zmeta['metadata'])}")
# twice.b2nd (int32) wins over twice.b2frame.
if ds["twice"].dtype != np.int32:
    fail(f"twice is {ds['twice'].dtype}")
# A sub-directory is its own group; one without containers is none.
sub = xr.open_zarr(os.path.join(d, "sub"))
a = np.load(os.path.join(d, "sub", "inner.b2nd", "data.npy"))
if list(sub.data_vars) != ["inner"] or not np.array_equal(sub["inner"].values, a):
    fail(f"sub: {list(sub.data_vars)}")
if os.path.exists(os.path.join(m, "empty", ".zgroup")):
    fail("a directory without containers is a group")
# xarray's message for it is its own; the log says what the directory is.
try:
    xr.open_zarr(os.path.join(m, "empty"))
    fail("xr.open_zarr of a directory without containers opened")
except FileNotFoundError:
    pass
with open(os.path.join(m, ".b2ndfs", "log")) as f:
    if "empty holds no container, so it is no Zarr group" not in f.read():
        fail(".b2ndfs/log does not say that empty/ holds no container")
# A container's own group: its variable is named after it.
one = xr.open_zarr(os.path.join(d, "counts.b2nd"))
if list(one.data_vars) != ["counts"]:
    fail(f"counts.b2nd: {list(one.data_vars)}")
print(f"{len(want_vars)} variables; {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF2

unmount_fs "$M"
finish
