#!/usr/bin/env bash
# fuse.series: a walk of long 1-D arrays stays small (README.md, "Layout"):
# - a 1-D array has no slices/ (a slice would be one item; meta.json's files
#   says why), so a million-item series is not a million files;
# - a directory inside a container of more than 100,000 generated names
#   (chunks/ of 125,000 chunks, zarr/, data.zarr/c/) lists none, and each of
#   its names still opens with the right bytes;
# - du counts a container's bytes once, as its source takes them: `data`
#   carries the source's blocks, every other virtual file none.
# find, du and ls -l over the mount are quick and see a bounded number of
# names; each would fail without these rules (a million names, du of every
# view's bytes).
# Usage: fuse_series.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init series "$1"
require_fuse

S=$TMP/src
R=$TMP/ref
M=$TMP/mnt
mkdir -p "$S" "$R"
ITEMS=1000000
# A series of a million int64 in 10 chunks, and one in chunks of 8 items.
"$FIXTURE" write "$S/series.b2nd" --ref "$R/series.b2nd" --dtype '<i8' --shape $ITEMS \
  --chunks 100000 --blocks 10000 --seed 5 >/dev/null || {
  fail "b2nd_fixture write series"
  exit 1
}
"$FIXTURE" write "$S/fine.b2nd" --ref "$R/fine.b2nd" --dtype '<i8' --shape $ITEMS \
  --chunks 8 --blocks 8 --seed 6 --clevel 1 >/dev/null || {
  fail "b2nd_fixture write fine"
  exit 1
}
mount_fs "$S" "$M" -o cache_size=64M || exit 1

# 1. find: the names of both containers, a bounded number of them.
t0=$(now)
find "$M" >"$TMP/find.out" 2>"$TMP/find.err" || fail "find: $(head -c 300 "$TMP/find.err")"
names=$(wc -l <"$TMP/find.out")
log "find: $names names in $(elapsed "$t0") s"
((names < 1000)) || fail "find sees $names names in two 1-D containers"
within 30 "$t0" || fail "find took $(elapsed "$t0") s"
grep -q "/series.b2nd/data$" "$TMP/find.out" || fail "find does not see series.b2nd/data"

# 2. ls -l of every directory find saw.
t0=$(now)
while read -r d; do
  [[ -d $d ]] && { ls -l "$d" >/dev/null || fail "ls -l $d"; }
done <"$TMP/find.out"
log "ls -l of every directory: $(elapsed "$t0") s"
within 30 "$t0" || fail "ls -l of every directory took $(elapsed "$t0") s"

# 3. No slices/ for 1-D, and meta.json says why.
for c in series fine; do
  [[ -e $M/$c.b2nd/slices ]] && fail "$c.b2nd has slices/"
  grep -q '"a slice of a 1-D array is one item' "$M/$c.b2nd/meta.json" ||
    fail "$c.b2nd/meta.json does not say why slices/ is absent"
done

# 4. Unlisted but openable: chunks/, zarr/ and data.zarr/c/ of fine.b2nd.
for d in chunks zarr data.zarr/c; do
  [[ -d $M/fine.b2nd/$d ]] || fail "fine.b2nd/$d is not a directory"
  [[ -z $(ls -A "$M/fine.b2nd/$d") ]] || fail "fine.b2nd/$d lists names ($(ls "$M/fine.b2nd/$d" | wc -l))"
done
[[ $(ls "$M/series.b2nd/chunks" | wc -l) == 10 ]] || fail "series.b2nd/chunks does not list its 10 chunks"
last=$((ITEMS / 8 - 1))
ref_slice "$R/fine.b2nd" "$((last * 8)):$ITEMS" "$TMP/want_last"
check "fine.b2nd/chunks/$last" cmp "$M/fine.b2nd/chunks/$last" "$TMP/want_last"
check "fine.b2nd/zarr/$last" cmp "$M/fine.b2nd/zarr/$last" "$TMP/want_last"
# A shard: the chunk's one block, then the shard index.
check "fine.b2nd/data.zarr/c/$last" cmp -n 64 "$M/fine.b2nd/data.zarr/c/$last" "$TMP/want_last"
[[ $(stat -c %s "$M/fine.b2nd/chunks/7") == 64 ]] || fail "fine.b2nd/chunks/7 is not 64 bytes"
"$PY" -c 'import json, sys; json.load(open(sys.argv[1]))' "$M/fine.b2nd/zarr/.zarray" ||
  fail "fine.b2nd/zarr/.zarray does not open"
[[ -e $M/fine.b2nd/chunks/$ITEMS ]] && fail "fine.b2nd/chunks/$ITEMS exists"

# 5. du: the source's size, not every view's bytes.
t0=$(now)
du_m=$(du -sk "$M" | cut -f1)
du_s=$(du -sk "$S" | cut -f1)
log "du -sk: mount $du_m KiB in $(elapsed "$t0") s, source $du_s KiB"
((du_m <= du_s + du_s / 10 && du_m >= du_s - du_s / 10)) ||
  fail "du of the mount ($du_m KiB) is not the source's ($du_s KiB)"
for f in data.npy chunks/0 zarr/0 view; do
  [[ $(stat -c %b "$M/series.b2nd/$f") == 0 ]] || fail "series.b2nd/$f takes blocks"
done
[[ $(stat -c %b "$M/series.b2nd/data") == $(stat -c %b "$S/series.b2nd") ]] ||
  fail "series.b2nd/data takes $(stat -c %b "$M/series.b2nd/data") blocks, its source $(stat -c %b "$S/series.b2nd")"
# The bytes themselves are all there.
ref_slice "$R/series.b2nd" ":" "$TMP/want_series"
check "series.b2nd/data" cmp "$M/series.b2nd/data" "$TMP/want_series"

unmount_fs "$M"
finish
