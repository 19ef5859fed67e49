#!/usr/bin/python3
"""The b2ndfs benchmark driver (run it through bench/run.sh, which builds first).

One run measures, side by side, the same reads of one array by five routes:
  c-blosc2 in-process (the reference), b2ndfs with a cold and a warm block
  cache, a trivial in-memory FUSE filesystem (the ceiling), and squashfuse
  serving the same array as a plain .npy read with numpy.memmap;
then lists a directory of 10,000 tiny containers through b2ndfs. Every
number is the median of --reps runs. Results: bench/RESULTS.md (markdown)
and bench/out/results.json (every run). Everything mounted is unmounted on
exit, whatever happens.
"""
import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PYTHON = '/usr/bin/python3'  # Debian's, which has numpy

OPS = ['first', 'whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes', 'viewcubes']
# Operations only b2ndfs has (a file per hyperslab): c-blosc2 does them as `cubes`.
B2NDFS_ONLY = {'viewcubes'}
CUBE_EDGE = 64
RAND_LENGTH = 1 << 20
SEED = 20240601

T0 = time.monotonic()


def log(message):
    print('[bench %6.1fs] %s' % (time.monotonic() - T0, message), file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


def run(cmd, timeout=900, check=True):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError('timed out after %d s (hang?): %s' % (timeout, ' '.join(cmd)))
    if check and p.returncode != 0:
        raise BenchError('failed (exit %d): %s\n%s' % (p.returncode, ' '.join(cmd),
                                                        p.stderr.strip()[-2000:]))
    return p


def run_json(cmd, timeout=900):
    out = run(cmd, timeout).stdout.strip().splitlines()
    if not out:
        raise BenchError('no output from ' + ' '.join(cmd))
    return json.loads(out[-1])


# --- mounts -------------------------------------------------------------------

def is_mounted(path):
    with open('/proc/self/mountinfo') as f:
        return any(line.split()[4] == path for line in f)


def daemon_pid(mountpoint, program):
    """The pid of the daemon serving `mountpoint` (its command line names both)."""
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                argv = [a.decode(errors='replace') for a in f.read().split(b'\0') if a]
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == program and mountpoint in argv:
            return int(entry)
    return None


def vm_hwm_kb(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except (OSError, TypeError):
        pass
    return None


def cpu_seconds(pid):
    """CPU time of a process: the sum of its live threads' run time (ns resolution, from
    /proc/PID/task/*/sched), else utime + stime (10 ms resolution, dead threads too)."""
    if pid is None:
        return None
    total = 0.0
    try:
        for tid in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/sched' % (pid, tid)) as f:
                for line in f:
                    if line.startswith('se.sum_exec_runtime'):
                        total += float(line.split(':')[1]) / 1000.0
                        break
        return total
    except (OSError, ValueError):
        pass
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, TypeError, IndexError, ValueError):
        return None


def cpu_delta(before, after):
    return after - before if before is not None and after is not None else None


def read_ahead_kb(mountpoint):
    try:
        dev = os.stat(mountpoint).st_dev
        with open('/sys/class/bdi/%d:%d/read_ahead_kb' % (os.major(dev), os.minor(dev))) as f:
            return int(f.read())
    except OSError:
        return None


class Mounts:
    """Every mount made here, so that all are undone on exit."""

    def __init__(self):
        self.active = []

    def mount(self, cmd, mountpoint, program):
        os.makedirs(mountpoint, exist_ok=True)
        if is_mounted(mountpoint):
            self.unmount(mountpoint)
        self.active.append(mountpoint)
        t = time.perf_counter()
        run(cmd, timeout=120)
        seconds = time.perf_counter() - t
        if not is_mounted(mountpoint):
            raise BenchError('%s returned but %s is not mounted' % (cmd[0], mountpoint))
        return seconds, daemon_pid(mountpoint, program)

    def unmount(self, mountpoint):
        for attempt in range(20):
            if not is_mounted(mountpoint):
                break
            if subprocess.run(['fusermount3', '-u', mountpoint], stderr=subprocess.DEVNULL).returncode == 0:
                break
            time.sleep(0.25)
        if is_mounted(mountpoint):
            subprocess.run(['fusermount3', '-uz', mountpoint], stderr=subprocess.DEVNULL)
        if mountpoint in self.active:
            self.active.remove(mountpoint)

    def unmount_all(self):
        for m in list(self.active):
            self.unmount(m)


# --- the benchmark --------------------------------------------------------------

class Bench:
    def __init__(self, args):
        self.args = args
        self.build = args.build
        self.tools = os.path.join(self.build, 'bench')
        self.b2ndfs = os.path.join(self.build, 'src', 'app', 'b2ndfs')
        self.out = args.out
        self.mnt = os.path.join(self.out, 'mnt')
        self.data_dir = os.path.join(self.out, 'data-%dmb' % args.size_mb)  # kept per size
        self.src_dir = os.path.join(self.data_dir, 'src')
        self.b2nd = os.path.join(self.src_dir, 'array.b2nd')
        self.npy_dir = os.path.join(self.data_dir, 'npy')
        self.npy = os.path.join(self.npy_dir, 'array.npy')
        self.sqfs = os.path.join(self.data_dir, 'array.sqfs')
        self.tiny_dir = os.path.join(self.data_dir, 'tiny')
        self.mounts = Mounts()
        self.records = []
        self.errors = []
        self.notes = {}
        self.cache_size_mb = max(2048, 3 * args.size_mb)
        self.ops = args.ops
        self.b2ndfs_opts = 'cache_size=%dM,threads=2' % self.cache_size_mb

    def tool(self, name):
        return os.path.join(self.tools, name)

    # --- data ---
    def generate(self):
        stamp = os.path.join(self.data_dir, 'data.json')
        wanted = {'size_mb': self.args.size_mb, 'tiny_count': self.args.tiny_count, 'version': 1}
        if not self.args.regen and os.path.exists(stamp):
            with open(stamp) as f:
                info = json.load(f)
            if info.get('wanted') == wanted and all(
                    os.path.exists(p) for p in (self.b2nd, self.npy, self.sqfs)):
                log('reusing the data in %s (--regen to rewrite it)' % self.data_dir)
                self.data = info
                return
        for d in (self.src_dir, self.npy_dir, self.tiny_dir):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        log('writing a %d MiB array, its .npy twin and %d tiny containers' %
            (self.args.size_mb, self.args.tiny_count))
        made = run_json([self.tool('bench_make_array'), '--size-mb', str(self.args.size_mb),
                         '--b2nd', self.b2nd, '--npy', self.npy, '--tiny-dir', self.tiny_dir,
                         '--tiny-count', str(self.args.tiny_count)])
        log('mksquashfs (zstd level 1) of the .npy')
        if os.path.exists(self.sqfs):
            os.remove(self.sqfs)
        t = time.perf_counter()
        run(['mksquashfs', self.npy_dir, self.sqfs, '-comp', 'zstd', '-Xcompression-level', '1',
             '-noappend', '-quiet', '-no-progress', '-no-xattrs', '-processors', '2'])
        made['mksquashfs_s'] = time.perf_counter() - t
        made['sqfs_bytes'] = os.path.getsize(self.sqfs)
        os.sync()
        self.data = {'wanted': wanted, **made}
        with open(stamp, 'w') as f:
            json.dump(self.data, f)

    # --- geometry of the operations ---
    def setup_geometry(self):
        self.shape = self.data['shape']
        self.itemsize = 4
        self.nbytes = self.data['nbytes']
        self.npy_base = self.data['npy_header_bytes']
        self.mid = [s // 2 for s in self.shape]
        self.slice_bytes = [self.nbytes // s for s in self.shape]

    def slice_name(self, axis):
        width = len(str(self.shape[axis] - 1))
        return str(self.mid[axis]).zfill(width)

    def inner(self, op):
        """Repeats inside one run for the short operations, whose single timings a busy
        machine scatters most (slices on the long-lived mounts and in-process)."""
        return self.args.inner if op.startswith('slice') else 1

    def reader_cmd(self, op, data_path, slice_paths, drop=False, base=0, repeat=1):
        cmd = [self.tool('bench_reader')]
        if drop:
            cmd.append('--drop-cache')
        if repeat > 1:
            cmd += ['--repeat', str(repeat)]
        if base:
            cmd += ['--base', str(base)]
        if op == 'whole':
            return cmd + ['seq', data_path]
        if op.startswith('slice'):
            return cmd + ['seq', slice_paths[int(op[-1])]]
        if op == 'rand':
            return cmd + ['rand', data_path, str(self.args.rand_count), str(RAND_LENGTH), str(SEED)]
        if op in ('cubes', 'viewcubes'):
            # viewcubes: one view/ file per cube, in the container directory of `data`.
            path = data_path if op == 'cubes' else os.path.dirname(data_path)
            return cmd + [op, path] + [str(s) for s in self.shape] + [
                str(self.itemsize), str(self.args.cube_count), str(CUBE_EDGE), str(SEED)]
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
        if op == 'rand':
            return cmd + ['rand', str(self.args.rand_count), str(RAND_LENGTH), str(SEED)]
        if op in ('cubes', 'viewcubes'):
            return cmd + ['cubes', str(self.args.cube_count), str(CUBE_EDGE), str(SEED)]
        return cmd + [op]

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

    def record(self, scenario, op, rep, result, **extra):
        r = {'scenario': scenario, 'op': op, 'rep': rep, 'seconds': result['seconds'],
             'bytes': result['bytes'], 'checksum': result.get('checksum'),
             'client_cpu': result.get('cpu_seconds', result.get('sys_seconds')),
             'repeat': result.get('repeat', 1), **extra}
        self.records.append(r)
        return r

    def attempt(self, what, body):
        try:
            return body()
        except BenchError as e:
            self.errors.append('%s: %s' % (what, e))
            log('ERROR in %s: %s' % (what, e))
            return None

    # --- scenarios ---
    # Each run of one operation is taken by every route back to back (and the
    # routes' order rotates between runs), so that the load of a shared
    # machine falls on all routes alike instead of on whichever ran last.

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

    def mount_b2ndfs(self, source, mountpoint):
        return self.mounts.mount([self.b2ndfs, source, mountpoint, '-o', self.b2ndfs_opts],
                                 mountpoint, 'b2ndfs')

    def mount_memfs(self, mountpoint):
        files = ['data=%d' % self.nbytes] + [
            'slice%d=%d' % (a, self.slice_bytes[a]) for a in range(3)]
        return self.mounts.mount([self.tool('bench_memfs'), mountpoint] + files, mountpoint,
                                 'bench_memfs')

    def mount_squash(self, mountpoint):
        return self.mounts.mount(['squashfuse', self.sqfs, mountpoint], mountpoint, 'squashfuse')

    def b2_paths(self, mountpoint):
        d = os.path.join(mountpoint, 'array.b2nd')
        return os.path.join(d, 'data'), [
            os.path.join(d, 'slices', str(a), self.slice_name(a)) for a in range(3)]

    def memfs_paths(self, mountpoint):
        return os.path.join(mountpoint, 'data'), [
            os.path.join(mountpoint, 'slice%d' % a) for a in range(3)]

    def squash_cmd(self, op, mountpoint, repeat=1):
        path = os.path.join(mountpoint, 'array.npy')
        npy = [PYTHON, os.path.join(BENCH, 'npy_reader.py'), '--repeat', str(repeat)]
        if op == 'whole':
            return npy + ['whole', path]
        if op.startswith('slice'):
            return npy + ['slice', op[-1], path]
        return self.reader_cmd(op, path, None, base=self.npy_base, repeat=repeat)

    def inproc(self, scenario, op, rep):
        res = self.make_resident(self.b2nd) if scenario == 'inproc' else self.evict(self.b2nd)
        result = run_json(self.inproc_cmd(op, evict=scenario == 'inproc_drop'))
        self.record(scenario, op, rep, result, resident=res,
                    open_seconds=result.get('open_seconds'))

    def cold(self, scenario, op, rep):
        """A fresh mount for this one run."""
        mountpoint = os.path.join(self.mnt, scenario)
        if scenario == 'sq_cold':
            res = self.evict(self.sqfs)
            mount_s, pid = self.mount_squash(mountpoint)
            cmd = self.squash_cmd(op, mountpoint)
        elif scenario == 'memfs_first':
            res = None
            mount_s, pid = self.mount_memfs(mountpoint)
            cmd = self.reader_cmd(op, *self.memfs_paths(mountpoint))
        else:
            res = self.evict(self.b2nd) if scenario == 'b2_cold' else self.make_resident(self.b2nd)
            mount_s, pid = self.mount_b2ndfs(self.src_dir, mountpoint)
            cmd = self.reader_cmd(op, *self.b2_paths(mountpoint))
        try:
            cpu0 = cpu_seconds(pid)
            result = run_json(cmd)
            daemon_cpu = cpu_delta(cpu0, cpu_seconds(pid))
            stats = self.b2ndfs_stats(mountpoint) if scenario.startswith('b2') else None
            self.record('memfs' if scenario == 'memfs_first' else scenario, op, rep, result,
                        resident=res, mount_s=mount_s, daemon_cpu=daemon_cpu,
                        rss_kb=vm_hwm_kb(pid), stats=stats,
                        read_ahead_kb=read_ahead_kb(mountpoint))
        finally:
            self.mounts.unmount(mountpoint)

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
        paths = self.b2_paths(mountpoint) if is_b2 else self.memfs_paths(mountpoint)
        before = stats_of(mountpoint)
        cpu0 = cpu_seconds(pid)
        result = run_json(self.reader_cmd(op, *paths, drop=True, repeat=self.inner(op)))
        daemon_cpu = cpu_delta(cpu0, cpu_seconds(pid))
        self.record(scenario, op, rep, result, stats_before=before, stats=stats_of(mountpoint),
                    daemon_cpu=daemon_cpu)

    def start_warm_mounts(self):
        self.warm_mounts = {}
        log('mounting the warm routes: b2ndfs (then one full read to fill its block cache), '
            'memfs, squashfuse (then one run of each operation)')

        def b2():
            mountpoint = os.path.join(self.mnt, 'b2_warm')
            self.make_resident(self.b2nd)
            _, pid = self.mount_b2ndfs(self.src_dir, mountpoint)
            self.warm_mounts['b2_warm'] = (mountpoint, pid)
            warmup = run_json(self.reader_cmd('whole', *self.b2_paths(mountpoint)))
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
                if op != 'first' and op not in B2NDFS_ONLY:
                    run_json(self.squash_cmd(op, mountpoint))
        for name, body in (('b2ndfs warm', b2), ('memfs', mem), ('squashfuse warm', sq)):
            self.attempt('mounting ' + name, body)

    def stop_warm_mounts(self):
        for scenario, (mountpoint, pid) in self.warm_mounts.items():
            if scenario == 'b2_warm':
                self.notes['b2_warm_rss_kb'] = vm_hwm_kb(pid)
                self.notes['b2_warm_stats'] = self.b2ndfs_stats(mountpoint)
            elif scenario == 'memfs':
                self.notes['memfs_rss_kb'] = vm_hwm_kb(pid)
            else:
                self.notes['sq_warm_rss_kb'] = vm_hwm_kb(pid)
            self.mounts.unmount(mountpoint)

    def run_routes(self):
        self.start_warm_mounts()
        try:
            routes = [('inproc', self.inproc), ('inproc_drop', self.inproc),
                      ('b2_cold', self.cold), ('b2_cold_cached', self.cold),
                      ('b2_warm', self.warm), ('memfs', self.warm), ('sq_cold', self.cold),
                      ('sq_warm', self.warm)]
            for rep in range(self.args.reps):
                log('run %d of %d: %s, each by every route' % (rep + 1, self.args.reps,
                                                               ', '.join(self.ops)))
                for op in self.ops:
                    k = (rep * 3 + OPS.index(op)) % len(routes)
                    for scenario, fn in routes[k:] + routes[:k]:
                        if op in B2NDFS_ONLY and scenario in ('memfs', 'sq_cold', 'sq_warm'):
                            continue
                        if op == 'first' and scenario in ('b2_warm', 'sq_warm'):
                            continue  # "first byte after mount" needs a fresh mount
                        if op == 'first' and scenario == 'memfs':
                            scenario, fn = 'memfs_first', self.cold
                        elif scenario in ('b2_warm', 'memfs', 'sq_warm') and \
                                scenario not in self.warm_mounts:
                            continue
                        self.attempt('%s %s run %d' % (scenario, op, rep + 1),
                                     lambda: fn(scenario, op, rep))
        finally:
            self.stop_warm_mounts()

    def drop_all_caches(self):
        try:
            with open('/proc/sys/vm/drop_caches', 'w') as f:
                f.write('3\n')
            return True
        except OSError:
            return False

    def time_ls(self, path):
        t = time.perf_counter()
        p = subprocess.run(['ls', '-l', path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        seconds = time.perf_counter() - t
        if p.returncode != 0:
            raise BenchError('ls -l %s failed: %s' % (path, p.stderr.decode()[-500:]))
        return seconds, p.stdout.count(b'\n')

    def run_listing(self):
        log('ls -l of %d tiny containers' % self.args.tiny_count)
        mountpoint = os.path.join(self.mnt, 'tiny')
        names = sorted(os.listdir(self.tiny_dir))
        old = 1000000000  # 2001-09-09: relatime updates an atime this old on any read
        for n in names:
            p = os.path.join(self.tiny_dir, n)
            os.utime(p, ns=(old * 10**9, os.stat(p).st_mtime_ns))
        listing = {'dropped_caches': None}
        for rep in range(self.args.reps):
            listing['dropped_caches'] = self.drop_all_caches()
            seconds, lines = self.time_ls(self.tiny_dir)
            self.records.append({'scenario': 'native', 'op': 'ls_cold', 'rep': rep,
                                 'seconds': seconds, 'lines': lines})
            seconds, lines = self.time_ls(self.tiny_dir)
            self.records.append({'scenario': 'native', 'op': 'ls_warm', 'rep': rep,
                                 'seconds': seconds, 'lines': lines})

        def body(rep):
            self.drop_all_caches()
            mount_s, pid = self.mount_b2ndfs(self.tiny_dir, mountpoint)
            try:
                rss_before = vm_hwm_kb(pid)
                seconds, lines = self.time_ls(mountpoint)
                self.records.append({'scenario': 'b2ndfs', 'op': 'ls_cold', 'rep': rep,
                                     'seconds': seconds, 'lines': lines, 'mount_s': mount_s,
                                     'rss_before_kb': rss_before, 'rss_kb': vm_hwm_kb(pid),
                                     'stats': self.b2ndfs_stats(mountpoint)})
                seconds, lines = self.time_ls(mountpoint)
                self.records.append({'scenario': 'b2ndfs', 'op': 'ls_warm', 'rep': rep,
                                     'seconds': seconds, 'lines': lines, 'rss_kb': vm_hwm_kb(pid),
                                     'stats': self.b2ndfs_stats(mountpoint)})
            finally:
                self.mounts.unmount(mountpoint)
        for rep in range(self.args.reps):
            self.attempt('ls -l b2ndfs', lambda: body(rep))

        memfs_mnt = os.path.join(self.mnt, 'memfs-dirs')

        def memfs_body(rep, scenario, extra):
            self.mounts.mount([self.tool('bench_memfs'), memfs_mnt, '--dirs', str(len(names))] +
                              extra, memfs_mnt, 'bench_memfs')
            try:
                for op in ('ls_cold', 'ls_warm'):
                    seconds, lines = self.time_ls(memfs_mnt)
                    self.records.append({'scenario': scenario, 'op': op, 'rep': rep,
                                         'seconds': seconds, 'lines': lines})
            finally:
                self.mounts.unmount(memfs_mnt)
        for rep in range(self.args.reps):
            self.attempt('ls -l memfs', lambda: memfs_body(rep, 'memfs_dirs', []))
            # The same, but answering getxattr with ENODATA as b2ndfs does (memfs leaves it
            # unimplemented, so the kernel stops asking after the first ENOSYS).
            self.attempt('ls -l memfs', lambda: memfs_body(rep, 'memfs_dirs_xattr',
                                                           ['--getxattr-enodata']))
        touched = [n for n in names
                   if os.stat(os.path.join(self.tiny_dir, n)).st_atime_ns != old * 10**9]
        listing['atime_changed'] = len(touched)
        listing['count'] = len(names)

        # Positive control: looking inside one container must read it.
        def control():
            self.mount_b2ndfs(self.tiny_dir, mountpoint)
            try:
                with open(os.path.join(mountpoint, names[42], 'meta.json')) as f:
                    meta = json.load(f)
                listing['control_read_ok'] = meta.get('shape') == [8, 8]
            finally:
                self.mounts.unmount(mountpoint)
            listing['control_atime_changed'] = (
                os.stat(os.path.join(self.tiny_dir, names[42])).st_atime_ns != old * 10**9)
        self.attempt('ls -l control', control)
        self.notes['listing'] = listing

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
        self.generate()
        self.setup_geometry()
        log('array %s float32, %d MiB, cratio %.2f' % (
            self.shape, self.nbytes >> 20, self.nbytes / self.data['cbytes']))
        self.notes['loadavg_start'] = os.getloadavg()
        steps = [self.run_routes] + ([self.run_listing] if self.args.listing else [])
        for step in steps:
            step()
        self.notes['loadavg_end'] = os.getloadavg()
        self.notes['elapsed_s'] = time.monotonic() - T0
        results = {'args': vars(self.args), 'machine': self.machine(), 'data': self.data,
                   'notes': self.notes, 'errors': self.errors, 'records': self.records}
        with open(os.path.join(self.out, 'results.json'), 'w') as f:
            json.dump(results, f, indent=1)
        import report
        text = report.render(results)
        with open(self.args.results, 'w') as f:
            f.write(text)
        log('wrote %s' % self.args.results)
        print(text)
        return 1 if self.errors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--size-mb', type=int, default=None, help='uncompressed array size (default 1024)')
    p.add_argument('--quick', action='store_true', help='128 MiB array, fewer random reads')
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
    p.add_argument('--build', default=os.path.join(ROOT, 'build-bench'))
    p.add_argument('--out', default=os.path.join(BENCH, 'out'))
    p.add_argument('--results', default=os.path.join(BENCH, 'RESULTS.md'))
    args = p.parse_args()
    if args.size_mb is None:
        args.size_mb = 128 if args.quick else 1024
    if args.rand_count is None:
        args.rand_count = 100 if args.quick else 200
    if args.cube_count is None:
        args.cube_count = 10 if args.quick else 20
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
