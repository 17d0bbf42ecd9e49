#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Sync writes are never held with the deferred ones. While RT recall reads
# keep demand in flight on a slow null_blk (two tags, 2 ms per request),
# the flusher's async writes are deferred for up to write_expire_ms (40 s
# here; a debug kernel's guest gets a 20 ms device and 400 s): async
# writes come from sync_file_range(SYNC_FILE_RANGE_WRITE), which starts
# writeback of a range at once (WB_SYNC_NONE). Then:
#
# - a 4 KiB O_DIRECT write that starts where a deferred write ends would
#   merge into it and wait with it: kvbatch refuses the bio merge, and the
#   request merge at insert promotes the deferred request out of the write
#   queue instead. The write must complete well inside write_expire_ms.
# - with nr_requests 16 every write allocates from async_depth (12) tags;
#   deferred writes may hold at most half of them, so a sync write to an
#   unrelated place still finds a tag under a flood of IDLE-class O_DIRECT
#   writes (deferred, and not throttled by writeback throttling, which
#   keeps the flusher's own writes to a trickle beside reads).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_require_cmd dd
kvb_require_cmd python3
kvb_load || ktap_exit_skip "cannot load kvbatch"
# A debug kernel's guest cannot keep a 2 ms device busy: demand would
# leave gaps in which the deferred writes rightly go (nothing waits for
# them), so it gets a 20 ms device, and everything ten times as long.
svc_ns=2000000 scale=1
if kvb_debug_kernel; then
	svc_ns=20000000 scale=10
fi
kvb_nullb_fresh submit_queues=1 hw_queue_depth=2 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=$svc_ns
udevadm settle 2>/dev/null || true

ktap_print_header
ktap_set_plan 11

dev=nullb0
iosched=/sys/block/$dev/queue/iosched
# The longest a sync write may take here: a fifth of write_expire_ms, which
# a sync write held with the deferred ones would wait out. (It usually
# takes 0.2-0.5 s, and up to about 2 s, timing dd, in a 7.3 guest with a
# second guest busy on the same two host cores.) write_expire_ms is long
# because such a guest is slow between the deferral and the sync write:
# with the host's two cores busy beside it, a 7.3 guest can take over
# 10 s from one to the other (a Python start among them), and a shorter
# expiry would let the deferred write go before the sync write comes.
expire_ms=$((40000 * scale))
limit_ms=$((expire_ms / 5))

# async_write FILE OFFSET: FILE's bytes into the page cache of the disk
# at OFFSET, then writeback of that range started without waiting: async
# write requests, submitted by this process (in the background if the
# pool has no tag for them).
async_write() {
	python3 - "/dev/$dev" "$1" "$2" <<'PY'
import ctypes, os, sys
SYNC_FILE_RANGE_WRITE = 2
libc = ctypes.CDLL(None, use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64,
                                 ctypes.c_int64, ctypes.c_uint]
dev, src, off = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(src, 'rb').read()
fd = os.open(dev, os.O_WRONLY)
os.pwrite(fd, data, off)
if libc.sync_file_range(fd, off, len(data), SYNC_FILE_RANGE_WRITE):
    sys.exit('sync_file_range: ' + os.strerror(ctypes.get_errno()))
os.close(fd)
PY
}

# Deferred writes queued in kvbatch now.
write_queued() {
	awk '$1 == "write" { print $3 }' "/sys/kernel/debug/block/$dev/sched/tiers"
}

# wait_deferred N: until at least N writes are deferred (10 s at most;
# 100 s on a debug kernel).
wait_deferred() {
	for _ in $(seq $((100 * scale))); do
		[ "$(write_queued)" -ge "$1" ] && return 0
		kvb_sleep 0.1
	done
	return 1
}

# timed_write SEEK-4K-BLOCKS FILE: one O_DIRECT 4 KiB write of FILE; prints
# how long the write took, in ms: the write alone, not the start of the
# process that makes it (seconds on a debug kernel); then the deferred
# writes kvbatch had queued just before it.
timed_write() {
	python3 - "/dev/$dev" "$2" "$1" \
		"/sys/kernel/debug/block/$dev/sched/tiers" <<'PY'
import mmap, os, sys, time
dev, src, blk, tiers = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
buf = mmap.mmap(-1, 4096)
buf.write(open(src, 'rb').read(4096))
fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
with open(tiers) as f:
    queued = [l.split()[2] for l in f if l.split()[:1] == ['write']]
t = time.monotonic()
if os.pwritev(fd, [buf], blk * 4096) != 4096:
    sys.exit('short write')
print(int((time.monotonic() - t) * 1000), queued[0] if queued else '?')
PY
}

# sync_after BLOCK N: the timed sync write of try $try at BLOCK into res
# ("MS QUEUED"); true if at least N deferred writes were queued just
# before it, else a pause of demand let them go and the caller tries
# again (a failed write counts as taken: its 999999 ms fails the check).
sync_after() {
	res=$(timed_write "$1" "$KVB_SCRATCH/sync.bin") || {
		res="999999 ?"
		return 0
	}
	[ "${res#* }" -ge "$2" ] && return 0
	log "try $try: the deferred writes went in a pause of demand; again"
	return 1
}

# start_demand IODEPTH: two RT recall readers, IODEPTH each, keeping demand
# in flight (the device has two tags) until stop_demand.
start_demand() {
	local before

	before=$(kvb_io_count $dev)
	fio --name=demand --filename=/dev/$dev --rw=randread --bs=4k \
		--direct=1 --ioengine=libaio --iodepth="$1" --numjobs=2 \
		--prioclass=1 --prio=0 --offset=512M --size=256M \
		--time_based --runtime=$((300 * scale)) \
		--output=/dev/null >/dev/null 2>&1 &
	demand=$!
	kvb_wait_io $dev "$before"
}

stop_demand() {
	kill "$demand" 2>/dev/null
	wait "$demand" 2>/dev/null
}

kvb_use_kvbatch $dev
# Writeback throttling off where it can be: kvbatch holds the writes it
# counts only until no more come (KVP_WRITE_STALL_NS, kv-policy.h), and
# the async writes here must stay deferred (kvb_wbt.sh tests that case).
wbt_file=/sys/block/$dev/queue/wbt_lat_usec
wbt=$(cat "$wbt_file" 2>/dev/null)
[ -z "$wbt" ] || kvb_defer "echo $wbt > $wbt_file"
{ echo 0 > "$wbt_file"; } 2>/dev/null
echo 128 > /sys/block/$dev/queue/nr_requests
echo 200 > $iosched/normal_expire_ms
echo $expire_ms > $iosched/write_expire_ms

head -c 65536 /dev/urandom > "$KVB_SCRATCH/deferred.bin"
head -c 4096 /dev/urandom > "$KVB_SCRATCH/sync.bin"
# 2 x 32 reads keep 64 ms of the device's work queued, so that a guest
# vCPU the host deschedules for tens of ms (a second guest on the same
# two cores) does not drain demand. With 2 x 8, and the host's two cores
# kept busy beside a 7.3 guest, demand drains so often that a deferred
# write is rarely seen at all; with 2 x 32 one is seen at every try.
start_demand 32 || log "demand did not start"

# 64 KiB at BASE (4 KiB blocks): one async write request, deferred; then
# the sync write of the block after it. A pause in the guest long enough
# for demand to drain leaves nothing in flight, and the deferred write
# then rightly goes: if none was seen deferred, or none was still queued
# just before the sync write, try again further on, three times in all.
res=none
for try in 1 2 3; do
	base=$(((try - 1) * 32))
	async_write "$KVB_SCRATCH/deferred.bin" $((base * 4096))
	if ! wait_deferred 1; then
		log "try $try: no deferred write seen; again"
		continue
	fi
	log "deferred: $(write_queued) writes"
	wbase=$base
	sync_after $((base + 16)) 1 && break
done
if [ "$res" != none ]; then
	ms=${res%% *}
	log "sync write after the deferred one: $ms ms (deferred writes queued before it: ${res#* })"
	ktap_check "a sync write that extends a deferred write takes $ms ms (< $limit_ms)" \
		test "$ms" -lt $limit_ms
	ktap_check "the deferred write was promoted" \
		test "$(kvb_stat $dev promoted)" -gt 0
else
	ktap_test_fail "no deferred write appeared"
	ktap_test_fail "the deferred write was promoted"
fi
stop_demand
sync
verify_merge() {
	[ -n "${wbase:-}" ] &&
	dd if=/dev/$dev bs=4k skip="$wbase" count=16 iflag=direct status=none |
		cmp -s - "$KVB_SCRATCH/deferred.bin" &&
	dd if=/dev/$dev bs=4k skip=$((wbase + 16)) count=1 iflag=direct \
		status=none | cmp -s - "$KVB_SCRATCH/sync.bin"
}
ktap_check "both writes are on the device" verify_merge

# A chain of insert merges: the sync write C merges into the deferred
# write B before it, which is promoted, and B (its flags still async)
# then into the deferred write A before it. A must be promoted too, or C
# waits in it for write_expire_ms. X, queued first, is the queue's
# one-hit merge candidate, so the insert merge goes down the hash chain;
# with front merges off, A's bio does not front-merge into B; with
# writeback throttling off, B's writeback does not wait beside the reads
# for X to complete (it would, write_expire_ms long). Blocks: X at 400,
# A at 300-307, B at 308-315, C at 316.
head -c 32768 /dev/urandom > "$KVB_SCRATCH/chain-a.bin"
head -c 32768 /dev/urandom > "$KVB_SCRATCH/chain-b.bin"
head -c 4096 /dev/urandom > "$KVB_SCRATCH/chain-x.bin"
# With writeback throttling on, B's writeback would wait for X: the chain
# is tried where it can be turned off, or where the kernel has none (no
# wbt_lat_usec: a kernel built without CONFIG_BLK_WBT, where a write to
# the missing file fails with "Permission denied").
if [ ! -e "$wbt_file" ] || { echo 0 > "$wbt_file"; } 2>/dev/null; then
	echo 0 > $iosched/front_merges
	start_demand 32 || log "demand did not start"
	res=none
	for try in 1 2 3; do
		cbase=$((300 + (try - 1) * 200))
		promoted=$(kvb_stat $dev promoted)
		log "try $try: writing X, B, A ($SECONDS s)"
		async_write "$KVB_SCRATCH/chain-x.bin" $(((cbase + 100) * 4096))
		async_write "$KVB_SCRATCH/chain-b.bin" $(((cbase + 8) * 4096))
		async_write "$KVB_SCRATCH/chain-a.bin" $((cbase * 4096))
		log "try $try: written, $(write_queued) deferred ($SECONDS s)"
		if ! wait_deferred 3; then
			log "try $try: $(write_queued) deferred writes seen, not 3; again"
			continue
		fi
		sync_after $((cbase + 16)) 3 && break
	done
	if [ "$res" != none ]; then
		ms=${res%% *}
		log "sync write after two deferred writes: $ms ms (deferred writes queued before it: ${res#* }; promoted $((promoted)) -> $(kvb_stat $dev promoted))"
		ktap_check "a sync write merged down a chain of deferred writes takes $ms ms (< $limit_ms)" \
			test "$ms" -lt $limit_ms
	else
		ktap_test_fail "three deferred writes never queued at once"
	fi
	stop_demand
	sync
	echo 1 > $iosched/front_merges
	# shellcheck disable=SC2317
	verify_chain() {
		[ "$res" != none ] &&
		dd if="/dev/$dev" bs=4k skip="$cbase" count=8 iflag=direct status=none |
			cmp -s - "$KVB_SCRATCH/chain-a.bin" &&
		dd if="/dev/$dev" bs=4k skip=$((cbase + 8)) count=8 iflag=direct \
			status=none | cmp -s - "$KVB_SCRATCH/chain-b.bin" &&
		dd if="/dev/$dev" bs=4k skip=$((cbase + 16)) count=1 iflag=direct \
			status=none | cmp -s - "$KVB_SCRATCH/sync.bin"
	}
	ktap_check "the three writes of the chain are on the device" verify_chain
else
	ktap_test_skip "a sync write merged down a chain of deferred writes" \
		"writeback throttling cannot be turned off here (wbt_lat_usec)"
	ktap_test_skip "the three writes of the chain are on the device" \
		"writeback throttling cannot be turned off here (wbt_lat_usec)"
fi

# A small pool: write_defer_max is held to half of async_depth.
echo 16 > /sys/block/$dev/queue/nr_requests
depth=/sys/kernel/debug/block/$dev/sched/depth
async=$(awk '$1 == "async_depth" { print $2 }' $depth)
wdm=$(awk '$1 == "write_defer_max" { print $2 }' $depth)
log "nr_requests 16: async_depth $async, write_defer_max $(cat $iosched/write_defer_max) -> $wdm"
ktap_check "write_defer_max $wdm is at most half of async_depth $async" \
	test -n "$wdm" -a -n "$async" -a "$((2 * ${wdm:-999}))" -le "${async:-0}"
ktap_check "the write_defer_max tunable still reads as written" \
	test "$(cat $iosched/write_defer_max)" = 128

# Demand takes 4 of the 16 tags, so the flood can take all 12 of
# async_depth if it may.
start_demand 2 || log "demand did not start"
# The flood: IDLE-class writes, deferred up to the cap.
fio --name=flood --filename=/dev/$dev --rw=randwrite --bs=4k --direct=1 \
	--ioengine=libaio --iodepth=32 --prioclass=3 --offset=64M --size=64M \
	--time_based --runtime=$((8 * scale)) \
	>/dev/null 2>"$KVB_SCRATCH/flood.err" &
flood=$!
# Without writes deferred the next check would time nothing held.
ktap_check "the flood's writes are deferred behind demand" wait_deferred 1
kvb_sleep 0.5
ms=$(timed_write $((900 << 8)) "$KVB_SCRATCH/sync.bin") || ms=999999
ms=${ms%% *}
log "sync write under the flood: $ms ms; $(write_queued) deferred"
ktap_check "a sync write under a flood of deferred writes takes $ms ms (< $limit_ms)" \
	test "$ms" -lt $limit_ms
# Demand ends before the flood is waited for: while it runs, the flood's
# last writes stay deferred for up to write_expire_ms after its runtime,
# 400 s on a debug kernel. fio's parent gives a job 300 s to exit after
# its runtime and then leaves without it; fio 3.39 (Debian 13) then frees
# the job's engine options twice and crashes (SIGSEGV in free()), which
# the 7.3 debug kernel reaches if demand runs on.
stop_demand
wait $flood
rc=$?
[ "$rc" = 0 ] || log "flood fio: exit $rc: $(tr '\n' ' ' < "$KVB_SCRATCH/flood.err")"
ktap_check "the flood's fio exits 0 (got $rc)" test "$rc" = 0
sync
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced $dev

kvb_set_sched $dev none
kvb_nullb_teardown
ktap_finished
