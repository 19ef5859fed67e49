"""The routes of one array (one geometry): the same reads, taken side by side by
c-blosc2 in-process, b2ndfs cold and warm, the FUSE ceiling (memfs) and, in
the main run, squashfuse + numpy. Every run is appended to the shared list of
records, tagged with the geometry's name.

Each run of one operation is taken by every route back to back (and the
routes' order rotates between runs), so that the load of a shared machine
falls on all routes alike instead of on whichever ran last.
"""
import json
import os
import time

import geometry
from mounts import (cpu_delta, cpu_seconds, log, read_ahead_kb, run, run_json,
                    vm_hwm_kb)

BENCH = os.path.dirname(os.path.abspath(__file__))
PYTHON = '/usr/bin/python3'  # Debian's, which has numpy

# seq0 / seq2: every file of slices/0/ (slices/2/) in name order.
OPS = ['first', 'whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes', 'viewcubes', 'seq0',
       'seq2']
SWEEP_OPS = ['first', 'whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes', 'seq0', 'seq2']
# Operations only b2ndfs has (a file per hyperslab): c-blosc2 does them as `cubes`.
B2NDFS_ONLY = {'viewcubes'}
CUBE_EDGE = 64
RAND_LENGTH = 1 << 20
SEED = 20240601

# The routes of an operation. `b2_plane` is b2ndfs cold (source cached) with a
# cache of about one plane of blocks (geometry.plane_cache_mb); `inproc` for
# seq2 is the untimed-as-target reference of its bytes (bench_inprocess planes).
# `b2_unprimed` is b2_cold_cached without priming the machine's memory first
# (after PRIME_IDLE_SECONDS idle instead): what a fresh daemon pays here for
# memory the host took back (see prime()).
ROUTES = ['inproc', 'inproc_drop', 'b2_cold', 'b2_cold_cached', 'b2_warm', 'memfs', 'sq_cold',
          'sq_warm', 'b2_plane', 'b2_unprimed']
PRIME_IDLE_SECONDS = 3
ROUTES_OF = {
    'whole': {'inproc', 'inproc_drop', 'b2_cold', 'b2_cold_cached', 'b2_warm', 'memfs', 'sq_cold',
              'sq_warm', 'b2_unprimed'},
    'seq0': {'b2_cold_cached', 'b2_warm'},
    'seq2': {'b2_plane', 'inproc'},
    'viewcubes': {'inproc', 'inproc_drop', 'b2_cold', 'b2_cold_cached', 'b2_warm'},
    'first': {'inproc', 'inproc_drop', 'b2_cold', 'b2_cold_cached', 'memfs', 'sq_cold'},
}
WARM = {'b2_warm', 'memfs', 'sq_warm'}


class ArrayRun:
    """The routes over one array. `bench` gives the tools, mounts, records and options."""

    def __init__(self, bench, g, data, paths, ops, full):
        self.bench = bench
        self.args = bench.args
        self.g = g
        self.data = data
        self.src_dir, self.b2nd, self.sqfs = paths['src_dir'], paths['b2nd'], paths.get('sqfs')
        self.ops = ops
        self.full = full  # squashfuse routes too
        self.mnt = bench.mnt
        self.shape = data['shape']
        self.itemsize = geometry.ITEMSIZE
        self.nbytes = data['nbytes']
        self.npy_base = data.get('npy_header_bytes', 0)
        self.mid = [s // 2 for s in self.shape]
        self.slice_bytes = [self.nbytes // s for s in self.shape]
        self.cache_size_mb = max(2048, 3 * (self.nbytes >> 20))
        self.plane_cache_mb = geometry.plane_cache_mb(self.shape, data['chunkshape'],
                                                      data['blockshape'])
        self.rand_count = self.args.rand_count if full else self.args.sweep_rand_count
        self.cube_count = self.args.cube_count if full else self.args.sweep_cube_count
        self.notes = {'cache_size_mb': self.cache_size_mb, 'plane_cache_mb': self.plane_cache_mb,
                      'total_blocks': geometry.total_blocks(self.shape, data['chunkshape'],
                                                            data['blockshape']),
                      'rand_count': self.rand_count, 'cube_count': self.cube_count}

    def tool(self, name):
        return self.bench.tool(name)

    def slice_name(self, axis):
        width = len(str(self.shape[axis] - 1))
        return str(self.mid[axis]).zfill(width)

    def inner(self, op):
        """Repeats inside one run for the short operations, whose single timings a busy
        machine scatters most (slices on the long-lived mounts and in-process)."""
        return self.args.inner if op.startswith('slice') else 1

    # --- commands ---
    def reader_cmd(self, op, root, drop=False, base=0, repeat=1, memfs=False, data_path=None):
        """bench_reader's command for `op` on the mount at `root` (memfs: its flat files;
        data_path: the file that holds the array, if not b2ndfs's or memfs's `data`)."""
        cmd = [self.tool('bench_reader')]
        if drop:
            cmd.append('--drop-cache')
        if repeat > 1:
            cmd += ['--repeat', str(repeat)]
        if base:
            cmd += ['--base', str(base)]
        container = root if memfs else os.path.join(root, 'array.b2nd')
        data_path = data_path or os.path.join(root if memfs else container, 'data')
        if op == 'whole':
            return cmd + ['seq', data_path]
        if op.startswith('slice'):
            axis = int(op[-1])
            path = (os.path.join(root, 'slice%d' % axis) if memfs else
                    os.path.join(container, 'slices', str(axis), self.slice_name(axis)))
            return cmd + ['seq', path]
        if op.startswith('seq'):
            return cmd + ['dir', os.path.join(container, 'slices', op[-1])]
        if op == 'rand':
            return cmd + ['rand', data_path, str(self.rand_count), str(RAND_LENGTH), str(SEED)]
        if op in ('cubes', 'viewcubes'):
            # viewcubes: one view/ file per cube, in the container directory of `data`.
            path = data_path if op == 'cubes' else container
            return cmd + [op, path] + [str(s) for s in self.shape] + [
                str(self.itemsize), str(self.cube_count), str(CUBE_EDGE), str(SEED)]
        if op == 'first':
            return cmd + ['first', data_path]
        raise ValueError(op)

    def inproc_cmd(self, op, evict=False):
        cmd = [self.tool('bench_inprocess'), '--repeat', str(self.inner(op))]
        if evict:
            cmd.append('--evict')
        cmd.append(self.b2nd)
        if op.startswith('slice'):
            return cmd + ['slice', op[-1]]
        if op.startswith('seq'):
            return cmd + ['planes', op[-1]]
        if op == 'rand':
            return cmd + ['rand', str(self.rand_count), str(RAND_LENGTH), str(SEED)]
        if op in ('cubes', 'viewcubes'):
            return cmd + ['cubes', str(self.cube_count), str(CUBE_EDGE), str(SEED)]
        return cmd + [op]

    def squash_cmd(self, op, mountpoint, repeat=1):
        path = os.path.join(mountpoint, 'array.npy')
        npy = [PYTHON, os.path.join(BENCH, 'npy_reader.py'), '--repeat', str(repeat)]
        if op == 'whole':
            return npy + ['whole', path]
        if op.startswith('slice'):
            return npy + ['slice', op[-1], path]
        return self.reader_cmd(op, mountpoint, base=self.npy_base, repeat=repeat, data_path=path)

    # --- page cache of the sources ---
    def evict(self, path):
        run([self.tool('bench_reader'), 'evict', path])
        return self.resident(path)

    def resident(self, path):
        return run_json([self.tool('bench_reader'), 'resident', path])['resident']

    def make_resident(self, path):
        if self.resident(path) < 0.999:
            run([self.tool('bench_reader'), 'seq', path])
        return self.resident(path)

    def prime(self, scenario, op):
        """Touches and frees, right before a cold run, about the memory the run allocates
        (bench_reader prime). In this virtual machine memory freed more than a second or
        two ago has gone back to the host (free page reporting) and costs 0.8-3 s per GiB
        to take back, memory freed just now 0.1-0.5 s: without this a route's time depended
        on what the run before it freed. Returns the seconds priming took (high: the
        memory had gone back)."""
        if scenario == 'b2_unprimed':
            time.sleep(PRIME_IDLE_SECONDS)
            return None
        if scenario == 'b2_plane':
            mib = self.plane_cache_mb
        elif op in ('whole', 'seq0', 'seq2', 'rand'):
            mib = self.nbytes >> 20
        else:
            mib = min(self.nbytes >> 20, 256)
        return run_json([self.tool('bench_reader'), 'prime', str(mib + 64)])['seconds']

    def record(self, scenario, op, rep, result, **extra):
        r = {'geometry': self.g['name'], 'scenario': scenario, 'op': op, 'rep': rep,
             'seconds': result['seconds'], 'bytes': result['bytes'],
             'checksum': result.get('checksum'),
             'client_cpu': result.get('cpu_seconds', result.get('sys_seconds')),
             'repeat': result.get('repeat', 1), **extra}
        self.bench.records.append(r)
        return r

    # --- mounts ---
    def b2ndfs_stats(self, mountpoint):
        try:
            with open(os.path.join(mountpoint, '.b2ndfs', 'stats')) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def memfs_stats(self, mountpoint):
        try:
            with open(os.path.join(mountpoint, '.stats')) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def mount_b2ndfs(self, mountpoint, cache_mb=None):
        opts = 'cache_size=%dM,threads=2' % (cache_mb or self.cache_size_mb)
        return self.bench.mounts.mount([self.bench.b2ndfs, self.src_dir, mountpoint, '-o', opts],
                                       mountpoint, 'b2ndfs')

    def mount_memfs(self, mountpoint):
        files = ['data=%d' % self.nbytes] + [
            'slice%d=%d' % (a, self.slice_bytes[a]) for a in range(3)]
        return self.bench.mounts.mount([self.tool('bench_memfs'), mountpoint] + files,
                                       mountpoint, 'bench_memfs')

    def mount_squash(self, mountpoint):
        return self.bench.mounts.mount(['squashfuse', self.sqfs, mountpoint], mountpoint,
                                       'squashfuse')

    # --- scenarios ---
    def inproc(self, scenario, op, rep):
        if op == 'seq2' and rep > 0:
            return  # the reference bytes of slices/2/: once is enough
        res = self.make_resident(self.b2nd) if scenario == 'inproc' else self.evict(self.b2nd)
        prime_s = self.prime(scenario, op)
        result = run_json(self.inproc_cmd(op, evict=scenario == 'inproc_drop'))
        self.record(scenario, op, rep, result, resident=res, prime_s=prime_s,
                    open_seconds=result.get('open_seconds'))

    def cold(self, scenario, op, rep):
        """A fresh mount for this one run."""
        mountpoint = os.path.join(self.mnt, scenario)
        cache_mb = prime_s = None
        if scenario == 'sq_cold':
            res = self.evict(self.sqfs)
            prime_s = self.prime(scenario, op)
            mount_s, pid = self.mount_squash(mountpoint)
            cmd = self.squash_cmd(op, mountpoint)
        elif scenario == 'memfs_first':
            res = None
            mount_s, pid = self.mount_memfs(mountpoint)
            cmd = self.reader_cmd(op, mountpoint, memfs=True)
        else:
            res = self.evict(self.b2nd) if scenario == 'b2_cold' else self.make_resident(self.b2nd)
            cache_mb = self.plane_cache_mb if scenario == 'b2_plane' else self.cache_size_mb
            prime_s = self.prime(scenario, op)
            mount_s, pid = self.mount_b2ndfs(mountpoint, cache_mb)
            cmd = self.reader_cmd(op, mountpoint)
        try:
            # No stats read before: the first request of a fresh mount must be the reader's.
            cpu0 = cpu_seconds(pid)
            result = run_json(cmd)
            daemon_cpu = cpu_delta(cpu0, cpu_seconds(pid))
            stats = self.b2ndfs_stats(mountpoint) if scenario.startswith('b2') else None
            self.record('memfs' if scenario == 'memfs_first' else scenario, op, rep, result,
                        resident=res, prime_s=prime_s, mount_s=mount_s, daemon_cpu=daemon_cpu,
                        rss_kb=vm_hwm_kb(pid), stats=stats,
                        cache_mb=cache_mb, read_ahead_kb=read_ahead_kb(mountpoint))
        finally:
            self.bench.mounts.unmount(mountpoint)

    def warm(self, scenario, op, rep):
        """The long-lived mount of `scenario`; the file's kernel page cache is dropped first,
        except for squashfuse, whose warm reads are page-cache hits."""
        mountpoint, pid = self.warm_mounts[scenario]
        if scenario == 'sq_warm':
            result = run_json(self.squash_cmd(op, mountpoint, repeat=self.inner(op)))
            self.record(scenario, op, rep, result)
            return
        is_b2 = scenario == 'b2_warm'
        stats_of = self.b2ndfs_stats if is_b2 else self.memfs_stats
        before = stats_of(mountpoint)
        cpu0 = cpu_seconds(pid)
        result = run_json(self.reader_cmd(op, mountpoint, drop=True, repeat=self.inner(op),
                                          memfs=not is_b2))
        daemon_cpu = cpu_delta(cpu0, cpu_seconds(pid))
        self.record(scenario, op, rep, result, stats_before=before, stats=stats_of(mountpoint),
                    daemon_cpu=daemon_cpu, rss_kb=vm_hwm_kb(pid),
                    cache_mb=self.cache_size_mb if is_b2 else None)

    def start_warm_mounts(self):
        self.warm_mounts = {}
        log('%s: mounting the warm routes: b2ndfs (then one full read to fill its block cache), '
            'memfs%s' % (self.g['name'], ', squashfuse (then one run of each operation)'
                         if self.full else ''))

        def b2():
            mountpoint = os.path.join(self.mnt, 'b2_warm')
            self.make_resident(self.b2nd)
            _, pid = self.mount_b2ndfs(mountpoint)
            self.warm_mounts['b2_warm'] = (mountpoint, pid)
            warmup = run_json(self.reader_cmd('whole', mountpoint))
            self.notes['b2_warmup_seconds'] = warmup['seconds']
            self.notes['b2_read_ahead_kb'] = read_ahead_kb(mountpoint)

        def mem():
            mountpoint = os.path.join(self.mnt, 'memfs')
            _, pid = self.mount_memfs(mountpoint)
            self.warm_mounts['memfs'] = (mountpoint, pid)
            self.notes['memfs_read_ahead_kb'] = read_ahead_kb(mountpoint)

        def sq():
            mountpoint = os.path.join(self.mnt, 'sq_warm')
            _, pid = self.mount_squash(mountpoint)
            self.warm_mounts['sq_warm'] = (mountpoint, pid)
            for op in self.ops:
                if self.has_route(op, 'sq_warm'):
                    run_json(self.squash_cmd(op, mountpoint))
        bodies = [('b2ndfs warm', b2), ('memfs', mem)] + ([('squashfuse warm', sq)]
                                                          if self.full else [])
        for name, body in bodies:
            self.bench.attempt('mounting ' + name, body)

    def stop_warm_mounts(self):
        for scenario, (mountpoint, pid) in self.warm_mounts.items():
            if scenario == 'b2_warm':
                self.notes['b2_warm_rss_kb'] = vm_hwm_kb(pid)
                self.notes['b2_warm_stats'] = self.b2ndfs_stats(mountpoint)
            elif scenario == 'memfs':
                self.notes['memfs_rss_kb'] = vm_hwm_kb(pid)
            else:
                self.notes['sq_warm_rss_kb'] = vm_hwm_kb(pid)
            self.bench.mounts.unmount(mountpoint)

    def has_route(self, op, scenario):
        if scenario.startswith('sq') and (not self.full or op.startswith('seq')):
            return False
        if op in ROUTES_OF:
            return scenario in ROUTES_OF[op]
        return scenario not in ('b2_plane', 'b2_unprimed') and (op not in B2NDFS_ONLY or scenario not in (
            'memfs', 'sq_cold', 'sq_warm'))

    def run(self):
        self.start_warm_mounts()
        scenario_fn = {s: (self.warm if s in WARM else self.inproc if s.startswith('inproc')
                           else self.cold) for s in ROUTES}
        try:
            for rep in range(self.args.reps):
                log('%s, run %d of %d: %s, each by every route' % (
                    self.g['name'], rep + 1, self.args.reps, ', '.join(self.ops)))
                for op in self.ops:
                    routes = [s for s in ROUTES if self.has_route(op, s)]
                    k = (rep * 3 + OPS.index(op)) % len(routes)
                    for scenario in routes[k:] + routes[:k]:
                        fn = scenario_fn[scenario]
                        if op == 'first' and scenario == 'memfs':
                            scenario, fn = 'memfs_first', self.cold  # needs a fresh mount
                        elif scenario in WARM and scenario not in self.warm_mounts:
                            continue
                        self.bench.attempt('%s %s %s run %d' % (self.g['name'], scenario, op,
                                                                rep + 1),
                                           lambda: fn(scenario, op, rep))
        finally:
            self.stop_warm_mounts()
        return self.notes

