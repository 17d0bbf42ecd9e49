#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Prefetch cannot take the whole scheduler tag pool. IDLE-class readers
# with far more requests outstanding than nr_requests (64) saturate a
# 4-tag, 1 ms null_blk while an RT reader (demand) runs. A request waiting
# for a tag is invisible to kvbatch, so IDLE reads must be limited to
# async_depth tags like async requests: the prefetch requests kvbatch
# holds (queued and in flight, debugfs tiers) never exceed it, and demand
# reads find a free tag. Twice: readers whose task is IDLE (ionice -c 3),
# then readers of another class that mark each read IDLE (fio's cmdprio:
# io_uring's sqe->ioprio, libaio's aio_reqprio).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio ionice python3
# A debug kernel's guest cannot submit 4000 reads a second: its device
# is made slower, so that the prefetch readers still fill their share.
# At 20 ms (200 a second) a 7.3 debug guest on a busy host submits too
# slowly to keep more than one prefetch request in kvbatch; at 50 ms the
# device takes 80 a second, fewer than such a guest submits.
svc_ns=1000000
kvb_debug_kernel && svc_ns=50000000
kvb_begin_nullb 7 submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=$svc_ns

d=nullb0
dbg=/sys/kernel/debug/block/$d/sched

kvb_use_kvbatch "$d"
echo 64 > "/sys/block/$d/queue/nr_requests"
async=$(awk '$1 == "async_depth" { print $2 }' "$dbg/depth")
log "nr_requests 64, async_depth $async"

# prefetch_case NAME PREFETCH-COMMAND...: run the prefetch readers the
# command starts beside a demand reader and check what kvbatch held.
prefetch_case() {
	local name=$1 prefetch demand ok n0 n max=0 samples=0 ios p99

	shift
	n0=$(kvb_io_count "$d")
	(cd "$KVB_SCRATCH" && "$@" >/dev/null 2>&1) &
	prefetch=$!
	kvb_wait_io "$d" "$n0" || log "$name: prefetch readers did no I/O"
	kvb_sleep 2

	(cd "$KVB_SCRATCH" && ionice -c 1 -n 0 fio --name=demand \
		--filename=/dev/$d --direct=1 --ioengine=psync --rw=randread \
		--bs=4k --time_based --runtime=6 --output-format=json \
		--output="$KVB_SCRATCH/demand.json" >/dev/null 2>&1) &
	demand=$!

	# The prefetch tier's requests in kvbatch, sampled while both run.
	while kill -0 $demand 2>/dev/null; do
		n=$(awk '$1 == "prefetch" { print $3 + $5 }' "$dbg/tiers")
		[ -n "$n" ] && [ "$n" -gt "$max" ] && max=$n
		samples=$((samples + 1))
		kvb_sleep 0.1
	done
	wait $demand
	ok=$?
	wait $prefetch

	read -r ios p99 < <(python3 - "$KVB_SCRATCH/demand.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(r["total_ios"], r["clat_ns"].get("percentile", {}).get("99.000000", 0) // 1000)
PY
)
	log "$name: prefetch requests in kvbatch: max $max in $samples samples (async_depth $async)"
	log "$name: demand reads: ${ios:-?} done, clat p99 ${p99:-?} us"
	log "$(tr '\n' ' ' < "$dbg/stats")"

	ktap_check "$name: demand reader ran beside the prefetch readers" \
		test "$ok" -eq 0 -a "${ios:-0}" -gt 0
	ktap_check "$name: prefetch readers filled their share of the pool" \
		test "$max" -ge $((async * 3 / 4))
	ktap_check "$name: prefetch requests never exceeded async_depth ($async)" \
		test "$max" -le "$async"
}

# Both parts: two readers of 64 requests each, for 10 s.
opts=(--filename="/dev/$d" --direct=1 --rw=randread --bs=4k --iodepth=64
      --time_based --runtime=10)
prefetch_case "IDLE task" ionice -c 3 fio --name=prefetch "${opts[@]}" \
	--ioengine=libaio --numjobs=2
# An engine's options follow its --ioengine.
idle=(--cmdprio_percentage=100 --cmdprio_class=3)
prefetch_case "IDLE reads" fio "${opts[@]}" \
	--name=uring --ioengine=io_uring "${idle[@]}" \
	--name=aio --ioengine=libaio "${idle[@]}"

ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_set_sched "$d" none
kvb_nullb_teardown
ktap_finished
