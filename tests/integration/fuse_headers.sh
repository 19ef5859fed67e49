#!/usr/bin/env bash
# fuse.headers: the format headers beside `data` (README.md, "Layout" and
# "Headers, axes and voxel geometry") read by the real tools, through a real
# mount: GDAL opens `data` through data.hdr (ENVI; python3-gdal and `gdalinfo -stats`), nibabel
# loads data.nii (NIfTI-1), VTK's vtkNrrdReader and vtkMetaImageReader read
# every data.nhdr and data.mhd offered, each in a child process (VTK 9.1
# crashes on some valid headers: none offered may crash it), teem's `unu`
# converts data.nhdr; every value must equal data.npy read with numpy (whose
# bytes fuse.numpy compares with c-blosc2), axes reversed where the format
# lists them fastest first. Containers with spacing/origin/units/axis names
# in their vlmeta show them to every reader (VTK spacing and origin, nibabel
# zooms, affine and qform, GDAL's geotransform, unu's space origin and
# labels). A file a format cannot describe, or that VTK 9.1 or GDAL 3.6
# would fail on, must be absent from the listing and from lookup, and
# meta.json's "files" must say why. Containers are written by c-blosc2
# (b2nd_fixture, vlmeta with blosc2_vlmeta_add).
# Skips (77) when /dev/fuse is unusable or a tool is not installed.
# Usage: fuse_headers.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init headers "$1"
if ! "$PY" -c 'import numpy, nibabel, vtkmodules.vtkIOImage; from osgeo import gdal' 2>/dev/null ||
  ! command -v gdalinfo >/dev/null; then
  log "SKIP: $PY lacks numpy, nibabel, vtk or GDAL, or gdalinfo is missing (scripts/setup.sh installs them)"
  exit 77
fi
UNU=$(command -v teem-unu || command -v unu) || UNU=""
if [[ -z $UNU ]]; then
  log "SKIP: teem's unu (teem-unu) is not installed (teem-apps)"
  exit 77
fi
require_fuse

S=$TMP/src
mkdir -p "$S"
# NAME DTYPE SHAPE CHUNKS BLOCKS [--vlmeta NAME=JSON ...]: several chunks and
# blocks per array, so the tools read across chunk edges.
while read -r name dtype shape chunks blocks vlmeta; do
  eval "vl=($vlmeta)"
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 7 "${vl[@]}" >/dev/null || {
    fail "b2nd_fixture write $name"
    exit 1
  }
done <<'EOF'
f4_3d <f4 6,9,11 4,4,4 2,2,3
f8be_3d >f8 5,6,7 3,4,4 2,2,2
i2be_2d >i2 23,17 10,8 4,4
u1_3d |u1 4,5,6 2,3,4 1,2,2
c8_2d <c8 13,10 8,8 4,4
u2_4d <u2 3,4,5,6 2,2,3,4 1,2,2,2
i1_1d |i1 40 16 8
i8_2d <i8 7,9 4,4 2,2
s4_2d |S4 5,5 3,3 2,2
f4_8d <f4 1,2,1,2,1,2,1,2 1,1,1,1,1,1,1,1 1,1,1,1,1,1,1,1
f4_5d <f4 2,3,2,2,11 1,2,2,2,4 1,1,1,2,2
f4_1d <f4 40 16 8
u1_small_2d |u1 3,2 2,2 1,1
geo_3d <f4 5,6,17 3,4,8 2,2,4 --vlmeta 'spacing=[3.0, 2, 0.5]' --vlmeta 'origin=["__tuple__", 30, 20.5, -10]' --vlmeta 'units="mm"' --vlmeta '_ARRAY_DIMENSIONS=["z", "y", "x"]'
geo_2d >i2 7,9 4,4 2,2 --vlmeta 'spacing=[0.25, 1.5]' --vlmeta 'origin=[100, -5]' --vlmeta 'axis_names=["row", "col"]'
geo_bad_3d |u1 4,5,6 2,3,4 1,2,2 --vlmeta 'spacing=[1, 2]' --vlmeta 'origin=[0, 0, 7]'
EOF

M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=64M || exit 1

check "tools read the headers" env PYTHONFAULTHANDLER=1 GDAL_PAM_ENABLED=NO CPL_LOG=/dev/null "$PY" - "$M" "$TMP" "$UNU" <<'EOF'
import json
import os
import subprocess
import sys

import nibabel
import numpy as np
from osgeo import gdal

gdal.UseExceptions()
mount, tmp, unu = sys.argv[1:4]
HEADERS = ["data.nhdr", "data.mhd", "data.hdr", "data.nii"]
failures = []
checks = 0

# VTK in a child process, so that a reader that crashes fails this test
# instead of ending it. Only the serial readers: `import vtk` would load
# vtkIOMPIImage, whose factory swaps in vtkPNrrdReader (which reads nothing
# without an MPI controller).
VTK_PROBE = r"""
import json, sys
import numpy as np
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOImage import vtkMetaImageReader, vtkNrrdReader
path, out = sys.argv[1:3]
r = vtkNrrdReader() if path.endswith(".nhdr") else vtkMetaImageReader()
r.SetFileName(path)
r.Update()
img = r.GetOutput()
s = img.GetPointData().GetScalars()
if s is None:
    sys.exit(f"{type(r).__name__} read no scalars from {path}")
np.save(out, vtk_to_numpy(s).ravel())
print(json.dumps({"dims": img.GetDimensions(), "spacing": img.GetSpacing(),
                  "origin": img.GetOrigin(), "components": s.GetNumberOfComponents()}))
"""


def fail(name, what):
    failures.append(f"{name}: {what}")
    print(f"MISMATCH {name}: {what}", file=sys.stderr)


def same(name, tool, got, want):
    global checks
    checks += 1
    got = np.asarray(got)
    if got.shape != want.shape:
        fail(name, f"{tool}: shape {got.shape}, expected {want.shape}")
    elif not np.array_equal(got, want):
        bad = int(np.count_nonzero(got != want))
        fail(name, f"{tool}: {bad} of {want.size} values differ")


def close(name, tool, got, want):
    global checks
    checks += 1
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape or not np.allclose(got, want):
        fail(name, f"{tool}: {got.tolist()}, expected {want.tolist()}")


def expected_absent(a):
    """Why each header must be absent (the contract, not the code's words)."""
    kind, size, nd = a.dtype.kind, a.dtype.itemsize, a.ndim
    why = {}
    if kind not in "iufc":
        return {h: "not numeric" for h in HEADERS}
    if kind == "c":
        why["data.nhdr"] = why["data.mhd"] = "no type"
    if nd > 4:
        why["data.nhdr"] = "VTK"  # vtkNrrdReader crashes on 5 axes
    if nd > 3:
        why["data.mhd"] = "VTK"  # vtkMetaImageReader crashes on 4
        why["data.hdr"] = "at most 3 dimensions"
    if kind in "iu" and size == 8:
        why["data.mhd"] = "VTK"  # ... and on MET_LONG_LONG
        why["data.hdr"] = "GDAL"  # ENVI types 14 and 15: not in GDAL 3.6
    if kind == "i" and size == 1:
        why["data.hdr"] = "no type"
    if nd > 7:
        why["data.nii"] = "at most 7 dimensions"
    return why


def nrrd_sizes(shape):
    """NRRD's sizes: fastest first, padded with 1s for vtkNrrdReader."""
    sizes = list(reversed(shape)) or [1]
    components = 1 if sizes[0] <= 9 else 0
    while len(sizes) < 2 + components:
        sizes.append(1)
    return sizes


def vtk_view(h, shape):
    """What VTK makes of the header: (components, image dimensions)."""
    sizes = nrrd_sizes(shape) if h == "data.nhdr" else list(reversed(shape)) or [1]
    components = 1
    if h == "data.nhdr" and (len(sizes) > 3 or sizes[0] <= 9):
        components, sizes = sizes[0], sizes[1:]
    return components, tuple(sizes) + (1,) * (3 - len(sizes))


def geometry(meta, nd):
    """spacing, origin (NumPy order), units, names, as the vlmeta gives them."""
    vl = meta.get("vlmeta", {})

    def axes(key, scalar_ok):
        v = vl.get(key)
        if isinstance(v, list) and v[:1] == ["__tuple__"]:
            v = v[1:]
        if scalar_ok and not isinstance(v, list) and v is not None:
            v = [v] * nd
        return v if isinstance(v, list) and len(v) == nd else None

    names = axes("axis_names", False) or axes("_ARRAY_DIMENSIONS", False)
    return axes("spacing", True), axes("origin", False), axes("units", True), names


for name in sorted(os.listdir(mount)):
    base = f"{mount}/{name}"
    a = np.load(f"{base}/data.npy")
    with open(f"{base}/meta.json") as f:
        meta = json.load(f)
    files = meta["files"]
    listed = set(os.listdir(base))
    absent = expected_absent(a)
    for h in HEADERS:
        entry = files.get(h)
        if entry is None:
            fail(name, f'meta.json "files" has no entry for {h}')
            continue
        if h in absent:
            if h in listed or os.path.exists(f"{base}/{h}"):
                fail(name, f"{h} exists, but should not for {a.dtype} {a.shape}")
            reason = entry.get("absent", "")
            if absent[h] not in reason:
                fail(name, f'meta.json: {h} should be absent because "{absent[h]}", says {entry}')
            continue
        if h not in listed:
            fail(name, f"{h} is not listed")
        if "absent" in entry:
            fail(name, f"meta.json says {h} is absent ({entry['absent']}) but it should exist")
        if os.path.getsize(f"{base}/{h}") != entry.get("size"):
            fail(name, f"{h}: stat size {os.path.getsize(f'{base}/{h}')}, meta.json {entry}")
    native = a.astype(a.dtype.newbyteorder("="))
    spacing, origin, units, names = geometry(meta, a.ndim)
    if name.startswith("geo_bad"):
        # A spacing of the wrong length is ignored, and meta.json says so.
        if not any("spacing ignored" in n for n in meta.get("notes", [])):
            fail(name, f"meta.json's notes do not say that spacing was ignored: {meta.get('notes')}")
        spacing = None
    rspacing = list(reversed(spacing or [1.0] * a.ndim))
    rorigin = list(reversed(origin or [0.0] * a.ndim))

    # GDAL opens the raw file through the .hdr beside it.
    if "data.hdr" not in absent:
        ds = gdal.Open(f"{base}/data")
        if ds.GetDriver().ShortName != "ENVI":
            fail(name, f"GDAL opened data with {ds.GetDriver().ShortName}, not ENVI")
        want = native.reshape((1,) * (2 - min(a.ndim, 2)) + a.shape)
        same(name, "GDAL ReadAsArray", ds.ReadAsArray(), want)
        if (spacing or origin) and a.ndim >= 2:
            # The centre of item [.., 0, 0] is at the origin.
            gt = ds.GetGeoTransform()
            close(name, "GDAL geotransform", [gt[0] + gt[1] / 2, gt[3] + gt[5] / 2, gt[1], gt[5]],
                  [rorigin[0], rorigin[1], rspacing[0], rspacing[1]])
        ds = None
        # gdalinfo as the README shows it, with no warning or error.
        r = subprocess.run(["gdalinfo", "-stats", f"{base}/data"], capture_output=True, text=True)
        if r.returncode != 0 or "Driver: ENVI" not in r.stdout or r.stderr.strip():
            fail(name, f"gdalinfo -stats: exit {r.returncode}, stderr {r.stderr.strip()!r}")

    # nibabel: the array in NIfTI's axis order, i.e. numpy's transposed.
    if "data.nii" not in absent:
        img = nibabel.load(f"{base}/data.nii")
        got = np.asanyarray(img.dataobj)
        if got.dtype != a.dtype.newbyteorder("=") and got.dtype != a.dtype:
            fail(name, f"nibabel dtype {got.dtype}, expected {a.dtype}")
        same(name, "nibabel", got, native.T)
        if a.ndim > 0:
            close(name, "nibabel zooms", img.header.get_zooms(), rspacing[:7])
        if spacing or origin:
            n3 = min(a.ndim, 3)
            want_affine = np.eye(4)
            want_affine[:n3, :n3] = np.diag(rspacing[:n3])
            want_affine[:n3, 3] = rorigin[:n3]
            close(name, "nibabel affine", img.affine.ravel(), want_affine.ravel())
            if int(img.header["qform_code"]) != 1:
                fail(name, f"NIfTI qform_code {img.header['qform_code']}, expected 1")
        if units and units[-1] == "mm" and img.header.get_xyzt_units()[0] != "mm":
            fail(name, f"nibabel xyzt_units {img.header.get_xyzt_units()}, expected mm")

    # VTK reads every NRRD and MetaImage header offered, without crashing.
    for h in ["data.nhdr", "data.mhd"]:
        if h in absent:
            continue
        out = f"{tmp}/{name}.{h}.npy"
        r = subprocess.run([sys.executable, "-c", VTK_PROBE, f"{base}/{h}", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(name, f"VTK on {h}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        info = json.loads(r.stdout.strip().splitlines()[-1])
        components, dims = vtk_view(h, a.shape)
        if tuple(info["dims"]) != dims or info["components"] != components:
            fail(name, f"VTK on {h}: dims {info['dims']} x {info['components']}, "
                       f"expected {dims} x {components}")
        same(name, f"VTK {h}", np.load(out), native.ravel())
        if components == 1 and (spacing or origin):
            n = min(a.ndim, 3)
            close(name, f"VTK {h} spacing", info["spacing"][:n], rspacing[:n])
            close(name, f"VTK {h} origin", info["origin"][:n], rorigin[:n])

    # teem parses the detached header itself and rewrites the values as text.
    if "data.nhdr" not in absent:
        out = f"{tmp}/{name}.ascii.nrrd"
        subprocess.run([unu, "save", "-i", f"{base}/data.nhdr", "-f", "nrrd", "-e", "ascii",
                        "-o", out], check=True)
        text = open(out).read()
        header, _, body = text.partition("\n\n")
        fields = dict(l.split(": ", 1) for l in header.splitlines() if ": " in l)
        want_sizes = " ".join(str(n) for n in nrrd_sizes(a.shape))
        if fields.get("sizes") != want_sizes:
            fail(name, f"unu: sizes {fields.get('sizes')}, expected {want_sizes}")
        if origin:
            got = [float(v) for v in fields.get("space origin", "()").strip("()").split(",") if v]
            # Axes added for VTK are axes of the space, at 0.
            close(name, "unu space origin", got, rorigin + [0.0] * (len(got) - a.ndim))
        if names:
            got = fields.get("labels", "").split()[:a.ndim]
            if got != [f'"{n}"' for n in reversed(names)]:
                fail(name, f"unu: labels {fields.get('labels')}, expected {list(reversed(names))}")
        # Floats are printed to round-trip: parse wide, then narrow back.
        wide = np.float64 if a.dtype.kind == "f" else native.dtype
        values = np.array(body.split(), dtype=wide).astype(native.dtype)
        same(name, "unu", values, native.ravel())

print(f"headers: {checks} tool reads checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF
finish
