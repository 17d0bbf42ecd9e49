#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvsim_cli.sh: kvsim's command line and the trace converter, on the host
# (selftests/run-all.sh runs it with the unit tests). Bad arguments exit 2
# with the usage on stderr and write nothing; --dump-trace output replays
# to the same results; the oracle and a 256-die device run; kvtrace2sim turns the recorded samples in
# tools/kvsim/samples into exactly the committed traces, which kvsim runs;
# and it reads 6.12's block events (with their ioprio column) from lines
# written to that TP_printk format here. Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
kvsim=$top/tools/kvsim/kvsim
conv=$top/tools/kvsim/kvtrace2sim
samples=$top/tools/kvsim/samples
tmp=$(mktemp -d /tmp/kvsim-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
if ! make -s --no-print-directory -C "$top" kvsim > "$tmp/build.log" 2>&1; then
	ktap_diag < "$tmp/build.log"
	ktap_test_fail "kvsim builds"
	ktap_finished
fi

# --- bad arguments --------------------------------------------------------
bad=0
while read -r args; do
	rm -f "$tmp/out.html"
	# shellcheck disable=SC2086
	"$kvsim" $args --html "$tmp/out.html" > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || [ -e "$tmp/out.html" ] ||
	   ! grep -q '^usage: kvsim' "$tmp/e"; then
		echo "'$args': exit $rc, stdout $(wc -c < "$tmp/o") bytes, html $([ -e "$tmp/out.html" ] && echo written || echo none): $(head -1 "$tmp/e")" | ktap_diag
		bad=1
	fi
done <<'EOF'
--sched fifo
--trace tail --random 5
--seed 3 --trace tail
--trace tail --sched fifo,nope
--trace tail --sched ,
--trace tail --dies 0
--trace tail --dies 2000
--trace tail --queue-depth x
--trace tail --set nope=1
--trace tail --set write_batch=0
--trace tail --set batch_key=1
--trace tail --tick 0
--trace tail --tick 3parsecs
--trace tail extra
--trace tail --bogus
--random 0
--list --trace tail
--trace tail --tick 10us
--trace tail --trace nosuch
--trace tail --dump-trace
--list
EOF
# An --html it cannot write, found before the run: after it, the run and
# its report would be lost.
"$kvsim" --trace tail --html "$tmp/nosuch/out.html" > "$tmp/o" 2> "$tmp/e"
rc=$?
if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: kvsim' "$tmp/e"; then
	echo "'--html $tmp/nosuch/out.html': exit $rc, stdout $(wc -c < "$tmp/o") bytes" | ktap_diag
	bad=1
fi
ktap_check "bad arguments: exit 2, usage on stderr, nothing written" test $bad -eq 0

"$kvsim" --trace "$tmp/missing" > "$tmp/o" 2> "$tmp/e"
ktap_check "a missing trace file: exit 1 with the reason" \
	sh -c "[ $? -eq 1 ] && grep -q 'No such file' '$tmp/e'"
printf '0 a normal R 1us die=0\n0 b normal Q 1us die=0\n' > "$tmp/bad.trace"
"$kvsim" --trace "$tmp/bad.trace" > "$tmp/o" 2> "$tmp/e"
ktap_check "an invalid trace: exit 1 naming the line" \
	sh -c "[ $? -eq 1 ] && grep -q 'bad.trace:2: bad op' '$tmp/e'"

ktap_check "--list names the three built-in traces" \
	sh -c "'$kvsim' --list | grep -cE '^  (tail|prefetch|writes) ' | grep -qx 3"
"$kvsim" --help > "$tmp/help" 2>&1
ktap_check "--help exits 0" \
	sh -c "[ $? -eq 0 ] && grep -q -- '--html FILE' '$tmp/help'"

# --- dumps replay to the same results -------------------------------------
bad=0
for t in tail prefetch writes; do
	# Each run must succeed and report something: two failed runs would
	# compare equal.
	if ! "$kvsim" --trace $t --dump-trace > "$tmp/$t.trace" ||
	   ! "$kvsim" --trace $t --timeline > "$tmp/a.full" ||
	   ! "$kvsim" --trace "$tmp/$t.trace" --timeline > "$tmp/b.full"; then
		echo "$t: a kvsim run failed" | ktap_diag
		bad=1
		continue
	fi
	tail -n +2 "$tmp/a.full" > "$tmp/a"
	tail -n +2 "$tmp/b.full" > "$tmp/b"
	[ -s "$tmp/a" ] || { echo "$t: an empty timeline" | ktap_diag; bad=1; }
	cmp -s "$tmp/a" "$tmp/b" || { diff "$tmp/a" "$tmp/b" | head -5 | ktap_diag; bad=1; }
done
ktap_check "each built-in, dumped with --dump-trace, replays to the same report" test $bad -eq 0

"$kvsim" --random 3000 --seed 7 --dies 8 --set max_inflight=6 > "$tmp/o" 2>&1
ktap_check "--random 3000 on 8 dies with max_inflight: same work, each dispatched once" \
	grep -q '^check: every scheduler did the same total work' "$tmp/o"

"$kvsim" --trace tail --sched oracle > "$tmp/o" 2>&1
ktap_check "--sched oracle: the oracle alone runs and checks" \
	sh -c "grep -q '^batch .*| *oracle  *ahead\$' '$tmp/o' && grep -q '^check: every scheduler' '$tmp/o'"
"$kvsim" --trace tail --sched fifo,oracle --html "$tmp/fo.html" > "$tmp/o" 2>&1
ktap_check "--sched fifo,oracle: both in the report and the page" \
	sh -c "grep -q '^batch .*| *fifo  *ahead | *oracle  *ahead\$' '$tmp/o' && grep -q '\"name\":\"oracle\"' '$tmp/fo.html'"

# 200 recalls of one read, each alone on its die, the i-th served for i
# us: batch times 1..200 us, mean 100.5, p99 (nearest rank) the 198th.
awk 'BEGIN { print "dies 200"; for (i = 1; i <= 200; i++) printf "0 r%d demand R %dus die=%d\n", i, i, i - 1 }' > "$tmp/p99.trace"
"$kvsim" --trace "$tmp/p99.trace" --sched fifo,oracle > "$tmp/o" 2>&1
ktap_check "the report's demand mean and p99 (nearest rank) of 1..200 us" \
	sh -c "grep -qE '^mean demand batch time .*\| +100\.500 +\| +100\.500\$' '$tmp/o' &&
	       grep -qE '^p99 demand batch time .*\| +198 +\| +198\$' '$tmp/o'"

"$kvsim" --random 2000 --seed 3 --dies 256 > "$tmp/o" 2>&1
ktap_check "--dies 256: a random trace on a large SSD's dies runs and checks" \
	sh -c "grep -q '^device: 256 dies' '$tmp/o' && grep -q '^check: every scheduler did the same total work' '$tmp/o'"

# --- the converter on the recorded samples -------------------------------
ktap_check "kvtrace2sim: the kvbatch tracefs sample converts to the committed trace" \
	sh -c "'$conv' --title 'null_blk (4 tags, 1 ms) under kvbatch, recorded from kvbatch and block tracepoints' \
		'$samples/nullb-kvbatch.tracefs' 2>/dev/null | cmp -s - '$samples/nullb-kvbatch.trace'"
ktap_check "kvtrace2sim: the blkparse sample converts to the committed trace" \
	sh -c "'$conv' --tier 166=demand --tier 168=prefetch --tier 169=write \
		--title 'null_blk (4 tags, 1 ms) under mq-deadline, recorded with blktrace' \
		'$samples/nullb-mq-deadline.blkparse' 2>/dev/null | cmp -s - '$samples/nullb-mq-deadline.trace'"
for s in nullb-kvbatch nullb-mq-deadline; do
	ktap_check "kvsim runs the converted sample $s" \
		sh -c "'$kvsim' --trace '$samples/$s.trace' --html '$tmp/$s.html' | grep -q '^check: every scheduler'"
done
# kvtrace2sim's bad arguments: the usage and exit 2, nothing written;
# among them a --dev not MAJ,MIN (else it would read the whole input and
# end "no complete request") and a depth or chunk kvsim would not read
# (else a trace kvsim refuses).
# shellcheck disable=SC2034 # read by cli_refuses()
conv_bad=("--dev|nonsense" "--dev|7" "--dev|7,0,1" "--queue-depth|0"
	  "--queue-depth|99999999999999999999" "--chunk|99999999999"
	  "--dies|1025" "--tier|7=bogus" "--bogus" "--service|bogus"
	  "--read-us|100" "--service|1ms|--seed|7" "--service|model|--cv-pct|101"
	  "--service|model|--page-kb|24" "--service|model|--time-scale|0"
	  "--service|model|--read-us|30000" "--service|model|--seed|x")
ktap_check "kvtrace2sim: ${#conv_bad[@]} bad argument lists exit 2 with the usage, write nothing" \
	cli_refuses '^usage: kvtrace2sim' conv_bad -- \
		"$conv" "$samples/nullb-kvbatch.tracefs"
# kvrecord's bad arguments, refused before it touches tracefs (a bad -b
# found later would leave the trace cleared and switched off).
# shellcheck disable=SC2034 # read by cli_refuses()
rec_bad=("-b|abc|--|true" "-b|0|--|true" "-b|32|--|true"
	 "-b|99999999999|--|true" "-d|../x|--|true")
ktap_check "kvrecord: 5 bad argument lists exit 2 with the usage, before tracefs" \
	cli_refuses '^usage: kvrecord' rec_bad -- \
		"$top/tools/kvsim/kvrecord" -d nullb0 -o "$tmp/rec.txt"
# The kvbatch sample's batches are the recall's: 8 batches of 8 demand reads.
ktap_check "kvtrace2sim: kvbatch's batches from kvbatch_dispatch (8 x 8 demand reads)" \
	sh -c "awk '\$3 == \"demand\" { n[\$2]++ } END { for (b in n) if (n[b] != 8) exit 1; exit length(n) != 8 }' '$samples/nullb-kvbatch.trace'"

# 6.12's block events print the ioprio (class,hint,level): written here to
# that TP_printk format, not recorded.
cat > "$tmp/612.txt" <<'EOF'
             fio-201     [001] d..1.   100.000100: block_rq_insert: 259,0 R 4096 () 8 + 8 rt,0,0 [fio]
             fio-202     [001] d..1.   100.000110: block_rq_insert: 259,0 R 4096 () 16 + 8 be,3,4 [fio]
             fio-203     [001] d..1.   100.000120: block_rq_insert: 259,0 R 4096 () 24 + 8 idle,0,7 [fio]
     kworker/1:1-40      [001] d..1.   100.000130: block_rq_insert: 259,0 W 4096 () 32 + 8 be,0,4 [kworker/1:1]
             fio-204     [001] d..1.   100.000140: block_rq_insert: 259,0 RS 4096 () 40 + 8 be,0,4 [fio]
             fio-201     [001] d..1.   100.000200: block_rq_issue: 259,0 R 4096 () 8 + 8 rt,0,0 [fio]
             fio-202     [001] d..1.   100.000210: block_rq_issue: 259,0 R 4096 () 16 + 8 be,3,4 [fio]
             fio-203     [001] d..1.   100.000220: block_rq_issue: 259,0 R 4096 () 24 + 8 idle,0,7 [fio]
     kworker/1:1-40      [001] d..1.   100.000230: block_rq_issue: 259,0 W 4096 () 32 + 8 be,0,4 [kworker/1:1]
             fio-204     [001] d..1.   100.000240: block_rq_issue: 259,0 RS 4096 () 40 + 8 be,0,4 [fio]
          <idle>-0       [001] d.h1.   100.000300: block_rq_complete: 259,0 R () 8 + 8 rt,0,0 [0]
          <idle>-0       [001] d.h1.   100.000410: block_rq_complete: 259,0 R () 16 + 8 be,3,4 [0]
          <idle>-0       [001] d.h1.   100.000520: block_rq_complete: 259,0 R () 24 + 8 idle,0,7 [0]
          <idle>-0       [001] d.h1.   100.000630: block_rq_complete: 259,0 W () 32 + 8 be,0,4 [0]
          <idle>-0       [001] d.h1.   100.000740: block_rq_complete: 259,0 RS () 40 + 8 be,0,4 [0]
EOF
"$conv" "$tmp/612.txt" 2> /dev/null | grep -v '^#\|^title\|^note\|^dies\|^queue\|^chunk' > "$tmp/612.out"
cat > "$tmp/612.want" <<'EOF'
0us d1 demand R 100us sector=8 size=4096
10us d2 hint R 200us sector=16 size=4096
20us p1 prefetch R 300us sector=24 size=4096
30us w1 write W 400us sector=32 size=4096
40us n1 normal R 500us sector=40 size=4096
EOF
if cmp -s "$tmp/612.out" "$tmp/612.want"; then
	ktap_test_pass "kvtrace2sim: 6.12 block events give tiers from the ioprio column"
else
	diff "$tmp/612.want" "$tmp/612.out" | ktap_diag
	ktap_test_fail "kvtrace2sim: 6.12 block events give tiers from the ioprio column"
fi

# --service model: the kvssd parameters become the trace's model line,
# every service "model"; kvsim draws them and runs every scheduler on the
# draws, the same under each.
"$conv" --service model --seed 7 --dies 64 --chunk 128 "$tmp/612.txt" \
	> "$tmp/612m.trace" 2> /dev/null
"$kvsim" --trace "$tmp/612m.trace" --dump-trace > "$tmp/612m.dump" 2>&1
ktap_check "kvtrace2sim --service model: kvssd's model in the trace, kvsim draws from it" \
	sh -c "grep -qx 'model read=4000us program=24000us cv=30 page=32 seed=7' '$tmp/612m.trace' &&
	       [ \$(grep -c ' model sector=' '$tmp/612m.trace') = 5 ] &&
	       [ \$(grep -c ' model ' '$tmp/612m.dump') = 0 ] &&
	       '$kvsim' --trace '$tmp/612m.trace' --sched fifo,oracle | grep -q '^check: every scheduler'"
ktap_check "kvtrace2sim --help exits 0" sh -c "'$conv' --help | grep -q -- '--service TIME|model'"

ktap_finished
