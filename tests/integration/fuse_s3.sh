#!/usr/bin/env bash
# fuse.s3: the fixture set uploaded to a real S3-compatible server (s3rver)
# and mounted as s3://BUCKET reads exactly as the local mount does
# (fuse_compare tree and bytes against c-blosc2; sparse frames are prefixes),
# also as a prefix, one container's key and a sparse frame's prefix, a
# listing longer than one page (continuation tokens); keys
# from the environment, a ~/.aws/credentials profile, credentials=FILE, and
# none (no_sign). Faults: a wrong access key (EACCES, refused before the
# daemon detaches), missing and deleted objects (ENOENT), the server frozen
# and stopped mid-read (EIO within the timeout, the mount stays alive) and
# restarted (reads work again), an object replaced (a new generation). The
# secret key and session token never show in ps, the mount table, the stats,
# meta.json or the logs.
# Usage: fuse_s3.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init s3 "$1"
require_fuse

# More keys under one prefix than one ListObjectsV2 page holds (1000),
# written into s3rver's store before it starts (its object file and the
# MD5 it answers as the ETag, as fuse_remote_costs.sh does): 1,100 PUTs took
# 7 s.
"$PY" -c 'import hashlib, os, sys
d = sys.argv[1]
os.makedirs(d)
for i in range(1, 1101):
    body = b"%d\n" % i
    with open("%s/f%04d.txt._S3rver_object" % (d, i), "wb") as f:
        f.write(body)
    with open("%s/f%04d.txt._S3rver_object.md5" % (d, i), "w") as f:
        f.write(hashlib.md5(body).hexdigest())' "$TMP/s3rver/data/pages/many" ||
  fail "writing the keys of s3://pages/many"
# s3rver takes seconds to start: it does while the files are made.
s3rver_begin fixtures faults || exit 1

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
X=$TMP/x
F=$TMP/faults
mkdir -p "$X" "$F"
cp "$S/ndim/2d_i4.b2nd" "$F/good.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/gone.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/replaced.b2nd"
cp "$S/medium/image_u2.b2nd" "$F/large.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/cold.b2nd"  # never read before the faults
cp "$S/ndim/2d_i4.b2nd" "$F/cold2.b2nd"
printf 'notes\n' >"$F/notes.txt"

s3rver_wait || exit 1
log "s3rver on $S3_URL"
s3_put fixtures "$S" || exit 1
s3_put faults "$F" || exit 1

# Keys only in the environment (s3rver checks the access key id, not the
# signature; tests/unit/sigv4_test and s3_test prove the signing).
SECRET="b2ndfsSecret$RANDOM$RANDOM"
TOKEN="b2ndfsToken$RANDOM$RANDOM"
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=$SECRET AWS_SESSION_TOKEN=$TOKEN
export AWS_SHARED_CREDENTIALS_FILE=$TMP/no-such-credentials AWS_CONFIG_FILE=$TMP/no-such-config
unset AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION
EP="endpoint=$S3_URL"

# --- conformance: the whole fixture set, byte-exact ---------------------------
M=$TMP/mnt
mount_fs s3://fixtures "$M" -o "$EP,cache_size=32M,threads=2,log_level=debug" || exit 1
check "fuse_compare tree over s3" "$FUSE_COMPARE" tree "$M" "$S" "$R"
check "fuse_compare bytes over s3" "$FUSE_COMPARE" bytes "$M" "$R"
grep -q "^s3://fixtures " /proc/self/mounts || fail "the mount table does not name s3://fixtures: $(grep "$M" /proc/self/mounts)"
requests=$(stats_field "$M" remote.requests) || fail ".b2ndfs/stats has no remote.requests"
((${requests:-0} > 0)) || fail ".b2ndfs/stats counts no remote requests"

# A prefix, one container's key, a sparse frame's prefix.
MP=$TMP/mnt_prefix
mount_fs s3://fixtures/ndim/ "$MP" -o "$EP" || exit 1
want_data "$R" ndim/3d_f4.b2nd "$X/want_3d"
check "prefix mount: ndim/3d_f4.b2nd/data" cmp "$MP/3d_f4.b2nd/data" "$X/want_3d"
M1=$TMP/mnt_one
mount_fs s3://fixtures/ndim/3d_f4.b2nd "$M1" -o "$EP" || exit 1
check "one container's key: data" cmp "$M1/data" "$X/want_3d"
M2=$TMP/mnt_sparse
mount_fs s3://fixtures/frames/sparse_f4.b2nd "$M2" -o "$EP" || exit 1
want_data "$R" frames/sparse_f4.b2nd "$X/want_sparse"
check "a sparse frame's prefix: data" cmp "$M2/data" "$X/want_sparse"

# A listing of several pages (continuation tokens).
MM=$TMP/mnt_pages
mount_fs s3://pages "$MM" -o "$EP" || exit 1
n=$(ls "$MM/many" | wc -l)
((n == 1100)) || fail "s3://pages/many lists $n names, expected 1100 (two pages)"
[[ $(cat "$MM/many/f1100.txt") == 1100 ]] || fail "many/f1100.txt (on the second page) reads '$(cat "$MM/many/f1100.txt")'"

# Refused before the daemon detaches: a prefix with nothing under it, a
# bucket that does not exist, a wrong access key (EACCES).
for src in s3://fixtures/no/such/prefix s3://nosuchbucket; do
  if "$B2NDFS" "$src" "$TMP/never" -o "$EP" 2>"$X/refused.log"; then
    fail "b2ndfs mounted $src"
  fi
  grep -q "$src" "$X/refused.log" || fail "the refusal does not name $src: $(cat "$X/refused.log")"
done
if AWS_ACCESS_KEY_ID=WRONGKEY "$B2NDFS" s3://fixtures "$TMP/never" -o "$EP" 2>"$X/denied.log"; then
  fail "b2ndfs mounted s3://fixtures with a wrong access key"
fi
grep -q "Permission denied" "$X/denied.log" && grep -q "InvalidAccessKeyId" "$X/denied.log" ||
  fail "wrong access key: '$(cat "$X/denied.log")', expected EACCES (InvalidAccessKeyId)"

# --- credentials from files, and none ---------------------------------------
mkdir -p "$TMP/home/.aws"
printf '[default]\naws_access_key_id = WRONGKEY\naws_secret_access_key = x\n[work]\naws_access_key_id = S3RVER\naws_secret_access_key = %s\n' \
  "$SECRET" >"$TMP/home/.aws/credentials"
MW=$TMP/mnt_profile
HOME=$TMP/home AWS_SHARED_CREDENTIALS_FILE= AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= \
  mount_fs s3://fixtures/ndim "$MW" -o "$EP,profile=work" || exit 1
check "profile=work of ~/.aws/credentials" cmp "$MW/3d_f4.b2nd/data" "$X/want_3d"
KEYS=$TMP/s3.keys
printf '[default]\naws_access_key_id=S3RVER\naws_secret_access_key=%s\n' "$SECRET" >"$KEYS"
chmod 600 "$KEYS"
MC=$TMP/mnt_credfile
AWS_ACCESS_KEY_ID=WRONGKEY mount_fs s3://fixtures/ndim "$MC" -o "$EP,credentials=$KEYS" || exit 1
check "credentials=FILE" cmp "$MC/3d_f4.b2nd/data" "$X/want_3d"
chmod 644 "$KEYS"
if "$B2NDFS" s3://fixtures "$TMP/never" -o "$EP,credentials=$KEYS" 2>"$X/open.log"; then
  fail "b2ndfs used a credentials file every user may read"
fi
grep -q "every user" "$X/open.log" || fail "world-readable credentials=: '$(cat "$X/open.log")'"
# s3rver serves every bucket to anonymous requests: no_sign reads it.
MN=$TMP/mnt_nosign
AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY= mount_fs s3://fixtures/ndim "$MN" -o "$EP,no_sign" || exit 1
check "no_sign (anonymous)" cmp "$MN/3d_f4.b2nd/data" "$X/want_3d"

# --- faults -----------------------------------------------------------------
MF=$TMP/mnt_faults
mount_fs s3://faults "$MF" -o "$EP,timeout=3,retries=1,cache_size=16M" || exit 1
want_data "$R" ndim/2d_i4.b2nd "$X/want_2d"
check "faults/good.b2nd reads" cmp "$MF/good.b2nd/data" "$X/want_2d"
check "faults/notes.txt reads" cmp "$MF/notes.txt" "$F/notes.txt"

# 404: a key that is not there, and an object deleted on the server.
out=$(cat "$MF/nope.b2nd/meta.json" 2>&1) && fail "nope.b2nd/meta.json read"
[[ $out == *"No such file"* ]] || fail "nope.b2nd: '$out', expected ENOENT"
ls "$MF" | grep -qx gone.b2nd || fail "gone.b2nd is not listed"
s3_delete faults gone.b2nd
sleep 1.5  # listings and HEAD answers are revalidated after 1 s
out=$(cat "$MF/gone.b2nd/meta.json" 2>&1) && fail "gone.b2nd/meta.json read after its deletion"
[[ $out == *"No such file"* ]] || fail "deleted gone.b2nd: '$out', expected ENOENT"

# An object replaced on the server: the new version, a new generation.
check "replaced.b2nd before" cmp "$MF/replaced.b2nd/data" "$X/want_2d"
s3_put_file faults replaced.b2nd "$S/ndim/3d_f4.b2nd"
sleep 1.5
check "replaced.b2nd after the server's copy changed" cmp "$MF/replaced.b2nd/data" "$X/want_3d"
[[ $(stats_field "$MF" containers.generations_replaced) -ge 1 ]] ||
  fail "the replacement did not make a new generation"

# The server frozen (accepts, never answers) in the middle of a read: EIO
# within the timeout, the mount stays alive.
want_data "$R" medium/image_u2.b2nd "$X/want_large"
cat "$MF/large.b2nd/data" >"$X/large_got" 2>"$X/large_err" &
reader=$!
sleep 0.1
t0=$(now)
s3rver_freeze
if wait_until 12 eval "! kill -0 $reader 2>/dev/null"; then
  if wait "$reader"; then
    log "frozen: the reader had finished before the freeze ($(stat -c %s "$X/large_got") bytes)"
    cmp -s "$X/large_got" "$X/want_large" || fail "large.b2nd read wrong bytes"
  else
    within 7 "$t0" || fail "frozen: the reader took $(elapsed "$t0") s with timeout=3"
    log "frozen: the reader failed after $(elapsed "$t0") s: $(head -c 200 "$X/large_err")"
  fi
else
  fail "frozen server: the reader still hangs after 12 s"
  kill "$reader" 2>/dev/null
fi
# A read that starts while it is frozen: what the cache holds is served
# (good.b2nd was read whole above), what it lacks fails within the timeout.
t0=$(now)
if cat "$MF/good.b2nd/data.npy" >"$X/frozen_npy" 2>"$X/frozen_err"; then
  cmp -s <(tail -c "$(stat -c %s "$X/want_2d")" "$X/frozen_npy") "$X/want_2d" ||
    fail "frozen: data.npy of a cached container read wrong bytes"
else
  fail "frozen: data.npy of a cached container failed: $(head -c 200 "$X/frozen_err")"
fi
within 8 "$t0" || fail "frozen: the cached read took $(elapsed "$t0") s"
t0=$(now)
out=$(cat "$MF/cold.b2nd/data" 2>&1 >/dev/null) && fail "cold.b2nd read from a frozen server"
[[ $out == *"Input/output error"* ]] || fail "frozen: '$out', expected EIO"
within 8 "$t0" || fail "frozen: the read took $(elapsed "$t0") s with timeout=3"
check "the mount answers with the server frozen" stat "$MF/." >/dev/null
check ".b2ndfs/stats answers with the server frozen" cat "$MF/.b2ndfs/stats" >/dev/null
# Stopped: EIO at once (connection refused); restarted: reads work again.
s3rver_stop
check "a cached chunk reads with the server stopped" cmp -s "$MF/good.b2nd/chunks/0.0" <(cat "$MF/good.b2nd/chunks/0.0")
out=$(cat "$MF/cold2.b2nd/chunks/0.0" 2>&1 >/dev/null) && fail "an uncached chunk read with the server stopped"
[[ $out == *"Input/output error"* ]] || fail "stopped: '$out', expected EIO"
s3rver_restart || exit 1
# A server that timed out is not asked again for min(timeout, 5 s): wait
# with a read that needs the server (cold2.b2nd was never read; good.b2nd,
# and large.b2nd when its reader finished before the freeze, are all in the
# cache and prove nothing here).
wait_until 10 cmp -s "$MF/cold2.b2nd/data" "$X/want_2d" ||
  fail "reads do not work again after s3rver restarts"
check "reads work after s3rver restarts" cmp "$MF/large.b2nd/data" "$X/want_large"
check "and the first mount still reads" cmp "$M/ndim/3d_f4.b2nd/data" "$X/want_3d"

# --- secrets ----------------------------------------------------------------
cat "$M/.b2ndfs/stats" >"$X/stats.json"
cat "$M/ndim/3d_f4.b2nd/meta.json" >"$X/meta.json"
ps -eo args >"$X/ps.txt"
cat /proc/self/mounts >"$X/mounts.txt"
for f in "$X/stats.json" "$X/meta.json" "$X/ps.txt" "$X/mounts.txt" "$TMP"/*.log "$X"/*.log; do
  [[ -f $f ]] || continue
  if grep -qF -e "$SECRET" -e "$TOKEN" "$f"; then
    fail "a secret shows in $f: $(grep -F -e "$SECRET" -e "$TOKEN" "$f" | head -c 300)"
  fi
done
grep -q "credentials from the environment" "$M.log" ||
  fail "the debug log does not say where the keys came from: $(head -5 "$M.log")"

for mnt in "$M" "$MP" "$M1" "$M2" "$MM" "$MW" "$MC" "$MN" "$MF"; do
  check "fusermount3 -u $mnt" fusermount3 -u "$mnt"
done
finish
