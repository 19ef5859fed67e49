#!/usr/bin/env bash
# fuse.browser: a picture in the browser from a static web server (README.md,
# "Viewers"). nginx serves a mount with docs/viewer/nginx.conf.example (CORS
# headers included), the viewer page docs/viewer/index.html and zarrita from
# .deps/npm; headless Chromium (Debian's chromium) loads the page, which reads
# one plane with zarrita over HTTP and draws it to a canvas, then shows the
# pixels it reads back from the canvas. They must equal NumPy's rendering of
# c-blosc2's own bytes of that plane (the page's rule: grey =
# floor((v - lo) / (hi - lo) * 255 + 0.5), clamped; lo and hi the plane's
# minimum and maximum unless given):
# - a 2-D float32 array's data.zarr, with the window given;
# - the middle plane of a 3-D uint16 array's data.zarr, its window its own;
# - a cross-origin preflight (OPTIONS with Origin) is answered with the
#   headers a viewer served from elsewhere needs.
# Skips (77) when /dev/fuse is unusable, or chromium, nginx, node's zarrita
# or /usr/bin/python3's numpy is missing.
# Usage: fuse_browser.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init browser "$1"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"  # free_port
SRC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
NPM_MODULES=${B2NDFS_NPM_PREFIX:-$SRC_ROOT/.deps/npm}/node_modules
CHROMIUM=$(command -v chromium || command -v chromium-browser) || { log "SKIP: chromium is not installed"; exit 77; }
NGINX=/usr/sbin/nginx
[[ -x $NGINX ]] || { log "SKIP: nginx is not installed"; exit 77; }
[[ -f $NPM_MODULES/zarrita/package.json ]] || { log "SKIP: zarrita is missing (scripts/setup.sh)"; exit 77; }
"$PY" -c 'import numpy' 2>/dev/null || { log "SKIP: $PY lacks numpy"; exit 77; }
require_fuse

S=$TMP/src
M=$TMP/mnt
R=$TMP/ref
mkdir -p "$S" "$R"
"$FIXTURE" write "$S/plane.b2nd" --dtype '<f4' --shape 37,53 --chunks 16,32 --blocks 8,8 --seed 3 >/dev/null &&
  "$FIXTURE" write "$S/stack.b2nd" --dtype '<u2' --shape 5,40,30 --chunks 2,16,16 --blocks 1,8,8 --seed 4 >/dev/null ||
  { fail "b2nd_fixture write"; exit 1; }
ref_slice "$S/plane.b2nd" ":,:" "$R/plane.raw"
ref_slice "$S/stack.b2nd" "2,:,:" "$R/stack.raw"
mount_fs "$S" "$M" || exit 1

# nginx with the shipped example, its paths and port replaced, and what a
# test's own server needs (foreground, pid and logs in TMP).
PORT=$(free_port)
NG=$TMP/nginx
mkdir -p "$NG/tmp"
{
  echo "daemon off; master_process off; pid $NG/nginx.pid; error_log $NG/error.log warn;"
  sed -e "s|listen 127.0.0.1:8080;|listen 127.0.0.1:$PORT; access_log $NG/access.log; client_body_temp_path $NG/tmp;|" \
    -e "s|/srv/arrays/|$M/|" -e "s|/usr/share/doc/b2ndfs/viewer/|$SRC_ROOT/docs/viewer/|" \
    -e "s|/opt/zarrita/node_modules/|$NPM_MODULES/|" "$SRC_ROOT/docs/viewer/nginx.conf.example"
} >"$NG/nginx.conf"
"$NGINX" -p "$NG" -c "$NG/nginx.conf" 2>"$NG/stderr.log" &
ITEST_HELPERS+=($!)
URL=http://127.0.0.1:$PORT
wait_until 10 curl -s -o /dev/null "$URL/viewer/index.html" ||
  { fail "nginx did not start: $(cat "$NG/stderr.log" "$NG/error.log" 2>/dev/null)"; exit 1; }

# Chromium's own processes are stopped by the timeout of each run; its
# profile lives in TMP.
draw() {
  local query=$1 out=$2
  timeout -k 5 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$TMP/chromium" --virtual-time-budget=30000 \
    --dump-dom "$URL/viewer/index.html?$query" >"$out" 2>"$out.log"
}

# expect_drawn QUERY REF DTYPE SHAPE [LO HI]: the page's pixels for QUERY
# equal NumPy's rendering of REF.
expect_drawn() {
  local query=$1 ref=$2 dtype=$3 shape=$4 lo=${5:-} hi=${6:-} out=$TMP/dom.$RANDOM
  draw "$query" "$out" || { fail "chromium on $query: $(tail -n 3 "$out.log")"; return; }
  check "the page drew $query" "$PY" - "$out" "$ref" "$dtype" "$shape" "$lo" "$hi" <<'PYEOF'
import re, sys
import numpy as np
dom, ref, dtype, shape, lo, hi = sys.argv[1:7]
text = open(dom).read()
status = re.search(r'<pre id="status">([^<]*)</pre>', text)
pixels = re.search(r'<pre id="pixels"[^>]*>([0-9a-f]*)</pre>', text)
if not status or not status.group(1).startswith("drawn"):
    sys.exit(f"the page says: {status.group(1) if status else text[:400]}")
shape = tuple(int(n) for n in shape.split(","))
values = np.fromfile(ref, dtype=dtype).reshape(shape).astype(np.float64)
lo = float(lo) if lo else values.min()
hi = float(hi) if hi else values.max()
span = hi - lo if hi > lo else 1.0
want = np.clip(np.floor((values - lo) / span * 255 + 0.5), 0, 255).astype(np.uint8)
got = np.frombuffer(bytes.fromhex(pixels.group(1)), dtype=np.uint8)
if got.size != want.size:
    sys.exit(f"{got.size} pixels drawn, {want.size} expected")
bad = np.count_nonzero(got != want.ravel())
if bad:
    sys.exit(f"{bad} of {want.size} pixels differ from NumPy's rendering")
print(f"{status.group(1)}: {want.size} pixels equal NumPy's")
PYEOF
}

lohi=$("$PY" -c 'import numpy as np, sys; v = np.fromfile(sys.argv[1], "<f4"); print(float(np.percentile(v, 10)), float(np.percentile(v, 90)))' "$R/plane.raw")
read -r LO HI <<<"$lohi"
expect_drawn "array=/data/plane.b2nd/data.zarr&lo=$LO&hi=$HI" "$R/plane.raw" "<f4" 37,53 "$LO" "$HI"
expect_drawn "array=/data/stack.b2nd/data.zarr" "$R/stack.raw" "<u2" 40,30

# A viewer on another origin asks first (CORS preflight), then reads.
headers=$(curl -s -D - -o /dev/null -X OPTIONS -H "Origin: http://viewer.example" \
  -H "Access-Control-Request-Headers: range" "$URL/data/plane.b2nd/data.zarr/zarr.json")
check "preflight allows any origin" grep -qi '^access-control-allow-origin: \*' <<<"$headers"
check "preflight allows Range" grep -qi '^access-control-allow-headers: range' <<<"$headers"
headers=$(curl -s -D - -o /dev/null -H "Origin: http://viewer.example" -H "Range: bytes=0-9" \
  "$URL/data/plane.b2nd/data.zarr/zarr.json")
check "a cross-origin range read is answered 206 with CORS headers" \
  grep -qi '^access-control-expose-headers: .*content-range' <<<"$headers"
check "206" grep -q '^HTTP/1.1 206' <<<"$headers"
finish
