# Sourced: a minimal Debian root of this machine's release (debootstrap
# --variant=minbase, from the archive this machine's apt already uses), ready
# to build and mount FUSE filesystems in: its / a mount point (a private bind
# of ROOT onto itself), /proc, /sys, /dev/pts, /dev/fuse, /dev/shm, and how
# this machine reaches the network, which holds for a root next to it too:
# its resolv.conf, apt Acquire settings and locally added CA certificates
# (e.g. of a TLS-intercepting egress proxy; they join the root's trust store
# when its ca-certificates package is installed). Nothing else, but dpkg
# set to skip its fsyncs (the root is thrown away), and this machine's apt
# package cache (B2NDFS_MINBASE_DEB_CACHE, default /var/cache/apt/archives;
# empty: none) as debootstrap's and the root's own: packages this machine
# already fetched are not downloaded again (apt and debootstrap check each
# against the root's own package lists), new ones stay for the next run.
# Needs root. Used by tests/package/package_deb.sh and scripts/check_minbase.sh.
#
#   minbase_make ROOT LOG   debootstrap into ROOT (its output into LOG);
#                           exit status 77 if the archive is unreachable,
#                           1 on any other failure (the reason on stderr)
#   minbase_run ROOT CMD..  CMD in ROOT with a clean environment
#   minbase_share DIR ROOT [AT]
#                           binds this machine's DIR into ROOT, at AT or the
#                           same path (e.g. the compiler cache:
#                           scripts/lib/ccache.sh)
#   minbase_copy_sources SRC DEST
#                           the source tree as a user gets it (no build
#                           trees, no .deps, no .git)
#   minbase_demo ROOT LOG [VAR=VALUE...]
#                           the README's main command (scripts/demo.sh) in
#                           ROOT/root/b2ndfs (with those variables), its
#                           output into LOG; fails, saying why on stderr,
#                           unless it ran to its end,
#                           showed its slice check, left build/docs/b2ndfs.1
#                           (for man -l) and left no mount
#   minbase_release ROOT    stops every process whose root is ROOT and
#                           unmounts everything below it, deepest first,
#                           then ROOT's bind mount onto itself

# shellcheck source=archive_uri.sh
source "$(dirname "${BASH_SOURCE[0]}")/archive_uri.sh"

minbase_make() {
  local root=$1 log=$2 uri codename
  uri=$(archive_uri)
  if [[ -z $uri ]]; then
    echo "no Debian archive in /etc/apt to bootstrap a minimal root from" >&2
    return 77
  fi
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  local debs=${B2NDFS_MINBASE_DEB_CACHE-/var/cache/apt/archives} cache=()
  if [[ -n $debs && -d $debs && -w $debs ]]; then
    cache=(--cache-dir="$(cd "$debs" && pwd -P)")
  else
    debs=
  fi
  if ! debootstrap --variant=minbase "${cache[@]}" "$codename" "$root" "$uri" >"$log" 2>&1; then
    if grep -qiE "Failed getting release file|Temporary failure resolving|Could not resolve|Connection refused" "$log"; then
      echo "the archive is unreachable: $(grep -iE 'fail|resolv|refused' "$log" | head -n2)" >&2
      return 77
    fi
    tail -n 20 "$log" >&2
    echo "debootstrap failed" >&2
    return 1
  fi
  # The root is a mount point of its own, as / is on a real machine: else
  # making / private in a new mount namespace inside it (unshare -m
  # --propagation private, fuse.mount_helper) fails with EINVAL. Private, so
  # the mounts below do not propagate to the mount that holds ROOT.
  mount --bind "$root" "$root" && mount --make-private "$root" || return 1
  mount -t proc proc "$root/proc" || return 1
  mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" || return 1
  mount --bind /sys "$root/sys" || return 1
  mkdir -p "$root/dev/shm" && mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" || return 1
  [[ -c $root/dev/fuse ]] || mknod -m 666 "$root/dev/fuse" c 10 229 || return 1
  [[ -z $debs ]] || minbase_share "$debs" "$root" /var/cache/apt/archives || return 1
  # A throwaway root: dpkg's fsync of every file it unpacks guards against a
  # power loss, which would lose the root anyway (the set-up there: 350 ->
  # 277 s).
  echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/b2ndfs-throwaway-root"
  local conf
  for conf in /etc/apt/apt.conf.d/*; do
    [[ -f $conf ]] && grep -q '^[[:space:]]*Acquire::' "$conf" && cp "$conf" "$root/etc/apt/apt.conf.d/"
  done
  [[ -d /etc/apt/auth.conf.d ]] && cp -r /etc/apt/auth.conf.d "$root/etc/apt/" 2>/dev/null
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
  if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    [[ -x $root/usr/sbin/update-ca-certificates ]] && minbase_run "$root" update-ca-certificates >/dev/null 2>&1
  fi
  return 0
}

minbase_run() {
  local root=$1
  shift
  chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root TERM=dumb "$@"
}

minbase_share() {
  local dir=$1 root=$2 at=${3:-$1}
  mkdir -p "$root$at" && mount --bind "$dir" "$root$at"
}

minbase_copy_sources() {
  mkdir -p "$2"
  tar -C "$1" --exclude='./build*' --exclude='./.git' --exclude='./.deps' --exclude='./bench/out' -cf - . |
    tar -C "$2" -xf -
}

minbase_demo() {
  local root=$1 log=$2 ok=0
  shift 2
  if ! minbase_run "$root" "$@" bash -c 'cd /root/b2ndfs && bash scripts/demo.sh' >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "bash scripts/demo.sh fails on a minimal root" >&2
    ok=1
  elif ! grep -q "What next" "$log"; then
    echo "the demo ended without its 'What next' lines" >&2
    ok=1
  elif ! grep -q "slice 384 == row 384 of data" "$log"; then
    echo "the demo did not show its slice check" >&2
    ok=1
  elif ! grep -q '^\.TH B2NDFS 1' "$root/root/b2ndfs/build/docs/b2ndfs.1" 2>/dev/null; then
    # What its 'What next' lines tell a person to read (man -l).
    echo "the demo left no man page in build/docs/b2ndfs.1" >&2
    ok=1
  fi
  if awk -v r="$root/root/b2ndfs" 'index($5, r) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "the demo left a mount behind" >&2
    ok=1
  fi
  return $ok
}

minbase_release() {
  local root=$1 proc pid m
  [[ -d $root ]] || return 0
  root=$(cd "$root" && pwd -P)
  # Daemons a failed run left (nginx, s3rver, b2ndfs): first TERM, then KILL.
  for sig in TERM KILL; do
    for proc in /proc/[0-9]*; do
      pid=${proc#/proc/}
      [[ $pid == "$$" ]] && continue
      [[ $(readlink "$proc/root" 2>/dev/null) == "$root" ]] && kill -"$sig" "$pid" 2>/dev/null
    done
    [[ $sig == TERM ]] && sleep 1
  done
  # ROOT's bind onto itself sorts last: it holds the others.
  for m in $(awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
}
