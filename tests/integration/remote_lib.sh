# Shared by the remote-source tests (tests/integration/fuse_http.sh,
# fuse_s3.sh): real servers on a free loopback port of this test's own, in the
# foreground with private directories under the test's temp dir, ALWAYS
# stopped (by their pid) when the test exits. Source lib.sh first.
#
# nginx (Debian's), serving directories of this test's temp dir:
#   nginx_start NAME=DIR [NAME=DIR ...]   serves each DIR at /NAME/ (and again
#       at /html/NAME/ with HTML indexes, /slow/NAME/ at 8 KiB/s per response,
#       /flaky/NAME/ answering every Range request with 503, /busy/NAME/ with
#       429 and Retry-After: 2, /weak/NAME/ with
#       weak ETags, /encoded/NAME/ saying Content-Encoding: gzip for .b2nd
#       files, /root-NAME/ from the server's root); sets NGINX_PORT
#       and NGINX_URL (http://127.0.0.1:PORT). Paths named in NGINX_DENY
#       (e.g. "/faults/denied.b2nd") answer 403.
#       With NGINX_TLS_CERT and NGINX_TLS_KEY (PEM files) set, it also serves
#       all of that over TLS, HTTP/2 offered (NGINX_TLS_PORT, NGINX_TLS_URL:
#       https://127.0.0.1:PORT);
#       with NGINX_AUTH_FILE (nginx's auth_basic_user_file), /private/NAME/
#       asks for a password.
#   nginx_stop                          stops it (waits for the exit)
#   nginx_restart                       the same config and port again
#   proxy_start OUT SCRIPT ARGS...       a test proxy in front of it (below)
# Skips the test (exit 77) when no nginx binary is installed.
#
# s3rver 3.x (npm, installed by scripts/setup.sh into .deps/npm):
#   s3rver_start BUCKET...                 serves buckets (created empty) from
#       a private directory; sets S3_PORT and S3_URL (http://127.0.0.1:PORT)
#       (s3rver_begin: the same without waiting until it answers; s3rver_wait)
#   s3_put BUCKET DIR [PREFIX]             uploads every file below DIR as a
#       key (PREFIX + its path relative to DIR), signed with curl --aws-sigv4
#       and s3rver's default key S3RVER
#   s3_put_file BUCKET KEY FILE / s3_delete BUCKET KEY
#   s3rver_freeze / s3rver_thaw            SIGSTOP / SIGCONT: a server that
#       accepts connections and never answers
#   s3rver_stop / s3rver_restart           the same data and port again
# Skips the test (exit 77) when s3rver is not installed; fails it without curl.
#
# through_source DIR (lib.sh's mount_fs, with ITEST_THROUGH=http, s3 or az):
#   DIR served by this test's nginx (started on first use; DIR is linked
#   below its root, so later changes to DIR are served too) or uploaded to
#   its s3rver or Azurite (started by lib.sh's itest_init, through_begin,
#   and waited for on first use; a snapshot: changes after the upload are
#   not); sets THROUGH_SOURCE (the URL to mount) and THROUGH_OPTIONS (b2ndfs
#   options).

NGINX_PID=""
NGINX_PORT=""
NGINX_DIR=""
NGINX_DENY=${NGINX_DENY:-}
NGINX_TLS_CERT=${NGINX_TLS_CERT:-}
NGINX_TLS_KEY=${NGINX_TLS_KEY:-}
NGINX_AUTH_FILE=${NGINX_AUTH_FILE:-}

nginx_binary() {
  local n
  for n in /usr/sbin/nginx "$(command -v nginx 2>/dev/null)"; do
    [[ -n $n && -x $n ]] && { echo "$n"; return 0; }
  done
  return 1
}

# A TCP port nobody listens on now (the kernel picks it).
free_port() {
  "$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

nginx_write_conf() {
  local conf=$NGINX_DIR/nginx.conf spec name dir deny
  {
    echo "daemon off;"
    echo "master_process off;"
    echo "worker_processes 1;"
    echo "pid $NGINX_DIR/nginx.pid;"
    echo "error_log $NGINX_DIR/error.log warn;"
    echo "events { worker_connections 512; }"
    echo "http {"
    echo "  access_log $NGINX_DIR/access.log;"
    for t in client_body proxy fastcgi uwsgi scgi; do echo "  ${t}_temp_path $NGINX_DIR/tmp/$t;"; done
    echo "  default_type application/octet-stream;"
    echo "  keepalive_requests 10000;"
    echo "  map \$uri \$test_encoding { ~\\.b2nd\$ gzip; default \"\"; }"
    echo "  server {"
    echo "    listen 127.0.0.1:$NGINX_PORT;"
    if [[ -n $NGINX_TLS_CERT ]]; then
      echo "    listen 127.0.0.1:$NGINX_TLS_PORT ssl http2;"
      echo "    ssl_certificate $NGINX_TLS_CERT;"
      echo "    ssl_certificate_key $NGINX_TLS_KEY;"
    fi
    echo "    root $NGINX_DIR/empty;"
    for deny in $NGINX_DENY; do
      echo "    location = $deny { return 403; }"
    done
    for spec in "${NGINX_SERVED[@]}"; do
      name=${spec%%=*}
      dir=${spec#*=}
      echo "    location /$name/ { alias $dir/; autoindex on; autoindex_format json; }"
      echo "    location /html/$name/ { alias $dir/; autoindex on; autoindex_format html; }"
      echo "    location /slow/$name/ { alias $dir/; autoindex on; autoindex_format json; limit_rate 8k; }"
      echo "    location /flaky/$name/ { alias $dir/; autoindex on; autoindex_format json;"
      echo "      if (\$http_range) { return 503; } }"
      echo "    location /busy/$name/ { alias $dir/; autoindex on; autoindex_format json;"
      echo "      if (\$http_range) { add_header Retry-After 2 always; return 429; } }"
      # A server whose ETags are weak (W/"..."), and one that says its
      # objects are gzip-encoded (as S3 does for objects stored so).
      # Served from the server's root as well (/root-NAME/), where a
      # directory asked for without its '/' is redirected to it.
      ln -sfn "$dir" "$NGINX_DIR/empty/root-$name"
      echo "    location /root-$name/ { autoindex on; autoindex_format json; }"
      if [[ -n $NGINX_AUTH_FILE ]]; then
        echo "    location /private/$name/ { alias $dir/; autoindex on; autoindex_format json;"
        echo "      auth_basic b2ndfs-test; auth_basic_user_file $NGINX_AUTH_FILE; }"
      fi
      echo "    location /weak/$name/ { alias $dir/; autoindex on; autoindex_format json;"
      echo "      etag off; add_header ETag 'W/\"weak-$name\"'; }"
      echo "    location /encoded/$name/ { alias $dir/; autoindex on; autoindex_format json;"
      echo "      add_header Content-Encoding \$test_encoding; }"
    done
    echo "  }"
    echo "}"
  } >"$conf"
}

nginx_answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$NGINX_URL/" 2>/dev/null) != 000 ]]
}

nginx_launch() {
  "$NGINX_BIN" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" 2>>"$NGINX_DIR/stderr.log" &
  NGINX_PID=$!
  ITEST_PIDS+=("$NGINX_PID")
  # / itself has no index: any answer (403) proves that nginx listens.
  if ! wait_until 10 nginx_answers; then
    fail "nginx did not answer on $NGINX_URL: $(cat "$NGINX_DIR/stderr.log" "$NGINX_DIR/error.log" 2>/dev/null)"
    return 1
  fi
}

nginx_start() {
  NGINX_BIN=$(nginx_binary) || { log "SKIP: nginx is not installed"; exit 77; }
  NGINX_SERVED=("$@")
  NGINX_DIR=$TMP/nginx
  mkdir -p "$NGINX_DIR/tmp" "$NGINX_DIR/empty" "$NGINX_DIR/logs"
  NGINX_PORT=$(free_port)
  NGINX_URL=http://127.0.0.1:$NGINX_PORT
  if [[ -n $NGINX_TLS_CERT ]]; then
    NGINX_TLS_PORT=$(free_port)
    NGINX_TLS_URL=https://127.0.0.1:$NGINX_TLS_PORT
  fi
  nginx_write_conf
  # The EXIT trap stops nginx before lib.sh unmounts and removes $TMP.
  trap 'ITEST_RC=$?; nginx_stop; (exit $ITEST_RC); itest_cleanup' EXIT
  nginx_launch
}

# server_stop PID: stops a server this test started (TERM, and CONT for one
# frozen by SIGSTOP; KILL after 10 s), only while it is still the test's own
# (lib.sh's is_own_helper), and reaps it.
server_stop() {
  if is_own_helper "$1"; then
    kill -TERM "$1" 2>/dev/null
    kill -CONT "$1" 2>/dev/null
    wait_until 10 eval "! kill -0 $1 2>/dev/null" || kill -KILL "$1" 2>/dev/null
  fi
  wait "$1" 2>/dev/null
}

nginx_stop() {
  [[ -n $NGINX_PID ]] || return 0
  server_stop "$NGINX_PID" # a fast shutdown, workers included
  NGINX_PID=""
}

nginx_restart() {
  nginx_stop
  nginx_launch
}

# proxy_start OUT SCRIPT ARGS...: a proxy of the tests (scripts/latency_proxy.py,
# tests/integration/cutting_proxy.py) in the background, stopped at cleanup;
# its output goes to OUT, and it is waited for until it prints "ready".
proxy_start() {
  local out=$1 script=$2
  shift 2
  "$PY" "$script" "$@" >"$out" 2>&1 &
  ITEST_HELPERS+=($!)
  wait_until 10 grep -q ready "$out" || fail "$(basename "$script") did not start: $(cat "$out")"
}

# --- s3rver --------------------------------------------------------------------

S3RVER_PID=""
S3_PORT=""
S3_URL=""
S3_DIR=""
S3_BUCKETS=()
S3_SIGN=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "S3RVER:S3RVER"
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -H "Expect:")

s3rver_binary() {
  local root n
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for n in "${B2NDFS_S3RVER:-}" "$root/.deps/npm/node_modules/.bin/s3rver"; do
    [[ -n $n && -x $n ]] && { echo "$n"; return 0; }
  done
  return 1
}

s3rver_answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$S3_URL/" 2>/dev/null) != 000 ]]
}

s3rver_spawn() {
  local args=(-d "$S3_DIR/data" -a 127.0.0.1 -p "$S3_PORT" --silent) b
  for b in "${S3_BUCKETS[@]}"; do args+=(--configure-bucket "$b"); done
  # s3rver makes its continuation tokens with DES, which Node's OpenSSL 3
  # only has in the legacy provider (without it, truncated listings fail).
  NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--openssl-legacy-provider" \
    "$S3RVER_BIN" "${args[@]}" >>"$S3_DIR/s3rver.log" 2>&1 &
  S3RVER_PID=$!
  ITEST_PIDS+=("$S3RVER_PID")
}

s3rver_wait() {
  if ! wait_until 20 s3rver_answers; then
    fail "s3rver did not answer on $S3_URL: $(cat "$S3_DIR/s3rver.log")"
    return 1
  fi
}

s3rver_launch() { s3rver_spawn && s3rver_wait; }

s3rver_start() { s3rver_begin "$@" && s3rver_wait; }

# s3rver_begin BUCKET...: s3rver_start without waiting until it answers
# (s3rver_wait does).
s3rver_begin() {
  S3RVER_BIN=$(s3rver_binary) || {
    log "SKIP: s3rver is not installed (scripts/setup.sh installs it into .deps/npm)"
    exit 77
  }
  # The uploads and the readiness probe use curl: without it the server
  # would only seem not to answer.
  command -v curl >/dev/null || {
    fail "curl is missing (scripts/setup.sh installs it)"
    finish
  }
  S3_BUCKETS=("$@")
  S3_DIR=$TMP/s3rver
  mkdir -p "$S3_DIR/data"
  S3_PORT=$(free_port)
  S3_URL=http://127.0.0.1:$S3_PORT
  # The EXIT trap stops s3rver before lib.sh unmounts and removes $TMP.
  trap 'ITEST_RC=$?; s3rver_stop; (exit $ITEST_RC); itest_cleanup' EXIT
  s3rver_spawn
}

s3rver_freeze() { kill -STOP "$S3RVER_PID"; }
s3rver_thaw() { kill -CONT "$S3RVER_PID" 2>/dev/null; }

s3rver_stop() {
  [[ -n $S3RVER_PID ]] || return 0
  server_stop "$S3RVER_PID"
  S3RVER_PID=""
}

s3rver_restart() {
  s3rver_stop
  s3rver_launch
}

# The URL of KEY in BUCKET (each path segment percent-encoded).
s3_key_url() {
  local key=$2 enc="" c i
  local LC_ALL=C  # byte by byte
  for ((i = 0; i < ${#key}; i++)); do
    c=${key:i:1}
    case $c in
      [A-Za-z0-9._~/-]) enc+=$c ;;
      *) enc+=$(printf '%%%02X' "'$c") ;;
    esac
  done
  echo "$S3_URL/$1/$enc"
}

s3_put_file() {
  local code
  code=$(curl -s -o "$S3_DIR/put.out" -w '%{http_code}' "${S3_SIGN[@]}" -T "$3" "$(s3_key_url "$1" "$2")")
  [[ $code == 200 ]] || { fail "PUT $1/$2: HTTP $code $(cat "$S3_DIR/put.out")"; return 1; }
}

s3_delete() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' "${S3_SIGN[@]}" -X DELETE "$(s3_key_url "$1" "$2")")
  [[ $code == 204 || $code == 200 ]] || { fail "DELETE $1/$2: HTTP $code"; return 1; }
}

# One curl for the whole tree (a config file of upload-file/url pairs, one
# kept-alive connection).
s3_put() {
  local bucket=$1 dir=$2 prefix=${3:-} conf=$S3_DIR/put.$1.conf rel n=0 codes
  : >"$conf"
  while IFS= read -r -d '' rel; do
    rel=${rel#./}
    printf 'upload-file = "%s"\nurl = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
      "$dir/$rel" "$(s3_key_url "$bucket" "$prefix$rel")" >>"$conf"
    n=$((n + 1))
  done < <(cd "$dir" && find . -type f -print0 | sort -z)
  # An empty directory has no key to hold it: a zero-byte "DIR/" key, as
  # S3 consoles make for a folder, stands for it.
  while IFS= read -r -d '' rel; do
    rel=${rel#./}
    printf 'upload-file = "/dev/null"\nurl = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
      "$(s3_key_url "$bucket" "$prefix$rel/")" >>"$conf"
    n=$((n + 1))
  done < <(cd "$dir" && find . -mindepth 1 -type d -empty -print0 | sort -z)
  codes=$(curl -s "${S3_SIGN[@]}" --config "$conf")
  if [[ $(grep -c '^200$' <<<"$codes") -ne $n ]]; then
    fail "uploading $dir to $bucket: $(sort <<<"$codes" | uniq -c | tr '\n' ' ')"
    return 1
  fi
  log "uploaded $n objects from $dir to s3://$bucket/$prefix"
}

# --- the same scripts through a remote source -----------------------------------

THROUGH_COUNT=0
THROUGH_READY=""

# through_begin (lib.sh's itest_init, with ITEST_THROUGH=s3 or az): starts
# this test's s3rver or Azurite at once, without waiting for it: node takes
# seconds to start one, which it does while the script makes its files.
# through_source waits for it when it is first needed.
through_begin() {
  case $ITEST_THROUGH in
    s3) s3rver_begin through ;;
    az) azurite_begin ;;
  esac
}

through_source() {
  local dir=$1 name
  THROUGH_COUNT=$((THROUGH_COUNT + 1))
  name=src$THROUGH_COUNT
  case $ITEST_THROUGH in
    http)
      if [[ -z $NGINX_PID ]]; then
        mkdir -p "$TMP/through"
        nginx_start "through=$TMP/through" || return 1
      fi
      ln -s "$(realpath "$dir")" "$TMP/through/$name" || return 1
      THROUGH_SOURCE=$NGINX_URL/through/$name/
      THROUGH_OPTIONS=()
      ;;
    s3)
      if [[ -z $THROUGH_READY ]]; then
        if [[ -z $S3RVER_PID ]]; then s3rver_begin through || return 1; fi
        s3rver_wait || return 1
        THROUGH_READY=1
        # s3rver's key, and nothing of the user's own AWS set-up.
        export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
        export AWS_SHARED_CREDENTIALS_FILE=$TMP/no-such-credentials AWS_CONFIG_FILE=$TMP/no-such-config
        unset AWS_SESSION_TOKEN AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION
      fi
      s3_put through "$dir" "$name/" || return 1
      THROUGH_SOURCE=s3://through/$name
      THROUGH_OPTIONS=(-o "endpoint=$S3_URL")
      ;;
    az) through_azure "$dir" "$name" || return 1 ;;
  esac
  log "mounting $dir through $THROUGH_SOURCE"
}

# --- Azurite (the az:// tests) ----------------------------------------------------
#
# Azurite's blob service (npm, installed by scripts/setup.sh into .deps/npm),
# which checks SharedKey and SAS signatures with its well-known account
# devstoreaccount1:
#   azurite_start                          serves a private directory of this
#       test's own on a free loopback port; sets AZ_PORT and AZ_URL (the
#       account's blob service, http://127.0.0.1:PORT/devstoreaccount1)
#       (azurite_begin: the same without waiting until it answers; azurite_wait)
#   az_container NAME [public]             creates a container (public: anonymous
#       reads and listings)
#   az_put CONTAINER DIR [PREFIX]          uploads every file below DIR as a blob
#       (PREFIX + its path relative to DIR; an empty directory as a "PATH/" blob)
#   az_put_file CONTAINER BLOB FILE / az_delete CONTAINER BLOB
#   az_sas PERMISSIONS                     prints an account SAS token ("rl")
#   azurite_stop / azurite_restart         the same data and port again
# The uploads are signed by tests/integration/azurite_put.py (Python's hmac),
# not by the code under test. Skips the test (exit 77) when Azurite is not
# installed.

AZURITE_PID=""
AZ_PORT=""
AZ_URL=""
AZ_DIR=""
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

azurite_binary() {
  local root n
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  for n in "${B2NDFS_AZURITE:-}" "$root/.deps/npm/node_modules/.bin/azurite-blob"; do
    [[ -n $n && -x $n ]] && { echo "$n"; return 0; }
  done
  return 1
}

azurite_answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$AZ_URL/" 2>/dev/null) != 000 ]]
}

azurite_spawn() {
  "$AZURITE_BIN" --loose --skipApiVersionCheck --disableTelemetry --silent \
    --blobHost 127.0.0.1 --blobPort "$AZ_PORT" --location "$AZ_DIR/data" \
    >>"$AZ_DIR/azurite.log" 2>&1 &
  AZURITE_PID=$!
  ITEST_PIDS+=("$AZURITE_PID")
}

azurite_wait() {
  if ! wait_until 20 azurite_answers; then
    fail "Azurite did not answer on $AZ_URL: $(cat "$AZ_DIR/azurite.log")"
    return 1
  fi
}

azurite_launch() { azurite_spawn && azurite_wait; }

azurite_start() { azurite_begin && azurite_wait; }

# azurite_begin: azurite_start without waiting until it answers
# (azurite_wait does).
azurite_begin() {
  AZURITE_BIN=$(azurite_binary) || {
    log "SKIP: Azurite is not installed (scripts/setup.sh installs it into .deps/npm)"
    exit 77
  }
  command -v curl >/dev/null || {
    fail "curl is missing (scripts/setup.sh installs it)"
    finish
  }
  AZ_DIR=$TMP/azurite
  mkdir -p "$AZ_DIR/data"
  AZ_PORT=$(free_port)
  AZ_URL=http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT
  # The EXIT trap stops Azurite before lib.sh unmounts and removes $TMP.
  trap 'ITEST_RC=$?; azurite_stop; (exit $ITEST_RC); itest_cleanup' EXIT
  azurite_spawn
}

azurite_stop() {
  [[ -n $AZURITE_PID ]] || return 0
  server_stop "$AZURITE_PID"
  AZURITE_PID=""
}

azurite_restart() {
  azurite_stop
  azurite_launch
}

az_tool() {
  AZURITE_KEY=$AZ_KEY "$PY" "$(dirname "${BASH_SOURCE[0]}")/azurite_put.py" "$AZ_URL" "$AZ_ACCOUNT" "$@"
}

az_container() { az_tool container "$@" >/dev/null || { fail "creating container $1"; return 1; }; }
az_put_file() { az_tool put-file "$@" || { fail "PUT $1/$2"; return 1; }; }
az_delete() { az_tool delete "$@" || { fail "DELETE $1/$2"; return 1; }; }
az_sas() { az_tool sas "$1"; }

az_put() {
  local n
  n=$(az_tool put "$1" "${3:-}" "$2") || { fail "uploading $2 to $1"; return 1; }
  log "uploaded $n blobs from $2 to az://$AZ_ACCOUNT/$1/${3:-}"
}

# through_source's az case: DIR uploaded to container "through" (a snapshot),
# mounted with SharedKey from AZURE_STORAGE_KEY.
through_azure() {
  local dir=$1 name=$2
  if [[ -z $THROUGH_READY ]]; then
    if [[ -z $AZURITE_PID ]]; then azurite_begin || return 1; fi
    azurite_wait || return 1
    az_container through || return 1
    THROUGH_READY=1
    # Azurite's key, and nothing of the user's own Azure set-up.
    export AZURE_STORAGE_KEY=$AZ_KEY AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT
    unset AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_CONNECTION_STRING
  fi
  az_put through "$dir" "$name/" || return 1
  THROUGH_SOURCE=az://$AZ_ACCOUNT/through/$name
  THROUGH_OPTIONS=(-o "endpoint=$AZ_URL")
}
