#!/usr/bin/env bash
# fuse.vlen: python-blosc2's variable-length containers, carriers and proxy
# caches (README.md, "Variable-length data, carriers and caches") through a
# real mount, against what b2nd_fixture vlen wrote (tests/fixtures/
# make_vlen.cc, each layout cited from python-blosc2's sources):
#  * ObjectArray and ListArray: items/N.msgpack byte for byte as written,
#    items/N.json parsed by Python equal to the expected JSON; no data,
#    chunks/ or slices/ (meta.json's "files" says they are absent);
#  * BatchArray (.b2b): batches/N.msgpack is the batch as one msgpack list,
#    batches/N.json its JSON; the Arrow serializer's batches/N.arrow one IPC
#    stream (one block's bytes as stored; several blocks merged);
#  * carriers (b2o lazyexpr and c2array, legacy LazyArray): only meta.json,
#    holding the recipe (expression, relative operands, the remote URL);
#  * proxy caches: fetched chunks byte for byte, the others EIO; meta.json
#    lists the present ones; the auth_token is in no file of the mount, no
#    extended attribute, not in the daemon's log nor its stats;
#  * hostile variants: a clear meta.json error or EIO with the reason logged.
# Skips (77) only when /dev/fuse is unusable.
# Usage: fuse_vlen.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init vlen "$1"
require_fuse

S=$TMP/src
R=$TMP/ref
"$FIXTURE" vlen "$S" "$R" >/dev/null || {
  fail "b2nd_fixture vlen"
  exit 1
}
TOKEN=SECRET-TOKEN-b2ndfs-7f3a
M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=16M || exit 1

# Item and batch files: byte for byte, and their JSON parsed.
for d in objects.b2frame list_vl.b2frame; do
  check "$d lists items/ and meta.json only" \
    test "$(ls "$M/$d" | tr '\n' ' ')" = "items meta.json "
  for i in 0 1 2 3 4 5 6; do
    check "$d items/$i.msgpack" cmp "$M/$d/items/$i.msgpack" "$R/$d/$i.msgpack"
  done
done
for i in 0 1 2; do
  check "batches.b2b batches/$i.msgpack" cmp "$M/batches.b2b/batches/$i.msgpack" \
    "$R/batches.b2b/$i.msgpack"
done
for i in 0 1; do
  check "arrow.b2b batches/$i.arrow" cmp "$M/arrow.b2b/batches/$i.arrow" "$R/arrow.b2b/$i.arrow"
done
check "arrow.b2b has no .msgpack or .json" test "$(ls "$M/arrow.b2b/batches" | tr '\n' ' ')" = \
  "0.arrow 1.arrow "
check "JSON renderings parse to the written values" "$PY" - "$M" "$R" <<'EOF'
import json, os, sys
m, r = sys.argv[1], sys.argv[2]
for d, sub, n in (("objects.b2frame", "items", 7), ("list_vl.b2frame", "items", 7),
                  ("batches.b2b", "batches", 3)):
    for i in range(n):
        with open(os.path.join(m, d, sub, f"{i}.json")) as f:
            got = json.load(f)
        with open(os.path.join(r, d, f"{i}.json")) as f:
            want = json.load(f)
        assert got == want, (d, i, got, want)
    meta = json.load(open(os.path.join(m, d, "meta.json")))
    assert meta["content"] == ("objects" if sub == "items" else "batches"), meta
    assert meta["files"]["data"]["absent"], meta["files"]
    assert f"{sub}/N.json" in meta["files"], meta["files"]
    for view in ("data", "data.npy", "chunks", "slices", "zarr"):
        assert not os.path.exists(os.path.join(m, d, view)), (d, view)
meta = json.load(open(os.path.join(m, "arrow.b2b", "meta.json")))
assert meta["serializer"] == "arrow" and meta["metalayers"]["batcharray"]["serializer"] == "arrow"
EOF
check "an unpadded item name" test -f "$M/objects.b2frame/items/6.json"
read_fails "items/7 does not exist" "$M/objects.b2frame/items/7.msgpack"
check "100 items: 200 names, padded" test "$(ls "$M/many_objects.b2frame/items" | wc -l)" = 200
check "100 items: the first name" test "$(ls "$M/many_objects.b2frame/items" | head -1)" = 00.json
check "items/042.json" test "$(cat "$M/many_objects.b2frame/items/042.json")" = 42000
check "items/2.json" test "$(cat "$M/many_objects.b2frame/items/2.json")" = 2000
check "items/99.msgpack" cmp "$M/many_objects.b2frame/items/99.msgpack" \
  <(printf '\xd2\x00\x01\x82\xb8')
check "every item file stats" test "$(find "$M/many_objects.b2frame" -type f | wc -l)" = 201
for d in empty_objects.b2frame/items empty_batches.b2b/batches; do
  check "$d is empty" test -z "$(ls "$M/$d")"
done

# Carriers: meta.json with the recipe, and nothing else.
for d in lazy.b2nd c2ref.b2nd legacy_lazy.b2nd; do
  check "$d shows meta.json only" test "$(ls "$M/$d")" = "meta.json"
  read_fails "$d has no data" "$M/$d/data"
done
check "carrier recipes" "$PY" - "$M" <<'EOF'
import json, os, sys
m = sys.argv[1]
def meta(d):
    return json.load(open(os.path.join(m, d, "meta.json")))
lazy = meta("lazy.b2nd")
assert lazy["content"] == "carrier", lazy
assert lazy["recipe"]["expression"] == "o0 + o1 * 2", lazy["recipe"]
assert lazy["recipe"]["operands"]["o1"]["urlpath"] == "b.b2nd", lazy["recipe"]
assert "carrier" in lazy["files"]["data"]["absent"], lazy["files"]
c2 = meta("c2ref.b2nd")["recipe"]
assert c2["urlbase"] + c2["path"] == "https://cat2.example.org/@public/examples/ds-1d.b2nd", c2
ev = lazy["evaluation"]  # its operands are not there: not evaluated, saying why
assert {k: ev[k] for k in ("grammar", "operands", "evaluated")} == {
    "grammar": "elementwise", "operands": ["o0", "o1"], "evaluated": False}, ev
assert "(a.b2nd): no such container" in ev["error"], ev
assert "evaluation" not in meta("c2ref.b2nd")
bad = meta("hostile/not_elementwise.b2nd")
assert "'sum' is not one of NumPy's elementwise" in bad["evaluation"]["error"], bad["evaluation"]
legacy = meta("legacy_lazy.b2nd")["recipe"]
assert legacy == {"expression": "sin(a) + b", "UDF": None,
                  "operands": {"a": "a.b2nd", "b": "b.b2nd"}}, legacy
EOF

# Proxy caches: fetched chunks served, the others EIO.
for c in 0 2; do
  dd if="$R/proxy/data.bin" of="$TMP/chunk$c" bs=40 skip=$c count=1 status=none
  check "proxy chunk $c" cmp "$M/proxy.b2nd/chunks/$c" "$TMP/chunk$c"
  check "old proxy chunk $c" cmp "$M/proxy_old.b2nd/chunks/$c" "$TMP/chunk$c"
done
read_fails "proxy chunk 1 was never fetched" "$M/proxy.b2nd/chunks/1"
read_fails "proxy chunk 3 is stored but not marked fetched" "$M/proxy.b2nd/chunks/3"
read_fails "old proxy chunk 1 is uninitialised" "$M/proxy_old.b2nd/chunks/1"
read_fails "proxy data needs every chunk" "$M/proxy.b2nd/data"
check "a hyperslab of a fetched chunk" cmp "$M/proxy.b2nd/view/20:30" "$TMP/chunk2"
read_fails "a hyperslab that needs an unfetched chunk" "$M/proxy.b2nd/view/5:15"
check "proxy meta.json lists the present chunks" test \
  "$(json_field "$M/proxy.b2nd/meta.json" proxy.chunks_present)" = "0,2"
check "old proxy meta.json lists the present chunks" test \
  "$(json_field "$M/proxy_old.b2nd/meta.json" proxy.chunks_present)" = "0,2,3"
check "proxy-source shown redacted" test \
  "$(json_field "$M/proxy.b2nd/meta.json" metalayers.proxy-source.urlpath)" = \
  "@public/examples/ds-1d.b2nd,https://cat2.example.org/,(redacted)"
# The token is in the source files, and nowhere in what the mount shows.
check "the fixture holds the token" grep -q "$TOKEN" "$S/proxy.b2nd"
if grep -rl "$TOKEN" "$M" 2>/dev/null; then fail "the auth_token appears in the mount"; fi
for f in "$M/proxy.b2nd" "$M/proxy.b2nd/meta.json" "$M/proxy.b2nd/data"; do
  if getfattr -d -m - "$f" 2>/dev/null | grep -q "$TOKEN"; then
    fail "the auth_token appears in the xattrs of $f"
  fi
done
if grep -q "$TOKEN" "$M/.b2ndfs/stats" "$M.log"; then
  fail "the auth_token appears in the stats or the daemon's log"
fi

# Hostile variants.
H=$M/hostile
for d in bad_bitmap.b2nd bad_serializer.b2b truncated_tag.b2b; do
  check "$d: meta.json says what is wrong" "$PY" -c '
import json, sys
err = json.load(open(sys.argv[1]))["error"]
assert err and sys.argv[2] in err, err' "$H/$d/meta.json" \
    "$(case $d in bad_bitmap.b2nd) echo bitmap ;; bad_serializer.b2b) echo pickle ;; *) echo truncated ;; esac)"
done
read_fails "huge item count" "$H/huge_count.b2b/batches/0.msgpack"
read_fails "huge item count as JSON" "$H/huge_count.b2b/batches/0.json"
read_fails "truncated item as JSON" "$H/truncated_item.b2frame/items/0.json"
check "truncated item as stored" test "$(stat -c %s "$H/truncated_item.b2frame/items/0.msgpack")" = 4
check "a dictionary chunk c-blosc2 can read" test \
  "$(stat -c %s "$H/dict_items.b2frame/items/0.msgpack")" = 202
read_fails "a chunk c-blosc2 3.3.5 wrote unreadable" "$H/dict_items.b2frame/items/1.msgpack"
check "hostile reasons are logged" grep -q "declares a size larger" "$M.log"

unmount_fs "$M" || fail "unmount"
finish
