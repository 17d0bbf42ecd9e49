#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Completions recorded without the lock are applied by the next holder of
# the lock; the completion that leaves nothing in flight takes the lock
# itself, so that every batch closes when its last request is done, not at
# the next insert or statistics read. A completion that records while
# another CPU holds the lock and applies earlier records must not leave its
# record behind: either the holder sees it, or it sees the holder's updated
# count and takes the lock. Short kvbench rounds with background foreign,
# prefetch and write load on a 4-tag null_blk, completions on both CPUs;
# after each round, with the disk idle and before anything reads kvbatch's
# statistics (a read applies what is left), the trace must hold as many
# batch closes as batch opens.
#
# Then the same rounds on a deep null_blk (two hardware queues of 128
# tags) with two fio readers beside kvbench: there most requests are
# dispatched on arrival onto their hardware context's lane, completions
# race on both CPUs with inserts that drain them, and writes deferred by
# kvbench switch the disk between the queued and the direct path. Every
# batch must still close once the disk is idle, and kvbatch must end
# balanced, having dispatched requests on arrival.
source "$(dirname "$0")/lib.sh"

kvbench=$KVB_ROOT/build/tools/kvbench
tr=/sys/kernel/tracing
rounds=${KVB_DRAIN_ROUNDS:-10}

kvb_require_root
[ -x "$kvbench" ] || ktap_exit_skip "kvbench not built (make tools)"
[ "$(nproc)" -ge 2 ] || ktap_exit_skip "needs two CPUs"
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -d $tr/events/kvbatch ] ||
	ktap_exit_skip "no kvbatch trace events (module force-loaded?)"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=1000000 gb=1

ktap_print_header
ktap_set_plan 4

ok=0
kvb_set_sched nullb0 kvbatch && ok=1
ktap_check "kvbatch on a 4-tag null_blk" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }
echo 1024 > /sys/block/nullb0/queue/nr_requests

# Enabling events with record-cmd on also enables sched_wakeup's static
# key; patching it under TCG can crash a 7.3 guest ("Oops: int3" in
# ttwu_do_activate). The comm of each event is not needed here.
cmd=$(cat $tr/options/record-cmd)
echo 0 > $tr/options/record-cmd
echo 0 > $tr/tracing_on
echo 1 > $tr/events/kvbatch/kvbatch_batch_open/enable
echo 1 > $tr/events/kvbatch/kvbatch_batch_close/enable

# rounds_ok [FIO-JOBS]: the rounds, each with FIO-JOBS random readers at
# queue depth 32 beside kvbench for its second.
rounds_ok() {
	local r c o jobs=${1:-0} fio_pid=

	for r in $(seq "$rounds"); do
		echo > $tr/trace
		echo 1 > $tr/tracing_on
		if [ "$jobs" -gt 0 ]; then
			(cd /tmp && fio --name=bg --filename=/dev/nullb0 \
				--direct=1 --ioengine=io_uring --rw=randread \
				--bs=4k --iodepth=32 --numjobs="$jobs" \
				--time_based --runtime=1 > /dev/null 2>&1) &
			fio_pid=$!
		fi
		"$kvbench" -d /dev/nullb0 -t 1 -r 30 -s 4,8,16 --foreign 4 \
			--prefetch 2 --write 2 --solo-runs 1 --seed "$r" \
			> /dev/null || { log "round $r: kvbench failed"; return 1; }
		if [ -n "$fio_pid" ]; then
			wait "$fio_pid" || { log "round $r: fio failed"; return 1; }
		fi
		# Idle now; a batch whose last record nobody applied stays open.
		kvb_sleep 0.2
		echo 0 > $tr/tracing_on
		o=$(grep -c 'kvbatch_batch_open:' $tr/trace)
		c=$(grep -c 'kvbatch_batch_close:' $tr/trace)
		if [ "$o" != "$c" ] || [ "$o" = 0 ]; then
			log "round $r: $o batches opened, $c closed, disk idle"
			return 1
		fi
	done
	log "$rounds rounds, each with every batch closed once idle"
}
ktap_check "every batch closes by its last completion, with completions racing" \
	rounds_ok

# kvb_balanced reads the statistics, which applies anything left: the
# rounds have already seen the batches close without that.
deep_ok() {
	local direct

	direct=$(kvb_stat nullb0 direct)
	log "direct $direct of $(kvb_stat nullb0 inserted) inserted"
	kvb_balanced nullb0 && [ "${direct:-0}" -gt 0 ]
}

# The deep device of make bench's steady and bursty rows.
echo 0 > $tr/tracing_on
kvb_nullb_teardown
# A null_blk that does not load is the guest's to lack (SKIP); kvbatch
# that cannot be selected on it is a failure.
if ! kvb_nullb_load "${KVB_NULLB_DEEP[@]}"; then
	ktap_test_skip "deep null_blk: every batch closes" "cannot load null_blk so shaped"
	ktap_test_skip "deep null_blk: balanced" "cannot load null_blk so shaped"
elif ! kvb_set_sched nullb0 kvbatch; then
	ktap_test_fail "deep null_blk: kvbatch selected (every batch closes)"
	ktap_test_fail "deep null_blk: kvbatch selected (balanced)"
else
	echo 1024 > /sys/block/nullb0/queue/nr_requests
	ktap_check "deep null_blk: every batch closes, completions racing direct inserts" \
		rounds_ok 2
	ktap_check "deep null_blk: balanced, with requests dispatched on arrival" \
		deep_ok
fi

echo 0 > $tr/events/kvbatch/enable
echo "$cmd" > $tr/options/record-cmd
echo > $tr/trace
kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
