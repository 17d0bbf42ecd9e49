#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Dispatch on arrival, and the automatic max_inflight held only while
# demand is about. On a deep null_blk (two queues of 128 tags, 1 ms) that
# keeps up with 2 x 64 foreign readers, every request meets an empty
# kvbatch with room, so every one goes to the device on arrival (stats:
# direct = dispatched), and with no recall about the automatic limit holds
# nothing back, however low the depth controller has set it (depth:
# demand_about 0). A recall read (ionice -c 1) puts the limit in force; a
# foreign read more than a second after it lifts it. The accounting
# balances throughout. The one exception is the controller's probe of the
# unloaded device, which holds every request at its probe depth, demand or
# not, where latencies show a queue: the first one, at start, is over
# before the readers are measured, and the next is a second of busy time
# away or more.
#
# Behind a fixed max_inflight of 1 the device must be the bottleneck, not
# the guest's CPU: nearly every arrival then finds the limit full or
# requests queued before it, and is queued. So that part runs on null_blk
# loaded again with 20 ms completions, 50 IOPS behind the limit, which any
# guest outruns. (At 1 ms, 1000 IOPS, a debug guest on a busy host submits
# about a hundred a second, and a quarter of its requests find the device
# idle and go on arrival, as they should. Behind a limit of 8 at 1 ms,
# such a guest keeps fewer than 8 in flight most of the time, and most of
# its requests find room on arrival.)
#
# The depth controller takes each service time from the request's issue
# stamp (io_start_time_ns, which blk-mq keeps while the queue keeps I/O
# statistics, as kvbatch asks) and its completion time (blk-mq's, given
# to completed_request()): for requests that go on arrival, it closes
# windows and measures at least the device's service time. (Those that
# wait in kvbatch first: kvb_depth.sh, whose probe holds every request.)
#
# A request dispatched on arrival waits on its hardware context's lane for
# that context's dispatch. When blk-mq rebuilds the contexts under load
# (null_blk's submit_queues changed through configfs: the queue frozen,
# kvbatch switched off and on, its lanes freed and made anew), nothing is
# left on a lane to hang the freeze, kvbatch is selected again and the I/O
# goes on. blk-mq clears QUEUE_FLAG_SQ_SCHED only on a switch to none,
# and mq-deadline sets it: with it left set under kvbatch, blk-mq's run of
# every context would run only the current CPU's and a lane could wait, so
# kvbatch selected after mq-deadline must have it clear (debugfs state).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_require_cmd ionice
kvb_begin_nullb 13 submit_queues=2 hw_queue_depth=128 irqmode=2 \
	completion_nsec=1000000 gb=1

d=nullb0
state=/sys/kernel/debug/block/$d/state
if kvb_set_sched "$d" mq-deadline && grep -qw SQ_SCHED "$state"; then
	kvb_use_kvbatch "$d"
	log "queue flags under kvbatch: $(cat "$state")"
	sq_clear() { ! grep -qw SQ_SCHED "$state"; }
	ktap_check "selected after mq-deadline, kvbatch clears SQ_SCHED" sq_clear
else
	kvb_use_kvbatch "$d"
	ktap_test_skip "SQ_SCHED: mq-deadline not available or the flag not shown in $state"
fi
echo 256 > "/sys/block/$d/queue/nr_requests"
dbg=/sys/kernel/debug/block/$d/sched
echo 1 > "$dbg/reset_stats"

# about: the depth file's demand_about.
about() {
	kvb_depth_stat "$d" demand_about
}

# measured WINDOWS: the depth controller has closed windows since it had
# closed WINDOWS, and its service time, if a probe measured one (only
# where the latencies show a queue, as the guest's own time per request
# may), is the device's 1 ms or more (and under a second): completions
# carry their service times.
measured() {
	local w s

	w=$(kvb_depth_stat "$d" auto_windows)
	s=$(kvb_depth_stat "$d" auto_service_us)
	log "depth windows $1 -> $w, service time $s us"
	[ "$w" -gt "$1" ] &&
		{ [ "$s" = 0 ] || { [ "$s" -ge 1000 ] && [ "$s" -lt 1000000 ]; }; }
}

# one_read [IONICE...]: a 4 KiB direct read, in the given I/O class.
one_read() {
	"$@" dd if="/dev/$d" of=/dev/null bs=4k count=1 skip=$((RANDOM % 1000)) \
		iflag=direct status=none
}

# readers NAME [SECONDS]: 2 x 64 foreign io_uring readers, for 3 s.
readers() {
	kvb_fio "$1" --filename="/dev/$d" --direct=1 --ioengine=io_uring \
		--rw=randread --bs=4k --iodepth=64 --numjobs=2 --time_based \
		--runtime="${2:-3}" --group_reporting
}

# on_arrival: set the caller's dis and dir to the requests dispatched and
# those of them dispatched on arrival (statistics), and log them.
on_arrival() {
	dis=$(kvb_stat "$d" dispatched); dir=$(kvb_stat "$d" direct)
	log "dispatched $dis, on arrival $dir"
}

# first_probe: foreign readers for a second, and no probe is in progress
# (the first, if the readers' latencies showed a queue, is over).
first_probe() {
	readers warm 1 || return 1
	log "$(tr '\n' ' ' < "$dbg/depth")"
	[ "$(kvb_depth_stat "$d" auto_probing)" = 0 ]
}
ktap_check "foreign readers for a second: no probe in progress" first_probe
echo 1 > "$dbg/reset_stats"
w0=$(kvb_depth_stat "$d" auto_windows)
p0=$(kvb_depth_stat "$d" auto_probes)
ktap_check "foreign readers, 2 x QD 64, 3 s" readers foreign
log "$(tr '\n' ' ' < "$dbg/stats")"
log "$(tr '\n' ' ' < "$dbg/depth")"
# Unless the controller probed again (a guest whose CPU is slower than
# the device can see latency grow with depth, which the controller may
# take for a change of the device): then what was not dispatched on
# arrival is at most what its probes held, the probe's completions and
# the ceiling's worth draining before it, each.
all_direct() {
	local dis dir probes

	on_arrival
	probes=$(($(kvb_depth_stat "$d" auto_probes) - p0))
	log "probes during the run: $probes"
	# At least 300 requests (a guest on a busy host may make no more).
	[ "$dis" -ge 300 ] && [ $((dis - dir)) -le $((probes * (512 + 256))) ]
}
ktap_check "every request dispatched on arrival (but for probes)" all_direct
ktap_check "service times measured on arrival dispatch" measured "$w0"
ktap_check "no demand about: demand_about 0" test "$(about)" = 0

one_read ionice -c 1 -n 0
ktap_check "a recall read: demand_about 1" test "$(about)" = 1
kvb_sleep 1.5
one_read
ktap_check "a foreign read 1.5 s later: demand_about 0" test "$(about)" = 0

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_nullb_teardown
if ! kvb_nullb_load submit_queues=2 hw_queue_depth=128 irqmode=2 \
	completion_nsec=20000000 gb=1; then
	ktap_test_fail "null_blk loaded again with 20 ms completions"
	ktap_finished
fi
kvb_use_kvbatch "$d"
echo 256 > "/sys/block/$d/queue/nr_requests"
echo 1 > "/sys/block/$d/queue/iosched/max_inflight"
ktap_check "foreign readers behind max_inflight 1 on 20 ms completions, 6 s" \
	readers held 6
mostly_queued() {
	local dis dir

	on_arrival
	# Not all: the first arrival, and any that finds the device idle
	# between fio's completions and its next submissions, goes on
	# arrival. The device allows 300 in the 6 s; at least 150 of them,
	# enough for a tenth to mean something.
	[ "$dis" -ge 150 ] && [ "$((dir * 10))" -lt "$dis" ]
}
ktap_check "at least 90% of requests queued first" mostly_queued
echo 0 > "/sys/block/$d/queue/iosched/max_inflight"

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"
kvb_set_sched "$d" none || true
kvb_nullb_teardown

# rebuild: a configfs null_blk of two contexts under fio, its
# submit_queues set to 1, 2, 1, 2; true if every change returned, kvbatch
# is still selected, fio ran on and ended cleanly, and the disk did I/O
# after the last change. fio must outlast the changes: each rebuild
# freezes the queue and, on 6.12, switches the elevator off and on, which
# in a 6.12 debug guest takes long enough that 20 s of fio can end before
# the last check, and a 6.12 guest beside another guest can spend most of
# 20 s on them: so 30 s, and 120 on a debug kernel. Completions take
# 20 ms: fio keeps its 128 requests in flight through every rebuild with a
# hundredth of the completions to handle (a saving, though most of the
# test's CPU time goes elsewhere).
rebuild() {
	local c=/sys/kernel/config/nullb/kvblane n pid rc=0 i t0 secs=30

	kvb_debug_kernel && secs=120
	kvb_cfs_nullb kvblane size=1024 submit_queues=2 hw_queue_depth=128 \
		irqmode=2 completion_nsec=20000000 || return 1
	n=$(kvb_io_count kvblane)
	t0=$SECONDS
	kvb_fio rebuild --filename=/dev/kvblane --direct=1 \
		--ioengine=io_uring --rw=randread --bs=4k --iodepth=64 \
		--numjobs=2 --time_based --runtime=$secs &
	pid=$!
	kvb_wait_io kvblane "$n" || { log "fio did no I/O within 30 s"; rc=1; }
	for i in 1 2 1 2; do
		echo "$i" > "$c/submit_queues" || { log "submit_queues $i refused"; rc=1; }
		kvb_sleep 1
	done
	log "kvblane: scheduler $(kvb_sched_of kvblane) after the changes," \
		"$((SECONDS - t0)) s into fio's $secs"
	[ "$(kvb_sched_of kvblane)" = kvbatch ] || rc=1
	kill -0 "$pid" 2>/dev/null ||
		{ log "fio ended before the check of I/O after the changes"; rc=1; }
	n=$(kvb_io_count kvblane)
	kvb_wait_io kvblane "$n" 10 ||
		{ log "no I/O completed within 10 s after the changes"; rc=1; }
	wait "$pid" || rc=1
	echo 0 > "$c/power"
	rmdir "$c"
	return $rc
}
if modprobe null_blk nr_devices=0 2>/dev/null && kvb_configfs &&
   [ -e /sys/kernel/config/nullb/features ] &&
   grep -qw submit_queues /sys/kernel/config/nullb/features; then
	ktap_check "hardware contexts rebuilt 4 times under I/O: no hang, kvbatch stays, I/O goes on" \
		rebuild
else
	ktap_test_skip "context rebuild: no null_blk configfs with submit_queues"
fi
modprobe -r null_blk 2>/dev/null
ktap_finished
