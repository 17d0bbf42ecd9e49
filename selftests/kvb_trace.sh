#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Tracepoints and bpftrace tools. The four tools in tools/bpftrace attach
# together, a known kvbench workload runs on a four-tag null_blk, and what
# the tools counted must equal kvbatch's own statistics, which must add up
# themselves: batches closed = batches opened, histogram counts = batches
# closed, demand batches = the batches kvbench issued. Before that, each
# tracepoint must fire with the right fields for a known recall and known
# IDLE writes (read from tracefs), and reset_stats must zero the counters.
#
# bpftrace attaches a script's probes one at a time and may run BEGIN (the
# "Hit Ctrl-C" line) before the last is attached, so each tool counts as
# started only once bpftool lists all its tracepoints as attached to it:
# otherwise the first events of the workload can be missed. And the kernel
# does not run a BPF program when another one is running on the same CPU
# (a batch closing in a completion interrupt): it counts a recursion miss
# on the program instead. So a tool's count must equal the statistics less
# at most the misses bpftool reports for kvbatch's programs (a 7.3 guest
# can count a close short, with misses reported, where the tracefs count
# is exact).
source "$(dirname "$0")/lib.sh"

tools=$KVB_ROOT/tools/bpftrace
kvbench=$KVB_ROOT/build/tools/kvbench

kvb_require_root
kvb_require_cmd bpftrace bpftool jq
[ -x "$kvbench" ] && [ -x "$KVB_ROOT/build/tools/recall" ] ||
	ktap_exit_skip "kvbench/recall not built (make tools)"
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -d /sys/kernel/tracing/events/kvbatch ] ||
	ktap_exit_skip "no kvbatch trace events (module force-loaded?)"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=1000000 gb=1

ktap_print_header
ktap_set_plan 19

dbg=/sys/kernel/debug/block/nullb0/sched
kvb_set_sched nullb0 kvbatch
echo 1024 > /sys/block/nullb0/queue/nr_requests
# Some history first, so that the reset has something to clear.
"$kvbench" -d /dev/nullb0 -t 1 -r 20 -s 4 --solo-runs 1 > /dev/null

reset_zeroes() {
	echo 1 > $dbg/reset_stats || return 1
	[ "$(kvb_stat nullb0 inserted)" = 0 ] &&
		[ "$(kvb_stat nullb0 demand_batches_closed)" = 0 ] &&
		[ -z "$(cat $dbg/histogram)" ]
}
ktap_check "reset_stats zeroes counters and histogram" reset_zeroes
reset_rejects() {
	! echo 2 > $dbg/reset_stats 2>/dev/null && ! echo x > $dbg/reset_stats 2>/dev/null
}
ktap_check "reset_stats refuses anything but 1" reset_rejects

# Each tracepoint, with its fields, for a known workload: one recall batch
# of 16 reads of 64 KiB tagged demand (RT) batch 8, then 8 IDLE 4 KiB writes.
tr=/sys/kernel/tracing
recall=$KVB_ROOT/build/tools/recall
# Enabling events with record-cmd on also enables sched_wakeup's static
# key; patching it under TCG can crash a 7.3 guest ("Oops: int3" in
# ttwu_do_activate). The checks below do not read the comm.
cmd=$(cat $tr/options/record-cmd)
echo 0 > $tr/options/record-cmd
echo 0 > $tr/tracing_on
echo > $tr/trace
echo 1 > $tr/events/kvbatch/enable
echo 1 > $tr/tracing_on
"$recall" -t demand /dev/nullb0 8 16 > /dev/null
ionice -c 3 dd if=/dev/zero of=/dev/nullb0 bs=4k count=8 seek=4096 \
	oflag=direct status=none
echo 0 > $tr/tracing_on
cp $tr/trace "$KVB_SCRATCH/trace"
echo 0 > $tr/events/kvbatch/enable
echo "$cmd" > $tr/options/record-cmd
grep kvbatch_ "$KVB_SCRATCH/trace" | sed 's/^ */# /' | head -12
tag=2040	# (RT << 13) | (8 << 3): the low 16 bits of the default key
dev=$(awk -F: '{ print $1 "," $2 }' /sys/block/nullb0/dev)
ev() {
	grep -E "kvbatch_$1: $dev $2" "$KVB_SCRATCH/trace"
}
ktap_check "batch_open: dev, key with the tag, tier demand" \
	test "$(ev batch_open "key=0x[0-9a-f]*$tag tier=demand" | wc -l)" -eq 1
ktap_check "dispatch: 16 x 65536 bytes of that key, reason tail" \
	test "$(ev dispatch "sector=[0-9]+ bytes=65536 key=0x[0-9a-f]*$tag tier=demand seq=[0-9]+ reason=tail" | wc -l)" -eq 16
ktap_check "batch_close: 16 requests, 1048576 bytes, a duration" \
	test "$(ev batch_close "key=0x[0-9a-f]*$tag tier=demand seq=[0-9]+ requests=16 bytes=1048576 duration_us=[1-9]" | wc -l)" -eq 1
ktap_check "write_defer: the 8 IDLE writes, 4096 bytes each" \
	test "$(ev write_defer "sector=[0-9]+ bytes=4096 deferred=[1-9]" | wc -l)" -eq 8
ktap_check "write_release: bursts releasing them" \
	test "$(ev write_release "burst=[1-9][0-9]* deferred=[1-9][0-9]* reason=write_burst" | wc -l)" -ge 1

# Start the tools one after another, each once the previous has attached.
# Several bpftrace processes starting at the same moment under TCG can
# crash a 6.12 guest with "Oops: int3" in ksys_read (kernel text being
# patched on one vCPU while another executes it); kvbatch is not involved.
pids=()
# attached PID: kvbatch tracepoints a BPF program of PID is attached to.
attached() {
	bpftool perf list --json 2>/dev/null |
		jq --argjson p "$1" '[.[] | select(.pid == $p and
			((.tracepoint // "") | startswith("kvbatch_")))] | length'
}
start_tools() {
	local t i want

	for t in batchlat ahead reasons writes; do
		bpftrace "$tools/kvbatch-$t.bt" > "$KVB_SCRATCH/$t.out" 2>&1 &
		pids+=($!)
		want=$(grep -c '^tracepoint:kvbatch:' "$tools/kvbatch-$t.bt")
		for i in $(seq 240); do
			# bpftrace says "Attaching N probes" (0.17) or
			# "Attached N probes" (0.23) once it has compiled the
			# program; bpftool and jq are not worth starting before
			# (a second or more of the guest's CPU per look under
			# TCG, taken from bpftrace's own start), but after a
			# while they look anyway, in case no such line comes.
			if [ "$i" -gt 60 ] ||
			   kvb_has_line "$KVB_SCRATCH/$t.out" Attach; then
				[ "$(attached "${pids[-1]}")" = "$want" ] &&
					continue 2
			fi
			kvb_sleep 0.5
		done
		log "$t did not attach its $want tracepoints: $(head -5 "$KVB_SCRATCH/$t.out")"
		return 1
	done
}
ktap_check "all four bpftrace tools attach" start_tools

# kvbench submits each batch's reads at once, but in a guest slow enough
# (a debug kernel beside other guests) a batch's first reads can complete
# before its last one is inserted: with batch_window_us 0 the batch then
# closes, and opens again, one close more than kvbench issued. A window
# keeps it draining until its key returns; kvbench gives each batch a
# hint of its own, so no batch joins another's. (kvb_drain.sh checks the
# closes of window 0.)
echo 200000 > /sys/block/nullb0/queue/iosched/batch_window_us
echo 1 > $dbg/reset_stats
run_kvbench() {
	"$kvbench" -d /dev/nullb0 -t 4 -r 30 -s 4,8,16 --foreign 4 \
		--prefetch 2 --write 2 --solo-runs 1 --seed 3 --json \
		> "$KVB_SCRATCH/kvbench.json"
}
ktap_check "kvbench workload runs" run_kvbench
# Let the disk go quiet before the tools stop: a batch that closes while
# they are being stopped, one by one, is counted but not traced, and a
# normal or prefetch close of unknown origin can come then (udev's probe
# of a disk opened for writing, where udevd runs; none runs in kvvm's
# guest). Reading the statistics applies completions recorded without
# the lock, so this wait cannot tell a late close from one left to the
# next lock holder: kvb_drain.sh checks that, from the trace alone.
closes() {
	local tier n=0

	for tier in demand normal prefetch; do
		n=$((n + $(kvb_stat nullb0 ${tier}_batches_closed)))
	done
	echo $n
}
quiet() {
	local last now

	udevadm settle -t 30 2>/dev/null || true
	last=$(closes)
	for _ in $(seq 30); do
		kvb_sleep 1
		now=$(closes)
		[ "$now" = "$last" ] && return 0
		last=$now
	done
	return 1
}
quiet || log "batches still closing 30 s after kvbench"
# Closes counted before the tools stop: anything the tools miss after
# this must be one that came later (a read from outside the test).
closed_before=$(closes)
demand_before=$(kvb_stat nullb0 demand_batches_closed)
# Before the tools exit and their programs are gone. bpftrace names them
# kvbatch_<event> (0.17) or tracepoint_kvbatch_kvbatch_<event>_<n> (0.23).
misses=$(bpftool prog show --json |
	jq '[.[] | select(.name | test("kvbatch")) | .recursion_misses // 0] |
	    add // 0')
log "BPF program runs the kernel skipped (recursion misses): $misses"
# Stop the tools like Ctrl-C would; each must print its maps and exit.
# One at a time: four bpftrace instances tearing down at once on a
# two-vCPU TCG guest can take longer than any sane bound.
stop_tools() {
	local p ok=0

	for p in "${pids[@]}"; do
		kvb_bpftrace_stop "$p" || ok=1
	done
	return $ok
}
ktap_check "all four tools exit on SIGINT and print their maps" stop_tools

for t in batchlat ahead reasons writes; do
	sed "s/^/# $t: /" "$KVB_SCRATCH/$t.out" | head -60
done
grep -E '_batches_(opened|closed)|writes_deferred|reason_tail' $dbg/stats | sed 's/^/# /'

closed=$(closes) opened=0
for tier in demand normal prefetch; do
	opened=$((opened + $(kvb_stat nullb0 ${tier}_batches_opened)))
done
# kvbench tags every batch with its own hint: its batches plus one solo
# batch per size are exactly the demand batches kvbatch should have seen.
issued=$(($(sed -n 's/.*"all": {"n": \([0-9]*\),.*/\1/p' "$KVB_SCRATCH/kvbench.json" | head -1) + 3))
ktap_check "stats: demand batches closed = batches kvbench issued ($issued)" \
	test "$(kvb_stat nullb0 demand_batches_closed)" -eq "$issued"
# A kvbench batch kvbatch closed more than once had gone empty before all
# its reads arrived, for longer than the window above: name it. (Without
# the window, a debug kernel beside other guests can close about one in
# a hundred twice.)
awk -F'[][]|: count |, ' '/^@demand_us_by_key\[/ && $4 > 1 {
	printf "demand key %#x (hint %d) closed %d times\n", $2,
		int($2 / 8) % 1024, $4 }' "$KVB_SCRATCH/batchlat.out" |
	while read -r line; do log "$line"; done
ktap_check "stats: batches closed ($closed) = batches opened ($opened)" \
	test "$closed" -eq "$opened" -a "$closed" -gt 0
hist_total=$(awk '{ n += $3 } END { print n + 0 }' $dbg/histogram)
ktap_check "stats: histogram counts ($hist_total) = batches closed" \
	test "$hist_total" -eq "$closed"

# within TRACED STAT: TRACED is STAT, or short of it by at most the misses.
within() {
	[ -n "$1" ] && [ "$1" -le "$2" ] && [ "$1" -ge $(($2 - misses)) ]
}
# between TRACED BEFORE AFTER: TRACED is at least what was closed before
# the tools stopped, less the misses, and at most what was closed after.
between() {
	[ -n "$1" ] && [ "$1" -le "$3" ] && [ "$1" -ge $(($2 - misses)) ]
}

# "@closed[major, minor]: N" from kvbatch-batchlat.
traced=$(sed -n 's/^@closed\[.*\]: \([0-9]*\)$/\1/p' "$KVB_SCRATCH/batchlat.out")
ktap_check "batchlat: traced closes (${traced:-none}) = stats ($closed_before..$closed) less misses ($misses)" \
	between "$traced" "$closed_before" "$closed"
ahead=$(sed -n 's/^@batches: \([0-9]*\)$/\1/p' "$KVB_SCRATCH/ahead.out")
ktap_check "ahead: demand batches (${ahead:-none}) = stats less misses" \
	between "$ahead" "$demand_before" "$(kvb_stat nullb0 demand_batches_closed)"
ktap_check "reasons: per-second counts include the critical tail" \
	grep -q '^@dispatch\[tail\]: [1-9]' "$KVB_SCRATCH/reasons.out"
# The map is keyed by the reason's name as the tracepoint records it: a
# second line for one reason in one second means bytes after the name.
one_line_per_reason() {
	awk '/^[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$/ { delete seen; next }
	     /^@dispatch\[/ { k = $1; if (seen[k]++) { print "# twice: " k; bad = 1 } }
	     END { exit bad }' "$KVB_SCRATCH/reasons.out"
}
ktap_check "reasons: one line per reason per second" one_line_per_reason
deferred=$(sed -n 's/^@deferred: \([0-9]*\)$/\1/p' "$KVB_SCRATCH/writes.out")
ktap_check "writes: traced deferrals (${deferred:-none}) = stats less misses" \
	within "$deferred" "$(kvb_stat nullb0 writes_deferred)"
demand_hist=$(awk '$1 == "demand" { n += $3 } END { print n + 0 }' $dbg/histogram)
ktap_check "histogram: demand buckets = demand batches closed" \
	test "$demand_hist" -eq "$(kvb_stat nullb0 demand_batches_closed)"

kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
