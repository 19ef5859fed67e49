#!/usr/bin/env bash
# fuse.view: view/EXPR and view/EXPR.npy (README.md, "Layout"). For a 3-D
# container written by c-blosc2, data is first compared with c-blosc2's own
# reading; then, for fixed and ~50 randomized NumPy basic-indexing
# expressions (steps, negatives, dropped axes, `...`, empty results), the
# bytes of view/EXPR (read whole and at odd offsets) and numpy.load of
# view/EXPR.npy must equal NumPy's a[EXPR] of data.npy. Malformed or
# out-of-range names are ENOENT, and the first ten of them in a minute are
# logged at info with their reason (the daemon's stderr and .b2ndfs/log);
# spaces are accepted where Python accepts them (`3, 4`); view is listed in
# the container directory, its contents are not; views=meta,data,npy shows
# only those, and an unknown kind is an error before anything is mounted. Stepped
# hyperslabs decompress exactly the blocks they touch (reads.blocks_decompressed
# of a container no one read before). Skips (77) when /usr/bin/python3 has no numpy.
# Usage: fuse_view.sh BUILD_DIR [SEED]
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init view "$1"
SEED=${2:-${B2NDFS_VIEW_SEED:-$RANDOM}}
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  log "SKIP: $PY has no numpy"
  exit 77
fi
require_fuse

S=$TMP/src
R=$TMP/ref
mkdir -p "$S" "$R"
GEOMETRY=(--shape 23,19,31 --chunks 8,8,8 --blocks 3,4,5)
"$FIXTURE" write "$S/a.b2nd" --ref "$R/a.b2nd" --dtype '<f4' "${GEOMETRY[@]}" --seed 11 >/dev/null ||
  {
    fail "b2nd_fixture write a"
    exit 1
  }
ref_slice "$R/a.b2nd" ":,:,:" "$TMP/a.want"
# Fresh copies for the block counts: nothing of them is cached yet.
"$FIXTURE" write "$TMP/blocks.b2nd" --dtype '<i2' "${GEOMETRY[@]}" --seed 12 >/dev/null ||
  {
    fail "b2nd_fixture write blocks"
    exit 1
  }
for k in 0 1 2 3; do cp "$TMP/blocks.b2nd" "$S/blocks$k.b2nd"; done

M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=64M || exit 1

check "data equals c-blosc2's reading" cmp -s "$M/a.b2nd/data" "$TMP/a.want"
log "expressions seeded with $SEED"

check "view/ against numpy" "$PY" - "$M" "$SEED" <<'EOF'
import errno
import json
import os
import random
import sys

import numpy as np

mount, seed = sys.argv[1], int(sys.argv[2])
base = f"{mount}/a.b2nd"
a = np.load(f"{base}/data.npy")
rng = random.Random(seed)
failures = []


def fail(what):
    failures.append(what)
    print(f"MISMATCH {what}", file=sys.stderr)


def random_term(n):
    kind = rng.random()
    if kind < 0.25:
        return str(rng.randrange(-n, n))
    def bound():
        return "" if rng.random() < 0.3 else str(rng.randint(-n - 3, n + 3))
    step = rng.choice(["", "", "1", "2", "3", "-1", "-2", "-3", "-5", "7", "40", "-40"])
    if step == "" and rng.random() < 0.5:
        return f"{bound()}:{bound()}"
    return f"{bound()}:{bound()}:{step}"


def random_expr():
    kept = rng.randint(1, a.ndim)  # missing trailing axes mean ':'
    if rng.random() >= 0.3:
        return ",".join(random_term(n) for n in a.shape[:kept])
    # Terms after `...` index the last axes: each is drawn for the axis it
    # lands on (an index valid for axis 0 may be out of range for axis 2).
    before = rng.randint(0, kept)
    after = kept - before
    terms = [random_term(n) for n in a.shape[:before]] + ["..."]
    terms += [random_term(n) for n in a.shape[a.ndim - after:]] if after else []
    return ",".join(terms)


fixed = ["...", "0", "-1", ":", "::-1", "22,18,30", "-23,-19,-31", "0,0,0,...", "...,0,0,0",
         "1,...,2", "...,::-3", "::2,::3,::4", "::-7,::5,::-11", "5:2", "::-1,3:3", "...,30:31:5",
         "2:20:6,-1,::-2", ":,10", "...,4", "1:-1,1:-1,1:-1", ":,::-1,:", "::99999999999999999999",
         "-99999999999999999999:99999999999999999999", "3,", "::40,::-40,::40",
         # Spaces where Python allows them, as copied from code.
         "3, 4", " 1 : 5 , ...", "- 1, ::2 ", "0, 1", "2 , ", "... , 0"]
expressions = fixed + [random_expr() for _ in range(50)]
checked = 0
for expr in expressions:
    # NumPy's own reading of EXPR (np.array keeps a scalar 0-D).
    want = np.array(eval(f"a[{expr}]"), order="C")
    path = f"{base}/view/{expr}"
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as f:
            got = f.read()
    except OSError as e:
        fail(f"view/{expr}: {e}")
        continue
    if size != want.nbytes:
        fail(f"view/{expr}: stat size {size}, numpy has {want.nbytes} bytes")
    if got != want.tobytes():
        fail(f"view/{expr}: {len(got)} bytes differ from a[{expr}] ({want.nbytes} bytes)")
        continue
    # Reads at odd offsets and lengths (cutting items) give the same bytes.
    if want.nbytes:
        fd = os.open(path, os.O_RDONLY)
        try:
            for _ in range(3):
                off = rng.randrange(want.nbytes)
                length = rng.randint(1, want.nbytes - off + 10)
                if os.pread(fd, length, off) != want.tobytes()[off:off + length]:
                    fail(f"view/{expr}: pread({length}, {off}) differs")
        finally:
            os.close(fd)
    try:
        b = np.load(f"{path}.npy")
    except Exception as e:  # a broken header is a failure, not a crash
        fail(f"view/{expr}.npy: {e}")
        continue
    if b.shape != want.shape or b.dtype != want.dtype or b.tobytes() != want.tobytes():
        fail(f"view/{expr}.npy: {b.shape} {b.dtype}, numpy has {want.shape} {want.dtype}")
    if want.size and not isinstance(np.load(f"{path}.npy", mmap_mode="r"), np.memmap):
        fail(f"view/{expr}.npy: numpy.load(mmap_mode='r') did not map it")
    checked += 1

malformed = ["0,0,0,0", ":,:,:,:", "::0", "1:2:0", "...,...", "23", "-24", "0,19", "0,0,31",
             "a", "1:2:3:4", ",", "1,,2", ",1", "1.5", "....", "-", "None", "[0]",
             "1 0", ". ..", " , ", ".npy", "0.npy.npy", "::0.npy", "0" * 256]
for name in malformed:
    try:
        os.stat(f"{base}/view/{name}")
        fail(f"view/{name} exists; it must be ENOENT")
    except OSError as e:
        # Beyond NAME_MAX the kernel may answer for us.
        if e.errno != errno.ENOENT and not (len(name) > 255 and e.errno == errno.ENAMETOOLONG):
            fail(f"view/{name}: {e}, expected ENOENT")

if not os.path.isdir(f"{base}/view"):
    fail("view/ is not a directory")
if os.listdir(f"{base}/view") != []:
    fail(f"view/ lists {os.listdir(f'{base}/view')[:5]}; it must list nothing")
if "view" not in os.listdir(base):
    fail("view is not listed in the container directory")
with open(f"{base}/meta.json") as f:
    files = json.load(f)["files"]
if files.get("view", {}).get("size") != a.nbytes:
    fail(f"meta.json files.view is {files.get('view')}")

print(f"view: {checked} of {len(expressions)} expressions checked, {len(failures)} failures")
sys.exit(1 if failures else 0)
EOF

# The refused names above, logged at info with their reason, rate-limited.
refused=$(grep -c ': info: .*a.b2nd: view/.*: ' "$M.log")
if ((refused < 1 || refused > 10)); then
  fail "$refused refused view/ names logged at info (expected 1 to 10): $(head -c 2000 "$M.log")"
fi
check "the refused 0,0,0,0 logged with its reason" grep -q 'view/0,0,0,0: 4 indices for 3 axes' "$M.log"
check ".b2ndfs/log has the refused names too" grep -q 'info: .*a.b2nd: view/0,0,0,0: 4 indices' "$M/.b2ndfs/log"

# Blocks a stepped hyperslab touches: per axis, the (chunk, block) pairs of
# its selected indices; the touched blocks are their product.
check "only touched blocks are decompressed" "$PY" - "$M" <<'EOF'
import json
import sys

import numpy as np

mount = sys.argv[1]
shape, chunks, blocks = (23, 19, 31), (8, 8, 8), (3, 4, 5)


def decompressed():
    with open(f"{mount}/.b2ndfs/stats") as f:
        return json.load(f)["reads"]["blocks_decompressed"]


failures = 0
for k, expr in enumerate(["::4", "::-9,1:17:5,::7", "2,::6,-1", "...,::13"]):
    base = f"{mount}/blocks{k}.b2nd"
    with open(f"{base}/meta.json") as f:
        f.read()  # opens the container
    touched = 1
    slab = eval(f"np.s_[{expr}]")
    slab = slab if isinstance(slab, tuple) else (slab,)
    if Ellipsis in slab:
        i = slab.index(Ellipsis)
        slab = slab[:i] + (slice(None),) * (3 - len(slab) + 1) + slab[i + 1:]
    slab = slab + (slice(None),) * (3 - len(slab))
    for d in range(3):
        sel = np.atleast_1d(np.arange(shape[d])[slab[d]])
        touched *= len({(i // chunks[d], (i % chunks[d]) // blocks[d]) for i in sel})
    before = decompressed()
    with open(f"{base}/view/{expr}", "rb") as f:
        f.read()
    delta = decompressed() - before
    status = "ok" if delta == touched else "WRONG"
    print(f"view/{expr}: {delta} blocks decompressed, {touched} touched: {status}")
    failures += delta != touched
sys.exit(1 if failures else 0)
EOF

# views=LIST: only the kinds named appear (README.md, "Which files appear").
MV=$TMP/mnt_views
mount_fs "$S" "$MV" -o views=meta,data,npy || exit 1
got=$(ls "$MV/a.b2nd" | tr '\n' ' ')
[[ $got == "data data.npy meta.json " ]] || fail "views=meta,data,npy lists [$got]"
[[ -e $MV/a.b2nd/view/0 ]] && fail "views=meta,data,npy still has view/0"
check "views=: data.npy equals the full mount's" cmp -s "$MV/a.b2nd/data.npy" "$M/a.b2nd/data.npy"
unmount_fs "$MV"
mkdir -p "$TMP/mnt_bad"
ITEST_MOUNTS+=("$TMP/mnt_bad")
"$B2NDFS" -o views=nope "$S" "$TMP/mnt_bad" 2>"$TMP/bad.err"
rc=$?
((rc == 2)) || fail "views=nope: exit $rc, expected 2"
grep -q "'nope' is not a kind of view" "$TMP/bad.err" || fail "views=nope: $(cat "$TMP/bad.err")"
is_mounted "$TMP/mnt_bad" && fail "views=nope mounted"
finish
