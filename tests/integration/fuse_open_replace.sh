#!/usr/bin/env bash
# fuse.open_replace: an open file is a promise (README.md, "Containers that
# change"). A process has X.b2nd/data open and has read part of it, another
# has X.b2nd/data.npy mapped with numpy.load(mmap_mode="r") and has touched
# part of it; the container is replaced by rename with another version (other
# shape, other data); a third process runs `ls -l X.b2nd/` and
# `cat X.b2nd/meta.json` (and so sees the new version). Then:
# - local source: the open descriptor reads the rest and re-reads what it
#   read before (its cached pages dropped, so that the reads reach the
#   daemon): every byte is the old version's, to the old version's end; the
#   memmap reads all of it without SIGBUS and equals the old version; a new
#   open of X.b2nd/data (and data.npy) is the new version.
# - web server (nginx) source, mounted with readahead=0: a descriptor and a
#   memmap that read all of X before the replacement re-read it from the
#   cache (the old bytes); a descriptor of Y that read only Y's first quarter
#   gets EIO for the parts of Y never fetched (the server no longer has that
#   version: its ETag changed) and the old bytes for what it read; new opens
#   are the new versions.
# Every version is written by c-blosc2 (b2nd_fixture write) and every
# expected byte comes from c-blosc2 (b2nd_fixture slice).
# Usage: fuse_open_replace.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
lifecycle_init open_replace "$1"
require_fuse
READER=("$PY" "$(dirname "${BASH_SOURCE[0]}")/open_reader.py")
"$PY" -c 'import numpy' 2>/dev/null || {
  fail "$PY has no numpy"
  finish
}

G=$TMP/gen # the versions, as c-blosc2 wrote them
R=$TMP/ref # their references
W=$TMP/want
mkdir -p "$G" "$R" "$W"

# gen NAME ARGS...: version NAME (b2nd_fixture write), its whole array's
# bytes in $W/NAME.
gen() {
  local name=$1 shape
  shift
  "$FIXTURE" write "$G/$name.b2nd" --ref "$R/$name.b2nd" "$@" >/dev/null ||
    {
      fail "b2nd_fixture write $name $*"
      exit 1
    }
  shape=$(info_field "$R/$name.b2nd" shape)
  ref_slice "$R/$name.b2nd" "$(sed 's/[0-9][0-9]*/:/g' <<<"$shape")" "$W/$name"
}
# ~3 MiB each; the new versions have another shape, so another size too.
gen x_old --dtype '<f4' --shape 96,128,64 --chunks 32,64,64 --blocks 8,32,64 --seed 41
gen x_new --dtype '<f4' --shape 100,128,64 --chunks 32,64,64 --blocks 8,32,64 --seed 42
gen y_old --dtype '<i4' --shape 96,128,64 --chunks 16,64,64 --blocks 8,32,64 --seed 43
gen y_new --dtype '<i4' --shape 80,128,64 --chunks 16,64,64 --blocks 8,32,64 --seed 44

# place GEN DIR NAME: GEN becomes DIR/NAME.b2nd by rename (a new inode).
place() {
  cp "$G/$1.b2nd" "$2/.incoming.tmp" && mv -f -T "$2/.incoming.tmp" "$2/$3.b2nd"
}

# phase WHAT NAME: the counts of the reader's phase NAME (in READER_SAID)
# as P_PIECES P_OK P_EIO P_NEW P_OTHER; P_LINE is the line.
phase() {
  P_LINE=$(grep "^phase $2 " <<<"$READER_SAID")
  if [[ -z $P_LINE ]]; then
    fail "$1: the reader said nothing of its phase '$2': $READER_SAID"
    P_PIECES=0 P_OK=0 P_EIO=0 P_NEW=0 P_OTHER=1
    return 1
  fi
  local f
  for f in pieces ok eio new other; do
    [[ $P_LINE =~ (^| )$f=([0-9]+) ]] && printf -v "P_${f^^}" %s "${BASH_REMATCH[2]}"
  done
}

# all_old WHAT NAME: every piece of phase NAME read the old bytes.
all_old() {
  phase "$1" "$2" || return 1
  ((P_PIECES > 0 && P_OK == P_PIECES)) ||
    fail "$1: $2: not every read gave the old version's bytes: $P_LINE"
}

# third_process_looks DIR GEN: ls -l and cat meta.json in the container
# directory DIR until meta.json shows GEN's shape (10 s at most: a remote
# source revalidates after a second).
third_process_looks() {
  local dir=$1 shape
  shape=$(info_field "$R/$2.b2nd" shape)
  if ! wait_until 10 eval "ls -l '$dir/' >/dev/null 2>&1 && [[ \$(json_field '$dir/meta.json' shape) == '$shape' ]]"; then
    fail "$dir/meta.json does not show the new shape [$shape] within 10 s: $(head -c 200 "$dir/meta.json" 2>&1)"
  fi
  ls -l "$dir/" >"$TMP/ls.out" 2>&1 || fail "ls -l $dir/: $(cat "$TMP/ls.out")"
  cat "$dir/meta.json" >/dev/null || fail "cat $dir/meta.json failed"
}

# fresh_is WHAT DIR GEN: new opens of DIR/data and DIR/data.npy are GEN's.
fresh_is() {
  local err
  cmp -s "$2/data" "$W/$3" ||
    fail "$1: a new open of data is not the new version: $(cmp "$2/data" "$W/$3" 2>&1 | head -c 200)"
  err=$(npy_matches "$2/data.npy" "$W/$3" "$(info_field "$R/$3.b2nd" shape)" 2>&1) ||
    fail "$1: a new open of data.npy is not the new version: $err"
}

# mmap_ok WHAT ID: the memmap reader ID read everything as the old version.
mmap_ok() {
  if ! reader_check "$2"; then
    fail "$1: the memmap reader: $READER_SAID"
  elif [[ $READER_SAID != *"mmap ok"* ]]; then
    fail "$1: the memmap does not hold the old version: $READER_SAID"
  fi
  log "$1: memmap: ${READER_SAID//$'\n'/; }"
}

# --- local source ---------------------------------------------------------------
S=$TMP/src
M=$TMP/mnt
mkdir -p "$S"
place x_old "$S" X
mount_fs "$S" "$M" -o cache_size=64M || exit 1
size=$(stat -c %s "$W/x_old")
third=$((size / 3))
reader_start local_read "${READER[@]}" read "$M/X.b2nd/data" "$W/x_old" --first "$third" --new "$W/x_new" || finish
reader_start local_mmap "${READER[@]}" mmap "$M/X.b2nd/data.npy" "$W/x_old" --touch 0.3 || finish
place x_new "$S" X
third_process_looks "$M/X.b2nd" x_new
if reader_check local_read; then
  log "local: open descriptor: ${READER_SAID//$'\n'/; }"
  all_old "local, replaced by rename: the rest of data" rest
  all_old "local, replaced by rename: data read again" reread
else
  fail "local: the open reader: $READER_SAID"
fi
mmap_ok "local, replaced by rename" local_mmap
fresh_is "local, replaced by rename" "$M/X.b2nd" x_new
# (A reader that died was counted above.)
hold_stop local_read
hold_stop local_mmap
pid_alive "$DAEMON_PID" || fail "b2ndfs (local) died"

# --- web server source ---------------------------------------------------------
WS=$TMP/web
mkdir -p "$WS"
place x_old "$WS" X
place y_old "$WS" Y
nginx_start "web=$WS" || exit 1
# nginx_start's trap does not let go of the readers: this one does, first.
trap 'ITEST_RC=$?; hold_stop_all; nginx_stop; (exit $ITEST_RC); itest_cleanup' EXIT
MH=$TMP/mnt_http
# readahead=0: Y's parts that its reader did not ask for are never fetched.
mount_fs "$NGINX_URL/web/" "$MH" -o cache_size=64M,readahead=0,timeout=5,retries=1 || exit 1
ysize=$(stat -c %s "$W/y_old")
reader_start http_x "${READER[@]}" read "$MH/X.b2nd/data" "$W/x_old" --new "$W/x_new" || finish
reader_start http_mmap "${READER[@]}" mmap "$MH/X.b2nd/data.npy" "$W/x_old" --touch 1 || finish
reader_start http_y "${READER[@]}" read "$MH/Y.b2nd/data" "$W/y_old" --first $((ysize / 4)) --new "$W/y_new" || finish
place x_new "$WS" X
place y_new "$WS" Y
third_process_looks "$MH/X.b2nd" x_new
third_process_looks "$MH/Y.b2nd" y_new
if reader_check http_x; then
  log "http: X, read whole before: ${READER_SAID//$'\n'/; }"
  all_old "http, replaced by rename: X's data read again from the cache" reread
else
  fail "http: X's open reader: $READER_SAID"
fi
mmap_ok "http, replaced by rename" http_mmap
if reader_check http_y; then
  log "http: Y, first quarter read before: ${READER_SAID//$'\n'/; }"
  all_old "http, replaced by rename: Y's first quarter read again from the cache" reread
  # The parts never fetched: the server has only the new version now.
  if phase "http: Y's rest" rest; then
    ((P_EIO > 0 && P_NEW == 0 && P_OTHER == 0 && P_OK + P_EIO == P_PIECES)) ||
      fail "http: Y's parts never fetched, whose version the server no longer has, must fail with EIO (and nothing else may come back): $P_LINE"
  fi
else
  fail "http: Y's open reader: $READER_SAID"
fi
fresh_is "http, replaced by rename" "$MH/X.b2nd" x_new
fresh_is "http, replaced by rename" "$MH/Y.b2nd" y_new
for id in http_x http_mmap http_y; do hold_stop "$id"; done
pid_alive "$DAEMON_PID" || fail "b2ndfs (http) died"
finish
