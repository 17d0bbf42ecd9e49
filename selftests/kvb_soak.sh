#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The soak ("make soak", not part of make test): SOAK_SECONDS (default 600)
# of a mixed tagged workload with the stresses of the other selftests
# interleaved. Verified fio (RT, BE with hints, IDLE and async writes) runs
# on nvme0n1 and nullb0 under kvbatch the whole time, while in turn:
#  - a second null_blk switches between kvbatch and the peers under load;
#  - knobs and nr_requests take random valid values on nullb0;
#  - CPU 1 goes offline and back;
#  - fio is moved between cgroups;
#  - an adversary submits thousands of distinct batch keys (kvbench);
#  - null_blk devices are created, loaded and removed through configfs.
# At the end every fio job must have verified its data, kvbatch's
# accounting must balance, and (checked by kvvm) the kernel log must be
# clean.
source "$(dirname "$0")/lib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-600}
kvbench=$KVB_ROOT/build/tools/kvbench
cg=/sys/fs/cgroup

kvb_require_root
kvb_require_cmd fio
[ -x "$kvbench" ] || ktap_exit_skip "no $kvbench (make tools)"
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"
kvb_nullb_fresh nr_devices=2 submit_queues=2 hw_queue_depth=8 \
	memory_backed=1 gb=1 irqmode=2 completion_nsec=50000

ktap_print_header
ktap_set_plan 5

for d in nvme0n1 nullb0; do
	kvb_set_sched $d kvbatch
	echo 512 > /sys/block/$d/queue/nr_requests
done
echo +io > $cg/cgroup.subtree_control 2>/dev/null || true
mkdir -p $cg/kvb-soak-a $cg/kvb-soak-b
kvb_defer "rmdir $cg/kvb-soak-a $cg/kvb-soak-b"

# Tagged, verified jobs on both disks for the whole soak.
soak_fio() {
	local d=$1

	kvb_fio "soak-$d" --filename=/dev/$d --direct=1 --ioengine=io_uring \
		--time_based --runtime="$SOAK_SECONDS" --size=256M \
		--verify=crc32c --verify_backlog=128 --bsrange=4k-128k \
		--name=recall --rw=randrw --iodepth=16 --prioclass=1 --prio=2 \
		--name=engine --rw=randrw --iodepth=8 --prioclass=2 --prio=4 \
			--offset=256M \
		--name=prefetch --rw=randrw --iodepth=8 --prioclass=3 \
			--offset=512M
}
soak_fio nvme0n1 & f1=$!
soak_fio nullb0 & f2=$!

end=$((SECONDS + SOAK_SECONDS - 20))
declare -A done_
round=0
while [ $SECONDS -lt $end ]; do
	round=$((round + 1))
	case $((round % 6)) in
	0)	# scheduler switches on nullb1 under load
		(fio --name=sw --filename=/dev/nullb1 --direct=1 --rw=randrw \
			--bs=4k --iodepth=16 --time_based --runtime=8 \
			--ioengine=io_uring --output=/dev/null) & p=$!
		for s in kvbatch mq-deadline kvbatch none kvbatch kyber kvbatch bfq; do
			echo $s > /sys/block/nullb1/queue/scheduler 2>/dev/null
			sleep 0.5
		done
		wait $p
		done_[switch]=$((${done_[switch]:-0} + 8)) ;;
	1)	# knobs and nr_requests under load
		for i in $(seq 20); do
			if kvb_tunables_random /sys/block/nullb0/queue/iosched; then
				done_[knobs]=$((${done_[knobs]:-0} + 1))
			else
				done_[knobs_failed]=$((${done_[knobs_failed]:-0} + 1))
			fi
			echo $((64 + RANDOM % 960)) > /sys/block/nullb0/queue/nr_requests
			sleep 0.2
		done ;;
	2)	# CPU hotplug
		if [ -w /sys/devices/system/cpu/cpu1/online ]; then
			echo 0 > /sys/devices/system/cpu/cpu1/online; sleep 1
			echo 1 > /sys/devices/system/cpu/cpu1/online; sleep 1
			done_[hotplug]=$((${done_[hotplug]:-0} + 1))
		fi ;;
	3)	# cgroup moves of the fio processes
		for i in $(seq 10); do
			g=kvb-soak-a
			[ $((i % 2)) = 0 ] || g=kvb-soak-b
			for p in $(pgrep -f "soak-nullb0.log"); do
				echo "$p" > $cg/$g/cgroup.procs 2>/dev/null
			done
			sleep 0.2
		done
		for p in $(pgrep -f "soak-nullb0.log"); do
			echo "$p" > $cg/kvb-soak-a/cgroup.procs 2>/dev/null
		done
		done_[cgroup]=$((${done_[cgroup]:-0} + 10)) ;;
	4)	# an adversary of distinct keys
		# 256 closed-loop single-request batches, keys cycling.
		if "$kvbench" -d /dev/nvme0n1 -t 5 -r 0 --streams 256 \
			--think 0 -s 1 --tag be-hint --solo-runs 1 \
			> "$KVB_SCRATCH/adversary.log" 2>&1; then
			done_[adversary]=$((${done_[adversary]:-0} + 1))
		else
			tail -3 "$KVB_SCRATCH/adversary.log" | sed 's/^/# adversary: /'
			done_[adversary_failed]=$((${done_[adversary_failed]:-0} + 1))
		fi ;;
	5)	# a configfs device created, used and removed under I/O
		if kvb_configfs && kvb_cfs_removal kvbsoak; then
			done_[removal]=$((${done_[removal]:-0} + 1))
		else
			done_[removal_failed]=$((${done_[removal_failed]:-0} + 1))
		fi ;;
	esac
done
for k in "${!done_[@]}"; do log "$k: ${done_[$k]}"; done
# A stress that never ran, or failed, would make the soak prove less than
# it says.
all_stresses() {
	local k

	for k in switch knobs hotplug cgroup adversary removal; do
		[ "${done_[$k]:-0}" -gt 0 ] || { log "$k never ran"; return 1; }
	done
	for k in knobs_failed adversary_failed removal_failed; do
		[ "${done_[$k]:-0}" = 0 ] || return 1
	done
}
ktap_check "every stress ran, none failed" all_stresses
ktap_check "nvme0n1: ${SOAK_SECONDS}s of tagged verified fio" wait $f1
ktap_check "nullb0: ${SOAK_SECONDS}s of tagged verified fio" wait $f2
ktap_check "nvme0n1: accounting balances" kvb_balanced nvme0n1
ktap_check "nullb0: accounting balances" kvb_balanced nullb0
rmdir $cg/kvb-soak-a $cg/kvb-soak-b 2>/dev/null
kvb_nullb_teardown
ktap_finished
