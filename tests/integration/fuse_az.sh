#!/usr/bin/env bash
# fuse.az: az:// sources against Azurite, which checks SharedKey and SAS
# signatures (the byte-for-byte conformance of every file kind runs as
# fuse.*.az). Here: a prefix, one blob as the container, a sparse frame's
# prefix, endpoint= bare or naming the account, a listing of two pages
# (NextMarker); SharedKey from AZURE_STORAGE_KEY and credentials=FILE, a SAS
# token from AZURE_STORAGE_SAS_TOKEN and the file, anonymous reads of a public
# container (no_sign); a wrong key, a forged SAS, anonymous reads of a private
# container (EACCES naming Azure's error code and what to check, refused
# before the daemon detaches), a world-readable credentials file, a deleted
# blob (ENOENT), a replaced one (a new generation; under an open file: EIO
# for what was not fetched, by If-Match and 412); Azurite stopped under a
# mount (cached reads still served, others EIO within timeout=) and started
# again. The key and the SAS never show in ps, the mount table, the stats,
# meta.json or the logs.
# Usage: fuse_az.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init az "$1"
require_fuse
# Azurite takes seconds to start: it does while the files are made.
azurite_begin || exit 1

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
X=$TMP/x
F=$TMP/faults
mkdir -p "$X" "$F/data/ndim" "$F/data/frames" "$F/pages/many"
cp "$S/ndim/3d_f4.b2nd" "$S/ndim/2d_i4.b2nd" "$F/data/ndim/"
cp -r "$S/frames/sparse_f4.b2nd" "$F/data/frames/"
cp "$S/ndim/2d_i4.b2nd" "$F/data/good.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/data/gone.b2nd"
cp "$S/ndim/2d_i4.b2nd" "$F/data/replaced.b2nd"
cp "$S/medium/image_u2.b2nd" "$F/data/large.b2nd"
cp "$S/medium/image_u2.b2nd" "$F/data/held.b2nd"
printf 'notes\n' >"$F/data/notes.txt"
# More blobs under one prefix than a List Blobs page holds (5,000).
for ((i = 1; i <= 5010; i++)); do printf -v name 'f%04d' "$i" && : >"$F/pages/many/$name"; done
echo last >"$F/pages/many/f5010"

azurite_wait || exit 1
log "Azurite on $AZ_URL"
az_container data || exit 1
az_container pages || exit 1
az_container public public || exit 1
az_put data "$F/data" || exit 1
az_put public "$F/data/ndim" ndim/ || exit 1
# The 5,010 blobs of pages/ (25 s) go up while the checks below that need
# none of them run; the two-page listing, and the faults (which time Azurite's
# answers), come once they are all there.
az_put pages "$F/pages" &
PAGES_PUT=$!
ITEST_HELPERS+=("$PAGES_PUT")

export AZURE_STORAGE_KEY=$AZ_KEY AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT
unset AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_CONNECTION_STRING
SAS=$(az_sas rl) || { fail "no SAS token"; finish; }
EP="endpoint=$AZ_URL"
want_data "$R" ndim/3d_f4.b2nd "$X/want_3d"
want_data "$R" ndim/2d_i4.b2nd "$X/want_2d"
want_data "$R" frames/sparse_f4.b2nd "$X/want_sparse"
want_data "$R" medium/image_u2.b2nd "$X/want_large"

# --- SharedKey: a prefix, one blob, a sparse frame -----------------------------
M=$TMP/mnt
mount_fs az://$AZ_ACCOUNT/data "$M" -o "$EP,log_level=debug" || exit 1
check "az://: ndim/3d_f4.b2nd/data" cmp "$M/ndim/3d_f4.b2nd/data" "$X/want_3d"
check "az://: a sparse frame (a blob prefix)" cmp "$M/frames/sparse_f4.b2nd/data" "$X/want_sparse"
check "az://: a plain blob" cmp "$M/notes.txt" "$F/data/notes.txt"
grep -q "^az://$AZ_ACCOUNT/data " /proc/self/mounts ||
  fail "the mount table does not name az://$AZ_ACCOUNT/data: $(grep "$M" /proc/self/mounts)"
M1=$TMP/mnt_one
mount_fs az://$AZ_ACCOUNT/data/ndim/3d_f4.b2nd "$M1" -o "$EP" || exit 1
check "one blob as the container" cmp "$M1/data" "$X/want_3d"
# endpoint= without the account: path-style, as Azurite serves it.
M2=$TMP/mnt_sparse
mount_fs az://$AZ_ACCOUNT/data/frames/sparse_f4.b2nd "$M2" -o "endpoint=http://127.0.0.1:$AZ_PORT" || exit 1
check "a sparse frame's prefix, endpoint= without the account" cmp "$M2/data" "$X/want_sparse"

# --- a SAS token, credentials=FILE, anonymous ---------------------------------
MS=$TMP/mnt_sas
AZURE_STORAGE_KEY= AZURE_STORAGE_SAS_TOKEN=$SAS mount_fs az://$AZ_ACCOUNT/data/ndim "$MS" -o "$EP" || exit 1
check "AZURE_STORAGE_SAS_TOKEN" cmp "$MS/3d_f4.b2nd/data" "$X/want_3d"
KEYS=$TMP/az.keys
printf '# Azurite\naccount_name=%s\nsas_token=?%s\n' "$AZ_ACCOUNT" "$SAS" >"$KEYS"
chmod 600 "$KEYS"
MC=$TMP/mnt_credfile
AZURE_STORAGE_KEY=d3Jvbmc= mount_fs az://$AZ_ACCOUNT/data/ndim "$MC" -o "$EP,credentials=$KEYS" || exit 1
check "credentials=FILE (sas_token=)" cmp "$MC/2d_i4.b2nd/data" "$X/want_2d"
chmod 644 "$KEYS"
if "$B2NDFS" az://$AZ_ACCOUNT/data "$TMP/never" -o "$EP,credentials=$KEYS" 2>"$X/open.log"; then
  fail "b2ndfs used a credentials file every user may read"
fi
grep -q "every user" "$X/open.log" || fail "world-readable credentials=: '$(cat "$X/open.log")'"
MN=$TMP/mnt_nosign
AZURE_STORAGE_KEY= mount_fs az://$AZ_ACCOUNT/public/ndim "$MN" -o "$EP,no_sign" || exit 1
check "no_sign on a public container" cmp "$MN/3d_f4.b2nd/data" "$X/want_3d"

# --- refused before the daemon detaches -----------------------------------------
# A wrong key (another account's): EACCES, Azure's error code, what to check.
WRONG=$("$PY" -c 'import base64; print(base64.b64encode(b"w" * 64).decode())')
if AZURE_STORAGE_KEY=$WRONG "$B2NDFS" az://$AZ_ACCOUNT/data "$TMP/never" -o "$EP" 2>"$X/denied.log"; then
  fail "b2ndfs mounted az://$AZ_ACCOUNT/data with a wrong key"
fi
grep -q "Permission denied" "$X/denied.log" && grep -qE "\((AuthenticationFailed|AuthorizationFailure)\)" "$X/denied.log" &&
  grep -q "account key from AZURE_STORAGE_KEY" "$X/denied.log" ||
  fail "wrong key: '$(cat "$X/denied.log")', expected EACCES naming the error code and the key's origin"
# A SAS token whose signature is wrong, and anonymous reads of a private container.
if AZURE_STORAGE_KEY= AZURE_STORAGE_SAS_TOKEN=${SAS%%sig=*}sig=AAAA "$B2NDFS" az://$AZ_ACCOUNT/data \
  "$TMP/never" -o "$EP" 2>"$X/badsas.log"; then
  fail "b2ndfs mounted az://$AZ_ACCOUNT/data with a forged SAS token"
fi
grep -q "Permission denied" "$X/badsas.log" && grep -q "check the SAS token" "$X/badsas.log" ||
  fail "forged SAS: '$(cat "$X/badsas.log")', expected EACCES and what to check"
if "$B2NDFS" az://$AZ_ACCOUNT/data "$TMP/never" -o "$EP,no_sign" 2>"$X/private.log"; then
  fail "b2ndfs mounted the private container az://$AZ_ACCOUNT/data anonymously"
fi
grep -q "not public" "$X/private.log" || fail "no_sign on a private container: '$(cat "$X/private.log")'"
for src in az://$AZ_ACCOUNT/data/no/such/prefix az://$AZ_ACCOUNT/nosuchcontainer; do
  if "$B2NDFS" "$src" "$TMP/never" -o "$EP" 2>"$X/refused.log"; then fail "b2ndfs mounted $src"; fi
  grep -q "No such file" "$X/refused.log" || fail "$src: '$(cat "$X/refused.log")', expected ENOENT"
done
if AZURE_STORAGE_KEY= "$B2NDFS" az://$AZ_ACCOUNT/data "$TMP/never" -o "$EP" 2>"$X/nokey.log"; then
  fail "b2ndfs mounted az://$AZ_ACCOUNT/data without credentials"
fi
grep -q "AZURE_STORAGE_SAS_TOKEN" "$X/nokey.log" || fail "no credentials: '$(cat "$X/nokey.log")'"

# --- two pages -------------------------------------------------------------------
pages_rc=0
wait "$PAGES_PUT" || pages_rc=$?
helpers=()  # it ended: its pid is no longer ours to stop
for pid in "${ITEST_HELPERS[@]}"; do [[ $pid == "$PAGES_PUT" ]] || helpers+=("$pid"); done
ITEST_HELPERS=("${helpers[@]}")
((pages_rc == 0)) || { fail "uploading pages/ (status $pages_rc)"; finish; }
MM=$TMP/mnt_pages
mount_fs az://$AZ_ACCOUNT/pages "$MM" -o "$EP" || exit 1
n=$(ls "$MM/many" | wc -l)
((n == 5010)) || fail "az://.../pages/many lists $n names, expected 5010 (two pages)"
[[ $(cat "$MM/many/f5010") == last ]] || fail "many/f5010 (on the second page) reads '$(cat "$MM/many/f5010")'"

# --- changes, and Azurite stopped --------------------------------------------------
MF=$TMP/mnt_faults
mount_fs az://$AZ_ACCOUNT/data "$MF" -o "$EP,timeout=3,retries=1,cache_size=32M" || exit 1
check "good.b2nd reads" cmp "$MF/good.b2nd/data" "$X/want_2d"
out=$(cat "$MF/nope.b2nd/meta.json" 2>&1) && fail "nope.b2nd/meta.json read"
[[ $out == *"No such file"* ]] || fail "nope.b2nd: '$out', expected ENOENT"
ls "$MF" | grep -qx gone.b2nd || fail "gone.b2nd is not listed"
az_delete data gone.b2nd
sleep 1.5  # listings and HEAD answers are revalidated after 1 s
out=$(cat "$MF/gone.b2nd/meta.json" 2>&1) && fail "gone.b2nd/meta.json read after its deletion"
[[ $out == *"No such file"* ]] || fail "deleted gone.b2nd: '$out', expected ENOENT"
check "replaced.b2nd before" cmp "$MF/replaced.b2nd/data" "$X/want_2d"
az_put_file data replaced.b2nd "$S/ndim/3d_f4.b2nd"
sleep 1.5
check "replaced.b2nd after the blob changed" cmp "$MF/replaced.b2nd/data" "$X/want_3d"
[[ $(stats_field "$MF" containers.generations_replaced) -ge 1 ]] ||
  fail "the replacement did not make a new generation"

# A blob replaced under an open file (readahead=0: its parts that were not
# read stay unfetched): those are asked for with If-Match of the old ETag,
# Azure answers 412, and the reader gets EIO, never the new blob's bytes.
trap 'ITEST_RC=$?; hold_stop_all; azurite_stop; (exit $ITEST_RC); itest_cleanup' EXIT
MH=$TMP/mnt_held
mount_fs az://$AZ_ACCOUNT/data "$MH" -o "$EP,readahead=0,timeout=5,retries=1,cache_size=32M" || exit 1
hsize=$(stat -c %s "$X/want_large")
reader_start held "$PY" "$(dirname "${BASH_SOURCE[0]}")/open_reader.py" read "$MH/held.b2nd/data" \
  "$X/want_large" --first $((hsize / 4)) || finish
az_put_file data held.b2nd "$S/ndim/3d_f4.b2nd"
if reader_check held; then
  log "held.b2nd, a quarter read before its blob was replaced: ${READER_SAID//$'\n'/; }"
  rest=$(grep '^phase rest' <<<"$READER_SAID")
  [[ $rest =~ \ eio=([1-9][0-9]*)\ new=0\ other=0 ]] ||
    fail "held.b2nd's parts never fetched must fail with EIO (412 on If-Match), nothing else: $rest"
else
  fail "held.b2nd's open reader: $READER_SAID"
fi
hold_stop held
(($(stats_field "$MH" remote.errors_by_kind.changed) >= 1)) ||
  fail "no request counted as 'changed' (412): $(cat "$MH/.b2ndfs/stats")"

azurite_stop
check "stopped: a cached read is still served" cmp "$MF/good.b2nd/data" "$X/want_2d"
check "stopped: stat of a known name" stat "$MF/good.b2nd/meta.json" >/dev/null
t0=$(now)
out=$(cat "$MF/large.b2nd/data" 2>&1 >/dev/null) && fail "large.b2nd read with Azurite stopped"
[[ $out == *"Input/output error"* ]] || fail "stopped: '$out', expected EIO"
within 8 "$t0" || fail "stopped: the read took $(elapsed "$t0") s with timeout=3"
check ".b2ndfs/stats answers with Azurite stopped" cat "$MF/.b2ndfs/stats" >/dev/null
azurite_launch || exit 1
wait_until 8 cmp -s "$MF/large.b2nd/data" "$X/want_large" || fail "reads do not work again after Azurite restarts"

# --- secrets ------------------------------------------------------------------------
cat "$M/.b2ndfs/stats" >"$X/stats.json"
cat "$M/ndim/3d_f4.b2nd/meta.json" >"$X/meta.json"
ps -eo args >"$X/ps.txt"
cat /proc/self/mounts >"$X/mounts.txt"
SIG=${SAS##*sig=}
for f in "$X/stats.json" "$X/meta.json" "$X/ps.txt" "$X/mounts.txt" "$TMP"/*.log "$X"/*.log; do
  [[ -f $f ]] || continue
  if grep -qF -e "$AZ_KEY" -e "$SIG" -e "$WRONG" "$f"; then
    fail "a secret shows in $f: $(grep -F -e "$AZ_KEY" -e "$SIG" -e "$WRONG" "$f" | head -c 300)"
  fi
done
grep -q "credentials from AZURE_STORAGE_KEY" "$M.log" ||
  fail "the debug log does not say where the key came from: $(head -5 "$M.log")"

for mnt in "$M" "$M1" "$M2" "$MM" "$MS" "$MC" "$MN" "$MF" "$MH"; do
  check "fusermount3 -u $mnt" fusermount3 -u "$mnt"
done
finish
