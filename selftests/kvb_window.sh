#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Batches left draining by batch_window_us are closed when the window
# passes, even on a queue that went idle, and reading the statistics does
# not change them. A recall of 8 sequential RT-class reads is one batch
# (each read rejoins it within the window); once the queue is idle and the
# window has passed, the histogram must already count it -- before stats,
# which once closed draining batches as a side effect of being read, is
# looked at -- and two reads of stats must agree. A window lowered while a
# batch drains closes it at the end of the new window.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd ionice dd
kvb_begin_nullb 6 submit_queues=1 hw_queue_depth=4 irqmode=2 \
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

# A window lowered while a batch drains on the idle queue: the batch
# closes at the end of the new window, not at the old one's, for which the
# timer was armed. At 0.2 s it is still draining (window 1 s); 0.3 s after
# the window went down to 1 ms it must be closed, half a second before
# the old window would have closed it.
echo 1 > $dbg/reset_stats
echo 1000000 > $q/iosched/batch_window_us
ionice -c1 -n0 dd if=/dev/nullb0 of=/dev/null bs=4k count=8 iflag=direct \
	status=none
sleep 0.2
early=$(kvb_stat nullb0 demand_batches_closed)
ktap_check "window 1 s: 0.2 s after the recall its batch still drains" \
	test "$early" = 0
echo 1000 > $q/iosched/batch_window_us
sleep 0.3
late=$(kvb_stat nullb0 demand_batches_closed)
log "demand batches closed: $early at 0.2 s, $late 0.3 s after the window went to 1 ms"
ktap_check "window lowered to 1 ms: the batch closes then, not at 1 s" \
	test "$late" = 1

kvb_set_sched nullb0 none || true
kvb_nullb_teardown
ktap_finished
