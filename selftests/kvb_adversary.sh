#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An adversary against kvbatch's batch table: one process keeping 1000
# single-request "batches" outstanding (kvbench, 1000 closed-loop
# streams), each with the next of 1023 ioprio hints, while it is moved
# through 16 cgroups, so that it cycles through thousands of distinct
# batch keys with up to 1000 open at once, far more than max_batches. kvbatch's
# memory must not grow (its batch descriptors are preallocated; extra keys
# share their tier's overflow batch), the table must stay within
# max_batches, and a well-behaved recall stream on the same disk must keep
# completing its batches. The adversary's hinted BE batches are the normal
# tier's, which may hold all of the table but demand's reserve. Its
# backlog is kept past normal_expire_ms (20 ms here), and must still not
# make the recalls wait behind it as in a FIFO: the expired requests take
# turns with them, so their mean stays within three times mq-deadline's,
# which serves RT first.
source "$(dirname "$0")/lib.sh"

RUNTIME=${RUNTIME:-8}
NCG=16
cg=/sys/fs/cgroup
kvbench=$KVB_ROOT/build/tools/kvbench

# A table of 32 (the module's default is 256): a debug kernel under TCG
# keeps only about 120 of the adversary's keys open at once, and the
# overflow path must be exercised on every kernel.
MAX_BATCHES=${MAX_BATCHES:-32}

kvb_require_root
kvb_require_cmd jq
[ -x "$kvbench" ] || ktap_exit_skip "no $kvbench (make tools)"
kvb_unload
insmod "$KVB_KO" max_batches="$MAX_BATCHES" ||
	ktap_exit_skip "cannot load kvbatch with max_batches=$MAX_BATCHES"
[ -f $cg/cgroup.procs ] || ktap_exit_skip "no cgroup2 at $cg"
kvb_nullb_fresh submit_queues=1 hw_queue_depth=4 gb=4 irqmode=2 \
	completion_nsec=500000

ktap_print_header
ktap_set_plan 6

max=$(cat /sys/module/kvbatch/parameters/max_batches)
echo +io > $cg/cgroup.subtree_control 2>/dev/null || true
for i in $(seq $NCG); do mkdir -p $cg/kvb-adv$i; done
# shellcheck disable=SC2016
kvb_defer 'for i in $(seq $NCG); do rmdir $cg/kvb-adv$i; done'

# Kernel memory that could grow: slab and vmalloc, in kB.
kmem() {
	awk '/^(Slab|VmallocUsed):/ { s += $2 } END { print s }' /proc/meminfo
}

# adversary SCHED: run the adversary and, alongside, the victim recall
# stream under SCHED; sets $growth (peak slab + vmalloc growth, kB), $adv
# and $victim (their pids). The victim's results are in victim-SCHED.json.
adversary() {
	local before m moves=0 i

	kvb_set_sched nullb0 "$1" || return 1
	# Room for the adversary's 1000 requests, each its own batch.
	echo 2048 > /sys/block/nullb0/queue/nr_requests
	# 1000 requests take 125 ms at 8000 a second, and longer on a slow
	# guest: every request of the adversary's expires.
	[ "$1" != kvbatch ] ||
		echo 20 > /sys/block/nullb0/queue/iosched/normal_expire_ms
	before=$(kmem)
	peak=$before
	"$kvbench" -d /dev/nullb0 -t "$RUNTIME" -r 0 --streams 1000 --think 0 \
		-s 1 --tag be-hint --solo-runs 1 --seed 3 --json \
		> "$KVB_SCRATCH/adversary-$1.json" 2>&1 &
	adv=$!
	"$kvbench" -d /dev/nullb0 -t "$RUNTIME" -r 20 -s 8 --tag rt \
		--solo-runs 3 --seed 4 --json > "$KVB_SCRATCH/victim-$1.json" 2>&1 &
	victim=$!
	while kill -0 $adv 2>/dev/null; do
		i=$((moves % NCG + 1))
		echo $adv > $cg/kvb-adv$i/cgroup.procs 2>/dev/null && moves=$((moves + 1))
		m=$(kmem)
		[ "$m" -gt "$peak" ] && peak=$m
		kvb_sleep 0.1
	done
	growth=$((peak - before))
	log "$1: adversary $(jq -r '"\(.batch_ms.all.n) batches, \(.errors) errors"' "$KVB_SCRATCH/adversary-$1.json" 2>/dev/null), moved through $NCG cgroups $moves times; slab + vmalloc grew by $growth kB"
}

# The same load under mq-deadline is the baseline of what the rest of the
# kernel (bios, requests, io_uring) needs for 1000 outstanding requests.
# (A run that cannot select its scheduler starts no load.)
adv='' victim='' growth=0
adversary mq-deadline
wait $adv
wait $victim
base=$growth
adversary kvbatch
wait $adv; adv_rc=$?
wait $victim; victim_rc=$?
for i in $(seq $NCG); do rmdir $cg/kvb-adv$i 2>/dev/null; done

opened=$(kvb_stat nullb0 normal_batches_opened)
overflow=$(kvb_stat nullb0 normal_overflow_rqs)
d_overflow=$(kvb_stat nullb0 demand_overflow_rqs)
live_max=$(kvb_stat nullb0 batches_live_max)
log "kvbatch: $opened normal batches opened, $overflow requests in the normal overflow batch, $d_overflow in demand's, batches_live_max $live_max (max_batches $max)"
for s in mq-deadline kvbatch; do
	log "victim under $s: $(jq -r '"\(.batch_ms.all.n) batches, mean \(.batch_ms.all.mean) ms, p99 \(.batch_ms.all.p99) ms, \(.errors) errors"' "$KVB_SCRATCH/victim-$s.json" 2>/dev/null)"
done

# A kernel that submits too slowly never has more than max_batches keys
# open at once (a debug kernel on a busy host can keep as few as a score):
# the overflow path is then not reached, which is no pass.
if [ "$live_max" -lt "$max" ] && [ "$overflow" = 0 ]; then
	ktap_test_skip "overflow: the adversary kept at most $live_max keys open at once, fewer than max_batches $max"
else
	ktap_check "the adversary's keys overflowed the batch table" \
		test "$opened" -gt "$max" -a "$overflow" -gt 0 -a $adv_rc -eq 0
fi
ktap_check "the adversary ran without errors, the batch table stayed within max_batches" \
	test "$live_max" -le $((max + 3)) -a $adv_rc -eq 0
# kvbatch allocates nothing per request or per key: its growth must stay
# within noise of mq-deadline's. Under KASAN, freed objects wait in its
# quarantine and still count as slab, which makes the noise megabytes.
slack=512
if kvb_kernel_has CONFIG_KASAN; then
	slack=8192
	log "KASAN kernel: its quarantine keeps freed slab objects; slack $slack kB"
fi
ktap_check "kernel memory grew no more than under mq-deadline (+$growth vs +$base kB, $slack kB slack)" \
	test "$growth" -le $((base + slack))
victim_ok() {
	[ $victim_rc -eq 0 ] &&
		[ "$(jq '.batch_ms.all.n' "$KVB_SCRATCH/victim-kvbatch.json")" -gt $((RUNTIME * 10)) ]
}
ktap_check "a recall stream on the same disk kept completing its batches" victim_ok
mean_mq=$(jq '.batch_ms.all.mean' "$KVB_SCRATCH/victim-mq-deadline.json" 2>/dev/null)
mean_kvb=$(jq '.batch_ms.all.mean' "$KVB_SCRATCH/victim-kvbatch.json" 2>/dev/null)
ktap_check "the recalls did not queue behind the expired backlog (mean ${mean_kvb:-?} ms, mq-deadline ${mean_mq:-?} ms; at most three times, +5 ms)" \
	awk -v k="${mean_kvb:-x}" -v m="${mean_mq:-x}" \
	'BEGIN { exit !(k ~ /^[0-9.]+$/ && m ~ /^[0-9.]+$/ && k <= 3 * m + 5) }'
ktap_check "accounting balances" kvb_balanced nullb0
kvb_nullb_teardown
# Later tests expect the module with its defaults.
kvb_unload
kvb_load
ktap_finished
