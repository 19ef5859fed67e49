#!/usr/bin/env bash
# fuse.sparse_rewrite: a sparse frame (a directory of chunks.b2frame, the
# index, and one NNNNNNNN.chunk file per chunk) whose chunk file is rewritten
# in place while a file of it is open never gives a mix of two versions
# (README.md, "Containers that change"). A reader opens X.b2nd/data and reads
# its first chunk; chunk file 00000005.chunk (never read yet) is rewritten in
# place with another version's bytes, as c-blosc2 does before it updates
# chunks.b2frame, and the index is left alone; the reader reads the rest and
# its first chunk again (cached pages dropped): every piece must be the old
# version's bytes or fail with EIO, never the new chunk's bytes under the old
# index. Then every chunk file and chunks.b2frame are rewritten in place
# (the whole new version): the open reader still gets old bytes or EIO, and a
# new open of data (and data.npy) is the new version. From a local directory,
# then the same through a web server (nginx), mounted with readahead=0 so
# that nothing the reader did not ask for is read early.
# Both versions are written by c-blosc2 (b2nd_fixture write --sparse); every
# expected byte comes from c-blosc2 (b2nd_fixture slice).
# Usage: fuse_sparse_rewrite.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
lifecycle_init sparse_rewrite "$1"
require_fuse
READER=("$PY" "$(dirname "${BASH_SOURCE[0]}")/open_reader.py")

G=$TMP/gen
R=$TMP/ref
W=$TMP/want
mkdir -p "$G" "$R" "$W"
# 256 x 1024 float64 in 8 chunks of 32 rows (256 KiB each), same geometry in
# both versions, other data.
for v in old:71 new:72; do
  "$FIXTURE" write "$G/${v%%:*}.b2nd" --ref "$R/${v%%:*}.b2nd" --dtype '<f8' --shape 256,1024 \
    --chunks 32,1024 --blocks 8,1024 --seed "${v#*:}" --sparse >/dev/null || {
    fail "b2nd_fixture write ${v%%:*}"
    exit 1
  }
  ref_slice "$R/${v%%:*}.b2nd" ":,:" "$W/${v%%:*}"
done
CHUNK_BYTES=$((32 * 1024 * 8))
[[ -f $G/old.b2nd/00000005.chunk && -f $G/old.b2nd/chunks.b2frame ]] || {
  fail "setup: $G/old.b2nd is not a sparse frame: $(ls "$G/old.b2nd")"
  exit 1
}
cmp -s "$G/old.b2nd/00000005.chunk" "$G/new.b2nd/00000005.chunk" && {
  fail "setup: the versions have the same chunk 5"
  exit 1
}

# rewrite_in_place FILE FROM: FILE gets FROM's bytes, same inode (truncated
# and written, as c-blosc2's sparse frames rewrite a chunk file).
rewrite_in_place() {
  local ino
  ino=$(stat -c %i "$1")
  cat "$2" >"$1" || fail "setup: rewriting $1"
  [[ $(stat -c %i "$1") == "$ino" ]] || fail "setup: $1 was not rewritten in place"
}

# never_new WHAT: the reader's last check (READER_SAID) got only old bytes
# or EIO, in every phase.
never_new() {
  local what=$1 line
  while read -r line; do
    [[ $line == phase* ]] || continue
    log "$what: $line"
    [[ $line == *" new=0 other=0"* ]] ||
      fail "$what: a read of the open file gave bytes that are not the old version's (new: the new chunk's bytes under the old index), or failed with another errno than EIO: $line"
  done <<<"$READER_SAID"
  grep -q '^phase rest ' <<<"$READER_SAID" || fail "$what: the reader said nothing: $READER_SAID"
}

# scenario NAME DIR MOUNT_SOURCE [b2ndfs options]: DIR/X.b2nd is the sparse
# frame, mounted from MOUNT_SOURCE.
scenario() {
  local name=$1 dir=$2 src=$3 mnt=$TMP/mnt_$1 f err
  shift 3
  rm -rf "$dir/X.b2nd"
  cp -r "$G/old.b2nd" "$dir/X.b2nd"
  mount_fs "$src" "$mnt" -o cache_size=32M,readahead=0 "$@" || return 1
  reader_start "$name" "${READER[@]}" read "$mnt/X.b2nd/data" "$W/old" --first "$CHUNK_BYTES" \
    --new "$W/new" --piece 32768 || return 1

  rewrite_in_place "$dir/X.b2nd/00000005.chunk" "$G/new.b2nd/00000005.chunk"
  if reader_check "$name"; then
    never_new "$name: chunk 5 rewritten in place, index unchanged"
  else
    fail "$name: the open reader: $READER_SAID"
  fi

  for f in "$G/new.b2nd"/*.chunk; do rewrite_in_place "$dir/X.b2nd/${f##*/}" "$f"; done
  rewrite_in_place "$dir/X.b2nd/chunks.b2frame" "$G/new.b2nd/chunks.b2frame"
  # A remote source sees the change once it revalidates (after a second).
  wait_until 10 cmp -s "$mnt/X.b2nd/data" "$W/new" ||
    fail "$name: after the whole new version was written, a new open of data is not it: $(cmp "$mnt/X.b2nd/data" "$W/new" 2>&1 | head -c 200)"
  err=$(npy_matches "$mnt/X.b2nd/data.npy" "$W/new" 256,1024 2>&1) ||
    fail "$name: a new open of data.npy is not the new version: $err"
  if reader_check "$name"; then
    never_new "$name: every chunk and chunks.b2frame rewritten"
  else
    fail "$name: the open reader: $READER_SAID"
  fi
  hold_stop "$name"
  pid_alive "$DAEMON_PID" || fail "$name: b2ndfs died"
  unmount_fs "$mnt"
}

mkdir -p "$TMP/src" "$TMP/web"
scenario local "$TMP/src" "$TMP/src"

nginx_start "web=$TMP/web" || exit 1
trap 'ITEST_RC=$?; hold_stop_all; nginx_stop; (exit $ITEST_RC); itest_cleanup' EXIT
scenario http "$TMP/web" "$NGINX_URL/web/" -o timeout=5,retries=1
finish
