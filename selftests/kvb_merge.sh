#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Merging inside kvbatch. On a slow device (two tags, 2 ms per request)
# requests wait in the elevator, so bios arriving one per system call are
# merged there: ascending writes by back merges, descending writes by front
# merges (which re-sort the request). Every merged byte must verify, and
# the accounting must balance with merges counted.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -x "$KVB_ROOT/build/selftests/kvb_seqio" ] || ktap_exit_skip "kvb_seqio not built (make selftests-bin)"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=2 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=2000000
udevadm settle 2>/dev/null || true

ktap_print_header
ktap_set_plan 6

stats=/sys/kernel/debug/block/nullb0/sched/stats

kvb_use_kvbatch nullb0
# Room in the scheduler pool, so submitters queue requests in kvbatch
# instead of waiting for a tag (where io_uring would punt them to workers
# and lose their order).
echo 128 > /sys/block/nullb0/queue/nr_requests
# One bio per io_submit(), so each reaches the elevator on its own.
one=(--direct=1 --ioengine=libaio --iodepth=32 --iodepth_batch_submit=1
     --bs=4k --verify=crc32c --do_verify=1)

ktap_check "ascending 4k writes, verified" \
	kvb_fio asc --filename=/dev/nullb0 --rw=write --size=8M "${one[@]}"
log "$(tr '\n' ' ' < $stats)"
ktap_check "back merges happened in the elevator" \
	test "$(kvb_stat nullb0 bio_back_merges)" -gt 0

# fio cannot write strictly descending blocks; kvb_seqio does, one block
# per submission, then reads everything back and checks every word.
seqio=$KVB_ROOT/build/selftests/kvb_seqio
descending() {
	"$seqio" write -d /dev/nullb0 -o $((64 << 20)) -n 2048 -q 32 -r &&
		"$seqio" verify -d /dev/nullb0 -o $((64 << 20)) -n 2048 -q 32
}
ktap_check "descending 4k writes, verified" descending
log "$(tr '\n' ' ' < $stats)"
ktap_check "front merges happened in the elevator" \
	test "$(kvb_stat nullb0 bio_front_merges)" -gt 0

corrupt_detected() {
	dd if=/dev/urandom of=/dev/nullb0 bs=4k seek=$(((64 << 8) + 100)) \
		count=1 oflag=direct status=none &&
		! "$seqio" verify -d /dev/nullb0 -o $((64 << 20)) -n 2048 2>/dev/null
}
ktap_check "kvb_seqio verify catches a corrupted block" corrupt_detected

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced nullb0

kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
