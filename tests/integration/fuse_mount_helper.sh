#!/usr/bin/env bash
# fuse.mount_helper: b2ndfs as mount(8), fstab and systemd start it.
# Installs the build into a temp prefix; `mount -t fuse.b2ndfs` (through
# mount.fuse3, which finds b2ndfs in PATH) and `mount -T FSTAB` work and
# report option errors, also for http:// and s3:// sources in fstab (a real
# nginx and s3rver); systemd/mnt-arrays.mount and systemd/b2ndfs@.service
# pass `systemd-analyze verify --man=no` (minimal machines have no man;
# the man page a unit names is not what is being checked), and the commands they run work;
# b2ndfs@.service's ExecStart and ExecStopPost run under the unit's own sandbox
# (unit_sandbox.py applies its capabilities, no_new_privs, namespaces,
# system call filter, address families and W^X as systemd would); an fstab
# line with setuid=USER,drop_privileges runs b2ndfs as USER without
# capabilities on /dev/fd/N.
#
# mount(8) runs its helpers without the caller's PATH (util-linux drops it;
# /bin/sh then searches its default path, /usr/local/bin first), so PATH=...
# cannot point mount at the prefix. Instead the test runs in a private mount
# namespace (unshare -m) where the prefix's bin/ is bind-mounted over
# /usr/local/bin: mount(8) then finds b2ndfs exactly as after a real
# `cmake --install`, and nothing outside this test sees it. mount.fuse3 is
# also run directly with PATH=PREFIX/bin:$PATH.
# Usage: fuse_mount_helper.sh BUILD_DIR
# (unshare makes / private there, which needs / to be a mount point: a chroot
# into a plain directory is not; scripts/lib/minbase.sh binds its root.)
if [[ ${B2NDFS_ITEST_IN_NS:-} != 1 ]]; then
  if ns_err=$(unshare -m --propagation private true 2>&1); then
    B2NDFS_ITEST_IN_NS=1 exec unshare -m --propagation private bash "${BASH_SOURCE[0]}" "$@"
  fi
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init mount_helper "$1"
SYSTEMD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../systemd" && pwd)
command -v systemd-analyze >/dev/null || { fail "systemd-analyze is missing (scripts/setup.sh installs it)"; finish; }
command -v mount.fuse3 >/dev/null || [[ -x /sbin/mount.fuse3 ]] || { fail "mount.fuse3 is missing"; finish; }
require_fuse

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
M=$TMP/mnt
mkdir -p "$M"
ref_slice "$(ref_of "$R" ndim/3d_f4.b2nd)" ":,:,:" "$TMP/want"

PREFIX=$TMP/prefix
if ! cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1; then
  fail "cmake --install failed: $(tail -5 "$TMP/install.log")"
  finish
fi
[[ -x $PREFIX/bin/b2ndfs ]] || { fail "cmake --install put no bin/b2ndfs into the prefix"; finish; }
[[ -x $PREFIX/bin/b2ndfs-inspect ]] || fail "cmake --install put no bin/b2ndfs-inspect into the prefix"
export PATH=$PREFIX/bin:$PATH
B2NDFS_INSTALLED=$PREFIX/bin/b2ndfs

# The installed binary runs without the source tree.
check "installed b2ndfs --help" "$B2NDFS_INSTALLED" --help >/dev/null

# after_mount DESCRIPTION: the mount at $M serves the right bytes, shows its
# type, then unmounts with umount(8) and its daemon ends.
after_mount() {
  local what=$1 pid
  log "mounted: $what"
  ITEST_MOUNTS+=("$M")
  if ! is_mounted "$M"; then
    fail "$what: nothing mounted at $M"
    return
  fi
  pid=$(daemon_pid "$M") && ITEST_PIDS+=("$pid")
  [[ $(findmnt -no FSTYPE "$M") == fuse.b2ndfs ]] || fail "$what: type $(findmnt -no FSTYPE "$M"), expected fuse.b2ndfs"
  check "$what: read data" cmp "$M/ndim/3d_f4.b2nd/data" "$TMP/want"
  [[ $(findmnt -no OPTIONS "$M") == ro,* ]] || fail "$what: not read-only: $(findmnt -no OPTIONS "$M")"
  check "$what: umount" umount "$M"
  if [[ -n $pid ]]; then
    threads=$(exits_within 20 "$pid") || fail "$what: b2ndfs still runs 20 s after umount; its threads: $threads"
  fi
}

# mount.fuse3 finds b2ndfs in PATH.
if PATH=$PREFIX/bin:$PATH mount.fuse3 "$S" "$M" -t fuse.b2ndfs -o cache_size=64M,nofail 2>"$TMP/mount.err"; then
  after_mount "PATH=PREFIX/bin:\$PATH mount.fuse3 -t fuse.b2ndfs"
else
  fail "mount.fuse3 -t fuse.b2ndfs failed: $(cat "$TMP/mount.err")"
fi

if [[ ${B2NDFS_ITEST_IN_NS:-} == 1 ]] && mount --bind "$PREFIX/bin" /usr/local/bin; then
  log "private mount namespace: $PREFIX/bin is /usr/local/bin"
else
  fail "no private mount namespace (unshare -m: ${ns_err:-the bind mount failed}): cannot show the prefix to mount(8) as /usr/local/bin"
  finish
fi

# mount -t fuse.b2ndfs, through mount.fuse3.
if mount -t fuse.b2ndfs "$S" "$M" -o cache_size=64M,nofail 2>"$TMP/mount.err"; then
  after_mount "mount -t fuse.b2ndfs"
else
  fail "mount -t fuse.b2ndfs failed: $(cat "$TMP/mount.err")"
fi
# Option errors reach mount(8) as a failure (before b2ndfs daemonizes).
if mount -t fuse.b2ndfs "$S" "$M" -o cache_size=abc 2>"$TMP/mount.err"; then
  ITEST_MOUNTS+=("$M")
  fail "mount -t fuse.b2ndfs -o cache_size=abc succeeded"
  unmount_fs "$M"
else
  grep -q 'cache_size' "$TMP/mount.err" || fail "mount -o cache_size=abc: the error does not name the option: $(cat "$TMP/mount.err")"
fi
[[ -z $(unmount_strays) ]] || fail "mount -o cache_size=abc left a mount behind"

# An fstab line (the one README.md shows), via mount -T.
printf '%s  %s  fuse.b2ndfs  ro,allow_other,cache_size=64M,nofail,_netdev  0  0\n' "$S" "$M" >"$TMP/fstab"
if mount -T "$TMP/fstab" "$M" 2>"$TMP/mount.err"; then
  after_mount "mount -T fstab"
else
  fail "mount with an fstab line failed: $(cat "$TMP/mount.err")"
fi

# Least privilege in fstab (README.md, "Running with least privilege"):
# drop_privileges has mount.fuse3 mount /dev/fuse itself and start b2ndfs on
# the descriptor (/dev/fd/N) without any capability, under no_new_privs, and
# setuid= as a user of its own (nobody stands for it here).
printf '%s  %s  fuse.b2ndfs  ro,allow_other,default_permissions,cache_size=64M,nofail,setuid=nobody,drop_privileges  0  0\n' \
  "$S" "$M" >"$TMP/fstab.dp"
if mount -T "$TMP/fstab.dp" "$M" 2>"$TMP/mount.err"; then
  dp_pid=""
  for p in $(pgrep -x b2ndfs); do
    [[ $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) == "b2ndfs $S /dev/fd/"* ]] && dp_pid=$p
  done
  if [[ -n $dp_pid ]]; then
    ITEST_PIDS+=("$dp_pid")
    check "drop_privileges: the daemon holds no capability" \
      grep -q "^CapEff:[[:space:]]*0*$" "/proc/$dp_pid/status"
    check "drop_privileges: under no_new_privs" grep -q "^NoNewPrivs:[[:space:]]*1$" "/proc/$dp_pid/status"
    check "setuid=nobody: the daemon runs as nobody" \
      grep -qE "^Uid:[[:space:]]+$(id -u nobody)[[:space:]]" "/proc/$dp_pid/status"
  else
    fail "drop_privileges: no b2ndfs serving /dev/fd/N: $(pgrep -a b2ndfs)"
  fi
  after_mount "mount -T fstab, drop_privileges"
  [[ -z $dp_pid ]] || exits_within 20 "$dp_pid" >/dev/null ||
    fail "drop_privileges: b2ndfs still runs 20 s after umount"
else
  fail "mount with drop_privileges failed: $(cat "$TMP/mount.err")"
fi

# Remote sources in fstab (README's lines): an http URL, and an s3:// bucket
# whose keys are in a credentials= file, both with _netdev,nofail.
# (Without nginx or s3rver, which fuse.http and fuse.s3 skip on, this part
# is left out, not the whole test.)
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
if nginx_binary >/dev/null && s3rver_binary >/dev/null; then
  nginx_start fx="$S" || exit 1
  s3rver_start fixtures || exit 1
  trap 'ITEST_RC=$?; nginx_stop; s3rver_stop; (exit $ITEST_RC); itest_cleanup' EXIT
  s3_put fixtures "$S" || exit 1
  printf '[default]\naws_access_key_id=S3RVER\naws_secret_access_key=S3RVER\n' >"$TMP/s3.keys"
  chmod 600 "$TMP/s3.keys"
  printf '%s/fx/  %s  fuse.b2ndfs  _netdev,nofail,cache_size=64M  0  0\n' "$NGINX_URL" "$M" >"$TMP/fstab.http"
  printf 's3://fixtures  %s  fuse.b2ndfs  _netdev,nofail,endpoint=%s,credentials=%s  0  0\n' \
    "$M" "$S3_URL" "$TMP/s3.keys" >"$TMP/fstab.s3"
  for kind in http s3; do
    if env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE \
      AWS_SHARED_CREDENTIALS_FILE="$TMP/none" AWS_CONFIG_FILE="$TMP/none" \
      mount -T "$TMP/fstab.$kind" "$M" 2>"$TMP/mount.err"; then
      after_mount "mount -T fstab, $kind source"
    else
      fail "mount with an fstab line of a $kind source failed: $(cat "$TMP/mount.err")"
    fi
  done
else
  log "SKIP: remote sources in fstab (no nginx or s3rver)"
fi

# --- systemd units -------------------------------------------------------------------
U=$TMP/units
mkdir -p "$U" "$TMP/etc"
cp "$SYSTEMD_DIR/mnt-arrays.mount" "$SYSTEMD_DIR/b2ndfs@.service" "$U/"
sed -i "s|/usr/local/bin/b2ndfs|$B2NDFS_INSTALLED|g; s|/etc/b2ndfs/|$TMP/etc/|g" "$U/b2ndfs@.service"
grep -q "$B2NDFS_INSTALLED" "$U/b2ndfs@.service" || fail "b2ndfs@.service does not run /usr/local/bin/b2ndfs"
printf 'SOURCE=%s\nOPTIONS=allow_other,cache_size=64M\n' "$S" >"$TMP/etc/mnt-arrays.conf"
cp "$U/b2ndfs@.service" "$U/b2ndfs@mnt-arrays.service"
for unit in mnt-arrays.mount b2ndfs@mnt-arrays.service b2ndfs@.service; do
  if ! out=$(cd "$U" && systemd-analyze verify --man=no "./$unit" 2>&1); then
    fail "systemd-analyze verify $unit: $out"
  elif [[ -n $out ]]; then
    fail "systemd-analyze verify $unit warns: $out"
  fi
done

# What mnt-arrays.mount makes systemd run: mount -t Type -o Options What Where.
type=$(sed -n 's/^Type=//p' "$U/mnt-arrays.mount")
opts=$(sed -n 's/^Options=//p' "$U/mnt-arrays.mount")
if mount -t "$type" -o "$opts" "$S" "$M" 2>"$TMP/mount.err"; then
  after_mount "mnt-arrays.mount's mount command (-t $type -o $opts)"
else
  fail "mnt-arrays.mount's mount command failed: $(cat "$TMP/mount.err")"
fi

# What b2ndfs@mnt-arrays.service runs: its ExecStart with the
# EnvironmentFile's values and %f = the mountpoint (a foreground process).
exec_start=$(sed -n 's/^ExecStart=//p' "$U/b2ndfs@mnt-arrays.service")
# shellcheck disable=SC1091
source "$TMP/etc/mnt-arrays.conf"
# shellcheck disable=SC2016  # the literal ${...} of the unit file
cmdline=${exec_start//'${OPTIONS}'/$OPTIONS}
# shellcheck disable=SC2016
cmdline=${cmdline//'${SOURCE}'/$SOURCE}
cmdline=${cmdline//%f/$M}
log "ExecStart: $cmdline"
# shellcheck disable=SC2086
# Under the unit's sandbox (systemd does not run units here).
SANDBOX=("$PY" "$(dirname "${BASH_SOURCE[0]}")/unit_sandbox.py" "$U/b2ndfs@mnt-arrays.service" --)
# shellcheck disable=SC2086  # a command line, split as systemd does
"${SANDBOX[@]}" $cmdline 2>"$TMP/service.log" &
service_pid=$!
ITEST_PIDS+=("$service_pid")
ITEST_MOUNTS+=("$M")
if wait_until 20 is_mounted "$M"; then
  check "b2ndfs@.service: read data" cmp "$M/ndim/3d_f4.b2nd/data" "$TMP/want"
  check "b2ndfs@.service: the daemon holds only CAP_SYS_ADMIN and CAP_DAC_READ_SEARCH" \
    grep -q "^CapEff:[[:space:]]*0000000000200004$" "/proc/$service_pid/status"
  check "b2ndfs@.service: under a system call filter" grep -q "^Seccomp:[[:space:]]*2$" "/proc/$service_pid/status"
  grep -qi "operation not permitted\|bad system call" "$TMP/service.log" &&
    fail "b2ndfs@.service's daemon met a refused call: $(cat "$TMP/service.log")"
  # ExecStopPost: fusermount3 -uz %f; the service process then ends.
  stop_post=$(sed -n 's/^ExecStopPost=-\{0,1\}//p' "$U/b2ndfs@mnt-arrays.service")
  stop_post=${stop_post//%f/$M}
  # shellcheck disable=SC2086  # a command line, split as systemd does
  check "b2ndfs@.service ExecStopPost" "${SANDBOX[@]}" $stop_post
  wait_until 10 eval "! kill -0 $service_pid 2>/dev/null" || fail "b2ndfs@.service's process did not end after ExecStopPost"
else
  fail "b2ndfs@.service's ExecStart did not mount: $(cat "$TMP/service.log")"
fi
finish
