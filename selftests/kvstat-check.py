#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""kvstat-check.py: check kvbatch-stat --prometheus output against the
debugfs files it was made from.

usage: kvstat-check.py PROM DEBUGFS_BLOCK DEV...

PROM is the exposition, DEBUGFS_BLOCK the directory holding DEV/sched/
(/sys/kernel/debug/block, or a test's fixture). The exposition must parse
with prometheus_client's parser, every family must have HELP and the
kvbatch_ prefix, and every sample must be the value of the stats,
histogram or depth line it stands for, with nothing else in it: counters
and gauges as in the files, the histogram cumulative with le in seconds
(2^i us for i < 31; the last bucket counts in +Inf alone). Mismatches are
printed; exit 0 if there are none, 1 otherwise. Used by
selftests/kvstat_cli.sh (fixtures, on the host) and selftests/kvb_stat.sh
(a live null_blk, in the guest); written apart from the tool, so that it
checks the tool's names and mapping rather than repeating them.
"""

import sys

from prometheus_client.parser import text_string_to_metric_families

REASONS = ("expired", "tail", "normal", "prefetch", "write_burst", "share")
TIERS = ("demand", "normal", "prefetch", "write")

# Counter (without _total) and gauge names for the unlabelled stats keys.
PLAIN = {
    "kvbatch_requests_inserted_total": "inserted",
    "kvbatch_requests_merged_total": "merged",
    "kvbatch_bio_back_merges_total": "bio_back_merges",
    "kvbatch_bio_front_merges_total": "bio_front_merges",
    "kvbatch_requests_dispatched_total": "dispatched",
    "kvbatch_requests_requeued_total": "requeued",
    "kvbatch_requests_completed_total": "completed",
    "kvbatch_requests_bypassed_total": "bypassed",
    "kvbatch_writes_promoted_total": "promoted",
    "kvbatch_writes_deferred_total": "writes_deferred",
    "kvbatch_write_bursts_total": "write_bursts",
    "kvbatch_throttled_total": "throttled",
    "kvbatch_direct_dispatches_total": "direct",
    "kvbatch_queued_requests": "queued",
    "kvbatch_inflight_requests": "inflight",
    "kvbatch_live_batches": "batches_live",
    "kvbatch_live_batches_max": "batches_live_max",
}


def samples(text):
    """{(name, sorted labels): value} of the exposition TEXT, and the
    problems of its families (no HELP, no prefix)."""
    got, bad = {}, []
    for fam in text_string_to_metric_families(text):
        if not fam.name.startswith("kvbatch_"):
            bad.append(f"{fam.name}: no kvbatch_ prefix")
        if not fam.documentation:
            bad.append(f"{fam.name}: no HELP")
        for s in fam.samples:
            got[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return got, bad


def files(block, dev):
    """DEV's stats as {key: int}, histogram as {tier: {bound: count}} and
    depth's max_inflight line."""
    d = f"{block}/{dev}/sched"
    with open(f"{d}/stats", encoding="ascii") as f:
        stats = {w[0]: int(w[1]) for w in (line.split() for line in f)
                 if len(w) == 2 and w[1].isdigit()}
    hist = {}
    with open(f"{d}/histogram", encoding="ascii") as f:
        for line in f:
            t, b, c = line.split()
            hist.setdefault(t, {})[int(b)] = int(c)
    with open(f"{d}/depth", encoding="ascii") as f:
        depth = [line.split(None, 1)[1].strip() for line in f
                 if line.startswith("max_inflight ")][0]
    return stats, hist, depth


def expected(dev, stats, hist, depth):
    """{(name, sorted labels): value} that DEV's files call for."""
    want = {}

    def put(name, labels, value):
        want[(name, tuple(sorted({"device": dev, **labels}.items())))] = value

    for name, key in PLAIN.items():
        put(name, {}, stats[key])
    put("kvbatch_max_inflight", {}, int(depth.split()[0]))
    put("kvbatch_max_inflight_auto", {}, int(depth.endswith("(auto)")))
    for r in REASONS:
        put("kvbatch_dispatches_total", {"reason": r}, stats["reason_" + r])
    for t in TIERS:
        put("kvbatch_tier_requests_dispatched_total", {"tier": t},
            stats["dispatched_" + t])
    for t in TIERS[:3]:
        put("kvbatch_batches_opened_total", {"tier": t},
            stats[t + "_batches_opened"])
        put("kvbatch_batches_closed_total", {"tier": t},
            stats[t + "_batches_closed"])
        put("kvbatch_overflow_requests_total", {"tier": t},
            stats[t + "_overflow_rqs"])
        h = hist.get(t, {})
        for i in range(31):
            put("kvbatch_batch_duration_seconds_bucket",
                {"tier": t, "le": (1 << i) / 1e6},
                sum(c for b, c in h.items() if b <= 1 << i))
        put("kvbatch_batch_duration_seconds_bucket",
            {"tier": t, "le": float("inf")}, sum(h.values()))
    return want


def numeric_le(got):
    """GOT with each le label as a number, to compare bounds by value."""
    out = {}
    for (name, labels), v in got.items():
        out[(name, tuple((k, float(x) if k == "le" else x)
                         for k, x in labels))] = v
    return out


def main(argv):
    """Check the exposition ARGV[0] against ARGV[2:] in ARGV[1]."""
    if len(argv) < 3:
        print("usage: kvstat-check.py PROM DEBUGFS_BLOCK DEV...",
              file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        got, bad = samples(f.read())
    got = numeric_le(got)
    want = {}
    for dev in argv[2:]:
        want.update(expected(dev, *files(argv[1], dev)))
    for key, value in want.items():
        if got.get(key) != value:
            bad.append(f"{key[0]}{dict(key[1])}: {got.get(key)}, "
                       f"want {value}")
    for key in got.keys() - want.keys():
        bad.append(f"unexpected sample {key[0]}{dict(key[1])}")
    for line in bad[:40]:
        print(line)
    print(f"{len(want)} samples checked, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
