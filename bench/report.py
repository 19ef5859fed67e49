"""Renders bench/out/results.json (written by bench.py) as the markdown of bench/RESULTS.md.

    python3 bench/report.py [bench/out/results.json] > bench/RESULTS.md

The sections from KEPT_MARKER (else from the first `## Row 5` heading) of the
current bench/RESULTS.md on are hand-written (readings of the numbers, partial
runs of other work) and carried over unchanged.
"""
import datetime
import json
import os
import statistics
import sys

from report_format import Results, fmt_bytes, fmt_rate, fmt_time, verdict
from report_targets import render_sweep, render_targets

KEPT_MARKER = '<!-- Hand-written from here on: bench/report.py keeps it. -->'
KEPT_HEADING = '## Row 5'
OPS = ['first', 'whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes', 'viewcubes', 'seq0',
       'seq2']
BULK = ['whole', 'slice0', 'slice1', 'slice2', 'rand', 'cubes']
COLUMNS = [
    ('inproc', 'c-blosc2 in-process, source cached'),
    ('inproc_drop', 'c-blosc2 in-process, source evicted'),
    ('b2_cold', 'b2ndfs cold, source evicted'),
    ('b2_cold_cached', 'b2ndfs cold, source cached'),
    ('b2_warm', 'b2ndfs warm block cache'),
    ('memfs', 'FUSE ceiling (memfs)'),
    ('sq_cold', 'squashfuse + numpy cold'),
    ('sq_warm', 'squashfuse + numpy warm'),
    ('b2_plane', 'b2ndfs cold, source cached, cache of one plane'),
]


def kept_sections(path):
    """The hand-written tail of the page at `path` (from KEPT_MARKER on, which it starts
    with), or ''."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ''
    at = text.find(KEPT_MARKER)
    if at >= 0:
        return text[at:]
    at = text.find('\n' + KEPT_HEADING)
    return KEPT_MARKER + '\n\n' + text[at + 1:] if at >= 0 else ''


def command_flags(a):
    """The options of bench/run.sh that made this run, as far as they differ from the default."""
    flags = ' --quick' if a.get('quick') else (
        '' if a['size_mb'] == 1024 else ' --size-mb %d' % a['size_mb'])
    if a.get('reps', 3) != 3:
        flags += ' --reps %d' % a['reps']
    if a.get('sweep') is False:
        flags += ' --no-sweep'
    if a.get('listing') is False:
        flags += ' --no-listing'
    if a.get('ops') and len(a['ops']) < len(OPS):
        flags += ' --ops ' + ','.join(a['ops'])
    return flags


def op_label(res, op):
    n0, n1, n2 = res.shape
    a = res.args
    mid = [s // 2 for s in res.shape]
    return {
        'first': 'first 4 KiB after mount (open + pread)',
        'whole': 'whole array, 1 MiB read()s (%s)' % fmt_bytes(res.data['nbytes']),
        'slice0': 'slice axis 0 `[%d,:,:]` (%s)' % (mid[0], fmt_bytes(res.data['nbytes'] // n0)),
        'slice1': 'slice axis 1 `[:,%d,:]` (%s)' % (mid[1], fmt_bytes(res.data['nbytes'] // n1)),
        'slice2': 'slice axis 2 `[:,:,%d]` (%s)' % (mid[2], fmt_bytes(res.data['nbytes'] // n2)),
        'rand': '%d random 1 MiB preads of `data`' % a['rand_count'],
        'cubes': '%d random 64³ sub-cubes (64·64 preads of 256 B)' % a['cube_count'],
        'viewcubes': 'the same %d sub-cubes, each one `view/` file (c-blosc2: as above)' %
                     a['cube_count'],
        'seq0': 'every file of `slices/0/` in name order (%d files)' % n0,
        'seq2': 'every file of `slices/2/` in name order (%d files; c-blosc2: reference)' % n2,
    }[op]


def render(results, kept=''):
    res = Results(results)
    m = results['machine']
    d = res.data
    a = res.args
    notes = res.notes
    out = []
    w = out.append
    every = results['records']  # all geometries
    dropped_ok = all(
        (x.get('resident') or 0) < 0.05 for x in every
        if x['scenario'] in ('inproc_drop', 'b2_cold', 'sq_cold'))
    max_res_dropped = max([x.get('resident') or 0 for x in every
                           if x['scenario'] in ('inproc_drop', 'b2_cold', 'sq_cold')] or [0])
    min_res_cached = min([x.get('resident', 1) for x in every
                          if x['scenario'] in ('inproc', 'b2_cold_cached', 'b2_plane')] or [1])

    load = ''
    if notes.get('loadavg_start'):
        load = (' Load average (1 min) when the run started / ended: %.1f / %.1f on %d CPUs, '
                'so other jobs shared the machine.' % (notes['loadavg_start'][0],
                                                       notes.get('loadavg_end', [0])[0],
                                                       m['nproc']))
    w('# b2ndfs benchmark results\n')
    w('Produced by `bash bench/run.sh%s` on %s (git %s), in %.1f minutes. Every time is the '
      'median of %d runs, and each run of an operation is taken by all routes back to back '
      '(in rotating order), so that a busy moment hits them alike; a slice read where no fresh '
      'mount is needed (in-process, warm, memfs, squashfuse warm) is itself the median of %d '
      'reads within its run. The machine is shared and '
      'noisy: differences under ~10%% are not significant.%s\n' % (
          command_flags(a), datetime.date.today().isoformat(), m.get('git', '?'), notes.get('elapsed_s', 0) / 60,
          a['reps'], a.get('inner', 1), load))

    w('## Setup\n')
    w('- **Machine**: %d CPUs (%s), %.1f GiB RAM, Linux %s, Debian %s; data on %s.' % (
        m['nproc'], m['cpu'], m['ram_gib'], m['kernel'], m['debian'], m['out_fs']))
    w('- **Main array**: float32 `%s` (%s), a smooth 3-D field plus noise; chunks `%s` (%s), blocks `%s` '
      '(%s); %s clevel %d + %s, written by c-blosc2 %s with 2 threads: %s → %s (cratio %.2f).' % (
          d['shape'], fmt_bytes(d['nbytes']), d['chunkshape'],
          fmt_bytes(4 * d['chunkshape'][0] * d['chunkshape'][1] * d['chunkshape'][2]),
          d['blockshape'],
          fmt_bytes(4 * d['blockshape'][0] * d['blockshape'][1] * d['blockshape'][2]),
          d['codec'], d['clevel'], d['filters'], m['blosc2'], fmt_bytes(d['nbytes']),
          fmt_bytes(d['cbytes']), d['nbytes'] / d['cbytes']))
    w('- **Sweep**: %s. The same routes and operations (no squashfuse, no `view/` files) on a '
      '%d MiB array of each geometry, fewer random reads and sub-cubes (see **Geometries**).' % (
          '; '.join(e['geometry']['label'] for e in results.get('geometries', [])[1:]) or
          'not run (--no-sweep)', a.get('sweep_size_mb', 0)))
    w('- **b2ndfs**: `b2ndfs SRC MNT -o cache_size=%dM,threads=2` (other options default); for '
      'reading `slices/2/` file by file, `cache_size=%dM` (about one plane of blocks, see the '
      'targets). Kernel read-ahead of the mount: %s KiB.' % (
          notes.get('cache_size_mb', max(2048, 3 * a['size_mb'])), notes.get('plane_cache_mb', 0),
          notes.get('b2_read_ahead_kb', '?')))
    w('- **c-blosc2 in-process** (`bench_inprocess`): `b2nd_open` + `b2nd_to_cbuffer` / '
      '`b2nd_get_slice_cbuffer`, decompression with **nthreads = 2**; each time includes '
      '`b2nd_open` and `b2nd_free` (b2ndfs times include `open()` and `close()` of the file).')
    w('- **FUSE ceiling** (`bench_memfs`): a trivial low-level libfuse %s filesystem serving '
      'files of the same sizes from its memory, with b2ndfs\'s FUSE settings (1 MiB max_write '
      'and max_readahead, read_ahead_kb %s, async read, splice write, keep_cache, multithreaded '
      'loop).' % (m['libfuse'], notes.get('memfs_read_ahead_kb', '?')))
    w('- **squashfuse** %s: the same array as a plain `.npy`, `mksquashfs -comp zstd '
      '-Xcompression-level 1` (128 KiB blocks, no shuffle): %s (built in %.1f s); whole array '
      'and slices read with `numpy.load(mmap_mode="r")` + copy by `/usr/bin/python3` (the time '
      'covers `np.load` and the copy, not the interpreter start); first byte, random reads '
      'and sub-cubes with the same `bench_reader` as the FUSE routes. Read-ahead %s KiB.' % (
          m['squashfuse'], fmt_bytes(d['sqfs_bytes']), d['mksquashfs_s'],
          next((x.get('read_ahead_kb') for x in res.records if x['scenario'] == 'sq_cold'), '?')))
    w('- **Page cache**: "source evicted" runs drop the source file (`array.b2nd`, or the '
      'squashfs image) from the page cache with `posix_fadvise(POSIX_FADV_DONTNEED)` right '
      'before the run, checked with `mincore`: at most %.1f%% of it was resident at the start '
      '%s. "Source cached" runs read it first (≥ %.0f%% resident). "Cold" = a fresh mount per '
      'run (empty block cache, nothing of the mount in the page cache). "Warm" = one mount, '
      'whose block cache holds the whole array (one full read before); the kernel\'s cached '
      'pages of the virtual file are dropped before each run (fadvise on the FUSE file), so '
      'every read still goes through FUSE to the daemon. The same is done for memfs. '
      'squashfuse "warm" is the second read on the same mount, **served from the kernel page '
      'cache**. `/proc/sys/vm/drop_caches` is used only before the `ls -l` runs (%s).\n' % (
          100 * max_res_dropped,
          '(eviction worked)' if dropped_ok else '(**eviction did not fully work**)',
          100 * min_res_cached,
          'done' if notes.get('listing', {}).get('dropped_caches') else
          'not writable here, so dentries and inodes stayed cached'))

    render_targets(results, w)

    # --- targets of earlier issues ---
    w('## Earlier targets (main array)\n')
    w('| target | measured | ratio | goal | verdict |')
    w('| --- | --- | --- | --- | --- |')

    def time_row(label, s1, s2, op, goal, primary=True):
        t1, t2 = res.median(s1, op), res.median(s2, op)
        ratio = t1 / t2 if t1 and t2 else None
        v, how = verdict(ratio, goal, at_least=False)
        w('| %s | %s vs %s | %s | ≤ %.1fx time | %s |' % (
            label, fmt_time(t1), fmt_time(t2), '%.2fx' % ratio if ratio else '—', goal,
            ('%s, %s' % (v, how)) if primary else '(info) %s' % how))

    def speedup_row(label, fast, slow, op, goal, primary=True):
        t1, t2 = res.median(fast, op), res.median(slow, op)
        ratio = t2 / t1 if t1 and t2 else None
        v, how = verdict(ratio, goal)
        w('| %s | %s vs %s | %s faster | ≥ %.0fx | %s |' % (
            label, fmt_time(t1), fmt_time(t2), '%.1fx' % ratio if ratio else '—', goal,
            ('%s, %s' % (v, how)) if primary else '(info) %s' % how))

    for axis in (1, 2):
        speedup_row('4. slice axis %d, cold: b2ndfs vs squashfuse+numpy' % axis, 'b2_cold',
                    'sq_cold', 'slice%d' % axis, 10)
    for axis in (1, 2):
        speedup_row('4b. slice axis %d, warm: b2ndfs (block cache) vs squashfuse+numpy (page '
                    'cache)' % axis, 'b2_warm', 'sq_warm', 'slice%d' % axis, 10, primary=False)
    time_row('5. 64³ sub-cube as one `view/` file, cold, source cached: b2ndfs vs c-blosc2 '
             '`b2nd_get_slice_cbuffer`', 'b2_cold_cached', 'inproc', 'viewcubes', 1.5)
    time_row('5b. same, source evicted', 'b2_cold', 'inproc_drop', 'viewcubes', 1.5,
             primary=False)
    time_row('5c. same, b2ndfs warm vs c-blosc2 (cached)', 'b2_warm', 'inproc', 'viewcubes', 1.5,
             primary=False)
    w('\nRows marked (info) are context for the row above them, not targets. Speed-ups for 4 '
      '(higher is better), ratios of time for 5 (lower is better).\n')

    # --- all timings ---
    w('## All timings\n')
    w('Median time (and throughput) of each operation. Bytes returned are identical across '
      'routes except memfs (its own content, same sizes).\n')
    w('| operation | ' + ' | '.join(label for _, label in COLUMNS) + ' |')
    w('| --- |' + ' --- |' * len(COLUMNS))
    row = ['mount (command returns)']
    for s, _ in COLUMNS:
        if s in ('inproc', 'inproc_drop'):
            t = res.median(s, 'first', 'open_seconds')
            row.append('`b2nd_open` %s' % fmt_time(t))
        elif s == 'memfs':
            row.append('(%s incl. generating the bytes)' % fmt_time(res.median(s, 'first', 'mount_s')))
        elif s in ('b2_cold', 'b2_cold_cached', 'sq_cold'):
            values = [x['mount_s'] for x in res.records if x['scenario'] == s and x.get('mount_s')]
            row.append(fmt_time(statistics.median(values)) if values else '—')
        else:
            row.append('—')
    w('| ' + ' | '.join(row) + ' |')
    for op in OPS:
        row = [op_label(res, op)]
        for s, _ in COLUMNS:
            t = res.median(s, op)
            if t is None:
                row.append('—')
            elif op == 'first':
                row.append(fmt_time(t))
            else:
                row.append('%s · %s' % (fmt_time(t), fmt_rate(res.rate(s, op))))
        w('| ' + ' | '.join(row) + ' |')
    w('')

    # --- listing ---
    listing = notes.get('listing')
    if listing:
        w('## `ls -l` of a directory of %d tiny containers\n' % listing.get('count', a['tiny_count']))
        w('| | source directory (ext4) | b2ndfs | FUSE ceiling (memfs, as many empty directories) '
          '| memfs answering getxattr ENODATA, as b2ndfs does |')
        w('| --- | --- | --- | --- | --- |')
        w('| first `ls -l` (fresh mount%s) | %s | %s | %s | %s |' % (
            ', caches dropped' if listing.get('dropped_caches') else '',
            fmt_time(res.median('native', 'ls_cold')), fmt_time(res.median('b2ndfs', 'ls_cold')),
            fmt_time(res.median('memfs_dirs', 'ls_cold')),
            fmt_time(res.median('memfs_dirs_xattr', 'ls_cold'))))
        w('| second `ls -l` | %s | %s | %s | %s |' % (
            fmt_time(res.median('native', 'ls_warm')), fmt_time(res.median('b2ndfs', 'ls_warm')),
            fmt_time(res.median('memfs_dirs', 'ls_warm')),
            fmt_time(res.median('memfs_dirs_xattr', 'ls_warm'))))
        ls_runs = [x for x in res.records if x['scenario'] == 'b2ndfs' and x['op'] == 'ls_cold']
        referenced = [((x.get('stats') or {}).get('containers_referenced')) for x in ls_runs]
        referenced = [v for v in referenced if v is not None]
        rss = [x.get('rss_kb') for x in res.records if x['scenario'] == 'b2ndfs' and x.get('rss_kb')]
        rss_before = [x.get('rss_before_kb') for x in ls_runs if x.get('rss_before_kb')]
        lines = sorted({x.get('lines') for x in ls_runs})
        w('')
        w('- Containers decoded by listing: the sources\' atimes were set to 2001 first (ext4 '
          '`relatime` then updates the atime of any file that is read): **%s of %s** changed after '
          'all listings. Positive control: reading one container\'s `meta.json` %s its atime '
          '(read %s). (b2ndfs\'s `containers_referenced` counter after listing reads %s: the '
          'lazy per-container entries that lookups create, not decoded containers.)' % (
              listing.get('atime_changed', '?'), listing.get('count', '?'),
              'changed' if listing.get('control_atime_changed') else '**did not change**',
              'ok' if listing.get('control_read_ok') else 'failed',
              ', '.join(str(v) for v in referenced) or '?'))
        w('- Daemon peak RSS (VmHWM): %s after mounting, %s after listing (max over runs). Lines '
          'printed by `ls -l`: %s.\n' % (
              fmt_bytes(1024 * max(rss_before)) if rss_before else '?',
              fmt_bytes(1024 * max(rss)) if rss else '?', ', '.join(str(x) for x in lines)))

    # --- memory ---
    w('## Daemon memory (peak RSS, VmHWM)\n')
    cold_rss = [x.get('rss_kb') for x in res.records
                if x['scenario'] in ('b2_cold', 'b2_cold_cached') and x.get('rss_kb')]
    plane_rss = [x.get('rss_kb') for x in res.records
                 if x['scenario'] == 'b2_plane' and x.get('rss_kb')]
    cold_rss_whole = [x.get('rss_kb') for x in res.runs('b2_cold', 'whole') if x.get('rss_kb')]
    sq_rss = [x.get('rss_kb') for x in res.records if x['scenario'] == 'sq_cold' and x.get('rss_kb')]
    w('| b2ndfs cold, after a whole-array read | b2ndfs cold, max over all runs | b2ndfs cold, '
      'cache of one plane (%d MiB), max | b2ndfs warm (after everything) | memfs | squashfuse '
      'cold (max) | squashfuse warm |' % notes.get('plane_cache_mb', 0))
    w('| --- | --- | --- | --- | --- | --- | --- |')

    def kb(v):
        return fmt_bytes(1024 * v) if v else '—'
    w('| %s | %s | %s | %s | %s | %s | %s |\n' % (
        kb(max(cold_rss_whole) if cold_rss_whole else None), kb(max(cold_rss) if cold_rss else None),
        kb(max(plane_rss) if plane_rss else None),
        kb(notes.get('b2_warm_rss_kb')), kb(notes.get('memfs_rss_kb')),
        kb(max(sq_rss) if sq_rss else None), kb(notes.get('sq_warm_rss_kb'))))

    # --- diagnostics ---
    w('## What the daemons saw (first run of each)\n')
    w('FUSE read requests that reached the daemon per operation, their mean size, and for '
      'b2ndfs the bytes it decompressed (amplification = decompressed / returned) and the '
      'compressed bytes of blocks it read from the source (and, where the daemon counts them, '
      'in how many source reads, and all bytes read: chunk heads and metadata too).\n')
    w('| operation | b2ndfs cold (`slices/0/`: source cached; `slices/2/`: cache of one plane): '
      'requests · mean size | decompressed (amplif.) | compressed read '
      '| b2ndfs warm: requests · mean size | memfs: requests · mean size · most requests in flight on the mount so far |')
    w('| --- | --- | --- | --- | --- | --- |')

    diff = res.counter
    for op in OPS:
        cold = (res.runs('b2_cold', op) or res.runs('b2_cold_cached', op) or
                res.runs('b2_plane', op))
        warm = res.runs('b2_warm', op)
        mem = res.runs('memfs', op)
        cells = [op_label(res, op)]
        if cold and cold[0].get('stats'):
            c = cold[0]
            n = diff(c, 'reads', 'requests')
            served = diff(c, 'reads', 'bytes_served')
            dec = diff(c, 'reads', 'bytes_decompressed')
            cells += ['%.0f · %s' % (n, fmt_bytes(served / n) if n else '—'),
                      '%s (%.1fx)' % (fmt_bytes(dec), dec / c['bytes'] if c['bytes'] else 0),
                      fmt_bytes(diff(c, 'reads', 'compressed_bytes_fetched'))]
            # Every read of the source (block bytes, chunk heads, metadata):
            # for remote sources, requests and bytes transferred.
            src_reads = diff(c, 'reads', 'source_reads')
            if src_reads:
                cells[-1] += ' in %.0f source reads (%s in all)' % (
                    src_reads, fmt_bytes(diff(c, 'reads', 'source_bytes_read')))
        else:
            cells += ['—', '—', '—']
        if warm and warm[0].get('stats'):
            n = diff(warm[0], 'reads', 'requests')
            served = diff(warm[0], 'reads', 'bytes_served')
            cells.append('%.0f · %s' % (n, fmt_bytes(served / n) if n else '—'))
        else:
            cells.append('—')
        if mem and mem[0].get('stats'):
            n = diff(mem[0], 'requests')
            served = diff(mem[0], 'bytes')
            cells.append('%.0f · %s · %s' % (n, fmt_bytes(served / n) if n else '—',
                                          (mem[0]['stats'] or {}).get('most_in_flight', '?')))
        else:
            cells.append('—')
        w('| ' + ' | '.join(cells) + ' |')
    ws = notes.get('b2_warm_stats') or {}
    cache = ws.get('cache', {})
    w('\nb2ndfs warm mount at the end: block cache %s used of %s, %s entries, %s evictions, hit '
      'ratio %s; read latency p50/p90/p99 %s/%s/%s µs.\n' % (
          fmt_bytes(cache.get('bytes_cached')), fmt_bytes(cache.get('capacity_bytes')),
          cache.get('entries', '?'), cache.get('evictions', '?'), cache.get('hit_ratio', '?'),
          ws.get('read_latency_us', {}).get('p50', '?'), ws.get('read_latency_us', {}).get('p90', '?'),
          ws.get('read_latency_us', {}).get('p99', '?')))

    # --- CPU ---
    w('## CPU time per operation (median)\n')
    w('CPU seconds spent, and in brackets how many of the 2 cores that keeps busy over the '
      'wall time: c-blosc2 = all threads of the process over the timed part; b2ndfs/memfs = '
      'the daemon (run time of its threads from /proc/PID/task/*/sched, over the whole run; '
      'for slices divided by the repeats inside the run) + the reader\'s kernel time '
      '(page-cache copies, FUSE round trips).\n')
    w('| operation | c-blosc2, source cached | b2ndfs cold, source cached: daemon + reader | '
      'b2ndfs warm: daemon + reader | memfs: daemon + reader |')
    w('| --- | --- | --- | --- | --- |')

    def cpu_cell(scenario, op, with_daemon):
        runs = res.runs(scenario, op)
        if not runs:
            return '—'
        client = statistics.median([x.get('client_cpu') or 0 for x in runs])
        wall = res.median(scenario, op)
        if not with_daemon:
            return '%s (%.1f)' % (fmt_time(client), client / wall if wall else 0)
        daemon_values = [x['daemon_cpu'] for x in runs if x.get('daemon_cpu') is not None]
        if not daemon_values:
            return '— + %s' % fmt_time(client)
        daemon = statistics.median(
            [x['daemon_cpu'] / (x.get('repeat') or 1) for x in runs
             if x.get('daemon_cpu') is not None])
        return '%s + %s (%.1f)' % (fmt_time(daemon), fmt_time(client),
                                   (daemon + client) / wall if wall else 0)
    for op in BULK:
        w('| %s | %s | %s | %s | %s |' % (
            op_label(res, op), cpu_cell('inproc', op, False), cpu_cell('b2_cold_cached', op, True),
            cpu_cell('b2_warm', op, True), cpu_cell('memfs', op, True)))
    w('')

    render_sweep(results, w)

    # --- correctness ---
    w('## Correctness\n')
    # The reference of each operation: c-blosc2's bytes for the same array. Reading every
    # file of slices/0/ in name order returns the bytes of the whole array.
    reference = {}
    for x in results['records']:
        if x['scenario'] == 'inproc' and x.get('checksum'):
            reference.setdefault((x.get('geometry'), x['op']), x['checksum'])
    checked = 0
    wrong = []
    for x in results['records']:
        if x['scenario'] in ('memfs', 'native', 'b2ndfs') or not x.get('checksum'):
            continue
        ref = reference.get((x.get('geometry'), 'whole' if x['op'] == 'seq0' else x['op']))
        if ref is None:
            continue
        checked += 1
        if x['checksum'] != ref:
            wrong.append('%s %s %s run %d: %s, c-blosc2 gave %s' % (
                x.get('geometry'), x['scenario'], x['op'], x['rep'], x['checksum'], ref))
    if wrong:
        w('**WRONG BYTES**: %d of %d reads differ from c-blosc2\'s output:\n' % (len(wrong), checked))
        for line in wrong:
            w('- ' + line)
    else:
        w('All %d timed reads through b2ndfs and squashfuse (and c-blosc2 with the source '
          'evicted) returned exactly the bytes `b2nd_get_slice_cbuffer` / `b2nd_to_cbuffer` '
          'returned (position-dependent 128-bit checksum of every byte).' % checked)
    errors = results.get('errors') or []
    if errors:
        w('\n**Errors during the run** (crash, hang or failure of a route):\n')
        for e in errors:
            w('- `%s`' % e.replace('\n', ' ').replace('`', "'"))
    else:
        w('\nNo crash, hang or I/O error in any run.')
    w('')

    # --- how ---
    w('## How to rerun\n')
    w('```sh\nbash bench/run.sh              # 1 GiB array + the sweep at 256 MiB (default)\n'
      'bash bench/run.sh --quick      # 128 MiB + the sweep at 64 MiB, fewer random reads\n'
      'bash bench/run.sh --no-sweep --no-listing --ops whole,slice2,seq2\n'
      'bash bench/run.sh --size-mb 512 --reps 5\n```\n')
    w('Data is generated into `bench/out/data-SIZEmb/` (git-ignored; 2.4 GB for the default '
      'size) and reused by later runs of the same size; every run is in `bench/out/results.json`, and `python3 bench/report.py` re-renders '
      'this page from it. Programs: `bench_make_array` (data), `bench_inprocess` (c-blosc2 '
      'reference), `bench_reader` (timed reads of a file), `bench_memfs` (FUSE ceiling), '
      '`npy_reader.py` (numpy on squashfuse), driven by `bench.py`.')
    text = '\n'.join(out) + '\n'
    return text + '\n' + kept if kept else text


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else 'bench/out/results.json'
    with open(path) as f:
        results = json.load(f)
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'RESULTS.md')
    sys.stdout.write(render(results, kept_sections(page)))


if __name__ == '__main__':
    main()
