#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tunables stored while I/O runs, on a kernel built with KCSAN, the
# kernel's data-race detector (scripts/debug-kernel.sh --kcsan). A store
# rewrites the policy's parameters under kvbatch's lock, and turning
# max_inflight automatic restarts the depth controller, while has_work()
# and completions read the limit in force without the lock. No data race
# may be reported with one of kvbatch's functions as either access.
# Without KCSAN nothing here can see a race: SKIP.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kcsan=/sys/kernel/debug/kcsan
[ -r $kcsan ] || ktap_exit_skip "no KCSAN in $(uname -r) (the --kcsan debug kernel has it)"
secs=${RACE_SECONDS:-90}
# Completions from a timer on either CPU, while the other submits.
kvb_begin_nullb 3 submit_queues=2 hw_queue_depth=8 irqmode=2 \
	completion_nsec=100000
d=nullb0
dir=/sys/block/$d/queue/iosched
kvb_use_kvbatch $d
echo on > $kcsan 2>/dev/null || true
log "$(head -n 1 $kcsan)"

kcsan_ours() {
	dmesg | grep 'BUG: KCSAN:' | grep -c '\[kvbatch\]'
}
before=$(kcsan_ours)
all_before=$(dmesg | grep -c 'BUG: KCSAN:')

# Switch the limit between automatic and fixed (the controller restarts
# each time it turns automatic), and move the write parameters has_work()
# reads, until the load ends.
stores() {
	local n=0 v

	while :; do
		for v in 0 2 0 16; do
			echo $v > $dir/max_inflight || return 1
			echo $((v + 1)) > $dir/write_defer_max || return 1
			echo $((v + 10)) > $dir/write_expire_ms || return 1
			n=$((n + 3))
			echo $n > "$KVB_SCRATCH/stores"
		done
	done
}
echo 0 > "$KVB_SCRATCH/stores"
stores &
spid=$!

# Demand (RT) reads, so that an automatic limit applies, beside writes
# that may be held behind them, and best-effort reads.
ktap_check "${secs}s of I/O while the tunables change" \
	kvb_fio race --filename=/dev/$d --direct=1 --ioengine=libaio \
	--time_based --runtime="$secs" --bs=4k --size=256M \
	--name=demand --rw=randread --iodepth=8 --prioclass=1 \
	--name=writes --rw=randwrite --iodepth=16 \
	--name=reads --rw=randread --iodepth=8
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
n=$(cat "$KVB_SCRATCH/stores")
ktap_check "tunables stored while it ran ($n stores)" test "$n" -gt 0

ours=$(($(kcsan_ours) - before))
log "KCSAN reports: $(($(dmesg | grep -c 'BUG: KCSAN:') - all_before)), naming kvbatch: $ours"
dmesg | grep 'BUG: KCSAN:.*\[kvbatch\]' | sort | uniq -c | head -n 10 |
	sed 's/^/# /'
ktap_check "no data race reported in kvbatch's functions" test "$ours" = 0

kvb_tunables_default $dir
kvb_set_sched $d none
kvb_nullb_teardown
ktap_finished
