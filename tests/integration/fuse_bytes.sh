#!/usr/bin/env bash
# fuse.bytes: every byte a mount serves equals c-blosc2's own reads.
# fuse_compare walks the whole fixture set (read() in odd pieces, pread() at
# random offsets, mmap()) against b2nd_get_slice_cbuffer; then cat, dd, cmp,
# md5sum, cp and tar read a few files, to prove ordinary tools work.
# Usage: fuse_bytes.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init bytes "$1"
require_fuse

make_fixtures "$TMP"
R=$TMP/ref
M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=32M,threads=2 || exit 1

check "fuse_compare bytes" "$FUSE_COMPARE" bytes "$M" "$R"

X=$TMP/x
mkdir -p "$X"
for c in basic_f8.b2nd ndim/3d_f4.b2nd ndim/0d_f8.b2nd frames/sparse_f4.b2nd \
  legacy/caterva_i2.cat frames/plain.b2frame medium/image_u2.b2nd codecs/zstd_dict.b2nd; do
  ref=$(ref_of "$R" "$c") || continue
  ref_slice "$ref" "$(full_box "$ref")" "$X/want"
  cat "$M/$c/data" >"$X/got" || fail "cat $c/data failed"
  check "cat $c/data equals the reference" cmp "$X/got" "$X/want"
  [[ $(md5sum <"$M/$c/data") == $(md5sum <"$X/want") ]] || fail "md5sum of $c/data differs"
  # Odd offsets and counts, and a block size that is not a power of two.
  size=$(stat -c %s "$X/want")
  for args in "bs=1 skip=3 count=1" "bs=1 skip=7 count=4095" "bs=3 skip=5 count=17" \
    "bs=4097" "bs=4097 skip=1" "bs=65537 skip=1 count=2" "bs=1 skip=$((size > 5 ? size - 5 : 0))"; do
    # shellcheck disable=SC2086
    dd if="$M/$c/data" of="$X/dd_got" $args status=none || fail "dd $args of $c/data failed"
    # shellcheck disable=SC2086
    dd if="$X/want" of="$X/dd_want" $args status=none
    check "dd $args of $c/data" cmp "$X/dd_got" "$X/dd_want"
  done
  # data.npy ends with data.
  npy_size=$(stat -c %s "$M/$c/data.npy")
  tail -c "$size" "$M/$c/data.npy" >"$X/npy_tail"
  check "$c/data.npy ends with the data" cmp "$X/npy_tail" "$X/want"
  ((npy_size > size)) || fail "$c/data.npy ($npy_size bytes) has no header"
  [[ $(head -c 6 "$M/$c/data.npy" | od -An -c | tr -d ' ') == '223NUMPY' ]] ||
    fail "$c/data.npy does not start with \\x93NUMPY"
done

# Chunks and slices with cat/cp, against `b2nd_fixture slice`.
ref=$(ref_of "$R" ndim/3d_f4.b2nd)
for chunk in 0.0.0 2.1.3 1.2.0; do
  ref_slice "$ref" "$(chunk_box "$ref" "$chunk")" "$X/want"
  cp "$M/ndim/3d_f4.b2nd/chunks/$chunk" "$X/got" || fail "cp chunks/$chunk failed"
  check "cp ndim/3d_f4.b2nd/chunks/$chunk" cmp "$X/got" "$X/want"
done
for s in "0/00=0,:,:" "0/22=22,:,:" "1/07=:,7,:" "2/30=:,:,30" "2/5=:,:,5"; do
  ref_slice "$ref" "${s#*=}" "$X/want"
  check "cat ndim/3d_f4.b2nd/slices/${s%%=*}" cmp "$M/ndim/3d_f4.b2nd/slices/${s%%=*}" "$X/want"
done
ref=$(ref_of "$R" frames/plain.b2frame)
ref_slice "$ref" "16000:17234" "$X/want"
check "cat frames/plain.b2frame/chunks/4 (short last chunk)" cmp "$M/frames/plain.b2frame/chunks/4" "$X/want"
ref_slice "$ref" "4321" "$X/want"
check "cat frames/plain.b2frame/slices/0/04321" cmp "$M/frames/plain.b2frame/slices/0/04321" "$X/want"

# tar and cp -r of a whole container directory.
tar -C "$M" -cf "$X/c.tar" ndim/2d_i4.b2nd || fail "tar of ndim/2d_i4.b2nd failed"
mkdir -p "$X/untar" && tar -C "$X/untar" -xf "$X/c.tar"
check "tar round trip of ndim/2d_i4.b2nd" diff -r "$M/ndim/2d_i4.b2nd" "$X/untar/ndim/2d_i4.b2nd"
cp -r "$M/nested" "$X/nested_copy" || fail "cp -r nested failed"
check "cp -r nested" diff -r "$M/nested" "$X/nested_copy"

# A clean unmount ends the daemon with status 0.
check "fusermount3 -u" fusermount3 -u "$M"
wait "$DAEMON_PID"
rc=$?
((rc == 0)) || fail "b2ndfs exited with status $rc after the unmount: $(tail -5 "$M.log")"
finish
