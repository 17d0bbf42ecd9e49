#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A hold that ends runs one hardware queue, not every one. kvbatch keeps
# one queue for the whole device: any hardware context's run dispatches
# the next request, which blk-mq issues on the request's own context. So
# the room a completion makes behind max_inflight needs one queue run; a
# run of every context costs a kblockd work item per context (one per CPU
# on an NVMe drive), and those that find the room taken make blk-mq arm a
# delayed run of every context again.
#
# Eight readers, one on each of eight CPUs, keep 64 reads outstanding on
# a null_blk of eight hardware queues with deep tags and 10 ms
# completions, behind a max_inflight of 8: nearly every completion ends a
# hold. The queue runs (every context's, added up) per completed request
# are counted under kvbatch and under mq-deadline, which never holds
# there: each request goes in the run that follows its insert, one run
# per request. kvbatch must need no more. A request it holds is inserted
# with no run (has_work() says "no work" while the limit is full) and
# goes in the one run at the end of a hold, which takes every request
# the room admits, and the runs asked for while one is pending are one.
# Counts, not times: the figures hold on a slow or loaded host.
#
# Where debugfs counts each context's runs (hctxN/run, which 6.12 no
# longer has) they are read there; elsewhere a kprobe on
# blk_mq_sched_dispatch_requests(), where every run begins, counts them
# (every disk's: the guest's other disks are idle).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
# A run of every context costs little more than one where there are two
# (make test's guests): the difference shows with eight.
ncpu=$(nproc)
[ "$ncpu" -ge 8 ] ||
	ktap_exit_skip "needs eight CPUs, the guest has $ncpu (tools/kvvm -c 8)"
nq=8
kvb_begin_nullb 4 submit_queues=$nq hw_queue_depth=64 irqmode=2 \
	completion_nsec=10000000

d=nullb0
dbg=/sys/kernel/debug/block/$d
secs=${KVB_RUNS_SECS:-4}
tracefs=/sys/kernel/tracing
[ -d "$tracefs/events" ] || tracefs=/sys/kernel/debug/tracing
probe=kvb_runs_dispatch

# runs_reset: start counting queue runs from zero.
# runs_read VAR: the queue runs since.
if [ -e "$dbg/hctx0/run" ]; then
	how="debugfs hctxN/run"
	runs_reset() {
		local f

		for f in "$dbg"/hctx*/run; do
			echo 0 > "$f"
		done
	}
	runs_read() {
		local -n _runs=$1
		local f v

		_runs=0
		for f in "$dbg"/hctx*/run; do
			kvb_read v "$f"
			_runs=$((_runs + v))
		done
	}
else
	how="kprobe on blk_mq_sched_dispatch_requests"
	echo "p:$probe blk_mq_sched_dispatch_requests" >> \
		"$tracefs/kprobe_events" 2>/dev/null ||
		ktap_exit_skip "cannot place a kprobe on blk_mq_sched_dispatch_requests"
	kvb_defer "echo 0 > $tracefs/events/kprobes/$probe/enable; echo -:$probe >> $tracefs/kprobe_events"
	echo 1 > "$tracefs/events/kprobes/$probe/enable"
	_runs_base=0
	# (Names of their own: the caller's variable is passed by name.)
	_runs_hits() {
		local -n _hits=$1
		local _rh_name _rh_n _rh_rest

		_hits=0
		while read -r _rh_name _rh_n _rh_rest; do
			[ "$_rh_name" = "$probe" ] && _hits=$_rh_n
		done < "$tracefs/kprobe_profile"
	}
	runs_reset() {
		_runs_hits _runs_base
	}
	runs_read() {
		local -n _runs=$1
		local _rr_n

		_runs_hits _rr_n
		_runs=$((_rr_n - _runs_base))
	}
fi

# measure SCHED: the readers under SCHED; print the queue runs and the
# requests completed.
measure() {
	local c0 c1 runs

	kvb_set_sched "$d" "$1" || return 1
	if [ "$1" = kvbatch ]; then
		echo 8 > "/sys/block/$d/queue/iosched/max_inflight" || return 1
	fi
	runs_reset
	c0=$(kvb_io_count "$d")
	(cd "$KVB_SCRATCH" && fio --filename=/dev/$d --direct=1 \
		--ioengine=libaio --rw=randread --bs=4k --iodepth=8 \
		--time_based --runtime="$secs" --numjobs="$nq" \
		--cpus_allowed=0-$((nq - 1)) --cpus_allowed_policy=split \
		--name=reader > /dev/null 2>&1) || return 1
	c1=$(kvb_io_count "$d")
	runs_read runs
	echo "$runs $((c1 - c0))"
}

# per_kilo RUNS REQUESTS: runs per thousand requests.
per_kilo() {
	echo $(($1 * 1000 / ($2 > 0 ? $2 : 1)))
}

log "$nq readers on $nq hardware queues, queue runs counted by $how"
read -r kruns kreqs < <(measure kvbatch)
log "kvbatch: ${kruns:-?} queue runs for ${kreqs:-?} requests"
# Eight in flight at 10 ms each: at most 800 a second, a tenth more for
# the readers' start and end. (A count of dispatches that found the limit
# full would say nothing: with has_work() saying "no work" then, there
# are none.)
ktap_check "max_inflight 8 bound the device (${kreqs:-?} in $secs s)" \
	test "${kreqs:-999999}" -le $((880 * secs))
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"
read -r mruns mreqs < <(measure mq-deadline)
log "mq-deadline: ${mruns:-?} queue runs for ${mreqs:-?} requests"
ktap_check "the readers completed requests under both" \
	test "${kreqs:-0}" -gt 0 -a "${mreqs:-0}" -gt 0

k=$(per_kilo "${kruns:-0}" "${kreqs:-0}")
m=$(per_kilo "${mruns:-0}" "${mreqs:-0}")
log "queue runs per 1000 requests: kvbatch $k, mq-deadline $m"
ktap_check "kvbatch: no more queue runs per request than mq-deadline ($k <= $m per 1000)" \
	test "$k" -le "$m"

kvb_set_sched "$d" none || true
kvb_nullb_teardown
ktap_finished
