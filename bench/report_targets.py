"""The targets of issue #12 over every geometry measured (one row per target and
geometry, each a ratio of two measurements of the same run), and the sweep's
timings. Part of the markdown report (bench/report.py).
"""
import statistics

import geometry
from report_format import (GIB, MIB, Results, fmt_bytes, fmt_rate, fmt_time, verdict)

WARM_OPS = ['whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes']
# Peak RSS must stay within cache_size plus this (the bench's stated constant:
# FUSE request buffers and threads, blocks pinned by readers in flight,
# decompression contexts, chunk buffers, malloc's arenas, and the memory
# kept for reuse: 8 MiB of freed large buffers and at most 8 MiB free in the
# block memory's slabs, cache/buffer_memory.h).
RSS_CONSTANT_MB = 64
B2_SCENARIOS = ('b2_cold', 'b2_cold_cached', 'b2_warm', 'b2_plane', 'b2_unprimed')
OP_NAMES = {'whole': '`data` sequential', 'slice0': 'slice axis 0', 'slice1': 'slice axis 1',
            'slice2': 'slice axis 2', 'rand': 'random 1 MiB preads', 'cubes': '64³ sub-cubes',
            'first': 'first 4 KiB after mount', 'seq0': 'every file of `slices/0/`',
            'seq2': 'every file of `slices/2/`'}


def geometry_results(results):
    entries = results.get('geometries') or []
    return [Results(results, e['geometry']['name']) for e in entries]


class Table:
    def __init__(self):
        self.rows = []  # (target, geometry label, measured, ratio text, goal text, verdict)

    def add(self, target, res, measured, ratio, goal, at_least, ratio_fmt='%.2fx', speed=True,
            info=False, note=None):
        """A row; `info` rows give context to the row above and are not counted; `note` is
        appended to a missed row's verdict."""
        v, how = verdict(ratio, goal, at_least)
        if not speed:  # a count or a size: "needs 1.3x faster" would not make sense
            how = how.split(' (needs')[0]
        if ratio is None:
            text = 'not measured'
        else:
            text = '(info) %s' % how if info else '%s, %s' % (v, how)
            if note and v != 'met':
                text += '; ' + note
        self.rows.append((target, res.label, measured, ratio_fmt % ratio if ratio else '—',
                          ('≥ ' if at_least else '≤ ') + ('%.2gx' % goal), text, info))

    def met(self):
        return sum(1 for r in self.rows if r[5].startswith('met'))

    def targets(self):
        return sum(1 for r in self.rows if not r[6])


def fuse_floor_note(res, op, reference, goal):
    """For a time row whose limit allows some time beyond c-blosc2's (`reference`): whether the
    FUSE ceiling alone (memfs: lookups, open and reads through the kernel, nothing decoded)
    takes more than that margin, so that a daemon doing c-blosc2's work at c-blosc2's speed,
    with FUSE's on top, could not meet it here."""
    fuse = res.median('memfs', op)
    margin = (goal - 1) * reference if reference else 0
    if goal <= 1 or not fuse or fuse <= margin:
        return None
    return 'FUSE alone (memfs) takes %s, more than the %s the limit leaves beyond c-blosc2' % (
        fmt_time(fuse), fmt_time(margin))


def cpu_floor_note(res, op, reference_scenario, allowed):
    """For a row against c-blosc2 in-process: whether c-blosc2's own CPU time for the
    operation (its decoding, with its threads) plus the FUSE ceiling's for the same bytes
    (memfs: daemon and reader, the kernel's copies included), spread over every CPU of the
    machine, already take longer than the `allowed` seconds, so that no daemon doing both
    could meet the target here."""
    decode = res.median(reference_scenario, op, key='client_cpu')
    fuse = [(x['daemon_cpu'] + x['client_cpu']) / (x.get('repeat') or 1)
            for x in res.runs('memfs', op)
            if x.get('daemon_cpu') is not None and x.get('client_cpu') is not None]
    cpus = (res.r.get('machine') or {}).get('nproc')
    if not decode or not fuse or not cpus or not allowed:
        return None
    fuse_cpu = statistics.median(fuse)
    floor = (decode + fuse_cpu) / cpus
    if floor <= allowed:
        return None
    return ('on %d CPUs, c-blosc2\'s decoding (%s of CPU) and FUSE\'s own work for the same '
            'bytes (memfs: %s of CPU) take at least %s, more than the %s the target allows' %
            (cpus, fmt_time(decode), fmt_time(fuse_cpu), fmt_time(floor), fmt_time(allowed)))


def median_daemon_cpu(res, scenario, op):
    runs = [x for x in res.runs(scenario, op) if x.get('daemon_cpu') is not None]
    if not runs:
        return None, None
    return (statistics.median(x['daemon_cpu'] / (x.get('repeat') or 1) for x in runs),
            runs[0]['bytes'])


def cpu_per_gib(res, scenario):
    """Daemon CPU seconds per GiB served over the warm operations (medians, summed)."""
    cpu = nbytes = 0.0
    for op in WARM_OPS:
        c, b = median_daemon_cpu(res, scenario, op)
        if c is None:
            return None
        cpu += c
        nbytes += b
    return cpu / (nbytes / GIB) if nbytes else None


def plane_pass(res):
    """The median run of reading slices/2/ with the plane-sized cache: (bytes decompressed per
    byte of the array's blocks, blocks decompressed, whole-chunk decodes, the run)."""
    runs = [x for x in res.runs('b2_plane', 'seq2') if x.get('stats')]
    if not runs:
        return None
    padded = res.notes['total_blocks'] * 4 * _prod(res.data['blockshape'])
    scored = sorted(((res.counter(x, 'reads', 'bytes_decompressed') / padded, x) for x in runs),
                    key=lambda t: t[0])
    ratio, run = scored[len(scored) // 2]
    return (ratio, res.counter(run, 'reads', 'blocks_decompressed'),
            res.counter(run, 'reads', 'whole_chunk_decodes'), run)


def _prod(v):
    p = 1
    for x in v:
        p *= x
    return p


def peak_rss(res):
    """The b2ndfs run with the most memory outside the block cache: (VmHWM minus the cache's
    bytes at the end of the run, the run, whether VmHWM <= cache_size + the constant in
    every run). No run here shrinks its cache (the big caches never evict, the plane-sized
    one ends full), so the cache's bytes at the end are its peak."""
    worst = None
    within = True
    for x in res.records:
        cache = ((x.get('stats') or {}).get('cache') or {})
        if x['scenario'] in B2_SCENARIOS and x.get('rss_kb') and 'bytes_cached' in cache:
            other = x['rss_kb'] * 1024 - cache['bytes_cached']
            within = within and x['rss_kb'] / 1024 <= (x['cache_mb'] or 0) + RSS_CONSTANT_MB
            if worst is None or other > worst[0]:
                worst = (other, x)
    return None if worst is None else (worst[0], worst[1], within)


def targets_table(results):
    t = Table()
    all_res = geometry_results(results)

    def each(fn):
        for res in all_res:
            fn(res)

    def thr(target, s1, op1, s2, op2, goal, info=False, cpu_floor=False):
        def body(res):
            r1, r2 = res.rate(s1, op1), res.rate(s2, op2)
            t2 = res.median(s2, op2)
            note = cpu_floor_note(res, op2, s2, t2 / goal) if cpu_floor and t2 else None
            t.add(target, res, '%s vs %s' % (fmt_rate(r1), fmt_rate(r2)),
                  r1 / r2 if r1 and r2 else None, goal, True, info=info, note=note)
        each(body)

    def tim(target, s1, s2, op, goal):
        def body(res):
            t1, t2 = res.median(s1, op), res.median(s2, op)
            t.add(target, res, '%s vs %s' % (fmt_time(t1), fmt_time(t2)),
                  t1 / t2 if t1 and t2 else None, goal, False,
                  note=fuse_floor_note(res, op, t2, goal))
        each(body)

    for op in WARM_OPS:
        thr('warm %s: b2ndfs vs FUSE ceiling' % OP_NAMES[op], 'b2_warm', op, 'memfs', op, 0.8)
    thr('cold whole array, source evicted: b2ndfs vs c-blosc2', 'b2_cold', 'whole',
        'inproc_drop', 'whole', 1.0, cpu_floor=True)
    thr('cold whole array, source cached: b2ndfs vs c-blosc2', 'b2_cold_cached', 'whole',
        'inproc', 'whole', 1.0, cpu_floor=True)
    thr('cold whole array, source cached, memory not primed (the machine idle before the '
        'mount): b2ndfs vs c-blosc2', 'b2_unprimed', 'whole', 'inproc', 'whole', 1.0, info=True)
    for axis in range(3):
        tim('cold slice axis %d, source evicted: b2ndfs vs c-blosc2 (time)' % axis, 'b2_cold',
            'inproc_drop', 'slice%d' % axis, 1.0)
    for axis in range(3):
        tim('cold slice axis %d, source cached: b2ndfs vs c-blosc2 (time)' % axis,
            'b2_cold_cached', 'inproc', 'slice%d' % axis, 1.2)
    thr('every file of `slices/0/` in name order vs `data`, cold (source cached)',
        'b2_cold_cached', 'seq0', 'b2_cold_cached', 'whole', 0.9)
    thr('every file of `slices/0/` in name order vs `data`, warm', 'b2_warm', 'seq0', 'b2_warm',
        'whole', 0.9)

    def plane(res):
        p = plane_pass(res)
        if p is None:
            t.add('every file of `slices/2/`, cache of one plane of blocks: decompressed per '
                  'block', res, '—', None, 1.0, False)
            return
        ratio, blocks, whole_chunks, run = p
        t.add('every file of `slices/2/`, cache of one plane of blocks: decompressed per block',
              res, '%s of %s blocks (%.0f blocks, %.0f whole chunks decoded), cache_size %d MiB, '
              '%s' % (fmt_bytes(res.counter(run, 'reads', 'bytes_decompressed')),
                      res.notes['total_blocks'], blocks, whole_chunks, res.notes['plane_cache_mb'],
                      fmt_rate(res.rate('b2_plane', 'seq2'))),
              ratio, 1.0, False, '%.3fx', speed=False)
    each(plane)
    tim('first 4 KiB after mount, source evicted: b2ndfs vs c-blosc2 `b2nd_open` + read (time)',
        'b2_cold', 'inproc_drop', 'first', 2.0)
    tim('first 4 KiB after mount, source cached (time)', 'b2_cold_cached', 'inproc', 'first', 2.0)

    def cpu(res):
        b, m = cpu_per_gib(res, 'b2_warm'), cpu_per_gib(res, 'memfs')
        t.add('daemon CPU s per GiB served, warm: b2ndfs vs FUSE ceiling', res,
              '%s vs %s' % ('%.3f s' % b if b else '—', '%.3f s' % m if m else '—'),
              b / m if b and m else None, 1.5, False)
    each(cpu)

    def rss(res):
        label = 'peak RSS minus block cache held ≤ %d MiB, every run' % RSS_CONSTANT_MB
        worst = peak_rss(res)
        if worst is None:
            t.add(label, res, '—', None, 1.0, False)
            return
        other, x, within = worst
        cache = x['stats']['cache']
        t.add(label, res, 'worst: %s in %s %s (VmHWM %s, cache held %s of cache_size %d MiB); '
              'VmHWM ≤ cache_size + %d MiB in every run: %s' % (
                  fmt_bytes(other), x['scenario'], x['op'], fmt_bytes(x['rss_kb'] * 1024),
                  fmt_bytes(cache['bytes_cached']), x['cache_mb'], RSS_CONSTANT_MB,
                  'yes' if within else '**no**'),
              other / (RSS_CONSTANT_MB * MIB), 1.0, False, speed=False)
    each(rss)
    return t, all_res


def render_targets(results, w):
    t, all_res = targets_table(results)
    w('## Targets of issue #12, every geometry\n')
    w('%d of %d met. Each row is a ratio of two measurements of this run (medians). Warm = the '
      'block cache holds the array and the kernel\'s pages of the file are dropped before each '
      'run; cold = a fresh mount. Throughput ratios (higher is better) for warm reads, the whole '
      'array and `slices/0/`; time ratios (lower is better) for slices and the first byte. '
      '"Decompressed per block": bytes decompressed while reading every file of `slices/2/` in '
      'name order (fresh mount, source cached, `cache_size` = %.2f× the blocks one slice '
      'touches, rounded up to MiB) over the bytes of all blocks of the array, from the mount\'s '
      '`.b2ndfs/stats` (`bytes_decompressed`, which counts whole-chunk decodes too; '
      '`blocks_decompressed` does not). CPU: the daemon\'s run time (all threads) per GiB served '
      'over the warm reads of %s together. Peak RSS: VmHWM of the daemon after each run minus the '
      'bytes its block cache holds then (the caches here never shrink during a run), against '
      '**%d MiB**, the constant this bench holds b2ndfs to (FUSE request buffers and threads, '
      'blocks pinned by readers in flight, decompression contexts, chunk buffers, malloc '
      'arenas, memory kept for reuse: at most 8 MiB of freed large buffers and 8 MiB free in 2 MiB '
      'slabs); that implies VmHWM ≤ `cache_size` + %d MiB, which the row also checks. Cold runs '
      '(and c-blosc2\'s) start right after `bench_reader prime` wrote and freed about the memory '
      'the run allocates: in this virtual machine memory freed a second or more before has gone '
      'back to the host (free page reporting) and costs it 0.8–3 s per GiB to hand out again; '
      'rows marked (info) show the whole array without it and are not counted. A missed time '
      'row whose limit allows some time beyond c-blosc2\'s says so when the FUSE ceiling alone '
      '(memfs, nothing to decode) takes more than that: there a daemon would have to decode faster '
      'than c-blosc2 with the same threads to meet it.\n' % (
          t.met(), t.targets(), geometry.PLANE_CACHE_FACTOR, ', '.join(
          OP_NAMES[op] for op in WARM_OPS), RSS_CONSTANT_MB, RSS_CONSTANT_MB))
    w('| target | geometry (blocks / chunks, codec) | measured | ratio | goal | verdict |')
    w('| --- | --- | --- | --- | --- | --- |')
    for row in t.rows:
        w('| ' + ' | '.join(row[:6]) + ' |')
    w('')


SWEEP_COLUMNS = [('inproc', 'c-blosc2, cached'), ('inproc_drop', 'c-blosc2, evicted'),
                 ('b2_cold', 'b2ndfs cold, evicted'), ('b2_cold_cached', 'b2ndfs cold, cached'),
                 ('b2_warm', 'b2ndfs warm'), ('memfs', 'memfs'),
                 ('b2_plane', 'b2ndfs cold, cache of one plane')]
SWEEP_OPS = ['first', 'whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes', 'seq0', 'seq2']


def render_sweep(results, w):
    all_res = geometry_results(results)
    if len(all_res) < 2:
        return
    w('## Geometries\n')
    w('The main run\'s array (first row) and the sweep\'s: float32, the same field; c-blosc2 '
      'wrote each with 2 threads.\n')
    w('| geometry | shape | chunks | blocks | codec | size → compressed (cratio) | blocks in '
      'all | `cache_size` (plane run) | random reads · cubes |')
    w('| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for res in all_res:
        d = res.data
        w('| %s | `%s` | `%s` | `%s` | %s clevel %d + %s | %s → %s (%.2f) | %s | %d MiB (%d MiB) '
          '| %s · %s |' % (
              res.label, d['shape'], d['chunkshape'], d['blockshape'], d['codec'], d['clevel'],
              d['filters'], fmt_bytes(d['nbytes']), fmt_bytes(d['cbytes']),
              d['nbytes'] / d['cbytes'], res.notes.get('total_blocks', '?'),
              res.notes.get('cache_size_mb', 0), res.notes.get('plane_cache_mb', 0),
              res.notes.get('rand_count', '?'), res.notes.get('cube_count', '?')))
    w('')
    w('## Timings of every geometry\n')
    w('Median time · throughput. `slices/0/` and `slices/2/` = every file of the directory in '
      'name order (open, 1 MiB reads, close); c-blosc2\'s `slices/2/` cell is the reference of '
      'its bytes (`b2nd_to_cbuffer` + a gather of each plane, one run).\n')
    w('| geometry | operation | ' + ' | '.join(label for _, label in SWEEP_COLUMNS) + ' |')
    w('| --- | --- |' + ' --- |' * len(SWEEP_COLUMNS))
    for res in all_res:
        for op in SWEEP_OPS:
            cells = []
            for s, _ in SWEEP_COLUMNS:
                t = res.median(s, op)
                if t is None:
                    cells.append('—')
                elif op == 'first':
                    cells.append(fmt_time(t))
                else:
                    cells.append('%s · %s' % (fmt_time(t), fmt_rate(res.rate(s, op))))
            if any(c != '—' for c in cells):
                w('| %s | %s | %s |' % (res.label, OP_NAMES[op], ' | '.join(cells)))
    w('')

