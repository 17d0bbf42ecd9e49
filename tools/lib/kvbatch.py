# SPDX-License-Identifier: GPL-2.0
"""tools/lib/kvbatch.py: what the Python tools (tools/kvreport) share with
the shell tools: the scheduler list and the definitions of the comparison.

Imported with the script's tools/lib/ on sys.path. Standard library only.
tools/lib/kvbatch.jq has the jq twins of best_peer() and completion(), for
tools/kvcompare; keep them in step.
"""

import os
import re


def _shell_scheds():
    """KVB_SCHEDS of tools/lib/kvbatch.sh, the one copy of the list."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "kvbatch.sh")
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.fullmatch(r'KVB_SCHEDS="([-a-z0-9 ]*)"\s*', line)
            if m:
                return tuple(m.group(1).split())
    raise ImportError(f"{path}: no KVB_SCHEDS=\"...\" line")


# The schedulers kvbatch is compared with, then kvbatch: the rows of every
# comparison table, in this order.
SCHEDS = _shell_scheds()


def completion(r):
    """The completion-time summary of one kvbench result (its "all" row):
    batch completion for the synthetic workloads, per-request recall
    completion for a replayed trace (kvbench --trace); None if neither."""
    c = r.get("batch_ms")
    if c is None or c is False:
        c = r.get("recall_ms")
    return None if c is None else c.get("all")


def best_peer(r, scheds, k, f):
    """The best (lowest) figure f(result) among the schedulers of the list
    scheds other than k, in r (scheduler -> result): what "mean/best" and
    "p99/best" divide by. None if a peer has no result or no figure (like
    jq's min, which puts null first), or if there is no peer."""
    figs = [f(r[s]) if r.get(s) is not None else None
            for s in scheds if s != k]
    if not figs or any(x is None for x in figs):
        return None
    return min(figs)
