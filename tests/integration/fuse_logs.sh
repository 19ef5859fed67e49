#!/usr/bin/env bash
# fuse.logs: where the daemon's messages go (README.md, "Logs").
# - log_file=PATH (foreground): the "mounted" info line when the mount is
#   ready, a refused view/ name with its reason, and the "unmounted" line at
#   the end, in the file and on stderr; after `mv` of the file and SIGHUP (what
#   logrotate does) the daemon keeps serving and writes a new file of that name;
#   SIGHUP stops no daemon, also one without log_file.
# - MOUNTPOINT/.b2ndfs/log holds the recent messages, also of a daemon that
#   detached; without /dev/log, a detaching daemon says once, on stderr
#   before it detaches, where its messages go. README's "Runtime statistics"
#   names every counter of .b2ndfs/stats.
# - .b2ndfs/log names other users' files: on a mount made by root with
#   allow_other it is root's, mode 0400, and another user (setpriv, uid 2001)
#   gets EACCES reading it while .b2ndfs/stats stays readable; with
#   log_access=all that user reads it too.
# - A foreground daemon started with `&` from a script (which ignores SIGINT
#   for it) stops and unmounts on SIGINT.
# Usage: fuse_logs.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
itest_init logs "$1"
require_fuse

S=$TMP/src
mkdir -p "$S" "$TMP/logs"
"$FIXTURE" write "$S/a.b2nd" --dtype '<f4' --shape 20,30 --chunks 10,10 --blocks 5,5 --seed 3 \
  >/dev/null || {
  fail "b2nd_fixture write"
  exit 1
}

# has FILE PATTERN: FILE has a line matching the extended regex PATTERN.
has() { grep -qE -- "$2" "$1" 2>/dev/null; }

# --- log_file=, foreground --------------------------------------------------
LOG=$TMP/logs/b2ndfs.log
echo "an older line" >"$LOG"
M=$TMP/mnt
mount_fs "$S" "$M" -o log_file="$LOG",allow_other,log_access=all || exit 1
PID=$DAEMON_PID
# The line comes with the kernel's INIT, which may follow the mount by a moment.
wait_until 10 has "$LOG" "info: mounted $S on $M\$" ||
  fail "no 'mounted' line in the log file: $(cat "$LOG")"
check "'mounted' on stderr too" wait_until 5 has "$M.log" "^b2ndfs: info: mounted $S on $M\$"
check "the log file was appended to" has "$LOG" "^an older line\$"
stat "$M/a.b2nd/view/1,2,3" >/dev/null 2>&1 && fail "view/1,2,3 of a 2-D array exists"
check "a refused name in the log file" \
  has "$LOG" "^[0-9T:Z-]+ b2ndfs\[$PID\]: info: .*a.b2nd: view/1,2,3: 3 indices for 2 axes\$"
check ".b2ndfs/log is listed" eval "ls '$M/.b2ndfs' | grep -qx log"
check ".b2ndfs/log has the mount and the refused name" eval \
  "has '$M/.b2ndfs/log' 'Z info: mounted ' && has '$M/.b2ndfs/log' 'view/1,2,3: 3 indices'"
# as_other CMD...: CMD as an unprivileged user of no group of ours.
as_other() { setpriv --reuid=2001 --regid=2001 --clear-groups -- "$@"; }
check "log_access=all: .b2ndfs/log is 0444" eval "[[ \$(stat -c %a '$M/.b2ndfs/log') == 444 ]]"
check "log_access=all: another user reads .b2ndfs/log" eval \
  "as_other cat '$M/.b2ndfs/log' | grep -q 'view/1,2,3: 3 indices'"

# logrotate: move the file away, then SIGHUP.
mv "$LOG" "$LOG.1"
kill -HUP "$PID"
check "SIGHUP opens a new file by the old name" wait_until 10 test -f "$LOG"
check "the daemon still runs after SIGHUP" pid_alive "$PID"
check "and still serves" test -s "$M/a.b2nd/meta.json"
stat "$M/a.b2nd/view/x" >/dev/null 2>&1
check "a message after SIGHUP goes to the new file" has "$LOG" "view/x: 'x' is not an index"
has "$LOG.1" "view/x:" && fail "a message after SIGHUP went to the moved file"

check "unmount" unmount_fs "$M"
check "the daemon ends" exits_within 10 "$PID"
check "'unmounted' in the log file" has "$LOG" "info: unmounted $M\$"
check "'unmounted' on stderr" has "$M.log" "^b2ndfs: info: unmounted $M\$"
grep -q 'secret\|password' "$LOG" && fail "the log file holds a credential word"

# --- a daemon that detaches -------------------------------------------------
M2=$TMP/mnt2
mount_daemon "$S" "$M2" -o allow_other || exit 1
if [[ -S /dev/log ]]; then
  check "nothing on stderr with syslog" test ! -s "$M2.log"
else
  check "one line, before detaching, says where messages go" \
    eval "[[ \$(wc -l <'$M2.log') == 1 ]] && has '$M2.log' '^b2ndfs: no syslog here .*$M2/.b2ndfs/log.*log_file=PATH'"
fi
stat "$M2/a.b2nd/view/99" >/dev/null 2>&1
check ".b2ndfs/log of a detached daemon has its messages" \
  has "$M2/.b2ndfs/log" "info: .*a.b2nd: view/99: index 99 is out of range"
# By default the log is the daemon's user's alone; stats is as it was.
check ".b2ndfs/log is the daemon's, 0400" eval "[[ \$(stat -c '%a %u' '$M2/.b2ndfs/log') == '400 $(id -u)' ]]"
check ".b2ndfs/stats is 0444" eval "[[ \$(stat -c %a '$M2/.b2ndfs/stats') == 444 ]]"
if out=$(as_other cat "$M2/.b2ndfs/log" 2>&1); then
  fail "another user read .b2ndfs/log: $(head -c 200 <<<"$out")"
else
  check "another user gets EACCES on .b2ndfs/log" grep -q "Permission denied" <<<"$out"
fi
check "another user reads .b2ndfs/stats" eval "as_other cat '$M2/.b2ndfs/stats' | grep -q uptime_s"
# README's "Runtime statistics" names every counter .b2ndfs/stats has.
README=$(dirname "${BASH_SOURCE[0]}")/../../README.md
check "README documents every .b2ndfs/stats counter" "$PY" - "$M2/.b2ndfs/stats" "$README" <<'EOF'
import json
import re
import sys

stats = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
section = text[text.index("## Runtime statistics"):]
section = section[:section.index("\n## ", 1)]
named = set(re.findall(r"`([^`]+)`", section))
missing = []
for group, value in stats.items():
    if not isinstance(value, dict):
        if group not in named:
            missing.append(group)
        continue
    for key in value:
        # `group.key`, or `.key` in a row that starts with another of the group.
        if f"{group}.{key}" not in named and f".{key}" not in named and \
                not (key in named and f"`{group}" in section):
            missing.append(f"{group}.{key}")
if missing:
    print("README.md, Runtime statistics: not documented:", ", ".join(missing))
sys.exit(1 if missing else 0)
EOF

# SIGHUP (logrotate's postrotate may signal every b2ndfs) stops none.
PID2=$(daemon_pid "$M2")
# hup_delivered PID: no SIGHUP (bit 1) pending for the process any more.
hup_delivered() {
  local pending
  pending=$(awk '/^ShdPnd/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 0
  [[ -z $pending ]] || (((16#$pending & 1) == 0))
}
kill -HUP "$PID2"
check "SIGHUP was delivered" wait_until 5 hup_delivered "$PID2"
check "SIGHUP leaves a daemon without log_file serving" test -s "$M2/a.b2nd/meta.json"
check "and running" pid_alive "$PID2"
check "and mounted" is_mounted "$M2"
check "unmount the detached daemon" unmount_fs "$M2"

# --- SIGINT to a foreground daemon started with & by a script ---------------
# A non-interactive shell starts `&` jobs with SIGINT ignored; the trap makes
# sure of it. libfuse installs its handler only where SIGINT is not ignored.
M3=$TMP/mnt3
mkdir -p "$M3"
ITEST_MOUNTS+=("$M3")
bash -c 'trap "" INT; "$0" -f "$1" "$2" 2>"$3" & echo $!' "$B2NDFS" "$S" "$M3" "$M3.log" \
  >"$TMP/pid3"
PID3=$(cat "$TMP/pid3")
ITEST_PIDS+=("$PID3")
wait_until 20 is_mounted "$M3" || fail "the &-started daemon did not mount: $(cat "$M3.log")"
kill -INT "$PID3"
check "SIGINT stops a foreground daemon whose SIGINT was ignored" exits_within 10 "$PID3"
check "and it unmounted" wait_until 5 eval "! is_mounted '$M3'"
check "'unmounted' on its stderr" has "$M3.log" "info: unmounted $M3\$"

finish
