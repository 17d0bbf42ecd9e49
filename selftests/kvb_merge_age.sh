#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A request merged with an older one keeps the older place. On a device
# with one tag and a 4 s service time, while a first read holds the
# device, four one-block direct reads of one batch arrive in this order:
# A (block 2), D (block 500), B (block 0), C (block 1). C joins A and B
# (a bio merge, then the two queued requests merge, B receiving A). The
# merged request holds A's data, the oldest in the batch, so it must be
# dispatched before D: D completes last. attempt_merge() gives the
# receiving request the older start_time_ns before the elevator hears of
# the merge, so an elevator that compares those stamps leaves B behind D.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3
# The window is the first read's service time. One process issues the
# reads, each from a thread of its own, and polls kvbatch's statistics
# between them: no process is started inside the window, which takes
# well under a second even in a busy TCG guest. A window that still
# closes before the four are queued is tried again on a fresh device.
# Only a window missed that way is retried; the order itself is checked
# on the run whose window held. The service time stays under null_blk's
# own 5 s timeout: the partition scan that creates the disk would
# otherwise time out read after read, for minutes.
svc=4
windows="1 2 3"
# nullb: the null_blk parameters of the window.
nullb() {
	echo submit_queues=1 hw_queue_depth=1 irqmode=2 \
		completion_nsec=$((svc * 1000000000))
}
# shellcheck disable=SC2046
kvb_begin_nullb 3 $(nullb)

d=nullb0
order=$KVB_SCRATCH/order

# setup: kvbatch on the disk, one request in the device at a time.
setup() {
	kvb_use_kvbatch "$d"
	echo 64 > "/sys/block/$d/queue/nr_requests"
	# null_blk times requests out after 5 s; three go through one by one.
	echo $(((3 * svc + 10) * 1000)) > "/sys/block/$d/queue/io_timeout"
	# The rest wait in kvbatch's order.
	echo 1 > "/sys/block/$d/queue/iosched/max_inflight"
	echo 1 > "/sys/kernel/debug/block/$d/sched/reset_stats"
	: > "$order"
}

# queue_all: status 0 once A, D and B are queued and C merged, behind
# the first read, 2 if the first read completed before that, 1 if it
# did not come to pass in time (10 s a step). Each read is one 4 KiB
# direct read; its name goes to $order when it completes.
queue_all() {
	python3 - "$(dirname "$0")" "/dev/$d" \
		"/sys/kernel/debug/block/$d/sched/stats" "$order" <<'PY'
import sys

sys.path.insert(0, sys.argv[1])
from kvbio import Ios, stat, wait_stat

dev, stats, order = sys.argv[2:5]
ios = Ios(dev)


def steps():
    def over():
        return ios.completed('blocker')

    ios.start('blocker', 1000)
    want = ('inflight', 1)
    for name, block, key, value in (('A', 2, 'queued', 1),
                                    ('D', 500, 'queued', 2),
                                    ('B', 0, 'queued', 3),
                                    ('C', 1, 'merged', 1)):
        rc = wait_stat(stats, *want, stop=over)
        if rc:
            return rc
        ios.start(name, block)
        want = (key, value)
    rc = wait_stat(stats, *want, stop=over)
    if rc:
        return rc
    ok = stat(stats, 'inflight') == 1 and stat(stats, 'queued') == 2
    if over():
        return 2
    return 0 if ok else 1


rc = steps()
with open(order, 'w') as f:
    f.write(''.join(name + '\n' for name, _ in ios.join()))
sys.exit(rc)
PY
}

next=
for try in $windows; do
	if [ -n "$next" ]; then
		kvb_nullb_teardown
		# shellcheck disable=SC2046
		kvb_nullb_fresh $(nullb)
	fi
	next=1
	setup
	queue_all
	rc=$?
	[ $rc = 2 ] || break
	log "try $try: the first read completed before the four were queued (completed: $(tr '\n' ' ' < "$order"))"
done
ktap_check "A, D, B queued behind the first read; C merged A and B" test "$rc" = 0
log "completion order: $(tr '\n' ' ' < "$order")"
log "$(tr '\n' ' ' < /sys/kernel/debug/block/$d/sched/stats)"

ktap_check "the merged request (oldest data) completed before D" \
	test "$(tail -n 1 "$order")" = D -a "$(wc -l < "$order")" -eq 5
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_set_sched "$d" none
kvb_nullb_teardown
ktap_finished
