#!/usr/bin/python3
"""An HTTP/1.1 proxy on loopback that cuts answers short, for fuse.http.

    cutting_proxy.py LISTEN_PORT TARGET_PORT CUT_AFTER [CUTS]

Every answer whose body is longer than CUT_AFTER bytes is cut after
CUT_AFTER bytes of its body: the connection is closed there, as a server or
a middlebox that fails mid-answer does. Only the first CUTS such answers with
CUTS (default: every one). Requests and other answers pass unchanged, one
connection to the server per client connection (keep-alive included), so
answers are framed by their Content-Length or chunked encoding; a HEAD's
answer has no body. Prints "ready" once listening and "cut N of SIZE" for
each answer it cuts; stops on SIGTERM.
"""
import asyncio
import signal
import sys


class Cuts:
    def __init__(self, after, left):
        self.after, self.left = after, left

    def take(self, body_length):
        if body_length is not None and body_length <= self.after:
            return False
        if self.left == 0:
            return False
        self.left -= 1
        return True


def header(head, name):
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def end_writing(writer):
    """Half-closes: the other side sees the end of what this one sent."""
    try:
        writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def requests(reader, writer, methods):
    """Client to server: whole requests (GET and HEAD have no body)."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            methods.put_nowait(head.split(b" ", 1)[0])
            length = header(head, b"content-length")
            body = await reader.readexactly(int(length)) if length else b""
            writer.write(head + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError):
        pass
    end_writing(writer)


async def answers(reader, writer, methods, cuts):
    """Server to client: answer by answer; returns True if one was cut."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            if 100 <= status < 200:
                writer.write(head)
                continue
            method = await methods.get()
            length = header(head, b"content-length")
            chunked = (header(head, b"transfer-encoding") or b"").lower() == b"chunked"
            if method == b"HEAD" or status in (204, 304):
                size = 0
            elif length is not None:
                size = int(length)
            else:
                size = None  # chunked: read below
            if size is not None and size > cuts.after and cuts.take(size):
                writer.write(head + await reader.readexactly(cuts.after))
                await writer.drain()
                print(f"cut {cuts.after} of {size}", flush=True)
                return True
            writer.write(head)
            if size is not None:
                writer.write(await reader.readexactly(size))
            elif chunked:
                while True:
                    line = await reader.readuntil(b"\r\n")
                    n = int(line.split(b";")[0], 16)
                    writer.write(line + await reader.readexactly(n + 2) if n else line)
                    if n == 0:
                        writer.write(await reader.readuntil(b"\r\n"))  # no trailers here
                        break
            else:
                writer.write(await reader.read())  # until the server closes
                break
            await writer.drain()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError):
        pass
    end_writing(writer)
    return False


async def handle(client_reader, client_writer, target_port, cuts):
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        client_writer.close()
        return
    methods = asyncio.Queue()
    asks = asyncio.ensure_future(requests(client_reader, server_writer, methods))
    if await answers(server_reader, client_writer, methods, cuts):
        client_writer.transport.abort()
        server_writer.transport.abort()
        asks.cancel()
    try:
        await asks
    except (asyncio.CancelledError, ConnectionError, OSError):
        pass
    for w in (client_writer, server_writer):
        w.close()


async def main():
    listen_port, target_port, after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cuts = Cuts(after, int(sys.argv[4]) if len(sys.argv) > 4 else -1)
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, target_port, cuts), "127.0.0.1", listen_port, limit=1 << 20)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
