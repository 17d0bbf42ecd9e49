#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Background writeback under writeback throttling (wbt) drains while
# recalls run, never stalled behind them, and an fsync is not stalled.
#
# wbt is on by default on a non-rotational blk-mq disk (wbt_lat_usec 2000
# on null_blk and NVMe in Debian's kernels, whatever the scheduler but
# bfq); the test runs at that default and skips where it is off. wbt
# counts a buffered write from its submission to its completion, so the
# writes kvbatch holds count, and beside reads it admits only a quarter of
# its depth (4 on this 16-tag device): the flusher then waits for writes
# kvbatch holds, which without a bound on the hold wait until demand ends
# or they expire (write_expire_ms, raised to 10 s here so that writes
# held to their expiry stall longer than any slow host does).
#
# On a null_blk with 16 tags and 4 ms per request, closed-loop RT recalls
# (kvbench --tag rt, four streams of 8 reads) keep demand queued. With
# dirty_background_bytes at 4 MiB, 64 MiB written to the page cache go
# out as background writeback. Measured per scheduler, none and kvbatch
# alternately, in the same boot: the time from the start of the dirtying
# until the disk has written the 64 MiB, and the latency of O_DSYNC 4 KiB
# writes elsewhere on the disk (each an fsync of its range: a WB_SYNC_ALL
# write, which wbt queues behind the waiting flusher, and a flush).
#
# The O_DSYNC check is the one that catches writes held under wbt: its
# bound is far from both sides (writes held until demand pauses stall the
# O_DSYNC writes for seconds in all, writes released once they stop
# coming for a few hundred ms). The drain check only guards against
# writeback stalled behind recalls, and its bound is loose: the drain is
# measured in host time, in a busy emulated guest, and wbt paces
# writeback by the latencies it sees, so it varies from run to run.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd dd
kvb_require_cmd python3
kvbench=$KVB_ROOT/build/tools/kvbench
[ -x "$kvbench" ] || ktap_exit_skip "no $kvbench (make tools)"
# A debug kernel's guest cannot keep a 4 ms device busy: a 20 ms one, and
# everything five times as long.
svc_ns=4000000 scale=1
if kvb_debug_kernel; then
	svc_ns=20000000 scale=5
fi
kvb_begin_nullb 5 submit_queues=1 hw_queue_depth=16 gb=1 irqmode=2 \
	completion_nsec=$svc_ns

d=nullb0
wbt_file=/sys/block/$d/queue/wbt_lat_usec
[ -e $wbt_file ] || ktap_exit_skip "no $wbt_file: a kernel without CONFIG_BLK_WBT"
wbt=$(cat $wbt_file)
log "wbt_lat_usec $wbt (default), rotational $(cat /sys/block/$d/queue/rotational)"
[ "$wbt" -gt 0 ] || ktap_exit_skip "writeback throttling is off by default on $d"

kvb_sysctl vm.dirty_background_bytes=4194304
# Held open, so that no close of the disk by its last user syncs it.
exec 9< /dev/$d
kvb_defer "exec 9<&-"

# Each scheduler runs kvbench for T seconds per round: long enough that
# writeback held until recalls end takes far longer than the bound below.
T=$((14 * scale))
rounds=2
writes() {
	local st

	read -r -a st < /sys/block/$d/stat
	echo "${st[6]}"
}

# round SCHED: one measurement; appends "drain_ms fsync_ms mean_ms p99_ms"
# to $KVB_SCRATCH/SCHED.
round() {
	local s=$1 w0 t0 t1 t2 fs kb out=$KVB_SCRATCH/kvbench.$1

	kvb_set_sched $d "$s" || return 1
	if [ "$s" = kvbatch ]; then
		echo 256 > /sys/block/$d/queue/nr_requests
		echo $((10000 * scale)) > /sys/block/$d/queue/iosched/write_expire_ms
		echo 1 > /sys/kernel/debug/block/$d/sched/reset_stats
	fi
	sync
	w0=$(writes)
	"$kvbench" -d /dev/$d --tag rt --streams 4 -r 0 -s 8 -t $T \
		--solo-runs 1 > "$out" 2>&1 &
	kb=$!
	kvb_wait_io $d "$(kvb_io_count $d)" || log "$s: kvbench did not start"
	kvb_sleep 1
	t0=$(date +%s%N)
	dd if=/dev/zero of=/dev/$d bs=1M count=64 seek=800 conv=notrunc \
		status=none
	t1=$(date +%s%N)
	kvb_sleep 0.5
	# Five O_DSYNC writes 0.2 s apart, while writeback runs: the time
	# they took in all. Writes held back stall most of them; one slow
	# write on a busy host stalls one.
	fs=$(python3 - /dev/$d <<'PY'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DSYNC)
ms = []
for i in range(5):
    t = time.monotonic()
    os.pwrite(fd, b'\xa5' * 4096, (900 << 20) + (i << 16))
    ms.append(int((time.monotonic() - t) * 1000))
    time.sleep(0.2)
print(sum(ms), *ms)
PY
	) || fs="999999 fail"
	fsall=${fs#* } fs=${fs%% *}
	# 64 MiB: 131072 sectors.
	while [ $(($(writes) - w0)) -lt 131072 ]; do
		kvb_sleep 0.05
	done
	t2=$(date +%s%N)
	wait $kb
	read -r mean p99 < <(awk '$1 == "all" { print $3, $6 }' "$out")
	log "$s: dirtying $(((t1 - t0) / 1000000)) ms, drained $(((t2 - t0) / 1000000)) ms from its start, O_DSYNC writes $fsall ms ($fs ms in all); recall mean ${mean:-?} ms, p99 ${p99:-?} ms"
	[ "$s" = kvbatch ] &&
		log "kvbatch: $(grep -E '^(writes_deferred|write_bursts|reason_write_burst|reason_expired|reason_tail) ' \
			/sys/kernel/debug/block/$d/sched/stats | tr '\n' ' ')"
	echo "$(((t2 - t0) / 1000000)) $fs ${mean:-0} ${p99:-0}" >> "$KVB_SCRATCH/$s"
}

for r in $(seq $rounds); do
	round none || ktap_test_fail "round $r: select none"
	round kvbatch || ktap_test_fail "round $r: select kvbatch"
done

# sum FILE COLUMN: the column's sum over the rounds.
sum() {
	awk -v c="$2" '{ s += $c } END { printf "%d", s }' "$1"
}
none_drain=$(sum "$KVB_SCRATCH/none" 1)
kvb_drain=$(sum "$KVB_SCRATCH/kvbatch" 1)
kvb_fsync=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$KVB_SCRATCH/kvbatch")
none_fsync=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$KVB_SCRATCH/none")
# The bound: twice as long as none, plus two seconds a round; stalled
# until recalls end, writeback takes T - 1 s or more a round.
bound=$((none_drain * 2 + 2000 * rounds * scale))
ktap_check "writeback drained in $kvb_drain ms under kvbatch, $none_drain ms under none (bound $bound ms)" \
	test "$kvb_drain" -le "$bound"
# Five O_DSYNC writes take under a second in all (5 s on a debug
# kernel), in each round: each waits for the flusher ahead of it in wbt,
# which waits for what kvbatch holds, until demand pauses or the writes
# expire.
limit=$((1000 * scale))
ktap_check "5 O_DSYNC writes under writeback: at most $kvb_fsync ms in all under kvbatch (none: $none_fsync ms; bound $limit ms)" \
	test "$kvb_fsync" -lt "$limit"
none_mean=$(awk '{ s += $3 } END { printf "%.2f", s / NR }' "$KVB_SCRATCH/none")
kvb_mean=$(awk '{ s += $3 } END { printf "%.2f", s / NR }' "$KVB_SCRATCH/kvbatch")
log "recall mean: kvbatch $kvb_mean ms, none $none_mean ms"
ktap_check "recalls run under kvbatch (a mean of $kvb_mean ms)" \
	awk -v m="$kvb_mean" 'BEGIN { exit !(m > 0) }'
ktap_check "writes were deferred, and released in bursts" \
	test "$(kvb_stat $d write_bursts)" -gt 0
sync
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced $d

kvb_set_sched $d none
exec 9<&-
kvb_nullb_teardown
ktap_finished
