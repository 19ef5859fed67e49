#!/usr/bin/env bash
# package.systemd_unit: the shipped unit keeps its sandbox, and the examples
# agree with each other (README.md, "Running with least privilege").
# - `systemd-analyze security --offline=yes` rates b2ndfs@.service at most
#   5.0, alone and with each of its drop-ins (b2ndfs-remote.conf,
#   b2ndfs-user.conf) and both, as systemd merges them (a drop-in is read
#   after the unit, so appending it is the same);
# - `systemd-analyze verify` finds no unknown or misspelt directive in any of
#   them (it only warns about those, so any such line fails here);
# - the unit uses none of the settings that would give it a mount namespace
#   of its own, where its FUSE mount would be seen by no one else;
# - fstab.example, mnt-arrays.mount (its Options= and the fstab line in its
#   comment) and the man page's fstab line give the same options.
# Skips (77) only where systemd-analyze is missing.
# Usage: systemd_unit.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$(cd "$1" && pwd)
BUILD=$(cd "$2" && pwd)
UNITS=$SRC/systemd
failures=0
fail() {
  echo "[package.systemd_unit] FAIL: $*" >&2
  failures=$((failures + 1))
}
log() { echo "[package.systemd_unit] $*"; }

if ! command -v systemd-analyze >/dev/null; then
  log "SKIP: systemd-analyze is missing (the systemd package)"
  exit 77
fi
T=$(mktemp -d /tmp/b2ndfs-unit.XXXXXX)
trap 'rm -rf "$T"' EXIT

# verify checks that ExecStart= can be run: the built binary stands in.
B2NDFS=$BUILD/src/app/b2ndfs
[[ -x $B2NDFS ]] || B2NDFS=/bin/true
for variant in "" remote user "remote user"; do
  name=${variant// /+}
  unit=$T/b2ndfs@mnt-arrays.service
  sed "s#/usr/local/bin/b2ndfs#$B2NDFS#" "$UNITS/b2ndfs@.service" >"$unit"
  for dropin in $variant; do
    [[ -f $UNITS/b2ndfs-$dropin.conf ]] || { fail "systemd/b2ndfs-$dropin.conf is missing"; continue; }
    cat "$UNITS/b2ndfs-$dropin.conf" >>"$unit"
  done
  out=$(systemd-analyze security --offline=yes --threshold=50 "$unit" 2>&1)
  rc=$?
  level=$(grep -o 'Overall exposure level.*' <<<"$out")
  log "unit${name:++$name}: ${level:-no rating}"
  [[ -n $level ]] || fail "unit${name:++$name}: systemd-analyze security gave no rating: $out"
  ((rc == 0)) || fail "unit${name:++$name}: exposure above 5.0 ($level)"
  out=$(systemd-analyze verify --man=no "$unit" 2>&1)
  rc=$?
  bad=$(grep -iE 'unknown|ignoring|invalid|failed|not executable' <<<"$out")
  if ((rc != 0)) || [[ -n $bad ]]; then
    fail "unit${name:++$name}: systemd-analyze verify: $out"
  fi
done

# A mount namespace of the service's own would hide its mount from the host.
for setting in ProtectSystem ProtectHome PrivateTmp PrivateDevices ReadOnlyPaths ReadWritePaths \
  InaccessiblePaths ProtectKernelTunables ProtectKernelModules ProtectKernelLogs \
  ProtectControlGroups ProtectProc ProcSubset BindPaths BindReadOnlyPaths TemporaryFileSystem \
  RootDirectory PrivateUsers PrivateIPC; do
  for f in "$UNITS/b2ndfs@.service" "$UNITS"/b2ndfs-*.conf; do
    grep -qE "^$setting=" "$f" && fail "${f##*/} sets $setting= (a mount namespace of its own)"
  done
done
grep -qE '^PrivateMounts=(no|false|0)$' "$UNITS/b2ndfs@.service" ||
  fail "b2ndfs@.service must say PrivateMounts=no (newer systemd gives PrivateNetwork= a mount namespace)"

# The fstab examples agree.
fstab=$(awk '!/^#/ && NF == 6 { print $4 }' "$UNITS/fstab.example")
mount_unit=$(sed -n 's/^Options=//p' "$UNITS/mnt-arrays.mount")
comment=$(awk '/^#   \/srv\/arrays/ { print $5 }' "$UNITS/mnt-arrays.mount")
man=$(awk '/^\/srv\/arrays  \/mnt\/arrays  fuse.b2ndfs/ { print $4; exit }' "$SRC/docs/man/b2ndfs.1.md")
[[ -n $fstab ]] || fail "no fstab line in fstab.example"
for other in "mnt-arrays.mount Options=:$mount_unit" "mnt-arrays.mount's fstab line:$comment" \
  "b2ndfs.1.md's fstab line:$man"; do
  [[ ${other#*:} == "$fstab" ]] || fail "${other%%:*} is '${other#*:}', fstab.example says '$fstab'"
done

((failures == 0)) || exit 1
log "ok"
