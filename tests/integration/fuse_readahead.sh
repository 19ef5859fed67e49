#!/usr/bin/env bash
# fuse.readahead: a sequential reader of slices/0/IDX has the blocks of the
# files after it decompressed ahead (image-sequence tools read slices/0/ in
# name order, and those files are consecutive pieces of `data`); the last
# file has none after it; a reader with page-cached reads, once the blocks
# are cached, finds each next file's pages pushed to the kernel before it
# opens it (after a plain `ls`: READDIRPLUS), and pushes decompress nothing,
# in every pass and whenever a file is read again from its start; the bytes
# are c-blosc2's throughout.
# Reads are O_DIRECT, 128 KiB each, so that each reaches the daemon as issued.
# Usage: fuse_readahead.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init readahead "$1"
require_fuse

S=$TMP/src
R=$TMP/ref
W=$TMP/want
M=$TMP/mnt
mkdir -p "$S" "$R" "$W"

# 16 planes of 512 x 512 float32 (1 MiB each); a block is a quarter of one
# plane (256 KiB), so every file of slices/0/ has 4 blocks of its own.
PLANES=16
BLOCKS_PER_FILE=4
"$FIXTURE" write "$S/a.b2nd" --ref "$R/a.b2nd" --dtype '<f4' --shape $PLANES,512,512 \
  --chunks 4,512,512 --blocks 1,128,512 --codec lz4 --filters shuffle --seed 7 >/dev/null ||
  {
    fail "b2nd_fixture write"
    exit 1
  }

# decompressed MOUNTPOINT: reads.blocks_decompressed once the background
# work has settled (the same value three times, 0.2 s apart).
decompressed() {
  local last=-1 same=0 v i
  for ((i = 0; i < 100; i++)); do
    v=$(stats_field "$1" reads.blocks_decompressed)
    if [[ $v == "$last" ]]; then
      ((++same >= 2)) && break
    else
      same=0
    fi
    last=$v
    sleep 0.2
  done
  echo "$last"
}

# read_plane MOUNTPOINT IDX: slices/0/IDX, read whole in 128 KiB O_DIRECT
# reads, against c-blosc2's bytes.
read_plane() {
  local file idx=$2
  file=$(printf '%s/a.b2nd/slices/0/%02d' "$1" "$idx")
  ref_slice "$R/a.b2nd" "$idx,:,:" "$W/$idx"
  dd if="$file" of="$TMP/got" bs=128K iflag=direct status=none || fail "dd $file"
  cmp -s "$TMP/got" "$W/$idx" || fail "$file differs from c-blosc2's bytes"
}

mount_fs "$S" "$M" -o cache_size=64M,threads=2 || exit 1
read_plane "$M" 0
after_first=$(decompressed "$M")
log "slices/0/00 read: $after_first blocks decompressed"
((after_first >= 2 * BLOCKS_PER_FILE)) ||
  fail "reading slices/0/00 decompressed $after_first blocks: none of slices/0/01's ($BLOCKS_PER_FILE of its own, at least $BLOCKS_PER_FILE more expected ahead)"
read_plane "$M" 1
read_plane "$M" 2
unmount_fs "$M"

# The last file: nothing after it to read ahead into.
mount_fs "$S" "$M" -o cache_size=64M,threads=2 || exit 1
read_plane "$M" $((PLANES - 1))
last=$(decompressed "$M")
((last == BLOCKS_PER_FILE)) ||
  fail "reading the last file decompressed $last blocks, not its $BLOCKS_PER_FILE"
# Without read-ahead, a file decodes its own blocks only.
unmount_fs "$M"
mount_fs "$S" "$M" -o cache_size=64M,threads=2,readahead=0 || exit 1
read_plane "$M" 0
none=$(decompressed "$M")
((none == BLOCKS_PER_FILE)) ||
  fail "readahead=0: reading slices/0/00 decompressed $none blocks, not its $BLOCKS_PER_FILE"
unmount_fs "$M"

# Pages pushed ahead: a reader going through slices/0/ in name order with
# ordinary (page-cached) reads finds the next file's pages stored in the
# kernel by the daemon (fuse_lowlevel_notify_store) before it opens it, and
# reads it without a request; its open carries the push on to the file after.
# Only files whose blocks are all decompressed are pushed (rendering one that
# is not would compete with the reader's own work): the first pass fills the
# block cache, the files' pages are dropped, and the second pass is the one
# checked. Each step waits for the push it expects. Rendering a pushed file
# counts as a read request of the daemon, so the reader's own requests are
# the requests less the pushes. A push is a hint (a file the kernel dropped
# is read as usual), so a few files may still need a request; most must not.
mount_fs "$S" "$M" -o cache_size=64M,threads=2 || exit 1
# A plain listing hands the kernel the inodes (READDIRPLUS), as an image
# sequence reader lists the directory before it opens the files.
ls "$M/a.b2nd/slices/0" >/dev/null || fail "ls slices/0"
for ((i = 0; i < PLANES; i++)); do ref_slice "$R/a.b2nd" "$i,:,:" "$W/$i"; done
for ((i = 0; i < PLANES; i++)); do
  file=$(printf '%s/a.b2nd/slices/0/%02d' "$M" "$i")
  cmp -s "$file" "$W/$i" || fail "first pass: $file differs from c-blosc2's bytes"
done
((cold_decoded = $(decompressed "$M")))
((cold_decoded == PLANES * BLOCKS_PER_FILE)) ||
  fail "the first pass decompressed $cold_decoded blocks, not each of the $((PLANES * BLOCKS_PER_FILE)) once"
# wait_pushed N: until N files have been pushed (10 s at most).
wait_pushed() {
  local t
  for ((t = 0; t < 100; t++)); do
    (($(stats_field "$M" reads.pushed_files) >= $1)) && return 0
    sleep 0.1
  done
  return 1
}
# pushed_pass NAME: drops the files' pages (the kernel keeps the inodes) and
# reads them in name order, each next file pushed before its reader opens it.
pushed_pass() {
  local name=$1 with_requests=0 pushed_before i file requests0 pushed0 requests pushes decoded
  "$PY" - "$M/a.b2nd/slices/0" <<'PYEOF' || fail "$name: dropping the pages of slices/0"
import os, sys
for name in sorted(os.listdir(sys.argv[1])):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PYEOF
  pushed_before=$(stats_field "$M" reads.pushed_files)
  for ((i = 0; i < PLANES; i++)); do
    file=$(printf '%s/a.b2nd/slices/0/%02d' "$M" "$i")
    requests0=$(stats_field "$M" reads.requests)
    pushed0=$(stats_field "$M" reads.pushed_files)
    cat "$file" >"$TMP/got" || fail "$name: cat $file"
    cmp -s "$TMP/got" "$W/$i" || fail "$name: $file differs from c-blosc2's bytes"
    ((i + 1 < PLANES)) && { wait_pushed $((pushed_before + i + 1)) || fail "$name: the file after $file was not pushed"; }
    requests=$(($(stats_field "$M" reads.requests) - requests0))
    pushes=$(($(stats_field "$M" reads.pushed_files) - pushed0))
    ((i > 0 && requests > pushes)) && with_requests=$((with_requests + 1))
  done
  ((decoded = $(decompressed "$M")))
  ((decoded == cold_decoded)) ||
    fail "$name decompressed $((decoded - cold_decoded)) blocks (pushes must only copy cached blocks)"
  log "$name: $with_requests of $((PLANES - 1)) pushed files needed read requests of their own"
  ((with_requests <= (PLANES - 1) / 4)) ||
    fail "$name: $with_requests of $((PLANES - 1)) pushed files needed read requests of their own"
}
pushed_pass "the second pass"
pushed_pass "the third pass"
# A file read again from its start, in one read (as readers with a buffer of
# a whole image do), reads ahead and pushes the next files again: what an
# earlier pass asked for says nothing about what the kernel holds now.
for again in 1 2; do
  pushed0=$(stats_field "$M" reads.pushed_files)
  dd if="$M/a.b2nd/slices/0/00" of="$TMP/got" bs=1M iflag=direct status=none ||
    fail "dd slices/0/00"
  cmp -s "$TMP/got" "$W/0" || fail "slices/0/00 read again differs from c-blosc2's bytes"
  wait_pushed $((pushed0 + 1)) || fail "reading slices/0/00 from its start again ($again) pushed nothing"
done
pushed_bytes=$(stats_field "$M" reads.pushed_bytes)
((pushed_bytes >= 2 * (PLANES - 1) * 512 * 512 * 4)) ||
  fail "pushed_bytes is $pushed_bytes, less than $((2 * (PLANES - 1) * 512 * 512 * 4))"
errors=$(stats_field "$M" reads.errors)
[[ $errors == 0 ]] || fail "reads.errors is $errors"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
