#!/usr/bin/python3
"""An HTTP/1.1 proxy on loopback that logs every request it forwards, for
tests/integration/fuse_remote_costs.sh (s3rver keeps no access log of its
own that names methods and ranges).

    logging_proxy.py LISTEN_PORT TARGET_PORT LOG

Each answered request appends "METHOD TARGET|STATUS|BODY_BYTES|RANGE" to LOG
(as an nginx log_format of $request|$status|$body_bytes_sent|$http_range).
Keeps connections alive on both sides. Prints "ready" once listening.
"""
import asyncio
import signal
import sys


def header(head, name):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name:
            return v.strip().decode("latin-1")
    return ""


async def read_body(reader, writer, head, is_head, status):
    """Forwards the body that follows HEAD; returns its length."""
    if is_head or status in (204, 304) or 100 <= status < 200:
        return 0
    length = header(head, b"content-length")
    if length:
        n = int(length)
        left = n
        while left > 0:
            data = await reader.read(min(left, 1 << 16))
            if not data:
                raise ConnectionError("short body")
            writer.write(data)
            left -= len(data)
        return n
    if header(head, b"transfer-encoding").lower() == "chunked":
        total = 0
        while True:
            line = await reader.readline()
            writer.write(line)
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                writer.write(await reader.readuntil(b"\r\n"))
                return total
            writer.write(await reader.readexactly(size + 2))
            total += size
    return 0


async def serve(client_r, client_w, target, log):
    try:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        client_w.close()
        return
    try:
        while True:
            head = await client_r.readuntil(b"\r\n\r\n")
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method = request_line.split(" ", 1)[0]
            up_w.write(head)
            await read_body(client_r, up_w, head, False, 0)
            await up_w.drain()
            rhead = await up_r.readuntil(b"\r\n\r\n")
            status = int(rhead.split(b" ", 2)[1])
            client_w.write(rhead)
            n = await read_body(up_r, client_w, rhead, method == "HEAD", status)
            await client_w.drain()
            rng = header(head, b"range") or "-"
            log.write("%s|%d|%d|%s\n" % (request_line, status, n, rng))
            log.flush()
    except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError):
        pass
    finally:
        client_w.close()
        up_w.close()


async def main():
    listen, target, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    log = open(path, "a")
    server = await asyncio.start_server(
        lambda r, w: serve(r, w, target, log), "127.0.0.1", listen)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()


asyncio.run(main())
