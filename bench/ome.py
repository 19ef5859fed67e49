#!/usr/bin/env python3
"""bench/ome.py: the cost of OME-Zarr pyramid levels computed on read (issue #37).

    python3 bench/ome.py BUILD_DIR WORK_DIR [--size-mb 400] [--repeat 3] [--update bench/RESULTS.md]

Writes a float32 volume of about SIZE MiB with bench_make_array (chunks 64x128x128, blocks
16x32x32, zstd clevel 1 + shuffle), then compares, each the median of REPEAT runs:
  - the coarsest level of ome.zarr/ read whole (every shard file of it, a fresh mount each run:
    nothing cached, so one pass over level 0 and every level between) against c-blosc2
    decompressing the whole array in-process (bench_inprocess whole, 2 threads);
    target: within 1.5x;
  - one inner chunk of level 2 (a fresh mount, read with POSIX_FADV_RANDOM so that the kernel
    reads no further) against c-blosc2 decompressing its footprint at level 0 (bench_inprocess box);
    target: within 1.5x.
Prints a Markdown section; --update replaces (or appends) the section "OME-Zarr pyramids" of the
given RESULTS.md. The mount uses threads=2, as bench_inprocess's 2 decompression threads.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SECTION = "## OME-Zarr pyramids"


def run_json(cmd):
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


class Mount:
    def __init__(self, b2ndfs, src, mnt):
        self.mnt = mnt
        os.makedirs(mnt, exist_ok=True)
        self.proc = subprocess.Popen([b2ndfs, "-f", "-o", "cache_size=2048M,threads=2", src, mnt],
                                     stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.ismount(mnt):
                return
            time.sleep(0.05)
        self.close()
        sys.exit(f"b2ndfs did not mount {mnt}")

    def stats(self):
        with open(os.path.join(self.mnt, ".b2ndfs", "stats")) as f:
            return json.load(f)["reads"]

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], stderr=subprocess.DEVNULL)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def read_tree(root):
    total = 0
    for d, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(d, name), "rb", buffering=0) as f:
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    total += len(b)
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--size-mb", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--update")
    a = ap.parse_args()
    b2ndfs = os.path.join(a.build, "src", "app", "b2ndfs")
    make = os.path.join(a.build, "bench", "bench_make_array")
    inproc = os.path.join(a.build, "bench", "bench_inprocess")
    src = os.path.join(a.work, "src")
    os.makedirs(src, exist_ok=True)
    vol = os.path.join(src, "vol.b2nd")
    made = run_json([make, "--size-mb", str(a.size_mb), "--b2nd", vol])
    whole = run_json([inproc, "--repeat", str(a.repeat), vol, "whole"])

    coarse, computed, levels, top_shape = [], 0, 0, None
    tile, tile_computed = [], 0
    with tempfile.TemporaryDirectory(dir=a.work) as tmp:
        for k in range(a.repeat):
            m = Mount(b2ndfs, src, os.path.join(tmp, f"m{k}"))
            try:
                g = os.path.join(m.mnt, "vol.b2nd", "ome.zarr")
                levels = len([x for x in os.listdir(g) if x != "zarr.json"])
                with open(os.path.join(g, str(levels - 1), "zarr.json")) as f:
                    top_shape = json.load(f)["shape"]
                before = m.stats()["blocks_computed"]
                t0 = time.perf_counter()
                read_tree(os.path.join(g, str(levels - 1), "c"))
                coarse.append(time.perf_counter() - t0)
                computed = m.stats()["blocks_computed"] - before
            finally:
                m.close()
            m = Mount(b2ndfs, src, os.path.join(tmp, f"t{k}"))
            try:
                g = os.path.join(m.mnt, "vol.b2nd", "ome.zarr", "2")
                with open(os.path.join(g, "zarr.json")) as f:
                    z = json.load(f)
                inner = z["codecs"][0]["configuration"]["chunk_shape"]
                chunks = z["chunk_grid"]["configuration"]["chunk_shape"]
                per = [c // i for c, i in zip(chunks, inner)]
                # Inner chunk (1, 1, 1) of shard (0, 0, 0): an interior tile.
                k_inner = (1 * per[1] + 1) * per[2] + 1
                nbytes = inner[0] * inner[1] * inner[2] * 4
                before = m.stats()["blocks_computed"]
                t0 = time.perf_counter()
                fd = os.open(os.path.join(g, "c", "0", "0", "0"), os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                got = os.pread(fd, nbytes, k_inner * nbytes)
                os.close(fd)
                tile.append(time.perf_counter() - t0)
                tile_computed = m.stats()["blocks_computed"] - before
                if len(got) != nbytes:
                    sys.exit("short tile read")
            finally:
                m.close()
    # The tile's footprint at level 0: 4x along each space axis.
    start = [4 * i for i in inner]
    stop = [4 * 2 * i for i in inner]
    foot = run_json([inproc, "--repeat", str(a.repeat), vol, "box",
                     ",".join(map(str, start)), ",".join(map(str, stop))])

    def verdict(ratio):
        return "met" if ratio <= 1.5 else "**missed**"

    t_coarse, t_tile = statistics.median(coarse), statistics.median(tile)
    r1, r2 = t_coarse / whole["seconds"], t_tile / foot["seconds"]
    mib = made.get("nbytes", a.size_mb << 20) / (1 << 20) if isinstance(made, dict) else a.size_mb
    lines = [
        SECTION, "",
        f"`python3 bench/ome.py` on {time.strftime('%Y-%m-%d')}: a float32 volume of {mib:.0f} MiB "
        f"(bench_make_array: chunks 64x128x128, blocks 16x32x32, zstd 1 + shuffle), {levels} levels "
        f"(the coarsest {top_shape}); medians of {a.repeat} runs, a fresh mount each "
        f"(`threads=2`), c-blosc2 in-process with 2 threads. Load average when done: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        + (": the machine was busy, so both sides were slowed by other jobs; ratios this noisy are "
           "indicative only (rerun on a quiet machine)." if os.getloadavg()[0] > (os.cpu_count() or 1)
           else "."), "",
        "| target | b2ndfs | c-blosc2 | ratio | goal | verdict |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| coarsest level read whole ({computed} blocks computed) vs decompressing the whole array "
        f"| {t_coarse:.3f} s | {whole['seconds']:.3f} s | {r1:.2f}x | <= 1.5x | {verdict(r1)} |",
        f"| one level-2 tile ({tile_computed} blocks computed) vs decompressing its footprint "
        f"{start}:{stop} | {t_tile * 1e3:.1f} ms | {foot['seconds'] * 1e3:.1f} ms | {r2:.2f}x "
        f"| <= 1.5x | {verdict(r2)} |",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.update:
        old = open(a.update).read() if os.path.exists(a.update) else ""
        if SECTION in old:
            head, rest = old.split(SECTION, 1)
            tail = rest.split("\n## ", 1)
            old = head + text + ("\n## " + tail[1] if len(tail) > 1 else "")
        else:
            old = old.rstrip("\n") + "\n\n" + text
        open(a.update, "w").write(old)


if __name__ == "__main__":
    main()
