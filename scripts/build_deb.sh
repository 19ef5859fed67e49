#!/usr/bin/env bash
# Builds the Debian package: b2ndfs_VERSION_ARCH.deb in OUTDIR (default
# build-deb/), from a copy of this tree (dpkg-buildpackage writes next to the
# source it builds, so the checkout stays clean), then runs lintian on it and
# fails on lintian errors.
#   bash scripts/build_deb.sh [OUTDIR]
# Needs what scripts/setup.sh installs (debhelper, lintian, and c-blosc2 in
# .deps when the system has none). Compiles go through ccache when it is
# installed (scripts/lib/ccache.sh): CMake takes CMAKE_<LANG>_COMPILER_LAUNCHER
# from the environment, and debian/rules stays as any builder runs it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in -h | --help)
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit 0
  ;;
esac
OUT="$(mkdir -p "${1:-$ROOT/build-deb}" && cd "${1:-$ROOT/build-deb}" && pwd)"
log() { printf '[build_deb] %s\n' "$*" >&2; }

bash "$ROOT/scripts/setup.sh"
version=$(sed -n '1s/^b2ndfs (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog")
project_version=$(sed -n 's/^project(b2ndfs VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ "$version" = "$project_version" ] || {
  log "debian/changelog says $version but CMakeLists.txt says $project_version"
  exit 1
}

WORK="$OUT/work"
SRC="$WORK/b2ndfs-$version"
rm -rf "$WORK"
mkdir -p "$SRC"
# The sources only: no build trees, no VCS data.
tar -C "$ROOT" --exclude='./build*' --exclude='./.git' --exclude='./.deps' -cf - . | tar -C "$SRC" -xf -
[ -d "$ROOT/.deps" ] && ln -s "$ROOT/.deps" "$SRC/.deps"

# shellcheck source=lib/ccache.sh
source "$ROOT/scripts/lib/ccache.sh"
ccache_setup "$ROOT"
if ((${#CCACHE_LAUNCHER[@]} > 0)); then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
log "dpkg-buildpackage in $SRC ($CCACHE_STATE)"
# As any Debian builder runs it: dh_auto_test builds and runs the unit tests
# (debian/rules). noddebs: no b2ndfs-dbgsym package (20 MB of debug info,
# xz-compressed; it was never copied out of WORK). DEB_BUILD_OPTIONS=nocheck
# in the environment skips the unit tests (scripts/test.sh does: its main
# pass runs them); the log's first line says the options.
# Nor debug information (dpkg-buildflags' -g, stripped out here): noddebs
# would throw it away, and GCC spends a third of its time on it.
deb_options="parallel=${B2NDFS_JOBS:-2} noddebs ${DEB_BUILD_OPTIONS:-}"
echo "build_deb.sh: DEB_BUILD_OPTIONS=${deb_options% }" >"$WORK/build.log"
(cd "$SRC" && DEB_BUILD_OPTIONS="$deb_options" \
  DEB_CFLAGS_STRIP="-g ${DEB_CFLAGS_STRIP:-}" DEB_CXXFLAGS_STRIP="-g ${DEB_CXXFLAGS_STRIP:-}" \
  dpkg-buildpackage -us -uc -b >>"$WORK/build.log" 2>&1) || {
  tail -n 40 "$WORK/build.log" >&2
  log "dpkg-buildpackage failed; the whole log: $WORK/build.log"
  exit 1
}
deb=$(ls "$WORK"/b2ndfs_"$version"_*.deb)
cp "$deb" "$OUT/"
deb="$OUT/$(basename "$deb")"
log "built $deb"

# lintian as root warns and skips some checks; it runs as nobody when it can,
# on a copy of the package in a directory of its own and from there: the tree
# may be where nobody cannot go (under /root, mode 0700, on a fresh machine),
# and lintian fails at start in a working directory it cannot enter. Its
# temporary files go there too (it leaves mldbm-elf-* files in /tmp).
lint_dir=.
lint_deb=$deb
as_user=()
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null; then
  lint_dir=$(mktemp -d /tmp/b2ndfs-lintian.XXXXXX)
  trap 'rm -rf "$lint_dir"' EXIT
  chmod 755 "$lint_dir"
  lint_deb="$lint_dir/$(basename "$deb")"
  cp "$deb" "$lint_deb"
  chmod a+r "$lint_deb"
  install -d -o nobody -m 700 "$lint_dir/tmp"
  as_user=(runuser -u nobody -- env TMPDIR="$lint_dir/tmp")
fi
if ! (cd "$lint_dir" && "${as_user[@]}" lintian --fail-on error "$lint_deb") >"$OUT/lintian.txt" 2>&1; then
  cat "$OUT/lintian.txt" >&2
  log "lintian reports errors"
  exit 1
fi
log "lintian: $(grep -c '^E:' "$OUT/lintian.txt" || true) errors, $(grep -c '^W:' "$OUT/lintian.txt" || true) warnings (see $OUT/lintian.txt)"
echo "$deb"
