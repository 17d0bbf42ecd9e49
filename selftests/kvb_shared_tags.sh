#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nr_requests on a device whose hardware queues share one tag set (a SCSI
# host with host_tagset: scsi_debug's host_max_queue). There the block
# layer calls depth_updated() before it resizes the shared scheduler tags
# when nr_requests grows, so a scheduler that reads the pool size in
# depth_updated() sees the old one. kvbatch's async tag budget (3/4 of
# nr_requests by default) and its max_inflight ceiling must follow the
# new size anyway, in both directions, and I/O must go on.
#
# The ceiling is what the device can hold: its hardware tags (one shared
# set of 64 here; 16 per queue on a null_blk with two queues), never more
# than the scheduler's pool. Past them a dispatched request waits in
# blk-mq's dispatch list, out of kvbatch's order.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_scsi_debug_fresh dev_size_mb=64 host_max_queue=64 submit_queues=2
disk=$KVB_SD_DISK
q=/sys/block/$disk/queue
depth=/sys/kernel/debug/block/$disk/sched/depth

ktap_print_header
ktap_set_plan 8

nr_hw=$(ls -d /sys/block/"$disk"/mq/*/ 2>/dev/null | wc -l)
log "$disk: $nr_hw hardware queues, shared host tags"
ok=0
kvb_set_sched "$disk" kvbatch && ok=1
ktap_check "kvbatch on scsi_debug disk $disk with shared tags" test $ok = 1
[ $ok = 1 ] || { modprobe -r scsi_debug; ktap_finished; }

field() {
	awk -v k="$1" '$1 == k { print $2 }' $depth
}

# check NR: after nr_requests NR, the pool, the async budget and the
# ceiling all follow.
check() {
	local nr=$1 want

	echo "$nr" > $q/nr_requests || return 1
	# One request so that the scheduler has seen an allocation.
	dd if=/dev/"$disk" of=/dev/null bs=4k count=1 iflag=direct \
		status=none || return 1
	log "nr_requests $nr: $(tr '\n' ' ' < $depth)"
	want=$((nr * 3 / 4))
	[ "$(field nr_requests)" = "$nr" ] &&
		[ "$(field async_depth)" = "$want" ] &&
		[ "$(field auto_ceiling)" = "$((nr < 64 ? nr : 64))" ]
}

ktap_check "shrink to 32: async_depth 24, ceiling 32" check 32
ktap_check "grow to 256: async_depth 192, ceiling the 64 host tags" check 256
ktap_check "grow to 512: async_depth 384, ceiling the 64 host tags" check 512
ktap_check "verified I/O at the new depth" \
	kvb_fio shared --filename=/dev/"$disk" --direct=1 --ioengine=libaio \
	--rw=randrw --bs=4k --iodepth=64 --size=16M \
	--verify=crc32c --do_verify=1
ktap_check "back to none" kvb_set_sched "$disk" none

modprobe -r scsi_debug 2>/dev/null || true

# Tags per hardware queue: two queues of 16.
kvb_nullb_fresh submit_queues=2 hw_queue_depth=16
depth=/sys/kernel/debug/block/nullb0/sched/depth
ok=0
kvb_set_sched nullb0 kvbatch && echo 64 > /sys/block/nullb0/queue/nr_requests &&
	ok=1
log "nullb0: $(tr '\n' ' ' < $depth)"
ktap_check "null_blk 2 x 16 tags, nr_requests 64: ceiling 32" \
	test $ok = 1 -a "$(field auto_ceiling)" = 32
echo 8 > /sys/block/nullb0/queue/nr_requests
ktap_check "nr_requests 8: ceiling 16" test "$(field auto_ceiling)" = 16
kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
