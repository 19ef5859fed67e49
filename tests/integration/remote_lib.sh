# Shared by the remote-source tests (tests/integration/fuse_http.sh): a real
# nginx (Debian's) serving directories of this test's temp dir on a free
# loopback port, started in the foreground with a private prefix and config,
# and ALWAYS stopped (by its pid) when the test exits. Source lib.sh first.
#
#   nginx_start NAME=DIR [NAME=DIR ...]   serves each DIR at /NAME/ (and again
#       at /html/NAME/ with HTML indexes, /slow/NAME/ at 8 KiB/s per response, and
#       /flaky/NAME/ answering every Range request with 503); sets NGINX_PORT
#       and NGINX_URL (http://127.0.0.1:PORT). Paths named in NGINX_DENY
#       (e.g. "/faults/denied.b2nd") answer 403.
#   nginx_stop                          stops it (waits for the exit)
#   nginx_restart                       the same config and port again
# Skips the test (exit 77) when no nginx binary is installed.

NGINX_PID=""
NGINX_PORT=""
NGINX_DIR=""
NGINX_DENY=${NGINX_DENY:-}

nginx_binary() {
  local n
  for n in /usr/sbin/nginx "$(command -v nginx 2>/dev/null)"; do
    [[ -n $n && -x $n ]] && { echo "$n"; return 0; }
  done
  return 1
}

# A TCP port nobody listens on now (the kernel picks it).
free_port() {
  python3 -c 'import socket
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
    echo "  server {"
    echo "    listen 127.0.0.1:$NGINX_PORT;"
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
  nginx_write_conf
  # The EXIT trap stops nginx before lib.sh unmounts and removes $TMP.
  trap 'ITEST_RC=$?; nginx_stop; (exit $ITEST_RC); itest_cleanup' EXIT
  nginx_launch
}

nginx_stop() {
  [[ -n $NGINX_PID ]] || return 0
  if kill -0 "$NGINX_PID" 2>/dev/null; then
    kill -TERM "$NGINX_PID" 2>/dev/null  # fast shutdown, workers included
    wait_until 10 eval "! kill -0 $NGINX_PID 2>/dev/null" || kill -KILL "$NGINX_PID" 2>/dev/null
  fi
  wait "$NGINX_PID" 2>/dev/null
  NGINX_PID=""
}

nginx_restart() {
  nginx_stop
  nginx_launch
}
