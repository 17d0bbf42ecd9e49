#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/kvbatch-stat on a live kvbatch: a four-tag, 1 ms null_blk. Five
# recalls of 16 reads (build/tools/recall) run while kvbatch-stat -d
# nullb0 1 reports every second, until two reports after the last recall:
# its recall column, summed over the reports, must be 5 and equal the
# statistics; with a count (1 3) it stops after that many reports, exit 0;
# after a reset, a known kvbench workload
# (the one kvb_trace.sh runs, shorter) runs while it reports every second:
# every counted column summed over the reports must equal the statistics,
# and its recall batches the batches kvbench issued. A single report on
# the idle disk must show the statistics themselves (p50 and p99 equal to
# stats' own), and --prometheus output must pass promtool (where
# installed), parse with prometheus_client and carry the files' values
# (selftests/kvstat-check.py).
source "$(dirname "$0")/lib.sh"

stat=$KVB_ROOT/tools/kvbatch-stat
kvbench=$KVB_ROOT/build/tools/kvbench
recall=$KVB_ROOT/build/tools/recall

kvb_require_root
kvb_require_cmd python3
py=$(kvb_python) ||
	ktap_exit_skip "no python3 with prometheus_client (python3-prometheus-client)"
if [ ! -x "$kvbench" ] || [ ! -x "$recall" ]; then
	ktap_exit_skip "kvbench/recall not built (make tools)"
fi
kvb_begin_nullb 13 submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=1000000 gb=1

dbg=/sys/kernel/debug/block/nullb0/sched
ok=0
# Every batch below comes with a hint of its own, and is counted once
# closed. A guest slow enough completes a batch's first reads before its
# last one is inserted (a debug kernel beside other guests: kvb_trace.sh):
# with batch_window_us 0 the batch then closes and opens again, one close
# more than issued. A window keeps it draining until its key returns;
# the reports below wait past it, and so does the idle disk's.
if kvb_set_sched nullb0 kvbatch; then
	echo 1024 > /sys/block/nullb0/queue/nr_requests
	echo 200000 > /sys/block/nullb0/queue/iosched/batch_window_us &&
		echo 1 > $dbg/reset_stats && ok=1
fi
ktap_check "kvbatch on a 4-tag null_blk, statistics reset" test $ok = 1
[ $ok = 1 ] || { kvb_nullb_teardown; ktap_finished; }

# Without -d: every disk showing [kvbatch], in name order.
mine=$(grep -l '\[kvbatch\]' /sys/block/*/queue/scheduler | cut -d/ -f4 | sort | tr '\n' ' ')
theirs=$("$py" "$stat" | awk '$1 != "Device" { print $1 }' | tr '\n' ' ')
log "disks with kvbatch: $mine; kvbatch-stat: $theirs"
ktap_check "without -d: the disks showing [kvbatch]" test "$theirs" = "$mine"

# col FILE NAME: column NAME of nullb0's lines in FILE, summed over the
# reports.
col() {
	awk -v n="$2" '$1 == "Device" { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$1 == "nullb0" { s += $c[n] } END { print s + 0 }' "$1"
}
# reports FILE N PID: wait (up to 60 s) until FILE holds N reports, or
# kvbatch-stat (PID) has exited.
reports() {
	for _ in $(seq 600); do
		[ "$(grep -c '^nullb0 ' "$1")" -ge "$2" ] && return 0
		kill -0 "$3" 2>/dev/null || return 1
		kvb_sleep 0.1
	done
	return 1
}
# two_more FILE PID: wait for two more reports in FILE, so that the last
# comes after the disk went idle, then stop kvbatch-stat (PID; it sleeps
# between reports).
two_more() {
	reports "$1" $(($(grep -c '^nullb0 ' "$1") + 2)) "$2"
	kill -TERM "$2" 2>/dev/null
	wait "$2" 2>/dev/null
}
# now: the line a report since the reset must show on the idle disk: the
# statistics, the depth file's max_inflight, the gauges.
now() {
	local k line=nullb0 mi

	for k in demand_batches_closed demand_batch_us_p50 demand_batch_us_p99 \
		reason_expired reason_tail reason_normal reason_prefetch \
		reason_write_burst reason_share writes_deferred \
		dispatched_write throttled; do
		line="$line $(kvb_stat nullb0 $k)"
	done
	mi=$(sed -n 's/^max_inflight //p' $dbg/depth)
	case $mi in
	*"(auto)") line="$line ${mi%% *} auto" ;;
	*) line="$line $mi fixed" ;;
	esac
	echo "$line $(kvb_stat nullb0 queued) $(kvb_stat nullb0 inflight)"
}
# one_report: a single report of nullb0 (since the reset), its fields.
one_report() {
	"$py" "$stat" -d nullb0 | awk '$1 == "nullb0"' | tr -s ' '
}

# --- five recalls, reported every second ----------------------------------
# Reported until two reports after the last recall, however long the five
# take: in a debug guest the fifth can end after the last of six reports
# a fixed count would give. The count itself is checked on the idle disk
# below.
out=$KVB_SCRATCH/recall.out
"$py" "$stat" -d nullb0 1 600 > "$out" 2> "$out.err" &
pid=$!
reports "$out" 1 $pid
for h in 8 9 10 11 12; do
	"$recall" -t demand /dev/nullb0 $h 16 > /dev/null
done
two_more "$out" $pid
sed 's/^/recall: /' "$out" "$out.err" | ktap_diag
kvb_balanced nullb0 > /dev/null
closed=$(kvb_stat nullb0 demand_batches_closed)
ktap_check "recall batches over the reports ($(col "$out" recall)) = 5 = demand_batches_closed ($closed)" \
	test "$(col "$out" recall)" -eq 5 -a "$closed" -eq 5
demand=$(($(col "$out" tail) + $(col "$out" expired)))
ktap_check "tail + expired dispatches over the reports ($demand) = 80 reads = dispatched_demand" \
	test "$demand" -eq 80 -a "$(kvb_stat nullb0 dispatched_demand)" -eq 80
want=$(now)
got=$(one_report)
log "stats: $want"
log "report: $got"
ktap_check "one report on the idle disk = the statistics, p50/p99 included" \
	test "$got" = "$want"
"$py" "$stat" -d nullb0 1 3 > "$out" 2> "$out.err"
rc=$?
ktap_check "kvbatch-stat -d nullb0 1 3: three reports, exit 0" \
	test $rc -eq 0 -a "$(grep -c '^Device ' "$out")" -eq 3

# --- a kvbench workload, reported every second ----------------------------
echo 1 > $dbg/reset_stats
out=$KVB_SCRATCH/bench.out
"$py" "$stat" -d nullb0 1 600 > "$out" 2> "$out.err" &
pid=$!
reports "$out" 1 $pid
run_kvbench() {
	"$kvbench" -d /dev/nullb0 -t 3 -r 30 -s 4,8,16 --foreign 4 \
		--prefetch 2 --write 2 --solo-runs 1 --seed 3 --json \
		> "$KVB_SCRATCH/kvbench.json"
}
ktap_check "kvbench workload runs" run_kvbench
ktap_check "the disk is idle and balanced afterwards" kvb_balanced nullb0
two_more "$out" $pid
sed 's/^/kvbench: /' "$out.err" | ktap_diag
tail -n 4 "$out" | sed 's/^/kvbench: /' | ktap_diag
bad=0
for c in recall:demand_batches_closed expired:reason_expired \
	tail:reason_tail normal:reason_normal \
	prefetch:reason_prefetch wburst:reason_write_burst \
	share:reason_share deferred:writes_deferred \
	released:dispatched_write throttled:throttled; do
	sum=$(col "$out" "${c%%:*}")
	val=$(kvb_stat nullb0 "${c#*:}")
	log "${c%%:*}: $sum over the reports, ${c#*:} $val"
	[ "$sum" = "$val" ] || bad=1
done
ktap_check "every counted column summed over the reports = the statistics" \
	test $bad -eq 0
# kvbench tags every batch with its own hint: its batches plus one solo
# batch per size are the demand batches kvbatch saw (as in kvb_trace.sh).
issued=$(($(sed -n 's/.*"all": {"n": \([0-9]*\),.*/\1/p' "$KVB_SCRATCH/kvbench.json" | head -1) + 3))
ktap_check "recall batches over the reports ($(col "$out" recall)) = batches kvbench issued ($issued)" \
	test "$(col "$out" recall)" -eq "$issued"
want=$(now)
got=$(one_report)
log "stats: $want"
log "report: $got"
ktap_check "one report after the workload = the statistics, p50/p99 included" \
	test "$got" = "$want"

# --- --prometheus ---------------------------------------------------------
prom=$KVB_SCRATCH/kvbatch.prom
"$py" "$stat" -d nullb0 --prometheus > "$prom"
grep -E '^kvbatch_(batches_closed|dispatches)_total' "$prom" | ktap_diag
if command -v promtool > /dev/null; then
	ktap_check "--prometheus passes promtool check metrics" \
		sh -c "promtool check metrics < '$prom'"
else
	ktap_test_skip "--prometheus passes promtool check metrics" "promtool not installed"
fi
check() {
	"$py" "$KVB_ROOT/selftests/kvstat-check.py" "$prom" \
		/sys/kernel/debug/block nullb0 > "$KVB_SCRATCH/check" 2>&1
	local rc=$?

	ktap_diag < "$KVB_SCRATCH/check"
	return $rc
}
ktap_check "--prometheus parses and carries the files' values" check

kvb_set_sched nullb0 none
kvb_nullb_teardown
ktap_finished
