# shellcheck shell=bash
# Sourced: the per-phase timing table that scripts/test.sh prints at the end
# of every run (and scripts/check_minbase.sh for what it runs in its root).
# A phase is a line of PHASES_FILE: NAME, start and end (seconds since the
# epoch; the root shares this machine's clock), NOTE, tab-separated. Phases
# may overlap: builds run in the background while a pass runs.
#
#   phase_add NAME START END [NOTE]   appends a phase (START/END: epoch s)
#   phase_since NAME START [NOTE]     the same, ending now
#   phase_import FILE INDENT          appends FILE's phases (another run's,
#                                     e.g. the root's), names prefixed INDENT
#   phase_table T0                    prints the table: start, end and length
#                                     of each phase in minutes:seconds from
#                                     T0, by start (an indented phase stays
#                                     under the phase above it)
PHASES_FILE=${PHASES_FILE:-/dev/null}

phase_add() {
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$PHASES_FILE"
}

phase_since() {
  phase_add "$1" "$2" "$EPOCHSECONDS" "${3:-}"
}

phase_import() {
  [[ -s $1 ]] || return 0
  local name start end note
  while IFS=$'\t' read -r name start end note; do
    phase_add "$2$name" "$start" "$end" "$note"
  done <"$1"
}

phase_table() {
  local t0=$1
  [[ -s $PHASES_FILE ]] || return 0
  echo "== phases (m:ss from the start of the run; background builds overlap the passes)"
  printf '%-28s %7s %7s %7s  %s\n' phase start end took note
  # By start, each indented phase under the one above it, the total last.
  awk -F'\t' -v t0="$t0" '
    function mmss(s) { if (s < 0) s = 0; return sprintf("%d:%02d", int(s / 60), s % 60) }
    {
      if ($1 == "total") key = 1e12; else if ($1 !~ /^ /) key = $2
      printf "%d\t%d\t%-28s %7s %7s %7s  %s\n", key, NR, $1, mmss($2 - t0), mmss($3 - t0), mmss($3 - $2), $4
    }' "$PHASES_FILE" | sort -t$'\t' -k1,1n -k2,2n | cut -f3-
}
