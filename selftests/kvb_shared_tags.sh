#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# nr_requests on a device whose hardware queues share one tag set (a SCSI
# host with host_tagset: scsi_debug's host_max_queue). Up to 6.12 the
# block layer calls depth_updated() before it stores the new nr_requests
# and, for shared tags, resizes the shared scheduler bitmap once more
# after it; since 6.17.4 it calls it after both. kvbatch's async tag
# budget (3/4 of nr_requests by default, at most the async_depth tunable)
# and its max_inflight ceiling must follow the new size in both
# directions as soon as nr_requests is written, before any I/O, and agree
# with the size of the core's shared bitmap; and I/O must go on.
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
ktap_set_plan 12

nr_hw=$(ls -d /sys/block/"$disk"/mq/*/ 2>/dev/null | wc -l)
log "$disk: $nr_hw hardware queues, shared host tags"
ok=0
kvb_set_sched "$disk" kvbatch && ok=1
ktap_check "kvbatch on scsi_debug disk $disk with shared tags" test $ok = 1
[ $ok = 1 ] || { modprobe -r scsi_debug; ktap_finished; }

field() {
	awk -v k="$1" '$1 == k { print $2 }' $depth
}

# The pool the core gives out: the shared scheduler bitmap's depth plus
# the reserved tags (block debugfs, hctx0/sched_tags).
core_pool() {
	awk -F= '$1 == "nr_reserved_tags" { r = $2 }
		 /^bitmap_tags:/ { b = 1 }
		 b && $1 == "depth" { print $2 + r; exit }' \
		/sys/kernel/debug/block/"$disk"/hctx0/sched_tags
}

# agree NR ASYNC: the core's pool and kvbatch's nr_requests are NR, its
# async budget ASYNC and its ceiling NR up to the 64 host tags.
agree() {
	log "core pool $(core_pool); kvbatch: $(tr '\n' ' ' < $depth)"
	[ "$(core_pool)" = "$1" ] &&
		[ "$(field nr_requests)" = "$1" ] &&
		[ "$(field async_depth)" = "$2" ] &&
		[ "$(field auto_ceiling)" = "$(($1 < 64 ? $1 : 64))" ]
}

# check NR [ASYNC]: after nr_requests NR, before any I/O and after a
# request, the pool, the async budget (ASYNC, default 3/4 of NR) and the
# ceiling all follow.
check() {
	local nr=$1 want=${2:-$(($1 * 3 / 4))}

	echo "$nr" > "$q"/nr_requests || return 1
	agree "$nr" "$want" || return 1
	dd if=/dev/"$disk" of=/dev/null bs=4k count=1 iflag=direct \
		status=none || return 1
	agree "$nr" "$want"
}

ktap_check "shrink to 32: async_depth 24, ceiling 32" check 32
ktap_check "grow to 256: async_depth 192, ceiling the 64 host tags" check 256
ktap_check "grow to 512: async_depth 384, ceiling the 64 host tags" check 512
echo 100 > "$q"/iosched/async_depth
ktap_check "async_depth tunable 100 at 512: async_depth 100" agree 512 100
ktap_check "shrink to 64: the tunable's 100 capped at 64" check 64 64
ktap_check "grow to 1024: async_depth 100 again" check 1024 100
echo 0 > "$q"/iosched/async_depth
ktap_check "shrink to 128, tunable 0: async_depth 96" check 128
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
