#!/usr/bin/env bash
# Installs everything b2ndfs needs to build and test on Debian 12 (bookworm) or newer.
#   bash scripts/setup.sh           what building and every test need
#   bash scripts/setup.sh --build   only what building b2ndfs and the demo need
#   bash scripts/setup.sh --no-npm  all but the npm packages the tests run
#   bash scripts/setup.sh --npm     only those (after the rest; scripts/test.sh
#                                   installs them while it builds)
# B2NDFS_SETUP_FUZZ=0 leaves out clang and LLVM, which only the fuzz smoke run
# needs (scripts/test.sh sets it when that pass does not run here).
# Idempotent: a second run only checks. c-blosc2 (>= 3.3) comes from the system when
# one is installed (pkg-config / CMake config, as on Debian forky/sid), else from
# Debian forky's libblosc2-dev, unpacked into a project-local prefix
# (.deps/blosc2-3.3) without touching the system; only its static library is used
# (the shared one needs glibc 2.38), see cmake/FindBlosc2.cmake.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
BLOSC2_PREFIX="$DEPS/blosc2-3.3"
BLOSC2_SUITE="${B2NDFS_BLOSC2_SUITE:-forky}"
# 3.3: frame format 3 and chunks with variable-length blocks (blosc2_vlcompress_ctx).
BLOSC2_MIN=3.3

log() { printf '[setup] %s\n' "$*" >&2; }
# True if version $1 is at least $BLOSC2_MIN.
version_ok() { [ -n "$1" ] && [ "$(printf '%s\n' "$BLOSC2_MIN" "$1" | sort -V | head -n1)" = "$BLOSC2_MIN" ]; }

MODE=all
case "${1:-}" in
  "") ;;
  --build) MODE=build ;;
  --no-npm) MODE=no-npm ;;
  --npm) MODE=npm ;;
  -h | --help)
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    log "unknown argument '$1' (try --help)"
    exit 2
    ;;
esac

# What building b2ndfs (and running the demo) needs.
BUILD_PACKAGES=(
  build-essential cmake pkg-config ninja-build python3
  libfuse3-dev fuse3
  libmsgpack-cxx-dev
  libboost-filesystem-dev
  catch2
  # c-blosc2's codecs: its static library links against these.
  liblz4-dev libzstd-dev zlib1g-dev libzfp-dev
  # remote sources: libcurl and libcrypto (SigV4), linked privately to src/remote.
  libcurl4-openssl-dev libssl-dev
  # the demo reads arrays with numpy
  python3-numpy
  # the compiler cache every build of the scripts shares (scripts/lib/ccache.sh):
  # a second build, even of a fresh clone, compiles only what changed
  ccache
)
# What the tests add: real clients and servers, sanitizers, packaging.
TEST_PACKAGES=(
  python3-nibabel python3-vtk9 python3-gdal gdal-bin teem-apps python3-zarr
  python3-tifffile python3-xarray python3-dask libtiff-tools imagemagick netpbm
  squashfs-tools squashfuse
  systemd
  util-linux attr
  # ps and pkill (the tests' watchdog, fuse.s3's look at command lines)
  procps
  # docs.check renders the man pages as man(1) does.
  man-db groff-base
  # scripts/build_deb.sh and the package test (package.deb).
  debhelper dpkg-dev lintian fakeroot debootstrap
  # remote sources: nginx serves the HTTP tests; the S3 and Azure tests'
  # servers (s3rver and Azurite, from npm into .deps/npm below). Debian's npm
  # package is added below only when no npm is installed (a nodejs from
  # elsewhere brings its own and conflicts with it).
  nginx nodejs curl
  # fuse.browser: a headless browser draws what nginx serves from a mount.
  chromium
  # fuse.http_trust: a CA and a server certificate for nginx's TLS.
  openssl
)
# What the fuzz smoke run adds: libFuzzer needs clang; llvm-symbolizer names
# the lines in its reports.
FUZZ_PACKAGES=(clang libclang-rt-14-dev llvm-14)
APT_PACKAGES=("${BUILD_PACKAGES[@]}")
if [ "$MODE" = all ] || [ "$MODE" = no-npm ]; then
  APT_PACKAGES+=("${TEST_PACKAGES[@]}")
  if [ "${B2NDFS_SETUP_FUZZ:-1}" != 0 ]; then APT_PACKAGES+=("${FUZZ_PACKAGES[@]}"); fi
fi
[ "$MODE" != npm ] || APT_PACKAGES=()

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "$MODE" != build ] && ! command -v npm >/dev/null; then missing+=(npm); fi
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=()
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
      log "missing Debian packages: ${missing[*]}"
      log "installing them needs root, and sudo is not installed. Either run this script as root,"
      log "or install sudo (and allow this user to use it), or run as root:"
      log "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
      exit 1
    fi
    SUDO=(sudo)
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi

# --- npm packages the tests run ------------------------------------------------
# From npm's registry into a project-local prefix (never global), pinned, so a
# second run only checks:
#   s3rver             an S3-compatible server (fuse.s3 and the *.s3 variants)
#   azurite            Azure's blob emulator, which checks SharedKey and SAS (fuse.az, *.az)
#   zarrita, @zarrita/storage   a Zarr v3 reader run by node over data.zarr/ and ome.zarr/
#   ajv-cli            JSON Schema validation of OME-Zarr metadata (draft 2020-12)
#   @fideus-labs/ngff-zarr      an OME-Zarr reader (the multiscale metadata)
NPM_PREFIX="$DEPS/npm"
NPM_PINS=(s3rver@3.7.1 azurite@3.37.0 zarrita@0.7.5 @zarrita/storage@0.2.0
  ajv-cli@5.0.0 @fideus-labs/ngff-zarr@0.14.0)
npm_version() {
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$NPM_PREFIX/node_modules/$1/package.json" 2>/dev/null | head -n1
}
# The pins whose installed version differs (a name is all before the last @).
npm_missing() {
  local pin
  for pin in "${NPM_PINS[@]}"; do
    [ "$(npm_version "${pin%@*}")" = "${pin##*@}" ] || printf '%s\n' "$pin"
  done
}
# The installed tree is kept outside the clone, one copy per set of pins and
# node version (B2NDFS_NPM_CACHE: /var/cache/b2ndfs-npm as root, else
# ${XDG_CACHE_HOME:-~/.cache}/b2ndfs-npm; 0: none), and .deps/npm links to it:
# npm takes most of a minute to install these even from its own download
# cache, so a fresh clone (and check_minbase.sh's root, which binds the cache
# in at the same path) would pay that on every run. The copies are only read.
# shellcheck source=lib/kept_cache.sh
source "$ROOT/scripts/lib/kept_cache.sh"
npm_cache_dir() {
  local dir=${B2NDFS_NPM_CACHE:-$(kept_cache_dir npm)}
  [ "$dir" = 0 ] && return 1
  mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ] && echo "$dir"
}
npm_install_into() {
  mkdir -p "$1"
  npm install --prefix "$1" --no-audit --no-fund --loglevel=error "${NPM_PINS[@]}" >/dev/null
}
if [ "$MODE" = build ] || [ "$MODE" = no-npm ]; then
  :  # the demo runs no npm package
elif [ -z "$(npm_missing)" ]; then
  log "npm packages present in $NPM_PREFIX"
else
  if npm_cache=$(npm_cache_dir); then
    key=$(printf '%s\n' "${NPM_PINS[@]}" "$(node --version)" "$(uname -m)" | sha256sum | cut -c1-16)
    kept=$npm_cache/$key
    if [ -f "$kept/.complete" ]; then
      log "npm packages ${NPM_PINS[*]} from $kept"
    else
      log "installing ${NPM_PINS[*]} from npm into $kept (kept for later clones)"
      tmp=$(mktemp -d "$npm_cache/.install.XXXXXX")
      chmod 755 "$tmp" # (mktemp's 700) others read it too: nginx's workers serve zarrita
      npm_install_into "$tmp" || { rm -rf "$tmp"; exit 1; }
      touch "$tmp/.complete"
      # Another setup may have kept the same pins meanwhile: its copy stays.
      mv -T "$tmp" "$kept" 2>/dev/null || rm -rf "$tmp"
    fi
    rm -rf "$NPM_PREFIX"
    mkdir -p "$DEPS"
    ln -s "$kept" "$NPM_PREFIX"
  else
    log "installing ${NPM_PINS[*]} from npm into $NPM_PREFIX"
    rm -rf "$NPM_PREFIX"
    npm_install_into "$NPM_PREFIX"
  fi
  mapfile -t npm_wanted < <(npm_missing)
  [ "${#npm_wanted[@]}" -eq 0 ] || { log "did not install: ${npm_wanted[*]}"; exit 1; }
fi

[ "$MODE" != npm ] || exit 0

# --- c-blosc2 -----------------------------------------------------------------
if pkg-config --exists "blosc2 >= $BLOSC2_MIN" 2>/dev/null; then
  log "system c-blosc2 $(pkg-config --modversion blosc2) found (pkg-config)"
  exit 0
fi
# A CMake package without a pkg-config file (e.g. a source build in /usr/local).
for version_file in /usr/local/lib/cmake/Blosc2/Blosc2ConfigVersion.cmake \
  /usr/local/lib/*/cmake/Blosc2/Blosc2ConfigVersion.cmake \
  /usr/lib/*/cmake/Blosc2/Blosc2ConfigVersion.cmake /usr/lib/cmake/Blosc2/Blosc2ConfigVersion.cmake; do
  [ -f "$version_file" ] || continue
  v=$(sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)").*/\1/p' "$version_file" | head -n1)
  if version_ok "$v"; then
    log "system c-blosc2 $v found (CMake package in ${version_file%/*})"
    exit 0
  fi
done
if [ -f "$BLOSC2_PREFIX/.complete" ]; then
  log "project-local c-blosc2 $(cat "$BLOSC2_PREFIX/.complete") present in $BLOSC2_PREFIX"
  exit 0
fi

# shellcheck source=lib/archive_uri.sh
source "$ROOT/scripts/lib/archive_uri.sh"

URI="$(archive_uri)"
if [ -z "$URI" ]; then
  log "cannot find a Debian archive URI in /etc/apt; install libblosc2-dev (>= $BLOSC2_MIN) yourself"
  exit 1
fi
log "fetching c-blosc2 from Debian $BLOSC2_SUITE via the configured archive"

# A private apt configuration: its own sources list, package lists and cache, so the
# system's apt state is neither read for sources nor changed. Needs no root.
APTDIR="$DEPS/apt-$BLOSC2_SUITE"
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial" "$APTDIR/debs"
cat >"$APTDIR/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $URI $BLOSC2_SUITE main
SRC
APT_OPTS=(
  -o "Dir::Etc::SourceList=$APTDIR/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$APTDIR/lists"
  -o "Dir::Cache=$APTDIR/cache"
  -o "Dir::State::Status=/var/lib/dpkg/status"
  -o "APT::Get::List-Cleanup=0"
  -o "Debug::NoLocking=1"
)
# As root, apt downloads as the unprivileged user _apt; when _apt cannot write here
# (a checkout under /root, mode 700), apt would fall back to root with a warning, so
# say so up front instead.
if [ "$(id -u)" = 0 ]; then
  chown _apt "$APTDIR/debs" "$APTDIR/lists/partial" 2>/dev/null || true
  if ! runuser -u _apt -- test -w "$APTDIR/debs" 2>/dev/null ||
    ! runuser -u _apt -- test -w "$APTDIR/lists/partial" 2>/dev/null; then
    APT_OPTS+=(-o "APT::Sandbox::User=root")
  fi
fi
apt-get "${APT_OPTS[@]}" update -qq
# Only the -dev package: it holds the headers and libblosc2.a. The runtime package
# (libblosc2-N) holds just the shared library, which b2ndfs must not use here.
(cd "$APTDIR/debs" && rm -f ./*.deb && apt-get "${APT_OPTS[@]}" download libblosc2-dev >/dev/null)
rm -rf "$BLOSC2_PREFIX"
mkdir -p "$BLOSC2_PREFIX"
for deb in "$APTDIR"/debs/*.deb; do
  dpkg -x "$deb" "$BLOSC2_PREFIX"
done

header="$BLOSC2_PREFIX/usr/include/blosc2.h"
version=$(sed -n 's/^#define BLOSC2_VERSION_STRING *"\([^"]*\)".*/\1/p' "$header" 2>/dev/null || true)
if ! version_ok "$version" ||
  ! compgen -G "$BLOSC2_PREFIX/usr/lib/*/libblosc2.a" >/dev/null; then
  log "Debian $BLOSC2_SUITE's libblosc2-dev (c-blosc2 ${version:-?}) lacks c-blosc2 >= $BLOSC2_MIN or libblosc2.a"
  exit 1
fi
# The -dev package's .so symlink, pkg-config file and CMake package assume /usr and
# the shared library; cmake/FindBlosc2.cmake uses the headers and libblosc2.a only.
printf '%s\n' "$version" >"$BLOSC2_PREFIX/.complete"
log "c-blosc2 $version unpacked into $BLOSC2_PREFIX"
