#!/usr/bin/python3
"""open_reader: a reader that keeps a file of a mount open while the test
changes the container under it (fuse_open_replace.sh, fuse_sparse_rewrite.sh).
It knows nothing of b2ndfs: it reads with os.pread() or through a NumPy
memmap and compares with reference bytes that c-blosc2 wrote.

  open_reader.py read FILE OLD [--first N] [--new NEW] [--piece P]
      Opens FILE (POSIX_FADV_RANDOM: the kernel reads no more than asked),
      reads [0, N) (default: all of it) and checks it against OLD, prints
      "ready". Then, for every line on stdin, drops the file's cached pages
      (so that reads reach the daemon) and reads, in pieces of P bytes
      (default 64 KiB), first the rest [N, EOF), then again [0, N); prints
      one line per phase:
        phase NAME pieces=K ok=A eio=B new=C other=D [first_bad=OFF:WHAT]
      ok: OLD's bytes; eio: the read failed with EIO; new: NEW's bytes where
      they differ from OLD's; other: anything else (another errno, other
      bytes, a short read, bytes past OLD's end). Then "checked".
  open_reader.py mmap NPY OLD [--touch FRACTION]
      numpy.load(NPY, mmap_mode="r"), checks that the first FRACTION
      (default 0.3) of its payload holds OLD's bytes, prints "ready"; for
      every line on stdin, drops the mapping's pages and compares the whole
      payload with OLD, prints "mmap ok" or "mmap BAD ...", then "checked".
      A page the daemon cannot serve kills the process with SIGBUS
      (faulthandler says so on stderr; exit status 135 from a shell).
  open_reader.py cat FILE OUT
      Opens FILE, drops its cached pages (so that every read reaches the
      daemon), copies it to OUT; exits 1 with the errno's name on a failed
      read.
Exits 0 at the end of stdin, 2 on a setup error (the first check failed).
"""
import errno
import faulthandler
import mmap
import os
import sys


def die(msg):
    print("open_reader: " + msg, file=sys.stderr, flush=True)
    sys.exit(2)


def arg_value(args, name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def pread_piece(fd, off, length):
    """(bytes, None) or (None, errno)."""
    out = b""
    while len(out) < length:
        try:
            b = os.pread(fd, length - len(out), off + len(out))
        except OSError as e:
            return None, e.errno
        if not b:
            break
        out += b
    return out, None


def classify(got, err, old, new, off, length):
    if err is not None:
        return ("eio" if err == errno.EIO else "other"), errno.errorcode.get(err, str(err))
    if got == old[off:off + length]:
        return "ok", ""
    if new is not None and got == new[off:off + length] and got != old[off:off + length]:
        return "new", "NEW's bytes"
    if len(got) != len(old[off:off + length]):
        return "other", "%d bytes where OLD has %d" % (len(got), len(old[off:off + length]))
    return "other", "bytes of neither version"


def phase(fd, name, start, stop, piece, old, new, to_eof):
    counts = {"ok": 0, "eio": 0, "new": 0, "other": 0}
    first_bad = ""
    off = start
    pieces = 0
    while to_eof or off < stop:
        length = piece if to_eof else min(piece, stop - off)
        got, err = pread_piece(fd, off, length)
        if got is not None and not got and to_eof:
            if off < len(old):
                counts["other"] += 1
                first_bad = first_bad or "%d:EOF before OLD's end (%d)" % (off, len(old))
            break
        kind, what = classify(got, err, old, new, off, length)
        counts[kind] += 1
        pieces += 1
        if kind != "ok" and not first_bad:
            first_bad = "%d:%s" % (off, what)
        off += length
        if to_eof and off >= len(old) + 4 * piece:
            counts["other"] += 1
            first_bad = first_bad or "%d:reads go on past OLD's end" % off
            break
    line = "phase %s pieces=%d ok=%d eio=%d new=%d other=%d" % (
        name, pieces, counts["ok"], counts["eio"], counts["new"], counts["other"])
    if first_bad:
        line += " first_bad=" + first_bad.replace(" ", "_")
    print(line, flush=True)


def run_read(args):
    piece = int(arg_value(args, "--piece", 65536))
    new_path = arg_value(args, "--new", None)
    first = arg_value(args, "--first", None)
    if len(args) != 2:
        die("read FILE OLD [--first N] [--new NEW] [--piece P]")
    path, old = args[0], open(args[1], "rb").read()
    new = open(new_path, "rb").read() if new_path else None
    first = len(old) if first is None else min(int(first), len(old))
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    got, err = pread_piece(fd, 0, first)
    if got != old[:first]:
        die("%s: [0, %d) does not read as %s to begin with (%s)" %
            (path, first, args[1], errno.errorcode.get(err, "other bytes")))
    print("ready", flush=True)
    for _ in sys.stdin:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        phase(fd, "rest", first, None, piece, old, new, True)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        phase(fd, "reread", 0, first, piece, old, new, False)
        print("checked", flush=True)
    os.close(fd)
    return 0


def run_mmap(args):
    import numpy as np
    touch = float(arg_value(args, "--touch", 0.3))
    if len(args) != 2:
        die("mmap NPY OLD [--touch FRACTION]")
    old = np.frombuffer(open(args[1], "rb").read(), dtype=np.uint8)
    arr = np.load(args[0], mmap_mode="r")
    # A descriptor of the same open file, to drop its cached pages later.
    fd = os.open(args[0], os.O_RDONLY)
    flat = arr.reshape(-1).view(np.uint8)
    if flat.size != old.size:
        die("%s: %d payload bytes, OLD has %d" % (args[0], flat.size, old.size))
    n = int(old.size * touch)
    if not np.array_equal(flat[:n], old[:n]):
        die("%s: the first %d bytes are not OLD's to begin with" % (args[0], n))
    print("ready", flush=True)
    for _ in sys.stdin:
        raw = getattr(arr, "_mmap", None)
        if raw is not None and hasattr(mmap, "MADV_DONTNEED"):
            raw.madvise(mmap.MADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        same = np.array_equal(flat, old)
        if same:
            print("mmap ok", flush=True)
        else:
            at = int(np.argmax(flat != old))
            print("mmap BAD first differing byte at %d" % at, flush=True)
        print("checked", flush=True)
    os.close(fd)
    return 0


def run_cat(args):
    if len(args) != 2:
        die("cat FILE OUT")
    try:
        fd = os.open(args[0], os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        with open(args[1], "wb") as out:
            off = 0
            while True:
                b = os.pread(fd, 1 << 20, off)
                if not b:
                    break
                out.write(b)
                off += len(b)
        os.close(fd)
    except OSError as e:
        print("%s: %s" % (args[0], errno.errorcode.get(e.errno, str(e.errno))), file=sys.stderr)
        return 1
    return 0


def main():
    faulthandler.enable()
    if len(sys.argv) < 2:
        die("read|mmap ...")
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "read":
        return run_read(args)
    if cmd == "mmap":
        return run_mmap(args)
    if cmd == "cat":
        return run_cat(args)
    die("unknown command " + cmd)


if __name__ == "__main__":
    sys.exit(main())
