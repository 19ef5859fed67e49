#!/usr/bin/env bash
# The main job, end to end: install, build, write sample containers with
# c-blosc2, mount them with b2ndfs and show what a person can do with them.
#   bash scripts/demo.sh          # mounts, shows, unmounts
#   bash scripts/demo.sh --keep   # leaves the mount in place to explore
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${B2NDFS_BUILD_DIR:-$ROOT/build}"
KEEP=0
case "${1:-}" in
  "") ;;
  --keep) KEEP=1 ;;
  -h | --help)
    sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "demo.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

# Only what the demo runs is built (the tests build the rest), and the man
# pages, so that `man -l build/docs/b2ndfs.1` works after it.
B2NDFS_BUILD_TARGETS="b2ndfs b2ndfs-make-samples b2ndfs-inspect man_pages" bash "$ROOT/scripts/build.sh"
WORK="${B2NDFS_DEMO_DIR:-$ROOT/build/demo}"
SRC="$WORK/arrays"
MNT="$WORK/mnt"
mkdir -p "$SRC" "$MNT"
if mountpoint -q "$MNT"; then fusermount3 -u "$MNT" || fusermount3 -uz "$MNT"; fi

cleanup() {
  if [ "$KEEP" = 0 ] && mountpoint -q "$MNT"; then
    fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || true
  fi
}
trap cleanup EXIT

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step "b2ndfs-make-samples $SRC"
"$BUILD/src/tools/b2ndfs-make-samples" "$SRC"

step "b2ndfs $SRC $MNT -o cache_size=256M"
"$BUILD/src/app/b2ndfs" "$SRC" "$MNT" -o cache_size=256M

run() { step "$*"; bash -c "$*"; }
cd "$MNT"
run "ls -l"
run "ls -l climate/temperature.b2nd"
run "head -n 25 climate/temperature.b2nd/meta.json"
run "ls climate/temperature.b2nd/slices/0 | head -n 3; ls climate/temperature.b2nd/slices/0 | wc -l"
run "ls -l climate/temperature.b2nd/chunks | head -n 4"
run "dd if=climate/temperature.b2nd/slices/0/45 bs=1M status=none | od -A d -t f4 -N 32"
run "dd if=climate/temperature.b2nd/data bs=4 skip=1000 count=4 status=none | od -A d -t f4"
run "/usr/bin/python3 -c \"import numpy as np; a = np.load('climate/temperature.b2nd/data.npy', mmap_mode='r'); print(a.shape, a.dtype); print('mean of day 45:', float(a[45].mean())); print('time series at (90, 180):', a[:5, 90, 180])\""
run "/usr/bin/python3 -c \"import numpy as np; s = np.fromfile('climate/temperature.b2nd/slices/2/180', dtype='<f4').reshape(-1, 180); print('lon=180 slab', s.shape, 'min %.2f max %.2f' % (s.min(), s.max()))\""
run "cmp <(cat images/mandelbrot.b2nd/slices/0/384) <(dd if=images/mandelbrot.b2nd/data bs=1024 skip=384 count=1 status=none) && echo 'slice 384 == row 384 of data'"
run "cat README.txt"
run "grep -A6 '\"cache\"' .b2ndfs/stats   # runtime statistics (hidden, read-only)"
cd /
if [ "$KEEP" = 1 ]; then
  printf '\nMounted at %s (unmount with: fusermount3 -u %s)\n' "$MNT" "$MNT"
else
  step "fusermount3 -u $MNT"
fi
cat <<EOF

What next:
  binaries      $BUILD/src/app/b2ndfs, $BUILD/src/tools/b2ndfs-inspect
  install       bash scripts/build_deb.sh && apt install ./build-deb/b2ndfs_*.deb
                (or sudo cmake --install $BUILD: /usr/local/bin/b2ndfs, where mount.fuse3
                finds it; then: mount -t fuse.b2ndfs SOURCE MOUNTPOINT, fstab, systemd)
  docs          man -l $BUILD/docs/b2ndfs.1, man -l $BUILD/docs/b2ndfs-inspect.1
                (man b2ndfs once installed), README.md
  explore       bash scripts/demo.sh --keep   (leaves the sample mount in place)
  help          $BUILD/src/app/b2ndfs --help
EOF
