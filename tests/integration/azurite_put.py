"""Uploads to Azurite (or any Azure Blob endpoint) for the az:// tests, with
SharedKey signed here, independently of the code under test (the StringToSign
of "Authorize with Shared Key", Python's hmac).

  azurite_put.py SERVICE ACCOUNT container NAME [public]
  azurite_put.py SERVICE ACCOUNT put CONTAINER PREFIX DIR
  azurite_put.py SERVICE ACCOUNT put-file CONTAINER BLOB FILE
  azurite_put.py SERVICE ACCOUNT delete CONTAINER BLOB
  azurite_put.py SERVICE ACCOUNT sas PERMISSIONS      (an account SAS token)

SERVICE is the account's blob service URL (http://127.0.0.1:PORT/ACCOUNT).
The account key comes from the environment (AZURITE_KEY), never the command
line: fuse.az checks that no secret shows in any process's arguments, and
other tests' uploads run beside it.
`put` uploads every file below DIR as PREFIX + its relative path, and each
empty directory as a zero-byte "PATH/" blob (a folder marker), on one
kept-alive connection.
"""
import base64
import concurrent.futures
import email.utils
import hashlib
import hmac
import http.client
import os
import sys
import urllib.parse

VERSION = "2021-08-06"


class Client:
    def __init__(self, service, account, key):
        url = urllib.parse.urlsplit(service)
        self.base_path = url.path.rstrip("/")
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        self.account = account
        self.key = base64.b64decode(key)

    def request(self, method, path, query="", body=b"", headers=None):
        headers = dict(headers or {})
        headers["x-ms-date"] = email.utils.formatdate(usegmt=True)
        headers["x-ms-version"] = VERSION
        length = str(len(body)) if body else ""
        if body or method == "PUT":
            headers["Content-Length"] = str(len(body))
        raw_path = self.base_path + urllib.parse.quote(path, safe="/")
        canonical = "".join(f"{k.lower()}:{v}\n" for k, v in sorted(
            (k.lower(), v) for k, v in headers.items() if k.lower().startswith("x-ms-")))
        resource = f"/{self.account}{raw_path}"
        for name, value in sorted(urllib.parse.parse_qsl(query, keep_blank_values=True)):
            resource += f"\n{name.lower()}:{value}"
        to_sign = "\n".join([method, "", "", length, "", headers.get("Content-Type", ""),
                             "", "", "", "", "", ""]) + "\n" + canonical + resource
        mac = hmac.new(self.key, to_sign.encode(), hashlib.sha256).digest()
        headers["Authorization"] = f"SharedKey {self.account}:{base64.b64encode(mac).decode()}"
        self.conn.request(method, raw_path + ("?" + query if query else ""), body=body,
                          headers=headers)
        answer = self.conn.getresponse()
        data = answer.read()
        if answer.status >= 300:
            sys.exit(f"{method} {path}?{query}: HTTP {answer.status} {data[:300]!r}")
        return data

    def put_blob(self, container, blob, body):
        self.request("PUT", f"/{container}/{blob}", body=body,
                     headers={"x-ms-blob-type": "BlockBlob"})


def account_sas(account, key, permissions):
    fields = dict(sv="2019-12-12", ss="b", srt="sco", sp=permissions, se="2099-01-01T00:00:00Z")
    to_sign = "\n".join([account, fields["sp"], fields["ss"], fields["srt"], "", fields["se"], "",
                         "", fields["sv"], ""])
    mac = hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest()
    fields["sig"] = base64.b64encode(mac).decode()
    return urllib.parse.urlencode(fields)


def main():
    service, account, command, *args = sys.argv[1:]
    key = os.environ["AZURITE_KEY"]
    if command == "sas":
        print(account_sas(account, key, args[0]))
        return
    client = Client(service, account, key)
    if command == "container":
        headers = {"x-ms-blob-public-access": "container"} if args[1:] == ["public"] else {}
        client.request("PUT", f"/{args[0]}", "restype=container", headers=headers)
    elif command == "put-file":
        with open(args[2], "rb") as f:
            client.put_blob(args[0], args[1], f.read())
    elif command == "delete":
        client.request("DELETE", f"/{args[0]}/{args[1]}")
    elif command == "put":
        container, prefix, top = args
        uploads = []  # (blob, local file or None for a folder marker)
        for root, dirs, files in os.walk(top, followlinks=True):
            dirs.sort()
            rel = os.path.relpath(root, top)
            rel = "" if rel == "." else rel + "/"
            uploads += [(prefix + rel + name, os.path.join(root, name)) for name in sorted(files)]
            if not dirs and not files and rel:
                uploads.append((prefix + rel, None))

        def upload(part):
            own = Client(service, account, key)
            for blob, path in uploads[part::4]:
                body = b""
                if path is not None:
                    with open(path, "rb") as f:
                        body = f.read()
                own.put_blob(container, blob, body)

        # Four connections at once: Azurite answers each request in a few ms.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for done in [pool.submit(upload, part) for part in range(4)]:
                done.result()
        print(len(uploads))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
