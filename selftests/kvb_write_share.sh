#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# write_share_pct: deferred writes behind a demand load that never lets
# up. On a null_blk of four tags and a 50 ms service time (slow enough
# that even a debug kernel's fio keeps up with it), RT readers keep
# sixteen reads queued while IDLE O_DIRECT writers (deferred) keep eight
# writes waiting, fewer than write_defer_max, and write_expire_ms is a
# minute: with a share of 0 nothing releases the writes while demand is
# about, so they get next to none of the dispatches; with 25 they get a
# quarter, as shares.
# Each round is a fresh selection of kvbatch, so its counters are its own.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_begin_nullb 6 submit_queues=1 hw_queue_depth=4 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=50000000

secs=10
dir=/sys/block/nullb0/queue/iosched

# round SHARE: run the load under write_share_pct SHARE; leave kvbatch's
# counters in the array "st".
round() {
	kvb_set_sched nullb0 none
	kvb_use_kvbatch nullb0
	echo 64 > /sys/block/nullb0/queue/nr_requests
	echo 60000 > $dir/write_expire_ms
	echo "$1" > $dir/write_share_pct || return 1
	kvb_fio "share$1" --filename=/dev/nullb0 --direct=1 \
		--ioengine=libaio --time_based --runtime=$secs \
		--name=demand --offset=0 --size=256M --rw=randread --bs=4k \
		--iodepth=16 --prioclass=1 \
		--name=offload --offset=512M --size=64M --rw=randwrite \
		--bs=16k --iodepth=8 --prioclass=3 || return 1
	kvb_balanced nullb0 || return 1
	kvb_read_stats st nullb0
}

# share_of NUM: NUM as a percentage of the dispatches in "st".
share_of() {
	echo $(($1 * 100 / (st[dispatched_demand] + st[dispatched_write])))
}

declare -A st
ktap_check "share 0: the load ran, accounting balanced" round 0
log "share 0: demand ${st[dispatched_demand]} writes ${st[dispatched_write]} shares ${st[reason_share]} bursts ${st[write_bursts]}"
w0=${st[dispatched_write]:-0}
ktap_check "share 0: writes took under 5% of the dispatches ($(share_of "$w0")%)" \
	test "$(share_of "$w0")" -lt 5
ktap_check "share 0: no dispatch was a share" test "${st[reason_share]}" = 0

declare -A st
ktap_check "share 25: the load ran, accounting balanced" round 25
log "share 25: demand ${st[dispatched_demand]} writes ${st[dispatched_write]} shares ${st[reason_share]} bursts ${st[write_bursts]}"
w25=${st[dispatched_write]:-0}
pct=$(share_of "$w25")
ktap_check "share 25: writes took 20-35% of the dispatches ($pct%)" \
	test "$pct" -ge 20 -a "$pct" -le 35
ktap_check "share 25: most writes went as shares (${st[reason_share]} of $w25)" \
	test $((st[reason_share] * 10)) -ge $((w25 * 8))

kvb_set_sched nullb0 none
ktap_finished
