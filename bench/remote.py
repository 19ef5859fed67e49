#!/usr/bin/python3
"""The remote benchmark rows (issue #11), one run, written to bench/REMOTE.md.

    /usr/bin/python3 bench/remote.py --build BUILD_DIR [--out DIR] [--reps N]

(a) bytes fetched for one axis slice (slices/A/128 of a 256^3 float32 array,
    each axis) through an http:// mount, counted by nginx ($body_bytes_sent
    in its access log) and by .b2ndfs/stats, against the compressed bytes of
    the blocks the slice touches plus the heads of their chunks;
(b) the time of that slice through the mount against a block-unaware client
    (Python fetching the whole compressed chunks the slice needs over 8
    kept-alive connections, then c-blosc2 decompressing them: bench_remote_blocks
    decode), at 0 ms and 20 ms added round-trip time (a delaying TCP proxy,
    scripts/latency_proxy.py: this kernel has no tc netem);
(c) the whole array read sequentially (cat data) over S3 (s3rver on loopback)
    against the same through a local mount.
Every mount is fresh (cold block cache); everything started is stopped.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from mounts import cpu_seconds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INDEX = 128
# MiB touched and freed before each timed side (prime() below): more than
# either side allocates (the whole-chunk client: ~17 MB fetched, 32 MiB
# decoded; the mount: its slabs and buffers).
PRIME_MIB = 128
AXES = (0, 1, 2)
RTTS = (0, 20)
MOUNTS, PROCS, WORKDIRS = [], [], []


def log(msg):
    print(f"[remote] {msg}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def answers(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        return True
    except OSError:
        return False


def start(args, **kw):
    p = subprocess.Popen(args, **kw)
    PROCS.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def is_mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def mount(b2ndfs, source, mnt, *opts, env=None):
    os.makedirs(mnt, exist_ok=True)
    args = [b2ndfs, "-f"] + (["-o", ",".join(opts)] if opts else []) + [source, mnt]
    p = start(args, stderr=open(mnt + ".log", "w"), env=env)
    MOUNTS.append((mnt, p))
    wait_for(lambda: is_mounted(mnt) or p.poll() is not None, 20, f"mount {mnt}")
    if not is_mounted(mnt):
        raise RuntimeError(f"b2ndfs did not mount {source}: {open(mnt + '.log').read()}")
    return p


def unmount(mnt, p):
    subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
    try:
        p.wait(20)
    except subprocess.TimeoutExpired:
        subprocess.run(["fusermount3", "-uz", mnt], stderr=subprocess.DEVNULL)
        stop(p)
    MOUNTS.remove((mnt, p))


def stats(mnt):
    with open(os.path.join(mnt, ".b2ndfs", "stats")) as f:
        return json.load(f)


def read_all(path):
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    return time.perf_counter() - t0, data


def nginx_conf(dir_, port, www):
    conf = os.path.join(dir_, "nginx.conf")
    os.makedirs(os.path.join(dir_, "tmp"), exist_ok=True)
    temps = "".join(f"  {t}_temp_path {dir_}/tmp/{t};\n"
                    for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(conf, "w") as f:
        f.write(f"""daemon off;
master_process off;
worker_processes 1;
pid {dir_}/nginx.pid;
error_log {dir_}/error.log warn;
events {{ worker_connections 512; }}
http {{
  log_format bytes '$request_method $uri $status $body_bytes_sent "$http_range"';
  access_log {dir_}/access.log bytes;
{temps}  default_type application/octet-stream;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port};
    location /r/ {{ root {www}; autoindex on; autoindex_format json; }}
  }}
}}
""")
    return conf


def log_bytes(path, since):
    """Requests and body bytes nginx logged after byte `since` of its log."""
    with open(path) as f:
        f.seek(since)
        lines = f.read().splitlines()
    total = sum(int(line.split()[3]) for line in lines if len(line.split()) >= 4)
    return len(lines), total


def fetch_chunks(port, chunks, dest, connections=8):
    """A block-unaware client: every chunk the slice needs, whole, with one
    Range GET each on up to `connections` kept-alive connections, opened as
    needed (as b2ndfs opens its own)."""
    conns = [http.client.HTTPConnection("127.0.0.1", port) for _ in range(connections)]
    free = list(conns)

    def get(chunk):
        c = free.pop()
        try:
            end = chunk["offset"] + chunk["cbytes"] - 1
            c.request("GET", "/r/arr.b2nd", headers={"Range": f"bytes={chunk['offset']}-{end}"})
            r = c.getresponse()
            body = r.read()
            if r.status != 206 or len(body) != chunk["cbytes"]:
                raise RuntimeError(f"chunk {chunk['nchunk']}: HTTP {r.status}, {len(body)} bytes")
            with open(os.path.join(dest, str(chunk["nchunk"])), "wb") as f:
                f.write(body)
        finally:
            free.append(c)

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        list(pool.map(get, chunks))
    seconds = time.perf_counter() - t0
    for c in conns:
        c.close()
    return seconds


def verdict(value, target, higher_is_better=True):
    ok = value >= target if higher_is_better else value <= target
    if ok:
        return "met"
    miss = 100 * ((target - value) / target if higher_is_better else (value - target) / target)
    return f"missed by {miss:.1f}%" if miss < 10 else f"missed by {miss:.0f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "remote"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--report", default=os.path.join(ROOT, "bench", "REMOTE.md"))
    ap.add_argument("--opts", default="cache_size=256M,threads=8",
                    help="b2ndfs -o options of every mount (default: %(default)s)")
    ap.add_argument("--axes", default="0,1,2")
    ap.add_argument("--rtts", default="0,20")
    ap.add_argument("--no-s3", action="store_true")
    a = ap.parse_args()
    global AXES, RTTS
    AXES = tuple(int(x) for x in a.axes.split(","))
    RTTS = tuple(int(x) for x in a.rtts.split(","))
    b2ndfs = os.path.join(a.build, "src", "app", "b2ndfs")
    tool = os.path.join(a.build, "bench", "bench_remote_blocks")
    reader = os.path.join(a.build, "bench", "bench_reader")

    def prime():
        """As bench/routes.py before a cold run: touches and frees memory, so
        that neither side pays this VM's cost of taking back memory the host
        reclaimed (free page reporting) in its timed part."""
        subprocess.run([reader, "prime", str(PRIME_MIB)], check=True, stdout=subprocess.DEVNULL)

    for p in (b2ndfs, tool, reader):
        if not os.access(p, os.X_OK):
            sys.exit(f"{p} is not built")
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="b2ndfs-remote-bench.")
    WORKDIRS.append(work)  # mount points, server roots and logs: removed at the end
    www = os.path.join(a.out, "www")
    arr = os.path.join(www, "r", "arr.b2nd")
    os.makedirs(os.path.dirname(arr), exist_ok=True)
    if not os.path.exists(arr):
        log("writing the array")
        info = json.loads(subprocess.check_output([tool, "write", arr]))
    else:
        info = {"path": arr}
    info["file_bytes"] = os.path.getsize(arr)

    ndir = os.path.join(work, "nginx")
    os.makedirs(ndir)
    nport = free_port()
    start(["/usr/sbin/nginx", "-p", ndir, "-c", nginx_conf(ndir, nport, www)], stderr=subprocess.DEVNULL)
    wait_for(lambda: answers(nport), 10, "nginx")
    access = os.path.join(ndir, "access.log")
    ports = {0: nport}
    for rtt in RTTS:
        if rtt:
            pport = free_port()
            p = start(["/usr/bin/python3", os.path.join(ROOT, "scripts", "latency_proxy.py"),
                       str(pport), str(nport), str(rtt)], stdout=subprocess.PIPE)
            p.stdout.readline()
            ports[rtt] = pport

    rows = []
    for axis in AXES:
        plan = json.loads(subprocess.check_output([tool, "plan", arr, str(axis), str(INDEX)]))
        allowed = plan["block_bytes"] + plan["head_bytes"]
        for rtt in RTTS:
            fs_times, landed_times, base_times = [], [], []
            nginx_bytes, stats_bytes, requests = [], [], []
            def opened_mount(name):
                """A fresh mount whose container was opened (meta.json read):
                not timed, as the block-unaware client is handed the chunk
                offsets too."""
                mnt = os.path.join(work, name)
                prime()  # before the daemon starts: the open is not timed
                p = mount(b2ndfs, f"http://127.0.0.1:{ports[rtt]}/r/", mnt, a.opts)
                with open(os.path.join(mnt, "arr.b2nd", "meta.json")) as f:
                    f.read()
                return mnt, p, os.path.join(mnt, "arr.b2nd", "slices", str(axis), str(INDEX))

            for rep in range(a.reps):
                # No chunk head is known yet: the read fetches them with
                # its blocks (every head, where the container has at most
                # prefetch_heads= chunks).
                mnt, p, slice_path = opened_mount(f"mnt_{axis}_{rtt}_{rep}")
                before = stats(mnt)["remote"]["bytes_fetched"]
                since = os.path.getsize(access)
                seconds, got = read_all(slice_path)
                time.sleep(0.2)  # nginx writes its log line after the body
                n, sent = log_bytes(access, since)
                stats_bytes.append(stats(mnt)["remote"]["bytes_fetched"] - before)
                unmount(mnt, p)
                fs_times.append(seconds)
                nginx_bytes.append(sent)
                requests.append(n)
                # The same once the chunk heads are known (what the
                # container's block offsets are to a block-aware client, the
                # chunk offsets to the whole-chunk client below): a read of
                # slice 0 (other blocks) fetched them first, untimed.
                mnt, p, slice_path = opened_mount(f"mnt_{axis}_{rtt}_{rep}_landed")
                read_all(os.path.join(os.path.dirname(slice_path), "0"))
                seconds, landed = read_all(slice_path)
                unmount(mnt, p)
                if landed != got:
                    raise RuntimeError(f"axis {axis}: two fresh mounts read different slices")
                landed_times.append(seconds)
                chunkdir = os.path.join(work, f"chunks_{axis}_{rtt}_{rep}")
                os.makedirs(chunkdir)
                prime()
                fetch = fetch_chunks(ports[rtt], plan["chunks"], chunkdir)
                out = os.path.join(work, f"slice_{axis}_{rtt}_{rep}")
                dec = json.loads(subprocess.check_output(
                    [tool, "decode", arr, str(axis), str(INDEX), chunkdir, out]))
                base_times.append(fetch + dec["decode_seconds"])
                with open(out, "rb") as f:
                    if f.read() != got:
                        raise RuntimeError(f"axis {axis}: the mount's slice differs from c-blosc2's")
                subprocess.run(["rm", "-rf", chunkdir, out])
            row = dict(axis=axis, rtt=rtt, plan=plan, allowed=allowed,
                       fs=statistics.median(fs_times), landed=statistics.median(landed_times),
                       base=statistics.median(base_times),
                       nginx_bytes=max(nginx_bytes), stats_bytes=max(stats_bytes),
                       requests=max(requests))
            log(f"axis {axis} rtt {rtt} ms: mount {row['fs']*1e3:.1f} ms ({row['landed']*1e3:.1f} ms "
                f"with heads landed), whole chunks "
                f"{row['base']*1e3:.1f} ms, {row['nginx_bytes']} B (blocks+heads {allowed} B)")
            rows.append(row)

    # (c) S3 on loopback against the local mount: the whole array, sequential.
    s3 = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin", "s3rver")
    s3row = None
    if os.access(s3, os.X_OK) and not a.no_s3:
        sport = free_port()
        sdir = os.path.join(work, "s3rver")
        env = dict(os.environ, NODE_OPTIONS="--openssl-legacy-provider")
        server = start([s3, "-d", sdir, "-a", "127.0.0.1", "-p", str(sport), "--silent",
                        "--configure-bucket", "bench"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env)
        wait_for(lambda: answers(sport), 20, "s3rver")
        subprocess.run(["curl", "-sf", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "S3RVER:S3RVER",
                        "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H", "Expect:", "-T", arr,
                        f"http://127.0.0.1:{sport}/bench/arr.b2nd"], check=True,
                       stdout=subprocess.DEVNULL)
        senv = dict(os.environ, AWS_ACCESS_KEY_ID="S3RVER", AWS_SECRET_ACCESS_KEY="S3RVER")
        s3t, lt, s3req, s3bytes, server_cpu, daemon_cpu = [], [], [], [], [], []
        for rep in range(a.reps):
            for kind in ("s3", "local"):
                mnt = os.path.join(work, f"mnt_{kind}_{rep}")
                prime()
                if kind == "s3":
                    p = mount(b2ndfs, "s3://bench", mnt, f"endpoint=http://127.0.0.1:{sport}",
                              "region=us-east-1", a.opts, env=senv)
                else:
                    p = mount(b2ndfs, os.path.dirname(arr), mnt, a.opts)
                # CPU of the server (one Node.js process) and of the daemon during the read.
                cpu0 = (cpu_seconds(server.pid), cpu_seconds(p.pid))
                seconds, got = read_all(os.path.join(mnt, "arr.b2nd", "data"))
                cpu1 = (cpu_seconds(server.pid), cpu_seconds(p.pid))
                (s3t if kind == "s3" else lt).append(seconds)
                if kind == "s3":
                    if None not in cpu0 + cpu1:
                        server_cpu.append(cpu1[0] - cpu0[0])
                        daemon_cpu.append(cpu1[1] - cpu0[1])
                    remote = stats(mnt)["remote"]
                    s3req.append(remote["requests"])
                    s3bytes.append(remote["bytes_fetched"])
                unmount(mnt, p)
        # The server's own ceiling: one plain GET of the whole object (curl).
        ct = []
        for rep in range(a.reps):
            t0 = time.perf_counter()
            subprocess.run(["curl", "-sf", "-o", "/dev/null", "--aws-sigv4", "aws:amz:us-east-1:s3",
                            "--user", "S3RVER:S3RVER", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                            f"http://127.0.0.1:{sport}/bench/arr.b2nd"], check=True)
            ct.append(time.perf_counter() - t0)
        s3row = dict(s3=statistics.median(s3t), local=statistics.median(lt), nbytes=len(got),
                     curl=statistics.median(ct), object_bytes=info["file_bytes"],
                     requests=statistics.median(s3req), fetched=statistics.median(s3bytes),
                     server_cpu=statistics.median(server_cpu) if server_cpu else None,
                     daemon_cpu=statistics.median(daemon_cpu) if daemon_cpu else None)
        log(f"whole array: s3 {s3row['s3']:.3f} s, local {s3row['local']:.3f} s")
    write_report(a.report, info, rows, s3row, a.reps, a.opts)


def write_report(path, info, rows, s3row, reps, opts):
    out = []
    w = out.append
    w("# Remote reads: benchmark rows (issue #11)\n")
    w(f"One run of `bash bench/remote.sh` on {time.strftime('%Y-%m-%d')}, {os.uname().release}, "
      f"{os.cpu_count()} CPUs shared with other work; medians of {reps} repetitions, each on a "
      f"fresh mount (cold block cache), mounted with `-o {opts}`. Before each timed side "
      f"(each mount, the whole-chunk client) {PRIME_MIB} MiB are touched and freed "
      f"(`bench_reader prime`, as bench/RESULTS.md's cold rows): this VM hands memory the "
      f"host took back out again slowly, and neither side should pay that.\n")
    w(f"Array: float32, shape 256x256x256, chunks 128^3 (8 MiB), blocks 16^3 (16 KiB: 1/512 of a "
      f"chunk; an axis slice touches 1/8 of each chunk's blocks), zstd clevel 1 + shuffle, "
      f"{info['file_bytes']} bytes on disk. Slice: `slices/A/{INDEX}`, 256 KiB.\n")
    w("Servers: nginx (Debian) on loopback; round-trip time added by "
      "`scripts/latency_proxy.py` (asyncio; forwards every segment RTT/2 later per "
      "direction, a new connection pays one RTT) because this kernel has no `tc netem`. "
      "S3: s3rver 3.x (Node.js) on loopback.\n")
    w("## (a) Bytes fetched for one axis slice\n")
    w("Target: bytes transferred ≤ 1.25 × (compressed bytes of the blocks touched + their chunks' heads). "
      "Counted by nginx (`$body_bytes_sent` of every request during the read) and by "
      "`.b2ndfs/stats` (`remote.bytes_fetched`); the container was opened (header, chunk index) "
      "before counting. Its chunk heads (those of all 8 chunks, 16 KiB: the open fetches every head "
      "of a remote container of up to 64 chunks in the background) are counted when they land "
      "after counting starts, as the read follows the open at once. Whole chunks: what a block-unaware client fetches.\n")
    w("| axis | blocks + heads (B) | nginx sent (B) | stats (B) | requests | ratio | whole chunks (B) | target |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["rtt"] != 0:
            continue
        ratio = r["nginx_bytes"] / r["allowed"]
        w(f"| {r['axis']} | {r['allowed']} | {r['nginx_bytes']} | {r['stats_bytes']} | {r['requests']} | "
          f"{ratio:.3f} | {r['plan']['chunk_bytes']} | {verdict(ratio, 1.25, False)} |")
    w("\n## (b) Slice time against fetching whole chunks\n")
    w("Mount: open + read of `slices/A/128` on a fresh mount whose container was opened "
      "(meta.json read, untimed), timed twice on two fresh mounts: right after the open (no "
      "chunk head known: the read fetches them with its blocks, `prefetch_heads=`) and once the "
      "heads are known (a read of `slices/A/0`, other blocks, fetched them, untimed). Whole "
      "chunks: Python fetching the "
      "chunks the slice needs (one Range GET each, on up to 8 kept-alive connections opened as "
      "needed; handed the chunk offsets) + c-blosc2 decompressing them (2 threads) and copying the "
      "slice out. Same bytes checked. Target: ≥ 5× faster (blocks are 1/512 of their chunk, the "
      "slice needs 1/8 of them).\n")
    w("| axis | added RTT | mount, right after open (ms) | mount, heads landed (ms) | whole chunks (ms) "
      "| speed-up right after open | speed-up, heads landed | target (heads landed) |")
    w("|---|---|---|---|---|---|---|---|")
    for r in rows:
        speed = r["base"] / r["fs"]
        landed = r["base"] / r["landed"]
        w(f"| {r['axis']} | {r['rtt']} ms | {r['fs'] * 1e3:.1f} | {r['landed'] * 1e3:.1f} | "
          f"{r['base'] * 1e3:.1f} | {speed:.2f}× ({verdict(speed, 5.0)}) | {landed:.2f}× | "
          f"{verdict(landed, 5.0)} |")
    w("\n## (c) Whole array, sequential: S3 on loopback against the local mount\n")
    if s3row is None:
        w("Not run: s3rver is not installed (scripts/setup.sh installs it into .deps/npm).\n")
    else:
        ratio = s3row["local"] / s3row["s3"]
        w("`cat data` (the whole array, 64 MiB) on a fresh mount of each. Target: S3 throughput "
          "≥ 0.8 × local.\n")
        w("| route | seconds | MiB/s |")
        w("|---|---|---|")
        for name, t in (("s3:// (s3rver, loopback)", s3row["s3"]), ("local mount", s3row["local"])):
            w(f"| {name} | {t:.3f} | {s3row['nbytes'] / t / 2**20:.0f} |")
        w(f"\nS3 / local throughput: {ratio:.2f} — {verdict(ratio, 0.8)}.\n")
        w(f"The server's own ceiling: one `curl` GET of the whole object ({s3row['object_bytes']} "
          f"compressed bytes, everything the mount must fetch) took {s3row['curl']:.3f} s "
          f"({s3row['object_bytes'] / s3row['curl'] / 2**20:.0f} MiB/s): the mount took "
          f"{s3row['s3'] / s3row['curl']:.2f}× that. The mount sent {s3row['requests']:.0f} requests "
          f"and fetched {s3row['fetched']:.0f} bytes ({s3row['fetched'] / s3row['object_bytes']:.2f}× "
          "the object; `.b2ndfs/stats`, mount and container open included).\n")
        if s3row.get("server_cpu") is not None:
            allowed = s3row["local"] / 0.8
            w(f"CPU during the S3 read (medians): s3rver {s3row['server_cpu']:.3f} s (one Node.js "
              f"process), the daemon {s3row['daemon_cpu']:.3f} s, on {os.cpu_count()} CPUs. "
              f"0.8 × the local mount's throughput allows {allowed:.3f} s"
              + (f": the server's CPU alone is {s3row['server_cpu'] / allowed:.2f}× that, "
                 "so no client of this server on this machine could meet the target."
                 if s3row["server_cpu"] > allowed else ".") + "\n")
    # Only the part between the markers is generated: what follows it (the
    # reading of the numbers) is kept.
    begin, end = "<!-- BEGIN generated: bench/remote.py -->", "<!-- END generated -->"
    text = begin + "\n" + "\n".join(out) + "\n" + end + "\n"
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if begin in old and end in old:
            text = old[:old.index(begin)] + text + old[old.index(end) + len(end) + 1:]
    with open(path, "w") as f:
        f.write(text)
    log(f"wrote {path}")


def cleanup(*_):
    for mnt, p in list(MOUNTS):
        subprocess.run(["fusermount3", "-uz", mnt], stderr=subprocess.DEVNULL)
    for p in PROCS:
        stop(p)
    for d in WORKDIRS:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    finally:
        cleanup()
