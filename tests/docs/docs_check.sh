#!/usr/bin/env bash
# docs.check: the man pages, the README and --help say the same thing.
#   - each generated man page renders with groff and man(1) without a warning;
#   - the README's generated blocks equal what docs/man/*.1.md gives;
#   - every `-o NAME=` option of b2ndfs.1.md is in `b2ndfs --help`, and every
#     one `--help` lists is in the man page (so neither can miss an option);
#   - every ```sh block of README.md and docs/man/*.1.md runs without an error
#     (README.md says how they are written): against a mount of the samples
#     b2ndfs-make-samples writes, /srv/arrays standing for the samples and
#     /mnt/arrays for their mountpoint; a block that mounts /srv/arrays itself
#     gets a fresh source and mountpoint. Blocks tagged `sh no-run: WHY` are
#     skipped (WHY is required). B2NDFS_DOCS_KEEP=1 keeps the work directory. A block fails on a non-zero exit (bash -e), a Python
#     traceback, or a GDAL "Warning"/"ERROR" line. Without a usable /dev/fuse
#     the examples are skipped (and said so); the rest still runs.
# Usage: docs_check.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$1
BUILD=$2
failures=0
fail() {
  echo "docs.check: FAIL: $*" >&2
  failures=$((failures + 1))
}

for page in b2ndfs b2ndfs-inspect; do
  man_page=$BUILD/docs/$page.1
  [[ -s $man_page ]] || { fail "$man_page was not generated"; continue; }
  warnings=$(groff -man -ww -z -Tutf8 "$man_page" 2>&1)
  [[ -z $warnings ]] || fail "groff warns about $page.1: $warnings"
  warnings=$(MANWIDTH=80 man --warnings -l "$man_page" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "man warns about $page.1: $warnings"
  MANWIDTH=80 man -l "$man_page" 2>/dev/null | grep -q "^NAME" || fail "man -l $page.1 shows no NAME section"
done

python3 "$SRC/scripts/gen_docs.py" readme "$SRC/README.md" || fail "README.md is not in sync with docs/man"

in_man=$(python3 "$SRC/scripts/gen_docs.py" options "$SRC/docs/man/b2ndfs.1.md" | sort)
in_help=$("$BUILD/src/app/b2ndfs" --help | sed -n 's/^ *-o \([a-z_]*\).*/\1/p' | grep -v '^$' | sort)
[[ -n $in_man && -n $in_help ]] || fail "no options found (man: '$in_man', help: '$in_help')"
missing=$(comm -23 <(echo "$in_man") <(echo "$in_help"))
[[ -z $missing ]] || fail "in the man page but not in --help: $missing"
missing=$(comm -13 <(echo "$in_man") <(echo "$in_help"))
[[ -z $missing ]] || fail "in --help but not in the man page: $missing"

# The examples.
T=$(mktemp -d /tmp/b2ndfs-docs.XXXXXX)
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do
    mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null; }
  done
  [[ -n ${B2NDFS_DOCS_KEEP:-} ]] || rm -rf "$T"
}
trap cleanup EXIT
if [[ ! -c /dev/fuse ]] || ! command -v fusermount3 >/dev/null; then
  echo "docs.check: SKIP examples: /dev/fuse or fusermount3 is missing"
else
  mkdir -p "$T/bin" "$T/src" "$T/mnt" "$T/blocks"
  for tool in src/app/b2ndfs src/tools/b2ndfs-inspect src/tools/b2ndfs-make-samples; do
    [[ -x $BUILD/$tool ]] || fail "$BUILD/$tool is not built (the examples need it)"
    ln -sf "$BUILD/$tool" "$T/bin/"
  done
  # The Python with the packages the examples import.
  [[ -x /usr/bin/python3 ]] && ln -sf /usr/bin/python3 "$T/bin/python3"
  export PATH="$T/bin:$PATH"
  python3 - "$SRC" "$T/blocks" <<'EOF' || fail "cannot extract the examples"
import re
import sys
from pathlib import Path

src, out = Path(sys.argv[1]), Path(sys.argv[2])
n = 0
for doc in [src / "README.md", *sorted((src / "docs/man").glob("*.1.md"))]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"```(\S*)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if m.group(1) == "sh" and "no-run" in m.group(2):
            if not re.fullmatch(r"\s+no-run: \S.*", m.group(2)):
                sys.exit(f"{doc.name}:{i + 1}: write why a block is not run: ```sh no-run: WHY")
        elif m.group(1) == "sh":
            n += 1
            name = f"{n:02d}-{doc.name}-line{i + 1}.sh"
            (out / name).write_text("\n".join(lines[i + 1:j]) + "\n", encoding="utf-8")
        i = j + 1
print(f"docs.check: {n} examples")
EOF
  b2ndfs-make-samples "$T/src" >/dev/null || fail "b2ndfs-make-samples failed"
  if b2ndfs "$T/src" "$T/mnt" -o cache_size=128M; then
    mounts+=("$T/mnt")
    for block in "$T"/blocks/*.sh; do
      [[ -e $block ]] || { fail "no example found"; break; }
      src=$T/src mnt=$T/mnt
      if grep -qE '^\s*b2ndfs\s+(\S+\s+)?/srv/arrays\s+/mnt/arrays' "$block"; then
        # It mounts by itself: a fresh mountpoint, and a fresh source unless
        # the block writes one.
        src=$T/own-src-${block##*/} mnt=$T/own-mnt-${block##*/}
        mkdir -p "$src" "$mnt"
        mounts+=("$mnt")
        grep -q 'b2ndfs-make-samples /srv/arrays' "$block" || cp -r "$T/src/." "$src/"
      fi
      sed -e "s#/srv/arrays#$src#g" -e "s#/mnt/arrays#$mnt#g" "$block" >"$block.run"
      (cd "$T" && bash -e "$block.run") >"$block.out" 2>"$block.err"
      rc=$?
      bad=$(grep -E 'Traceback|^(Warning|ERROR) [0-9]+:' "$block.err" "$block.out")
      if ((rc != 0)) || [[ -n $bad ]]; then
        fail "example ${block##*/} (exit $rc): $(head -c 600 "$block.err") $bad"
        sed 's/^/    | /' "$block" >&2
      fi
    done
  else
    fail "cannot mount the samples"
  fi
fi

((failures == 0)) && echo "docs.check: passed"
exit $((failures > 0))
