#!/usr/bin/env bash
# fuse.headers: the format headers beside `data` (README.md, "Layout") read by
# the real tools, through a real mount: GDAL opens `data` through data.hdr
# (ENVI), nibabel loads data.nii (NIfTI-1), VTK's vtkNrrdReader and
# vtkMetaImageReader read data.nhdr and data.mhd, teem's `unu` converts
# data.nhdr; every value must equal data.npy read with numpy (whose bytes
# fuse.numpy compares with c-blosc2), axes reversed where the format lists
# them fastest first. A file a format cannot describe (dtype or number of
# axes) must be absent from the listing and from lookup, and meta.json's
# "files" must say why. Containers are written by c-blosc2 (b2nd_fixture).
# Skips (77) when /dev/fuse is unusable or a tool is not installed.
# Usage: fuse_headers.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init headers "$1"
if ! "$PY" -c 'import numpy, nibabel, vtkmodules.vtkIOImage; from osgeo import gdal' 2>/dev/null; then
  log "SKIP: $PY lacks numpy, nibabel, vtk or GDAL (scripts/setup.sh installs them)"
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
# NAME DTYPE SHAPE CHUNKS BLOCKS: several chunks and blocks per array, so the
# tools read across chunk edges.
while read -r name dtype shape chunks blocks; do
  "$FIXTURE" write "$S/$name.b2nd" --dtype "$dtype" --shape "$shape" --chunks "$chunks" \
    --blocks "$blocks" --seed 7 >/dev/null || {
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
# Only the serial readers: `import vtk` would load vtkIOMPIImage, whose
# factory swaps in vtkPNrrdReader (which fails without an MPI controller).
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOImage import vtkMetaImageReader, vtkNrrdReader

gdal.UseExceptions()
mount, tmp, unu = sys.argv[1:4]
HEADERS = ["data.nhdr", "data.mhd", "data.hdr", "data.nii"]
failures = []
checks = 0


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


def expected_absent(a):
    """Why each header must be absent (the contract, not the code's words)."""
    kind, size, nd = a.dtype.kind, a.dtype.itemsize, a.ndim
    why = {}
    if kind not in "iufc":
        return {h: "not numeric" for h in HEADERS}
    if kind == "c":
        why["data.nhdr"] = why["data.mhd"] = "no type"
    if nd > 3:
        why["data.hdr"] = "at most 3 dimensions"
    if kind == "i" and size == 1:
        why["data.hdr"] = "no type"
    if nd > 7:
        why["data.nii"] = "at most 7 dimensions"
    return why


def read_vtk(reader_class, path):
    r = reader_class()
    r.SetFileName(path)
    r.Update()
    img = r.GetOutput()
    dims = img.GetDimensions()
    scalars = img.GetPointData().GetScalars()
    if scalars is None:
        raise RuntimeError(f"{reader_class.__name__} read no scalars from {path}")
    return dims, vtk_to_numpy(scalars)


for name in sorted(os.listdir(mount)):
    base = f"{mount}/{name}"
    a = np.load(f"{base}/data.npy")
    with open(f"{base}/meta.json") as f:
        files = json.load(f)["files"]
    listed = set(os.listdir(base))
    absent = expected_absent(a)
    for h in HEADERS:
        entry = files.get(h)
        if entry is None:
            fail(name, f'meta.json "files" has no entry for {h}')
            continue
        if h in absent:
            if h in listed or os.path.exists(f"{base}/{h}"):
                fail(name, f"{h} exists, but its format cannot describe {a.dtype} {a.shape}")
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

    # GDAL opens the raw file through the .hdr beside it.
    if "data.hdr" not in absent:
        try:
            ds = gdal.Open(f"{base}/data")
        except RuntimeError as e:
            # ENVI's codes 14 and 15 (64-bit integers) are newer than
            # bookworm's GDAL 3.6 ENVI driver; teem and nibabel check them.
            if a.dtype.kind in "iu" and a.dtype.itemsize == 8 and "data_type" in str(e):
                print(f"note: GDAL {gdal.__version__} cannot read ENVI {a.dtype}: {e}")
                ds = None
            else:
                raise
    if "data.hdr" not in absent and ds is not None:
        if ds.GetDriver().ShortName != "ENVI":
            fail(name, f"GDAL opened data with {ds.GetDriver().ShortName}, not ENVI")
        want = native.reshape((1,) * (2 - min(a.ndim, 2)) + a.shape)
        same(name, "GDAL ReadAsArray", ds.ReadAsArray(), want)
        ds = None

    # nibabel: the array in NIfTI's axis order, i.e. numpy's transposed.
    if "data.nii" not in absent:
        img = nibabel.load(f"{base}/data.nii")
        got = np.asanyarray(img.dataobj)
        if got.dtype != a.dtype.newbyteorder("=") and got.dtype != a.dtype:
            fail(name, f"nibabel dtype {got.dtype}, expected {a.dtype}")
        same(name, "nibabel", got, native.T)

    # VTK images are at most 3-D, x fastest: the C-order items in sequence.
    # VTK 9.1's readers crash on 1-D NRRD and on 64-bit integers (its
    # MetaImage reader knows no MET_LONG_LONG): teem checks those below.
    if a.ndim in (2, 3) and not (a.dtype.kind in "iu" and a.dtype.itemsize == 8):
        for h, reader in [("data.nhdr", vtkNrrdReader), ("data.mhd", vtkMetaImageReader)]:
            if h in absent:
                continue
            dims, values = read_vtk(reader, f"{base}/{h}")
            axes = list(reversed(a.shape))
            # vtkNrrdReader guesses that a fastest axis of 9 or fewer items
            # holds the components of a vector (NRRD's "kinds" is ignored).
            if reader is vtkNrrdReader and axes[0] <= 9:
                axes = axes[1:]
            want_dims = tuple(axes) + (1,) * (3 - len(axes))
            if tuple(dims) != want_dims:
                fail(name, f"{reader.__name__}: dimensions {dims}, expected {want_dims}")
            same(name, reader.__name__, values.ravel(), native.ravel())

    # teem parses the detached header itself and rewrites the values as text.
    if "data.nhdr" not in absent:
        out = f"{tmp}/{name}.ascii.nrrd"
        subprocess.run([unu, "save", "-i", f"{base}/data.nhdr", "-f", "nrrd", "-e", "ascii",
                        "-o", out], check=True)
        text = open(out).read()
        header, _, body = text.partition("\n\n")
        sizes = [l for l in header.splitlines() if l.startswith("sizes:")]
        want_sizes = "sizes: " + " ".join(str(n) for n in reversed(a.shape))
        if sizes != [want_sizes]:
            fail(name, f"unu: {sizes}, expected {want_sizes}")
        # Floats are printed to round-trip: parse wide, then narrow back.
        wide = np.float64 if a.dtype.kind == "f" else native.dtype
        values = np.array(body.split(), dtype=wide).astype(native.dtype)
        same(name, "unu", values, native.ravel())

print(f"headers: {checks} tool reads checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF
finish
