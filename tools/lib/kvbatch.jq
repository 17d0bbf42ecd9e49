# SPDX-License-Identifier: GPL-2.0
#
# tools/lib/kvbatch.jq: jq definitions of tools/kvcompare ("jq -L
# tools/lib 'include "kvbatch"; ...'"). tools/lib/kvbatch.py has their
# Python twins, for tools/kvreport: keep the two in step.

# best_peer($r; $s; $k; f): the best (lowest) figure f among the
# schedulers of the list $s other than $k, in $r (scheduler -> result):
# what "mean/best" and "p99/best" divide by.
def best_peer($r; $s; $k; f): [$s[] | select(. != $k) | $r[.] | f] | min;

# completion(r): the completion-time summary of one kvbench result (its
# "all" row): batch completion for the synthetic workloads, per-request
# recall completion for a replayed trace (kvbench --trace).
def completion(r): (r.batch_ms // r.recall_ms).all;
