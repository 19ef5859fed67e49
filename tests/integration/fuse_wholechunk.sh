#!/usr/bin/env bash
# fuse.wholechunk: chunks that can only be decoded whole (the delta filter
# codes every block against the chunk's first; c-blosc2 cannot decode one
# block of a ZSTD-dictionary chunk) are decoded once per chunk, however many
# readers want blocks of them at the same time. Each array is read cold by 16
# threads released together per chunk, each reading another block of it
# (O_DIRECT, so every read reaches the daemon as issued); every byte is
# compared with c-blosc2's, and reads.whole_chunk_decodes in .b2ndfs/stats
# must grow by exactly the number of chunks touched.
# Usage: fuse_wholechunk.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lifecycle_init wholechunk "$1"
require_fuse

S=$TMP/src
R=$TMP/ref
W=$TMP/want
M=$TMP/mnt
mkdir -p "$S" "$R" "$W"

# 2048 x 512 int32, chunks of 512 whole rows (1 MiB, contiguous in `data`),
# blocks of 32 rows (64 KiB): 4 chunks of 16 blocks.
# shellcheck disable=SC2054
GEOMETRY=(--dtype '<i4' --shape 2048,512 --chunks 512,512 --blocks 32,512)
CHUNK_BYTES=$((512 * 512 * 4))
NCHUNKS=4
THREADS=16
write() {
  local name=$1
  shift
  "$FIXTURE" write "$S/$name.b2nd" --ref "$R/$name.b2nd" "${GEOMETRY[@]}" "$@" >/dev/null ||
    {
      fail "b2nd_fixture write $name $*"
      exit 1
    }
  # The reference is a twin without delta / dictionary (see b2nd_fixture).
  ref_slice "$R/$name.b2nd" ":,:" "$W/$name"
}
write delta --codec lz4 --filters delta,shuffle --seed 41
write dict --codec zstd --dict --seed 42
write dict_delta --codec zstd --dict --filters delta,shuffle --seed 43

mount_fs "$S" "$M" -o cache_size=64M,threads=4 || exit 1

decodes() {
  local v
  v=$(stats_field "$M" reads.whole_chunk_decodes)
  if [[ ! $v =~ ^[0-9]+$ ]]; then
    fail "no reads.whole_chunk_decodes in $M/.b2ndfs/stats: $(head -c 400 "$M/.b2ndfs/stats" 2>&1)"
    v=-1
  fi
  echo "$v"
}

for name in delta dict dict_delta; do
  before=$(decodes)
  "$PROBE" blocks "$M/$name.b2nd/data" "$W/$name" --chunk-bytes $CHUNK_BYTES \
    --threads $THREADS --direct >"$TMP/$name.out" 2>&1 ||
    fail "$name: concurrent reads: $(head -c 800 "$TMP/$name.out")"
  after=$(decodes)
  log "$name: $(head -n1 "$TMP/$name.out"); whole-chunk decodes $before -> $after"
  (((after - before) == NCHUNKS)) ||
    fail "$name: $((after - before)) whole-chunk decodes for $NCHUNKS chunks read by $THREADS threads at once (expected exactly $NCHUNKS)"
  # All of it again, through the chunk files: cached now, no decode.
  for c in 0 1 2 3; do
    cmp -s "$M/$name.b2nd/chunks/$c.0" <(dd if="$W/$name" bs=$CHUNK_BYTES skip=$c count=1 status=none) ||
      fail "$name: chunks/$c.0 differs from c-blosc2's"
  done
  again=$(decodes)
  ((again == after)) || fail "$name: $((again - after)) more whole-chunk decodes reading cached chunks"
done
errors=$(stats_field "$M" reads.errors)
[[ $errors == 0 ]] || fail "reads.errors is $errors"
# The blocks live in slabs (none under ASan, which keeps them off).
slab_bytes=$(stats_field "$M" buffer_memory.slab_bytes)
slab_used=$(stats_field "$M" buffer_memory.slab_bytes_used)
fallbacks=$(stats_field "$M" buffer_memory.slab_fallbacks)
[[ $slab_bytes =~ ^[0-9]+$ && $slab_used =~ ^[0-9]+$ && $fallbacks =~ ^[0-9]+$ ]] &&
  ((slab_used <= slab_bytes)) ||
  fail "buffer_memory: slab_bytes_used '$slab_used' of slab_bytes '$slab_bytes', fallbacks '$fallbacks'"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
