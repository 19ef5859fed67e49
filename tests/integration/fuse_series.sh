#!/usr/bin/env bash
# fuse.series: a walk of long 1-D arrays stays small (README.md, "Layout"):
# - a directory inside a container of more than 100,000 generated names
#   (slices/0 of a million-item series, of a 200,001-row array) lists none,
#   and each of its names still opens with the right bytes, so a
#   million-item series is not a million files;
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
# A series of a million int64 in 10 chunks.
"$FIXTURE" write "$S/series.b2nd" --ref "$R/series.b2nd" --dtype '<i8' --shape $ITEMS \
  --chunks 100000 --blocks 10000 --seed 5 >/dev/null || {
  fail "b2nd_fixture write series"
  exit 1
}
# A tall 2-D array: 200,001 rows, so slices/0 has more names than are listed.
ROWS=200001
"$FIXTURE" write "$S/tall.b2nd" --ref "$R/tall.b2nd" --dtype '<i8' --shape $ROWS,2 \
  --chunks 65536,2 --blocks 4096,2 --seed 6 >/dev/null || {
  fail "b2nd_fixture write tall"
  exit 1
}
mount_fs "$S" "$M" -o cache_size=64M || exit 1

# 1. find: the names of both containers, a bounded number of them (without
# the rules: a million slices of series.b2nd, 200,001 of tall.b2nd).
t0=$(now)
find "$M" >"$TMP/find.out" 2>"$TMP/find.err" || fail "find: $(head -c 300 "$TMP/find.err")"
names=$(wc -l <"$TMP/find.out")
log "find: $names names in $(elapsed "$t0") s"
((names < 1000)) || fail "find sees $names names in two containers"
grep -q "/series.b2nd/data$" "$TMP/find.out" || fail "find does not see series.b2nd/data"

# 2. ls -l of every directory find saw.
t0=$(now)
while read -r d; do
  [[ -d $d ]] && { ls -l "$d" >/dev/null || fail "ls -l $d"; }
done <"$TMP/find.out"
log "ls -l of every directory: $(elapsed "$t0") s"

# 3. A 1-D array's slices/0 (its items) is unlisted, and its names open.
[[ -d $M/series.b2nd/slices/0 ]] || fail "series.b2nd/slices/0 is not a directory"
[[ -z $(ls -A "$M/series.b2nd/slices/0") ]] ||
  fail "series.b2nd/slices/0 lists names ($(ls "$M/series.b2nd/slices/0" | wc -l))"
for i in 0 7 999999; do
  name=$(printf '%06d' "$i")
  dd if="$M/series.b2nd/data" bs=8 skip="$i" count=1 status=none >"$TMP/item"
  check "series.b2nd/slices/0/$name is item $i" cmp "$M/series.b2nd/slices/0/$name" "$TMP/item"
done
check "series.b2nd/slices/0/7 (unpadded)" cmp "$M/series.b2nd/slices/0/7" \
  "$M/series.b2nd/slices/0/000007"

# 4. Unlisted but openable: slices/0 of tall.b2nd (200,001 names).
[[ -d $M/tall.b2nd/slices/0 ]] || fail "tall.b2nd/slices/0 is not a directory"
[[ -z $(ls -A "$M/tall.b2nd/slices/0") ]] ||
  fail "tall.b2nd/slices/0 lists names ($(ls "$M/tall.b2nd/slices/0" | wc -l))"
[[ $(ls "$M/tall.b2nd/slices/1" | tr '\n' ' ') == "0 1 " ]] || fail "tall.b2nd/slices/1 is not listed"
[[ $(ls "$M/series.b2nd/chunks" | wc -l) == 10 ]] || fail "series.b2nd/chunks does not list its 10 chunks"
last=$((ROWS - 1))
ref_slice "$R/tall.b2nd" "$last,:" "$TMP/want_last"
check "tall.b2nd/slices/0/$last" cmp "$M/tall.b2nd/slices/0/$last" "$TMP/want_last"
check "tall.b2nd/slices/0/7 (unpadded)" cmp "$M/tall.b2nd/slices/0/7" "$M/tall.b2nd/slices/0/000007"
[[ $(stat -c %s "$M/tall.b2nd/slices/0/000007") == 16 ]] || fail "tall.b2nd/slices/0/000007 is not 16 bytes"
[[ -e $M/tall.b2nd/slices/0/$ROWS ]] && fail "tall.b2nd/slices/0/$ROWS exists"

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
