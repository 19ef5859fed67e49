#!/usr/bin/env bash
# fuse.compat: containers written by c-blosc2 2.17.1 (tests/compat, committed
# like c-blosc2's own compat/ files; see make_compat.c there) read through a
# mount exactly as 2.17.1 read them: MANIFEST holds the SHA-256 of the array
# 2.17.1 decoded. For each container: `data` and the payload of `data.npy`
# have that digest; every chunk file equals numpy slicing of `data`; random
# view/ boxes equal numpy slicing; and where c-blosc2 3.3.5 itself can read the
# file (b2nd_fixture slice), it agrees too.
# Usage: fuse_compat.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init compat "$1"
require_fuse

COMPAT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../compat" && pwd)
M=$TMP/mnt
mount_fs "$COMPAT" "$M" || exit 1

count=0
while IFS=$'\t' read -r name expect sha what; do
  [[ -z $name || $name == \#* ]] && continue
  count=$((count + 1))
  [[ $expect == data ]] || { fail "$name: unknown expectation '$expect'"; continue; }
  got=$(sha256sum <"$M/$name/data" | cut -c1-64)
  [[ $got == "$sha" ]] || fail "$name ($what): data has SHA-256 $got, c-blosc2 2.17.1 read $sha"
  if "$FIXTURE" slice "$COMPAT/$name" "$(full_box "$COMPAT/$name")" "$TMP/whole.bin" 2>"$TMP/slice.err"; then
    got=$(sha256sum <"$TMP/whole.bin" | cut -c1-64)
    [[ $got == "$sha" ]] || fail "$name: c-blosc2 $("$B2NDFS" --version | sed -n 's/.*c-blosc2 \([^ ,]*\).*/\1/p') reads SHA-256 $got, 2.17.1 read $sha"
  else
    log "$name: c-blosc2 3.3.5 cannot read it itself ($(head -c 200 "$TMP/slice.err")); 2.17's digest decides"
  fi
  /usr/bin/python3 - "$M/$name" "$sha" <<'PY' || fail "$name: npy/chunks/view check (above)"
import hashlib, json, os, random, sys
import numpy as np
d, sha = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(d, "meta.json")))
a = np.load(os.path.join(d, "data.npy"))
assert a.dtype == np.dtype(meta["dtype"]), (a.dtype, meta["dtype"])
assert list(a.shape) == meta["shape"], (a.shape, meta["shape"])
assert hashlib.sha256(a.tobytes()).hexdigest() == sha, "data.npy payload differs"
raw = np.fromfile(os.path.join(d, "data"), dtype=a.dtype).reshape(a.shape)
assert np.array_equal(raw, a) or np.array_equal(raw, a, equal_nan=True)
chunks = meta["chunkshape"]
for name in os.listdir(os.path.join(d, "chunks")):
    idx = [int(x) for x in name.split(".")]
    box = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(idx, chunks, a.shape))
    got = open(os.path.join(d, "chunks", name), "rb").read()
    assert got == a[box].tobytes(), f"chunk {name} differs"
rng = random.Random(7)
for _ in range(20):
    starts = [rng.randrange(0, s) for s in a.shape]
    stops = [rng.randrange(b + 1, s + 1) for b, s in zip(starts, a.shape)]
    expr = ",".join(f"{b}:{e}" for b, e in zip(starts, stops))
    got = open(os.path.join(d, "view", expr), "rb").read()
    want = a[tuple(slice(b, e) for b, e in zip(starts, stops))].tobytes()
    assert got == want, f"view/{expr} differs"
PY
done <"$COMPAT/MANIFEST"
((count >= 6)) || fail "MANIFEST lists $count containers, expected at least 6"
log "$count compatibility containers checked"
finish
