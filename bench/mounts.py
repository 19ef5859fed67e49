"""What the benchmark driver needs from the system: running its programs, mounting
and unmounting FUSE filesystems (every mount is undone on exit), and reading a
daemon's CPU time, peak RSS and read-ahead from /proc and /sys.
"""
import json
import os
import subprocess
import sys
import time

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


def daemon_pids(mountpoint, program):
    """The pids of the processes whose command line names `program` and `mountpoint`."""
    pids = set()
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % entry, 'rb') as f:
                argv = [a.decode(errors='replace') for a in f.read().split(b'\0') if a]
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == program and mountpoint in argv:
            pids.add(int(entry))
    return pids


def process_gone(pid):
    """True once `pid` has exited (or is a zombie: its counters are final then)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')
    except OSError:
        return True


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
        self.pids = {}  # mountpoint -> pid of its daemon

    def mount(self, cmd, mountpoint, program):
        """Mounts and returns (seconds the command took, the new daemon's pid). A daemon of an
        earlier mount on the same path may still be exiting: it is not the one returned."""
        os.makedirs(mountpoint, exist_ok=True)
        if is_mounted(mountpoint):
            self.unmount(mountpoint)
        earlier = daemon_pids(mountpoint, program)
        self.active.append(mountpoint)
        t = time.perf_counter()
        run(cmd, timeout=120)
        seconds = time.perf_counter() - t
        if not is_mounted(mountpoint):
            raise BenchError('%s returned but %s is not mounted' % (cmd[0], mountpoint))
        new = daemon_pids(mountpoint, program) - earlier
        pid = max(new) if len(new) == 1 else None
        if pid is None:
            log('cannot tell the daemon of %s (candidates %s): no CPU or RSS for this mount' % (
                mountpoint, sorted(new)))
        self.pids[mountpoint] = pid
        return seconds, pid

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
        # Wait (a little) for the daemon to exit, so that it neither competes with the next
        # run for the CPU nor holds memory the next mount's figures would include.
        pid = self.pids.pop(mountpoint, None)
        deadline = time.monotonic() + 10
        while pid is not None and not process_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.02)

    def unmount_all(self):
        for m in list(self.active):
            self.unmount(m)
