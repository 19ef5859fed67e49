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
#                                     of each phase in minutes:seconds from T0
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
  awk -F'\t' -v t0="$t0" '
    function mmss(s) { if (s < 0) s = 0; return sprintf("%d:%02d", int(s / 60), s % 60) }
    BEGIN { printf "%-28s %7s %7s %7s  %s\n", "phase", "start", "end", "took", "note" }
    { printf "%-28s %7s %7s %7s  %s\n", $1, mmss($2 - t0), mmss($3 - t0), mmss($3 - $2), $4 }
  ' "$PHASES_FILE"
}
