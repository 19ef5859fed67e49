#!/usr/bin/env bash
# fuse.plugin: the daemon never loads or runs code because a container says
# so. plugin_grok.b2nd (b2nd_fixture hostile) is a valid container whose frame
# and chunk headers name the codec grok, which c-blosc2 would load as a plugin:
# dlopen("libblosc2_grok.so"), else `python -c "import blosc2_grok; ..."`
# through /bin/sh and a dlopen of the path python prints. The daemon runs with
# PATH starting with fake python/python3/sh scripts and LD_LIBRARY_PATH holding
# a fake libblosc2_grok.so (built here with cc), each leaving a marker when
# run or loaded. Reading the container's data, a chunk, a slice must fail with
# EIO promptly, meta.json must still describe the array and say what is
# unsupported, no marker may appear, and the daemon must stay up.
# Controls first show that c-blosc2 itself (b2nd_fixture) springs each trap
# on the same file, so the test would see a daemon that let it decode.
# Usage: fuse_plugin.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init plugin "$1"
require_fuse

H=$TMP/hostile
"$FIXTURE" hostile "$H/out" >/dev/null || { fail "b2nd_fixture hostile failed"; finish; }
S=$TMP/src
mkdir -p "$S"
for f in plugin_grok.b2nd plugin_filter.b2nd; do
  [[ -f $H/out/$f ]] || { fail "b2nd_fixture hostile wrote no $f"; finish; }
  cp "$H/out/$f" "$S/"
done
cp "$H/hostile_ref/intact.b2nd" "$S/good.b2nd"

# --- the trap ---------------------------------------------------------------
TRAP=$TMP/trap
MARKS=$TMP/marks
mkdir -p "$TRAP/bin" "$TRAP/lib" "$MARKS"
for name in python python3 python3.11 sh; do
  cat >"$TRAP/bin/$name" <<EOF
#!/bin/sh
echo "\$0 \$*" >>"$MARKS/ran-$name"
echo "$TRAP/lib/libblosc2_grok.so"
EOF
  chmod 755 "$TRAP/bin/$name"
done
cat >"$TRAP/grok.c" <<EOF
#include <stdio.h>
/* What c-blosc2 looks up in a codec plugin; the names lead nowhere. */
typedef struct { const char *encoder, *decoder; } codec_info;
codec_info info = {"no_such_encoder", "no_such_decoder"};
__attribute__((constructor)) static void loaded(void) {
  FILE *f = fopen("$MARKS/loaded-libblosc2_grok", "a");
  if (f) { fputs("libblosc2_grok.so was loaded\n", f); fclose(f); }
}
EOF
if ! cc -shared -fPIC -o "$TRAP/lib/libblosc2_grok.so" "$TRAP/grok.c" 2>"$TMP/cc.log"; then
  fail "cannot build the fake plugin: $(cat "$TMP/cc.log")"
  finish
fi
TRAP_PATH=$TRAP/bin:$PATH

markers() { find "$MARKS" -type f -printf '%f ' 2>/dev/null; }

# --- control: c-blosc2 itself walks into both traps ----------------------------
# control ENV...: decodes plugin_grok.b2nd with c-blosc2 (b2nd_fixture) under
# ENV; prints the markers left, then clears them.
control() {
  env "$@" timeout 60 "$FIXTURE" slice "$S/plugin_grok.b2nd" ":,:" "$TMP/control.bin" >/dev/null 2>&1
  markers
  rm -f "$MARKS"/*
}
got=$(control LD_LIBRARY_PATH="$TRAP/lib")
[[ $got == *loaded-libblosc2_grok* ]] ||
  fail "control: c-blosc2 did not load the fake libblosc2_grok.so from LD_LIBRARY_PATH (markers: '$got')"
got=$(control PATH="$TRAP_PATH")
[[ $got == *ran-python* ]] ||
  fail "control: c-blosc2 did not run the fake python from PATH (markers: '$got')"
log "control: c-blosc2 springs both traps"

# --- the daemon ---------------------------------------------------------------
M=$TMP/mnt
PATH=$TRAP_PATH LD_LIBRARY_PATH=$TRAP/lib mount_fs "$S" "$M" || finish
env_of_daemon=$(tr '\0' '\n' <"/proc/$DAEMON_PID/environ")
grep -qx "PATH=$TRAP_PATH" <<<"$env_of_daemon" || fail "the daemon does not run with the trap PATH"
grep -qx "LD_LIBRARY_PATH=$TRAP/lib" <<<"$env_of_daemon" ||
  fail "the daemon does not run with the trap LD_LIBRARY_PATH"

C=$M/plugin_grok.b2nd
[[ -d $C ]] || fail "plugin_grok.b2nd is not shown as a directory"
meta=$(timeout 10 cat "$C/meta.json") || fail "cannot read plugin_grok.b2nd/meta.json"
grep -q '"error"' <<<"$meta" && fail "meta.json is an error, expected the array: $meta"
grep -q '"shape": \[40, 60\]' <<<"$meta" || fail "meta.json does not show the 40x60 array: $meta"
grep -q '"codec": "grok"' <<<"$meta" || fail "meta.json does not name the codec grok: $meta"
grep -q '"unsupported": "[^"]*grok' <<<"$meta" ||
  fail "meta.json has no \"unsupported\" naming grok: $meta"

# expect_eio WHAT CMD...: CMD fails with EIO within 5 s.
expect_eio() {
  local what=$1 out rc t0 t1
  shift
  t0=$(date +%s%N)
  out=$(timeout 5 "$@" 2>&1 >/dev/null)
  rc=$?
  t1=$(date +%s%N)
  if ((rc == 124)); then
    fail "$what: still running after 5 s"
  elif ((rc == 0)); then
    fail "$what succeeded, expected EIO"
  elif ! grep -q 'Input/output error' <<<"$out"; then
    fail "$what: '$out', expected Input/output error"
  fi
  log "$what: EIO in $(((t1 - t0) / 1000000)) ms"
}
expect_eio "cat data" cat "$C/data"
expect_eio "dd of data at 4 KiB" dd if="$C/data" of=/dev/null bs=4096 skip=1 count=1 status=none
expect_eio "cat data.npy" cat "$C/data.npy"
expect_eio "cat chunks/1.2" cat "$C/chunks/1.2"
expect_eio "cat slices/0/07" cat "$C/slices/0/07"
expect_eio "cat slices/1/59" cat "$C/slices/1/59"
# Again: a failure must not be cached as success, nor hang the second time.
expect_eio "cat data again" cat "$C/data"
F=$M/plugin_filter.b2nd
grep -q '"shape": \[40, 60\]' "$F/meta.json" || fail "plugin_filter.b2nd/meta.json does not show the array"
expect_eio "cat plugin_filter.b2nd/data" cat "$F/data"

# Nothing was run or loaded, the daemon is up and still serves good data.
[[ -z $(markers) ]] || fail "the daemon ran or loaded plugin code: $(markers): $(cat "$MARKS"/* 2>/dev/null)"
pid_alive "$DAEMON_PID" || fail "b2ndfs died: $(tail -20 "$M.log")"
{ is_mounted "$M" && stat "$M/." >/dev/null 2>&1; } || fail "the mount no longer answers"
ref_slice "$H/hostile_ref/intact.b2nd" ":,:" "$TMP/want"
check "a good container next to them" cmp "$M/good.b2nd/data" "$TMP/want"
grep -q 'plugin_grok' "$M.log" || fail "the refused container was not logged by name"
grep -q 'grok' "$M.log" || fail "the log does not say that grok is missing"
check "unmount" unmount_fs "$M"
finish
