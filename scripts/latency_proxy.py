#!/usr/bin/python3
"""A TCP proxy on loopback that adds round-trip time, for the remote tests
(tests/integration/fuse_http.sh) and the remote benchmark (bench/remote.py).

    latency_proxy.py LISTEN_PORT TARGET_PORT RTT_MS

Not every kernel has `tc netem`, so latency is added here: every segment read
from either side is forwarded RTT/2 later (scheduled, not slept: reading goes
on meanwhile, so only latency is added, not a bandwidth limit; order is
kept). A new connection also pays one RTT (SYN / SYN-ACK). Prints "ready"
once listening. Stops on SIGTERM.
"""
import asyncio
import signal
import sys


async def pipe(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def sender():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                break
            writer.write(data)
            await writer.drain()
        try:
            writer.write_eof()
        except (OSError, RuntimeError):
            pass

    task = asyncio.ensure_future(sender())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((loop.time() + delay, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def handle(client_reader, client_writer, target_port, delay):
    await asyncio.sleep(2 * delay)  # the handshake's round trip
    try:
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        client_writer.close()
        return
    await asyncio.gather(pipe(client_reader, server_writer, delay),
                         pipe(server_reader, client_writer, delay))
    for w in (client_writer, server_writer):
        try:
            w.close()
        except OSError:
            pass


async def main():
    listen_port, target_port, rtt_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    delay = rtt_ms / 2000.0
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, target_port, delay), "127.0.0.1", listen_port)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
