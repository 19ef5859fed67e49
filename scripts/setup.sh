#!/usr/bin/env bash
# Installs everything b2ndfs needs to build and test on Debian 12 (bookworm) or newer.
# Idempotent: a second run only checks. c-blosc2 comes from the system when one is
# installed (pkg-config / CMake config), else from Debian trixie's binary packages,
# unpacked into a project-local prefix (.deps/blosc2) without touching the system.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
BLOSC2_PREFIX="$DEPS/blosc2"
BLOSC2_SUITE="${B2NDFS_BLOSC2_SUITE:-trixie}"

log() { printf '[setup] %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
  build-essential cmake pkg-config ninja-build
  libfuse3-dev fuse3
  libmsgpack-cxx-dev
  libboost-filesystem-dev
  catch2
  liblz4-dev libzstd-dev zlib1g-dev
  python3-numpy python3-nibabel python3-vtk9 python3-gdal gdal-bin teem-apps
  squashfs-tools squashfuse
  systemd
  clang libclang-rt-14-dev
  util-linux
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  log "Debian packages present"
fi

# --- c-blosc2 -----------------------------------------------------------------
if pkg-config --exists 'blosc2 >= 2.10' 2>/dev/null; then
  log "system c-blosc2 $(pkg-config --modversion blosc2) found"
  exit 0
fi
if [ -f "$BLOSC2_PREFIX/usr/include/b2nd.h" ] && [ -f "$BLOSC2_PREFIX/.complete" ]; then
  log "project-local c-blosc2 present in $BLOSC2_PREFIX"
  exit 0
fi

# The archive URI the machine already uses (never hard-coded here).
archive_uri() {
  local uri=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    uri=$(awk '/^URIs:/ {for (i=2;i<=NF;i++) print $i}' /etc/apt/sources.list.d/*.sources |
      grep -E '/debian/?$' | head -n1 || true)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" {for (i=2;i<=NF;i++) if ($i ~ /^(https?|file|ftp):/) {print $i; break}}' \
      /etc/apt/sources.list | grep -E '/debian/?$' | head -n1 || true)
  fi
  printf '%s' "$uri"
}

URI="$(archive_uri)"
if [ -z "$URI" ]; then
  log "cannot find a Debian archive URI in /etc/apt; install libblosc2-dev (>= 2.10) yourself"
  exit 1
fi
log "fetching c-blosc2 from Debian $BLOSC2_SUITE via the configured archive"

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
apt-get "${APT_OPTS[@]}" update -qq
(cd "$APTDIR/debs" && rm -f ./*.deb && apt-get "${APT_OPTS[@]}" download libblosc2-dev libblosc2-4 >/dev/null)
rm -rf "$BLOSC2_PREFIX"
mkdir -p "$BLOSC2_PREFIX"
for deb in "$APTDIR"/debs/*.deb; do
  dpkg -x "$deb" "$BLOSC2_PREFIX"
done
# The -dev package's .so symlink and pkg-config file assume /usr; CMake finds the
# headers and library under the prefix directly (cmake/FindBlosc2.cmake).
touch "$BLOSC2_PREFIX/.complete"
log "c-blosc2 unpacked into $BLOSC2_PREFIX"
