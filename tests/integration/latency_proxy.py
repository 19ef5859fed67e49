#!/usr/bin/env python3
"""A TCP proxy that adds latency (tc netem is not available in every kernel).

  latency_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT DELAY_MS

Every byte is forwarded DELAY_MS after it arrived, in each direction, in
order: a request/response round trip through the proxy costs 2 * DELAY_MS
more, whatever the bandwidth, as on a long link. Prints "ready" once
listening; runs until killed.
"""
import asyncio
import sys
import time


async def pipe(reader, writer, delay):
    queue = asyncio.Queue()

    async def forward():
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except OSError:
            pass

    task = asyncio.ensure_future(forward())
    try:
        while True:
            data = await reader.read(1 << 16)
            queue.put_nowait((time.monotonic() + delay, data or None))
            if not data:
                break
    except OSError:
        queue.put_nowait((time.monotonic(), None))
    try:
        await task
    except OSError:
        pass


async def handle(client_reader, client_writer, host, port, delay):
    try:
        server_reader, server_writer = await asyncio.open_connection(host, port)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer, delay),
                         pipe(server_reader, client_writer, delay),
                         return_exceptions=True)
    for w in (client_writer, server_writer):
        w.close()


async def main():
    listen_port = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    delay = float(sys.argv[3]) / 1000.0
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, host, int(port), delay), "127.0.0.1", listen_port)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
