#!/usr/bin/env bash
# fuse.http: the fixture set served by a real nginx and mounted as
# http://127.0.0.1:PORT/fx/ reads exactly as the local mount does (fuse_compare
# tree and bytes against c-blosc2), through JSON and HTML indexes and as a
# single container URL; then faults: 404, 403, 503 answered with retries and
# then EIO within the timeout, nginx stopped mid-read (EIO within the
# timeout, the mount stays alive) and restarted (reads work again), an
# object replaced on the server (its new version is served), and answers cut
# short by a proxy (asked for again, or EIO within the timeout). A whole
# sequential read fetches its object's bytes once (within 1.1x). A mount through
# a proxy adding 20 ms round trips reads byte-exact and shows the latency in
# remote.latency_us.
# Usage: fuse_http.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init http "$1"
require_fuse

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
F=$TMP/faults
X=$TMP/x
mkdir -p "$F" "$X"
cp "$S/ndim/2d_i4.b2nd" "$F/good.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/denied.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/gone.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/replaced.b2nd"
cp "$S/medium/image_u2.b2nd" "$F/large.b2nd"
printf 'notes\n' >"$F/notes.txt"
# 64x64x192 float32 in three chunks of 8^3 blocks (over 1 MiB stored, so
# read by ranges, not fetched whole): a slice across the last axis needs
# every 8th block of one chunk's bytes, 64 separate ranges.
"$FIXTURE" write "$F/blocks.b2nd" --shape 64,64,192 --chunks 64,64,64 --blocks 8,8,8 \
  --dtype "<f4" --ref "$X/blocks_ref.b2nd" >/dev/null || fail "b2nd_fixture write failed"
NGINX_DENY="/faults/denied.b2nd /slow/faults/denied.b2nd"
nginx_start fx="$S" faults="$F" || exit 1
log "nginx on $NGINX_URL"

# --- conformance: the whole fixture set, byte-exact ---------------------------
M=$TMP/mnt
mount_fs "$NGINX_URL/fx/" "$M" -o cache_size=32M,threads=2 || exit 1
check "fuse_compare tree over http" "$FUSE_COMPARE" tree "$M" "$S" "$R"
check "fuse_compare bytes over http" "$FUSE_COMPARE" bytes "$M" "$R"
grep -q "fsname=$NGINX_URL/fx\|$NGINX_URL/fx " /proc/self/mounts ||
  fail "the mount table does not name the URL: $(grep "$M" /proc/self/mounts)"
requests=$(stats_field "$M" remote.requests) || fail ".b2ndfs/stats has no remote.requests"
((${requests:-0} > 0)) || fail ".b2ndfs/stats counts no remote requests"

# HTML indexes (nginx's own page) give the same tree.
MH=$TMP/mnt_html
mount_fs "$NGINX_URL/html/fx/" "$MH" -o cache_size=16M || exit 1
check "fuse_compare tree over an HTML index" "$FUSE_COMPARE" tree "$MH" "$S" "$R"

# A single container URL is the mount's root.
M1=$TMP/mnt_one
mount_fs "$NGINX_URL/fx/ndim/3d_f4.b2nd" "$M1" || exit 1
want_data "$R" ndim/3d_f4.b2nd "$X/want_3d"
check "single container URL: data" cmp "$M1/data" "$X/want_3d"
# And a sparse frame (a directory) as one.
M2=$TMP/mnt_sparse
mount_fs "$NGINX_URL/fx/frames/sparse_f4.b2nd/" "$M2" || exit 1
want_data "$R" frames/sparse_f4.b2nd "$X/want_sparse"
check "single sparse-frame URL: data" cmp "$M2/data" "$X/want_sparse"

# A directory URL without its trailing '/': nginx redirects it to the index.
MD=$TMP/mnt_noslash
mount_fs "$NGINX_URL/root-fx" "$MD" || exit 1
check "a directory URL without '/': the tree" "$FUSE_COMPARE" tree "$MD" "$S" "$R"

# Weak ETags (W/"..."), which If-Match never matches: versions are held by
# Last-Modified instead, and reads work.
MW=$TMP/mnt_weak
mount_fs "$NGINX_URL/weak/fx/" "$MW" || exit 1
check "weak ETags: data" cmp "$MW/ndim/3d_f4.b2nd/data" "$X/want_3d"
# An answer that says it is encoded is not taken for the object's bytes.
ME=$TMP/mnt_encoded
mount_fs "$NGINX_URL/encoded/fx/" "$ME" -o retries=0 || exit 1
if cat "$ME/ndim/3d_f4.b2nd/data" >/dev/null 2>"$X/encoded.err"; then
  fail "an object served with Content-Encoding: gzip was read as the object"
fi
grep -q "Content-Encoding: gzip" "$ME.log" ||
  fail "no Content-Encoding error in the log: $(tail -3 "$ME.log")"

# Opening a container asks for its object once and reads the two ends of its
# frame together (header, trailer and chunk index inside them): three
# requests, not one per metadata read (eight before: six dependent ranges).
MO=$TMP/mnt_open
mount_fs "$NGINX_URL/fx/" "$MO" -o prefetch_heads=0 || exit 1
ls "$MO/ndim" >/dev/null || fail "cannot list ndim/ over http"
before=$(stats_field "$MO" remote.requests)
stat "$MO/ndim/3d_f4.b2nd/data" >/dev/null || fail "cannot open ndim/3d_f4.b2nd over http"
open_requests=$(($(stats_field "$MO" remote.requests) - before))
log "opening a container: $open_requests requests"
((open_requests <= 3)) || fail "opening a container took $open_requests requests (want <= 3)"
check "opened container: meta.json" grep -q '"shape"' "$MO/ndim/3d_f4.b2nd/meta.json"

# A whole sequential read fetches every compressed byte once: the kernel's
# concurrent reads and the mount's read-ahead want the same blocks at once,
# and bytes another read has in flight are shared, not fetched again. Bytes
# fetched (metadata and chunk heads included) stay within 1.1x the object,
# and blocks are loaded ahead of the reader.
MS=$TMP/mnt_seq
mount_fs "$NGINX_URL/fx/medium/volume_f4.b2nd" "$MS" -o cache_size=64M,threads=4 || exit 1
want_data "$R" medium/volume_f4.b2nd "$X/want_volume"
cat "$MS/data" >"$X/got_volume" || fail "sequential read of medium/volume_f4.b2nd/data failed"
check "sequential read: data" cmp "$X/got_volume" "$X/want_volume"
fetched=$(stats_field "$MS" remote.bytes_fetched) || fail ".b2ndfs/stats has no remote.bytes_fetched"
shared=$(stats_field "$MS" reads.compressed_bytes_shared) || shared=0
object=$(stat -c %s "$S/medium/volume_f4.b2nd")
log "sequential read: fetched $fetched bytes of a $object-byte object ($shared shared in flight)"
((fetched > 0 && fetched * 10 <= object * 11)) ||
  fail "a whole sequential read fetched $fetched bytes of a $object-byte object (over 1.1x: bytes fetched twice)"
# ... and its blocks were loaded ahead of the reader (read-ahead of ranges).
ahead=$(stats_field "$MS" reads.readahead_blocks)
((${ahead:-0} > 0)) || fail "a sequential read over http loaded no blocks ahead (reads.readahead_blocks=$ahead)"

# The 64 block ranges of a last-axis slice go out together (ByteSource::
# ReadMany on libcurl's multi interface), not one per worker thread (2 here),
# and nginx answers them as multi-range requests (multipart/byteranges): 8
# requests of 8 ranges.
MB=$TMP/mnt_blocks
mount_fs "$NGINX_URL/faults/blocks.b2nd" "$MB" -o cache_size=16M,threads=2 || exit 1
cat "$MB/meta.json" >/dev/null || fail "meta.json of blocks.b2nd"
before=$(stats_field "$MB" remote.requests)
ref_slice "$X/blocks_ref.b2nd" "0:64,0:64,37" "$X/want_slice"
cat "$MB/slices/2/37" >"$X/got_slice" || fail "reading slices/2/37 over http failed"
check "last-axis slice over http: data" cmp "$X/got_slice" "$X/want_slice"
peak=$(stats_field "$MB" remote.peak_requests_in_flight) || fail "no remote.peak_requests_in_flight"
slice_requests=$(($(stats_field "$MB" remote.requests) - before))
log "last-axis slice: $slice_requests requests (chunk head included), at most $peak in flight at once"
((${peak:-0} >= 8)) || fail "a last-axis slice had at most $peak requests in flight (want >= 8)"
((slice_requests <= 16)) || fail "a last-axis slice took $slice_requests requests (multi-range: want <= 16)"

# Chunk heads are never fetched at open (meta.json, stat and `ls -l` need
# none; prefetch_heads= bounds what a first data read fetches with its own):
# meta.json reads the frame's ends only, with or without prefetch_heads=0,
# and the first slice fetches the other two chunks' heads with its own.
MP=$TMP/mnt_heads
mount_fs "$NGINX_URL/faults/blocks.b2nd" "$MP" -o cache_size=16M,threads=2 || exit 1
M0=$TMP/mnt_noheads
mount_fs "$NGINX_URL/faults/blocks.b2nd" "$M0" -o cache_size=16M,threads=2,prefetch_heads=0 || exit 1
cat "$MP/meta.json" >/dev/null || fail "meta.json of blocks.b2nd"
cat "$M0/meta.json" >/dev/null || fail "meta.json of blocks.b2nd (prefetch_heads=0)"
sleep 0.5
meta_reads=$(stats_field "$MP" reads.source_reads)
meta_reads0=$(stats_field "$M0" reads.source_reads)
((meta_reads == meta_reads0)) || fail "meta.json made $meta_reads source reads, $meta_reads0 with prefetch_heads=0 (a head fetched at open?)"
check "slice (heads with the first read): data" cmp "$MP/slices/2/37" "$X/want_slice"
check "slice with prefetch_heads=0: data" cmp "$M0/slices/2/37" "$X/want_slice"
with_heads=$(($(stats_field "$MP" reads.source_reads) - meta_reads))
without_heads=$(($(stats_field "$M0" reads.source_reads) - meta_reads0))
log "meta.json: $meta_reads source reads; last-axis slice: $with_heads, $without_heads with prefetch_heads=0"
((with_heads == without_heads + 2)) ||
  fail "a slice made $with_heads source reads, $without_heads with prefetch_heads=0 (want 2 more: the other chunks' heads)"

# A URL that does not answer is refused before the daemon detaches.
if "$B2NDFS" "$NGINX_URL/fx/nope/" "$TMP/never" 2>"$X/refused.log"; then
  fail "b2ndfs mounted a URL that answers 404"
fi
grep -q "$NGINX_URL/fx/nope" "$X/refused.log" || fail "the refusal does not name the URL: $(cat "$X/refused.log")"

# --- faults -----------------------------------------------------------------
MF=$TMP/mnt_faults
mount_fs "$NGINX_URL/faults/" "$MF" -o timeout=4,retries=2,cache_size=16M || exit 1
want_data "$R" ndim/2d_i4.b2nd "$X/want_2d"
check "faults/good.b2nd reads" cmp "$MF/good.b2nd/data" "$X/want_2d"
check "faults/notes.txt reads" cmp "$MF/notes.txt" "$F/notes.txt"

# 404: a name that is not there, and an object deleted on the server.
out=$(cat "$MF/nope.b2nd/meta.json" 2>&1) && fail "nope.b2nd/meta.json read"
[[ $out == *"No such file"* ]] || fail "nope.b2nd: '$out', expected ENOENT"
ls "$MF" | grep -qx gone.b2nd || fail "gone.b2nd is not listed"
rm "$F/gone.b2nd"
sleep 1.5  # the listing is revalidated after 1 s
out=$(cat "$MF/gone.b2nd/meta.json" 2>&1) && fail "gone.b2nd/meta.json read after its deletion"
[[ $out == *"No such file"* ]] || fail "deleted gone.b2nd: '$out', expected ENOENT"

# 403.
out=$(cat "$MF/denied.b2nd/meta.json" 2>&1) && fail "denied.b2nd/meta.json read despite 403"
[[ $out == *"Permission denied"* ]] || fail "denied.b2nd: '$out', expected EACCES"

# An object replaced on the server: the new version is served.
check "replaced.b2nd before" cmp "$MF/replaced.b2nd/data" "$X/want_2d"
cp "$S/ndim/3d_f4.b2nd" "$F/.replaced.tmp" && mv "$F/.replaced.tmp" "$F/replaced.b2nd"
sleep 1.5
check "replaced.b2nd after the server's copy changed" cmp "$MF/replaced.b2nd/data" "$X/want_3d"
[[ $(stats_field "$MF" containers.generations_replaced) -ge 1 ]] ||
  fail "the replacement did not make a new generation"

# 503 on every Range request: retried (retries=2), then EIO within the timeout.
MB=$TMP/mnt_flaky
mount_fs "$NGINX_URL/flaky/faults/" "$MB" -o timeout=3,retries=2 || exit 1
t0=$(now)
out=$(cat "$MB/good.b2nd/data" 2>&1 >/dev/null) && fail "a read through 503 answers succeeded"
[[ $out == *"Input/output error"* ]] || fail "503: '$out', expected EIO"
within 6 "$t0" || fail "503: the read took $(elapsed "$t0") s with timeout=3"
log "503: EIO after $(elapsed "$t0") s"
retries=$(stats_field "$MB" remote.retries)
((${retries:-0} >= 2)) || fail "503 answers were not retried (remote.retries=$retries)"
grep -q "HTTP 503" "$MB.log" || fail "the 503 failure is not logged: $(tail -3 "$MB.log")"
server_errors=$(stats_field "$MB" remote.errors_by_kind.server)
((${server_errors:-0} >= 1)) || fail "503 failures are not counted as server errors ($server_errors)"

# Answers cut short (a proxy that closes the connection mid-body): the first
# two answers longer than 100 KB cut there are asked for again (the ranges
# that did not come), byte-exact; every answer longer than 1 KB cut there
# (index pages, chunked, pass): the read fails with EIO within the timeout,
# and the mount answers.
want_data "$R" medium/image_u2.b2nd "$X/want_cut"
CUTTING_PROXY=$(dirname "${BASH_SOURCE[0]}")/cutting_proxy.py
CUT_PORT=$(free_port)
proxy_start "$X/cut.out" "$CUTTING_PROXY" "$CUT_PORT" "$NGINX_PORT" 100000 2
MC=$TMP/mnt_cut
mount_fs "http://127.0.0.1:$CUT_PORT/faults/" "$MC" -o timeout=10,retries=3,cache_size=16M || exit 1
check "answers cut short twice: data" cmp "$MC/large.b2nd/data" "$X/want_cut"
retries=$(stats_field "$MC" remote.retries)
((${retries:-0} >= 1)) || fail "answers cut short were not asked for again (remote.retries=$retries)"
[[ $(grep -c '^cut ' "$X/cut.out") == 2 ]] || fail "the proxy did not cut two answers: $(cat "$X/cut.out")"
CUT_ALL_PORT=$(free_port)
proxy_start "$X/cut_all.out" "$CUTTING_PROXY" "$CUT_ALL_PORT" "$NGINX_PORT" 1000
MC2=$TMP/mnt_cut_all
mount_fs "http://127.0.0.1:$CUT_ALL_PORT/faults/" "$MC2" -o timeout=4,retries=1,cache_size=16M || exit 1
t0=$(now)
out=$(cat "$MC2/large.b2nd/data" 2>&1 >/dev/null) && fail "a read of answers always cut short succeeded"
[[ $out == *"Input/output error"* ]] || fail "answers cut short: '$out', expected EIO"
within 6 "$t0" || fail "answers cut short: the read took $(elapsed "$t0") s with timeout=4"
log "answers always cut short: EIO after $(elapsed "$t0") s"
check "the mount answers after answers cut short" ls "$MC2" >/dev/null
check ".b2ndfs/stats answers after answers cut short" cat "$MC2/.b2ndfs/stats" >/dev/null
grep -q "short body\|Transferred a partial file\|malformed multi-range" "$MC2.log" ||
  fail "no short body in the log: $(tail -3 "$MC2.log")"

# 429 with Retry-After: 2 on every Range request: asked again no sooner than
# that (retries=3), until the next wait would pass the timeout (5 s): EIO
# after about 4 s, three requests.
MR=$TMP/mnt_busy
mount_fs "$NGINX_URL/busy/faults/" "$MR" -o timeout=5,retries=3 || exit 1
before=$(grep -c '/busy/faults/good.b2nd HTTP/1.1" 429' "$NGINX_DIR/access.log")
t0=$(now)
out=$(cat "$MR/good.b2nd/data" 2>&1 >/dev/null) && fail "a read through 429 answers succeeded"
[[ $out == *"Input/output error"* ]] || fail "429: '$out', expected EIO"
within 6 "$t0" || fail "429: the read took $(elapsed "$t0") s with timeout=5"
within 3.5 "$t0" && fail "429 with Retry-After: 2: the read failed after $(elapsed "$t0") s (not waited for)"
asked=$(($(grep -c '/busy/faults/good.b2nd HTTP/1.1" 429' "$NGINX_DIR/access.log") - before))
log "429 with Retry-After: EIO after $(elapsed "$t0") s, $asked requests"
((asked == 3)) || fail "429 with Retry-After: 2 and timeout=5: $asked requests, expected 3"

# A long link (20 ms round trips through a delaying proxy): byte-exact, and
# the request latency percentiles show it.
PROXY_PORT=$(free_port)
proxy_start "$X/proxy.out" "$(dirname "${BASH_SOURCE[0]}")/../../scripts/latency_proxy.py" \
  "$PROXY_PORT" "$NGINX_PORT" 20
ML=$TMP/mnt_latency
mount_fs "http://127.0.0.1:$PROXY_PORT/fx/" "$ML" -o cache_size=32M || exit 1
want_data "$R" medium/image_u2.b2nd "$X/want_large_fx"
t0=$(now)
check "a sequential read over 20 ms round trips" cmp "$ML/medium/image_u2.b2nd/data" "$X/want_large_fx"
log "sequential read of medium/image_u2.b2nd/data over 20 ms round trips: $(elapsed "$t0") s"
p50=$(stats_field "$ML" remote.latency_us.p50)
((${p50:-0} >= 15000)) || fail "remote.latency_us.p50 is $p50 us over 20 ms round trips"

# nginx stopped in the middle of a slow read: EIO within the timeout, the
# mount stays alive; restarted: reads work again.
MS=$TMP/mnt_slow
mount_fs "$NGINX_URL/slow/faults/" "$MS" -o timeout=4,retries=1,cache_size=16M || exit 1
want_data "$R" medium/image_u2.b2nd "$X/want_large"
cat "$MS/large.b2nd/data" >"$X/large_got" 2>"$X/large_err" &
reader=$!
sleep 1.5
t0=$(now)
nginx_stop
if wait_until 12 eval "! kill -0 $reader 2>/dev/null"; then
  wait "$reader" && fail "the read survived nginx's stop (got $(stat -c %s "$X/large_got") bytes)"
  within 10 "$t0" || fail "nginx stopped: the reader took $(elapsed "$t0") s with timeout=4"
  log "nginx stopped: the reader failed after $(elapsed "$t0") s: $(head -c 200 "$X/large_err")"
else
  fail "nginx stopped: the reader still hangs after 12 s"
  kill "$reader" 2>/dev/null
fi
check "the mount answers with nginx down" stat "$MS/." >/dev/null
check ".b2ndfs/stats answers with nginx down" cat "$MS/.b2ndfs/stats" >/dev/null
out=$(cat "$MS/good.b2nd/data" 2>&1 >/dev/null) && fail "good.b2nd read with nginx down"
nginx_restart || exit 1
check "reads work after nginx restarts" cmp "$MS/good.b2nd/data" "$X/want_2d"
check "the first mount still reads" cmp "$MF/large.b2nd/data" "$X/want_large"

for mnt in "$M" "$MH" "$M1" "$M2" "$MF" "$MB" "$MS" "$ML" "$MC" "$MC2" "$MR"; do
  check "fusermount3 -u $mnt" fusermount3 -u "$mnt"
done
finish
