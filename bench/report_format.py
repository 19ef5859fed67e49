"""What the parts of the report share: the results of one run, filtered by
geometry (bench/geometry.py), and the formatting of times, rates, sizes and
verdicts.
"""
import statistics

MIB = 1 << 20
GIB = 1 << 30


class Results:
    """The records of one geometry (by default the main run's, the first)."""

    def __init__(self, results, geometry=None):
        self.r = results
        self.args = results['args']
        entries = results.get('geometries') or []
        if geometry is None:
            self.entry = entries[0] if entries else {'notes': results['notes'],
                                                     'data': results['data']}
        else:
            self.entry = next(e for e in entries if e['geometry']['name'] == geometry)
        self.name = (self.entry.get('geometry') or {}).get('name')
        self.label = (self.entry.get('geometry') or {}).get('label', '')
        self.data = self.entry['data']
        self.notes = results['notes'] if geometry is None else self.entry['notes']
        # Records of runs before the sweep existed carry no geometry: the main one.
        self.records = [x for x in results['records'] if x.get('geometry', self.name) == self.name]
        self.shape = self.data['shape']

    def runs(self, scenario, op):
        return [x for x in self.records if x['scenario'] == scenario and x['op'] == op]

    def counter(self, run, *path):
        """A .b2ndfs/stats counter's growth over `run`, per repeat inside it."""
        def get(s):
            for k in path:
                s = (s or {}).get(k)
            return s or 0
        return (get(run.get('stats')) - get(run.get('stats_before'))) / (run.get('repeat') or 1)

    def median(self, scenario, op, key='seconds'):
        values = [x[key] for x in self.runs(scenario, op) if x.get(key) is not None]
        return statistics.median(values) if values else None

    def nbytes(self, scenario, op):
        runs = self.runs(scenario, op)
        return runs[0]['bytes'] if runs else None

    def rate(self, scenario, op):
        t = self.median(scenario, op)
        b = self.nbytes(scenario, op)
        return b / t / MIB if t and b else None


def fmt_time(seconds):
    if seconds is None:
        return '—'
    if seconds < 1e-3:
        return '%.3f ms' % (seconds * 1e3)
    if seconds < 0.1:
        return '%.2f ms' % (seconds * 1e3)
    if seconds < 1:
        return '%.0f ms' % (seconds * 1e3)
    return '%.2f s' % seconds


def fmt_rate(rate):
    if rate is None:
        return '—'
    return '%.0f MiB/s' % rate if rate >= 10 else '%.2f MiB/s' % rate


def fmt_bytes(n):
    if n is None:
        return '—'
    if n >= MIB:
        return '%.4g MiB' % (n / MIB)
    if n >= 1024:
        return '%.4g KiB' % (n / 1024)
    return '%d B' % n


def verdict(ratio, goal, at_least=True):
    if ratio is None:
        return '—', 'not measured'
    if at_least:
        if ratio >= goal:
            return 'met', '+%.0f%% margin' % ((ratio / goal - 1) * 100)
        return '**missed**', 'short by %.0f%% (needs %.2fx faster)' % ((1 - ratio / goal) * 100,
                                                                        goal / ratio)
    if ratio <= goal:
        return 'met', '%.0f%% under the limit' % ((1 - ratio / goal) * 100)
    return '**missed**', 'over by %.0f%% (needs %.2fx faster)' % ((ratio / goal - 1) * 100,
                                                                 ratio / goal)


