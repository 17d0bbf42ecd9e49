#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvreport_cli.sh: tools/kvreport on the host, on fixture results made
# here (a deep boot's deep.json and cost.json, and one recall workload on
# kvssd0 with its recording, for kvsim's floor, for one kernel), without
# a guest (selftests/run-all.sh runs it
# with the other host tests). Bad arguments exit 2 with the usage,
# kvreport's and those of tools/kvsuite, which writes the results; a
# kernel with no finished run exits 1. Each target line gives its
# figures; a ratio that two decimals would round to its target is
# printed with as many more as it takes, so that a miss never reads as
# the target. The expected figures are the fixture's arithmetic, worked
# out below.
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
report=$top/tools/kvreport
tmp=$(mktemp -d /tmp/kvreport-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
command -v python3 > /dev/null || ktap_exit_skip "python3 not installed"
ktap_set_plan 15

# row ROW NONE MQ-DEADLINE KYBER BFQ KVBATCH: a deep row, as kvsuite's
# deep() writes it.
row() {
	local name=$1 s i=2

	for s in none mq-deadline kyber bfq kvbatch; do
		printf '{"row": "%s", "sched": "%s", "round": 1, "iops": %d}\n' \
			"$name" "$s" "${!i}"
		i=$((i + 1))
	done
}

# recall SCHED MEAN P99 FOREIGN PREFETCH: one scheduler's kvbench result
# of a recall workload, the fields kvreport reads.
recall() {
	jq -n --arg s "$1" --argjson m "$2" --argjson p "$3" --argjson f "$4" \
		--argjson q "$5" '{($s): {batch_ms: {all: {n: 100, mean: $m,
		p99: $p, p999: $p}}, slowdown: {all: {p99: 2}},
		iops: {foreign: $f, prefetch: $q, write: 0, demand: 100},
		batch_cdf_ms: [1, $m, $p]}}'
}

k=6.99.0-test
d=$tmp/bench/$k
mkdir -p "$d"
echo "$k" > "$d/deep.kernel"
{
	# ssdsteady: kvbatch 970 of none's 1000, exactly the target; 970 of
	# kyber's 950 is 1.02.
	row ssdsteady 1000 900 950 800 970
	# ssdbursty: kvbatch 96996 of none's 100000: 0.96996, which two
	# decimals, and three, would print as 0.97; of mq-deadline's 99000,
	# 0.98.
	row ssdbursty 100000 99000 95000 80000 96996
} | jq -s . > "$d/deep.json"
# cost: kvbatch 20 us a request against mq-deadline's 25: 0.8.
jq -n '[{round: 1, sched: "none", ios: 1000, cpu_us: 10},
	{round: 1, sched: "mq-deadline", ios: 1000, cpu_us: 25},
	{round: 1, sched: "kvbatch", ios: 1000, cpu_us: 20}]' > "$d/cost.json"
# kvssd0 prefetch: the best of none and the peers is kyber's 10 ms mean
# and mq-deadline's 20 ms p99; kvbatch's 7 ms and 17 ms are 0.7 x and
# 0.85 x. Totals (foreign + prefetch + demand): none 2100, kvbatch 2050
# (0.976 x); prefetch 100 of none's 1000 (10%).
{
	recall none 30 60 1000 1000
	recall mq-deadline 12 20 1900 10
	recall kyber 10 40 1000 1000
	recall bfq 40 80 1000 1000
	recall kvbatch 7 17 1850 100
} | jq -s add > "$d/kvssd0-prefetch.json"
# The recording kvsim's floor is computed from: kvsim's null_blk sample,
# as kvrecord writes it. Its 8 recalls under load: kvbatch's 7 ms mean
# against the oracle's 7.7 is 0.91 x.
cp "$top/tools/kvsim/samples/nullb-kvbatch.tracefs" "$d/kvssd0-prefetch.rec"

# exits STATUS PATTERN ARGS...: kvreport ARGS exits STATUS, its stderr
# matching PATTERN (empty: anything).
# shellcheck disable=SC2317 # called through ktap_check
exits() {
	local want=$1 pattern=$2 rc

	shift 2
	"$report" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ "$rc" = "$want" ] && { [ -z "$pattern" ] || grep -q "$pattern" "$tmp/err"; } &&
		return 0
	echo "# exit $rc, wanted $want"
	ktap_diag < "$tmp/err"
	return 1
}

ktap_check "no arguments: exit 2 with the usage" \
	exits 2 '^usage: tools/kvreport '

# tools/kvsuite, which writes what kvreport reads: bad arguments exit 2
# with the usage before anything is installed, built or booted. A -t with
# a leading zero (bash would read 08 as octal, 010 as 8), a -w that lists
# nothing, and -w with --deep (whose boot runs none of the workloads);
# a -t too long for bash's arithmetic, the deep recall row's own workload,
# a workload twice, and -k that is no Debian kernel release of a
# supported series (each refused before the package install).
bad=0
for args in "-t|08" "-t|010" "-t|0" "-t|601" "-t|x" "-w|" "-w| " "-w|bogus" \
	    "--deep|-w|tail" "-w|tail|--deep" "--bogus" "-k" \
	    "-t|99999999999999999999" "-w|deep" "-w|tail tail" "-k|nosuch" \
	    "-k|../../etc" "-k|" "-k|5.10.0-30-amd64" "-k|6.1.0-57-arm64"; do
	IFS='|' read -r -a argv <<< "$args"
	[ "${args: -1}" != "|" ] || argv+=("")
	timeout 20 "$top/tools/kvsuite" "${argv[@]}" > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc != 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: tools/kvsuite ' "$tmp/e"; then
		echo "# not refused as expected (exit $rc): tools/kvsuite ${argv[*]}"
		bad=$((bad + 1))
	fi
done
ktap_check "kvsuite: 20 bad argument lists exit 2 with the usage" test $bad = 0
# tools/kvcompare, which make bench runs in the guests: bad arguments
# exit 2 with the usage before it touches the disk (a block device node
# of no disk stands in for one: the checks come first): among them an
# unknown scheduler in -S (refused before any module is loaded or
# scheduler switched), a malformed tunable setting, settings of one
# scheduler only, and an -o it could not write (refused before the rounds
# run, not after).
if [ "$(id -u)" = 0 ] && mknod "$tmp/blk" b 7 250 2> /dev/null; then
	# shellcheck disable=SC2034 # read by cli_refuses()
	cmp_bad=("-n|3" "-n|x" "-R|0" "-S|kvbatch" "-S|none none" "-S|foo bar"
		 "-S|kvbatch foo" "-o|/nonexistent/x.json" "-o|$tmp" "--bogus"
		 "-S|none kvbatch:" "-S|none kvbatch:max_inflight"
		 "-S|none kvbatch:a=1,,b=2" "-S|kvbatch kvbatch:max_inflight=4"
		 "-S|none foo:a=1" "-S|none:a=1 none:a=1 kvbatch"
		 "-S|none kvbatch:no_such_knob=1"
		 "-S|none kvbatch:write_share_pct=51")
	ktap_check "kvcompare: 18 bad argument lists exit 2 with the usage" \
		cli_refuses '^usage: tools/kvcompare ' cmp_bad -- \
			timeout 20 "$top/tools/kvcompare" -d "$tmp/blk"
else
	ktap_test_skip "kvcompare's bad arguments: no block device node (needs root)"
fi
ktap_check "a kernel with no finished run: exit 1, named" \
	exits 1 'no finished run for 6.99.1-none' "$tmp/bench" 6.99.1-none
# A good kernel before the missing one: nothing written for it either
# (every kernel's results are read before any is written); a kernel
# named twice.
rm -f "$tmp/bench/$k/summary.json"
ktap_check "a good kernel, then one with no run: exit 1, nothing written" \
	sh -c "'$report' '$tmp/bench' '$k' 6.99.1-none > /dev/null 2>&1;
		[ \$? = 1 ] && [ ! -e '$tmp/bench/$k/summary.json' ] &&
		[ ! -e '$tmp/bench/bench.json' ]"
ktap_check "a kernel named twice: exit 2 with the usage" \
	exits 2 '^usage: tools/kvreport ' "$tmp/bench" "$k" "$k"
# Last: the points below read its report.
if make -s --no-print-directory -C "$top" kvsim > "$tmp/build.log" 2>&1; then
	ktap_check "the fixture reports" exits 0 '' "$tmp/bench" "$k"
else
	ktap_diag < "$tmp/build.log"
	ktap_test_fail "kvsim builds, for the floor"
fi

# has LINE: the report has exactly this line.
# shellcheck disable=SC2317 # called through ktap_check
has() {
	grep -qxF -- "$1" "$tmp/out" && return 0
	echo "# wanted: $1"
	grep -F -- "${1%%:*}" "$tmp/out" | sed 's/^/# got:    /'
	return 1
}

ktap_check "ssdsteady: at the target is met" \
	has "met    kvssd0 ssdsteady: IOPS >= 0.97 x none: 0.97 x none, 1.02 x best peer (kyber)"
ktap_check "ssdbursty: a miss that rounds to the target shows more decimals" \
	has "MISSED kvssd0 ssdbursty: IOPS >= 0.97 x none: 0.96996 x none, 0.98 x best peer (mq-deadline)"
ktap_check "cost: CPU time per request against mq-deadline's" \
	has "met    cost: CPU time per request <= mq-deadline's: 0.8 x (20.0 vs 25.0 us)"
ktap_check "kvssd0 prefetch: mean against the best of none and the peers" \
	has "met    kvssd0 prefetch: mean <= 0.7 x best of none and the peers: 0.7 x (7 vs 10 ms)"
ktap_check "kvssd0 prefetch: p99 against the best of none and the peers" \
	has "MISSED kvssd0 prefetch: p99 <= 0.8 x best of none and the peers: 0.85 x (17 vs 20 ms)"
ktap_check "kvssd0 prefetch: total and prefetch IOPS against none's" \
	sh -c "grep -qxF 'met    kvssd0 prefetch: total IOPS >= 0.97 x none: 0.98 x' '$tmp/out' &&
		grep -qxF 'met    kvssd0 prefetch: prefetch >= 10% of none: 10%' '$tmp/out'"
ktap_check "kvsim's floor: each scheduler on the recording, kept" \
	sh -c "grep -qxF 'fifo 18.16 / 34.72  kvbatch 21.51 / 54.69  oracle 7.7 / 12.6' '$tmp/out' &&
		[ -s '$d/kvssd0-floor.json' ]"
ktap_check "kvssd0 prefetch: mean against kvsim's floor" \
	has "met    kvssd0 prefetch: mean <= 1.3 x kvsim's floor: 0.91 x (7 vs 7.7 ms)"

ktap_finished
