#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvbatch's sections with interrupts off do a bounded amount of work,
# whatever the number of CPUs or the length of its lists. Debian's
# kernels have no irqsoff tracer, so the work is counted:
#
# - A call of kvb_drain(), under the device lock, applies at most 32 of
#   the completions recorded without the lock. bpftrace counts, per call,
#   the calls of kvp_rq_completed() (one per record) made inside it. The
#   load: a two-queue 128-tag null_blk with a reader on each CPU that
#   submits 64 reads and waits for all 64, so that both CPUs record
#   completions at once and a CPU whose 32 records are full takes the
#   lock.
# - A read of debugfs sched/dispatch walks kvbatch's dispatch list under
#   the device lock: it shows at most 32 of the 100 or more O_DSYNC writes
#   queued there (a write-back null_blk without FUA and with one tag: on
#   6.12 and 7.3 each is a flush-sequence write; 6.1 issues them past the
#   elevator, and that check skips).
source "$(dirname "$0")/lib.sh"

max_recs=32
max_rqs=32

kvb_require_root
kvb_require_cmd fio bpftrace
[ "$(nproc)" -ge 2 ] || ktap_exit_skip "needs two CPUs"
kvb_begin_nullb 3 "${KVB_NULLB_DEEP[@]}"

ok=0
kvb_set_sched nullb0 kvbatch && ok=1
ktap_check "kvbatch on a deep two-queue null_blk" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }
echo 1024 > /sys/block/nullb0/queue/nr_requests

# drain_max: the most records one kvb_drain() applied, under the load.
drain_max() {
	local out=$KVB_SCRATCH/drain.out pid n

	bpftrace -e '
	kprobe:kvb_drain { @in[tid] = 1; @n[tid] = 0; }
	kprobe:kvp_rq_completed /@in[tid]/ { @n[tid]++; }
	kretprobe:kvb_drain /@in[tid]/ {
		@max = max(@n[tid]); @calls = count();
		delete(@in[tid]); delete(@n[tid]);
	}
	interval:s:1 { print(@max); }
	END { clear(@in); clear(@n); }' > "$out" 2>&1 &
	pid=$!
	kvb_bpftrace_wait "$out" "$pid"
	(cd "$KVB_SCRATCH" && fio --name=batch --filename=/dev/nullb0 \
		--direct=1 --ioengine=libaio --rw=randread --bs=4k \
		--iodepth=64 --iodepth_batch_submit=64 \
		--iodepth_batch_complete_min=64 --numjobs=2 \
		--cpus_allowed=0-1 --cpus_allowed_policy=split \
		--time_based --runtime=6 > /dev/null 2>&1)
	# A loaded host can keep bpftrace from exiting in time: the
	# interval's prints have the count so far.
	kvb_bpftrace_stop "$pid" || log "bpftrace stopped by force"
	log "kvb_drain: $(grep '^@' "$out" | tail -2 | tr '\n' ' ')"
	n=$(sed -n 's/^@max: \([0-9]*\)$/\1/p' "$out" | tail -1)
	[ -n "$n" ] || { log "no drain counted: $(head -5 "$out")"; return 1; }
	echo "$n" > "$KVB_SCRATCH/drain.max"
}
if drain_max; then
	read -r n < "$KVB_SCRATCH/drain.max"
	ktap_check "no kvb_drain() call applies more than $max_recs records ($n)" \
		test "$n" -le $max_recs
else
	ktap_test_fail "no kvb_drain() call applies more than $max_recs records (not measured)"
fi

kvb_set_sched nullb0 none
kvb_nullb_teardown

# A write-back cache without FUA (6.12's and 7.3's null_blk: fua=0).
dispatch_rqs() {
	local i q s n=0 pid d=/sys/kernel/debug/block/nullb0/sched

	modinfo -p null_blk 2>/dev/null | grep -q '^fua:' || {
		echo "skip: null_blk always has FUA (6.1), and FUA writes bypass the elevator"
		return 0
	}
	kvb_nullb_load submit_queues=1 hw_queue_depth=1 memory_backed=1 \
		gb=1 cache_size=64 fua=0 irqmode=2 \
		completion_nsec=20000000 || { echo "skip: cannot load null_blk"; return 0; }
	kvb_set_sched nullb0 kvbatch || { echo "kvbatch not selected"; return 1; }
	echo 1024 > /sys/block/nullb0/queue/nr_requests
	(cd "$KVB_SCRATCH" && exec fio --name=dsync --filename=/dev/nullb0 \
		--direct=1 --sync=dsync --ioengine=libaio --rw=randwrite \
		--bs=4k --iodepth=128 --size=256M --time_based --runtime=15 \
		> /dev/null 2>&1) &
	pid=$!
	for i in $(seq 200); do
		kvb_read_stat q nullb0 queued
		[ "${q:-0}" -ge 100 ] && break
		kvb_sleep 0.1
	done
	while IFS= read -r s; do
		[[ $s == *"{.op="* ]] && n=$((n + 1))
	done < $d/dispatch
	kill "$pid" 2>/dev/null
	wait "$pid"
	echo "$n $q"
}
r=$(dispatch_rqs)
case $r in
skip:*) ktap_test_skip "debugfs dispatch shows at most $max_rqs requests" "${r#skip: }" ;;
*)
	read -r n q <<< "$r"
	log "dispatch: ${n:-?} requests shown, ${q:-?} queued in kvbatch"
	ktap_check "debugfs dispatch shows at most $max_rqs of ${q:-?} queued requests ($n)" \
		test "${q:-0}" -ge 100 -a "${n:-999}" -le $max_rqs ;;
esac

kvb_set_sched nullb0 none 2>/dev/null
kvb_nullb_teardown
ktap_finished
