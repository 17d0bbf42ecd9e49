#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every hardware queue's tags stay busy. A request takes its driver tag
# from the hardware queue it was allocated on, so a hold on a device-wide
# count of requests in flight (the automatic max_inflight at the sum of
# the queues' tags, were kvbatch to hold it with no demand about) fills
# while one queue's tags are idle and its own requests wait in kvbatch.
# Two readers, each pinned to one CPU and so to one of the two hardware
# queues of a null_blk of 8 tags per queue and fixed-latency
# completions, keep far more requests outstanding than the tags: the
# device completes 2 x 8 requests per completion time, and kvbatch must
# get at least 85% of that through, as none does.
#
# The hold loses requests to a count, not to time: a request parked on
# one queue's dispatch list holds a place the idle queue could use,
# however slow the device. So the device is slow (20 ms completions, 800
# IOPS): what a round loses is the time the guest takes to answer each
# completion, which grows with the host's load, and at 5 ms (3200 IOPS)
# that is a large part of what is measured, enough to fail a guest
# running beside another. A debug kernel's guest is several times slower
# again.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio python3
[ "$(nproc)" -ge 2 ] || ktap_exit_skip "needs two CPUs, the guest has $(nproc)"
svc_ns=20000000
kvb_debug_kernel && svc_ns=40000000
kvb_begin_nullb 5 submit_queues=2 hw_queue_depth=8 irqmode=2 \
	completion_nsec=$svc_ns

d=nullb0
secs=8
capacity=$((2 * 8 * 1000000000 / svc_ns))

# run_pinned SCHED: both readers under SCHED; print the IOPS of the two.
run_pinned() {
	kvb_set_sched "$d" "$1" || return 1
	[ "$1" = none ] || echo 256 > "/sys/block/$d/queue/nr_requests"
	(cd "$KVB_SCRATCH" && fio --filename=/dev/$d --direct=1 \
		--ioengine=libaio --rw=randread --bs=4k --iodepth=64 \
		--time_based --runtime=$secs --ramp_time=1 \
		--output-format=json --output="$KVB_SCRATCH/$1.json" \
		--name=cpu0 --cpus_allowed=0 --name=cpu1 --cpus_allowed=1 \
		>/dev/null 2>&1) || return 1
	python3 - "$KVB_SCRATCH/$1.json" <<'EOF'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
print("%.0f %.0f" % tuple(j["read"]["iops"] for j in jobs))
EOF
}

# short IOPS0 IOPS1 [PCT]: the two readers got less than PCT% (85) of
# the device's IOPS.
short() {
	[ $(((${1:-0} + ${2:-0}) * 100)) -lt $((capacity * ${3:-85})) ]
}

# The pair runs again, up to three times in all, if either falls short: a
# host busy with other work (a second guest, a build) slows the
# submitters below the device, and then neither figure says anything
# about kvbatch; and one run in the emulated guest can dip just below the
# mark by itself (84% of the device, where none gets 91%). The hold this
# test guards against falls short by more (under 80%, where none gets
# over 90%).
#
# A pair says something about kvbatch only when none gets 90% of the
# device: under a host loaded enough to keep none near 85%, kvbatch, which
# costs more CPU per request, can fall to 70-85% of the device with
# nothing held, as low as with the hold. So none's bar is 90%, kvbatch's
# 85%.
# A round whose none falls short goes on to the next without kvbatch's
# run, which could not count (but the last round runs both).
for r in 1 2 3; do
	read -r n0 n1 < <(run_pinned none)
	log "none: $n0 + $n1 IOPS (device: $capacity)"
	if [ "$r" -lt 3 ] && short "$n0" "$n1" 90; then
		continue
	fi
	read -r k0 k1 < <(run_pinned kvbatch)
	log "kvbatch: $k0 + $k1 IOPS"
	short "$n0" "$n1" 90 || short "$k0" "$k1" || break
done
log "$(tr '\n' ' ' < "/sys/kernel/debug/block/$d/sched/stats")"
log "$(tr '\n' ' ' < "/sys/kernel/debug/block/$d/sched/depth")"

ktap_check "both readers ran under none and under kvbatch" \
	test "${n0:-0}" -gt 0 -a "${n1:-0}" -gt 0 -a "${k0:-0}" -gt 0 -a "${k1:-0}" -gt 0
if short "$n0" "$n1" 90; then
	why="the host cannot drive the device: none got $((n0 + n1)) of $capacity IOPS (under 90%) in the last of three runs"
	ktap_test_skip "none keeps the device's tags busy (>= 90% of $capacity IOPS)" "$why"
	ktap_test_skip "kvbatch keeps both queues' tags busy (>= 85% of $capacity IOPS)" "$why"
else
	ktap_test_pass "none keeps the device's tags busy (>= 90% of $capacity IOPS)"
	ktap_check "kvbatch keeps both queues' tags busy (>= 85% of $capacity IOPS)" \
		test $(((k0 + k1) * 100)) -ge $((capacity * 85))
fi
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_set_sched "$d" none
kvb_nullb_teardown

# A hardware context no CPU maps to has no driver tags, and up to 6.12 an
# nr_requests change skips it: its scheduler tags keep the old depth.
# kvbatch's pool, its async budget and its depth ceiling must follow the
# contexts that take requests. Poll queues beyond the CPUs make such
# contexts on null_blk; 6.12's queue mapping warns about them (and make
# test fails on any warning), 7.3 reads nr_requests itself: 6.1 only.
unmapped_depth() {
	local dbg=/sys/kernel/debug/block/$d/sched/depth n pool async ceil h
	local all=0 idle=0

	n=$(($(nproc) + 2))
	kvb_nullb_load submit_queues="$(nproc)" poll_queues=$n \
		hw_queue_depth=64 || return 1
	for h in /sys/kernel/debug/block/"$d"/hctx*; do
		all=$((all + 1))
		[ -n "$(cat "$h/tags")" ] || idle=$((idle + 1))
	done
	log "contexts without driver tags (no CPU): $idle of $all"
	kvb_set_sched "$d" kvbatch || return 1
	echo 256 > "/sys/block/$d/queue/nr_requests"
	echo 16 > "/sys/block/$d/queue/nr_requests"
	pool=$(awk '$1 == "nr_requests" { print $2 }' "$dbg")
	async=$(awk '$1 == "async_depth" { print $2 }' "$dbg")
	ceil=$(awk '$1 == "auto_ceiling" { print $2 }' "$dbg")
	log "nr_requests 16: kvbatch's pool $pool, async_depth $async, ceiling $ceil"
	kvb_set_sched "$d" none
	kvb_nullb_teardown
	# The ceiling: 16 per context of the $(nproc) that take requests
	# (poll contexts carry only polled I/O, which kvbatch never sees).
	[ "$pool" = 16 ] && [ "$async" = 12 ] && [ "$ceil" = $((16 * $(nproc))) ]
}
case $(uname -r) in
6.1.*)	ktap_check "nr_requests lowered with contexts no CPU maps to: kvbatch's pool follows" \
		unmapped_depth ;;
*)	ktap_test_skip "nr_requests lowered with contexts no CPU maps to" \
		"6.1 only (6.12's mapping warns, 7.3 has no such case)" ;;
esac
ktap_finished
