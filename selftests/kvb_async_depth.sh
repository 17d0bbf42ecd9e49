#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The queue's async_depth and kvbatch's. Since 7.x the core keeps the async
# tag budget of every scheduler in the queue (queue/async_depth, scaled by
# the core when nr_requests changes). kvbatch stores its budget there: the
# queue file shows the budget in force, a write to it becomes kvbatch's
# budget (debugfs depth), with write_defer_max at most half of it, until
# nr_requests or kvbatch's own async_depth tunable changes, and then the
# tunable's rule (0: 3/4 of nr_requests; N: at most N) decides again, as
# on kernels without the queue file.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=32
d=nullb0
q=/sys/block/$d/queue
dbg=/sys/kernel/debug/block/$d/sched/depth
if [ ! -e "$q/async_depth" ]; then
	kvb_nullb_teardown
	ktap_exit_skip "no queue/async_depth on $(uname -r): kvbatch's tunable alone sets the budget"
fi

ktap_print_header
ktap_set_plan 8

# agree WANT: the queue file and kvbatch's budget both WANT.
agree() {
	local qa kb

	qa=$(cat "$q/async_depth")
	kb=$(awk '$1 == "async_depth" { print $2 }' "$dbg")
	log "nr_requests $(cat "$q/nr_requests"), queue/async_depth $qa, kvbatch $kb, tunable $(cat "$q/iosched/async_depth")"
	[ "$qa" = "$1" ] && [ "$kb" = "$1" ]
}

kvb_use_kvbatch "$d"
nr=$(cat "$q/nr_requests")
ktap_check "selected: 3/4 of nr_requests $nr in both" agree $((nr * 3 / 4))

echo 10 > "$q/async_depth"
ktap_check "a write to queue/async_depth is kvbatch's budget" agree 10
# Deferred writes may hold at most half of the budget (kvb_apply_params()),
# so that a sync write still finds a tag: the write above must have moved
# write_defer_max from half of the old budget to half of the new one.
defer_max() {
	local got

	got=$(awk '$1 == "write_defer_max" { print $2 }' "$dbg")
	log "write_defer_max $got"
	[ "$got" = "$1" ]
}
ktap_check "and write_defer_max follows it: half of 10" defer_max 5

echo 128 > "$q/nr_requests"
ktap_check "nr_requests 128: the tunable's rule again (96)" agree 96

echo 20 > "$q/iosched/async_depth"
ktap_check "iosched/async_depth 20 reaches the queue file" agree 20

echo 16 > "$q/nr_requests"
ktap_check "nr_requests 16 caps the tunable's 20" agree 16

echo 0 > "$q/iosched/async_depth"
ktap_check "iosched/async_depth 0: 3/4 of nr_requests (12)" agree 12

kvb_set_sched "$d" mq-deadline
kvb_set_sched "$d" kvbatch
nr=$(cat "$q/nr_requests")
ktap_check "after mq-deadline and back: kvbatch's 3/4 of $nr again" \
	agree $((nr * 3 / 4))

kvb_set_sched "$d" none
kvb_nullb_teardown
ktap_finished
