#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Switch every test disk between kvbatch and the other schedulers SWITCHES
# times, all disks at once, while verified fio writers and readers run on
# each. Each switch drains and frees a kvbatch instance with requests in
# flight; fio must finish with every byte verified and no I/O error. All
# the while kvbatch's debugfs files are read in a loop on each disk: no
# read may meet the state a switch has freed.
source "$(dirname "$0")/lib.sh"

SWITCHES=${SWITCHES:-50}
# Long enough for the switches to happen under load on a TCG guest.
RUNTIME=${RUNTIME:-20}

kvb_setup_disks
kvb_load_peers

ktap_print_header
ktap_set_plan $((${#disks[@]} * 2 + 1))

# The peers present on this kernel, kvbatch between each of them.
peers=()
for s in $KVB_SCHEDS; do
	[ "$s" != kvbatch ] || continue
	grep -qw -- "$s" "/sys/block/${disks[0]}/queue/scheduler" && peers+=("$s")
done
log "switching between kvbatch and: ${peers[*]}"

switch_loop() {
	local d=$1 i p

	for i in $(seq "$SWITCHES"); do
		p=${peers[$((i % ${#peers[@]}))]}
		kvb_set_sched "$d" kvbatch || { log "$d: switch $i to kvbatch"; return 1; }
		sleep 0.$((RANDOM % 3))
		kvb_set_sched "$d" "$p" || { log "$d: switch $i to $p"; return 1; }
	done
	kvb_set_sched "$d" kvbatch
}

# kvbatch's debugfs files, read in a loop on a disk while it switches: a
# read must never reach kvbatch's state after a switch has freed it (the
# lanes, freed by exit_hctx() before the core removed the files; on 7.x
# all of it, freed before). Only kvbatch's file names: the peers' own
# files are theirs to order. Counts the reads that succeeded.
read_loop() {
	local d=$1 f n=0

	while [ -e "$KVB_SCRATCH/switching-$d" ]; do
		for f in dispatch batches tiers deferred stats histogram depth \
			 reset_stats; do
			cat "/sys/kernel/debug/block/$d/sched/$f" > /dev/null \
				2>&1 && n=$((n + 1))
		done
	done
	echo "$n" > "$KVB_SCRATCH/reads-$d"
}

# Verified fio on every disk at once, and every disk switching at once:
# instances of kvbatch are set up and torn down on several queues while
# the others carry I/O.
declare -A fio_pid sw_pid
for d in "${disks[@]}"; do
	(kvb_fio "$d-switch" --filename="/dev/$d" --rw=randrw --rwmixread=50 \
		--bsrange=4k-32k --direct=1 --ioengine=libaio --iodepth=32 \
		--numjobs=2 --offset_increment=64M --size=64M --time_based \
		--runtime="$RUNTIME" --verify=crc32c --verify_backlog=128 \
		--group_reporting) &
	fio_pid[$d]=$!
done
sleep 1
reports=$(kvb_kernel_reports)
declare -A rd_pid
for d in "${disks[@]}"; do
	touch "$KVB_SCRATCH/switching-$d"
	read_loop "$d" & rd_pid[$d]=$!
	switch_loop "$d" & sw_pid[$d]=$!
done
for d in "${disks[@]}"; do
	ktap_check "$d: $SWITCHES switches to and from kvbatch under load" \
		wait "${sw_pid[$d]}"
	rm -f "$KVB_SCRATCH/switching-$d"
	wait "${rd_pid[$d]}"
	ktap_check "$d: fio verified every byte with no I/O error" \
		wait "${fio_pid[$d]}"
	kvb_set_sched "$d" none
done
# Every loop must have read kvbatch's files (it was selected half the
# time), and no read met freed state: no kernel report (KASAN on debug
# kernels; an oops or a stuck lock elsewhere).
reads_ok() {
	local d n

	for d in "${disks[@]}"; do
		n=$(cat "$KVB_SCRATCH/reads-$d" 2>/dev/null)
		log "$d: kvbatch's debugfs files read ${n:-0} times while switching"
		[ "${n:-0}" -gt 0 ] || return 1
	done
	[ "$(kvb_kernel_reports)" = "$reports" ]
}
ktap_check "debugfs read throughout the switches, no kernel report" reads_ok

kvb_nullb_teardown
ktap_finished
