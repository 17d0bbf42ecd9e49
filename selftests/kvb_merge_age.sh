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
kvb_require_cmd dd
# The window is the first read's service time. Starting the four dd
# processes takes a fraction of a second in an idle guest, seconds on a
# debug kernel or a host busy with other guests (make test runs two at
# once): a window that closes before the four are queued is tried again,
# longer. Only a window missed that way is retried; the order itself is
# checked on the run whose window held.
windows="4 12 36"
kvb_debug_kernel && windows="20 60"
svc=${windows%% *}
# nullb SVC: the null_blk parameters of a SVC-second window.
nullb() {
	echo submit_queues=1 hw_queue_depth=1 irqmode=2 \
		completion_nsec=$(($1 * 1000000000))
}
# shellcheck disable=SC2046
kvb_begin_nullb 3 $(nullb "$svc")

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

# rd NAME BLOCK: one 4 KiB direct read; NAME is logged when it completes.
rd() {
	dd if=/dev/$d of=/dev/null bs=4k count=1 skip="$2" iflag=direct \
		status=none && echo "$1" >> "$order"
}

# wait_stat NAME VALUE: until kvbatch's counter NAME reaches VALUE (10 s);
# status 2 as soon as the first read has completed: the window is over.
wait_stat() {
	local v

	for _ in $(seq 100); do
		v=$(kvb_stat $d "$1")
		[ "$v" = "$2" ] && return 0
		grep -qx blocker "$order" && return 2
		sleep 0.1
	done
	log "$1 is $v, not $2"
	return 1
}

# queue_all: status 0 once A, D and B are queued and C merged, behind
# the first read, 2 if the first read completed before that, 1 if it
# did not come to pass in time.
queue_all() {
	local rc

	rd blocker 1000 &
	wait_stat inflight 1 || return
	rd A 2 &
	wait_stat queued 1 || return
	rd D 500 &
	wait_stat queued 2 || return
	rd B 0 &
	wait_stat queued 3 || return
	rd C 1 &
	wait_stat merged 1 || return
	[ "$(kvb_stat $d inflight)" = 1 ] && [ "$(kvb_stat $d queued)" = 2 ]
	rc=$?
	grep -qx blocker "$order" && return 2
	return $rc
}

next=
for svc in $windows; do
	if [ -n "$next" ]; then
		kvb_nullb_teardown
		# shellcheck disable=SC2046
		kvb_nullb_fresh $(nullb "$svc")
	fi
	next=1
	setup
	queue_all
	rc=$?
	wait
	[ $rc = 2 ] || break
	log "window $svc s: the first read completed before the four were queued (completed: $(tr '\n' ' ' < "$order"))"
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
