#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Batches left draining by batch_window_us are closed when the window
# passes, even on a queue that went idle, and reading the statistics does
# not change them. A recall of 8 sequential RT-class reads is one batch
# (each read rejoins it within the window); once the queue is idle and the
# window has passed, the histogram must already count it -- before stats,
# which once closed draining batches as a side effect of being read, is
# looked at -- and two reads of stats must agree.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd ionice dd
kvb_begin_nullb 4 submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=1000000 gb=1

q=/sys/block/nullb0/queue
dbg=/sys/kernel/debug/block/nullb0/sched
window_us=50000

ok=0
if kvb_set_sched nullb0 kvbatch; then
	echo $window_us > $q/iosched/batch_window_us
	echo 1 > $dbg/reset_stats
	ok=1
fi
ktap_check "kvbatch with batch_window_us $window_us" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }

ionice -c1 -n0 dd if=/dev/nullb0 of=/dev/null bs=4k count=8 iflag=direct \
	status=none
# Idle, well past the window.
sleep 0.5

hist=$(awk '$1 == "demand" { n += $3 } END { print n + 0 }' $dbg/histogram)
log "demand batches in the histogram before stats is read: $hist"
ktap_check "the idle queue's drained batch is in the histogram" \
	test "$hist" -eq 1

first=$(cat $dbg/stats)
second=$(cat $dbg/stats)
ktap_check "two reads of stats agree" test "$first" = "$second"
closed=$(kvb_stat nullb0 demand_batches_closed)
opened=$(kvb_stat nullb0 demand_batches_opened)
log "demand batches opened $opened closed $closed"
ktap_check "the batch is closed: opened 1, closed 1" \
	test "$opened" = 1 -a "$closed" = 1

kvb_set_sched nullb0 none || true
kvb_nullb_teardown
ktap_finished
