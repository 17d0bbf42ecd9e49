#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# sysfs-fuzz.py FILE VALID COUNT SEED
#
# Write COUNT random byte strings into the sysfs attribute FILE, each with a
# single write(2): pure noise (1..64 bytes), and the well-formed value VALID
# with noise appended, prepended or inserted (NUL bytes included). Every
# write must fail with EINVAL and leave what FILE reads unchanged. A draw
# that happens to be well formed (digits and at most one trailing newline,
# or VALID itself with at most one trailing newline) is not written.
#
# Exit 0 if every write was refused, 1 on the first one that was not
# (reported on stderr with the bytes in hex), 2 on usage errors. SEED makes
# a failing run reproducible.
import errno
import os
import random
import re
import sys

WELL_FORMED = re.compile(rb'[0-9]+\n?\Z')


def usage():
    print('usage: sysfs-fuzz.py FILE VALID COUNT SEED', file=sys.stderr)
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


def main():
    if len(sys.argv) != 5:
        usage()
    path, good = sys.argv[1], sys.argv[2].encode()
    try:
        count, seed = int(sys.argv[3]), int(sys.argv[4])
    except ValueError:
        usage()
    if count < 1 or not good:
        usage()
    rng = random.Random(seed)
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
            return 1
        except OSError as e:
            if e.errno != errno.EINVAL:
                print(f'{path}: {data.hex()}: {os.strerror(e.errno)}, '
                      'not EINVAL', file=sys.stderr)
                return 1
        finally:
            os.close(fd)
        after = read(path)
        if after != before:
            print(f'{path}: changed from {before!r} to {after!r} by '
                  f'{data.hex()}', file=sys.stderr)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
