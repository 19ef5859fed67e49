#!/usr/bin/env bash
# fuse.remote_costs: what each operation on a remote mount costs the server,
# counted from the servers' own logs (nginx's access log: $request, $status,
# $body_bytes_sent, $http_range; s3rver's request log): a web-server
# directory of 5,000 small containers and an S3 prefix of 10,000 keys
# (copies of one small container), plus one large container each. Asserts,
# per operation: `ls -l` of the directory, `stat` of one container,
# meta.json of a small one (at most one GET, no chunk heads) and of a large
# one (its frame's ends in one round trip), a slice, a re-read within
# revalidate= (no request) and after it (revalidation only, no data), and
# meta.json of 100 small containers (at most 2 requests each). A directory
# whose name is looked up again after revalidate= is asked about as one
# (http: a HEAD of its index; s3: a listing of at most two keys below it),
# never by listing its parent: counted apart, at most one per step.
# The re-read after revalidate= runs on a second mount of the same source
# that took the same steps with revalidate=1 (its own log: nginx location
# /e/, a second logging proxy), while the first one's answers age for the
# pipeline; the s3 steps run while the http mount's answers age (each
# server keeps its own log, so the counts do not mix).
# bench/REMOTE.md and docs/remote.md have the numbers.
# Usage: fuse_remote_costs.sh BUILD_DIR
#   B2NDFS_COSTS_BIN=PATH measures another build's daemon (e.g. the code
#   before this test) with the same script; COSTS_STRICT=0 then logs the
#   numbers without failing on them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init remote_costs "$1"
require_fuse
B2NDFS=${B2NDFS_COSTS_BIN:-$B2NDFS}
STRICT=${COSTS_STRICT:-1}
N_HTTP=${COSTS_HTTP_N:-5000}
N_S3=${COSTS_S3_N:-10000}
# Long enough that the steps "within revalidate=" stay within it on a busy
# machine (no timing is asserted: only what was asked of the servers).
REVAL=10
REVAL_OPT=revalidate=$REVAL,
# The second mount's, for the re-read after revalidate=: no step has to stay
# within it, so it may be short (what it saves is waiting).
REVAL_SHORT=1
REVAL_SHORT_OPT=revalidate=$REVAL_SHORT,
# A daemon from before revalidate= existed reused answers for 1 s.
[[ -n ${B2NDFS_COSTS_BIN:-} ]] && { REVAL=1; REVAL_OPT=; REVAL_SHORT_OPT=; }
X=$TMP/x
mkdir -p "$X"

costs_fail() { if ((STRICT)); then fail "$@"; else log "(not strict) $*"; fi; }
# within_revalidate T0 WHAT: whether less than revalidate= has passed since
# T0 (now), so that a re-read must be answered from memory; when the machine
# was so busy that it has not, says so (what the mount must then do is a
# revalidation, checked on its own below).
within_revalidate() {
  within "$REVAL" "$1" && return 0
  log "not checked: $2 came $(elapsed "$1") s after the first read, past revalidate=$REVAL"
  return 1
}

# wait_past T0 SECONDS: sleeps until SECONDS have passed since T0 (now).
wait_past() {
  sleep "$(awk -v a="$1" -v b="$(now)" -v s="$2" 'BEGIN { d = a + s - b; printf "%.2f", (d > 0 ? d : 0) }')"
}

# log_settled FILE: returns once FILE (a server's request log, written after
# each answer) has not grown for 0.3 s, or after 3 s.
log_settled() {
  local a b i still=0
  a=$(wc -l <"$1")
  for ((i = 0; i < 30; i++)); do
    sleep 0.1
    b=$(wc -l <"$1")
    if [[ $a == "$b" ]]; then still=$((still + 1)); else still=0; fi
    ((still >= 3)) && return 0
    a=$b
  done
}

# A small container (4 chunks, so that chunk heads would be 4 requests) and
# a large one (over the 1 MiB fetched whole; 3 chunks of 8^3 blocks).
"$FIXTURE" write "$X/small.b2nd" --shape 200,200 --chunks 100,100 --blocks 25,25 \
  --dtype "<f8" >/dev/null || fail "b2nd_fixture write (small) failed"
"$FIXTURE" write "$X/big.b2nd" --shape 64,64,192 --chunks 64,64,64 --blocks 8,8,8 \
  --dtype "<f4" --ref "$X/big_ref.b2nd" >/dev/null || fail "b2nd_fixture write (big) failed"
SMALL=$(stat -c %s "$X/small.b2nd")
BIG=$(stat -c %s "$X/big.b2nd")
log "small container: $SMALL bytes; large: $BIG bytes"
ref_slice "$X/big_ref.b2nd" "0:64,0:64,37" "$X/want_slice"

# --- nginx, with access logs of its own ----------------------------------------
W=$TMP/web
mkdir -p "$W/many"
# Hard links, made by one process (a fork per link took 27 s).
"$PY" -c 'import os, sys
src, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n): os.link(src, "%s/c%05d.b2nd" % (d, i))' "$X/small.b2nd" "$W/many" "$N_HTTP"
cp "$X/big.b2nd" "$W/big.b2nd"
NGINX_BIN=$(nginx_binary) || { log "SKIP: nginx is not installed"; exit 77; }
NGINX_DIR=$TMP/nginx
mkdir -p "$NGINX_DIR/tmp"
NGINX_PORT=$(free_port)
NGINX_URL=http://127.0.0.1:$NGINX_PORT
# /d/ for the first mount, /e/ (the same directory) for the second, each
# with its own log.
ALOG_D=$NGINX_DIR/access.log
ALOG_E=$NGINX_DIR/access_e.log
cat >"$NGINX_DIR/nginx.conf" <<EOC
daemon off;
master_process off;
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log warn;
events { worker_connections 512; }
http {
  log_format costs '\$request|\$status|\$body_bytes_sent|\$http_range';
  access_log $ALOG_D costs;
  client_body_temp_path $NGINX_DIR/tmp/body;
  proxy_temp_path $NGINX_DIR/tmp/proxy;
  fastcgi_temp_path $NGINX_DIR/tmp/fastcgi;
  uwsgi_temp_path $NGINX_DIR/tmp/uwsgi;
  scgi_temp_path $NGINX_DIR/tmp/scgi;
  default_type application/octet-stream;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $NGINX_DIR;
    location /d/ { alias $W/; autoindex on; autoindex_format json; }
    location /e/ { alias $W/; autoindex on; autoindex_format json; access_log $ALOG_E costs; }
  }
}
EOC
: >"$ALOG_E"
trap 'ITEST_RC=$?; nginx_stop; s3rver_stop; (exit $ITEST_RC); itest_cleanup' EXIT
nginx_launch || exit 1

# mark_http; ... ; cost_http NAME: the requests in $ALOG since the mark, as
# "REQUESTS BYTES HEADS GETS RANGED LISTINGS" in COST (and logged).
ALOG=$ALOG_D
mark_http() { MARK=$(wc -l <"$ALOG"); }
cost_http() {
  log_settled "$ALOG" # nginx writes its log line after the answer
  COST=$(tail -n +$((MARK + 1)) "$ALOG" | awk -F'|' '
    { n++; b += $3
      if ($1 ~ /^HEAD .*\/ HTTP/) d++
      else if ($1 ~ /^HEAD /) h++
      else if ($1 ~ /\/many\/ HTTP/) l++
      else if ($1 ~ /\/ HTTP/) o++
      else if ($4 != "" && $4 != "-") r++
      else g++ }
    END { printf "%d %d %d %d %d %d %d %d", n, b, h, g + r, r, l, o, d }')
  read -r C_REQ C_BYTES C_HEAD C_GET C_RANGED C_LIST C_ROOT C_DIR <<<"$COST"
  log "http $1: $C_REQ requests ($C_HEAD HEAD, $C_GET GET of which $C_RANGED ranged, $C_LIST listings of many/, $C_ROOT of the root, $C_DIR of a directory's name), $C_BYTES bytes"
}

# first_reads MNT: the reads the first mount counts one by one below (ls -l,
# stat, meta.json and data of a small container, meta.json and a slice of
# the large one, the re-read), not counted: the second mount takes them so
# that it holds what the first one holds when its re-read is counted.
first_reads() {
  ls -l "$1/many" >/dev/null && stat "$1/many/c00007.b2nd" >/dev/null &&
    cat "$1/many/c00011.b2nd/meta.json" "$1/many/c00011.b2nd/data" "$1/big.b2nd/meta.json" \
      "$1/big.b2nd/slices/2/37" "$1/many/c00011.b2nd/meta.json" "$1/big.b2nd/slices/2/37" >/dev/null
}

M=$TMP/mnt_http
http_first() {
  mount_fs "$NGINX_URL/d/" "$M" -o "${REVAL_OPT}cache_size=64M" || exit 1
  mark_http
  ls -l "$M/many" >/dev/null || fail "ls -l of $N_HTTP containers over http"
  cost_http "ls -l of $N_HTTP containers"
  ((C_REQ <= 1 && C_HEAD == 0)) || costs_fail "ls -l made $C_REQ requests, $C_HEAD HEADs (want the listing only)"
  LISTING=$C_BYTES

  mark_http
  stat "$M/many/c00007.b2nd" >/dev/null || fail "stat of a container"
  cost_http "stat of one container"
  ((C_GET == 0 && C_LIST == 0)) || costs_fail "stat of a container made $C_GET GETs and $C_LIST listings"

  mark_http
  FIRST_READ=$(now)
  cat "$M/many/c00011.b2nd/meta.json" >/dev/null || fail "meta.json of a small container"
  cost_http "meta.json of a small container"
  ((C_GET <= 1 && C_LIST == 0 && C_BYTES <= SMALL)) ||
    costs_fail "meta.json of a $SMALL-byte container: $C_GET GETs, $C_LIST listings, $C_BYTES bytes (want 1 GET of at most its bytes)"
  mark_http
  cat "$M/many/c00011.b2nd/data" >/dev/null || fail "data of a small container"
  cost_http "data of the same small container"
  ((C_REQ == 0)) || costs_fail "its data after meta.json made $C_REQ requests (want 0: fetched whole)"

  mark_http
  cat "$M/big.b2nd/meta.json" >/dev/null || fail "meta.json of the large container"
  cost_http "meta.json of a large container"
  ((C_GET <= 2 && C_BYTES <= 16384 + 65536)) ||
    costs_fail "meta.json of the large container: $C_GET GETs, $C_BYTES bytes (want its frame's ends in one round trip, no chunk heads)"

  mark_http
  cat "$M/big.b2nd/slices/2/37" >"$X/got_slice" || fail "slice of the large container"
  cost_http "last-axis slice of a large container"
  cmp -s "$X/got_slice" "$X/want_slice" || fail "slices/2/37 over http differs from c-blosc2's"
  ((C_REQ <= 16)) || costs_fail "the slice made $C_REQ requests (want <= 16)"

  mark_http
  cat "$M/many/c00011.b2nd/meta.json" "$M/big.b2nd/slices/2/37" >/dev/null || fail "re-read"
  cost_http "re-read within revalidate="
  if within_revalidate "$FIRST_READ" "the re-read"; then
    ((C_REQ == 0)) || costs_fail "a re-read within revalidate= made $C_REQ requests"
  fi
  HTTP_LAST=$(now)
}

# after_revalidate PROTO SOURCE LOG [OPTIONS,]: the re-read after
# revalidate=, on a second mount of SOURCE (PROTO http or s3) that took the
# same first steps with revalidate=1, its requests in a log of its own (LOG:
# nginx's location /e/, or the second proxy in front of s3rver).
after_revalidate() {
  local proto=$1 src=$2 log=$3 opts=${4:-} mb=$TMP/mnt_${1}_short
  mount_fs "$src" "$mb" -o "${opts}${REVAL_SHORT_OPT}cache_size=64M" || exit 1
  first_reads "$mb" || fail "the first reads on $mb"
  log_settled "$log"
  sleep $((REVAL_SHORT + 1))
  case $proto in
    http) ALOG=$log && mark_http ;;
    s3) SLOG=$log && mark_s3 ;;
  esac
  cat "$mb/many/c00011.b2nd/meta.json" "$mb/big.b2nd/slices/2/37" >/dev/null ||
    fail "re-read after revalidate= ($proto)"
  "cost_$proto" "re-read after revalidate="
  case $proto in
    http) ALOG=$ALOG_D ;;
    s3) SLOG=$SLOG_D ;;
  esac
  ((C_GET == 0 && C_LIST == 0 && C_HEAD <= 2 && C_DIR <= 1)) ||
    costs_fail "a re-read after revalidate= ($proto) made $C_HEAD HEADs, $C_GET GETs, $C_LIST listings of many/ and $C_DIR directory checks (want a HEAD of each, and of many/)"
  unmount_fs "$mb"
}

# The pipeline of the issue: `ls`, then meta.json of 100 containers one by
# one, once the first mount's answers are older than revalidate=.
http_pipeline() {
  wait_past "$HTTP_LAST" $((REVAL + 1))
  mark_http
  ls "$M/many" >/dev/null
  for ((i = 100; i < 200; i++)); do
    cat "$M/many/$(printf 'c%05d.b2nd' "$i")/meta.json" >/dev/null || fail "meta.json of c$i"
    sleep 0.03
  done
  cost_http "ls, then meta.json of 100 small containers"
  per=$(awk -v r="$C_REQ" 'BEGIN { printf "%.2f", (r - 1) / 100 }')
  ratio=$(awk -v b="$C_BYTES" -v l="$LISTING" -v s="$SMALL" 'BEGIN { printf "%.2f", (b - l) / (100 * s) }')
  log "http: $per requests per container, $ratio x the containers' bytes (the listing aside)"
  ((C_REQ - C_ROOT - C_DIR <= 201 && C_LIST <= 1 && C_DIR <= 1)) ||
    costs_fail "meta.json of 100 containers: $C_REQ requests, $C_LIST listings (want <= 2 a container, the directory listed once)"
  unmount_fs "$M"
}

# --- S3 (s3rver), N_S3 keys written into its store before it starts -----------
s3_start() {
  S3RVER_BIN=$(s3rver_binary) || { log "SKIP (s3 part): s3rver is not installed"; return 1; }
  S3_DIR=$TMP/s3rver
  B=$S3_DIR/data/costs
  mkdir -p "$B/many"
  md5=$(md5sum "$X/small.b2nd" | cut -d' ' -f1)
  printf '%s' "$md5" >"$X/small.md5"
  "$PY" -c 'import os, sys
src, md5, d, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(n):
    os.link(src, "%s/c%05d.b2nd._S3rver_object" % (d, i))
    os.link(md5, "%s/c%05d.b2nd._S3rver_object.md5" % (d, i))' \
    "$X/small.b2nd" "$X/small.md5" "$B/many" "$N_S3"
  cp "$X/big.b2nd" "$B/big.b2nd._S3rver_object"
  S3_PORT=$(free_port)
  S3_URL=http://127.0.0.1:$S3_PORT
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--openssl-legacy-provider" \
    "$S3RVER_BIN" -d "$S3_DIR/data" -a 127.0.0.1 -p "$S3_PORT" --silent >>"$S3_DIR/s3rver.log" 2>&1 &
  S3RVER_PID=$!
  ITEST_PIDS+=("$S3RVER_PID")
  wait_until 20 s3rver_answers || { fail "s3rver did not answer: $(tail "$S3_DIR/s3rver.log")"; finish; }
  # s3rver's own log names no method or range: a logging proxy in front of it
  # keeps one as nginx's (logging_proxy.py); a second one, with its own log,
  # for the second mount.
  SLOG_D=$S3_DIR/access.log
  SLOG_E=$S3_DIR/access_e.log
  : >"$SLOG_D"
  : >"$SLOG_E"
  PROXY_PORT=$(free_port)
  proxy_start "$S3_DIR/proxy.out" "$(dirname "${BASH_SOURCE[0]}")/logging_proxy.py" \
    "$PROXY_PORT" "$S3_PORT" "$SLOG_D"
  PROXY_PORT_E=$(free_port)
  proxy_start "$S3_DIR/proxy_e.out" "$(dirname "${BASH_SOURCE[0]}")/logging_proxy.py" \
    "$PROXY_PORT_E" "$S3_PORT" "$SLOG_E"
  SLOG=$SLOG_D
  export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
  export AWS_SHARED_CREDENTIALS_FILE=$TMP/no-such-credentials AWS_CONFIG_FILE=$TMP/no-such-config
  unset AWS_PROFILE AWS_SESSION_TOKEN
}

mark_s3() { SMARK=$(wc -l <"$SLOG"); }
cost_s3() {
  log_settled "$SLOG"
  COST=$(tail -n +$((SMARK + 1)) "$SLOG" | awk -F'|' '
    { n++; b += $3
      if ($1 ~ /^HEAD /) h++
      else if ($1 ~ /[?&]max-keys=/) d++
      else if ($1 ~ /[?&]list-type=.*prefix=many/) l++
      else if ($1 ~ /[?&]list-type=/) o++
      else g++ }
    END { printf "%d %d %d %d %d %d %d", n, b, h, g, l, o, d }')
  read -r C_REQ C_BYTES C_HEAD C_GET C_LIST C_ROOT C_DIR <<<"$COST"
  log "s3 $1: $C_REQ requests ($C_HEAD HEAD, $C_GET GET, $C_LIST LIST of many/, $C_ROOT of the root, $C_DIR of a directory's name), $C_BYTES bytes"
}

MS=$TMP/mnt_s3
pages=$(((N_S3 + 999) / 1000))
s3_first() {
  mark_s3
  mount_fs s3://costs/ "$MS" -o "endpoint=http://127.0.0.1:$PROXY_PORT,${REVAL_OPT}cache_size=64M" || exit 1
  cost_s3 "mount"
  mark_s3
  ls -l "$MS/many" >/dev/null || fail "ls -l of $N_S3 keys over s3"
  cost_s3 "ls -l of $N_S3 containers"
  ((C_HEAD == 0 && C_GET == 0 && C_LIST <= pages)) ||
    costs_fail "ls -l of $N_S3 keys: $C_HEAD HEAD, $C_GET GET, $C_LIST LIST (want $pages LIST pages only)"

  mark_s3
  stat "$MS/many/c00007.b2nd" >/dev/null || fail "stat of a container (s3)"
  cost_s3 "stat of one container"
  # (Here and below, the root's listing, a few hundred bytes where many/ is a
  # directory, is asked again once it is older than revalidate=: not counted.)
  ((C_REQ - C_ROOT == 0)) || costs_fail "stat of a container made $C_REQ requests (want 0: the listing has its attributes)"

  mark_s3
  FIRST_READ=$(now)
  cat "$MS/many/c00011.b2nd/meta.json" >/dev/null || fail "meta.json of a small container (s3)"
  cost_s3 "meta.json of a small container"
  ((C_REQ - C_ROOT <= 1)) || costs_fail "meta.json of a small container: $C_REQ requests (want 1 GET)"

  mark_s3
  cat "$MS/big.b2nd/meta.json" >/dev/null || fail "meta.json of the large container (s3)"
  cost_s3 "meta.json of a large container"
  ((C_GET <= 2 && C_BYTES <= 16384 + 65536)) ||
    costs_fail "meta.json of the large container: $C_GET GET, $C_BYTES bytes (want its 2 frame ends, no chunk heads)"

  mark_s3
  cat "$MS/big.b2nd/slices/2/37" >"$X/got_slice_s3" || fail "slice (s3)"
  cost_s3 "last-axis slice of a large container"
  cmp -s "$X/got_slice_s3" "$X/want_slice" || fail "slices/2/37 over s3 differs from c-blosc2's"

  mark_s3
  cat "$MS/many/c00011.b2nd/meta.json" "$MS/big.b2nd/slices/2/37" >/dev/null || fail "re-read (s3)"
  cost_s3 "re-read within revalidate="
  if within_revalidate "$FIRST_READ" "the re-read (s3)"; then
    ((C_REQ - C_ROOT == 0)) || costs_fail "a re-read within revalidate= made $C_REQ requests"
  fi
  S3_LAST=$(now)
}


s3_pipeline() {
  wait_past "$S3_LAST" $((REVAL + 1))
  mark_s3
  ls "$MS/many" >/dev/null
  for ((i = 100; i < 200; i++)); do
    cat "$MS/many/$(printf 'c%05d.b2nd' "$i")/meta.json" >/dev/null || fail "meta.json of c$i (s3)"
  done
  cost_s3 "ls, then meta.json of 100 small containers"
  # (A name looked up once its listing is older than revalidate= costs a HEAD.)
  ((C_GET <= 100 && C_HEAD + C_GET <= 200 && C_LIST <= pages && C_DIR <= 1)) ||
    costs_fail "meta.json of 100 containers over s3: $C_HEAD HEAD, $C_GET GET, $C_LIST LIST pages (want 1 GET each, a HEAD at most besides, the listing once)"
  unmount_fs "$MS"
}

# The steps of each protocol in their order; the other protocol's run while
# one's answers age past revalidate=.
http_first
after_revalidate http "$NGINX_URL/e/" "$ALOG_E"
if s3_start; then
  s3_first
  http_pipeline
  after_revalidate s3 s3://costs/ "$SLOG_E" "endpoint=http://127.0.0.1:$PROXY_PORT_E,"
  s3_pipeline
else
  http_pipeline
fi
finish
