#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Things that change under kvbatch while I/O is in flight:
#  - a null_blk device powered off and deleted through configfs while fio
#    runs on it with kvbatch selected (the queue is torn down with
#    requests in the scheduler): fio must end, nothing may hang;
#  - the second CPU unplugged and plugged back in a loop under verified
#    fio (blk-mq remaps its hardware contexts);
#  - the fio process moved between two cgroups in a loop while its batches
#    are open (batch_key cgroup+ioprio): data verifies, accounting balances.
source "$(dirname "$0")/lib.sh"

CYCLES=${CYCLES:-5}
RUNTIME=${RUNTIME:-10}

kvb_require_root
kvb_require_cmd fio
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"

ktap_print_header
ktap_set_plan 4

# --- device removal ------------------------------------------------------
removal() {
	local i

	for i in $(seq "$CYCLES"); do
		kvb_cfs_removal kvbrm$i || return 1
	done
}

if modprobe null_blk nr_devices=0 2>/dev/null && kvb_configfs; then
	ktap_check "$CYCLES null_blk devices removed under I/O with kvbatch selected" removal
else
	ktap_test_skip "device removal: no null_blk configfs"
fi
modprobe -r null_blk 2>/dev/null

# --- CPU hotplug ---------------------------------------------------------
cpu=/sys/devices/system/cpu/cpu1/online
# 2 ms completions: fio's 16 requests stay in flight through each unplug
# and each move while fio leaves the guest's CPUs to the test (at 0.05 ms
# fio keeps them busy, and the cgroup loop manages about one move a
# second).
kvb_nullb_load submit_queues=2 hw_queue_depth=8 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=2000000
kvb_set_sched nullb0 kvbatch || log "nullb0: cannot select kvbatch"
echo 256 > /sys/block/nullb0/queue/nr_requests

# verified_fio NAME [SECONDS]: verified random writes on nullb0 for SECONDS
# (default RUNTIME).
verified_fio() {
	kvb_fio "$1" --filename=/dev/nullb0 --direct=1 --ioengine=io_uring \
		--rw=randwrite --bs=4k --bsrange=4k-64k --size=128M \
		--iodepth=16 --numjobs=1 --verify=crc32c --verify_backlog=64 \
		--time_based --runtime="${2:-$RUNTIME}" --prioclass=2 --prio=4
}

hotplug() {
	local pid i rc=0

	verified_fio hotplug &
	pid=$!
	for i in $(seq "$CYCLES"); do
		kvb_sleep 0.5
		echo 0 > $cpu || { log "cpu1 offline failed"; rc=1; break; }
		kvb_sleep 0.5
		echo 1 > $cpu || { log "cpu1 online failed"; rc=1; break; }
	done
	echo 1 > $cpu 2>/dev/null
	wait $pid || rc=1
	return $rc
}
if [ -w $cpu ]; then
	ktap_check "$CYCLES CPU unplug/replug cycles under verified fio" hotplug
	ktap_check "accounting balances after CPU hotplug" kvb_balanced nullb0
else
	ktap_test_skip "CPU hotplug: no writable $cpu"
	ktap_test_skip "CPU hotplug: no writable $cpu"
fi

# --- cgroup moves --------------------------------------------------------
cg=/sys/fs/cgroup
cgroup_moves() {
	local pid rc=0 n=0 g p mult=1 pids=()

	# The io controller gives each cgroup its own blkcg, hence its own key.
	echo +io > $cg/cgroup.subtree_control 2>/dev/null || true
	mkdir -p $cg/kvb-a $cg/kvb-b || return 1
	kvb_defer "rmdir $cg/kvb-a $cg/kvb-b"
	# The runtime, four times on a debug kernel: under emulation it
	# managed about one move a second while fio kept the CPUs busy.
	kvb_debug_kernel && mult=4
	verified_fio cgmove $((RUNTIME * mult)) &
	pid=$!
	# Move fio's processes: the one started and its job process, a
	# child of it. Looked up until both are there, then moved by the
	# shell alone: in a debug guest a pgrep per move leaves time for
	# only a few moves in 40 s.
	while kill -0 $pid 2>/dev/null; do
		[ ${#pids[@]} -ge 2 ] ||
			mapfile -t pids < <(pgrep -f "fio --output=$KVB_SCRATCH/cgmove.log" 2>/dev/null)
		for g in kvb-a kvb-b; do
			for p in "${pids[@]}"; do
				echo "$p" > $cg/$g/cgroup.procs 2>/dev/null && n=$((n + 1))
			done
			kvb_sleep 0.1
		done
	done
	wait $pid || rc=1
	log "moved fio processes between cgroups $n times"
	rmdir $cg/kvb-a $cg/kvb-b 2>/dev/null
	[ $rc = 0 ] && [ $n -ge 10 ]
}
if [ -f $cg/cgroup.procs ]; then
	moves_balanced() { cgroup_moves && kvb_balanced nullb0; }
	ktap_check "fio moved between cgroups with batches open: data verifies, accounting balances" \
		moves_balanced
else
	ktap_test_skip "cgroup moves: no cgroup2 at $cg"
fi
kvb_nullb_teardown
ktap_finished
