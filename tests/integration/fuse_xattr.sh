#!/usr/bin/env bash
# fuse.xattr: extended attributes (README.md, "Layout"). A container directory
# and every file and directory inside it carry user.b2nd.shape, .chunkshape,
# .blockshape (JSON lists, as c-blosc2 reads the container), .dtype and
# .codec (as written, and as meta.json says); `getfattr -d` shows exactly
# those. Mirrored plain files and directories, the root and an undecodable
# container have none (ENODATA, an empty list); other names are ENODATA.
# security.* and system.* are EOPNOTSUPP (as before getxattr existed: `ls -l`
# then asks once per mount, not once per entry), answered without opening a
# container or its source. Size queries and too-small
# buffers behave as getxattr(2) says; setxattr and removexattr are EROFS.
# Usage: fuse_xattr.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init xattr "$1"
require_fuse

if ! command -v getfattr >/dev/null; then
  fail "getfattr is missing (the attr package, scripts/setup.sh)"
  finish
fi

S=$TMP/src
M=$TMP/mnt
mkdir -p "$S/sub"
echo "notes" >"$S/notes.txt"
write() {
  "$FIXTURE" write "$@" >/dev/null || {
    fail "b2nd_fixture write $*"
    finish
  }
}
write "$S/a3.b2nd" --dtype '<f4' --shape 23,19,31 --chunks 8,8,8 --blocks 3,4,5 --seed 1 --codec zstd
write "$S/sub/b2.b2nd" --dtype '>i2' --shape 45,67 --chunks 20,30 --blocks 6,7 --seed 2 --codec lz4
write "$S/untouched.b2nd" --dtype '|u1' --shape 10 --chunks 5 --blocks 5 --seed 3
head -c 4096 /dev/urandom >"$S/bad.b2nd"
mount_fs "$S" "$M" || finish

# get PATH NAME: the value of attribute NAME (fails when there is none).
get() { getfattr --absolute-names --only-values -n "$2" "$1" 2>"$TMP/get.err"; }
# names PATH: every attribute name of PATH, one per line, sorted.
names() { getfattr --absolute-names -d -m - "$1" 2>/dev/null | sed -n 's/^\([^#][^=]*\)=.*/\1/p' | sort; }
# no_attr PATH NAME: NAME must be absent ("No such attribute", ENODATA).
no_attr() {
  if get "$1" "$2" >/dev/null; then
    fail "$1 has $2"
  elif ! grep -q "No such attribute" "$TMP/get.err"; then
    fail "$1 $2: not ENODATA: $(cat "$TMP/get.err")"
  fi
}

want_names=$(printf '%s\n' user.b2nd.blockshape user.b2nd.chunkshape user.b2nd.codec \
  user.b2nd.dtype user.b2nd.shape)

# check_container DIR SOURCE DTYPE CODEC PATHS...: every PATH under DIR has
# the five attributes, with the geometry c-blosc2 reads from SOURCE.
check_container() {
  local dir=$1 src=$2 dtype=$3 codec=$4 p f want got
  shift 4
  local meta_codec
  meta_codec=$(json_field "$dir/meta.json" codec)
  [[ $meta_codec == "$codec" ]] || fail "$dir/meta.json codec is '$meta_codec', written as $codec"
  for p in "" "$@"; do
    local path=$dir${p:+/$p}
    [[ -e $path ]] || {
      fail "$path does not exist"
      continue
    }
    got=$(names "$path")
    [[ $got == "$want_names" ]] || fail "$path: attribute names [$got]"
    for f in shape chunkshape blockshape; do
      want="[$(info_field "$src" "$f" | sed 's/,/, /g')]"
      got=$(get "$path" "user.b2nd.$f") || fail "$path: no user.b2nd.$f: $(cat "$TMP/get.err")"
      [[ $got == "$want" ]] || fail "$path user.b2nd.$f is '$got', c-blosc2 says '$want'"
      # A JSON list, as documented.
      "$PY" -c 'import json, sys; v = json.loads(sys.argv[1]); assert isinstance(v, list)' "$got" ||
        fail "$path user.b2nd.$f is not a JSON list: '$got'"
    done
    got=$(get "$path" user.b2nd.dtype)
    [[ $got == "$dtype" ]] || fail "$path user.b2nd.dtype is '$got', written as $dtype"
    got=$(get "$path" user.b2nd.codec)
    [[ $got == "$codec" ]] || fail "$path user.b2nd.codec is '$got', written as $codec"
  done
}

log "attributes of containers and everything inside"
check_container "$M/a3.b2nd" "$S/a3.b2nd" '<f4' zstd \
  meta.json data data.npy chunks chunks/0.0.0 chunks/2.2.3 slices slices/0 slices/0/07 \
  slices/2/30 view/1:5,2,::3 view/...,4.npy data.nhdr data.nii
check_container "$M/sub/b2.b2nd" "$S/sub/b2.b2nd" '>i2' lz4 \
  data chunks/1.2 slices/1/66 view/3
# `getfattr -d` (user.* only, as people type it) shows them too.
getfattr --absolute-names -d "$M/a3.b2nd/data" 2>/dev/null | grep -qx 'user.b2nd.shape="\[23, 19, 31\]"' ||
  fail "getfattr -d $M/a3.b2nd/data does not show user.b2nd.shape"

log "no attributes outside containers"
for p in "$M" "$M/sub" "$M/notes.txt"; do
  got=$(names "$p")
  [[ -z $got ]] || fail "$p has attributes: $got"
  no_attr "$p" user.b2nd.shape
done
log "an undecodable container has none"
[[ -d $M/bad.b2nd ]] || fail "bad.b2nd is not shown as a directory"
json_field "$M/bad.b2nd/meta.json" error >/dev/null || fail "bad.b2nd/meta.json has no error"
got=$(names "$M/bad.b2nd")
[[ -z $got ]] || fail "bad.b2nd has attributes: $got"
no_attr "$M/bad.b2nd" user.b2nd.shape
no_attr "$M/bad.b2nd" user.b2nd.codec

log "other names: ENODATA, security.* and system.*: EOPNOTSUPP"
for n in user.b2nd.nosuch user.b2nd. user.other trusted.x; do
  no_attr "$M/a3.b2nd" "$n"
  no_attr "$M/a3.b2nd/data" "$n"
done
# no_label PATH NAME: NAME must be unsupported (EOPNOTSUPP).
no_label() {
  if get "$1" "$2" >/dev/null; then
    fail "$1 has $2"
  elif ! grep -q "Operation not supported" "$TMP/get.err"; then
    fail "$1 $2: not EOPNOTSUPP: $(cat "$TMP/get.err")"
  fi
}
for n in security.selinux security.capability system.posix_acl_access system.posix_acl_default; do
  no_label "$M/a3.b2nd" "$n"
  no_label "$M/a3.b2nd/data" "$n"
  no_label "$M/notes.txt" "$n"
done

log "security.* never opens a container"
stat "$M/untouched.b2nd" >/dev/null || fail "stat untouched.b2nd"
opened0=$(stats_field "$M" containers.opened)
opens0=$(stats_field "$M" descriptors.opens)
no_label "$M/untouched.b2nd" security.selinux
no_label "$M/untouched.b2nd" system.posix_acl_access
ls -l "$M" >/dev/null || fail "ls -l $M"
# ls -l asks for the label and the ACL once per mount, not once per entry.
if command -v strace >/dev/null; then
  strace -f -e trace=lgetxattr,getxattr -o "$TMP/ls.strace" ls -l "$M/a3.b2nd/slices/0" >/dev/null
  for n in security.selinux system.posix_acl_access; do
    k=$(grep -c "\"$n\"" "$TMP/ls.strace")
    ((k <= 1)) || fail "ls -l asked for $n $k times"
  done
fi
[[ $(stats_field "$M" containers.opened) == "$opened0" ]] ||
  fail "security.* / ls -l opened a container ($opened0 -> $(stats_field "$M" containers.opened))"
[[ $(stats_field "$M" descriptors.opens) == "$opens0" ]] ||
  fail "security.* / ls -l opened a source ($opens0 -> $(stats_field "$M" descriptors.opens))"
# ... while user.b2nd.* does.
[[ $(get "$M/untouched.b2nd" user.b2nd.shape) == "[10]" ]] || fail "untouched.b2nd shape"

log "size queries, ERANGE, read-only"
"$PY" - "$M/a3.b2nd/chunks/1.1.1" "$M/notes.txt" <<'EOF' || fail "getxattr/listxattr/setxattr semantics"
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
path, plain = (p.encode() for p in sys.argv[1:3])
bad = 0
def expect(what, cond):
    global bad
    if not cond:
        print("FAIL:", what, file=sys.stderr)
        bad = 1
value = b"[23, 19, 31]"
n = libc.getxattr(path, b"user.b2nd.shape", None, ctypes.c_size_t(0))
expect("size query gives %d" % n, n == len(value))
buf = ctypes.create_string_buffer(256)
n = libc.getxattr(path, b"user.b2nd.shape", buf, ctypes.c_size_t(len(value) - 1))
expect("short buffer: %d errno %d" % (n, ctypes.get_errno()), n == -1 and ctypes.get_errno() == errno.ERANGE)
n = libc.getxattr(path, b"user.b2nd.shape", buf, ctypes.c_size_t(len(value)))
expect("exact buffer: %d %r" % (n, buf.raw[:max(n, 0)]), n == len(value) and buf.raw[:n] == value)
names = b"".join(b"user.b2nd." + k + b"\0" for k in (b"shape", b"chunkshape", b"blockshape", b"dtype", b"codec"))
n = libc.listxattr(path, None, ctypes.c_size_t(0))
expect("list size query gives %d" % n, n == len(names))
n = libc.listxattr(path, buf, ctypes.c_size_t(len(names) - 1))
expect("short list buffer: %d errno %d" % (n, ctypes.get_errno()), n == -1 and ctypes.get_errno() == errno.ERANGE)
n = libc.listxattr(path, buf, ctypes.c_size_t(256))
expect("list: %r" % buf.raw[:max(n, 0)], n == len(names) and sorted(buf.raw[:n].split(b"\0")) == sorted(names.split(b"\0")))
n = libc.listxattr(plain, None, ctypes.c_size_t(0))
expect("plain file list size %d" % n, n == 0)
for p in (path, plain):
    for op in (lambda: os.setxattr(p, "user.b2nd.shape", b"[1]"),
               lambda: os.setxattr(p, "user.new", b"1"),
               lambda: os.removexattr(p, "user.b2nd.shape")):
        try:
            op()
            expect("a write of attributes of %r succeeded" % p, False)
        except OSError as e:
            expect("a write of attributes of %r: %s" % (p, e), e.errno == errno.EROFS)
sys.exit(bad)
EOF
# Still there, unchanged.
[[ $(get "$M/a3.b2nd/chunks/1.1.1" user.b2nd.shape) == "[23, 19, 31]" ]] ||
  fail "user.b2nd.shape changed"

unmount_fs "$M" || fail "unmount"
finish
