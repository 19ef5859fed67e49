#!/usr/bin/env bash
# fuse.lazy: saved lazy expressions served evaluated (README.md,
# "Variable-length data, carriers and caches"), against what b2nd_fixture
# vlen wrote under lazy/ (tests/fixtures/make_lazy.cc):
#  * each evaluated carrier's data.npy, slices/ and view/ are byte-identical
#    to NumPy's evaluation of the same expression on the operands' data.npy
#    (float32, int32 with wrap-around, bool, float64 promotion, a carrier
#    over a carrier, the legacy LazyArray form);
#  * meta.json's "evaluation" says evaluated, with the operands' paths;
#  * an operand replaced: the carrier re-evaluates (a new version), an
#    operand removed: meta.json says it is missing and data is gone;
#  * hostile recipes (an operand outside the mount or absolute, missing, a
#    cycle of carriers, another shape, a dtype NumPy would not give, sin, **,
#    chained comparisons, a constant that does not fit, an operand that is
#    not an array): meta.json's "evaluation" says why, no data files.
# Skips (77) only when /dev/fuse is unusable.
# Usage: fuse_lazy.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init lazy "$1"
require_fuse

S=$TMP/src
"$FIXTURE" vlen "$S" "$TMP/ref" >/dev/null || {
  fail "b2nd_fixture vlen"
  exit 1
}
M=$TMP/mnt
mount_fs "$S" "$M" -o cache_size=16M || exit 1

check "evaluated carriers equal NumPy's evaluation" "$PY" - "$M/lazy" <<'PYEOF'
import io, json, os, sys
import numpy as np
m = sys.argv[1]
def load(name):
    return np.load(os.path.join(m, name + ".b2nd", "data.npy"))
x, y, i, j = load("x"), load("y"), load("i"), load("j")
expected = {
    "sum": (x + y) * 2,
    "gt": x > y,
    "where": np.where(i > 0, i, j),
    "wrap": i * 10000000 + j,
    "mixed": i / j + abs(x) - np.minimum(x, 1.5),
    "sub/nested": ((x + y) * 2) - x + np.sqrt(abs(x)),
    "legacy": np.maximum(x, y) - -y,
}
def npy(a):
    b = io.BytesIO()
    np.save(b, a)
    v = b.getvalue()
    # b2ndfs pads a non-empty array's .npy header to a page of its own
    # (README.md, "Errors"); the rest is np.save's.
    n = 10 + int.from_bytes(v[8:10], "little")
    if a.size and v[6] == 1 and n <= 4096:
        v = v[:8] + (4086).to_bytes(2, "little") + v[10:n - 1] + b" " * (4096 - n) + b"\n" + v[n:]
    return v
for name, want in expected.items():
    d = os.path.join(m, name + ".b2nd")
    with open(os.path.join(d, "data.npy"), "rb") as f:
        assert f.read() == npy(want), name
    with open(os.path.join(d, "data"), "rb") as f:
        assert f.read() == want.tobytes(), name + "/data"
    # slices along axis 0 and a view of a box crossing blocks and chunks
    for k in (0, 7, 19):
        with open(os.path.join(d, "slices", "0", "%02d" % k), "rb") as f:
            assert f.read() == want[k].tobytes(), (name, k)
        with open(os.path.join(d, "slices", "1", "%02d" % k), "rb") as f:
            assert f.read() == np.ascontiguousarray(want[:, k]).tobytes(), (name, k)
    got = np.load(os.path.join(d, "view", "3:27,5:19.npy"))
    assert got.tobytes() == np.ascontiguousarray(want[3:27, 5:19]).tobytes(), name + " view"
    ev = json.load(open(os.path.join(d, "meta.json")))["evaluation"]
    assert ev["evaluated"] is True, ev
got = np.load(os.path.join(m, "hostile", "deep2.b2nd", "data.npy"))
assert got.tobytes() == (x + 1 + 1 + 1 + 1).tobytes(), "4 carriers deep"
ev = json.load(open(os.path.join(m, "sub/nested.b2nd", "meta.json")))["evaluation"]
assert ev["paths"] == {"s": "lazy/sum.b2nd", "x": "lazy/x.b2nd"}, ev
PYEOF

# Hostile recipes: the reason, and meta.json alone.
for c in outside:"leads outside the mount" absolute:"absolute paths are not followed" \
  missing:"no such container" cycle_a:"a cycle of carriers" cycle_b:"a cycle of carriers" \
  self:"a cycle of carriers" shape:"does not broadcast" dtype:"NumPy computes the expression as <f4" \
  sin:"'sin' is not computed" power:"'**' is not computed" chained:"chained comparisons" \
  overflow:"does not fit <i4" notarray:"is not an array" plainfile:"not a container" \
  deep1:"carriers nest deeper than 4"; do
  name=${c%%:*}
  why=${c#*:}
  check "hostile/$name: meta.json says why" "$PY" -c '
import json, sys
ev = json.load(open(sys.argv[1]))["evaluation"]
assert ev["evaluated"] is False and sys.argv[2] in ev["error"], ev' \
    "$M/lazy/hostile/$name.b2nd/meta.json" "$why"
  check "hostile/$name: no data files" test "$(ls "$M/lazy/hostile/$name.b2nd")" = meta.json
done

# A carrier that is not evaluated keeps its version while its operands stay
# (its inode numbers do not change from one use to the next).
for name in plainfile missing cycle_a; do
  first=$(stat -c %i "$M/lazy/hostile/$name.b2nd/meta.json")
  check "hostile/$name keeps its version" test \
    "$(stat -c %i "$M/lazy/hostile/$name.b2nd/meta.json")" = "$first"
done

# An operand replaced: the carrier is another version, evaluated afresh.
cp "$S/lazy/y.b2nd" "$S/lazy/x.tmp" && mv "$S/lazy/x.tmp" "$S/lazy/x.b2nd"
check "an operand replaced: the carrier re-evaluates" "$PY" - "$M/lazy" <<'PYEOF'
import os, sys
import numpy as np
m = sys.argv[1]
y = np.load(os.path.join(m, "y.b2nd", "data.npy"))
got = np.load(os.path.join(m, "sum.b2nd", "data.npy"))
assert got.tobytes() == ((y + y) * 2).tobytes()
got = np.load(os.path.join(m, "sub", "nested.b2nd", "data.npy"))
assert got.tobytes() == (((y + y) * 2) - y + np.sqrt(abs(y))).tobytes()
PYEOF
rm "$S/lazy/j.b2nd"
check "an operand removed: meta.json says so, no data" "$PY" -c '
import json, os, sys
d = sys.argv[1]
ev = json.load(open(os.path.join(d, "meta.json")))["evaluation"]
assert "(j.b2nd): no such container" in ev["error"], ev
assert os.listdir(d) == ["meta.json"], os.listdir(d)' "$M/lazy/where.b2nd"

unmount_fs "$M" || fail "unmount"
finish
