#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Report of tools/kvab -p: guest instructions per request, by function.

usage: tools/lib/kvinsns.py DIR [TOP]

DIR holds what the guest part of kvab -p and the tcg-insns plugin wrote:
"runs" (one line per measured run: ROW SCHEDULER REQUESTS SNAP_BEFORE
SNAP_AFTER SECONDS), "kallsyms-ROW" (the guest's /proc/kallsyms once the row's
modules were loaded) and the plugin's snapshots "snap.N". Each run's
instructions are the difference of its two snapshots; a scheduler's runs
of one row are summed; dividing by the requests fio completed gives
instructions per request. Kernel code is named by kallsyms ("name
[module]" for a module's); user space is one line, "(user)".

Printed per row: the requests, the guest's instructions per second of
run time (millions, both vCPUs: lower means vCPUs idle or emulated more
slowly), the kernel and user instructions per request, the sum over each
scheduler's own functions, and the TOP kernel functions (default 25) by
their largest count, one column per scheduler.
"""
import bisect
import collections
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from kvbatch import ArgumentParser  # noqa: E402

KERNEL_START = 0xffff800000000000
# A scheduler's own functions: its module's, or the built-in elevators'.
OWN_PREFIXES = {
    "mq-deadline": ("dd_", "__dd_", "deadline_"),
    "kyber": ("kyber_",),
    "bfq": ("bfq_", "__bfq_"),
}
# Their modules where not named as their elevators (bfq's, kvbatch's and
# its kvab variants' are).
OWN_MODULES = {
    "mq-deadline": "mq_deadline",
    "kyber": "kyber_iosched",
}


class Symbols:
    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 3 or p[1] not in "tTwW":
                    continue
                name = p[2] + (" " + p[3] if len(p) > 3 else "")
                syms.append((int(p[0], 16), name))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        self.cache = {}

    def name(self, va):
        if va < KERNEL_START:
            return "(user)"
        n = self.cache.get(va)
        if n is None:
            i = bisect.bisect_right(self.addrs, va) - 1
            n = self.names[i] if i >= 0 else "(unknown)"
            self.cache[va] = n
        return n


def load(d, n):
    c = collections.Counter()
    with open(f"{d}/snap.{n}") as f:
        for line in f:
            va, ninsns, count = line.split()
            c[int(va, 16)] += int(ninsns) * int(count)
    return c


def own(sched, fn):
    # kvab's SCHED:KNOB=VALUE,...: SCHED with tunables set.
    sched = sched.split(":", 1)[0]
    if fn.endswith("]"):
        return fn.rsplit(" ", 1)[1] == f"[{OWN_MODULES.get(sched, sched)}]"
    return fn.startswith(OWN_PREFIXES.get(sched, ("\0",)))


def parse_args(argv):
    """DIR and TOP, checked: a usage error for a DIR without runs or a
    TOP that is not 1..100000."""
    p = ArgumentParser(
        prog="tools/lib/kvinsns.py", usage="%(prog)s DIR [TOP]",
        description="Guest instructions per request, by function, from "
        "what tools/kvab -p and the tcg-insns plugin wrote in DIR.")
    p.add_argument("dir", metavar="DIR",
                   help="the directory of runs, kallsyms-ROW and snap.N")
    p.add_argument("top", metavar="TOP", nargs="?", default="25",
                   help="kernel functions shown per row, 1..100000 "
                   "(default 25)")
    a = p.parse_args(argv)
    if not os.path.isfile(f"{a.dir}/runs"):
        p.error(f"DIR: no file {a.dir}/runs")
    if not (re.fullmatch(r"[0-9]{1,6}", a.top, flags=re.ASCII)
            and 1 <= int(a.top) <= 100000):
        p.error(f"TOP: not a number 1..100000: '{a.top}'")
    return a.dir, int(a.top)


def main():
    d, top = parse_args(sys.argv[1:])
    rows = collections.OrderedDict()
    syms = {}
    with open(f"{d}/runs") as f:
        for line in f:
            row, sched, reqs, a, b, secs = line.split()
            if row not in syms:
                syms[row] = Symbols(f"{d}/kallsyms-{row}")
            before, after = load(d, a), load(d, b)
            fns = rows.setdefault(row, collections.OrderedDict())
            reqs_fns = fns.setdefault(sched, [0, collections.Counter(), 0])
            reqs_fns[0] += int(reqs)
            reqs_fns[2] += int(secs)
            for va, v in after.items():
                dv = v - before.get(va, 0)
                if dv > 0:
                    reqs_fns[1][syms[row].name(va)] += dv
    for row, fns in rows.items():
        names = list(fns)
        per = {s: {k: v / max(fns[s][0], 1) for k, v in fns[s][1].items()}
               for s in names}
        w = max(12, max(len(s) for s in names) + 2)

        def line(label, vals, fmt="%*.0f"):
            print("%-44s" % label[:44] +
                  "".join(fmt % (w, v) for v in vals))

        print(f"== {row}: guest instructions per request ==")
        print("%-44s" % "" + "".join("%*s" % (w, s) for s in names))
        line("requests", [fns[s][0] for s in names])
        line("million instructions per second",
             [sum(fns[s][1].values()) / max(fns[s][2], 1) / 1e6
              for s in names])
        line("kernel", [sum(v for k, v in per[s].items() if k != "(user)")
                        for s in names])
        line("user", [per[s].get("(user)", 0) for s in names])
        line("the scheduler's own functions",
             [sum(v for k, v in per[s].items() if own(s, k))
              for s in names])
        best = collections.Counter()
        for s in names:
            for k, v in per[s].items():
                if k != "(user)":
                    best[k] = max(best[k], v)
        for k, _ in best.most_common(top):
            line(k, [per[s].get(k, 0) for s in names], "%*.1f")
        print()


if __name__ == "__main__":
    main()
