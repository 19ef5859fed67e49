#!/usr/bin/env bash
# fuse.http_trust: whom a remote source trusts, and what it keeps to itself.
# nginx serves the fixture set over TLS (HTTP/2 offered, HTTP/1.1 taken)
# with a certificate from a CA this test makes: the mount is refused by
# default (certificates are verified; the error says so) and reads
# byte-exact with ca_file=CA. A location that asks
# for a password (HTTP basic authentication) is refused without one (EACCES),
# read with credentials=FILE (.netrc; refused when every user may read it)
# and with the password in the URL, which then shows nowhere: not in the
# process list, the mount table, the log, meta.json or .b2ndfs/stats.
# Redirects: an https source follows a redirect to another https server
# (byte-exact), never one to plain http (the read fails, naming the refused
# redirect, and the http server gets no request); a password given for one
# https server is not sent to the server a redirect names (401 there).
# Usage: fuse_http_trust.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init http_trust "$1"
require_fuse
command -v openssl >/dev/null || {
  fail "openssl is missing (scripts/setup.sh installs it)"
  finish
}

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
X=$TMP/x
T=$TMP/tls
mkdir -p "$X" "$T"
SECRET=s3cret-$RANDOM$RANDOM

# A CA of this test's own, and a certificate it signs for 127.0.0.1.
{
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 \
    -subj "/CN=b2ndfs test CA" &&
    openssl req -newkey rsa:2048 -nodes -keyout "$T/server.key" -out "$T/server.csr" \
      -subj "/CN=127.0.0.1" &&
    printf 'subjectAltName=IP:127.0.0.1\n' >"$T/ext" &&
    openssl x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
      -out "$T/server.pem" -days 2 -extfile "$T/ext"
} >"$T/openssl.log" 2>&1 || {
  fail "openssl could not make the test certificates: $(tail -5 "$T/openssl.log")"
  finish
}
printf 'reader:{PLAIN}%s\n' "$SECRET" >"$T/users"
NGINX_TLS_CERT=$T/server.pem NGINX_TLS_KEY=$T/server.key NGINX_AUTH_FILE=$T/users \
  nginx_start fx="$S" || exit 1
log "nginx on $NGINX_URL and $NGINX_TLS_URL"
want_data "$R" ndim/3d_f4.b2nd "$X/want_3d"

# mount_refused WHAT LOGFILE SOURCE [options...]: b2ndfs must exit non-zero
# without mounting; its error goes to LOGFILE.
mount_refused() {
  local what=$1 err=$2 mnt=$TMP/never
  shift 2
  mkdir -p "$mnt"
  if timeout 60 "$B2NDFS" "$@" "$mnt" 2>"$err"; then
    ITEST_MOUNTS+=("$mnt")
    fail "$what: mounted"
    unmount_fs "$mnt"
    return 1
  fi
  log "$what: refused: $(head -c 300 "$err")"
}

# --- TLS ------------------------------------------------------------------------
mount_refused "https with an unknown CA" "$X/tls.err" "$NGINX_TLS_URL/fx/"
grep -qi "certificate" "$X/tls.err" || fail "the TLS refusal does not name the certificate: $(cat "$X/tls.err")"
MT=$TMP/mnt_tls
mount_fs "$NGINX_TLS_URL/fx/" "$MT" -o "ca_file=$T/ca.pem,cache_size=32M" || exit 1
check "https with ca_file=: the tree" "$FUSE_COMPARE" tree "$MT" "$S" "$R"
check "https with ca_file=: the bytes" "$FUSE_COMPARE" bytes "$MT" "$R"
# nginx offers HTTP/2 over TLS (ALPN); the mount keeps to HTTP/1.1, whose
# kept-alive connections its reads are planned for (libcurl 7.88's h2
# stalled reads by 0.2-1 s).
h1=$(grep -c 'HTTP/1.1" 206' "$NGINX_DIR/access.log")
h2=$(grep -c 'HTTP/2.0"' "$NGINX_DIR/access.log")
log "https: $h1 range answers over HTTP/1.1, $h2 requests over HTTP/2"
((h1 > 0 && h2 == 0)) || fail "https requests: $h1 over HTTP/1.1, $h2 over HTTP/2 (want all over 1.1)"
mount_refused "ca_file= that does not exist" "$X/noca.err" "$NGINX_TLS_URL/fx/" \
  -o "ca_file=$T/missing.pem"
grep -q "missing.pem" "$X/noca.err" || fail "the missing ca_file= is not named: $(cat "$X/noca.err")"

# --- passwords ------------------------------------------------------------------
mount_refused "a private location without a password" "$X/anon.err" "$NGINX_URL/private/fx/"
grep -q "401\|Permission denied" "$X/anon.err" || fail "no 401/EACCES in: $(cat "$X/anon.err")"

printf 'machine 127.0.0.1 login reader password %s\n' "$SECRET" >"$T/netrc"
chmod 0644 "$T/netrc"
mount_refused "credentials= that every user may read" "$X/open.err" "$NGINX_URL/private/fx/" \
  -o "credentials=$T/netrc"
grep -q "chmod o-r" "$X/open.err" || fail "the readable credentials= file: $(cat "$X/open.err")"
chmod 0600 "$T/netrc"
MN=$TMP/mnt_netrc
mount_fs "$NGINX_URL/private/fx/" "$MN" -o "credentials=$T/netrc" || exit 1
check "credentials= (.netrc): data" cmp "$MN/ndim/3d_f4.b2nd/data" "$X/want_3d"

MU=$TMP/mnt_url
mount_fs "http://reader:$SECRET@127.0.0.1:$NGINX_PORT/private/fx/" "$MU" || exit 1
check "a password in the URL: data" cmp "$MU/ndim/3d_f4.b2nd/data" "$X/want_3d"
cat "$MU/ndim/3d_f4.b2nd/meta.json" "$MU/.b2ndfs/stats" >"$X/told" || fail "meta.json / stats"
tr '\0' ' ' <"/proc/$DAEMON_PID/cmdline" >"$X/cmdline"
ps -eo args >"$X/ps"
cp /proc/self/mounts "$X/mounts"
for f in "$X/cmdline" "$X/ps" "$X/mounts" "$X/told" "$MU.log" "$MN.log"; do
  if grep -q "$SECRET" "$f"; then
    fail "the password shows in $(basename "$f"): $(grep "$SECRET" "$f" | head -c 300)"
  fi
done
grep -q "reader:\*\+@127.0.0.1" "$X/cmdline" || fail "the command line is not as expected: $(cat "$X/cmdline")"

# --- redirects --------------------------------------------------------------------
# A second TLS server (the same certificate) that redirects: /down/fx/ lists
# the fixtures but sends every file to plain http; /up/ sends everything to
# the first TLS server; /auth/ sends to its password-protected location.
RD=$TMP/redirector
mkdir -p "$RD/tmp" "$RD/empty"
RD_PORT=$(free_port)
RD_URL=https://127.0.0.1:$RD_PORT
cat >"$RD/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $RD/nginx.pid;
error_log $RD/error.log warn;
events { worker_connections 64; }
http {
  access_log $RD/access.log;
  client_body_temp_path $RD/tmp/client_body;
  proxy_temp_path $RD/tmp/proxy;
  fastcgi_temp_path $RD/tmp/fastcgi;
  uwsgi_temp_path $RD/tmp/uwsgi;
  scgi_temp_path $RD/tmp/scgi;
  server {
    listen 127.0.0.1:$RD_PORT ssl;
    ssl_certificate $T/server.pem;
    ssl_certificate_key $T/server.key;
    root $RD/empty;
    location /down/fx/ {
      if (\$request_uri ~ "^/down/fx/(.*[^/])\$") { return 302 $NGINX_URL/fx/\$1; }
      alias $S/; autoindex on; autoindex_format json;
    }
    location /up/ {
      if (\$request_uri ~ "^/up/(.*)\$") { return 301 $NGINX_TLS_URL/\$1; }
    }
    location /auth/ {
      if (\$request_uri ~ "^/auth/(.*)\$") { return 302 $NGINX_TLS_URL/private/\$1; }
    }
  }
}
EOF
"$NGINX_BIN" -p "$RD" -c "$RD/nginx.conf" 2>>"$RD/stderr.log" &
ITEST_HELPERS+=("$!")
wait_until 10 eval "[[ \$(curl -s -o /dev/null -w '%{http_code}' --cacert '$T/ca.pem' '$RD_URL/') != 000 ]]" ||
  fail "the redirecting nginx did not answer: $(cat "$RD/stderr.log" "$RD/error.log" 2>/dev/null)"

# https -> https: followed, byte-exact.
MR=$TMP/mnt_up
mount_fs "$RD_URL/up/fx/" "$MR" -o "ca_file=$T/ca.pem,cache_size=32M" || exit 1
check "https redirected to https: the bytes" "$FUSE_COMPARE" bytes "$MR" "$R"
hops=$(grep -c '" 301 ' "$RD/access.log")
((hops > 0)) || fail "the https -> https mount made no redirected request"
unmount_fs "$MR"

# https -> http: refused; the http server is never asked.
plain_before=$(grep -c "GET /fx/ndim/3d_f4.b2nd " "$NGINX_DIR/access.log")
MD=$TMP/mnt_down
mount_fs "$RD_URL/down/fx/" "$MD" -o "ca_file=$T/ca.pem,cache_size=32M" || exit 1
if cat "$MD/ndim/3d_f4.b2nd/data" >"$X/down_data" 2>"$X/down.err"; then
  fail "an https source read bytes through a redirect to http"
fi
log "https -> http: $(head -c 200 "$X/down.err")"
grep -q "refused to follow a redirect from https to http://127.0.0.1:$NGINX_PORT/fx/ndim/3d_f4.b2nd" \
  "$MD.log" || fail "the refused redirect is not named in the log: $(head -c 600 "$MD.log")"
((plain_before == $(grep -c "GET /fx/ndim/3d_f4.b2nd " "$NGINX_DIR/access.log"))) ||
  fail "the http server was asked for the file an https source was redirected to"
unmount_fs "$MD"

# A password for the redirecting server does not follow to the other one.
auth_before=$(grep -c ' - reader \[' "$NGINX_DIR/access.log")
mount_refused "a password redirected to another server" "$X/hop.err" \
  "https://reader:$SECRET@127.0.0.1:$RD_PORT/auth/fx/" -o "ca_file=$T/ca.pem"
grep -q "401\|Permission denied" "$X/hop.err" || fail "no 401/EACCES in: $(cat "$X/hop.err")"
((auth_before == $(grep -c ' - reader \[' "$NGINX_DIR/access.log"))) ||
  fail "the password was sent to the server a redirect named"
if grep -q "$SECRET" "$X/hop.err"; then
  fail "the password shows in the error: $(cat "$X/hop.err")"
fi

finish
