#!/usr/bin/env bash
# docs.check: the man pages, the README and --help say the same thing.
#   - each generated man page renders with groff and man(1) without a warning;
#   - the README's generated blocks equal what docs/man/*.1.md gives;
#   - every `-o NAME=` option of b2ndfs.1.md is in `b2ndfs --help`, and every
#     one `--help` lists is in the man page (so neither can miss an option).
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

((failures == 0)) && echo "docs.check: passed"
exit $((failures > 0))
