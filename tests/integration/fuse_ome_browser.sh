#!/usr/bin/env bash
# fuse.ome_browser: a picture in the browser from a static web server
# (README.md, "Viewers"). nginx serves a mount and a small page; headless
# Chromium (Debian's chromium) loads the page, which reads the coarsest level
# of NAME.b2nd/ome.zarr/ with zarrita over HTTP (Range requests, CORS-free:
# one origin), maps it to gray with the omero window of zarr.json and draws
# it on a canvas; the canvas's pixels, read back, equal NumPy's rendering of
# the same level (block means of data.npy, made here) with the same window.
# Skips (77) when /dev/fuse is unusable, chromium, nginx, node's zarrita (in
# .deps/npm) or /usr/bin/python3's numpy is missing.
# Usage: fuse_ome_browser.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init ome_browser "$1"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NPM_PREFIX=${B2NDFS_NPM_PREFIX:-$HERE/../../.deps/npm}
NPM_PREFIX=$(cd "$NPM_PREFIX" 2>/dev/null && pwd -P) || NPM_PREFIX=
CHROMIUM=$(command -v chromium || true)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [[ -z $CHROMIUM || ! -x $NGINX || -z $NPM_PREFIX ||
  ! -f $NPM_PREFIX/node_modules/zarrita/package.json ]]; then
  log "SKIP: chromium, nginx or zarrita (in .deps/npm) is missing"
  exit 77
fi
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  log "SKIP: $PY lacks numpy"
  exit 77
fi
require_fuse

mkdir -p "$TMP/src" "$TMP/www" "$TMP/nginx"
# 3 levels: 300 x 200 -> 150 x 100 -> 75 x 50, which fits a chunk of 96 x 64.
"$FIXTURE" write "$TMP/src/img.b2nd" --dtype '<u2' --shape 300,200 --chunks 96,64 \
  --blocks 32,32 --seed 4 >/dev/null || { fail "b2nd_fixture write"; exit 1; }
M=$TMP/mnt
mount_fs "$TMP/src" "$M" || exit 1

PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/nginx/nginx.conf" <<EOF
# The master runs as root (this test's user): its workers too, so that they
# read the mount (a FUSE mount without allow_other is its owner's alone).
user root;
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log;
daemon off;
events { worker_connections 64; }
http {
  include /etc/nginx/mime.types;
  types { application/javascript mjs; }
  access_log $TMP/nginx/access.log;
  client_body_temp_path $TMP/nginx/body;
  proxy_temp_path $TMP/nginx/proxy;
  fastcgi_temp_path $TMP/nginx/fastcgi;
  uwsgi_temp_path $TMP/nginx/uwsgi;
  scgi_temp_path $TMP/nginx/scgi;
  server {
    listen 127.0.0.1:$PORT;
    location /data/ {
      alias $M/;
      add_header Access-Control-Allow-Origin "*" always;
      add_header Access-Control-Expose-Headers "Content-Length, Content-Range" always;
    }
    location /npm/ { alias $NPM_PREFIX/node_modules/; }
    location / { root $TMP/www; }
  }
}
EOF
"$NGINX" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" 2>"$TMP/nginx/stderr" &
ITEST_HELPERS+=($!)
wait_until 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" ||
  { fail "nginx did not start: $(cat "$TMP/nginx/stderr" "$TMP/nginx/error.log" 2>/dev/null)"; exit 1; }

cat >"$TMP/www/page.html" <<'EOF'
<!doctype html>
<html><body>
<canvas id="canvas"></canvas>
<pre id="out">pending</pre>
<script type="importmap">
{"imports": {
  "zarrita": "/npm/zarrita/dist/src/index.js",
  "@zarrita/storage/fetch": "/npm/@zarrita/storage/dist/src/fetch.js",
  "@zarrita/storage": "/npm/@zarrita/storage/dist/src/index.js"
}}
</script>
<script type="module">
import * as zarr from "zarrita";
const out = document.getElementById("out");
try {
  const src = new URL(location.href).searchParams.get("src");
  const base = new URL(src, location.href).href;
  const group = await (await fetch(`${base}/zarr.json`)).json();
  const ome = group.attributes.ome;
  const datasets = ome.multiscales[0].datasets;
  const top = datasets[datasets.length - 1].path;
  const { start, end } = ome.omero.channels[0].window;
  const arr = await zarr.open.v3(new zarr.FetchStore(`${base}/${top}`), { kind: "array" });
  const level = await zarr.get(arr, null);
  const [h, w] = level.shape;
  const canvas = document.getElementById("canvas");
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(w, h);
  for (let i = 0; i < w * h; i++) {
    const v = level.data[i];
    // The previews' mapping (README.md, "Previews").
    let g = 0;
    if (v >= end) g = 255;
    else if (v > start && end > start) g = Math.floor(((v - start) / (end - start)) * 255 + 0.5);
    image.data.set([g, g, g, 255], 4 * i);
  }
  ctx.putImageData(image, 0, 0);
  const drawn = ctx.getImageData(0, 0, w, h).data;
  const gray = new Array(w * h);
  for (let i = 0; i < w * h; i++) gray[i] = drawn[4 * i];
  out.textContent = JSON.stringify({ level: top, shape: [h, w], window: [start, end], gray });
} catch (e) {
  out.textContent = JSON.stringify({ error: String(e) });
}
</script>
</body></html>
EOF
URL="http://127.0.0.1:$PORT/page.html?src=/data/img.b2nd/ome.zarr"
check "chromium draws the coarsest level" timeout 120 "$CHROMIUM" --headless --no-sandbox \
  --disable-gpu --user-data-dir="$TMP/chromium" --virtual-time-budget=30000 --dump-dom "$URL" \
  >"$TMP/dom.html" 2>"$TMP/chromium.log"
check "the drawn pixels equal NumPy's rendering" "$PY" - "$TMP/dom.html" "$M/img.b2nd" <<'EOF'
import html
import json
import re
import sys

import numpy as np

dom, c = sys.argv[1:3]
m = re.search(r'<pre id="out">(.*?)</pre>', open(dom).read(), re.S)
if not m:
    sys.exit("no output in the page")
got = json.loads(html.unescape(m.group(1)))
if "error" in got:
    sys.exit(f"the page failed: {got['error']}")
a = np.load(c + "/data.npy").astype(np.int64)
ome = json.load(open(c + "/ome.zarr/zarr.json"))["attributes"]["ome"]
for _ in range(len(ome["multiscales"][0]["datasets"]) - 1):
    h, w = (a.shape[0] + 1) // 2, (a.shape[1] + 1) // 2
    total = np.zeros((h, w), np.int64)
    count = np.zeros((h, w), np.int64)
    for dy in (0, 1):
        for dx in (0, 1):
            part = a[dy::2, dx::2]
            total[: part.shape[0], : part.shape[1]] += part
            count[: part.shape[0], : part.shape[1]] += 1
    q = total // count
    r = total - q * count
    a = q + ((2 * r > count) | ((2 * r == count) & (q % 2 == 1)))
win = ome["omero"]["channels"][0]["window"]
lo, hi = win["start"], win["end"]
v = a.astype(np.float64)
gray = np.where(v >= hi, 255, np.where(v > lo, np.floor((v - lo) / (hi - lo) * 255 + 0.5), 0))
gray = gray.astype(np.uint8)
drawn = np.array(got["gray"], dtype=np.uint8).reshape(got["shape"])
print(f"level {got['level']}: {drawn.shape}, window {got['window']}, "
      f"{len(np.unique(drawn))} gray levels")
if drawn.shape != gray.shape or not np.array_equal(drawn, gray):
    sys.exit(f"the canvas differs from NumPy's rendering at "
             f"{np.argwhere(drawn != gray)[:5].tolist() if drawn.shape == gray.shape else drawn.shape}")
if len(np.unique(drawn)) < 20:
    sys.exit("the picture is nearly flat: the test would not see a wrong mapping")
EOF

finish
