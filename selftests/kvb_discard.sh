#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Discards on a device that takes several ranges in one command (NVMe:
# max_discard_segments > 1). There the block layer merges any two discard
# requests, wherever they lie, and when it merges one request into
# another at insert it does not call the elevator's requests_merged().
# The request merged away is freed all the same: counted as inserted by
# kvbatch and never completed, it would break inserted = completed +
# merged, and one merged away while queued (the insert merge's hash
# chain) would be freed while still on kvbatch's lists. kvbatch does not
# insert-merge such discards (bio merges of discards still happen).
#
# A discard, a write and a discard in one io_uring submission (Linux
# 6.12's BLOCK_URING_CMD_DISCARD; kvb_uring_mix) reach kvbatch in one
# insert: the write keeps the second discard's bio from merging into the
# first's request in the plug, and the first discard (WRITE tier, never
# dispatched on arrival) is queued when the second is inserted. Then
# several submitters at once, their discards adjacent to each other's,
# while RT readers keep demand in flight and the discards deferred.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio ionice
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"
d=nvme0n1
segs=$(cat /sys/block/$d/queue/max_discard_segments)
[ "$segs" -gt 1 ] ||
	ktap_exit_skip "$d takes $segs discard range per command: no multi-range discard merges"
mix=$KVB_ROOT/build/selftests/kvb_uring_mix
[ -x "$mix" ] || ktap_exit_skip "kvb_uring_mix not built (make selftests-bin)"

kvb_use_kvbatch $d
echo 256 > /sys/block/$d/queue/nr_requests
echo 1 > /sys/kernel/debug/block/$d/sched/reset_stats

# MiB 600 on: away from the other tests' data. Block size 4 KiB.
base=$((600 << 20))
out=$("$mix" -d /dev/$d "d:$base:4096" "w:$((base + 65536)):4096" \
	"d:$((base + 131072)):4096" 2>&1)
rc=$?
[ $rc = 4 ] &&
	ktap_exit_skip "no io_uring discard command on $(uname -r) (6.12 and later)"

ktap_print_header
ktap_set_plan 5

log "$(echo "$out" | tr '\n' ' ')"
ktap_check "a discard, a write and a discard in one submission (exit $rc)" \
	test $rc = 0
ktap_check "accounting balances after it (inserted = completed + merged)" \
	kvb_balanced $d

# Submitters at once, each round a discard of its own block, a write
# elsewhere and a discard of the block after its first, the blocks of
# the submitters side by side: discards queued by one meet the others'
# at insert, in every order.
secs=12
kvb_debug_kernel && secs=120
n0=$(kvb_io_count $d)
(cd "$KVB_SCRATCH" && ionice -c 1 -n 0 fio --name=demand \
	--filename=/dev/$d --direct=1 --ioengine=libaio --rw=randread \
	--bs=4k --iodepth=16 --numjobs=2 --offset=0 --size=256M \
	--time_based --runtime=$secs >/dev/null 2>&1) &
demand=$!
kvb_wait_io $d "$n0" || log "demand did not start"
submitter() {
	local s=$1 r off fails=0

	for r in $(seq 0 39); do
		off=$((base + (1 << 20) + (r * 8 + s * 2) * 4096))
		"$mix" -d /dev/$d -p $((s + 1)) "d:$off:4096" \
			"w:$((base + (64 << 20) + (r * 4 + s) * 4096)):4096" \
			"d:$((off + 4096)):4096" > /dev/null || fails=$((fails + 1))
	done
	echo "$fails" > "$KVB_SCRATCH/fails.$s"
}
pids=()
for s in 0 1 2 3; do
	submitter $s &
	pids+=($!)
done
wait "${pids[@]}"
kill $demand 2>/dev/null
wait $demand
fails=0
for s in 0 1 2 3; do
	fails=$((fails + $(cat "$KVB_SCRATCH/fails.$s" 2>/dev/null || echo 40)))
done
ktap_check "4 submitters x 40 rounds beside RT readers: every operation succeeded ($fails rounds failed)" \
	test "$fails" = 0
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced $d

# The writes of the rounds: each block holds its submitter's byte.
# shellcheck disable=SC2317
writes_ok() {
	local s r blk

	for s in 0 1 2 3; do
		for r in 0 19 39; do
			blk=$(((base + (64 << 20)) / 4096 + r * 4 + s))
			[ "$(dd if="/dev/$d" bs=4096 skip="$blk" count=1 iflag=direct \
				status=none | od -An -v -tu1 | tr -s ' \n' '\n' |
				grep -v '^$' | sort -u)" = "$((s + 1))" ] || return 1
		done
	done
}
ktap_check "the writes between the discards are on the device" writes_ok

kvb_set_sched $d none
ktap_finished
