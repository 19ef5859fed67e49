#!/usr/bin/python3
"""Times what a NumPy user does with an .npy file: numpy.load(mmap_mode='r'), then a copy.

    npy_reader.py [--repeat K] whole PATH        the whole array (into a buffer allocated beforehand)
    npy_reader.py [--repeat K] slice AXIS PATH   the slab at the middle index of AXIS, made contiguous

The time covers np.load (open, header, mmap), the copy and the unmap; the
checksum (the same function as bench_common.h's Checksum) is computed after.
--repeat K does it K times and reports the median time.
Prints one JSON object, like the C++ tools.
"""
import json
import sys
import time

import numpy as np

MASK = (1 << 64) - 1


def checksum(data):
    """s1 = sum w_i, s2 = sum i*w_i (mod 2^64) over the little-endian words of the zero-padded bytes."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    pad = (-raw.size) % 8
    if pad:
        raw = np.concatenate([raw, np.zeros(pad, np.uint8)])
    words = raw.view('<u8')
    s1 = s2 = 0
    step = 1 << 22
    with np.errstate(over='ignore'):
        for start in range(0, words.size, step):
            w = words[start:start + step]
            index = np.arange(start + 1, start + 1 + w.size, dtype=np.uint64)
            s1 = (s1 + int(w.sum(dtype=np.uint64))) & MASK
            s2 = (s2 + int((w * index).sum(dtype=np.uint64))) & MASK
    return '%016x%016x' % (s1, s2)


def once(op, argv):
    if op == 'whole':
        path = argv[0]
        probe = np.load(path, mmap_mode='r')
        out = np.ones(probe.shape, probe.dtype)  # allocated and touched before timing
        del probe
        t0 = time.perf_counter()
        a = np.load(path, mmap_mode='r')
        np.copyto(out, a)
        del a
        return time.perf_counter() - t0, out
    if op == 'slice':
        axis = int(argv[0])
        path = argv[1]
        t0 = time.perf_counter()
        a = np.load(path, mmap_mode='r')
        index = (slice(None),) * axis + (a.shape[axis] // 2,)
        out = np.ascontiguousarray(a[index])
        del a
        return time.perf_counter() - t0, out
    sys.exit('usage: npy_reader.py [--repeat K] whole PATH | slice AXIS PATH')


def main():
    argv = sys.argv[1:]
    repeat = 1
    if argv[:1] == ['--repeat']:
        repeat = max(1, int(argv[1]))
        argv = argv[2:]
    times = []
    digest = None
    for _ in range(repeat):
        seconds, out = once(argv[0], argv[1:])
        times.append(seconds)
        d = checksum(out)
        if digest is not None and d != digest:
            sys.exit('npy_reader.py: bytes differ between repeats')
        digest = d
    times.sort()
    print(json.dumps({'tool': 'numpy', 'op': argv[0], 'seconds': times[len(times) // 2],
                      'min_seconds': times[0], 'repeat': repeat, 'bytes': int(out.nbytes),
                      'calls': 1, 'checksum': digest}))


if __name__ == '__main__':
    main()
