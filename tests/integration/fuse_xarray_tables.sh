#!/usr/bin/env bash
# fuse.xarray_tables: tables and voxel geometry as xarray sees them (README.md,
# "Tables and coordinates in xarray"), with Debian's xarray, dask and pandas.
# store_fixture --xarray writes a TreeStore (xtables.b2d) holding a group
# that is a table (/table/{id,name,score,active} of 50 rows and a 2-D pos)
# and a CTable /ct (40 physical rows, 29 live; columns x, score, a 2-D m and
# a UTF-8 column's 41 offsets txt, and pos.z); b2nd_fixture writes containers with
# voxel geometry in their vlmeta. Checked:
# - xr.open_zarr(table group): the leaves share the dimension "row" (pos its
#   first axis), to_dataframe() of the 1-D leaves has 50 rows, and
#   score.where(active).mean() equals NumPy's score[active].mean() on the
#   values c-blosc2 reads back;
# - xr.open_zarr(CTable's directory): its columns and _valid_rows share
#   "row" (txt, of another length, is left out), score.where(_valid_rows)
#   .mean() equals NumPy's, and to_dataframe() has 40 rows; its _cols/ too
#   (where txt keeps its own dimension), and _cols/pos (a nested column
#   pos.z);
# - xr.open_zarr(NAME.b2nd) of a container with spacing/origin/units: one
#   coordinate variable per axis, float64 values equal to origin +
#   arange(n) * spacing exactly, units in its attrs, the same geometry as
#   data.nhdr's space origin and directions; axis_names name the dims; a
#   container without geometry has no coordinates; zarr.open_consolidated
#   (zarr-python 2) still opens the group.
# Skips (77) when /dev/fuse is unusable or /usr/bin/python3 lacks numpy,
# xarray, pandas, zarr or dask (python3-xarray, python3-dask; scripts/setup.sh).
# Usage: fuse_xarray_tables.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init xarray_tables "$1"
if ! "$PY" -c 'import numpy, pandas, zarr, xarray, dask.array' 2>/dev/null; then
  log "SKIP: $PY lacks numpy, pandas, zarr, xarray or dask (python3-xarray, python3-dask; scripts/setup.sh)"
  exit 77
fi
require_fuse

"$BUILD/tests/fixtures/store_fixture" "$TMP" --xarray || { fail "store_fixture --xarray"; exit 1; }
S=$TMP/src
mkdir -p "$S/geo"
# NAME DTYPE SHAPE CHUNKS BLOCKS [--vlmeta ...]
while read -r name dtype shape chunks blocks vl; do
  eval "vl=($vl)"
  "$FIXTURE" write "$S/geo/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 5 "${vl[@]}" >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
done <<'EOF2'
geo_3d <f4 5,6,17 3,4,8 2,2,4 --vlmeta 'spacing=[3.0, 2, 0.5]' --vlmeta 'origin=["__tuple__", 30, 20.5, -10]' --vlmeta 'units="mm"' --vlmeta '_ARRAY_DIMENSIONS=["z", "y", "x"]'
geo_2d >i2 7,9 4,4 2,2 --vlmeta 'spacing=[0.25, 1.5]' --vlmeta 'origin=[100, -5]' --vlmeta 'axis_names=["lat", "lon"]' --vlmeta 'units=["deg", "deg"]'
geo_plain <f8 4,6 4,4 2,2 --vlmeta 'spacing=[0.1, 7]'
flat <u2 8,3 4,3 2,3
EOF2

M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=64M || exit 1

check "xarray on tables and coordinates" "$PY" - "$M" "$TMP/ref/xtables" <<'EOF2'
import json
import os
import re
import sys

import numpy as np
import xarray as xr
import zarr

m, refdir = sys.argv[1], sys.argv[2]
failures = []


def fail(what):
    failures.append(what)
    print("MISMATCH " + what, file=sys.stderr)


def ref(key):
    meta = json.load(open(os.path.join(refdir, key + ".json")))
    raw = open(os.path.join(refdir, key + ".raw"), "rb").read()
    return np.frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"])


def dims_of(ds, want):
    for name, dims in want.items():
        if name not in ds.variables:
            fail(f"{name}: not a variable ({sorted(ds.variables)})")
        elif tuple(ds[name].dims) != tuple(dims):
            fail(f"{name}: dims {ds[name].dims} != {dims}")


# A store group that is a table.
t = xr.open_zarr(os.path.join(m, "xtables.b2d", "table"))
dims_of(t, {"id": ["row"], "name": ["row"], "score": ["row"], "active": ["row"],
            "pos": ["row", "pos_dim_1"]})
if dict(t.sizes) != {"row": 50, "pos_dim_1": 3}:
    fail(f"table: sizes {dict(t.sizes)}")
df = t[["id", "name", "score", "active"]].to_dataframe()
if len(df) != 50:
    fail(f"table: to_dataframe() has {len(df)} rows, not 50")
if len(t.to_dataframe()) != 150:
    fail(f"table with pos: to_dataframe() has {len(t.to_dataframe())} rows, not 50 * 3")
score, active = ref("table/score"), ref("table/active")
# dask sums chunk by chunk, NumPy pairwise: the same up to rounding (the
# answer with a dimension per leaf was off by 3 %).
got, want = float(t.score.where(t.active).mean()), float(score[active].mean())
if not np.isclose(got, want, rtol=1e-12, atol=0):
    fail(f"table: score.where(active).mean() {got} != numpy's {want}")
if not np.array_equal(df["name"].to_numpy().astype(str), ref("table/name").astype(str)):
    fail("table: name differs from c-blosc2's read")
if not np.array_equal(t.pos.values, ref("table/pos")):
    fail("table: pos differs")

# A CTable: its directory holds its columns and _valid_rows.
ct = xr.open_zarr(os.path.join(m, "xtables.b2d", "ct"))
# txt (a UTF-8 column's 41 offsets) is not of the table's rows: left out.
if sorted(ct.data_vars) != ["_valid_rows", "m", "score", "x"]:
    fail(f"ct: variables {sorted(ct.data_vars)}")
dims_of(ct, {"x": ["row"], "score": ["row"], "_valid_rows": ["row"], "m": ["row", "m_dim_1"]})
valid, cscore = ref("ct/_valid_rows"), ref("ct/_cols/score")
got = float(ct.score.where(ct["_valid_rows"]).mean())
want = float(cscore[valid].mean())
if not np.isclose(got, want, rtol=1e-12, atol=0):
    fail(f"ct: score.where(_valid_rows).mean() {got} != numpy's {want}")
if len(ct.drop_vars("m").to_dataframe()) != 40:
    fail("ct: to_dataframe() (but the 2-D m) does not have 40 rows")
if len(ct.to_dataframe()) != 80:
    fail("ct: to_dataframe() with m (40 rows of 2) does not have 80 rows")
live = ct[["x", "score"]].where(ct["_valid_rows"], drop=True)
if live.sizes["row"] != int(valid.sum()) or not np.array_equal(live.x.values, ref("ct/_cols/x")[valid]):
    fail(f"ct: the live rows {live.sizes['row']} differ from numpy's {int(valid.sum())}")
# valid/x.npy (the store's own file of live rows) agrees.
if not np.array_equal(np.load(os.path.join(m, "xtables.b2d", "ct", "valid", "x.npy")),
                      ref("ct/_cols/x")[valid]):
    fail("ct: valid/x.npy differs")
cols = xr.open_zarr(os.path.join(m, "xtables.b2d", "ct", "_cols"))
dims_of(cols, {"x": ["row"], "score": ["row"], "m": ["row", "m_dim_1"], "txt": ["txt_dim_0"]})
if not np.array_equal(cols.m.values, ref("ct/_cols/m")):
    fail("ct/_cols: m differs")
# A nested column (pos.z) is a variable of _cols/pos, on the table's rows.
pos = xr.open_zarr(os.path.join(m, "xtables.b2d", "ct", "_cols", "pos"))
dims_of(pos, {"z": ["row"]})
if not np.array_equal(pos.z.values, ref("ct/_cols/pos/z")):
    fail("ct/_cols/pos: z differs")
# The columns are unlisted names of the table's directory.
if "x" in os.listdir(os.path.join(m, "xtables.b2d", "ct")):
    fail("ct: its column x is listed")
if os.path.exists(os.path.join(m, "xtables.b2d", "ct", "nothing")):
    fail("ct/nothing exists")

# Voxel geometry as coordinates.
def nhdr_geometry(path, ndim):
    """origin and spacing of data.nhdr's first ndim axes (a 2-D header may
    have trailing axes of length 1), in NumPy's axis order."""
    text = open(path).read()
    origin = re.search(r"space origin: \(([^)]*)\)", text)
    dirs = re.search(r"space directions: (.*)", text)
    origin = [float(x) for x in origin.group(1).split(",")]
    spacing = [max(abs(float(x)) for x in d.split(",")) for d in re.findall(r"\(([^)]*)\)", dirs.group(1))]
    return origin[:ndim][::-1], spacing[:ndim][::-1]


for name, dims, spacing, origin, units in [
        ("geo_3d", ["z", "y", "x"], [3.0, 2, 0.5], [30, 20.5, -10], ["mm"] * 3),
        ("geo_2d", ["lat", "lon"], [0.25, 1.5], [100, -5], ["deg", "deg"]),
        ("geo_plain", ["dim_0", "dim_1"], [0.1, 7], [0, 0], [None, None])]:
    d = os.path.join(m, "geo", name + ".b2nd")
    g = xr.open_zarr(d)
    a = np.load(os.path.join(d, "data.npy"))
    v = g[name]
    if list(v.dims) != dims or not np.array_equal(v.values, a.astype(a.dtype.newbyteorder("="))):
        fail(f"{name}: dims {v.dims} != {dims}, or values differ")
    if sorted(g.coords) != sorted(dims):
        fail(f"{name}: coordinates {sorted(g.coords)} != {sorted(dims)}")
    for k, dim in enumerate(dims):
        c = g[dim]
        want = origin[k] + np.arange(a.shape[k]) * spacing[k]
        if c.dtype != np.float64 or not np.array_equal(c.values, want):
            fail(f"{name}: {dim} = {c.values} != {want}")
        if c.attrs.get("units") != units[k]:
            fail(f"{name}: {dim}'s units {c.attrs.get('units')} != {units[k]}")
    # The header puts the same origin and spacing on the same axes.
    if os.path.exists(os.path.join(d, "data.nhdr")) and name != "geo_plain":
        o, s = nhdr_geometry(os.path.join(d, "data.nhdr"), a.ndim)
        if not np.allclose(o, origin) or not np.allclose(s, spacing):
            fail(f"{name}: data.nhdr says origin {o} spacing {s}")
    # zarr-python 2 opens the group, and the coordinates as arrays of it.
    z = zarr.open_consolidated(d, mode="r")
    if not np.array_equal(z[name][...], v.values) or not np.array_equal(z[dims[-1]][...], g[dims[-1]].values):
        fail(f"{name}: zarr.open_consolidated reads other values")
flat = xr.open_zarr(os.path.join(m, "geo", "flat.b2nd"))
if len(flat.coords) != 0:
    fail(f"flat: coordinates {list(flat.coords)} without geometry")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
EOF2

unmount_fs "$M"
finish
