#!/usr/bin/env bash
# fuse.concurrency: many readers at once, all byte-exact, through a small
# cache (so blocks are evicted while others still read them); then a clean
# unmount (busy while a file is open, fine once it is closed, nothing left).
# Usage: fuse_concurrency.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init concurrency "$1"
require_fuse

make_fixtures "$TMP"
R=$TMP/ref
M=$TMP/mnt
mount_fs "$TMP/src" "$M" -o cache_size=4M,threads=4 || exit 1

# 8 threads in one process: pread() and mmap(), one file shared by all.
check "fuse_compare concurrency (8 threads)" "$FUSE_COMPARE" concurrency "$M" "$R" 8

# 8 processes: 4 dd on the same file at different offsets, 4 on others.
mkdir -p "$TMP/want"
ref_slice "$(ref_of "$R" medium/volume_f4.b2nd)" ":,:,:" "$TMP/want/volume"
ref_slice "$(ref_of "$R" medium/image_u2.b2nd)" ":,:" "$TMP/want/image"
ref_slice "$(ref_of "$R" ndim/3d_f4.b2nd)" ":,:,:" "$TMP/want/3d"
ref_slice "$(ref_of "$R" frames/sparse_f4.b2nd)" ":,:,:" "$TMP/want/sparse"
ref_slice "$(ref_of "$R" legacy/caterva_sparse.caterva)" ":,:" "$TMP/want/caterva"
pids=()
names=()
for i in 1 2 3 4; do
  (
    dd_args="bs=4097 skip=$((i * 397 + 1)) count=$((500 + i * 13))"
    # shellcheck disable=SC2086
    cmp <(dd if="$M/medium/volume_f4.b2nd/data" $dd_args status=none) <(dd if="$TMP/want/volume" $dd_args status=none)
  ) &
  pids+=($!)
  names+=("dd volume_f4 data, reader $i")
done
for pair in "medium/image_u2.b2nd:image" "ndim/3d_f4.b2nd:3d" "frames/sparse_f4.b2nd:sparse" \
  "legacy/caterva_sparse.caterva:caterva"; do
  cmp "$M/${pair%%:*}/data" "$TMP/want/${pair#*:}" &
  pids+=($!)
  names+=("cmp ${pair%%:*}/data")
done
for k in "${!pids[@]}"; do
  wait "${pids[$k]}" || fail "${names[$k]} differs from the reference"
done

# Same again while the helper's threads run, for overlap between the two.
"$FUSE_COMPARE" concurrency "$M" "$R" 4 >"$TMP/helper.out" 2>&1 &
helper=$!
for i in 1 2 3 4; do
  cmp "$M/medium/volume_f4.b2nd/data" "$TMP/want/volume" &
  pids[i]=$!
done
for i in 1 2 3 4; do wait "${pids[i]}" || fail "cmp of volume_f4 data #$i (with the helper running) differs"; done
wait "$helper" || fail "fuse_compare concurrency (with cmp running): $(cat "$TMP/helper.out")"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"

# Busy while a file is open; clean once it is closed.
exec 7<"$M/ndim/3d_f4.b2nd/data"
if fusermount3 -u "$M" 2>"$TMP/busy.err"; then
  fail "fusermount3 -u succeeded while a file was open"
else
  grep -q 'busy' "$TMP/busy.err" || fail "fusermount3 -u with an open file: $(cat "$TMP/busy.err")"
fi
exec 7<&-
check "fusermount3 -u returns 0" fusermount3 -u "$M"
wait "$DAEMON_PID"
rc=$?
((rc == 0)) || fail "b2ndfs exited with status $rc after fusermount3 -u"
is_mounted "$M" && fail "$M is still mounted"
out=$(stat "$M" 2>&1) || fail "after the unmount: $out"
grep -q 'not connected' <<<"$out" && fail "after the unmount: $out"
[[ -z $(ls -A "$M") ]] || fail "the mountpoint is not the empty directory again"
finish
