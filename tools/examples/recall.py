#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""usage: recall.py [options] DIR

The recall path of a KV-cache engine with a disk tier, in the shape of
LMCache's local-disk backend or vLLM's file offloading: one file per KV
block in DIR (created if DIR has none), a thread pool serving requests,
and each request a recall batch that reads its blocks with O_DIRECT into
page-aligned buffers inside kvbatch.recall(), so that the scheduler sees
each request's reads as one batch. Prints each batch's latency, then a
summary line.

The demand tier needs CAP_SYS_NICE or CAP_SYS_ADMIN: without it the
program stops with kvbatch's PermissionError (exit 1); --tier group
needs no privilege.
"""

import argparse
import concurrent.futures
import mmap
import os
import random
import sys
import threading
import time

# The tree's copy of the module beside this program's directory, else the
# installed one.
_TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "..", "python")
if os.path.isfile(os.path.join(_TREE, "kvbatch.py")):
    sys.path.insert(0, _TREE)
import kvbatch  # noqa: E402

PROG = "recall.py"


class Parser(argparse.ArgumentParser):
    """A bad argument: what was wrong and the usage, on stderr, exit 2."""

    def error(self, message):
        usage = " ".join(self.format_usage().split())
        sys.stderr.write(f"{PROG}: {message}\n{usage}\n")
        sys.exit(2)


def count(lo, hi):
    def parse(s):
        if not s.isdigit() or not lo <= int(s) <= hi:
            raise argparse.ArgumentTypeError(f"'{s}' is not in {lo}..{hi}")
        return int(s)
    return parse


def block_path(d, i):
    return os.path.join(d, f"kvblock-{i:06d}")


def make_blocks(d, n, size):
    """N block files of SIZE bytes, each filled with its own number."""
    for i in range(n):
        with open(block_path(d, i), "wb") as f:
            f.write(i.to_bytes(4, "little") * (size // 4))
            f.flush()
            os.fsync(f.fileno())


_local = threading.local()


def buffer(size):
    """This thread's page-aligned read buffer (O_DIRECT needs alignment)."""
    b = getattr(_local, "buf", None)
    if b is None or len(b) != size:
        b = _local.buf = mmap.mmap(-1, size)
    return b


def serve(d, blocks, size, tier):
    """One request: its blocks read as one recall batch."""
    buf = buffer(size)
    with kvbatch.recall(tier=tier) as r:
        start = time.monotonic()
        for i in blocks:
            fd = os.open(block_path(d, i), os.O_RDONLY | os.O_DIRECT)
            try:
                n = os.preadv(fd, [buf], 0)
            finally:
                os.close(fd)
            if n != size or buf[:4] != i.to_bytes(4, "little"):
                raise OSError(f"{block_path(d, i)}: short or wrong read "
                              f"({n} bytes)")
        ms = (time.monotonic() - start) * 1e3
    return r.batch_id, r.ioprio, ms


def main():
    p = Parser(prog=PROG, usage="%(prog)s [options] DIR",
               description=__doc__.split("\n\n", 1)[1],
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", metavar="DIR", help="the KV block files' directory")
    p.add_argument("-n", "--blocks", type=count(1, 100000), default=64,
                   help="block files to create if DIR has none (64)")
    p.add_argument("-b", "--block-kb", type=count(4, 65536), default=256,
                   help="block size in KiB, a multiple of 4 (256)")
    p.add_argument("-r", "--requests", type=count(1, 100000), default=16,
                   help="requests, each one recall batch (16)")
    p.add_argument("-p", "--per-request", type=count(1, 1024), default=8,
                   help="blocks each request reads (8)")
    p.add_argument("-j", "--threads", type=count(1, 256), default=4,
                   help="the thread pool's threads (4)")
    p.add_argument("-t", "--tier", choices=sorted(kvbatch.TIERS),
                   default=kvbatch.DEMAND, help="the batches' tier (demand)")
    p.add_argument("-s", "--seed", type=count(0, 2**32 - 1), default=1,
                   help="the blocks' choice (1)")
    a = p.parse_args()
    if a.block_kb % 4:
        p.error(f"argument -b/--block-kb: '{a.block_kb}' is not a "
                "multiple of 4")
    if not os.path.isdir(a.dir):
        p.error(f"DIR '{a.dir}' is not a directory")
    size = a.block_kb << 10

    def blocks():
        return sorted(f for f in os.listdir(a.dir) if f.startswith("kvblock-"))

    try:
        have = blocks()
        if not have:
            make_blocks(a.dir, a.blocks, size)
            have = blocks()
        if os.path.getsize(os.path.join(a.dir, have[0])) != size:
            raise OSError(f"{a.dir}: blocks of another size than "
                          f"{a.block_kb} KiB")
    except OSError as e:
        sys.stderr.write(f"{PROG}: {e}\n")
        return 1
    nblocks = len(have)
    rng = random.Random(a.seed)
    reqs = [rng.sample(range(nblocks), min(a.per_request, nblocks))
            for _ in range(a.requests)]

    lat = []
    with concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        futs = [pool.submit(serve, a.dir, r, size, a.tier) for r in reqs]
        for i, f in enumerate(futs):
            try:
                bid, prio, ms = f.result()
            except OSError as e:
                for g in futs:
                    g.cancel()
                sys.stderr.write(f"{PROG}: {e}\n")
                return 1
            lat.append(ms)
            print(f"request {i}: batch {bid} ioprio 0x{prio:04x} "
                  f"{len(reqs[i])} blocks {ms:.2f} ms", flush=True)
    lat.sort()
    print(f"{PROG}: {len(lat)} requests, {sum(map(len, reqs))} reads of "
          f"{a.block_kb} KiB, tier {a.tier}: batch mean "
          f"{sum(lat) / len(lat):.2f} ms, max {lat[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
