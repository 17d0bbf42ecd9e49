#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The batch-aware policy under a tagged mixed workload, with every byte
# verified: RT recall reads and writes (demand), untagged readers and
# writers (normal), IDLE readers and writers (prefetch and deferred
# writes) and buffered writes flushed by writeback in the background
# (async, deferred), all at once, on a null_blk with four tags and a 1 ms
# service time and on the QEMU NVMe disk. Afterwards every tier must have
# been served, the deferred write queue used, every batch closed and the
# accounting balanced.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=4 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=1000000
mapfile -t disks < <(kvb_test_disks)

ktap_print_header
ktap_set_plan $((${#disks[@]} * 5))

# Let the flusher write dirty pages early and on its own (async writes).
kvb_sysctl vm.dirty_background_bytes=1048576 vm.dirty_expire_centisecs=50 \
	vm.dirty_writeback_centisecs=20

mixed() {
	local dev=/dev/$1 size=$2
	local v=(--verify=crc32c --do_verify=1 --size="$size" --ioengine=libaio)

	kvb_fio "$1-mixed" --filename="$dev" \
		--name=demand --offset=0 --rw=randwrite --bs=16k --direct=1 \
		--iodepth=16 --prioclass=1 --prio=0 "${v[@]}" \
		--name=normal --offset=64M --rw=randrw --bs=8k --direct=1 \
		--iodepth=8 --verify_backlog=64 "${v[@]}" \
		--name=idle --offset=128M --rw=randwrite --bs=16k --direct=1 \
		--iodepth=8 --prioclass=3 "${v[@]}" \
		--name=writeback --offset=192M --rw=write --bs=64k --direct=0 \
		--end_fsync=1 "${v[@]}" &&
	# The buffered job verified from the page cache; check the device.
	kvb_fio "$1-writeback-readback" --filename="$dev" --name=writeback \
		--offset=192M --rw=write --bs=64k --direct=1 --verify_only=1 \
		"${v[@]}"
}

for d in "${disks[@]}"; do
	size=16M
	[ "$d" = nullb0 ] && size=8M
	if ! kvb_set_sched "$d" kvbatch; then
		for i in $(seq 5); do ktap_test_fail "$d: select kvbatch"; done
		continue
	fi
	echo 256 > "/sys/block/$d/queue/nr_requests"
	ktap_check "$d: tagged mixed workload, every byte verified" mixed "$d" "$size"
	log "$d: $(tr '\n' ' ' < /sys/kernel/debug/block/$d/sched/stats)"
	ktap_check "$d: demand batches dispatched by least remaining work" \
		test "$(kvb_stat "$d" reason_tail)" -gt 0 -a \
		"$(kvb_stat "$d" demand_batches_closed)" -gt 0
	ktap_check "$d: normal and idle readers served" \
		test "$(kvb_stat "$d" reason_normal)" -gt 0 -a \
		$(($(kvb_stat "$d" reason_prefetch) + $(kvb_stat "$d" reason_expired))) -gt 0
	ktap_check "$d: writes went through the deferred write queue" \
		test "$(kvb_stat "$d" writes_deferred)" -gt 0 -a \
		"$(kvb_stat "$d" write_bursts)" -gt 0
	ktap_check "$d: all batches closed, accounting balanced" kvb_balanced "$d"
	kvb_set_sched "$d" none
done

kvb_nullb_teardown
ktap_finished
