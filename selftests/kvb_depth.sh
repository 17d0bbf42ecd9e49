#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The automatic max_inflight on a device that queues inside, and on one
# that does not.
#
# kvssd0: 8 dies of 20 ms reads (read_us 500 x time_scale 40; a debug
# kernel's doubled), cv 30%, two hardware queues of 256 tags: 400 IOPS,
# which any guest outruns. Foreign readers keep 256 requests outstanding,
# 32 per die, while a recall reader (I/O class RT) reads one block at a
# time, so demand is about all along. Under none each recall read waits
# behind its die's FIFO, about 32 reads. Under kvbatch the controller has
# only latencies to go by; it must
#
# - probe the unloaded device, every request held in kvbatch first, and
#   measure its service time (20 ms, at most twice that);
# - infer its dies (auto_dies 6 to 16: the guest's own time per request
#   counts as service);
# - hold the device well below the load's depth (auto_limit at most 75%
#   of the 256 outstanding);
# - keep at least 90% of none's foreign throughput;
# - and so cut the recall's mean latency to at most 80% of none's.
#
# With auto_keep_permille 800 (80% of the throughput kept, not 97.5%) the
# same load must be held at most half as deep, and keep at least 70% of
# none's foreign throughput: the model puts the limit near 20, not 120.
#
# normal_expire_ms is 5 s under kvbatch: held out of the device, a foreign
# read waits in kvbatch (about 130 of them at 400 a second, or 200 on a
# debug kernel, over half a second), and past its 500 ms default it would
# go first, oldest first, with the recall read behind it: that is the
# expiry's test (kvb_policy.sh), not this one.
#
# The bounds leave room for a guest on host time beside another: its own
# time per request, which grows with the host's load, reads as service
# time and its spread, and so as more dies and a deeper limit.
#
# null_blk with two queues of 128 tags and 100 ms completions has no queue
# inside: the same kind of load (128 outstanding, a tag each) leaves the
# limit at the ceiling, so nothing is held.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio jq
ko=$KVB_ROOT/build/$KVB_KREL/kvssd/kvssd.ko
[ -f "$ko" ] || ktap_exit_skip "no $ko: make kvssd KERNELRELEASE=$KVB_KREL"
[ -d /sys/module/kvssd ] && ktap_exit_skip "kvssd is loaded already"
[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_defer "rmmod kvssd"

scale=40
kvb_debug_kernel && scale=80
d=kvssd0
dbg=/sys/kernel/debug/block/$d/sched
secs=20

ktap_print_header
ktap_set_plan 11

# load NAME QD: foreign readers (2 x QD, io_uring) for $secs s, and a
# recall reader (psync, RT class) from the fifth second on.
load() {
	kvb_fio "$1" --output-format=json --filename="/dev/$d" --direct=1 \
		--rw=randread --bs=4k --time_based --runtime=$secs \
		--name=foreign --ioengine=io_uring --iodepth="$2" --numjobs=2 \
		--name=recall --ioengine=psync --prioclass=1 --startdelay=5 \
		--runtime=$((secs - 5))
}

# field NAME JOB JQ: a figure of fio run NAME's job JOB, rounded down.
field() {
	jq -r --arg j "$2" "[.jobs[] | select(.jobname == \$j) | .read.$3] |
		add | floor" "$KVB_SCRATCH/$1.log"
}

loaded() {
	local i

	insmod "$ko" channels=2 dies_per_channel=4 read_us=500 \
		"time_scale=$scale" cv_pct=30 gc_programs=0 hw_queues=2 \
		queue_depth=256 capacity_mb=1024 seed=7 || return 1
	for i in $(seq 50); do
		[ -b /dev/$d ] && break
		kvb_sleep 0.1
	done
	[ -b /dev/$d ] && echo 256 > /sys/block/$d/queue/nr_requests
}
if ! ktap_check "kvssd0: 8 dies of 20 ms reads, 2 x 256 tags" loaded; then
	ktap_finished
fi

declare -A recall iops
for s in none kvbatch; do
	kvb_set_sched $d $s || continue
	[ $s = none ] || echo 5000 > /sys/block/$d/queue/iosched/normal_expire_ms
	if load "kvssd-$s" 128; then
		recall[$s]=$(field "kvssd-$s" recall clat_ns.mean)
		iops[$s]=$(field "kvssd-$s" foreign iops)
		log "$s: foreign $((iops[$s])) IOPS, recall mean $((recall[$s] / 1000)) us"
		[ $s = kvbatch ] && log "$(tr '\n' ' ' < "$dbg/depth")"
	fi
done
ktap_check "fio ran under none and kvbatch" \
	test -n "${recall[none]}" -a -n "${recall[kvbatch]}"
dies=$(kvb_depth_stat $d auto_dies)
limit=$(kvb_depth_stat $d auto_limit)
ktap_check "the controller probed and inferred 6 to 16 dies (8)" \
	test "$(kvb_depth_stat $d auto_probes)" -ge 1 -a "${dies:-0}" -ge 6 \
	-a "${dies:-0}" -le 16
# The probe holds every request in kvbatch first: its service time is
# taken from the issue stamp of a request dispatched from the queue.
svc=$(kvb_depth_stat $d auto_service_us)
ktap_check "the probe measured the device's reads ($svc us of $((500 * scale)))" \
	test "${svc:-0}" -ge $((500 * scale)) -a "${svc:-0}" -lt $((1000 * scale))
ktap_check "it holds the device at most 75% of 256 deep (limit $limit)" \
	test "${limit:-999}" -le 192
ktap_check "foreign throughput at least 90% of none's" \
	test $((${iops[kvbatch]:-0} * 10)) -ge $((${iops[none]:-1} * 9))
ktap_check "recall mean at most 80% of none's" \
	test $((${recall[kvbatch]:-1} * 10)) -le $((${recall[none]:-0} * 8))
# Afresh: selecting the scheduler it has keeps a queue's tunables.
kvb_set_sched $d none
keep=
if kvb_set_sched $d kvbatch &&
	echo 5000 > /sys/block/$d/queue/iosched/normal_expire_ms &&
	echo 800 > /sys/block/$d/queue/iosched/auto_keep_permille &&
	load kvssd-keep 128; then
	iops[keep]=$(field kvssd-keep foreign iops)
	keep=$(kvb_depth_stat $d auto_limit)
	log "auto_keep_permille 800: foreign $((iops[keep])) IOPS, $(tr '\n' ' ' < "$dbg/depth")"
fi
ktap_check "auto_keep_permille 800: limit ${keep:-?} at most half of ${limit:-?}, 70% of none's throughput" \
	test -n "$keep" -a $((${keep:-999} * 2)) -le "${limit:-0}" -a \
	$((${iops[keep]:-0} * 10)) -ge $((${iops[none]:-1} * 7))
kvb_set_sched $d none
rmmod kvssd

d=nullb0
dbg=/sys/kernel/debug/block/$d/sched
if ! kvb_nullb_load submit_queues=2 hw_queue_depth=128 irqmode=2 \
	completion_nsec=100000000 gb=1; then
	ktap_test_fail "null_blk: 2 x 128 tags of 100 ms"
	ktap_finished
fi
ktap_test_pass "null_blk: 2 x 128 tags of 100 ms"
kvb_use_kvbatch $d
echo 256 > /sys/block/$d/queue/nr_requests
if load nullb-kvbatch 64; then
	log "$(tr '\n' ' ' < "$dbg/depth")"
	ktap_test_pass "fio ran on null_blk"
else
	ktap_test_fail "fio ran on null_blk"
fi
ktap_check "no queue inside: the limit stays at the ceiling" \
	test "$(kvb_depth_stat $d auto_limit)" = \
	"$(kvb_depth_stat $d auto_ceiling)"
kvb_set_sched $d none
kvb_nullb_teardown
ktap_finished
