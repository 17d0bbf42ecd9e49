#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Switch every test disk between kvbatch and the other schedulers SWITCHES
# times, all disks at once, while verified fio writers and readers run on
# each. Each switch drains and frees a kvbatch instance with requests in
# flight; fio must finish with every byte verified and no I/O error. All
# the while kvbatch's debugfs files are read in a loop on each disk: no
# read may meet the state a switch has freed.
#
# Only kvbatch's files are read, and a path names no scheduler: a peer
# whose sched directory has a file of the same name (mq-deadline's
# "dispatch", on 6.12 and 7.3) is switched to in a phase of its own whose
# loop leaves such names out. Between a switch's teardown of the old
# scheduler and the end of the switch, 7.3 keeps the old scheduler's
# files, and mq-deadline's "dispatch" then reads q->elevator, NULL or the
# new scheduler's (a NULL dereference in deadline_dispatch_start() that
# stops the guest): the kernel's bug, which kvbatch's own files avoid by
# checking the scheduler they are read on.
source "$(dirname "$0")/lib.sh"

# 30: under load the switches come about 1 s apart, so in a 6.1 guest
# alone 50 would outlast fio's 20 s and most would find the disks idle.
SWITCHES=${SWITCHES:-30}
# Long enough for the switches to happen under load on a TCG guest.
RUNTIME=${RUNTIME:-20}

kvb_setup_disks
kvb_load_peers

# kvbatch's debugfs files.
kvb_files="dispatch batches tiers deferred stats histogram depth reset_stats"

# The peers present on this kernel, in phase 1 if their sched directory
# has no file named as one of kvbatch's, else in phase 2, whose loop does
# not read the names any of them has (shared).
peers=()
phase_peers=("" "")
shared=" "
for s in $KVB_SCHEDS; do
	[ "$s" != kvbatch ] || continue
	grep -qw -- "$s" "/sys/block/${disks[0]}/queue/scheduler" || continue
	peers+=("$s")
	mine=
	if kvb_set_sched "${disks[0]}" "$s"; then
		for f in $kvb_files; do
			[ ! -e "/sys/kernel/debug/block/${disks[0]}/sched/$f" ] ||
				mine+="$f "
		done
	fi
	if [ -z "$mine" ]; then
		phase_peers[0]+="$s "
		continue
	fi
	log "$s has sched files named as kvbatch's: $mine"
	phase_peers[1]+="$s "
	shared+="$mine"
done
kvb_set_sched "${disks[0]}" none
phase_files=("$kvb_files" "")
for f in $kvb_files; do
	[[ $shared == *" $f "* ]] || phase_files[1]+="$f "
done
phases=0
for p in 0 1; do
	[ -z "${phase_peers[p]}" ] || phases=$((phases + 1))
done
[ "$phases" -gt 0 ] || ktap_exit_skip "no other scheduler on this kernel"

ktap_print_header
ktap_set_plan $((phases * (${#disks[@]} * 2 + 1)))

# switch_loop DISK N PEER...: N switches from kvbatch to the next PEER and
# back, ending on kvbatch.
switch_loop() {
	local d=$1 n=$2 i p

	shift 2
	for i in $(seq "$n"); do
		p=${*:$((i % $# + 1)):1}
		kvb_set_sched "$d" kvbatch || { log "$d: switch $i to kvbatch"; return 1; }
		kvb_sleep 0.$((RANDOM % 3))
		kvb_set_sched "$d" "$p" || { log "$d: switch $i to $p"; return 1; }
	done
	kvb_set_sched "$d" kvbatch
}

# read_loop DISK FILE...: kvbatch's FILEs, read in a loop on a disk while
# it switches: a read must never reach kvbatch's state after a switch has
# freed it (the lanes, freed by exit_hctx() before the core removed the
# files; on 7.x all of it, freed before). Counts the reads that
# succeeded.
read_loop() {
	local d=$1 f n=0

	shift
	while [ -e "$KVB_SCRATCH/switching-$d" ]; do
		for f in "$@"; do
			cat "/sys/kernel/debug/block/$d/sched/$f" > /dev/null \
				2>&1 && n=$((n + 1))
		done
	done
	echo "$n" > "$KVB_SCRATCH/reads-$d"
}

# reads_ok REPORTS: every loop read kvbatch's files (it was selected half
# the time), and no read met freed state: the kernel's reports are still
# REPORTS (KASAN on debug kernels; an oops or a stuck lock elsewhere).
reads_ok() {
	local d n

	for d in "${disks[@]}"; do
		n=$(cat "$KVB_SCRATCH/reads-$d" 2>/dev/null)
		log "$d: kvbatch's debugfs files read ${n:-0} times while switching"
		[ "${n:-0}" -gt 0 ] || return 1
	done
	[ "$(kvb_kernel_reports)" = "$1" ]
}

# phase PEERS FILES SWITCHES SECONDS: verified fio on every disk at once,
# and every disk switching at once between kvbatch and PEERS, FILES read
# all the while: instances of kvbatch are set up and torn down on several
# queues while the others carry I/O.
phase() {
	local with=$1 files=$2 n=$3 secs=$4 d reports
	local -A fio_pid sw_pid rd_pid

	log "switching between kvbatch and: $with; reading: $files"
	for d in "${disks[@]}"; do
		(kvb_fio "$d-switch" --filename="/dev/$d" --rw=randrw \
			--rwmixread=50 --bsrange=4k-32k --direct=1 \
			--ioengine=libaio --iodepth=32 --numjobs=2 \
			--offset_increment=64M --size=64M --time_based \
			--runtime="$secs" --verify=crc32c --verify_backlog=128 \
			--group_reporting) &
		fio_pid[$d]=$!
	done
	kvb_sleep 1
	reports=$(kvb_kernel_reports)
	for d in "${disks[@]}"; do
		touch "$KVB_SCRATCH/switching-$d"
		# shellcheck disable=SC2086
		read_loop "$d" $files & rd_pid[$d]=$!
		# shellcheck disable=SC2086
		switch_loop "$d" "$n" $with & sw_pid[$d]=$!
	done
	for d in "${disks[@]}"; do
		ktap_check "$d: $n switches to and from kvbatch (peers: ${with% }) under load" \
			wait "${sw_pid[$d]}"
		rm -f "$KVB_SCRATCH/switching-$d"
		wait "${rd_pid[$d]}"
		ktap_check "$d: fio verified every byte with no I/O error" \
			wait "${fio_pid[$d]}"
		kvb_set_sched "$d" none
	done
	ktap_check "debugfs read throughout the switches, no kernel report" \
		reads_ok "$reports"
}

# The switches and the run time shared between the phases by their
# number of peers (on 6.12 and 7.3: 23 switches and 15 s, then 8 and
# 5 s; on 6.1 one phase of 30 and 20 s).
for p in 0 1; do
	[ -n "${phase_peers[p]}" ] || continue
	# shellcheck disable=SC2086
	set -- ${phase_peers[p]}
	n=$(((SWITCHES * $# + ${#peers[@]} - 1) / ${#peers[@]}))
	secs=$(((RUNTIME * $# + ${#peers[@]} - 1) / ${#peers[@]}))
	[ "$secs" -ge 5 ] || secs=5
	phase "${phase_peers[p]}" "${phase_files[p]}" "$n" "$secs"
done

kvb_nullb_teardown
ktap_finished
