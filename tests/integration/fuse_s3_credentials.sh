#!/usr/bin/env bash
# fuse.s3_credentials: the AWS credential chain end to end against loopback
# fakes (fake_aws.py: IMDSv2, a container endpoint, STS, credential_process
# output, and an S3 that verifies every request's SigV4 signature against the
# keys valid at that moment). One mount per source -- environment keys,
# credential_process, AssumeRole via source_profile, web identity, the
# container endpoint (EKS Pod Identity's token file), IMDSv2 -- reads a
# container byte-exact, and the log names the source that won. Issued keys
# live 14 s, so during an 18 s read loop over all mounts every temporary
# source is renewed at least twice and its first keys expire; meanwhile the
# web identity and container token files are rotated (the fakes accept only
# the current ones). No read may fail, the fake S3 must refuse nothing, and
# no secret or token shows in the logs, ps or the mount table.
# Usage: fuse_s3_credentials.sh BUILD_DIR
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/remote_lib.sh"
itest_init s3_credentials "$1"
require_fuse

make_fixtures "$TMP"
S=$TMP/src
R=$TMP/ref
X=$TMP/x
mkdir -p "$X"
KEY=ndim/2d_i4.b2nd
want_data "$R" "$KEY" "$X/want" || exit 1

STATIC_SECRET="staticSecret$RANDOM$RANDOM"
SOURCE_SECRET="sourceSecret$RANDOM$RANDOM"
WEB_TOKEN=$TMP/web_token
ECS_TOKEN=$TMP/ecs_token
echo "eyJweb.$RANDOM$RANDOM" >"$WEB_TOKEN"
echo "Bearer ecs$RANDOM$RANDOM" >"$ECS_TOKEN"
ROLE_ARN=arn:aws:iam::123456789012:role/b2ndfs-assumed
WEB_ROLE_ARN=arn:aws:iam::123456789012:role/b2ndfs-web
EXTERNAL_ID="ext$RANDOM"

# The secrets go to the fake through its environment, not its command line.
FAKE_AWS_KEYS="AKIASTATIC:$STATIC_SECRET AKIASOURCE:$SOURCE_SECRET" \
  proxy_start "$X/fake.out" "$(dirname "${BASH_SOURCE[0]}")/fake_aws.py" --dir "$S" --bucket creds \
  --lifetime 14 --source-key AKIASOURCE \
  --role-arn "$ROLE_ARN" --external-id "$EXTERNAL_ID" --web-role-arn "$WEB_ROLE_ARN" \
  --web-token-file "$WEB_TOKEN" --container-token-file "$ECS_TOKEN"
PORT=$(awk '/^ready/ { print $2 }' "$X/fake.out")
[[ -n $PORT ]] || { fail "fake_aws.py did not start: $(cat "$X/fake.out")"; exit 1; }
U=http://127.0.0.1:$PORT
log "fake AWS on $U"

chmod 700 "$X"
cat >"$X/credentials" <<EOF
[src]
aws_access_key_id = AKIASOURCE
aws_secret_access_key = $SOURCE_SECRET
EOF
cat >"$X/config" <<EOF
[profile proc]
credential_process = curl -sf --noproxy * $U/process
[profile role]
role_arn = $ROLE_ARN
source_profile = src
external_id = $EXTERNAL_ID
duration_seconds = 900
role_session_name = b2ndfs-role
EOF
chmod 600 "$X/credentials" "$X/config"

# Only what each mount sets: no stray AWS_* of the caller, no real IMDS.
for v in $(compgen -e | grep '^AWS_'); do unset "$v"; done
reset_env() {
  unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
    AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME \
    AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
    AWS_EC2_METADATA_SERVICE_ENDPOINT
  export AWS_SHARED_CREDENTIALS_FILE=$X/credentials AWS_CONFIG_FILE=$X/config
  export AWS_REGION=us-east-1 AWS_ENDPOINT_URL_S3=$U AWS_ENDPOINT_URL_STS=$U
  export AWS_EC2_METADATA_DISABLED=true
}

MOUNTS=()
# mount_source NAME WHAT-THE-LOG-SAYS: mounts s3://creds/KEY (the S3 endpoint
# from AWS_ENDPOINT_URL_S3) with the environment set now, reads it.
# MOUNT=mount_daemon: as users start it (it forks into the background after
# its first signed requests: the renewal thread must start again in the child).
mount_source() {
  local name=$1 says=$2 m=$TMP/mnt_$1
  "${MOUNT:-mount_fs}" "s3://creds/$KEY" "$m" -o "cache_size=8M,threads=2,timeout=5,retries=1" || {
    reset_env
    return 1
  }
  MOUNTS+=("$m")
  check "$name: data reads byte-exact" cmp "$m/data" "$X/want"
  grep -qF "s3 credentials from $says" "$m.log" ||
    fail "$name: the log does not say 's3 credentials from $says': $(cat "$m.log")"
  reset_env
}

reset_env
export AWS_ACCESS_KEY_ID=AKIASTATIC AWS_SECRET_ACCESS_KEY=$STATIC_SECRET
mount_source env "the environment (AWS_ACCESS_KEY_ID), do not expire"

export AWS_PROFILE=proc
mount_source process "credential_process of profile proc, expire "

export AWS_PROFILE=role
mount_source assume_role "assumed role $ROLE_ARN (from profile src in "

export AWS_WEB_IDENTITY_TOKEN_FILE=$WEB_TOKEN AWS_ROLE_ARN=$WEB_ROLE_ARN AWS_ROLE_SESSION_NAME=b2ndfs-web
mount_source web_identity "web identity (role $WEB_ROLE_ARN), expire "

export AWS_CONTAINER_CREDENTIALS_FULL_URI=$U/ecs/creds AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$ECS_TOKEN
mount_source container "container endpoint $U/ecs/creds, expire "

unset AWS_EC2_METADATA_DISABLED
export AWS_EC2_METADATA_SERVICE_ENDPOINT=$U
MOUNT=mount_daemon mount_source imds "EC2 instance metadata at $U (role b2ndfs-test-role), expire "

# A full container URI that is neither https nor loopback/link-local is
# refused before anything is asked.
export AWS_CONTAINER_CREDENTIALS_FULL_URI=http://192.0.2.1/creds
mkdir -p "$TMP/mnt_refused"
ITEST_MOUNTS+=("$TMP/mnt_refused")
if timeout 10 "$B2NDFS" -f "s3://creds/$KEY" "$TMP/mnt_refused" 2>"$X/refused.log"; then
  fail "a plain-http container URI to 192.0.2.1 was accepted"
fi
grep -q "only https://" "$X/refused.log" || fail "the refusal does not say why: $(cat "$X/refused.log")"
reset_env

# --- reads across renewals and expiries -----------------------------------------
log "read loop over ${#MOUNTS[@]} mounts for 18 s (keys live 14 s)"
t0=$(now)
rotated=0
loop_failures=0
while within 18 "$t0"; do
  if ((rotated == 0)) && ! within 6 "$t0"; then
    # New tokens: the fakes refuse the old ones from now on.
    echo "eyJweb.rotated$RANDOM" >"$WEB_TOKEN.new" && mv "$WEB_TOKEN.new" "$WEB_TOKEN"
    echo "Bearer rotated$RANDOM" >"$ECS_TOKEN.new" && mv "$ECS_TOKEN.new" "$ECS_TOKEN"
    rotated=1
  fi
  for m in "${MOUNTS[@]}"; do
    if ! cmp -s "$m/data" "$X/want"; then
      loop_failures=$((loop_failures + 1))
      ((loop_failures <= 3)) && fail "$(basename "$m"): a read at +$(elapsed "$t0") s failed or differs"
    fi
  done
  sleep 0.2
done

curl -sf --noproxy "*" "$U/_stats" >"$X/stats.json" || fail "no stats from fake_aws.py"
"$PY" - "$X/stats.json" "$X/secrets.txt" <<'EOF' || fail "the fake's counters say: $(cat "$X/stats.json" | head -c 600)"
import json, sys
s = json.load(open(sys.argv[1]))
open(sys.argv[2], "w").write("\n".join(s["secrets"]) + "\n")
ok = True
for tag in ("PROC", "ROLE", "WEB", "ECS", "IMDS"):
    used = s["s3_ok"].get(tag, {})
    if len(used) < 2:
        print("%s: S3 requests were signed with %d key(s); renewed keys never used" % (tag, len(used)))
        ok = False
if "STATIC" not in s["s3_ok"]:
    print("no request signed with the environment's keys")
    ok = False
if s["s3_denied"] or s["sts_checks_failed"]:
    print("refused: %d S3 requests %s, %d STS requests" % (s["s3_denied"], s["denied_reasons"], s["sts_checks_failed"]))
    ok = False
sys.exit(0 if ok else 1)
EOF
log "keys issued: $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["issued"])' "$X/stats.json")"

# --- secrets ---------------------------------------------------------------------
printf '%s\n%s\n%s\n%s\n' "$STATIC_SECRET" "$SOURCE_SECRET" "$(cat "$WEB_TOKEN")" "$(cat "$ECS_TOKEN")" >>"$X/secrets.txt"
ps -eo args >"$X/ps.txt"
cat /proc/self/mounts >"$X/mounts.txt"
for m in "${MOUNTS[@]}"; do cat "$m/.b2ndfs/stats" "$m/meta.json" >>"$X/exposed.txt" 2>/dev/null; done
grep -v '^$' "$X/secrets.txt" >"$X/patterns.txt"
for f in "$X/ps.txt" "$X/mounts.txt" "$X/exposed.txt" "$TMP"/mnt_*.log "$X/refused.log"; do
  [[ -f $f ]] || continue
  if grep -qF -f "$X/patterns.txt" "$f"; then
    fail "a secret shows in $f: $(grep -F -f "$X/patterns.txt" "$f" | head -c 300)"
  fi
done

for m in "${MOUNTS[@]}"; do
  check "fusermount3 -u $m" fusermount3 -u "$m"
done
finish
