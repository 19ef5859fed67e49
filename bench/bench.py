#!/usr/bin/python3
"""The b2ndfs benchmark driver (run it through bench/run.sh, which builds first).

The main run measures, side by side, the same reads of one 1 GiB array by
these routes: c-blosc2 in-process (the reference), b2ndfs with a cold and a
warm block cache (and, for reading slices/2/ file by file, a cache of about
one plane of blocks), a trivial in-memory FUSE filesystem (the ceiling), and
squashfuse serving the same array as a plain .npy read with numpy.memmap;
then it lists a directory of 10,000 tiny containers through b2ndfs. The
sweep (--no-sweep skips it) repeats the b2ndfs, c-blosc2 and memfs routes on
smaller arrays of other block and chunk shapes and codecs (bench/geometry.py).
Every number is the median of --reps runs. Results: bench/RESULTS.md
(markdown) and bench/out/results.json (every run). Everything mounted is
unmounted on exit, whatever happens.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import sys
import time

import geometry
from listing import Listing
from mounts import T0, BenchError, Mounts, log, run, run_json
from routes import OPS, SWEEP_OPS, ArrayRun

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)


class Bench:
    def __init__(self, args):
        self.args = args
        self.build = args.build
        self.tools = os.path.join(self.build, 'bench')
        self.b2ndfs = os.path.join(self.build, 'src', 'app', 'b2ndfs')
        self.out = args.out
        self.mnt = os.path.join(self.out, 'mnt')
        self.mounts = Mounts()
        self.records = []
        self.errors = []
        self.notes = {}
        self.geometries = []  # per array measured: geometry, data, notes

    def tool(self, name):
        return os.path.join(self.tools, name)

    def attempt(self, what, body):
        try:
            return body()
        except BenchError as e:
            self.errors.append('%s: %s' % (what, e))
            log('ERROR in %s: %s' % (what, e))
            return None

    # --- data ---
    def paths(self, g, size_mb):
        d = os.path.join(self.out, 'data-%s-%dmb' % (g['name'], size_mb))  # kept per array
        return {'dir': d, 'src_dir': os.path.join(d, 'src'),
                'b2nd': os.path.join(d, 'src', 'array.b2nd'), 'npy_dir': os.path.join(d, 'npy'),
                'npy': os.path.join(d, 'npy', 'array.npy'), 'sqfs': os.path.join(d, 'array.sqfs'),
                'tiny_dir': os.path.join(d, 'tiny')}

    def generate(self, g, size_mb, full):
        """Writes the array of geometry `g` (and, for the main run, its .npy twin, the
        squashfs image and the tiny containers) unless the same is there already."""
        p = self.paths(g, size_mb)
        stamp = os.path.join(p['dir'], 'data.json')
        wanted = {'size_mb': size_mb, 'geometry': g, 'version': 2, 'full': full,
                  'tiny_count': self.args.tiny_count if full else 0}
        needed = [p['b2nd']] + ([p['npy'], p['sqfs']] if full else [])
        if not self.args.regen and os.path.exists(stamp):
            with open(stamp) as f:
                info = json.load(f)
            if info.get('wanted') == wanted and all(os.path.exists(x) for x in needed):
                log('reusing the data in %s (--regen to rewrite it)' % p['dir'])
                return info, p
        for d in (p['src_dir'], p['npy_dir'], p['tiny_dir']):
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(p['src_dir'])
        log('writing a %d MiB array (%s)%s' % (
            size_mb, g['label'], ', its .npy twin and %d tiny containers' % self.args.tiny_count
            if full else ''))
        cmd = [self.tool('bench_make_array'), '--size-mb', str(size_mb), '--b2nd', p['b2nd']] + \
            geometry.make_args(g)
        if full:
            os.makedirs(p['npy_dir'])
            os.makedirs(p['tiny_dir'])
            cmd += ['--npy', p['npy'], '--tiny-dir', p['tiny_dir'], '--tiny-count',
                    str(self.args.tiny_count)]
        made = run_json(cmd)
        if full:
            log('mksquashfs (zstd level 1) of the .npy')
            if os.path.exists(p['sqfs']):
                os.remove(p['sqfs'])
            t = time.perf_counter()
            run(['mksquashfs', p['npy_dir'], p['sqfs'], '-comp', 'zstd', '-Xcompression-level',
                 '1', '-noappend', '-quiet', '-no-progress', '-no-xattrs', '-processors', '2'])
            made['mksquashfs_s'] = time.perf_counter() - t
            made['sqfs_bytes'] = os.path.getsize(p['sqfs'])
        os.sync()
        info = {'wanted': wanted, **made}
        with open(stamp, 'w') as f:
            json.dump(info, f)
        return info, p

    def measure(self, g, size_mb, full):
        data, p = self.generate(g, size_mb, full)
        log('%s: array %s float32, %d MiB, cratio %.2f' % (
            g['name'], data['shape'], data['nbytes'] >> 20, data['nbytes'] / data['cbytes']))
        ops = self.args.ops if full else [op for op in self.args.ops if op in SWEEP_OPS]
        array = ArrayRun(self, g, data, p, ops, full)
        notes = array.run()
        self.geometries.append({'geometry': g, 'data': data, 'notes': notes, 'main': full,
                                'size_mb': size_mb})
        return data, p, array

    def machine(self):
        info = {'nproc': os.cpu_count(), 'kernel': platform.release()}
        with open('/proc/meminfo') as f:
            info['ram_gib'] = int(f.readline().split()[1]) / 2**20
        try:
            with open('/proc/cpuinfo') as f:
                info['cpu'] = next(line.split(':', 1)[1].strip() for line in f
                                   if line.startswith('model name'))
        except (OSError, StopIteration):
            info['cpu'] = platform.processor()
        try:
            info['debian'] = open('/etc/debian_version').read().strip()
        except OSError:
            info['debian'] = '?'
        fs = run(['findmnt', '-no', 'FSTYPE,SOURCE', '-T', self.out], check=False).stdout.split()
        info['out_fs'] = ' on '.join(fs) if fs else '?'
        info['blosc2'] = self.blosc2_version()
        sqv = run(['dpkg-query', '-W', '-f', '${Version}', 'squashfuse'], check=False).stdout
        info['squashfuse'] = sqv or '?'
        fv = run(['dpkg-query', '-W', '-f', '${Version}', 'libfuse3-3'], check=False).stdout
        info['libfuse'] = fv or '?'
        try:
            info['git'] = run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], check=False).stdout.strip()
        except OSError:
            info['git'] = '?'
        return info

    def blosc2_version(self):
        # scripts/setup.sh's project-local prefix (3.3), an older checkout's (2.x), the system's.
        for inc in (os.path.join(ROOT, '.deps/blosc2-3.3/usr/include/blosc2.h'),
                    os.path.join(ROOT, '.deps/blosc2/usr/include/blosc2.h'), '/usr/include/blosc2.h'):
            try:
                for line in open(inc):
                    if line.startswith('#define BLOSC2_VERSION_STRING'):
                        return line.split('"')[1]
            except OSError:
                continue
        return '?'

    def main(self):
        os.makedirs(self.mnt, exist_ok=True)
        self.notes['loadavg_start'] = os.getloadavg()
        main_g = geometry.by_name(geometry.MAIN)
        data, p, array = self.measure(main_g, self.args.size_mb, True)
        if self.args.listing:
            listing = Listing(self, p['tiny_dir'],
                              lambda src, mnt: self.mounts.mount(
                                  [self.b2ndfs, src, mnt, '-o',
                                   'cache_size=%dM,threads=2' % array.cache_size_mb], mnt,
                                  'b2ndfs'))
            self.notes['listing'] = listing.run()
        if self.args.sweep:
            for g in geometry.GEOMETRIES:
                if g['name'] != geometry.MAIN:
                    self.measure(g, self.args.sweep_size_mb, False)
        self.notes['loadavg_end'] = os.getloadavg()
        self.notes['elapsed_s'] = time.monotonic() - T0
        main_notes = self.geometries[0]['notes']
        results = {'args': vars(self.args), 'machine': self.machine(), 'data': data,
                   'notes': {**main_notes, **self.notes}, 'geometries': self.geometries,
                   'errors': self.errors, 'records': self.records}
        with open(os.path.join(self.out, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
        import report
        text = report.render(results, report.kept_sections(self.args.results))
        with open(self.args.results, 'w') as f:
            f.write(text)
        log('wrote %s' % self.args.results)
        print(text)
        return 1 if self.errors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--size-mb', type=int, default=None, help='uncompressed array size (default 1024)')
    p.add_argument('--quick', action='store_true',
                   help='128 MiB array (64 MiB in the sweep), fewer random reads')
    p.add_argument('--reps', type=int, default=3, help='runs per timing (the median is reported)')
    p.add_argument('--inner', type=int, default=5,
                   help='repeats inside one run of a slice read where no fresh mount is needed '
                        '(the run reports their median)')
    p.add_argument('--rand-count', type=int, default=None, help='random 1 MiB reads per run')
    p.add_argument('--cube-count', type=int, default=None, help='random 64^3 sub-cubes per run')
    p.add_argument('--tiny-count', type=int, default=10000, help='containers for the ls -l test')
    p.add_argument('--regen', action='store_true', help='rewrite the data even if present')
    p.add_argument('--ops', default=','.join(OPS),
                   help='comma-separated operations to time (default all: %s)' % ','.join(OPS))
    p.add_argument('--no-listing', dest='listing', action='store_false',
                   help='skip the ls -l test of 10,000 tiny containers')
    p.add_argument('--no-sweep', dest='sweep', action='store_false',
                   help='skip the geometry and codec sweep (bench/geometry.py)')
    p.add_argument('--sweep-size-mb', type=int, default=None,
                   help='uncompressed size of each sweep array (default 256, 64 with --quick)')
    p.add_argument('--build', default=os.path.join(ROOT, 'build-bench'))
    p.add_argument('--out', default=os.path.join(BENCH, 'out'))
    p.add_argument('--results', default=os.path.join(BENCH, 'RESULTS.md'))
    args = p.parse_args()
    if args.size_mb is None:
        args.size_mb = 128 if args.quick else 1024
    if args.sweep_size_mb is None:
        args.sweep_size_mb = 64 if args.quick else 256
    if args.rand_count is None:
        args.rand_count = 100 if args.quick else 200
    if args.cube_count is None:
        args.cube_count = 10 if args.quick else 20
    # The sweep's arrays are smaller: fewer random reads, so that it stays short.
    args.sweep_rand_count = min(args.rand_count, 100)
    args.sweep_cube_count = min(args.cube_count, 10)
    unknown = set(args.ops.split(',')) - set(OPS)
    if unknown:
        p.error('--ops: unknown %s (known: %s)' % (','.join(sorted(unknown)), ','.join(OPS)))
    args.ops = [op for op in OPS if op in args.ops.split(',')]
    args.build = os.path.abspath(args.build)
    args.out = os.path.abspath(args.out)
    sys.path.insert(0, BENCH)

    bench = Bench(args)

    def on_signal(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        return bench.main()
    except (KeyboardInterrupt, SystemExit) as e:
        log('stopped (%s); unmounting' % (type(e).__name__ if isinstance(e, KeyboardInterrupt)
                                          else 'signal'))
        return 130
    finally:
        bench.mounts.unmount_all()


if __name__ == '__main__':
    sys.exit(main())
