#!/usr/bin/env python3
"""Loopback fakes of the AWS services a credential chain asks, and of S3.

fuse.s3_credentials (fuse_s3_credentials.sh) mounts b2ndfs on the fake S3
with keys from each source of the chain. One HTTP server on 127.0.0.1 serves:
  PUT  /latest/api/token                         IMDSv2 session token (needs
       X-aws-ec2-metadata-token-ttl-seconds)
  GET  /latest/meta-data/iam/security-credentials/[ROLE]   (needs the token)
  GET  /ecs/creds                                container endpoint (needs
       Authorization: the token of --container-token-file, read per request)
  POST /                                         STS AssumeRole (SigV4 with
       the --source-key keys, RoleArn, ExternalId, DurationSeconds checked)
       and AssumeRoleWithWebIdentity (unsigned; WebIdentityToken must be the
       content of --web-token-file now)
  GET  /process                                  JSON for credential_process
  GET  /_stats                                   counters, as JSON
  HEAD/GET /BUCKET/KEY, GET /BUCKET?list-type=2  S3, path-style, files of
       --dir; every request's SigV4 signature is verified against the keys
       valid at that moment (expired ones: 403 ExpiredToken).
Issued keys expire --lifetime seconds after they are issued; each request
for keys issues new ones (the old stay valid until they expire), so keys
rotate during a read loop. Access key ids start with the issuer's tag
(ASIAIMDS, ASIAECS, ASIAROLE, ASIAWEB, ASIAPROC) so the test sees which
source signed. Prints "ready PORT" once listening.
"""
import argparse
import datetime
import email.utils
import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
KEYS = {}  # access key id -> (secret, token, expiry or None)
STATS = {"issued": {}, "s3_ok": {}, "s3_denied": 0, "denied_reasons": {}, "sts_checks_failed": 0,
         "secrets": []}  # every secret key and session token issued, for the test to look for
IMDS_TOKENS = set()
ARGS = None
ROLE = "b2ndfs-test-role"


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def issue(tag):
    akid = "ASIA" + tag + secrets.token_hex(6).upper()
    # Characters that need escaping in XML and JSON, as real tokens have '/', '+', '='.
    secret = secrets.token_urlsafe(24) + "/+="
    token = "tok" + secrets.token_urlsafe(32) + "&<>/+="
    expiry = time.time() + ARGS.lifetime
    with LOCK:
        KEYS[akid] = (secret, token, expiry)
        STATS["secrets"] += [secret, token]
        STATS["issued"][tag] = STATS["issued"].get(tag, 0) + 1
    return akid, secret, token, expiry


def uri_encode(s, keep_slash):
    safe = "-_.~" + ("/" if keep_slash else "")
    return urllib.parse.quote(s, safe=safe)


def hmac256(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def check_sigv4(handler, service, path, query, payload_hash):
    """None if the request is signed with valid, unexpired keys; else why not."""
    auth = handler.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 "):
        return "unsigned"
    fields = dict(p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(","))
    akid, date, region, svc, term = fields["Credential"].split("/")
    if svc != service or term != "aws4_request":
        return "scope"
    with LOCK:
        known = KEYS.get(akid)
    if known is None:
        return "unknown key"
    secret, token, expiry = known
    if expiry is not None and time.time() >= expiry:
        return "expired"
    if token and handler.headers.get("x-amz-security-token") != token:
        return "token"
    amz_date = handler.headers.get("x-amz-date", "")
    signed = fields["SignedHeaders"].split(";")
    canon_headers = "".join(
        n + ":" + " ".join((handler.headers.get(n) or "").split()) + "\n" for n in signed)
    pairs = []
    for part in query.split("&") if query else []:
        k, _, v = part.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(k), False),
                      uri_encode(urllib.parse.unquote(v), False)))
    canon_query = "&".join(k + "=" + v for k, v in sorted(pairs))
    canonical = "\n".join([handler.command, path, canon_query, canon_headers,
                           fields["SignedHeaders"], payload_hash])
    scope = "/".join([date, region, service, "aws4_request"])
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = hmac256(("AWS4" + secret).encode(), date)
    k = hmac256(k, region)
    k = hmac256(k, service)
    k = hmac256(k, "aws4_request")
    want = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, fields["Signature"]):
        return "signature"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("fake_aws: " + fmt % args + "\n")

    def send(self, code, body=b"", ctype="application/octet-stream", headers=(), head=False):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def error(self, code, s3code, head=False):
        self.send(code, "<Error><Code>%s</Code></Error>" % s3code, "application/xml", head=head)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    # --- IMDSv2 ---------------------------------------------------------------
    def do_PUT(self):
        if self.path != "/latest/api/token":
            return self.error(404, "NotFound")
        self.body()
        if not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.error(400, "MissingTtl")
        token = secrets.token_urlsafe(16)
        with LOCK:
            IMDS_TOKENS.add(token)
        self.send(200, token, "text/plain")

    def imds(self):
        with LOCK:
            ok = self.headers.get("X-aws-ec2-metadata-token") in IMDS_TOKENS
        if not ok:
            return self.error(401, "Unauthorized")
        base = "/latest/meta-data/iam/security-credentials/"
        if self.path == base:
            return self.send(200, ROLE + "\n", "text/plain")
        if self.path != base + ROLE:
            return self.error(404, "NotFound")
        akid, secret, token, expiry = issue("IMDS")
        self.send(200, json.dumps({
            "Code": "Success", "LastUpdated": iso(time.time()), "Type": "AWS-HMAC",
            "AccessKeyId": akid, "SecretAccessKey": secret, "Token": token,
            "Expiration": iso(expiry)}), "application/json")

    def container(self):
        with open(ARGS.container_token_file) as f:
            want = f.read().strip()
        if self.headers.get("Authorization") != want:
            return self.error(403, "AccessDenied")
        akid, secret, token, expiry = issue("ECS")
        self.send(200, json.dumps({
            "RoleArn": "arn:aws:iam::1:role/ecs", "AccessKeyId": akid,
            "SecretAccessKey": secret, "Token": token, "Expiration": iso(expiry)}),
            "application/json")

    def process(self):
        akid, secret, token, expiry = issue("PROC")
        self.send(200, json.dumps({
            "Version": 1, "AccessKeyId": akid, "SecretAccessKey": secret,
            "SessionToken": token, "Expiration": iso(expiry)}), "application/json")

    # --- STS ------------------------------------------------------------------
    def do_POST(self):
        raw = self.body()
        form = dict(urllib.parse.parse_qsl(raw.decode(), keep_blank_values=True))
        action = form.get("Action")
        problem = None
        if form.get("Version") != "2011-06-15" or not form.get("RoleSessionName"):
            problem = "Version or RoleSessionName"
        elif action == "AssumeRole":
            why = check_sigv4(self, "sts", urllib.parse.urlsplit(self.path).path, "",
                              hashlib.sha256(raw).hexdigest())
            auth = self.headers.get("Authorization", "")
            if why:
                problem = "signature: " + why
            elif "Credential=" + ARGS.source_key + "/" not in auth:
                problem = "not signed with the source profile's key"
            elif form.get("RoleArn") != ARGS.role_arn:
                problem = "RoleArn"
            elif form.get("ExternalId") != ARGS.external_id:
                problem = "ExternalId"
            elif form.get("DurationSeconds") != "900":
                problem = "DurationSeconds"
            tag = "ROLE"
        elif action == "AssumeRoleWithWebIdentity":
            with open(ARGS.web_token_file) as f:
                want = f.read().strip()
            if self.headers.get("Authorization"):
                problem = "signed"
            elif form.get("WebIdentityToken") != want:
                problem = "WebIdentityToken"
            elif form.get("RoleArn") != ARGS.web_role_arn:
                problem = "RoleArn"
            elif form.get("RoleSessionName") != "b2ndfs-web":
                problem = "RoleSessionName"
            tag = "WEB"
        else:
            problem = "Action"
        if problem:
            with LOCK:
                STATS["sts_checks_failed"] += 1
            sys.stderr.write("fake_aws: STS refused: %s\n" % problem)
            return self.send(403, "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied"
                             "</Code><Message>%s</Message></Error></ErrorResponse>" % problem,
                             "text/xml")
        akid, secret, token, expiry = issue(tag)
        esc = lambda s: s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        self.send(200, (
            '<%sResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><%sResult>'
            "<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>"
            "<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>"
            "<AssumedRoleUser><Arn>x</Arn><AssumedRoleId>y</AssumedRoleId></AssumedRoleUser>"
            "</%sResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
            "</%sResponse>") % (action, action, akid, esc(secret), esc(token), iso(expiry),
                                action, action), "text/xml")

    # --- S3 -------------------------------------------------------------------
    def do_HEAD(self):
        self.s3(head=True)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/latest/"):
            return self.imds()
        if path == "/ecs/creds":
            return self.container()
        if path == "/process":
            return self.process()
        if path == "/_stats":
            with LOCK:
                return self.send(200, json.dumps(STATS), "application/json")
        self.s3(head=False)

    def s3(self, head):
        parts = urllib.parse.urlsplit(self.path)
        why = check_sigv4(self, "s3", parts.path, parts.query,
                          self.headers.get("x-amz-content-sha256", ""))
        if why:
            with LOCK:
                STATS["s3_denied"] += 1
                STATS["denied_reasons"][why] = STATS["denied_reasons"].get(why, 0) + 1
            return self.error(403, "ExpiredToken" if why == "expired" else "SignatureDoesNotMatch",
                              head)
        akid = self.headers["Authorization"].split("Credential=")[1].split("/")[0]
        with LOCK:
            tag = next((t for t in ("IMDS", "ECS", "ROLE", "WEB", "PROC") if akid.startswith("ASIA" + t)),
                       "STATIC")
            STATS["s3_ok"].setdefault(tag, {})
            STATS["s3_ok"][tag][akid] = STATS["s3_ok"][tag].get(akid, 0) + 1
        segments = urllib.parse.unquote(parts.path).lstrip("/").split("/", 1)
        if segments[0] != ARGS.bucket:
            return self.error(404, "NoSuchBucket", head)
        key = segments[1] if len(segments) > 1 else ""
        if key == "":
            return self.list(urllib.parse.parse_qs(parts.query, keep_blank_values=True), head)
        full = os.path.realpath(os.path.join(ARGS.dir, key))
        if not full.startswith(os.path.realpath(ARGS.dir) + "/") or not os.path.isfile(full):
            return self.error(404, "NoSuchKey", head)
        st = os.stat(full)
        etag = '"%x-%x"' % (st.st_size, int(st.st_mtime))
        headers = [("ETag", etag), ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                   ("Accept-Ranges", "bytes")]
        match = self.headers.get("If-Match")
        if match and match != etag:
            return self.error(412, "PreconditionFailed", head)
        with open(full, "rb") as f:
            data = f.read()
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and "," not in rng:
            a, _, b = rng[6:].partition("-")
            first = int(a)
            last = min(int(b) if b else len(data) - 1, len(data) - 1)
            if first >= len(data):
                return self.error(416, "InvalidRange", head)
            headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, len(data))))
            return self.send(206, data[first:last + 1], headers=headers, head=head)
        self.send(200, data, headers=headers, head=head)

    def list(self, q, head):
        prefix = q.get("prefix", [""])[0]
        entries, dirs = [], set()
        root = ARGS.dir
        for dirpath, _, files in os.walk(root):
            for name in files:
                key = os.path.relpath(os.path.join(dirpath, name), root)
                if not key.startswith(prefix):
                    continue
                rest = key[len(prefix):]
                if "/" in rest:
                    dirs.add(prefix + rest.split("/")[0] + "/")
                else:
                    st = os.stat(os.path.join(dirpath, name))
                    entries.append((key, st))
        xml = ["<ListBucketResult><Name>%s</Name><Prefix>%s</Prefix><IsTruncated>false</IsTruncated>"
               % (ARGS.bucket, prefix)]
        for key, st in sorted(entries):
            xml.append("<Contents><Key>%s</Key><Size>%d</Size><ETag>\"%x-%x\"</ETag>"
                       "<LastModified>%s</LastModified></Contents>"
                       % (key, st.st_size, st.st_size, int(st.st_mtime), iso(st.st_mtime)))
        for d in sorted(dirs):
            xml.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % d)
        xml.append("</ListBucketResult>")
        self.send(200, "".join(xml), "application/xml", head=head)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--bucket", default="b")
    p.add_argument("--lifetime", type=float, default=30)
    p.add_argument("--source-key", required=True, help="the source profile's access key id")
    p.add_argument("--role-arn", required=True)
    p.add_argument("--external-id", required=True)
    p.add_argument("--web-role-arn", required=True)
    p.add_argument("--web-token-file", required=True)
    p.add_argument("--container-token-file", required=True)
    p.add_argument("--verbose", action="store_true")
    ARGS = p.parse_args()
    # Long-lived keys, "AKID:SECRET ..." (not on the command line: ps shows it).
    for spec in os.environ.get("FAKE_AWS_KEYS", "").split():
        akid, secret = spec.split(":", 1)
        KEYS[akid] = (secret, "", None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("ready %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
