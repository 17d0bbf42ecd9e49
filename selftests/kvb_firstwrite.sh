#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A deferred write that arrives as the demand it is held behind completes
# goes to the device when that demand is done, not at write_expire_ms.
#
# Completions are recorded without the device lock while no write is
# queued. The insert of the first write holds it behind the demand it
# sees in flight; if the last demand completions read the write queue
# empty just before, only they can know the hold is over. Each round of
# kvb_firstwrite reads two blocks (real-time class, one per CPU, on a
# null_blk of 5 ms) and writes one block (idle class: deferred) at a time
# swept across the reads' completion, with nothing after it. Every write
# must take less than half of write_expire_ms (4 s here; a debug
# kernel's guest gets a 20 ms device and 20 s). The race is a few
# instructions wide, so a broken kernel fails here only by chance; the
# check catches as well any round where the end of demand does not run
# the queue.
source "$(dirname "$0")/lib.sh"

kvb_require_root
bin=$KVB_ROOT/build/selftests/kvb_firstwrite
[ -x "$bin" ] || ktap_exit_skip "kvb_firstwrite not built (make selftests-bin)"
lat_us=5000 expire_ms=4000 rounds=400
if kvb_debug_kernel; then
	lat_us=20000 expire_ms=20000 rounds=100
fi
kvb_begin_nullb 4 submit_queues=2 hw_queue_depth=8 irqmode=2 \
	completion_nsec=$((lat_us * 1000))

d=nullb0
kvb_use_kvbatch "$d"
echo "$expire_ms" > "/sys/block/$d/queue/iosched/write_expire_ms"
deferred0=$(kvb_stat "$d" writes_deferred)

out=$("$bin" -d "/dev/$d" -n "$rounds" -l "$lat_us" -s "$lat_us" \
	-t $((expire_ms / 2)))
rc=$?
while read -r line; do log "$line"; done <<< "$out"
# It stops after three slow rounds: each takes write_expire_ms.
ktap_check "kvb_firstwrite ran (exit $rc)" \
	test "$rc" -le 1 -a -n "$(echo "$out" | grep "^rounds [0-9]* slow ")"
ktap_check "some writes were deferred behind the reads" \
	test "$(kvb_stat "$d" writes_deferred)" -gt "$deferred0"
ktap_check "no write waited for write_expire_ms ($expire_ms ms)" test "$rc" = 0
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_set_sched "$d" none
kvb_nullb_teardown
ktap_finished
