#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Dispatch on arrival, and the automatic max_inflight held only while
# demand is about. On a deep null_blk (two queues of 128 tags, 1 ms) that
# keeps up with 2 x 64 foreign readers, every request meets an empty
# kvbatch with room, so every one goes to the device on arrival (stats:
# direct = dispatched), and with no recall about the automatic limit holds
# nothing back, however low the depth controller has set it (depth:
# demand_about 0). A recall read (ionice -c 1) puts the limit in force; a
# foreign read more than a second after it lifts it. The accounting
# balances throughout.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_require_cmd ionice
kvb_begin_nullb 6 submit_queues=2 hw_queue_depth=128 irqmode=2 \
	completion_nsec=1000000 gb=1

d=nullb0
kvb_use_kvbatch "$d"
echo 256 > "/sys/block/$d/queue/nr_requests"
dbg=/sys/kernel/debug/block/$d/sched
echo 1 > "$dbg/reset_stats"

# about: the depth file's demand_about.
about() {
	awk '$1 == "demand_about" { print $2 }' "$dbg/depth"
}

# one_read [IONICE...]: a 4 KiB direct read, in the given I/O class.
one_read() {
	"$@" dd if="/dev/$d" of=/dev/null bs=4k count=1 skip=$((RANDOM % 1000)) \
		iflag=direct status=none
}

ktap_check "foreign readers, 2 x QD 64, 3 s" \
	kvb_fio foreign --filename="/dev/$d" --direct=1 --ioengine=io_uring \
	--rw=randread --bs=4k --iodepth=64 --numjobs=2 --time_based \
	--runtime=3 --group_reporting
log "$(tr '\n' ' ' < "$dbg/stats")"
log "$(tr '\n' ' ' < "$dbg/depth")"
all_direct() {
	local dis dir

	dis=$(kvb_stat "$d" dispatched); dir=$(kvb_stat "$d" direct)
	log "dispatched $dis, on arrival $dir"
	[ "$dis" -gt 1000 ] && [ "$dir" = "$dis" ]
}
ktap_check "every request dispatched on arrival" all_direct
ktap_check "no demand about: demand_about 0" test "$(about)" = 0

one_read ionice -c 1 -n 0
ktap_check "a recall read: demand_about 1" test "$(about)" = 1
sleep 1.5
one_read
ktap_check "a foreign read 1.5 s later: demand_about 0" test "$(about)" = 0

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"
kvb_set_sched "$d" none || true
kvb_nullb_teardown
ktap_finished
