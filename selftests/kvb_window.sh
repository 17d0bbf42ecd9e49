#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Batches left draining by batch_window_us are closed when the window
# passes, even on a queue that went idle, and reading the statistics does
# not change them. A recall of 8 sequential RT-class reads is one batch
# (each read rejoins it within the window); once the queue is idle and the
# window has passed, the histogram must already count it -- before stats,
# whose read could otherwise be what closes draining batches, is looked
# at -- and two reads of stats must agree. A window lowered while a batch
# drains closes it at the end of the new window.
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
kvb_sleep 0.5

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
# closes at the end of the new window, not at the old one's, for which
# the timer was armed. Right after the recall (1 s window) it must still
# drain; then the window goes down to 1 ms, and 0.3 s later it must be
# closed, though the old window has most of its second to run. Between
# the recall and the lowering only shell builtins run: on a loaded TCG
# host starting a process can take longer than the whole window.

echo 1 > $dbg/reset_stats
echo 1000000 > $q/iosched/batch_window_us
ionice -c1 -n0 dd if=/dev/nullb0 of=/dev/null bs=4k count=8 iflag=direct \
	status=none
t0=$EPOCHREALTIME
kvb_read_stat early nullb0 demand_batches_closed
echo 1000 > $q/iosched/batch_window_us
t1=$EPOCHREALTIME
kvb_sleep 0.3
kvb_read_stat late nullb0 demand_batches_closed
t2=$EPOCHREALTIME
log "demand batches closed: $early right after the recall, $late after the window went to 1 ms (lowered $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s after the recall, read $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }') s after that)"
ktap_check "window 1 s: right after the recall its batch still drains" \
	test "$early" = 0
ktap_check "window lowered to 1 ms: the batch closes then, not at 1 s" \
	test "$late" = 1

kvb_set_sched nullb0 none || true
kvb_nullb_teardown
ktap_finished
