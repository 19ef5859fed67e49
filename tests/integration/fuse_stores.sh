#!/usr/bin/env bash
# fuse.stores: python-blosc2's stores (README.md, "Stores") through a real
# mount. store_fixture writes a TreeStore directory (tree.b2d: external
# leaves, an embed.b2e with embedded leaves, attributes, a C2Array
# reference) and EmbedStores (.b2e) with c-blosc2; make_b2z.py zips the
# .b2d as python-blosc2's DictStore.to_b2z does (tree.b2z; tree64.b2z with
# ZIP64 local headers) and writes hostile archives. Checks: every leaf of
# tree.b2z, tree64.b2z, tree.b2d and emb.b2e is a container directory whose
# data.npy (numpy.load, mmap), zarr/ (zarr.open) and the directory itself
# (xarray.open_zarr) give the bytes c-blosc2 reads from the same leaf's
# frame; the store's meta.json holds its attributes (/__vlmeta__), a group's
# meta.json the group's, and the C2Array reference; a CTable (/table: _meta
# of kind "ctable", _valid_rows, _cols/x, _cols/y, _cols/pos/z) has a
# columns.json with its columns' names, dtypes and shapes, its rows and live
# rows as numpy counts them, and its schema; each table's valid/NAME.npy
# (tree's /table, tables.b2d and tables.b2z: /mixed with bool, |S3, <U2,
# 2-D and UTF-8 columns, /big with 200,000 rows) is numpy's col[valid] of
# the leaves' data.npy, at any offset, and a UTF-8 column has none; store
# directories and groups open with xarray.open_zarr; stores list as
# directories; hostile stores (not a zip, no embed.b2e, a central directory
# claiming 65535 members) hold only a meta.json {"error": ...}, and hostile
# members (deflated, a local header past the end, overlapping members, embed
# map ranges outside the stream) are directories whose meta.json says why,
# a table whose _valid_rows are not bools says so in its columns.json,
# while their intact neighbours still read right; replacing tree.b2z by
# rename is seen by the next open while an open leaf file keeps its bytes.
# A .b2z mounted as SOURCE shows its leaves at the root. One memory budget
# (local only): a hostile .b2z whose index would take more than 64 MiB (70,000
# members of 200-character names) and a .b2e of 64 MiB embed chunks: `ls -l`
# of their directories 100 times parses each index once
# (stores.indexes_parsed), the .b2z holds only meta.json saying why, the
# .b2e's leaves read right, and the daemon's peak RSS (VmHWM) stays within
# cache.memory_bound_bytes (cache_size + the pin budget + the documented
# overhead). Also run through http, s3 and az (lib.sh's B2NDFS_ITEST_THROUGH).
# Skips (77) when /dev/fuse is unusable or /usr/bin/python3 lacks numpy,
# zarr or xarray.
# Usage: fuse_stores.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init stores "$1"
if ! "$PY" -c 'import numpy, zarr, xarray' 2>/dev/null; then
  log "SKIP: $PY lacks numpy, zarr or xarray"
  exit 77
fi
require_fuse
STORE_FIXTURE=$BUILD/tests/fixtures/store_fixture
[[ -x $STORE_FIXTURE ]] || { fail "$STORE_FIXTURE is not built"; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

"$STORE_FIXTURE" "$TMP" || { fail "store_fixture"; exit 1; }
"$PY" "$HERE/../fixtures/make_b2z.py" "$TMP/src/tree.b2d" "$TMP/src" || {
  fail "make_b2z.py"
  exit 1
}
# tables.b2z: tables.b2d zipped as DictStore.to_b2z does (embed.b2e last).
"$PY" - "$TMP/src/tables.b2d" "$TMP/src/tables.b2z" <<'EOF2' || { fail "tables.b2z"; exit 1; }
import os, sys, zipfile
store, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
    for root, _, files in sorted(os.walk(store)):
        for f in sorted(files):
            p = os.path.join(root, f)
            if os.path.relpath(p, store) != "embed.b2e":
                zf.write(p, os.path.relpath(p, store))
    zf.write(os.path.join(store, "embed.b2e"), "embed.b2e")
EOF2
M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=64M || exit 1

check "stores list as directories" test -d "$M/tree.b2z" -a -d "$M/emb.b2e" -a -d "$M/tree.b2d"
check "readers see every leaf as c-blosc2 reads it" "$PY" - "$M" "$TMP/ref" <<'EOF2'
import json
import os
import sys

import numpy as np
import xarray as xr
import zarr

mnt, refdir = sys.argv[1], sys.argv[2]
failures = []


def fail(what, why):
    failures.append(what)
    print(f"FAIL {what}: {why}")


def ref(store, key):
    meta = json.load(open(os.path.join(refdir, store, key + ".json")))
    raw = open(os.path.join(refdir, store, key + ".raw"), "rb").read()
    return np.frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"])


leaves = {
    "tree": ["arr2d", "group/temp", "sc", "small", "group/sub/emb3d", "table/_valid_rows",
             "table/_cols/x", "table/_cols/y", "table/_cols/pos/z"],
    "emb": ["node1", "dir1/node2"],
}
count = 0
for store, names in [("tree.b2z", "tree"), ("tree64.b2z", "tree"), ("tree.b2d", "tree"),
                     ("emb.b2e", "emb")]:
    for key in leaves[names]:
        d = os.path.join(mnt, store, key)
        want = ref(names, key)
        try:
            a = np.load(os.path.join(d, "data.npy"), mmap_mode="r")
            if a.shape != want.shape or a.tobytes() != want.tobytes():
                fail(d, "data.npy differs from c-blosc2's read")
            if open(os.path.join(d, "data"), "rb").read() != want.tobytes():
                fail(d, "data differs from c-blosc2's read")
            meta = json.load(open(os.path.join(d, "meta.json")))
            if "zarr" in meta["files"] and "absent" not in meta["files"]["zarr"]:
                z = zarr.open(os.path.join(d, "zarr"), mode="r")
                if not np.array_equal(z[...], want):
                    fail(d, "zarr/ differs from c-blosc2's read")
                ds = xr.open_zarr(d, consolidated=True)
                # The variable is named after the container (README.md,
                # "Zarr groups and xarray"): a leaf's name.
                if not np.array_equal(ds[os.path.basename(d)].values, want):
                    fail(d, "xarray differs from c-blosc2's read")
            count += 1
        except Exception as e:
            fail(d, f"{type(e).__name__}: {e}")

root = json.load(open(os.path.join(mnt, "tree.b2z", "meta.json")))
want_root = {"store": "b2z", "type": "TreeStore", "leaves": 10,
             "vlmeta": {"n": 3, "title": "fixture store"},
             "embed_vlmeta": {"_object_registry": {"/table": {
                 "kind": "ctable", "version": 1, "layout": "inline-tree-subtree"}}},
             "references": {"/remote": {"urlbase": "https://cat2.cloud/demo",
                                        "path": "@public/examples/ds-1d.b2nd"}}}
if root != want_root:
    fail("tree.b2z/meta.json", f"{root} != {want_root}")
group = json.load(open(os.path.join(mnt, "tree.b2d", "group", "meta.json")))
if group != {"vlmeta": {"units": "K"}}:
    fail("tree.b2d/group/meta.json", group)
# The CTable at /table: columns.json from its _meta, _valid_rows and _cols.
valid = ref("tree", "table/_valid_rows")
for store in ("tree.b2z", "tree64.b2z", "tree.b2d"):
    cols = json.load(open(os.path.join(mnt, store, "table", "columns.json")))
    want_cols = [{"name": "pos.z", "path": "_cols/pos/z", "dtype": "<f4", "shape": [12],
                  "valid_file": "valid/pos.z.npy"},
                 {"name": "x", "path": "_cols/x", "dtype": "<i8", "shape": [12],
                  "valid_file": "valid/x.npy"},
                 {"name": "y", "path": "_cols/y", "dtype": "<f8", "shape": [12],
                  "valid_file": "valid/y.npy"}]
    if (cols["rows"] != len(valid) or cols["valid_rows"] != int(np.count_nonzero(valid))
            or cols["columns"] != want_cols or cols["table"] != "/table"):
        fail(f"{store}/table/columns.json", cols)
    schema = json.loads(cols["schema"])
    if [c["name"] for c in schema["columns"]] != ["x", "y", "pos.z"]:
        fail(f"{store}/table/columns.json", f"schema {schema}")
if sorted(os.listdir(os.path.join(mnt, "tree.b2z"))) != ["arr2d", "group", "meta.json", "sc",
                                                          "small", "table"]:
    fail("tree.b2z", f"lists {sorted(os.listdir(os.path.join(mnt, 'tree.b2z')))}")
print(f"{count} leaves read; {len(failures)} failures")
sys.exit(1 if failures or count != 29 else 0)
EOF2

# A CTable's valid/NAME.npy: the column's values at the live rows, as NumPy's
# col[valid] computes them from the leaves' data.npy; exact sizes at stat,
# reads at any offset (before anything is cached), numpy.load with mmap, and
# columns.json naming each file (or why a column has none).
check "valid/NAME.npy is numpy's col[valid]" "$PY" - "$M" <<'EOF2'
import io, json, os, random, sys
import numpy as np

mnt = sys.argv[1]
failures = []
tables = {"tree.b2z/table": ["pos.z", "x", "y"], "tree64.b2z/table": ["pos.z", "x", "y"],
          "tree.b2d/table": ["pos.z", "x", "y"], "tables.b2d/mixed": ["b", "m", "s", "u"],
          "tables.b2z/mixed": ["b", "m", "s", "u"], "tables.b2d/big": ["v", "w"],
          "tables.b2z/big": ["v", "w"]}
rng = random.Random(29)
files = 0
for table, names in tables.items():
    d = os.path.join(mnt, table)
    if sorted(os.listdir(os.path.join(d, "valid"))) != [n + ".npy" for n in names]:
        failures.append(f"{d}/valid lists {os.listdir(os.path.join(d, 'valid'))}")
        continue
    valid = np.load(os.path.join(d, "_valid_rows", "data.npy"))
    cols = {c["name"]: c for c in json.load(open(os.path.join(d, "columns.json")))["columns"]}
    for name in names:
        f = os.path.join(d, "valid", name + ".npy")
        col = np.load(os.path.join(d, "_cols", *name.split("."), "data.npy"))
        want = col[valid]
        buf = io.BytesIO()
        np.save(buf, want)
        want_bytes = buf.getvalue()
        # b2ndfs pads a non-empty array's .npy header to a page of its own
        # (README.md, "Errors"); the rest is np.save's.
        n = 10 + int.from_bytes(want_bytes[8:10], "little")
        if want.size and want_bytes[6] == 1 and n <= 4096:
            want_bytes = (want_bytes[:8] + (4086).to_bytes(2, "little") + want_bytes[10:n - 1] +
                          b" " * (4096 - n) + b"\n" + want_bytes[n:])
        fd = os.open(f, os.O_RDONLY)
        try:
            # Reads at random offsets first, while the daemon has cached nothing.
            for _ in range(40):
                at = rng.randrange(0, len(want_bytes) + 8)
                n = rng.randrange(1, 300000)
                if os.pread(fd, n, at) != want_bytes[at:at + n]:
                    failures.append(f"{f}: {n} bytes at {at}")
                    break
        finally:
            os.close(fd)
        got = np.load(f)
        mm = np.load(f, mmap_mode="r")
        if (os.stat(f).st_size != len(want_bytes) or got.dtype != want.dtype
                or got.shape != want.shape or got.tobytes() != want.tobytes()
                or mm.tobytes() != want.tobytes()):
            failures.append(f"{f}: {got.dtype} {got.shape}, not {want.dtype} {want.shape}")
        if cols.get(name, {}).get("valid_file") != f"valid/{name}.npy":
            failures.append(f"{d}/columns.json: {cols.get(name)}")
        files += 1
for store in ("tables.b2d", "tables.b2z"):
    cols = json.load(open(os.path.join(mnt, store, "mixed", "columns.json")))
    txt = [c for c in cols["columns"] if c["name"] == "txt"]
    if (len(txt) != 1 or txt[0]["valid_file"] is not None
            or "UTF-8" not in txt[0].get("valid_file_absent", "")):
        failures.append(f"{store}/mixed/columns.json: txt is {txt}")
    big = json.load(open(os.path.join(mnt, store, "big", "columns.json")))
    live = np.load(os.path.join(mnt, store, "big", "_valid_rows", "data.npy"))
    if big["rows"] != 200000 or big["valid_rows"] != int(np.count_nonzero(live)):
        failures.append(f"{store}/big/columns.json: {big['rows']}, {big['valid_rows']}")
for f in failures:
    print("FAIL", f)
print(f"{files} valid files read; {len(failures)} failures")
sys.exit(1 if failures or files != 21 else 0)
EOF2
check "a badly typed _valid_rows has no valid/" "$PY" - "$M/badtable.b2d/t" <<'EOF2'
import json, os, sys
d = sys.argv[1]
x = json.load(open(os.path.join(d, "columns.json")))["columns"][0]
ok = (not os.path.exists(os.path.join(d, "valid")) and x["valid_file"] is None
      and "not bools" in x["valid_file_absent"])
if not ok:
    print(x, os.listdir(d))
sys.exit(0 if ok else 1)
EOF2

# Store directories and groups inside them are consolidated Zarr groups too:
# each leaf is the variable of its own name (README.md, "Zarr groups and
# xarray").
check "xarray opens a store group as one Dataset" "$PY" - "$M" "$TMP/ref" <<'EOF2'
import json, os, sys
import numpy as np
import xarray as xr

mnt, refdir = sys.argv[1], sys.argv[2]


def ref(store, key):
    meta = json.load(open(os.path.join(refdir, store, key + ".json")))
    raw = open(os.path.join(refdir, store, key + ".raw"), "rb").read()
    return np.frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"])


failures = []
groups = [("tree.b2z/group", "tree", {"temp": "group/temp"}),
          ("tree.b2d/group", "tree", {"temp": "group/temp"}),
          ("tree64.b2z/group/sub", "tree", {"emb3d": "group/sub/emb3d"}),
          ("tree.b2z", "tree", {"arr2d": "arr2d", "small": "small"}),
          ("emb.b2e/dir1", "emb", {"node2": "dir1/node2"}),
          ("tables.b2z/big/_cols", "tables", {"v": "big/_cols/v", "w": "big/_cols/w"})]
for path, store, want in groups:
    try:
        ds = xr.open_zarr(os.path.join(mnt, path))
        if sorted(ds.data_vars) != sorted(want):
            failures.append(f"{path}: variables {sorted(ds.data_vars)}")
            continue
        for var, key in want.items():
            if not np.array_equal(ds[var].values, ref(store, key)):
                failures.append(f"{path}: {var} differs from c-blosc2's read")
    except Exception as e:
        failures.append(f"{path}: {type(e).__name__}: {e}")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
EOF2

# error_of PATH WORDS: PATH/meta.json is {"error": ...} mentioning WORDS, and
# the directory holds nothing else.
error_of() {
  local dir=$1 words=$2
  "$PY" - "$dir" "$words" <<'EOF2'
import json, os, sys
d, words = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(d, "meta.json")))
ok = list(meta) == ["error"] and words in meta["error"] and os.listdir(d) == ["meta.json"]
if not ok:
    print(f"{d}: {meta} lists {os.listdir(d)}; want an error about {words!r}")
sys.exit(0 if ok else 1)
EOF2
}
check "not a zip" error_of "$M/notzip.b2z" "not a zip file"
check "no embed.b2e" error_of "$M/noembed.b2z" "no embed.b2e"
check "65535 members claimed" error_of "$M/huge_count.b2z" "65535 members"
check "a deflated member" error_of "$M/deflated.b2z/arr2d" "compressed (method 8)"
check "a local header past the end" error_of "$M/offsets.b2z/arr2d" "lies past the members"
check "overlapping members" error_of "$M/overlap.b2z/arr2d" "overlap"
check "overlapping members (the other)" error_of "$M/overlap.b2z/group/temp" "names another member"
check "an embed range outside the stream" error_of "$M/bad_map.b2e/outside" "outside the embed"
check "a huge embed length" error_of "$M/bad_map.b2e/huge" "outside the embed"
check "a table whose _valid_rows are not bools" "$PY" - "$M/badtable.b2d" <<'EOF2'
import json, os, sys
d = sys.argv[1]
cols = json.load(open(os.path.join(d, "t", "columns.json")))
ok = (cols["rows"] == 12 and cols["valid_rows"] is None and "not bools" in cols["valid_rows_error"]
      and cols["schema"] == "not json" and [c["name"] for c in cols["columns"]] == ["x"]
      and not os.path.exists(os.path.join(d, "other", "columns.json")))
if not ok:
    print(cols, os.listdir(os.path.join(d, "other")))
sys.exit(0 if ok else 1)
EOF2
for s in deflated offsets overlap; do
  check "$s.b2z: intact neighbours read" cmp "$M/$s.b2z/sc/data" "$TMP/ref/tree/sc.raw"
done
check "bad_map.b2e: the intact leaf reads" cmp "$M/bad_map.b2e/good/data" "$TMP/ref/bad_map/good.raw"

# A replaced store: an open leaf file keeps its version; a new open sees the
# new archive (whose arr2d is group/temp's bytes under arr2d's name, so
# that the two versions differ). Local sources only: a remote run serves
# what was uploaded at mount.
if [[ -n ${ITEST_THROUGH:-} ]]; then finish; fi

# One memory budget: store indexes and embed units live in the block cache.
H=$TMP/hostile
"$PY" - "$H/big.b2z" "$TMP/src/emb.b2e" <<'EOF2' || { fail "big.b2z"; exit 1; }
import sys, zipfile
out, embed = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
    for i in range(70000):
        zf.writestr("k" * (200 - len(str(i))) + str(i) + ".b2nd", b"")
    zf.write(embed, "embed.b2e")
EOF2
M3=$TMP/mnt_budget
mount_fs "$H" "$M3" -o cache_size=64M || exit 1
PID3=$(daemon_pid "$M3")
parsed0=$(stats_field "$M3" stores.indexes_parsed)
t0=$(now)
for _ in $(seq 100); do
  ls -l "$M3/big.b2z" "$M3/emb64.b2e" "$M3/emb64.b2e/dir" >/dev/null || fail "ls -l"
done
parsed=$(($(stats_field "$M3" stores.indexes_parsed) - parsed0))
log "100 x ls -l of the hostile stores: $(elapsed "$t0") s, $parsed indexes parsed"
check "each store's index is parsed once" test "$parsed" -eq 2
check "an oversize index is a verdict" error_of "$M3/big.b2z" "more than the"
check "stores.indexes_oversize counts it" test "$(stats_field "$M3" stores.indexes_oversize)" -eq 1
check "a leaf before 64 MiB of zeros reads" cmp "$M3/emb64.b2e/first/data" "$TMP/ref/emb64/first.raw"
check "a leaf in the second 64 MiB chunk reads" cmp "$M3/emb64.b2e/dir/second/data" \
  "$TMP/ref/emb64/dir/second.raw"
units=$(stats_field "$M3" stores.embed_units_decompressed)
cat "$M3/emb64.b2e/first/data" "$M3/emb64.b2e/dir/second/data" >/dev/null
check "read again, the embed units come from the block cache" \
  test "$(stats_field "$M3" stores.embed_units_decompressed)" -eq "$units"
bound=$(stats_field "$M3" cache.memory_bound_bytes)
held=$(stats_field "$M3" cache.memory_held_bytes)
hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$PID3/status")
log "daemon: peak RSS $((hwm_kb / 1024)) MiB, holds $((held >> 20)) MiB; bound $((bound >> 20)) MiB"
if [[ ${B2NDFS_SANITIZED:-0} == 1 ]]; then
  log "sanitized build: RSS is reported, not bounded"
else
  check "peak RSS within cache.memory_bound_bytes" test "$((hwm_kb * 1024))" -le "$bound"
fi
check "memory_held_bytes within cache_size + the pin budget" \
  test "$held" -le "$(($(stats_field "$M3" cache.capacity_bytes) + $(stats_field "$M3" cache.pin_limit_bytes)))"
unmount_fs "$M3"

# A store as SOURCE: its leaves at the mount's root.
M2=$TMP/mnt_store
mount_fs "$TMP/src/tree.b2z" "$M2" || exit 1
check "a .b2z as SOURCE" cmp "$M2/group/temp/data" "$TMP/ref/tree/group/temp.raw"
check "its meta.json at the root" grep -q '"store": "b2z"' "$M2/meta.json"

exec 7<"$M/tree.b2z/arr2d/data"
mkdir -p "$TMP/swap"
cp -r "$TMP/src/tree.b2d" "$TMP/swap/"
cp "$TMP/src/tree.b2d/group/temp.b2nd" "$TMP/swap/tree.b2d/arr2d.b2nd"
"$PY" - "$TMP/swap/tree.b2d" "$TMP/swap/new.b2z" <<'EOF2'
import os, sys, zipfile
store, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
    for root, _, files in os.walk(store):
        for f in files:
            p = os.path.join(root, f)
            if os.path.relpath(p, store) != "embed.b2e":
                zf.write(p, os.path.relpath(p, store))
    zf.write(os.path.join(store, "embed.b2e"), "embed.b2e")
EOF2
mv "$TMP/swap/new.b2z" "$TMP/src/tree.b2z"
check "an open leaf keeps reading its version" cmp <(cat <&7) "$TMP/ref/tree/arr2d.raw"
exec 7<&-
check "a new open sees the new store" wait_until 5 cmp -s "$M/tree.b2z/arr2d/data" \
  "$TMP/ref/tree/group/temp.raw"

finish
