#!/usr/bin/env bash
# fuse.ome_zarr: NAME.b2nd/ome.zarr/ (README.md, "OME-Zarr pyramids"), an
# OME-Zarr 0.5 multiscale image computed on read, through a real mount.
# 1. Containers written here by c-blosc2, 2-D to 5-D, uint8 to float64, with
#    axis names, units, spacing and origin or without, a label image
#    (vlmeta "image-label"), and containers that get no ome.zarr (1-D, bool,
#    a chunk that is not a whole number of blocks, axes in an order OME-Zarr
#    does not allow): meta.json's files says which, and why not; only those
#    that have one list it.
# 2. Every ome.zarr/zarr.json's attributes validate against the official
#    OME-Zarr 0.5.2 schema (tests/fixtures/ngff/0.5.2/image.schema, draft
#    2020-12) with npm's ajv-cli; each level's zarr.json has the level's
#    shape, data.zarr/'s chunk and inner chunk shapes, and dimension_names
#    equal to the axes' names; scale and translation are as README says.
# 3. zarrita reads every level of every image whole; each equals NumPy's
#    reference made here from data.npy (2x block means along the space axes,
#    edges averaging the items present, integers rounded half to even, level
#    k from level k-1; stride for the label image); omero windows are the
#    0.5/99.5 percentiles of the coarsest level per channel.
# 4. @fideus-labs/ngff-zarr (npm) reads every image's multiscale metadata
#    (validated, version 0.5) and finds the same axes and datasets.
# 5. A one-inner-chunk read at level 3 (a fresh mount) computes at most the
#    blocks under it and decompresses at most the level-0 blocks under it
#    (.b2ndfs/stats reads.blocks_computed, .blocks_decompressed); reading it
#    again computes nothing.
# 6. Through a remote source (.http, .s3, .az) with disk_cache=DIR: a level-2
#    tile read by zarrita computes its blocks (reads.blocks_computed) and
#    keeps them in DIR; after an unmount, a second mount on the same DIR
#    computes none (reads.blocks_computed_from_disk instead), and both equal
#    NumPy's reference; once the object changes on the server (a new ETag),
#    the next mount computes the tile again, from the new data.
# Skips (77) when /dev/fuse is unusable, node, zarrita, ajv-cli or
# @fideus-labs/ngff-zarr is missing (in .deps/npm), or /usr/bin/python3 lacks
# numpy.
# Usage: fuse_ome_zarr.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init ome_zarr "$1"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NPM_PREFIX=${B2NDFS_NPM_PREFIX:-$HERE/../../.deps/npm}
SCHEMAS=$HERE/../fixtures/ngff/0.5.2
for p in zarrita ajv-cli @fideus-labs/ngff-zarr; do
  if ! command -v node >/dev/null || [[ ! -f $NPM_PREFIX/node_modules/$p/package.json ]]; then
    log "SKIP: node or $p is missing (scripts/setup.sh installs it into .deps/npm)"
    exit 77
  fi
done
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  log "SKIP: $PY lacks numpy"
  exit 77
fi
require_fuse

S=$TMP/src/ome
mkdir -p "$S" "$TMP/src/stats"
# NAME DTYPE SHAPE CHUNKS BLOCKS [b2nd_fixture options...]
while read -r name dtype shape chunks blocks extra; do
  eval "opts=($extra)"
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 5 "${opts[@]}" >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
done <<'EOF'
u1_2d |u1 300,200 64,64 16,16
i1_2d |i1 77,131 32,32 8,16
u2_3d <u2 40,100,90 16,32,32 8,16,16 --dims z,y,x
f4_4d <f4 3,20,70,50 1,8,32,32 1,4,16,16
i2_5d <i2 2,3,9,33,40 1,1,8,16,16 1,1,4,8,8
f8_named <f8 50,60,70 16,16,16 8,8,8 --vlmeta 'axis_names=["z","y","x"]' --vlmeta 'units="um"' --vlmeta 'spacing=[2.0,0.5,0.5]' --vlmeta 'origin=[1.0,0.0,-3.0]'
u4_labels <u4 100,90 32,32 8,8 --vlmeta image-label=true
no_1d |u1 1000 128 64
no_bool |b1 20,20 8,8 4,4
no_nonmult <f4 23,17 10,8 4,4
no_order <f4 10,20,3 5,10,3 5,5,3 --dims y,x,c
EOF
"$FIXTURE" write "$TMP/src/stats/big.b2nd" --dtype '|u1' --shape 2000,2000 --chunks 256,256 \
  --blocks 64,64 --seed 3 >/dev/null || fail "b2nd_fixture write big"

M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=256M || exit 1

# --- 1., 2.: which containers have ome.zarr, attributes against the schema ---
mkdir -p "$TMP/attrs"
check "ome.zarr where meta.json says, zarr.json documents" "$PY" - "$M/ome" "$TMP/attrs" <<'EOF'
import json
import math
import os
import sys

root, out = sys.argv[1:3]
bad = 0
present = 0
for name in sorted(os.listdir(root)):
    c = os.path.join(root, name)
    meta = json.load(open(os.path.join(c, "meta.json")))
    d = meta["files"].get("ome.zarr")
    listed = "ome.zarr" in os.listdir(c)
    want = not name.startswith("no_")
    if d is None or bool(d.get("absent")) == want or listed != want:
        print(f"MISMATCH {name}: meta.json {d}, listed {listed}")
        bad += 1
        continue
    if not want:
        print(f"{name}: no ome.zarr: {d['absent']}")
        continue
    present += 1
    g = os.path.join(c, "ome.zarr")
    text = open(os.path.join(g, "zarr.json")).read()
    if len(text) != os.stat(os.path.join(g, "zarr.json")).st_size:
        print(f"MISMATCH {name}: zarr.json is {len(text)} bytes, stat says otherwise")
        bad += 1
    z = json.loads(text)
    if (z["zarr_format"], z["node_type"]) != (3, "group"):
        print(f"MISMATCH {name}: {z}")
        bad += 1
    json.dump(z["attributes"], open(os.path.join(out, name + ".json"), "w"))
    ms = z["attributes"]["ome"]["multiscales"][0]
    names = [a["name"] for a in ms["axes"]]
    levels = sorted(x for x in os.listdir(g) if x != "zarr.json")
    if levels != sorted(str(k) for k in range(len(ms["datasets"]))):
        print(f"MISMATCH {name}: levels {levels}, datasets {ms['datasets']}")
        bad += 1
    shape = meta["shape"]
    space = [a.get("type") == "space" for a in ms["axes"]]
    spacing = meta["vlmeta"].get("spacing", [1.0] * len(shape))
    origin = meta["vlmeta"].get("origin", [0.0] * len(shape))
    label = "image-label" in meta["vlmeta"]
    if ms["type"] != ("nearest" if label else "mean"):
        print(f"MISMATCH {name}: type {ms['type']}")
        bad += 1
    for k, ds in enumerate(ms["datasets"]):
        a = json.load(open(os.path.join(g, str(k), "zarr.json")))
        inner = a["codecs"][0]["configuration"]["chunk_shape"]
        if (a["shape"] != shape or a["dimension_names"] != names
                or a["chunk_grid"]["configuration"]["chunk_shape"] != meta["chunkshape"]
                or inner != meta["blockshape"]):
            print(f"MISMATCH {name}/{k}: {a['shape']} {shape} {a['dimension_names']} {names}")
            bad += 1
        f = 2 ** k
        scale = [s * (f if sp else 1) for s, sp in zip(spacing, space)]
        shift = [o + (s * (f - 1) / 2 if sp and not label else 0)
                 for o, s, sp in zip(origin, spacing, space)]
        t = ds["coordinateTransformations"]
        if t[0]["scale"] != scale or t[1]["translation"] != shift:
            print(f"MISMATCH {name}/{k}: {t}, want {scale} {shift}")
            bad += 1
        if ds["path"] != str(k):
            bad += 1
        shape = [(s + 1) // 2 if sp else s for s, sp in zip(shape, space)]
    top = json.load(open(os.path.join(g, str(len(ms["datasets"]) - 1), "zarr.json")))["shape"]
    chunks = meta["chunkshape"]
    if any(sp and n > c for n, c, sp in zip(top, chunks, space)) and len(ms["datasets"]) < 10:
        print(f"MISMATCH {name}: the coarsest level {top} does not fit a chunk {chunks}")
        bad += 1
    print(f"{name}: {len(ms['datasets'])} levels, axes {names}, coarsest {top}")
if present != 7:
    print(f"MISMATCH: {present} images")
    bad += 1
sys.exit(1 if bad else 0)
EOF
AJV=$NPM_PREFIX/node_modules/ajv-cli/dist/index.js
# (ajv-cli parses files by their extension: .schema would be read as JavaScript.)
mkdir -p "$TMP/schemas"
cp "$SCHEMAS/image.schema" "$TMP/schemas/image.json"
cp "$SCHEMAS/_version.schema" "$TMP/schemas/version.json"
for a in "$TMP"/attrs/*.json; do
  check "$(basename "$a" .json): attributes valid OME-Zarr 0.5.2" node "$AJV" validate \
    --spec=draft2020 --strict=false -s "$TMP/schemas/image.json" -r "$TMP/schemas/version.json" \
    -d "$a"
done
# The validator can fail: an image without space axes is refused.
"$PY" -c 'import json,sys; a=json.load(open(sys.argv[1])); a["ome"]["multiscales"][0]["axes"]=[{"name":"c","type":"channel"},{"name":"t","type":"time"}]; json.dump(a,open(sys.argv[2],"w"))' \
  "$TMP/attrs/u1_2d.b2nd.json" "$TMP/broken.json" || fail "no attributes of u1_2d"
if node "$AJV" validate --spec=draft2020 --strict=false -s "$TMP/schemas/image.json" \
  -r "$TMP/schemas/version.json" -d "$TMP/broken.json" >/dev/null 2>&1; then
  fail "ajv accepts attributes without space axes"
fi

# --- 3. zarrita reads every level; NumPy's reference --------------------------
cat >"$TMP/levels.mjs" <<'EOF'
import fs from "node:fs";
const [prefix, root, outDir] = process.argv.slice(2);
const zarr = await import(`${prefix}/node_modules/zarrita/dist/src/index.js`);
const { FileSystemStore } = await import(`${prefix}/node_modules/@zarrita/storage/dist/src/index.js`);
const results = [];
for (const name of fs.readdirSync(root).sort()) {
  const g = `${root}/${name}/ome.zarr`;
  if (!fs.existsSync(g)) continue;
  const group = JSON.parse(fs.readFileSync(`${g}/zarr.json`, "utf8"));
  for (const ds of group.attributes.ome.multiscales[0].datasets) {
    const id = `${name}.${ds.path}`;
    try {
      const arr = await zarr.open.v3(new FileSystemStore(`${g}/${ds.path}`), { kind: "array" });
      const got = await zarr.get(arr, null);
      const d = got.data;
      fs.writeFileSync(`${outDir}/${id}.bin`, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      results.push({ id, name, level: Number(ds.path), shape: got.shape, dtype: arr.dtype });
    } catch (e) {
      results.push({ id, error: String(e) });
    }
  }
}
fs.writeFileSync(`${outDir}/results.json`, JSON.stringify(results));
EOF
mkdir -p "$TMP/out"
check "zarrita reads every level" node "$TMP/levels.mjs" "$NPM_PREFIX" "$M/ome" "$TMP/out"
check "every level equals NumPy's reference" "$PY" - "$M/ome" "$TMP/out" <<'EOF'
import itertools
import json
import os
import sys

import numpy as np

root, out = sys.argv[1:3]


def down(a, space, stride):
    if stride:
        return a[tuple(slice(None, None, 2) if s else slice(None) for s in space)].copy()
    shape = [(n + 1) // 2 if s else n for n, s in zip(a.shape, space)]
    integer = a.dtype.kind in "iu"
    total = np.zeros(shape, dtype=np.int64 if integer else np.float64)
    count = np.zeros(shape, dtype=np.int64)
    axes = [i for i, s in enumerate(space) if s]
    for corner in itertools.product((0, 1), repeat=len(axes)):
        sel = [slice(None)] * a.ndim
        for i, o in zip(axes, corner):
            sel[i] = slice(o, None, 2)
        part = a[tuple(sel)]
        region = tuple(slice(0, n) for n in part.shape)
        total[region] += part
        count[region] += 1
    if not integer:
        return (total / count).astype(a.dtype)
    q = np.floor_divide(total, count)
    r = total - q * count
    up = (2 * r > count) | ((2 * r == count) & (q % 2 == 1))
    return (q + up).astype(a.dtype)


bad = 0
seen = set()
results = json.load(open(os.path.join(out, "results.json")))
levels = {}
for r in results:
    if "error" in r:
        print(f"MISMATCH {r['id']}: zarrita: {r['error']}")
        bad += 1
        continue
    levels.setdefault(r["name"], []).append(r)
for name, rs in sorted(levels.items()):
    c = os.path.join(root, name)
    g = json.load(open(os.path.join(c, "ome.zarr", "zarr.json")))["attributes"]["ome"]
    ms = g["multiscales"][0]
    space = [a.get("type") == "space" for a in ms["axes"]]
    stride = ms["type"] == "nearest"
    level = np.load(os.path.join(c, "data.npy"))
    for r in sorted(rs, key=lambda r: r["level"]):
        k = r["level"]
        if k > 0:
            level = down(level, space, stride)
        got = np.fromfile(os.path.join(out, r["id"] + ".bin"), dtype=level.dtype)
        if list(r["shape"]) != list(level.shape):
            print(f"MISMATCH {r['id']}: shape {r['shape']}, NumPy {level.shape}")
            bad += 1
            continue
        got = got.reshape(level.shape)
        if level.dtype.kind == "f":
            same = np.allclose(got, level, rtol=1e-6, atol=0)
        else:
            same = np.array_equal(got, level)
        if not same:
            where = np.argwhere(got != level)[:3].tolist()
            print(f"MISMATCH {r['id']}: differs at {where}: {[got[tuple(w)] for w in where]} "
                  f"vs {[level[tuple(w)] for w in where]}")
            bad += 1
        seen.add(r["id"])
    # omero: percentiles of the coarsest level per channel (middle time point).
    if "omero" in g:
        axes = [a.get("type") for a in ms["axes"]]
        top = level
        if "time" in axes:
            t = axes.index("time")
            top = np.take(top, top.shape[t] // 2, axis=t)
            axes.pop(t)
        other = [i for i, a in enumerate(axes) if a != "space"]
        chans = [top] if not other else [np.take(top, i, axis=other[0])
                                         for i in range(top.shape[other[0]])]
        for ch, w in zip(chans, g["omero"]["channels"]):
            v = ch.astype(np.float64).ravel()
            v = v[np.isfinite(v)]
            lo, hi = np.percentile(v, [0.5, 99.5])
            want = {"start": lo, "end": hi, "min": v.min(), "max": v.max()}
            if any(not np.isclose(w["window"][key], want[key], rtol=1e-12) for key in want):
                print(f"MISMATCH {name}: omero window {w['window']}, NumPy {want}")
                bad += 1
        if len(chans) != len(g["omero"]["channels"]):
            print(f"MISMATCH {name}: {len(g['omero']['channels'])} omero channels")
            bad += 1
print(f"{len(seen)} levels of {len(levels)} images equal NumPy's")
if len(levels) != 7 or len(seen) < 14:
    print("MISMATCH: too few levels read")
    bad += 1
sys.exit(1 if bad else 0)
EOF

# --- 4. ngff-zarr reads the multiscale metadata ------------------------------
cat >"$TMP/ngff.mjs" <<'EOF'
import fs from "node:fs";
const [prefix, root, outPath] = process.argv.slice(2);
const ngff = await import(`${prefix}/node_modules/@fideus-labs/ngff-zarr/esm/mod.js`);
const results = {};
for (const name of fs.readdirSync(root).sort()) {
  const g = `${root}/${name}/ome.zarr`;
  if (!fs.existsSync(g)) continue;
  try {
    const ms = await ngff.fromNgffZarr(g, { validate: true, version: "0.5" });
    results[name] = {
      axes: ms.metadata.axes.map((a) => a.name),
      paths: ms.metadata.datasets.map((d) => d.path),
      scales: ms.metadata.datasets.map((d) => d.coordinateTransformations[0].scale),
      shapes: ms.images.map((i) => i.data.shape),
    };
  } catch (e) {
    results[name] = { error: String(e) };
  }
}
fs.writeFileSync(outPath, JSON.stringify(results));
process.exit(0);
EOF
check "ngff-zarr reads the metadata" node "$TMP/ngff.mjs" "$NPM_PREFIX" "$M/ome" "$TMP/ngff.json"
check "ngff-zarr's metadata is ours" "$PY" - "$M/ome" "$TMP/ngff.json" <<'EOF'
import json
import os
import sys

root, path = sys.argv[1:3]
got = json.load(open(path))
bad = 0
for name, r in sorted(got.items()):
    g = json.load(open(os.path.join(root, name, "ome.zarr", "zarr.json")))
    ms = g["attributes"]["ome"]["multiscales"][0]
    if "error" in r:
        print(f"MISMATCH {name}: ngff-zarr: {r['error']}")
        bad += 1
        continue
    want_axes = [a["name"] for a in ms["axes"]]
    paths = [d["path"] for d in ms["datasets"]]
    scales = [d["coordinateTransformations"][0]["scale"] for d in ms["datasets"]]
    shapes = [json.load(open(os.path.join(root, name, "ome.zarr", p, "zarr.json")))["shape"]
              for p in paths]
    if (r["axes"], r["paths"], r["scales"], r["shapes"]) != (want_axes, paths, scales, shapes):
        print(f"MISMATCH {name}: ngff-zarr {r}; ours {want_axes} {paths} {scales} {shapes}")
        bad += 1
print(f"ngff-zarr read {len(got)} images")
sys.exit(1 if bad or len(got) != 7 else 0)
EOF

unmount_fs "$M"

# --- 5. a one-inner-chunk read at level 3 computes only what is under it -----
M2=$TMP/mnt2
mount_fs "$TMP/src" "$M2" -o cache_size=256M || exit 1
cat >"$TMP/tile.mjs" <<'EOF'
import fs from "node:fs";
const [prefix, mount, level, outPath] = process.argv.slice(2);
const zarr = await import(`${prefix}/node_modules/zarrita/dist/src/index.js`);
const { FileSystemStore } = await import(`${prefix}/node_modules/@zarrita/storage/dist/src/index.js`);
const stats = () => JSON.parse(fs.readFileSync(`${mount}/.b2ndfs/stats`, "utf8")).reads;
const arr = await zarr.open.v3(new FileSystemStore(`${mount}/stats/big.b2nd/ome.zarr/${level}`),
                               { kind: "array" });
const counts = [];
for (let i = 0; i < 2; i++) {
  const before = stats();
  // Inner chunk (1, 2): an interior block of 64 x 64.
  await zarr.get(arr, [zarr.slice(64, 128), zarr.slice(128, 192)]);
  const after = stats();
  counts.push({ computed: after.blocks_computed - before.blocks_computed,
                decompressed: after.blocks_decompressed - before.blocks_decompressed });
}
fs.writeFileSync(outPath, JSON.stringify(counts));
EOF
check "a level-3 tile read" node "$TMP/tile.mjs" "$NPM_PREFIX" "$M2" 3 "$TMP/tile.json"
check "a level-3 tile computes at most the blocks under it" "$PY" - "$TMP/tile.json" <<'EOF'
import json
import sys

first, second = json.load(open(sys.argv[1]))
print(f"first read: {first}; second: {second}")
# Under one block of level 3: 4 blocks of level 2, 16 of level 1 (all
# computed), 64 of level 0 (decompressed).
ok = 3 <= first["computed"] <= 1 + 4 + 16 and 1 <= first["decompressed"] <= 64
ok = ok and second == {"computed": 0, "decompressed": 0}
sys.exit(0 if ok else 1)
EOF


# --- 6. a remote source with disk_cache=: the next mount computes nothing ----
if [[ -n ${ITEST_THROUGH:-} ]]; then
  P=$TMP/persist
  DC=$TMP/dcache
  MP=$TMP/mnt_persist
  mkdir -p "$P"
  # 512 x 512 in 64 x 64 chunks of 16 x 16 blocks: levels 512 .. 64; inner
  # chunk (1, 2) of level 2 is one block, made from 4 of level 1.
  write_persisted() {
    "$FIXTURE" write "$P/p.b2nd" --dtype '<u2' --shape 512,512 --chunks 64,64 --blocks 16,16 \
      --seed "$1" >/dev/null
  }
  write_persisted 11 || fail "b2nd_fixture write p"
  cat >"$TMP/persist_tile.mjs" <<'EOF'
import fs from "node:fs";
const [prefix, mount, outBin, outJson] = process.argv.slice(2);
const zarr = await import(`${prefix}/node_modules/zarrita/dist/src/index.js`);
const { FileSystemStore } = await import(`${prefix}/node_modules/@zarrita/storage/dist/src/index.js`);
const stats = () => JSON.parse(fs.readFileSync(`${mount}/.b2ndfs/stats`, "utf8")).reads;
const arr = await zarr.open.v3(new FileSystemStore(`${mount}/p.b2nd/ome.zarr/2`), { kind: "array" });
const before = stats();
const got = await zarr.get(arr, [zarr.slice(16, 32), zarr.slice(32, 48)]);
const after = stats();
fs.writeFileSync(outBin, new Uint8Array(got.data.buffer, got.data.byteOffset, got.data.byteLength));
fs.writeFileSync(outJson, JSON.stringify({
  computed: after.blocks_computed - before.blocks_computed,
  from_disk: after.blocks_computed_from_disk - before.blocks_computed_from_disk }));
EOF
  # persisted_tile WHAT COMPUTED FROM_DISK: mounts, reads the tile, checks its
  # bytes against NumPy's and its counts ("+": more than 0), unmounts and
  # waits for the daemon to end (the next one takes DIR's lock).
  persisted_tile() {
    local what=$1 computed=$2 from_disk=$3 pid
    if [[ -z ${PSRC:-} ]]; then
      mount_fs "$P" "$MP" -o "disk_cache=$DC,cache_size=64M" || return 1
      PSRC=$THROUGH_SOURCE
      POPTS=("${THROUGH_OPTIONS[@]}")
    else
      mount_fs "$PSRC" "$MP" "${POPTS[@]}" -o "disk_cache=$DC,cache_size=64M" || return 1
    fi
    pid=$DAEMON_PID
    check "$what: the level-2 tile read" node "$TMP/persist_tile.mjs" "$NPM_PREFIX" "$MP" \
      "$TMP/persist.bin" "$TMP/persist.json"
    check "$what: the tile equals NumPy's; blocks computed $computed, kept $from_disk" \
      "$PY" - "$MP/p.b2nd/data.npy" "$TMP/persist.bin" "$TMP/persist.json" "$computed" \
      "$from_disk" <<'EOF'
import json
import sys

import numpy as np

npy, tile, counts, computed, from_disk = sys.argv[1:6]


def down(a):
    # 2 x 2 means, edges averaging the items present, rounded half to even.
    h, w = (a.shape[0] + 1) // 2, (a.shape[1] + 1) // 2
    total = np.zeros((h, w), dtype=np.int64)
    count = np.zeros((h, w), dtype=np.int64)
    for dy in (0, 1):
        for dx in (0, 1):
            part = a[dy::2, dx::2]
            total[: part.shape[0], : part.shape[1]] += part
            count[: part.shape[0], : part.shape[1]] += 1
    q = np.floor_divide(total, count)
    r = total - q * count
    return (q + ((2 * r > count) | ((2 * r == count) & (q % 2 == 1)))).astype(a.dtype)


want = down(down(np.load(npy)))[16:32, 32:48]
got = np.fromfile(tile, dtype=want.dtype).reshape(want.shape)
c = json.load(open(counts))
print(f"computed {c['computed']}, from disk {c['from_disk']}")
ok = np.array_equal(got, want)
for key, expect in (("computed", computed), ("from_disk", from_disk)):
    ok = ok and (c[key] > 0 if expect == "+" else c[key] == int(expect))
sys.exit(0 if ok else 1)
EOF
    [[ $(stats_field "$MP" remote.disk_cache.enabled) == 1 ]] || fail "$what: no disk cache"
    unmount_fs "$MP" && exits_within 30 "$pid" >/dev/null
  }
  PSRC=""
  persisted_tile "cold" + 0 || fail "the cold mount"
  persisted_tile "warm (same disk_cache=)" 0 + || fail "the warm mount"
  # A new version of the object: another ETag (nginx's is mtime-size: the
  # mtime moves on), so the kept blocks are not its.
  old_mtime=$(stat -c %Y "$P/p.b2nd")
  write_persisted 12 && touch -d "@$((old_mtime + 7))" "$P/p.b2nd" || fail "rewrite p"
  case $ITEST_THROUGH in
    s3) s3_put_file through "${PSRC#s3://through/}/p.b2nd" "$P/p.b2nd" ;;
    az) az_put_file through "${PSRC##*/through/}/p.b2nd" "$P/p.b2nd" ;;
  esac
  persisted_tile "changed on the server" + 0 || fail "the mount of the changed object"
fi

finish
