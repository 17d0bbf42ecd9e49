#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# sysfs-fuzz.py COUNT SEED FILE VALID [FILE VALID...]
#
# Write COUNT random byte strings into each sysfs attribute FILE, each with
# a single write(2): pure noise (1..64 bytes), and the well-formed value
# VALID with noise appended, prepended or inserted (NUL bytes included).
# Every write must fail with EINVAL and leave what FILE reads unchanged. A
# draw that happens to be well formed (digits and at most one trailing
# newline, or VALID itself with at most one trailing newline) is not
# written. Several files in one run: under TCG a Python start costs more
# than its 200 writes.
#
# Prints one line per FILE, "ok FILE" or "not ok FILE" (the write that
# was accepted or that changed the value on stderr, its bytes in hex), and
# goes on with the next FILE. Exit 0 if every write to every file was
# refused, 1 if any was not, 2 on usage errors. SEED (the files' draws
# follow each other from it) makes a failing run reproducible.
import errno
import os
import random
import re
import sys

WELL_FORMED = re.compile(rb'[0-9]+\n?\Z')


def usage():
    print('usage: sysfs-fuzz.py COUNT SEED FILE VALID [FILE VALID...]',
          file=sys.stderr)
    sys.exit(2)


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def draw(rng, good):
    noise = lambda lo, hi: rng.randbytes(rng.randint(lo, hi))
    kind = rng.randrange(4)
    if kind == 0:
        return noise(1, 64)
    if kind == 1:
        return good + noise(1, 4)
    if kind == 2:
        return noise(1, 4) + good
    cut = rng.randint(0, len(good))
    return good[:cut] + noise(1, 1) + good[cut:] + b'\n'


def fuzz(rng, path, good, count):
    """COUNT refused writes to PATH; False (and why, on stderr) if not."""
    before = read(path)
    written = 0
    while written < count:
        data = draw(rng, good)
        if WELL_FORMED.match(data) or data in (good, good + b'\n'):
            continue
        written += 1
        fd = os.open(path, os.O_WRONLY)
        try:
            n = os.write(fd, data)
            print(f'{path}: accepted {data.hex()} ({n} bytes written)',
                  file=sys.stderr)
            return False
        except OSError as e:
            if e.errno != errno.EINVAL:
                print(f'{path}: {data.hex()}: {os.strerror(e.errno)}, '
                      'not EINVAL', file=sys.stderr)
                return False
        finally:
            os.close(fd)
        after = read(path)
        if after != before:
            print(f'{path}: changed from {before!r} to {after!r} by '
                  f'{data.hex()}', file=sys.stderr)
            return False
    return True


def main():
    args = sys.argv[1:]
    if len(args) < 4 or len(args) % 2:
        usage()
    try:
        count, seed = int(args[0]), int(args[1])
    except ValueError:
        usage()
    pairs = [(args[i], args[i + 1].encode()) for i in range(2, len(args), 2)]
    if count < 1 or not all(good for _, good in pairs):
        usage()
    rng = random.Random(seed)
    rc = 0
    for path, good in pairs:
        ok = fuzz(rng, path, good, count)
        print(('ok ' if ok else 'not ok ') + path, flush=True)
        rc = rc if ok else 1
    return rc


if __name__ == '__main__':
    sys.exit(main())
