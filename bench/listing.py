"""`ls -l` of a directory of many tiny containers: the source directory, b2ndfs,
and memfs with as many empty directories (the FUSE ceiling of listing), with
a check (atimes) that listing decodes no container.
"""
import json
import os
import subprocess
import time

from mounts import BenchError, log, vm_hwm_kb


class Listing:
    """Runs the listing test; `bench` gives the tools, mounts, records and options."""

    def __init__(self, bench, tiny_dir, mount_b2ndfs):
        self.bench = bench
        self.args = bench.args
        self.mnt = bench.mnt
        self.tiny_dir = tiny_dir
        self.mounts = bench.mounts
        self.records = bench.records
        self.mount_b2ndfs = mount_b2ndfs  # (source, mountpoint) -> (seconds, pid)

    def tool(self, name):
        return self.bench.tool(name)

    def attempt(self, what, body):
        return self.bench.attempt(what, body)

    def b2ndfs_stats(self, mountpoint):
        try:
            with open(os.path.join(mountpoint, '.b2ndfs', 'stats')) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

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

    def run(self):
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
        return listing
