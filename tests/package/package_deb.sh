#!/usr/bin/env bash
# package.deb: the Debian package installs and mounts on a minimal machine.
# Builds the .deb (scripts/build_deb.sh: dpkg-buildpackage as any Debian
# builder runs it, so dh_auto_test builds and passes the unit tests; lintian
# without errors), makes a minimal Debian root of this machine's release
# (debootstrap --variant=minbase, from the archive this machine's apt uses),
# installs the .deb there with apt (which must find every dependency the
# package declares), and inside that root: checks the installed files (man
# pages, systemd unit pointing at /usr/bin/b2ndfs, examples, copyright with
# c-blosc2's licence), runs `b2ndfs --version`, mounts with
# `mount -t fuse.b2ndfs` (mount.fuse3 from the fuse3 dependency), reads a
# container's data and compares it with c-blosc2's own bytes, checks that the
# daemon logs a broken container once to syslog with the tag b2ndfs (the
# root's /dev/log is a socket this test listens on), and unmounts. Then the
# README's main command (scripts/demo.sh) runs on that minimal root from a
# fresh copy of the sources.
# Skips (77) with a message when not root or when the archive is unreachable.
# B2NDFS_PREBUILT_DEB=FILE: that package, which scripts/build_deb.sh built
# (scripts/test.sh builds it once, in the background, while the other tests
# run), instead of building it here; its build log (FILE's directory,
# work/build.log) must show the same unit tests run, or that it was built with
# DEB_BUILD_OPTIONS=nocheck (scripts/test.sh's: its main pass runs them).
# Usage: package_deb.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
FIXTURE=$BUILD/tests/fixtures/b2nd_fixture
T0=$(date +%s)
log() { echo "[package.deb +$(($(date +%s) - T0))s] $*"; }
failures=0
fail() {
  echo "[package.deb] FAIL: $*" >&2
  failures=$((failures + 1))
}

if [[ $(id -u) != 0 ]]; then
  log "SKIP: needs root (debootstrap and chroot)"
  exit 77
fi
# shellcheck source=../../scripts/lib/minbase.sh
source "$SRC/scripts/lib/minbase.sh"
for tool in debootstrap dpkg-buildpackage lintian; do
  command -v "$tool" >/dev/null || { fail "$tool is missing (scripts/setup.sh installs it)"; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/b2ndfs-package.XXXXXX")
R=$TMP/root
LISTENER_PID=
cleanup() {
  [[ -n $LISTENER_PID ]] && kill "$LISTENER_PID" 2>/dev/null
  minbase_release "$R"
  if awk -v r="$TMP" 'index($5, r) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "[package.deb] leaving $TMP: something is still mounted below it" >&2
  else
    rm -rf "$TMP"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${B2NDFS_PREBUILT_DEB:-} ]]; then
  deb=$B2NDFS_PREBUILT_DEB
  [[ -f $deb ]] || { fail "B2NDFS_PREBUILT_DEB=$deb: no such package"; exit 1; }
  log "the package scripts/build_deb.sh built: $deb"
else
  log "building the package"
  deb=$(bash "$SRC/scripts/build_deb.sh" "$BUILD/deb" 2>"$TMP/build_deb.log" | tail -n1)
  if [[ ! -f $deb ]]; then
    cat "$TMP/build_deb.log" >&2
    fail "scripts/build_deb.sh made no package"
    exit 1
  fi
  log "built $(basename "$deb"); $(grep -o 'lintian: .*errors, [0-9]* warnings' "$TMP/build_deb.log")"
fi
# Built as every Debian builder builds it: dh_auto_test ran the unit tests.
# But for a prebuilt package built with nocheck (scripts/test.sh's, whose
# main pass ran the same unit tests; scripts/build_deb.sh's log says so).
build_log=$(dirname "$deb")/work/build.log
if grep -q 'dh_auto_test' "$build_log" && grep -qE '100% tests passed, 0 tests failed out of [1-9]' "$build_log"; then
  log "dh_auto_test: $(grep -E 'tests passed' "$build_log" | tail -n1)"
elif [[ -n ${B2NDFS_PREBUILT_DEB:-} ]] && head -n1 "$build_log" | grep -qE '^build_deb.sh: DEB_BUILD_OPTIONS=.*\bnocheck\b'; then
  log "dh_auto_test: not run (built with nocheck; the main pass ran the unit tests)"
else
  fail "the package build ran no unit tests in dh_auto_test (see $build_log)"
fi

log "debootstrap --variant=minbase of this machine's release"
minbase_make "$R" "$TMP/debootstrap.log" 2>"$TMP/minbase.err"
rc=$?
if ((rc == 77)); then
  log "SKIP: $(cat "$TMP/minbase.err")"
  exit 77
elif ((rc != 0)); then
  fail "cannot make a minimal root: $(cat "$TMP/minbase.err")"
  exit 1
fi
# The daemon's syslog goes to a /dev/log in the root that this test reads.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536) + b"\n")
' "$R/dev/log" "$TMP/syslog" &
LISTENER_PID=$!
in_root() { minbase_run "$R" "$@"; }

cp "$deb" "$R/tmp/"
log "apt-get install ./$(basename "$deb") in the minimal root"
if ! in_root sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb")" >"$TMP/apt.log" 2>&1; then
  tail -n 20 "$TMP/apt.log" >&2
  fail "the package does not install on a minimal root"
  exit 1
fi

for f in /usr/bin/b2ndfs /usr/bin/b2ndfs-inspect /usr/share/man/man1/b2ndfs.1.gz \
  /usr/share/man/man1/b2ndfs-inspect.1.gz /usr/lib/systemd/system/b2ndfs@.service \
  /usr/share/doc/b2ndfs/examples/mnt-arrays.mount /usr/share/doc/b2ndfs/examples/fstab.example \
  /usr/share/doc/b2ndfs/copyright /usr/share/doc/b2ndfs/README.Debian; do
  [[ -e $R$f ]] || fail "the package installs no $f"
done
grep -q '^ExecStart=/usr/bin/b2ndfs ' "$R/usr/lib/systemd/system/b2ndfs@.service" ||
  fail "b2ndfs@.service does not run /usr/bin/b2ndfs: $(grep ExecStart "$R/usr/lib/systemd/system/b2ndfs@.service")"
grep -q 'PRUNEFS="fuse.b2ndfs ' "$R/usr/share/doc/b2ndfs/README.Debian" ||
  fail "README.Debian does not say how to keep updatedb out"
grep -q 'Blosc Development Team' "$R/usr/share/doc/b2ndfs/copyright" ||
  fail "the copyright file does not carry c-blosc2's notice"
version=$(in_root b2ndfs --version 2>&1) || fail "b2ndfs --version fails in the root: $version"
grep -q '^c-blosc2 3\.' <<<"$version" || fail "b2ndfs --version names no c-blosc2 3.x: $version"
log "installed: $(tr '\n' ' ' <<<"$version")"

# A container written by c-blosc2, and c-blosc2's own bytes of it.
mkdir -p "$R/srv/arrays" "$R/mnt/arrays"
"$FIXTURE" write "$R/srv/arrays/cube.b2nd" --shape 40,30,20 --chunks 16,16,8 --blocks 8,4,4 --dtype '<f4' \
  >/dev/null || { fail "b2nd_fixture write failed"; exit 1; }
"$FIXTURE" slice "$R/srv/arrays/cube.b2nd" ":,:,:" "$TMP/want" || { fail "b2nd_fixture slice failed"; exit 1; }
head -c 4096 /dev/urandom >"$R/srv/arrays/broken.b2nd"
if in_root mount -t fuse.b2ndfs /srv/arrays /mnt/arrays -o cache_size=64M 2>"$TMP/mount.err"; then
  cmp -s "$R/mnt/arrays/cube.b2nd/data" "$TMP/want" || fail "data read through the packaged b2ndfs differs from c-blosc2's"
  in_root b2ndfs-inspect meta /srv/arrays/cube.b2nd | grep -q '"shape": *\[40, *30, *20\]' ||
    fail "b2ndfs-inspect meta gives no shape [40, 30, 20]"
  for _ in 1 2 3; do cat "$R/mnt/arrays/broken.b2nd/meta.json" >/dev/null; done
  grep -q '"error"' "$R/mnt/arrays/broken.b2nd/meta.json" || fail "broken.b2nd's meta.json holds no error"
  for _ in $(seq 50); do grep -q 'broken.b2nd' "$TMP/syslog" 2>/dev/null && break; sleep 0.1; done
  lines=$(grep -c 'broken.b2nd' "$TMP/syslog" 2>/dev/null)
  if ! grep 'broken.b2nd' "$TMP/syslog" 2>/dev/null | grep -q 'b2ndfs\[[0-9]*\]: '; then
    fail "the daemon did not log broken.b2nd to syslog as b2ndfs[PID]: $(head -c 600 "$TMP/syslog" 2>/dev/null)"
  elif [[ $lines != 1 ]]; then
    fail "broken.b2nd was logged $lines times, not once: $(grep broken.b2nd "$TMP/syslog")"
  else
    log "syslog: $(grep -m1 broken.b2nd "$TMP/syslog" | cut -c1-160)"
  fi
  in_root fusermount3 -u /mnt/arrays || fail "fusermount3 -u failed in the root"
else
  fail "mount -t fuse.b2ndfs fails in the minimal root: $(cat "$TMP/mount.err")"
fi

# The README's main command on the same minimal root, from a copy of the
# sources as a user gets them (no build trees, no .deps): it must install
# what it needs itself, build, mount its samples, show them and unmount.
# B2NDFS_MINBASE_DEMO=0 skips this part (several minutes: package installs
# and a build), as scripts/check_minbase.sh does: the demo ran on its root.
if [[ ${B2NDFS_MINBASE_DEMO:-1} == 1 ]]; then
  minbase_copy_sources "$SRC" "$R/root/b2ndfs"
  log "README's main command (bash scripts/demo.sh) in the minimal root"
  if minbase_demo "$R" "$TMP/demo.log" 2>"$TMP/demo.err"; then
    log "the demo ran in the minimal root ($(grep -c '^\$ \|\[1m\$' "$TMP/demo.log") steps shown)"
  else
    cat "$TMP/demo.err" >&2
    fail "the demo on a minimal root (above)"
  fi
fi

if ((failures > 0)); then
  log "$failures failure(s)"
  exit 1
fi
log "passed"
