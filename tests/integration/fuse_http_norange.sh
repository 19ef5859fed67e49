#!/usr/bin/env bash
# fuse.http_norange: a web server that ignores Range requests, Python's own
# `python3 -m http.server` (README.md, "Remote sources"):
#  * mounting says so on the terminal, in one line naming the cause and the
#    fix;
#  * a container of up to 1 MiB is read whole: its meta.json, data and
#    data.npy equal what a local mount of the same file gives;
#  * a larger one shows only a meta.json whose error names the cause and the
#    fix, and its reads fail; the mount goes on serving.
# Usage: fuse_http_norange.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init http_norange "$1"
require_fuse

W=$TMP/www
mkdir -p "$W"
"$FIXTURE" write "$W/small.b2nd" --dtype '<i4' --shape 60,70 --chunks 30,35 --blocks 10,35 \
  --seed 3 >/dev/null || { fail "b2nd_fixture write small"; finish; }
# Over 1 MiB compressed (about 3.4 MB).
"$FIXTURE" write "$W/large.b2nd" --dtype '<f8' --shape 1000,1000 --chunks 500,500 \
  --blocks 100,500 --seed 4 --codec lz4 --clevel 1 --filters none >/dev/null ||
  { fail "b2nd_fixture write large"; finish; }
size=$(stat -c %s "$W/large.b2nd")
((size > 1048576)) || fail "large.b2nd is only $size bytes (the test needs more than 1 MiB)"
((size > 1048576)) || finish

PORT=$(free_port)
(cd "$W" && exec "$PY" -m http.server --bind 127.0.0.1 "$PORT") >"$TMP/server.log" 2>&1 &
ITEST_HELPERS+=($!)
wait_until 10 "$PY" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/')" 2>/dev/null ||
  { fail "python3 -m http.server did not answer"; finish; }

L=$TMP/local
mount_fs "$W" "$L" || finish
M=$TMP/mnt
mount_fs "http://127.0.0.1:$PORT/" "$M" || finish
grep -q "ignores Range requests.*nginx" "$M.log" ||
  fail "mounting did not say that the server ignores Range requests: $(cat "$M.log")"
[[ $(grep -c "ignores Range requests" "$M.log") == 1 ]] || fail "the warning is not one line"

for f in meta.json data data.npy slices/0/07 view/3:9,5:60; do
  check "small.b2nd/$f equals the local mount's" cmp "$M/small.b2nd/$f" "$L/small.b2nd/$f"
done
check "numpy loads small.b2nd/data.npy (mmap)" "$PY" - "$M" "$L" <<'PYEOF'
import sys
import numpy as np
a = np.load(sys.argv[1] + "/small.b2nd/data.npy", mmap_mode="r")
b = np.load(sys.argv[2] + "/small.b2nd/data.npy")
assert a.dtype == b.dtype and (a == b).all()
PYEOF

grep -q '"error".*ignored the Range request.*nginx' "$M/large.b2nd/meta.json" ||
  fail "large.b2nd/meta.json does not say why: $(head -c 600 "$M/large.b2nd/meta.json")"
[[ ! -e $M/large.b2nd/data ]] || fail "large.b2nd/data exists"
check "the mount still serves small.b2nd" cmp "$M/small.b2nd/data" "$L/small.b2nd/data"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
unmount_fs "$M"
unmount_fs "$L"
finish
