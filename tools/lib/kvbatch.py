# SPDX-License-Identifier: GPL-2.0
"""tools/lib/kvbatch.py: what the Python tools (tools/kvcompare,
tools/kvreport, kvtracegen, kvtrace2sim, kvinsns.py) share, and take from
the shell tools: the command-line convention, the scheduler list, the
definitions of the comparison, the layout of their tables.

Imported with the script's tools/lib/ on sys.path. Standard library only.
"""

import argparse
import os
import re
import subprocess
import sys

_SHELL_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "kvbatch.sh")


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, held to the tools' command-line convention.
    --help and -h print the usage and the help on stdout and exit 0
    (argparse's own); a bad argument prints one line saying what was
    wrong ("TOOL: ..."), then the usage on one line ("usage: TOOL ..."),
    both on stderr, and exits 2. argparse prints the usage first, and
    wraps a long one over several lines: a caller's log or a test that
    reads the last line or the first should find the same thing in every
    tool."""

    def usage_line(self):
        """The usage, whitespace and all, on one line."""
        return " ".join(self.format_usage().split())

    def error(self, message):
        name = os.path.basename(self.prog)
        sys.stderr.write(f"{name}: {message}\n{self.usage_line()}\n")
        sys.exit(2)


def _shell_scheds():
    """KVB_SCHEDS of tools/lib/kvbatch.sh, the one copy of the list."""
    path = _SHELL_LIB
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


def load_peers():
    """kvb_load_peers of tools/lib/kvbatch.sh: load the peers that are
    modules (kyber, bfq), so that a queue offers them."""
    subprocess.run(["bash", "-c", 'source "$1" && kvb_load_peers', "bash",
                    _SHELL_LIB], check=True)


def align(rows):
    """The rows (lists of cells) as lines, each column but the last padded
    to its widest cell and two spaces from the next, as column -t does."""
    widths = [max(len(c) for c in col) for col in zip(*rows)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
            for r in rows]


def shell_words(name):
    """The words of NAME, an array (or a string) of tools/lib/kvbatch.sh:
    the one copy of a definition the shell tools share (a null_blk shape,
    a workload's kvbench arguments)."""
    r = subprocess.run(["bash", "-c", 'source "$1" && [ -v "$2" ] &&'
                        ' declare -n v="$2" && printf "%s\\0" "${v[@]}"',
                        "bash", _SHELL_LIB, name], stdout=subprocess.PIPE,
                       text=True, check=False)
    if r.returncode != 0:
        raise LookupError(f"{_SHELL_LIB}: no {name}")
    return r.stdout.split("\0")[:-1]


def tunable_ok(header, knob, value):
    """kvb_tunable_ok of tools/lib/kvbatch.sh: whether kvbatch takes VALUE
    for iosched/KNOB, by HEADER (kv-tunables.h, the list the module is
    built from)."""
    return subprocess.run(["bash", "-c", 'source "$1" && shift &&'
                           ' kvb_tunable_ok "$@"', "bash", _SHELL_LIB,
                           header, knob, value],
                          check=False).returncode == 0


def nullb_reload(params):
    """kvb_nullb_reload of tools/lib/kvbatch.sh: null_blk reloaded with
    one blk-mq device, nullb0, shaped by the module parameters PARAMS;
    False if it did not load or nullb0 did not appear."""
    return subprocess.run(["bash", "-c", 'source "$1" && shift &&'
                           ' kvb_nullb_reload "$@"', "bash", _SHELL_LIB,
                           *params], check=False).returncode == 0
