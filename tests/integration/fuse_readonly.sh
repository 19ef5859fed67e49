#!/usr/bin/env bash
# fuse.readonly: every write to a mount fails with EROFS (or EACCES where
# POSIX allows it), on virtual files, container directories, mirrored
# directories and plain sidecar files alike; and nothing changes.
# Usage: fuse_readonly.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init readonly "$1"
require_fuse

make_fixtures "$TMP"
S=$TMP/src
M=$TMP/mnt
mount_fs "$S" "$M" || exit 1
before=$(cd "$S" && find . -printf '%p %s %T@ %m\n' | sort | md5sum)

# expect_rofs DESCRIPTION CMD...: CMD must fail, saying EROFS or EACCES.
expect_rofs() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then
    fail "$what succeeded (should be read-only)"
    return
  fi
  if ! grep -qiE 'read-only file system|permission denied|EROFS|EACCES' <<<"$out"; then
    fail "$what failed, but not with EROFS/EACCES: $out"
  fi
}

C=$M/ndim/3d_f4.b2nd
for f in "$C/data" "$C/data.npy" "$C/meta.json" "$C/chunks/0.0.0" "$C/slices/0/07" "$M/notes.txt"; do
  rel=${f#"$M"/}
  expect_rofs "touch $rel" touch "$f"
  # shellcheck disable=SC2016  # $1 is expanded by the inner sh
  expect_rofs "echo > $rel" sh -c 'echo x >"$1"' sh "$f"
  # shellcheck disable=SC2016
  expect_rofs "echo >> $rel" sh -c 'echo x >>"$1"' sh "$f"
  expect_rofs "truncate $rel" truncate -s 0 "$f"
  expect_rofs "rm $rel" rm -f "$f"
  expect_rofs "chmod $rel" chmod 0777 "$f"
  expect_rofs "chown $rel" chown 1:1 "$f"
  expect_rofs "mv $rel" mv "$f" "$f.moved"
  expect_rofs "ln $rel" ln "$f" "$f.link"
  expect_rofs "dd conv=notrunc into $rel" dd if=/dev/zero of="$f" bs=1 count=1 conv=notrunc status=none
  if command -v setfattr >/dev/null; then
    expect_rofs "setfattr $rel" setfattr -n user.test -v 1 "$f"
  fi
done
for d in "$C" "$C/chunks" "$C/slices/0" "$M/nested" "$M"; do
  rel=${d#"$M"}
  expect_rofs "mkdir in ${rel:-/}" mkdir "$d/newdir"
  expect_rofs "touch new file in ${rel:-/}" touch "$d/newfile"
  expect_rofs "ln -s in ${rel:-/}" ln -s /etc/passwd "$d/newlink"
  expect_rofs "mknod fifo in ${rel:-/}" mkfifo "$d/newfifo"
  expect_rofs "chmod ${rel:-/}" chmod 0777 "$d"
  expect_rofs "touch ${rel:-/}" touch "$d"
done
expect_rofs "rmdir a container" rmdir "$C"
expect_rofs "rm -rf a container" rm -rf "$C"
expect_rofs "rmdir a mirrored directory" rmdir "$M/nested/deeper"
expect_rofs "mv a container" mv "$C" "$M/ndim/renamed.b2nd"
expect_rofs "mv a plain file" mv "$M/notes.txt" "$M/notes2.txt"

# open(2) for writing, whatever the flags, fails; O_RDONLY works.
check "open flags" /usr/bin/python3 - "$C/data" "$M/notes.txt" <<'EOF'
import errno
import os
import sys

bad = 0
for path in sys.argv[1:]:
    for name, flags in [("O_WRONLY", os.O_WRONLY), ("O_RDWR", os.O_RDWR),
                        ("O_WRONLY|O_APPEND", os.O_WRONLY | os.O_APPEND),
                        ("O_RDONLY|O_TRUNC", os.O_RDONLY | os.O_TRUNC),
                        ("O_CREAT|O_WRONLY", os.O_CREAT | os.O_WRONLY)]:
        try:
            fd = os.open(path, flags)
        except OSError as e:
            if e.errno not in (errno.EROFS, errno.EACCES):
                print(f"open({path}, {name}): {e}, expected EROFS/EACCES", file=sys.stderr)
                bad += 1
            continue
        os.close(fd)
        print(f"open({path}, {name}) succeeded", file=sys.stderr)
        bad += 1
    os.close(os.open(path, os.O_RDONLY))
    try:
        os.utime(path, (0, 0))
        print(f"utime({path}) succeeded", file=sys.stderr)
        bad += 1
    except OSError as e:
        if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            print(f"utime({path}): {e}", file=sys.stderr)
            bad += 1
sys.exit(1 if bad else 0)
EOF
# statvfs says read-only.
[[ $(stat -f -c %a "$M") == 0 || $(findmnt -no OPTIONS "$M") == ro* ]] ||
  fail "the mount is not flagged read-only: $(findmnt -no OPTIONS "$M")"
findmnt -no OPTIONS "$M" | grep -qE '(^|,)ro(,|$)' || fail "mount options lack ro: $(findmnt -no OPTIONS "$M")"

after=$(cd "$S" && find . -printf '%p %s %T@ %m\n' | sort | md5sum)
[[ $before == "$after" ]] || fail "the source tree changed"
check "data still reads after all that" cmp -s "$C/data" "$C/data"
pid_alive "$DAEMON_PID" || fail "b2ndfs died"
finish
