#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvstat_cli.sh: tools/kvbatch-stat on the host, without a guest
# (selftests/run-all.sh runs it with kvsim's host tests). The tool reads
# fixture directories made here (KVBATCH_SYSFS, KVBATCH_DEBUGFS): fake
# scheduler files and debugfs stats, histogram and depth files of two
# disks. Bad arguments exit 2 with the usage and print nothing; no kvbatch
# disk, no debugfs, or a missing key exit 1 naming what is missing;
# unknown lines are ignored, but a reason or tier that kvbatch does not
# have today gets its column and series from its stats lines (the tool
# takes the names from there); the first report shows the counts since the
# statistics began and later ones the differences, with p50 and p99 from
# the histogram's differences, and a reset (counters going back) starts
# over; --prometheus output passes promtool check metrics (a SKIP without
# promtool), parses with prometheus_client, and its values are the
# files'. Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
stat=$top/tools/kvbatch-stat
tmp=$(mktemp -d /tmp/kvstat-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
# shellcheck source=tools/lib/kvbatch.sh
source "$top/tools/lib/kvbatch.sh"

ktap_print_header
# The text report needs python3 alone, --prometheus prometheus_client.
py=$(kvb_python) || py=
if [ -z "$py" ]; then
	command -v python3 > /dev/null || ktap_exit_skip "python3 not installed"
	pyreason="no python3 with prometheus_client (python3-prometheus-client)"
fi
pyt=${py:-python3}

export KVBATCH_SYSFS=$tmp/sys KVBATCH_DEBUGFS=$tmp/debug

# The lines of kv-debugfs.c's stats file, in its order.
keys="inserted merged bio_back_merges bio_front_merges dispatched requeued
completed bypassed promoted queued inflight reason_expired reason_tail
reason_normal reason_prefetch reason_write_burst reason_share"
for t in demand normal prefetch; do
	for k in batches_opened batches_closed batch_us_mean batch_us_max \
		batch_rqs_mean batch_bytes_mean batch_us_p50 batch_us_p90 \
		batch_us_p99 overflow_rqs; do
		keys="$keys ${t}_$k"
	done
done
keys="$keys dispatched_demand dispatched_normal dispatched_prefetch
dispatched_write writes_deferred write_bursts throttled direct
batches_live batches_live_max"

# disk NAME SCHED: a disk in the fake sysfs with SCHED selected.
disk() {
	mkdir -p "$tmp/sys/block/$1/queue"
	case $2 in
	kvbatch) echo "none mq-deadline [kvbatch]" ;;
	*) echo "[$2] none kvbatch" ;;
	esac > "$tmp/sys/block/$1/queue/scheduler"
}

# snap DISK MAX_INFLIGHT HISTOGRAM NAME=VALUE...: write DISK's stats (every
# key, 0 unless given), histogram (HISTOGRAM's lines, "tier bound count"
# separated by ";") and depth files, each replaced by a rename.
snap() {
	local d=$tmp/debug/block/$1/sched k kv v

	mkdir -p "$d"
	printf 'nr_requests 1024\nnr_requests_too_small 0\nasync_depth 768\nwrite_defer_max 128\nmax_inflight %s\nauto_limit 4\ninflight 0\n' \
		"$2" > "$d/depth.new"
	tr ';' '\n' <<< "$3" | sed '/^$/d' > "$d/histogram.new"
	shift 3
	for k in $keys; do
		v=0
		for kv in "$@"; do
			[ "${kv%%=*}" = "$k" ] && v=${kv#*=}
		done
		echo "$k $v"
	done > "$d/stats.new"
	for k in stats histogram depth; do
		mv "$d/$k.new" "$d/$k"
	done
}

# The snapshots. A: since the statistics began. B, two seconds later:
# B - A holds 50 demand batches (2 of 4096 us, 40 of 8192, 8 of 65536),
# so p50 8192 and p99 65536, where all of B would give 4096 and 262144.
# C: after a reset (counters back near zero).
hist_a="demand 1024 50;demand 4096 47;demand 262144 3;normal 2048 40;prefetch 8192 8"
hist_b="demand 1024 50;demand 4096 49;demand 8192 40;demand 65536 8;demand 262144 3;normal 2048 60;prefetch 8192 8"
# A and B's counters: NAME, A, B ("-": not in that snapshot; a key not
# here is 0 in both).
counters_ab="
inserted                   1000    1500
merged                     10      12
bio_back_merges            7       9
bio_front_merges           3       3
dispatched                 990     1488
requeued                   1       1
completed                  985     1484
bypassed                   2       2
promoted                   4       5
queued                     3       0
inflight                   2       4
reason_expired             5       5
reason_tail                400     550
reason_normal              300     400
reason_prefetch            80      100
reason_write_burst         190     254
reason_share               13      19
demand_batches_opened      101     151
demand_batches_closed      100     150
normal_batches_opened      40      60
normal_batches_closed      40      60
prefetch_batches_opened    9       9
prefetch_batches_closed    8       8
demand_batch_us_p50        1024    -
demand_batch_us_p99        262144  -
prefetch_overflow_rqs      6       6
dispatched_demand          405     555
dispatched_normal          300     400
dispatched_prefetch        90      110
dispatched_write           190     254
writes_deferred            200     270
write_bursts               12      16
throttled                  77      88
direct                     600     900
batches_live               3       4
batches_live_max           9       9
"
# counters COLUMN: the NAME=VALUE arguments of snap for column COLUMN (1:
# A, 2: B) of counters_ab.
counters() {
	awk -v c=$(($1 + 1)) 'NF && $c != "-" { print $1 "=" $c }' <<< "$counters_ab"
}
mapfile -t snap_a < <(counters 1)
mapfile -t snap_b < <(counters 2)
hist_c="demand 512 2"
snap_c=(inserted=20 completed=20 dispatched=20 reason_tail=20
	demand_batches_opened=2 demand_batches_closed=2 dispatched_demand=20)

disk nullb0 kvbatch
disk nvme0n1 kvbatch
disk sda mq-deadline
snap nullb0 "4 (auto)" "$hist_a" "${snap_a[@]}"
snap nvme0n1 "16" "normal 1024 5" inserted=5 completed=5 \
	normal_batches_opened=5 normal_batches_closed=5

# fields FILE DISK [N]: the fields of DISK's line in FILE's N-th report.
fields() {
	awk -v d="$2" -v n="${3:-1}" '$1 == "Device" { r++ } r == n && $1 == d' "$1" |
		tr -s ' ' | sed 's/ $//'
}

# check_fields DESC FILE DISK N WANT: the check that DISK's line in FILE's
# N-th report is WANT.
check_fields() {
	ktap_check "$1" test "$(fields "$2" "$3" "$4")" = "$5"
}
# nvme0n1's line in every report: no batch, max_inflight fixed at 16.
want_nvme="nvme0n1 0 0 0 0 0 0 0 0 0 0 0 0 16 fixed 0 0"

# --- bad arguments --------------------------------------------------------
bad=0
while read -r args; do
	# An interval taken for valid reports forever: the timeout ends it.
	# shellcheck disable=SC2086
	timeout 10 "$pyt" "$stat" $args > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: kvbatch-stat' "$tmp/e"; then
		echo "'$args': exit $rc, stdout $(wc -c < "$tmp/o") bytes: $(tail -1 "$tmp/e")" | ktap_diag
		bad=1
	fi
done <<'EOF'
x
0
-1
-0.5
nan
inf
1e-9
0.05
1_0
1 0
1 1e1
1 -3
1 x
1 2.5
1 2 3
86401
10000000000000000000 2
-d nope
-d sda
-d nullb0 -d sda
-d ../sda
-d
--bogus
EOF
ktap_check "bad arguments: exit 2, usage on stderr, nothing on stdout" test $bad -eq 0
"$pyt" "$stat" -d sda > /dev/null 2> "$tmp/e"
ktap_check "a disk without kvbatch: the message names its scheduler" \
	grep -q 'sda: kvbatch is not selected (its scheduler is mq-deadline)' "$tmp/e"
"$pyt" "$stat" --help > "$tmp/help" 2>&1
ktap_check "--help exits 0 and shows the usage" \
	sh -c "[ $? -eq 0 ] && grep -q '^usage: kvbatch-stat \[-d DEV ...\] \[--prometheus\] \[interval \[count\]\]' '$tmp/help'"

# --- what is missing -----------------------------------------------------
mkdir -p "$tmp/nosys/block/sda/queue"
cp "$tmp/sys/block/sda/queue/scheduler" "$tmp/nosys/block/sda/queue/"
KVBATCH_SYSFS=$tmp/nosys "$pyt" "$stat" > "$tmp/o" 2> "$tmp/e"
rc=$?
ktap_check "no kvbatch disk: exit 1, says so" \
	sh -c "[ $rc -eq 1 ] && [ ! -s '$tmp/o' ] && grep -q 'no disk has kvbatch selected' '$tmp/e'"
mkdir -p "$tmp/nodebug"
KVBATCH_DEBUGFS=$tmp/nodebug "$pyt" "$stat" > "$tmp/o" 2> "$tmp/e"
rc=$?
ktap_check "no debugfs: exit 1, names the mount point" \
	sh -c "[ $rc -eq 1 ] && grep -q 'debugfs is not mounted at $tmp/nodebug' '$tmp/e'"
cp -r "$tmp/debug" "$tmp/debug2"
sed -i '/^throttled /d' "$tmp/debug2/block/nullb0/sched/stats"
KVBATCH_DEBUGFS=$tmp/debug2 "$pyt" "$stat" > "$tmp/o" 2> "$tmp/e"
rc=$?
ktap_check "a missing key: exit 1 naming the file and the key" \
	sh -c "[ $rc -eq 1 ] && grep -q '$tmp/debug2/block/nullb0/sched/stats: no .throttled. line' '$tmp/e'"
sed -i '/^max_inflight /d' "$tmp/debug2/block/nvme0n1/sched/depth"
KVBATCH_DEBUGFS=$tmp/debug2 "$pyt" "$stat" -d nvme0n1 > "$tmp/o" 2> "$tmp/e"
rc=$?
ktap_check "a missing depth key: exit 1 naming the file and the key" \
	sh -c "[ $rc -eq 1 ] && grep -q 'nvme0n1/sched/depth: no .max_inflight. line' '$tmp/e'"
rm -rf "$tmp/debug2"

# --- the first report: since the statistics began -------------------------
cp -r "$tmp/debug" "$tmp/debug3"
{
	echo "a_future_counter 17"
	echo "a line of another shape"
	echo
} >> "$tmp/debug3/block/nullb0/sched/stats"
echo "future_tier 1024 5" >> "$tmp/debug3/block/nullb0/sched/histogram"
echo "auto_something new" >> "$tmp/debug3/block/nullb0/sched/depth"
want_a="nullb0 100 1024 262144 5 400 300 80 190 13 200 190 77 4 auto 3 2"
KVBATCH_DEBUGFS=$tmp/debug3 "$pyt" "$stat" -d nullb0 > "$tmp/o" 2> "$tmp/e"
ktap_check "unknown lines and tiers are ignored" \
	test "$(fields "$tmp/o" nullb0)" = "$want_a" -a ! -s "$tmp/e"
rm -rf "$tmp/debug3"

# new_names DIR: a dispatch reason and a batch tier that kvbatch does not
# have, in nullb0's stats and histogram under DIR, where kv-debugfs.c
# would print them: the tool takes the names from these lines.
new_names() {
	local d=$1/block/nullb0/sched

	sed -i -e '/^reason_share /a reason_idle_slice 7' \
		-e '/^prefetch_overflow_rqs /a zone_batches_opened 4\nzone_batches_closed 4\nzone_overflow_rqs 1' \
		-e '/^dispatched_prefetch /a dispatched_zone 3' "$d/stats"
	echo "zone 2048 4" >> "$d/histogram"
}
cp -r "$tmp/debug" "$tmp/debug4"
new_names "$tmp/debug4"
KVBATCH_DEBUGFS=$tmp/debug4 "$pyt" "$stat" -d nullb0 > "$tmp/o" 2> "$tmp/e"
ktap_check "a new reason in the stats file: a column after the others" \
	test "$(head -1 "$tmp/o" | tr -s ' ' | cut -d' ' -f10-12)" = "share idle_slice deferred" \
	-a "$(fields "$tmp/o" nullb0)" = "${want_a/ 13 / 13 7 }" -a ! -s "$tmp/e"
rm -rf "$tmp/debug4"

"$pyt" "$stat" > "$tmp/o" 2> "$tmp/e"
rc=$?
sed 's/^/one report: /' "$tmp/o" | ktap_diag
ktap_check "one report: a header, then the kvbatch disks in name order" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(awk '{ print \$1 }' '$tmp/o' | tr '\n' ' ')\" = 'Device nullb0 nvme0n1 ' ]"
check_fields "first report: the counts since the start, p50/p99 of the whole histogram" \
	"$tmp/o" nullb0 1 "$want_a"
check_fields "first report: a fixed max_inflight" "$tmp/o" nvme0n1 1 "$want_nvme"

# --- later reports: the differences ---------------------------------------
# Three reports two seconds apart; B replaces A once the first report is
# out, C once the second is.
"$pyt" "$stat" 2 3 > "$tmp/iv" 2> "$tmp/e" &
pid=$!
# reports N: wait (up to 20 s) for N reports in the output.
reports() {
	for _ in $(seq 200); do
		[ "$(grep -c '^nvme0n1 ' "$tmp/iv")" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
reports 1 && snap nullb0 6 "$hist_b" "${snap_b[@]}"
reports 2 && snap nullb0 "4 (auto)" "$hist_c" "${snap_c[@]}"
wait $pid
rc=$?
sed 's/^/interval: /' "$tmp/iv" | ktap_diag
ktap_check "interval 2, count 3: three reports, exit 0" \
	sh -c "[ $rc -eq 0 ] && [ \"\$(grep -c '^Device ' '$tmp/iv')\" = 3 ]"
check_fields "second report: the differences, p50/p99 from the histogram's differences (8192, 65536)" \
	"$tmp/iv" nullb0 2 "nullb0 50 8192 65536 0 150 100 20 64 6 70 64 11 6 fixed 0 4"
check_fields "an interval without batches: p50 and p99 are 0" \
	"$tmp/iv" nvme0n1 2 "$want_nvme"
check_fields "after a reset: the counts since the reset" \
	"$tmp/iv" nullb0 3 "nullb0 2 512 512 0 20 0 0 0 0 0 0 0 4 auto 0 0"

# --- --prometheus ----------------------------------------------------------
snap nullb0 "4 (auto)" "$hist_a" "${snap_a[@]}"
if [ -z "$py" ]; then
	for c in "--prometheus exits 0" "promtool check metrics" \
		"the exposition parses and its values are the files'"; do
		ktap_test_skip "$c" "$pyreason"
	done
	ktap_finished
fi
"$py" "$stat" --prometheus > "$tmp/prom" 2> "$tmp/e"
rc=$?
ktap_check "--prometheus exits 0" test $rc -eq 0 -a -s "$tmp/prom"
if command -v promtool > /dev/null; then
	if promtool check metrics < "$tmp/prom" > "$tmp/lint" 2>&1; then
		ktap_test_pass "promtool check metrics"
	else
		ktap_diag < "$tmp/lint"
		ktap_test_fail "promtool check metrics"
	fi
else
	ktap_test_skip "promtool check metrics" "promtool not installed (Debian package prometheus); the parser check below still runs"
fi

# Every sample against the fixture's files (kvstat-check.py, with
# prometheus_client's parser): the check that remains without promtool.
"$py" "$top/selftests/kvstat-check.py" "$tmp/prom" "$tmp/debug/block" \
	nullb0 nvme0n1 > "$tmp/check" 2>&1
rc=$?
ktap_diag < "$tmp/check"
ktap_check "the exposition parses (prometheus_client) and its values are the files'" \
	test $rc -eq 0

new_names "$tmp/debug"
"$py" "$stat" -d nullb0 --prometheus > "$tmp/prom" 2> "$tmp/e"
ktap_check "a new reason and tier: their series, with the files' values" \
	sh -c "grep -qx 'kvbatch_dispatches_total{device=\"nullb0\",reason=\"idle_slice\"} 7.0' '$tmp/prom' &&
	grep -qx 'kvbatch_batches_opened_total{device=\"nullb0\",tier=\"zone\"} 4.0' '$tmp/prom' &&
	grep -qx 'kvbatch_overflow_requests_total{device=\"nullb0\",tier=\"zone\"} 1.0' '$tmp/prom' &&
	grep -qx 'kvbatch_tier_requests_dispatched_total{device=\"nullb0\",tier=\"zone\"} 3.0' '$tmp/prom' &&
	grep -qx 'kvbatch_batch_duration_seconds_bucket{device=\"nullb0\",le=\"+Inf\",tier=\"zone\"} 4.0' '$tmp/prom'"

ktap_finished
