#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvreport_cli.sh: tools/kvreport on the host, on fixture results made
# here (a deep boot's deep.json and cost.json for one kernel), without a
# guest (selftests/run-all.sh runs it with the other host tests). Bad
# arguments exit 2 with the usage, kvreport's and those of tools/kvsuite,
# which writes the results; a kernel with no finished run exits 1.
# Each deep row's target line names the best peer on the means and gives
# kvbatch's ratio to it in every round (lowest and highest): a mean that
# one round carries shows as such. A ratio that two decimals would round
# to 1.0 is printed with three, so that a miss never reads "1.0 x". The
# expected figures are the fixture's arithmetic, worked out below.
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
ktap_set_plan 11

# row ROUND ROW NONE MQ-DEADLINE KYBER BFQ KVBATCH: one round of a deep
# row, as kvsuite's deep() writes it.
row() {
	local round=$1 name=$2 s i=3

	for s in none mq-deadline kyber bfq kvbatch; do
		printf '{"row": "%s", "sched": "%s", "round": %d, "iops": %d}\n' \
			"$name" "$s" "$round" "${!i}"
		i=$((i + 1))
	done
}

k=6.99.0-test
d=$tmp/bench/$k
mkdir -p "$d"
echo "$k" > "$d/deep.kernel"
{
	# steady: means mq-deadline 290/3, kyber 280/3, kvbatch 100: the
	# best peer is mq-deadline (97 rounded), kvbatch 100/97 = 1.03; per
	# round 90/100, 110/90 and 100/100: 0.9 to 1.22.
	row 1 steady 200 100 80 50 90
	row 2 steady 200 90 100 50 110
	row 3 steady 200 100 100 50 100
	# bursty: kvbatch 996 against kyber's 1000 in every round: 0.996,
	# which two decimals would print as 1.0.
	row 1 bursty 2000 900 1000 500 996
	row 2 bursty 2000 900 1000 500 996
	row 3 bursty 2000 900 1000 500 996
	# nvme: kvbatch ahead of bfq, the best peer, in rounds 1 and 3 and
	# behind it in round 2 (150/200 = 0.75), 1.0 exactly on the means.
	row 1 nvme 400 100 100 200 250
	row 2 nvme 400 100 100 200 150
	row 3 nvme 400 100 100 200 200
} | jq -s . > "$d/deep.json"
# cost: kvbatch against mq-deadline 80/100 and 120/100; means 1.0.
jq -n '[{round: 1, sched: "none", iops: 300},
	{round: 1, sched: "mq-deadline", iops: 100},
	{round: 1, sched: "kvbatch", iops: 80},
	{round: 2, sched: "none", iops: 300},
	{round: 2, sched: "mq-deadline", iops: 100},
	{round: 2, sched: "kvbatch", iops: 120}]' > "$d/cost.json"

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
# scheduler switched) and an -o it could not write (refused before the
# rounds run, not after).
if [ "$(id -u)" = 0 ] && mknod "$tmp/blk" b 7 250 2> /dev/null; then
	# shellcheck disable=SC2034 # read by cli_refuses()
	cmp_bad=("-n|3" "-n|x" "-R|0" "-S|kvbatch" "-S|none none" "-S|foo bar"
		 "-S|kvbatch foo" "-o|/nonexistent/x.json" "-o|$tmp" "--bogus")
	ktap_check "kvcompare: 10 bad argument lists exit 2 with the usage" \
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
ktap_check "the fixture reports" exits 0 '' "$tmp/bench" "$k"

# has LINE: the report has exactly this line.
# shellcheck disable=SC2317 # called through ktap_check
has() {
	grep -qxF -- "$1" "$tmp/out" && return 0
	echo "# wanted: $1"
	grep -F -- "${1%%:*}" "$tmp/out" | sed 's/^/# got:    /'
	return 1
}

ktap_check "steady: best peer named, per-round spread of the ratio" \
	has "met    deep steady: IOPS >= best peer: 1.03 x best peer (mq-deadline), rounds 0.9-1.22, 0.5 x none"
ktap_check "bursty: a miss that rounds to 1.0 shows three decimals" \
	has "MISSED deep bursty: IOPS >= best peer: 0.996 x best peer (kyber), rounds 0.996-0.996, 0.5 x none"
ktap_check "nvme: a tie on the means is met, its rounds shown" \
	has "met    deep nvme: IOPS >= best peer: 1.0 x best peer (bfq), rounds 0.75-1.25, 0.5 x none"
ktap_check "cost: the per-round spread against mq-deadline" \
	has "met    cost: no-delay IOPS >= 1.0 x mq-deadline: 1.0 x, rounds 0.8-1.2"

ktap_finished
