#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/kvcompare's rounds (-R), as make bench's deep recall row runs
# them. Bad -R, -S and -n values exit 2 with the usage and switch no
# scheduler. Two rounds of a short kvbench run under mq-deadline and
# kvbatch: the second round runs them in the other order, each round's
# figures are on stderr, and the table and OUT.json hold the rounds
# merged -- batches summed, the mean between the rounds' means, the p99
# the mean of the rounds' p99s, seconds summed. An entry of -S with
# tunables sets them on its scheduler (read back after its run) and is
# its own row; one naming a tunable a peer lacks stops the run, exit 1,
# naming it (kvbatch's are refused with the usage before the run).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3 jq
kvcompare=$KVB_ROOT/tools/kvcompare
kvbench=$KVB_ROOT/build/tools/kvbench
[ -x "$kvbench" ] || ktap_exit_skip "kvbench not built (make tools)"
kvb_begin_nullb 7 submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=1000000 gb=1

tmp=$(mktemp -d /tmp/kvb-compare.XXXXXX)

kvb_set_sched nullb0 none || true
bad=0
for args in "-R 0" "-R 10" "-R x" "-R" "-S ''" "-n 0" "-n 3" "-n 2049" \
	    "-S kvbatch" "-S 'kvbatch kvbatch'"; do
	eval "set -- $args"
	"$kvcompare" -d /dev/nullb0 "$@" -- -t 1 > "$tmp/out" 2> "$tmp/err"
	rc=$?
	if [ $rc != 2 ] || ! grep -q '^usage: tools/kvcompare ' "$tmp/err" ||
	   [ -s "$tmp/out" ] || [ "$(kvb_sched_of nullb0)" != none ]; then
		log "not refused as expected (exit $rc): kvcompare $args"
		bad=$((bad + 1))
	fi
done
ktap_check "10 bad -R/-S/-n values: exit 2 with the usage, no scheduler switched" \
	test $bad = 0

"$kvcompare" -d /dev/nullb0 -n 64 -R 2 -S "mq-deadline kvbatch" \
	-o "$tmp/out.json" -- -t 2 -r 40 --seed 7 -s 4,8 --foreign 2 \
	> "$tmp/table" 2> "$tmp/err"
rc=$?
ktap_diag < "$tmp/table"
grep '^# round' "$tmp/err" | ktap_diag
ktap_check "kvcompare -R 2 runs and prints a table" \
	sh -c "[ $rc = 0 ] && grep -q '^kvbatch ' '$tmp/table' &&
	       grep -q '^mq-deadline ' '$tmp/table'"

order=$(sed -n 's/^# \([a-z-]*\): nr_requests.*/\1/p' "$tmp/err" | tr '\n' ' ')
log "run order: $order"
ktap_check "the second round runs the schedulers in the rotated order" \
	test "$order" = "mq-deadline kvbatch kvbatch mq-deadline "

# round K SCHED FIELD: that round's figure for SCHED (2 batches, 3 mean,
# 4 p99) from "# round K: sched n mean p99, ...".
round() {
	sed -n "s/^# round $1: //p" "$tmp/err" | tr ',' '\n' |
		awk -v s="$2" -v f="$3" '$1 == s { print $f }'
}

# merged SCHED: every figure of the merged result checked against the two
# rounds'. (Called through ktap_check.)
# shellcheck disable=SC2317
merged() {
	local s=$1 n1 n2 m1 m2 p1 p2

	n1=$(round 1 "$s" 2) n2=$(round 2 "$s" 2)
	m1=$(round 1 "$s" 3) m2=$(round 2 "$s" 3)
	p1=$(round 1 "$s" 4) p2=$(round 2 "$s" 4)
	[ -n "$n1" ] && [ -n "$n2" ] && [ "$n1" -gt 0 ] && [ "$n2" -gt 0 ] ||
		return 1
	jq -e --arg s "$s" --argjson n $((n1 + n2)) \
		--argjson m1 "$m1" --argjson m2 "$m2" \
		--argjson p1 "$p1" --argjson p2 "$p2" '
		.[$s] as $r | $r.batch_ms.all as $a |
		$a.n == $n and
		$a.mean >= ([$m1, $m2] | min) - 0.01 and
		$a.mean <= ([$m1, $m2] | max) + 0.01 and
		(($a.p99 - ($p1 + $p2) / 2) | fabs) <= 0.01 and
		$r.seconds >= 4 and $r.rate == 40' "$tmp/out.json" > /dev/null
}
for s in mq-deadline kvbatch; do
	log "$s rounds: $(round 1 $s 2)/$(round 1 $s 3)/$(round 1 $s 4)" \
		"$(round 2 $s 2)/$(round 2 $s 3)/$(round 2 $s 4);" \
		"merged: $(jq -c ".\"$s\".batch_ms.all | [.n, .mean, .p99]" "$tmp/out.json")"
done
ktap_check "mq-deadline's rounds merged: batches summed, mean between, p99 averaged" \
	merged mq-deadline
ktap_check "kvbatch's rounds merged: batches summed, mean between, p99 averaged" \
	merged kvbatch

entry=kvbatch:max_inflight=2,write_share_pct=10
"$kvcompare" -d /dev/nullb0 -n 64 -S "none $entry" -- -t 1 -r 40 --seed 7 \
	-s 4,8 --foreign 2 > "$tmp/table" 2> "$tmp/err"
rc=$?
ktap_diag < "$tmp/table"
ktap_check "an entry's tunables: set, its own row, its counters" \
	sh -c "[ $rc = 0 ] && grep -q '^$entry ' '$tmp/table' &&
	       grep -q '^# $entry: reason_' '$tmp/table' &&
	       [ \"\$(cat /sys/block/nullb0/queue/iosched/max_inflight)\" = 2 ] &&
	       [ \"\$(cat /sys/block/nullb0/queue/iosched/write_share_pct)\" = 10 ]"
"$kvcompare" -d /dev/nullb0 -n 64 -S "kvbatch mq-deadline:no_such_knob=1" -- -t 1 \
	> "$tmp/out" 2> "$tmp/err"
rc=$?
ktap_diag < "$tmp/err"
ktap_check "a tunable the scheduler lacks: exit 1, named" \
	sh -c "[ $rc = 1 ] && grep -q 'mq-deadline on nullb0 has no tunable no_such_knob' '$tmp/err'"

rm -rf "$tmp"
kvb_set_sched nullb0 none || true
kvb_nullb_teardown
ktap_finished
