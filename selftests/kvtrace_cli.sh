#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvtrace_cli.sh: kvbench --trace and kvtracegen on the host, no device
# (selftests/run-all.sh runs it with the unit tests). kvtracegen is
# deterministic, writes the trace format kvbench reads, and refuses bad
# arguments with exit 2 and its usage; kvbench refuses bad --trace
# options, and demand options that contradict each other or ask for no
# demand, with exit 2 and its usage, and a bad trace with exit 1 naming
# the file and line, before it opens the device; and a replay on a
# regular file (O_DIRECT) reports the hits, recalls and new blocks the
# tier model gives for the unit test's five-request trace. A file has no
# scheduler, so no timing is checked. Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
kvbench=$top/build/tools/kvbench
gen=$top/tools/kvbench/kvtracegen
# A file system that takes O_DIRECT (tmpfs may not): the build directory.
mkdir -p "$top/build"
tmp=$(mktemp -d "$top/build/kvtrace-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
if ! make -s --no-print-directory -C "$top" tools > "$tmp/build.log" 2>&1; then
	ktap_diag < "$tmp/build.log"
	ktap_test_fail "kvbench builds"
	ktap_finished
fi

# --- kvtracegen -------------------------------------------------------------
"$gen" --seed 3 --conversations 5 > "$tmp/a.jsonl"
"$gen" --seed 3 --conversations 5 > "$tmp/b.jsonl"
"$gen" --seed 4 --conversations 5 > "$tmp/c.jsonl"
ktap_check "kvtracegen: the same seed gives the same trace, another seed another" \
	sh -c "cmp -s '$tmp/a.jsonl' '$tmp/b.jsonl' && ! cmp -s '$tmp/a.jsonl' '$tmp/c.jsonl'"

# Every line has the four members; timestamps never decrease; every prompt
# starts with the system prompt's blocks (1024 tokens: ids 0 and 1); each
# turn after a conversation's first starts with an earlier request's ids.
check_gen() {
	python3 - "$1" <<'EOF'
import json, sys
last, seen, prefixes = 0, [], set()
for n, line in enumerate(open(sys.argv[1]), 1):
    r = json.loads(line)
    assert set(r) == {"timestamp", "input_length", "output_length", "hash_ids"}, n
    assert r["timestamp"] >= last, n
    last = r["timestamp"]
    ids = r["hash_ids"]
    assert len(ids) == -(-r["input_length"] // 512), n
    assert ids[:2] == [0, 1], n
    # A prefix of three ids seen before reaches past the system prompt:
    # the same conversation's earlier turn.
    if len(ids) > 2:
        seen.append(tuple(ids[:3]) in prefixes)
        prefixes.add(tuple(ids[:3]))
assert any(seen)
EOF
}
ktap_check "kvtracegen: JSONL with shared system and conversation prefixes" \
	check_gen "$tmp/a.jsonl"

bad=0
while read -r args; do
	# shellcheck disable=SC2086
	"$gen" $args > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: kvtracegen' "$tmp/e"; then
		echo "kvtracegen '$args': exit $rc: $(tail -1 "$tmp/e")" | ktap_diag
		bad=1
	fi
done <<'EOF'
--turns 3-2
--turns 0
--rate 0
--rate x
--rate 1e-320
--rate 1e-300
--rate 2e6
--conversations 0
--input 0
--block-tokens 0
--seed -1
--bogus
extra
EOF
ktap_check "kvtracegen: bad arguments exit 2 with the usage, write nothing" test $bad -eq 0

# --- kvbench --trace: arguments and trace errors ------------------------------
cat > "$tmp/t.jsonl" <<'EOF'
{"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 3]}
{"timestamp": 5, "input_length": 1600, "output_length": 20, "hash_ids": [1, 2, 4]}
{"timestamp": 9.5, "input_length": 1000, "output_length": 30, "hash_ids": [5, 6]}
{"timestamp": 9.5, "input_length": 1400, "output_length": 40, "hash_ids": [1, 2, 7]}
{"timestamp": 20, "input_length": 2000, "output_length": 50, "hash_ids": [1, 2, 4, 8]}
EOF
truncate -s 64M "$tmp/dev.img"
bad=0
while read -r args; do
	# shellcheck disable=SC2086
	"$kvbench" -d "$tmp/dev.img" $args > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: kvbench' "$tmp/e"; then
		echo "kvbench '$args': exit $rc: $(head -1 "$tmp/e")" | ktap_diag
		bad=1
	fi
done <<EOF
--trace $tmp/t.jsonl -r 5
--trace $tmp/t.jsonl -s 4
--trace $tmp/t.jsonl --streams 2
--trace $tmp/t.jsonl --model gpt-9
--trace $tmp/t.jsonl --model mistral-7b --bytes-per-token 4096
--trace $tmp/t.jsonl --bytes-per-token 0
--trace $tmp/t.jsonl --block-tokens 0
--trace $tmp/t.jsonl --mem-blocks x
--trace $tmp/t.jsonl --speed 0
--trace $tmp/t.jsonl --from -5
--trace $tmp/t.jsonl --duration 0
--trace $tmp/t.jsonl --from 100
--trace $tmp/t.jsonl --write 0
--mem-blocks 4
--speed 2
--model llama-3.1-8b
EOF
ktap_check "kvbench: bad --trace options exit 2 with the usage" test $bad -eq 0

# Demand options that contradict each other or ask for nothing, and a
# size whose multiple passes the type: refused, not run (each would run
# for its -t; the timeout ends one that is).
bad=0
while read -r args; do
	# shellcheck disable=SC2086
	timeout 20 "$kvbench" -d "$tmp/dev.img" -t 5 $args > "$tmp/o" 2> "$tmp/e"
	rc=$?
	if [ $rc -ne 2 ] || [ -s "$tmp/o" ] || ! grep -q '^usage: kvbench' "$tmp/e"; then
		echo "kvbench '$args': exit $rc: $(head -1 "$tmp/e")" | ktap_diag
		bad=1
	fi
done <<EOF
-s 4,8 --kv 64:8192
--kv 64:8192 -s 4
-r 0
-r 0 --streams 0
-b 18014398509481985k
-b 17592186044417m
-s 4,,8
-s ,4
-s 4,
--kv 64,,128:8192
--think 5
EOF
ktap_check "kvbench: -s with --kv, no demand, a wrapping size, an empty list element, --think without --streams: exit 2 with the usage" \
	test $bad -eq 0

printf '%s\n' '{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}' \
	'{"timestamp": 1, "input_length": 1, "hash_ids": [2]}' > "$tmp/bad.jsonl"
"$kvbench" -d "$tmp/no-such-device" --trace "$tmp/bad.jsonl" > "$tmp/o" 2> "$tmp/e"
ktap_check "kvbench: a bad trace line: exit 1 naming file and line, before the device" \
	sh -c "[ $? -eq 1 ] && grep -qx 'kvbench: $tmp/bad.jsonl:2: \"output_length\" is missing' '$tmp/e'"

# --- a replay on a regular file -----------------------------------------------
# Memory of 4 blocks: the requests hit 4 blocks, recall 3 and write 8 new
# ones (selftests/unit/kvtier_test.c works them out); 4 KiB blocks of
# 512 tokens x 8 bytes, one 4 KiB request each.
replay() {
	"$kvbench" -d "$tmp/dev.img" --trace "$tmp/t.jsonl" --bytes-per-token 8 \
		-b 4096 --mem-blocks 4 --solo-runs 1 --foreign 1 --json "$@"
}
if ! replay > "$tmp/r.json" 2> "$tmp/e"; then
	if grep -q 'Invalid argument' "$tmp/e"; then
		ktap_test_skip "kvbench --trace replays on a regular file" \
			"no O_DIRECT on $top/build's file system"
		ktap_test_skip "kvbench --trace --from: earlier requests only warm the tiers" \
			"no O_DIRECT on $top/build's file system"
		ktap_finished
	fi
	ktap_diag < "$tmp/e"
fi
check_replay() {
	python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
want = dict(a.split("=") for a in sys.argv[2:])
got = {"replayed": r["requests"]["replayed"], "warmup": r["requests"]["warmup"],
       "recalling": r["requests"]["recalling"], "hit": r["blocks"]["hit"],
       "recall": r["blocks"]["recall"], "new": r["blocks"]["new"],
       "batches": r["recall_ms"]["all"]["n"], "owed": r["offload"]["requests"],
       "errors": r["errors"]}
for k, v in want.items():
    assert got[k] == int(v), f"{k}: {got[k]}, want {v}"
o = r["offload"]
assert o["done"] + o["backlog"]["requests"] == o["requests"], o
assert o["backlog"]["in_flight"] <= min(o["backlog"]["requests"], r["depth"]["write"]), o
assert r["model"]["requests_per_block"] == 1 and r["tier"]["ssd_slots"] == 16384, r
assert sorted(r["solo_ms"]) == ["blocks_1", "blocks_2"], r["solo_ms"]
EOF
}
ktap_check "kvbench --trace replays on a regular file: 4 hits, 3 recalls in 2 batches, 8 writes" \
	check_replay "$tmp/r.json" replayed=5 warmup=0 recalling=2 hit=4 recall=3 \
		new=8 batches=2 owed=8 errors=0

# From 9 ms: the first two requests warm the tiers; the window's three
# hit 2, recall 3 (1 and 2, then 4) and write 4 (5, 6, 7, 8).
replay --from 9 --duration 100 > "$tmp/w.json" 2> "$tmp/e" || ktap_diag < "$tmp/e"
ktap_check "kvbench --trace --from: earlier requests only warm the tiers" \
	check_replay "$tmp/w.json" replayed=3 warmup=2 recalling=2 hit=2 recall=3 \
		new=4 batches=2 owed=4 errors=0

# --- recall, the tagging example: bad arguments before the device --------
# shellcheck disable=SC2034 # read by cli_refuses()
recall_bad=("x" "x|8" "x|8|8|4096|y" "x|0|8" "x|7|8" "x|1024|8" "x|9x|8"
	    "x| 9|8" "x|-1|8" "x|8|0" "x|8|257" "x|8|8|5000" "x|8|8|4096junk"
	    "x|8|8|2097152" "x|8|8|0" "-t|bogus|x|8|8" "-t" "x|8|8|-t|group")
ktap_check "recall: 18 bad argument lists exit 2 with the usage, before the device" \
	cli_refuses '^usage: recall' recall_bad -- "$top/build/tools/recall"

# --- the selftests' I/O helpers: bad arguments before the device ---------
# (values past 32 bits for kvb_seqio's -b and -q and kvb_uring_mix's -p,
# which a cast would cut, and a seed with a leading blank.)
if make -s --no-print-directory -C "$top" selftests-bin > "$tmp/sbin.log" 2>&1; then
	# shellcheck disable=SC2034 # read by cli_refuses()
	seqio_bad=("write|-d|x|-n|1|-b|4294967808" "write|-d|x|-n|1|-q|4294967297"
		   "write|-d|x|-n|1|-s| -1" "write|-d|x|-n|1|-q|0" "write|-d|x"
		   "bogus")
	# shellcheck disable=SC2034 # read by cli_refuses()
	mix_bad=("-d|x|-p|4294967296|w:0:4096" "-d|x|-p|256|w:0:4096"
		 "-d|x|d:1:4096" "-d|x|w:0:2097152" "-d|x|z:0:4096" "-d|x")
	ktap_check "kvb_seqio: 6 bad argument lists exit 2 with the usage" \
		cli_refuses '^usage: kvb_seqio' seqio_bad -- \
			"$top/build/selftests/kvb_seqio"
	ktap_check "kvb_uring_mix: 6 bad argument lists exit 2 with the usage" \
		cli_refuses '^usage: kvb_uring_mix' mix_bad -- \
			"$top/build/selftests/kvb_uring_mix"
else
	ktap_diag < "$tmp/sbin.log"
	ktap_test_fail "the selftest helpers build"
fi

ktap_finished
