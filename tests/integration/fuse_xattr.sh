#!/usr/bin/env bash
# fuse.xattr: extended attributes (README.md, "Layout") through a kernel
# mount: what only the kernel shows. The attributes' names and values on
# every kind of path, ENODATA and EOPNOTSUPP answers, size queries and
# ERANGE are checked without a mount, through the FUSE operations
# (tests/unit/fuse_xattr_test.cc); here: one container's attributes reach
# getfattr (`getfattr -d` too) as c-blosc2 reads the container, meta.json
# says the same codec, an undecodable container still lists, security.* and
# system.* (EOPNOTSUPP) are asked once per mount by `ls -l` and open no
# container or source, and setxattr / removexattr are EROFS.
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
mkdir -p "$S"
echo "notes" >"$S/notes.txt"
write() {
  "$FIXTURE" write "$@" >/dev/null || {
    fail "b2nd_fixture write $*"
    finish
  }
}
write "$S/a3.b2nd" --dtype '<f4' --shape 23,19,31 --chunks 8,8,8 --blocks 3,4,5 --seed 1 --codec zstd
write "$S/untouched.b2nd" --dtype '|u1' --shape 10 --chunks 5 --blocks 5 --seed 3
head -c 4096 /dev/urandom >"$S/bad.b2nd"
mount_fs "$S" "$M" || finish

# get PATH NAME: the value of attribute NAME (fails when there is none).
get() { getfattr --absolute-names --only-values -n "$2" "$1" 2>"$TMP/get.err"; }
# names PATH: every attribute name of PATH, one per line, sorted.
names() { getfattr --absolute-names -d -m - "$1" 2>/dev/null | sed -n 's/^\([^#][^=]*\)=.*/\1/p' | sort; }
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

log "attributes of a container's file through the kernel"
# (Every path kind, both containers, and the error answers: fuse_xattr_test.)
check_container "$M/a3.b2nd" "$S/a3.b2nd" '<f4' zstd data
# `getfattr -d` (user.* only, as people type it) shows them too.
getfattr --absolute-names -d "$M/a3.b2nd/data" 2>/dev/null | grep -qx 'user.b2nd.shape="\[23, 19, 31\]"' ||
  fail "getfattr -d $M/a3.b2nd/data does not show user.b2nd.shape"
[[ -d $M/bad.b2nd ]] || fail "bad.b2nd is not shown as a directory"
json_field "$M/bad.b2nd/meta.json" error >/dev/null || fail "bad.b2nd/meta.json has no error"

# no_label PATH NAME: NAME must be unsupported (EOPNOTSUPP).
no_label() {
  if get "$1" "$2" >/dev/null; then
    fail "$1 has $2"
  elif ! grep -q "Operation not supported" "$TMP/get.err"; then
    fail "$1 $2: not EOPNOTSUPP: $(cat "$TMP/get.err")"
  fi
}
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

log "attributes are read-only"
# (Size queries and ERANGE: fuse_xattr_test.)
"$PY" - "$M/a3.b2nd/chunks/1.1.1" "$M/notes.txt" <<'EOF' || fail "setxattr/removexattr semantics"
import errno, os, sys
bad = 0
for p in sys.argv[1:3]:
    for op in (lambda: os.setxattr(p, "user.b2nd.shape", b"[1]"),
               lambda: os.setxattr(p, "user.new", b"1"),
               lambda: os.removexattr(p, "user.b2nd.shape")):
        try:
            op()
            print("FAIL: a write of attributes of %r succeeded" % p, file=sys.stderr)
            bad = 1
        except OSError as e:
            if e.errno != errno.EROFS:
                print("FAIL: a write of attributes of %r: %s" % (p, e), file=sys.stderr)
                bad = 1
sys.exit(bad)
EOF
# Still there, unchanged.
[[ $(get "$M/a3.b2nd/chunks/1.1.1" user.b2nd.shape) == "[23, 19, 31]" ]] ||
  fail "user.b2nd.shape changed"

unmount_fs "$M" || fail "unmount"
finish
