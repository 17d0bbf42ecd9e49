#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Writes in a flush sequence are never held. On a device with a volatile
# write cache and no FUA, an O_DIRECT|O_SYNC write is a FUA write that the
# block layer turns into the write plus a post-flush: on 6.12 it reaches
# the elevator as a plain synchronous write marked RQF_FLUSH_SEQ, and
# while it waits, flushes from everyone wait behind it. kvbatch must send
# it straight to its dispatch list, whatever demand is queued. (On 6.1 the
# block layer never hands such writes to an elevator.)
#
# The test keeps kvbatch busy with RT-tagged (demand) reads, sets the
# normal tier's expiry to 2 s with no guaranteed share, and times O_SYNC
# writes: each must complete far sooner than a held write would.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio jq
kvb_load || ktap_exit_skip "cannot load kvbatch"
# A write-back cache without FUA (where null_blk lets it be turned off).
kvb_nullb_writeback 0 hw_queue_depth=4 completion_nsec=1000000

ktap_print_header
ktap_set_plan 5

q=/sys/block/nullb0/queue
stats=/sys/kernel/debug/block/nullb0/sched/stats
expire_ms=2000
bound_ms=500

log "write_cache: $(cat $q/write_cache), fua: $(cat $q/fua 2>/dev/null)"
ok=0
if kvb_set_sched nullb0 kvbatch; then
	echo 128 > $q/nr_requests
	echo $expire_ms > $q/iosched/normal_expire_ms
	echo 0 > $q/iosched/normal_share_pct
	echo 1 > /sys/kernel/debug/block/nullb0/sched/reset_stats
	ok=1
fi
ktap_check "kvbatch on a write-back null_blk" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }

# Demand: RT-class reads, far more than the device's 4 tags.
(cd "$KVB_SCRATCH" && exec fio --name=demand --filename=/dev/nullb0 --direct=1 \
	--ioengine=libaio --rw=randread --bs=4k --iodepth=32 --numjobs=2 \
	--prioclass=1 --size=512M --time_based --runtime=40 \
	>/dev/null 2>&1) &
demand=$!
n0=$(kvb_io_count nullb0)
kvb_wait_io nullb0 "$((n0 + 200))" || log "demand load did not start"

ktap_check "O_DIRECT|O_SYNC writes under demand load" \
	kvb_fio fua --output-format=json --filename=/dev/nullb0 \
	--offset=768M --direct=1 --sync=1 --ioengine=psync --rw=write \
	--bs=4k --number_ios=6 --size=1M
max_ms=$(jq '.jobs[0].write.clat_ns.max / 1000000 | floor' \
	"$KVB_SCRATCH/fua.log" 2>/dev/null)
log "O_SYNC write latency max ${max_ms:-?} ms (normal_expire_ms $expire_ms)"
log "$(tr '\n' ' ' < $stats)"
# On 6.1 such a write bypasses the elevator (blk_insert_flush()): kvbatch
# could not hold it, and the check could not fail.
case $(uname -r) in
6.1.*)
	ktap_test_skip "no O_SYNC write waited ${bound_ms} ms or more" \
		"6.1 sends these writes past the elevator" ;;
*)
	ktap_check "no O_SYNC write waited ${bound_ms} ms or more" \
		test "${max_ms:-$expire_ms}" -lt $bound_ms ;;
esac
ktap_check "demand reads were queued meanwhile" \
	test "$(kvb_stat nullb0 reason_tail)" -gt 0

kill $demand 2>/dev/null
wait $demand
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced nullb0

kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
