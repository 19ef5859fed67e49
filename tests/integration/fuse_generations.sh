#!/usr/bin/env bash
# fuse.generations: a container that changes while mounted (README.md,
# "Containers that change"): a name looked up in one generation
# never serves bytes of another. After each change, names the new generation
# lacks (a cached chunks/I.J.K outside the new grid, slices/2/ of a 3-D array
# replaced by a 2-D one) must fail without returning bytes; names it has
# (data, data.npy, meta.json, chunks, slices) serve the new array with its new
# size. Descriptors (and mappings) opened before the change keep reading the
# old generation (README.md, "Containers that change"): after a replacement
# by rename or a deletion, every read gives the old bytes, never an error or
# SIGBUS (the daemon holds the old file, as an unlinked local file stays
# readable); after a rewrite in place (the old bytes are gone), the old bytes
# or EIO, never other bytes.
# Changes: replaced by rename (3-D -> 2-D; same shape, other data), rewritten
# in place with the same size, truncated in place, deleted, and a sparse
# frame whose chunk files c-blosc2 rewrites. Then the replace-then-read cycle
# runs B2NDFS_GENERATIONS_CYCLES (default 30) times to catch timing flakes.
# Every generation is written by c-blosc2 (b2nd_fixture write) and every
# expected byte comes from c-blosc2 (b2nd_fixture slice).
# Usage: fuse_generations.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lifecycle_init generations "$1"
require_fuse

CYCLES=${B2NDFS_GENERATIONS_CYCLES:-30}
G=$TMP/gen  # the generations, as c-blosc2 wrote them
R=$TMP/ref  # their references
W=$TMP/want # expected bytes, cut out of the references by c-blosc2
S=$TMP/src
M=$TMP/mnt
mkdir -p "$G" "$R" "$W" "$S"

# gen NAME ARGS...: writes generation NAME with `b2nd_fixture write ARGS`.
gen() {
  local name=$1
  shift
  "$FIXTURE" write "$G/$name.b2nd" --ref "$R/$name.b2nd" "$@" ||
    {
      fail "b2nd_fixture write $name $*"
      exit 1
    }
}
gen a3 --dtype '<f4' --shape 23,19,31 --chunks 8,8,8 --blocks 3,4,5 --seed 11
gen b2 --dtype '<i4' --shape 45,67 --chunks 20,30 --blocks 6,7 --seed 12
gen b2x --dtype '<i4' --shape 45,67 --chunks 20,30 --blocks 6,7 --seed 13
# clevel 0: memcpyed chunks, so the frame's size and layout do not depend on
# the data: m2 can overwrite m1 in place with the very same size.
gen m1 --dtype '<u2' --shape 40,50 --chunks 16,16 --blocks 8,8 --seed 21 --clevel 0
gen m2 --dtype '<u2' --shape 40,50 --chunks 16,16 --blocks 8,8 --seed 22 --clevel 0
if [[ $(stat -c %s "$G/m1.b2nd") != "$(stat -c %s "$G/m2.b2nd")" ]] || cmp -s "$G/m1.b2nd" "$G/m2.b2nd"; then
  fail "setup: m1 and m2 must have the same size and other bytes"
  exit 1
fi

# want GEN BOX: prints the path of the C-order bytes of BOX of GEN.
want() {
  local out=$W/$1.${2//[:,]/_}
  [[ -f $out ]] || ref_slice "$R/$1.b2nd" "$2" "$out"
  echo "$out"
}

# all_box GEN: ":,:,..." for GEN's number of axes.
all_box() {
  local shape
  shape=$(info_field "$R/$1.b2nd" shape)
  # shellcheck disable=SC2001
  sed 's/[0-9][0-9]*/:/g' <<<"$shape"
}

# name_box GEN NAME: the box of NAME (chunks/I.J or slices/A/IDX) in GEN,
# printed as b2nd_fixture slice takes it; nothing if GEN has no such file.
name_box() {
  local shape chunks
  shape=$(info_field "$R/$1.b2nd" shape)
  chunks=$(info_field "$R/$1.b2nd" chunkshape)
  awk -v s="$shape" -v c="$chunks" -v n="$2" 'BEGIN {
    nd = split(s, S, ","); split(c, C, ",");
    if (n ~ /^chunks\//) {
      k = split(substr(n, 8), N, ".");
      if (k != nd) exit;
      out = "";
      for (i = 1; i <= k; i++) {
        a = N[i] * C[i]; if (a >= S[i]) exit;
        b = a + C[i]; if (b > S[i]) b = S[i];
        out = out (i > 1 ? "," : "") a ":" b;
      }
      print out; exit;
    }
    split(substr(n, 8), P, "/"); axis = P[1] + 0; idx = P[2] + 0;
    if (axis >= nd || idx >= S[axis + 1]) exit;
    out = "";
    for (i = 1; i <= nd; i++) out = out (i > 1 ? "," : "") (i == axis + 1 ? idx : ":");
    print out }'
}

# use NAME: the container the following steps change (NAME.b2nd in SOURCE)
# and read (L, in the mount). Each part of the test has its own, so that a
# failure in one does not spill into the next.
use() {
  CUR=$S/$1.b2nd
  L=$M/$1.b2nd
}

# place GEN: GEN replaces the current container by rename (a new inode).
place() {
  cp -r "$G/$1.b2nd" "$S/.incoming.tmp" && mv -f -T "$S/.incoming.tmp" "$CUR"
}

# overwrite GEN: GEN rewrites the current container in place (same inode). A
# change is seen when mtime or size changed (README.md, "Containers that
# change"); with coarse file times the copy could keep the old mtime, so
# make sure it does not.
overwrite() {
  local before ino
  before=$(stat -c %.9Y "$CUR")
  ino=$(stat -c %i "$CUR")
  cp "$G/$1.b2nd" "$CUR"
  if [[ $(stat -c %.9Y "$CUR") == "$before" ]]; then
    touch -d "@$((${before%.*} + 1))" "$CUR"
  fi
  [[ $(stat -c %i "$CUR") == "$ino" ]] || fail "setup: cp did not rewrite in place"
}

# same_bytes WHAT FILE EXPECTED
same_bytes() {
  if ! cmp -s "$2" "$3"; then
    local got
    got=$(stat -c %s "$2" 2>&1)
    fail "$1: $2 does not read as expected ($got bytes, expected $(stat -c %s "$3"); $(cmp "$2" "$3" 2>&1 | head -c 200))"
    return 1
  fi
}

# check_gen GEN WHAT: data, data.npy, meta.json and the stat size of data are
# GEN's.
check_gen() {
  local gen=$1 what=$2 dir=$L data shape size
  data=$(want "$gen" "$(all_box "$gen")")
  shape=$(info_field "$R/$gen.b2nd" shape)
  same_bytes "$what: data" "$dir/data" "$data"
  size=$(stat -c %s "$dir/data" 2>&1)
  [[ $size == "$(stat -c %s "$data")" ]] || fail "$what: stat size of data is $size, expected $(stat -c %s "$data")"
  local err
  err=$(npy_matches "$dir/data.npy" "$data" "$shape" 2>&1) || fail "$what: data.npy: $err"
  local got
  got=$(json_field "$dir/meta.json" shape)
  [[ $got == "$shape" ]] || fail "$what: meta.json shape is '$got', expected [$shape]"
  got=$(json_field "$dir/meta.json" dtype)
  [[ $got == "$(info_field "$R/$gen.b2nd" dtype | tr -d '"')" ]] || fail "$what: meta.json dtype is '$got'"
}

# check_names GEN WHAT NAMES...: each name reads as GEN's file, or fails
# without bytes where GEN has no such file.
check_names() {
  local gen=$1 what=$2 name box
  shift 2
  for name in "$@"; do
    box=$(name_box "$gen" "$name")
    if [[ -n $box ]]; then
      same_bytes "$what: $name" "$L/$name" "$(want "$gen" "$box")"
    else
      read_fails "$what: $name (not in the new generation)" "$L/$name"
    fi
  done
}

# hold_names ID GEN [--strict] [--mmap] NAMES...: holds NAMES of generation
# GEN open; --strict: every later read must give the old bytes (no EIO).
hold_names() {
  local id=$1 gen=$2 name
  shift 2
  local args=()
  if [[ ${1:-} == --strict ]]; then
    args+=(--strict)
    shift
  fi
  if [[ ${1:-} == --mmap ]]; then
    args+=(--mmap)
    shift
  fi
  for name in "$@"; do
    if [[ $name == data ]]; then
      args+=("$L/data" "$(want "$gen" "$(all_box "$gen")")")
    else
      args+=("$L/$name" "$(want "$gen" "$(name_box "$gen" "$name")")")
    fi
  done
  hold_start "$id" "${args[@]}"
}

use renamed
place a3
mount_fs "$S" "$M" -o cache_size=16M || exit 1

# --- 3-D replaced by 2-D (rename) --------------------------------------------
ls "$L/slices/2/" >"$TMP/ls.slices2" 2>&1 || fail "3-D: ls slices/2/: $(cat "$TMP/ls.slices2")"
[[ $(wc -l <"$TMP/ls.slices2") == 31 && $(head -n1 "$TMP/ls.slices2") == 00 ]] ||
  fail "3-D: slices/2/ lists $(wc -l <"$TMP/ls.slices2") names starting with $(head -n1 "$TMP/ls.slices2")"
for c in 0.0.0 0.1.0 2.2.3; do
  size=$(stat -c %s "$L/chunks/$c" 2>&1)
  [[ $size == "$(stat -c %s "$(want a3 "$(name_box a3 "chunks/$c")")")" ]] || fail "3-D: stat size of chunks/$c is $size"
done
NAMES_A3=(chunks/0.1.0 chunks/2.2.3 slices/2/07 slices/0/22)
check_names a3 "3-D" "${NAMES_A3[@]}"
check_gen a3 "3-D"
hold_names p1 a3 --strict --mmap data chunks/0.1.0 slices/2/07
place b2
# The cached names first: nothing has told the daemon yet.
check_names b2 "3-D -> 2-D by rename" "${NAMES_A3[@]}"
if ls "$L/slices/2/" >/dev/null 2>&1; then fail "3-D -> 2-D by rename: slices/2/ still lists"; fi
check_gen b2 "3-D -> 2-D by rename"
check_names b2 "3-D -> 2-D by rename" chunks/1.1 chunks/2.2 slices/1/33 slices/0/44
hold_check p1 "3-D -> 2-D by rename"
hold_stop p1

# --- same shape, other data (rename) ------------------------------------------
NAMES_B2=(chunks/1.1 chunks/2.2 slices/1/33 slices/0/44 slices/0/22)
check_names b2 "2-D" "${NAMES_B2[@]}"
hold_names p2 b2 --strict --mmap data chunks/1.1 slices/1/33
place b2x
check_names b2x "same shape, other data" "${NAMES_B2[@]}"
check_gen b2x "same shape, other data"
hold_check p2 "same shape, other data"
hold_stop p2

# --- rewritten in place, same size --------------------------------------------
use inplace
place m1
NAMES_M=(chunks/1.1 chunks/2.3 slices/0/39 slices/1/33)
check_gen m1 "memcpyed"
check_names m1 "memcpyed" "${NAMES_M[@]}"
hold_names p3 m1 --mmap data chunks/1.1 slices/0/39
overwrite m2
check_names m2 "rewritten in place, same size" "${NAMES_M[@]}"
check_gen m2 "rewritten in place, same size"
hold_check p3 "rewritten in place, same size"
hold_stop p3

# --- truncated in place ---------------------------------------------------------
hold_names p4 m2 data chunks/1.1
truncate -s $(($(stat -c %s "$CUR") / 2)) "$CUR"
read_fails "truncated in place: chunks/1.1" "$L/chunks/1.1"
read_fails "truncated in place: data" "$L/data"
read_fails "truncated in place: data.npy" "$L/data.npy"
err=$(json_field "$L/meta.json" error)
[[ -n $err ]] || fail "truncated in place: meta.json has no \"error\": $(head -c 300 "$L/meta.json" 2>&1)"
hold_check p4 "truncated in place"
hold_stop p4
# Repaired: names the broken generation lacked exist again.
place m1
check_gen m1 "repaired after truncation"
check_names m1 "repaired after truncation" "${NAMES_M[@]}"

# --- deleted --------------------------------------------------------------------
use deleted
place a3
check_gen a3 "3-D again"
check_names a3 "3-D again" "${NAMES_A3[@]}"
hold_names p5 a3 --strict --mmap data slices/2/07
rm "$CUR"
read_fails "deleted: data" "$L/data"
read_fails "deleted: slices/2/07" "$L/slices/2/07"
wait_until 5 eval "! stat '$L' >/dev/null 2>&1" || fail "deleted: the container is still there after 5 s"
hold_check p5 "deleted"
hold_stop p5

# --- sparse frame whose chunk files c-blosc2 rewrites --------------------------
gen sp --dtype '<f8' --shape 40,30 --chunks 16,16 --blocks 4,8 --seed 31 --sparse
use sparse
place sp
NAMES_SP=(chunks/0.0 chunks/1.1 chunks/2.0 slices/0/05 slices/1/12)
check_gen sp "sparse"
check_names sp "sparse" "${NAMES_SP[@]}"
hold_names p6 sp --mmap data chunks/0.0 chunks/1.1
before=$(find "$CUR" -type f -printf '%f %i %s %T@\n' | sort)
"$FIXTURE" update "$CUR" 0:16,0:16 --seed 32 || fail "b2nd_fixture update (1)"
"$FIXTURE" update "$CUR" 20:40,10:30 --seed 33 || fail "b2nd_fixture update (2)"
after=$(find "$CUR" -type f -printf '%f %i %s %T@\n' | sort)
log "sparse frame files before: $(tr '\n' ';' <<<"$before")"
log "sparse frame files after:  $(tr '\n' ';' <<<"$after")"
cp -r "$CUR" "$R/sp2.b2nd"
cmp -s "$(want sp "$(all_box sp)")" "$(want sp2 "$(all_box sp2)")" && fail "setup: the update changed nothing"
check_names sp2 "sparse, chunks rewritten" "${NAMES_SP[@]}"
check_gen sp2 "sparse, chunks rewritten"
hold_check p6 "sparse, chunks rewritten"
hold_stop p6

# --- replace, then read at once: CYCLES times ------------------------------------
# A cycle of changes: 3-D -> 2-D, same shape other data, 2-D -> 2-D of another
# shape and dtype, same size in place, 2-D -> 3-D. The names checked after
# each change are the old generation's (cached by the kernel just before)
# and the new one's.
SEQ=(a3 b2 b2x m1 m2)
declare -A NAMES_OF=([a3]="${NAMES_A3[*]}" [b2]="${NAMES_B2[*]}" [b2x]="${NAMES_B2[*]}"
  [m1]="${NAMES_M[*]}" [m2]="${NAMES_M[*]}")
use cycled
place a3
failures_before=$ITEST_FAILURES
for ((i = 1; i <= CYCLES; i++)); do
  prev=${SEQ[$(((i - 1) % ${#SEQ[@]}))]}
  next=${SEQ[$((i % ${#SEQ[@]}))]}
  # shellcheck disable=SC2206
  names=(${NAMES_OF[$prev]} ${NAMES_OF[$next]})
  # The kernel looks up, stats and caches every name of the old generation.
  for n in ${NAMES_OF[$prev]}; do stat -c %s "$L/$n" >/dev/null 2>&1 || fail "cycle $i: $prev: $n missing"; done
  cat "$L/data" >/dev/null 2>&1 || fail "cycle $i: $prev: data unreadable"
  if [[ $prev == m1 && $next == m2 ]]; then
    hold_names loop "$prev" data "${NAMES_OF[$prev]%% *}"
    overwrite m2
  else
    hold_names loop "$prev" --strict data "${NAMES_OF[$prev]%% *}"
    place "$next"
  fi
  # Alternate what is read first after the change.
  if ((i % 2)); then
    check_names "$next" "cycle $i ($prev -> $next)" "${names[@]}"
    check_gen "$next" "cycle $i ($prev -> $next)"
  else
    check_gen "$next" "cycle $i ($prev -> $next)"
    check_names "$next" "cycle $i ($prev -> $next)" "${names[@]}"
  fi
  hold_check loop "cycle $i ($prev -> $next)" >/dev/null
  hold_stop loop
done
log "$CYCLES replace-then-read cycles: $((ITEST_FAILURES - failures_before)) failure(s)"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
