#!/usr/bin/env bash
# shellcheck disable=SC2012  # ls output is what this test checks
# fuse.tree: names and layout of a mount (README.md, "Layout").
# fuse_compare checks the mirrored tree, every container's entries, chunk and
# slice names and every stat size; this script adds what users type: ls, stat,
# unpadded slice names, sidecar files, 0-D and zero-length arrays, times, and
# the owner, mode and time of containers that were never decoded. That a
# listing decodes nothing, that a broken container shows meta.json alone and
# is logged once, and that readdir's inode numbers are stat's are checked
# without a mount (tests/unit/fuse_ops_test.cc).
# Usage: fuse_tree.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init tree "$1"
require_fuse

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
M=$TMP/mnt
# Broken containers next to a good one: listing them must not open them.
mkdir -p "$S/lazy"
printf 'not a frame, but named like one\n' >"$S/lazy/broken.b2nd"
printf 'also broken\n' >"$S/lazy/private.b2frame"
chown 65534:65534 "$S/lazy/private.b2frame"
chmod 0640 "$S/lazy/private.b2frame"
cp "$S/ndim/2d_i4.b2nd" "$S/lazy/good.b2nd"
touch -d '2021-03-04 05:06:07' "$S/lazy/good.b2nd" "$S/lazy/broken.b2nd"

mount_fs "$S" "$M" || exit 1

# --- listing decodes nothing -------------------------------------------------
ls -l "$M/lazy" >"$TMP/ls_lazy" || fail "ls -l lazy failed"
ls -la "$M/lazy/." >/dev/null || fail "ls -la lazy/. failed"
stat "$M/lazy/broken.b2nd" "$M/lazy/private.b2frame" >/dev/null || fail "stat of broken containers failed"
grep -q 'broken.b2nd' "$TMP/ls_lazy" || fail "ls -l lazy does not show broken.b2nd"
# Mode and owner come from the source file, without decoding it.
[[ $(stat -c '%A %u:%g' "$M/lazy/broken.b2nd") == "dr-xr-xr-x 0:0" ]] ||
  fail "lazy/broken.b2nd: $(stat -c '%A %u:%g' "$M/lazy/broken.b2nd"), expected dr-xr-xr-x 0:0"
[[ $(stat -c '%A %u:%g' "$M/lazy/private.b2frame") == "dr-xr-x--- 65534:65534" ]] ||
  fail "lazy/private.b2frame: $(stat -c '%A %u:%g' "$M/lazy/private.b2frame"), expected dr-xr-x--- 65534:65534"
[[ $(stat -c %Y "$M/lazy/broken.b2nd") == $(stat -c %Y "$S/lazy/broken.b2nd") ]] ||
  fail "lazy/broken.b2nd: mtime is not the source's"
# Looking inside decodes it: meta.json says why (that nothing else is there
# and that it is logged once: fuse_ops_test).
grep -q '"error"' "$M/lazy/broken.b2nd/meta.json" || fail "lazy/broken.b2nd/meta.json has no \"error\""

# --- the whole tree against the fixture set -----------------------------------
check "fuse_compare tree" "$FUSE_COMPARE" tree "$M" "$S" "$R"

# --- what users see -------------------------------------------------------------
expect_ls() {  # DIR EXPECTED...
  local dir=$1
  shift
  local got
  got=$(ls "$M/$dir" | tr '\n' ' ' | sed 's/ $//')
  [[ $got == "$*" ]] || fail "ls $dir: [$got], expected [$*]"
}
expect_size() {  # FILE SIZE
  local got
  got=$(stat -c %s "$M/$1" 2>&1)
  [[ $got == "$2" ]] || fail "stat -c %s $1: $got, expected $2"
}
expect_ls ndim/0d_f8.b2nd data data.hdr data.mhd data.nhdr data.nii data.npy data.zarr meta.json view zarr
expect_ls ndim/3d_f4.b2nd chunks data data.hdr data.mhd data.nhdr data.nii data.npy data.tiff data.zarr images meta.json preview preview.png slices view zarr
expect_ls ndim/3d_f4.b2nd/slices 0 1 2
[[ $(ls "$M/ndim/3d_f4.b2nd/chunks" | wc -l) == 36 ]] || fail "ndim/3d_f4.b2nd has not 36 chunks"
[[ $(ls "$M/ndim/3d_f4.b2nd/chunks" | head -3 | tr '\n' ' ') == "0.0.0 0.0.1 0.0.2 " ]] ||
  fail "chunk names of ndim/3d_f4.b2nd: $(ls "$M/ndim/3d_f4.b2nd/chunks" | head -3 | tr '\n' ' ')"
[[ $(ls "$M/ndim/3d_f4.b2nd/slices/0" | head -2 | tr '\n' ' ') == "00 01 " ]] || fail "slices/0 of 3d_f4 not padded to 2"
[[ $(ls "$M/ndim/3d_f4.b2nd/slices/2" | sed -n '1p;8p;$p' | tr '\n' ' ') == "00 07 30 " ]] ||
  fail "slices/2 of 3d_f4 (31 items) not named 00..30"
[[ $(ls "$M/frames/plain.b2frame/chunks" | tr '\n' ' ') == "0 1 2 3 4 " ]] ||
  fail "plain super-chunk chunks: $(ls "$M/frames/plain.b2frame/chunks" | tr '\n' ' ')"
# Sizes: itemsize * items; chunks trimmed at the edges.
expect_size ndim/3d_f4.b2nd/data $((23 * 19 * 31 * 4))
expect_size ndim/3d_f4.b2nd/chunks/0.0.0 $((8 * 8 * 8 * 4))
expect_size ndim/3d_f4.b2nd/chunks/2.2.3 $((7 * 3 * 7 * 4))
expect_size ndim/3d_f4.b2nd/slices/0/07 $((19 * 31 * 4))
expect_size ndim/0d_f8.b2nd/data 8
expect_size dtypes/struct_i4_f8.b2nd/data $((41 * 29 * 12))
expect_size frames/plain.b2frame/chunks/4 $((1234 * 4))
expect_size frames/plain.b2frame/data $((17234 * 4))
# data.npy = header (from its own length field) + data.
for c in ndim/3d_f4.b2nd ndim/0d_f8.b2nd dtypes/struct_i4_f8.b2nd ndim/8d_i4.b2nd; do
  hlen=$(od -An -tu2 -j8 -N2 "$M/$c/data.npy" | tr -d ' ')
  expect_size "$c/data.npy" $((10 + hlen + $(stat -c %s "$M/$c/data")))
done
# Unpadded slice names work on lookup, and read the same bytes.
expect_size ndim/3d_f4.b2nd/slices/1/7 $((23 * 31 * 4))
check "slices/1/7 == slices/1/07" cmp "$M/ndim/3d_f4.b2nd/slices/1/7" "$M/ndim/3d_f4.b2nd/slices/1/07"
[[ -e $M/ndim/3d_f4.b2nd/slices/1/$(ls "$M/ndim/3d_f4.b2nd/slices/1" | wc -l) ]] &&
  fail "slices/1 has a file past its axis"
# A 1-D array's slices are its items.
[[ -d $M/ndim/1d_f8.b2nd/slices/0 ]] || fail "a 1-D array has no slices/0"
# Nested directories and sidecar files appear unchanged.
expect_ls nested README.txt deeper level1_i4.b2nd
expect_ls nested/deeper calibration.csv level2_f4.b2nd
while IFS=$'\t' read -r rel copy; do
  check "sidecar $rel unchanged" cmp "$M/$rel" "$R/$copy"
  [[ $(stat -c %s "$M/$rel") == $(stat -c %s "$S/$rel") ]] || fail "sidecar $rel: wrong size"
  [[ $(stat -c %Y "$M/$rel") == $(stat -c %Y "$S/$rel") ]] || fail "sidecar $rel: wrong mtime"
done <"$R/sidecars.tsv"
# Zero-length axes: empty files, never errors.
for c in ndim/empty_axis.b2nd ndim/empty_axis_zero_chunk.b2nd; do
  expect_size "$c/data" 0
  [[ $(wc -c <"$M/$c/data") == 0 ]] || fail "$c/data is not empty"
  expect_ls "$c/chunks"
  expect_ls "$c/slices" 0 1 2
  expect_ls "$c/slices/0" 0 1 2 3 4
  expect_ls "$c/slices/1"
  expect_size "$c/slices/0/3" 0
  expect_size "$c/slices/2/2" 0
  check "cat $c/slices/2/2" cat "$M/$c/slices/2/2"
  python_free_npy=$(head -c 6 "$M/$c/data.npy" | od -An -c | tr -d ' ')
  [[ $python_free_npy == '223NUMPY' ]] || fail "$c/data.npy has no .npy header"
done
expect_size ndim/empty_1d.b2nd/data 0
expect_ls ndim/empty_1d.b2nd/slices/0
# Times come from the source file.
src_mtime=$(stat -c %Y "$S/lazy/good.b2nd")
for f in lazy/good.b2nd lazy/good.b2nd/data lazy/good.b2nd/meta.json lazy/good.b2nd/chunks \
  lazy/good.b2nd/chunks/1.1 lazy/good.b2nd/slices/0/00; do
  [[ $(stat -c %Y "$M/$f") == "$src_mtime" ]] || fail "$f: mtime $(stat -c %Y "$M/$f"), source $src_mtime"
done
# ls -R and find work on a whole container (a 4-D array: no ENVI data.hdr
# and no MetaImage data.mhd, README.md "Headers, axes and voxel geometry";
# zarr/ holds .zarray, .zattrs, .zmetadata and one file per chunk, data.zarr/
# zarr.json and one file per chunk; one preview.png).
[[ $(find "$M/ndim/4d_i2.b2nd" -type f | wc -l) == $((3 + 2 + 3 * 2 * 3 * 3 + 7 + 6 + 5 + 9 + 3 + 3 * 2 * 3 * 3 + 1 + 3 * 2 * 3 * 3 + 1)) ]] ||
  fail "find ndim/4d_i2.b2nd -type f: $(find "$M/ndim/4d_i2.b2nd" -type f | wc -l) files"
ls -R "$M/frames" >/dev/null || fail "ls -R frames failed"
finish
