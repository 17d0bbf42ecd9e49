#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# FUA writes are scheduled like any synchronous write. On a device with a
# volatile write cache and FUA, an O_DIRECT|O_DSYNC write is a REQ_FUA
# write that needs no flush sequence: 6.12 and 7.3 hand it to the
# elevator as it is, without RQF_FLUSH_SEQ (blk_insert_flush() returns
# false). kvbatch must give it its tier, count it against max_inflight
# and queue it behind demand, not send it to its dispatch list past all
# three. (6.1 issues such writes past the elevator: the checks skip.)
#
# On a write-back null_blk with FUA (16 tags, 20 ms completions): FUA
# writes on the idle disk are inserted and dispatched in the normal
# tier; with max_inflight 2, sixteen FUA writes at a time
# never have more than 2 in the device; with RT demand reads queued,
# normal_expire_ms 1000 and no guaranteed share, each FUA write waits
# for its expiry. kvb_flush.sh covers the flush sequence, which goes
# past the policy.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio jq
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_nullb_writeback 1 hw_queue_depth=16 completion_nsec=20000000

ktap_print_header
ktap_set_plan 5

q=/sys/block/nullb0/queue
expire_ms=1000
limit=2
nfua=16

wc='' fua_attr=''
kvb_read wc $q/write_cache
kvb_read fua_attr $q/fua || fua_attr=none
log "write_cache: $wc, fua: $fua_attr"
ok=0
if [ "$wc" = "write back" ] && [ "$fua_attr" = 1 ] &&
	kvb_set_sched nullb0 kvbatch; then
	echo 256 > $q/nr_requests
	echo 1 > /sys/kernel/debug/block/nullb0/sched/reset_stats
	ok=1
fi
ktap_check "kvbatch on a write-back null_blk with FUA" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }

# fua_writes NAME FIO-ARGS...: O_DIRECT|O_DSYNC writes (REQ_FUA) in the
# disk's last quarter, away from the readers.
fua_writes() {
	local name=$1

	shift
	kvb_fio "$name" --output-format=json --filename=/dev/nullb0 \
		--offset=768M --size=64M --direct=1 --sync=dsync \
		--bs=4k "$@"
}

# 1. On the idle disk: scheduled, in the normal tier (BE class).
declare -A st
fua_writes idle --ioengine=psync --rw=write --number_ios=$nfua
kvb_read_stats st nullb0
log "idle: inserted ${st[inserted]} bypassed ${st[bypassed]} dispatched_normal ${st[dispatched_normal]} direct ${st[direct]}"
core_skips=
# 6.1: blk_insert_flush() sends a FUA write the device executes to the
# hardware queue's dispatch list (blk_mq_request_bypass_insert()).
[ "${st[inserted]:-0}" = 0 ] &&
	core_skips="the block layer issues FUA writes past the elevator"
if [ -n "$core_skips" ]; then
	ktap_test_skip "FUA writes are dispatched in their tier" \
		"$core_skips"
else
	ktap_check "FUA writes are dispatched in their tier" \
		test "${st[bypassed]}" = 0 -a \
		"${st[dispatched_normal]}" -ge $nfua
fi

# 2. max_inflight bounds them: the device never holds more.
max_in_device() {
	local i w max=0 pid n0

	n0=$(kvb_io_count nullb0)
	(cd "$KVB_SCRATCH" && exec fio --name=deep --filename=/dev/nullb0 \
		--offset=768M --size=64M --direct=1 --sync=dsync --bs=4k \
		--ioengine=libaio --iodepth=16 --rw=randwrite \
		--time_based --runtime=8 > /dev/null 2>&1) &
	pid=$!
	kvb_wait_io nullb0 "$n0" || log "FUA writer did not start"
	for i in $(seq 25); do
		read -r _ w < /sys/block/nullb0/inflight
		[ "$w" -gt "$max" ] && max=$w
		kvb_sleep 0.1
	done
	wait $pid
	echo "$max"
}
echo $limit > $q/iosched/max_inflight
if [ -n "$core_skips" ]; then
	ktap_test_skip "max_inflight $limit bounds FUA writes" "$core_skips"
else
	m=$(max_in_device)
	log "FUA writes in the device at once, at most: $m (max_inflight $limit, 16 submitted)"
	ktap_check "max_inflight $limit bounds FUA writes" \
		test "$m" -ge 1 -a "$m" -le $limit
fi

# 3. Queued RT demand goes first: a normal-tier FUA write waits for its
# expiry, as any normal-tier write would.
echo $expire_ms > $q/iosched/normal_expire_ms
echo 0 > $q/iosched/normal_share_pct
(cd "$KVB_SCRATCH" && exec fio --name=demand --filename=/dev/nullb0 \
	--size=512M --direct=1 --ioengine=libaio --rw=randread --bs=4k \
	--iodepth=32 --numjobs=2 --prioclass=1 --time_based --runtime=60 \
	>/dev/null 2>&1) &
demand=$!
n0=$(kvb_io_count nullb0)
kvb_wait_io nullb0 "$((n0 + 50))" || log "demand load did not start"
fua_writes demand --ioengine=psync --rw=write --number_ios=4
min_ms=$(jq '.jobs[0].write.clat_ns.min / 1000000 | floor' \
	"$KVB_SCRATCH/demand.log" 2>/dev/null)
log "FUA write latency under demand: min ${min_ms:-?} ms (normal_expire_ms $expire_ms)"
if [ -n "$core_skips" ]; then
	ktap_test_skip "FUA writes wait behind queued demand" "$core_skips"
else
	ktap_check "FUA writes wait behind queued demand" \
		test "${min_ms:-0}" -ge $((expire_ms / 2))
fi
kill $demand 2>/dev/null
wait $demand

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced nullb0

kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
