"""The arrays the benchmark measures: one geometry (block and chunk shape, codec,
filter) each, and the block arithmetic the targets need.

The main run uses MAIN at the full size (1 GiB by default) with every route;
the sweep (on by default, --no-sweep to skip) repeats the issue #12 rows on
smaller arrays of the other geometries, so that the targets are checked for
blocks of 16 KiB to 1 MiB, chunks of 256 KiB to 16 MiB, lz4, zstd and
blosclz, with and without shuffle. All arrays are float32 of the same field.
"""
import math

ITEMSIZE = 4


def geometry(name, label, blocks, chunks, codec, shuffle, clevel=None):
    return {'name': name, 'label': label, 'blocks': blocks, 'chunks': chunks, 'codec': codec,
            'shuffle': shuffle, 'clevel': clevel if clevel is not None else (
                1 if codec == 'zstd' else 5)}


# Blocks and chunks in items of float32: 16 KiB = 4096 items, and so on.
GEOMETRIES = [
    geometry('b16k-c256k-lz4-shuffle', '16 KiB / 256 KiB, lz4+shuffle',
             [4, 32, 32], [16, 64, 64], 'lz4', True),
    geometry('b20k-c640k-lz4-shuffle', '20 KiB / 640 KiB, lz4+shuffle',
             [5, 32, 32], [10, 128, 128], 'lz4', True),
    geometry('b64k-c4m-zstd-shuffle', '64 KiB / 4 MiB, zstd+shuffle',
             [16, 32, 32], [64, 128, 128], 'zstd', True),
    # blosclz with shuffle: without it, blosclz leaves this field uncompressed
    # (cratio 1.00, chunks stored as memcpy), which would not exercise its decoder.
    geometry('b256k-c16m-blosclz-shuffle', '256 KiB / 16 MiB, blosclz+shuffle',
             [16, 64, 64], [64, 256, 256], 'blosclz', True),
    geometry('b1m-c16m-zstd', '1 MiB / 16 MiB, zstd',
             [16, 128, 128], [64, 256, 256], 'zstd', False),
]
MAIN = 'b64k-c4m-zstd-shuffle'


def by_name(name):
    return next(g for g in GEOMETRIES if g['name'] == name)


def make_args(g):
    """bench_make_array's arguments for geometry `g`."""
    return ['--chunks', ','.join(map(str, g['chunks'])), '--blocks',
            ','.join(map(str, g['blocks'])), '--codec', g['codec'], '--clevel', str(g['clevel']),
            '--shuffle', '1' if g['shuffle'] else '0']


def blocks_per_axis(shape, chunks, blocks):
    """Blocks along each axis that hold items of the array: an edge chunk is padded to the
    chunk shape, but its blocks wholly in the padding need never be decompressed."""
    per = []
    for n, c, b in zip(shape, chunks, blocks):
        count = 0
        for start in range(0, n, c):
            count += math.ceil(min(c, n - start) / b)
        per.append(count)
    return per


def block_bytes(blocks):
    return ITEMSIZE * blocks[0] * blocks[1] * blocks[2]


def total_blocks(shape, chunks, blocks):
    per = blocks_per_axis(shape, chunks, blocks)
    return per[0] * per[1] * per[2]


def plane_bytes(shape, chunks, blocks, axis):
    """Decompressed bytes of the blocks that one slice along `axis` touches."""
    per = blocks_per_axis(shape, chunks, blocks)
    count = 1
    for a in range(3):
        if a != axis:
            count *= per[a]
    return count * block_bytes(blocks)


# cache_size for reading slices/2/ in order: about one plane of blocks. A
# quarter more, because the cache also charges chunk indexes and metadata to
# the same budget, and an LRU cache even slightly smaller than a cyclic
# working set misses on every access.
PLANE_CACHE_FACTOR = 1.25


def plane_cache_mb(shape, chunks, blocks, axis=2):
    return math.ceil(PLANE_CACHE_FACTOR * plane_bytes(shape, chunks, blocks, axis) / 2**20)
