#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Requeued discards on a SCSI disk. sd builds an UNMAP's parameter list in
# a page hung on rq->special_vec, which shares storage with rq->rb_node.
# When the command must be prepared again (here: scsi_debug answers UNMAP
# with NOT READY, "asymmetric access state transition", for which the
# SCSI midlayer, allowed no retries, unprepares the request and requeues
# it after a second), sd frees that page and leaves the pointer; the request comes back
# through the elevator and kvbatch must not take the stale pointer for a
# position in its sort trees. (A RECOVERED ERROR would not do: the
# midlayer completes the whole discard.)
#
# Then a write requeued the same way is no merge target (see
# requeued_write below).
#
# Per-command error injection (debugfs scsi_debug/H:C:T:L/error) exists
# from 6.7: on older kernels the requeue points are skipped and only the
# mixed discard, read and write load runs.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio blkdiscard
kvb_load || ktap_exit_skip "cannot load kvbatch"
# A thin-provisioned 128 MiB disk (UNMAP, WRITE SAME with UNMAP), 1 ms
# per command so that requests wait in kvbatch.
kvb_scsi_debug_fresh dev_size_mb=128 lbpu=1 lbpws=1 ndelay=1000000 \
	max_queue=4
disk=$KVB_SD_DISK
hctl=$(basename "$(readlink -f "/sys/block/$disk/device")")
inject=/sys/kernel/debug/scsi_debug/$hctl/error
stats=/sys/kernel/debug/block/$disk/sched/stats

ktap_print_header
ktap_set_plan 10

reports0=$(kvb_kernel_reports)

ok=0
if [ "$(cat "/sys/block/$disk/queue/discard_max_bytes")" -gt 0 ] &&
	kvb_set_sched "$disk" kvbatch; then
	echo 64 > "/sys/block/$disk/queue/nr_requests"
	echo 1 > "/sys/kernel/debug/block/$disk/sched/reset_stats"
	ok=1
fi
ktap_check "kvbatch on scsi_debug disk $disk ($hctl) with discard" test $ok = 1
[ $ok = 1 ] || { modprobe -r scsi_debug; ktap_finished; }

# UNMAP (0x42): CHECK CONDITION, NOT READY, ALUA state transition
# (04/0a), for the next 3 commands only (a negative count).
nr_inject=3
injecting=0
# The file's absence means a kernel before 6.7; a rule it refuses is a
# failure, not an old kernel. With retries left, the midlayer retries
# such a command as it is, prepared, from the hardware queue's dispatch
# list (NEEDS_RETRY): only once none are left does sd unprepare it and
# send it back through the elevator. So no retries.
if [ -e "$inject" ]; then
	injecting=refused
	echo 0 > "/sys/class/scsi_disk/$hctl/max_retries" &&
		echo "2 -$nr_inject 0x42 0x0 0x0 0x2 0x2 0x04 0x0a" > "$inject" &&
		injecting=1
fi

# Reads and writes keep requests waiting in kvbatch while 16 discards of
# 1 MiB each (synchronous, as blkdiscard's ioctl submits them) go through.
(cd "$KVB_SCRATCH" && fio --name=rw --filename="/dev/$disk" --direct=1 \
	--ioengine=libaio --rw=randrw --bs=4k --iodepth=16 --offset=64M \
	--size=64M --time_based --runtime=20 >/dev/null 2>&1) &
fio_pid=$!
discards() {
	local i

	for i in $(seq 0 15); do
		blkdiscard -o $((i << 20)) -l $((1 << 20)) "/dev/$disk" || return 1
	done
}
discards &
dpid=$!
# A request whose sort node is garbage oopses in dispatch with the
# elevator lock held: then the discards never finish. Do not wait forever:
# 30 s, or 300 s in a debug kernel's guest, where each blkdiscard takes
# about 2.5 s on an idle host and longer beside a kernel build, so that
# some of the 16 are still running at 30 s.
secs=30
kvb_debug_kernel && secs=300
for i in $(seq $((secs * 10))); do
	kill -0 $dpid 2>/dev/null || break
	kvb_sleep 0.1
done
done_ok=0
if ! kill -0 $dpid 2>/dev/null; then
	wait $dpid && done_ok=1
else
	# No more discards beside the checks below (the one under way, if
	# it ever ends, is left to kvb_balanced()'s wait for an idle disk).
	kill $dpid 2>/dev/null
	wait $dpid
fi
ktap_check "16 discards completed within $secs s" test $done_ok = 1
log "$(tr '\n' ' ' < "$stats")"

case $injecting in
1)
	log "injection left: $(sed -n 2p "$inject")"
	ktap_check "scsi_debug answered $nr_inject UNMAPs with NOT READY" \
		test "$(awk 'NR == 2 { print $2 }' "$inject")" = 0
	ktap_check "kvbatch saw the UNMAPs requeued" \
		test "$(kvb_stat "$disk" requeued)" -ge $nr_inject ;;
refused)
	ktap_test_fail "sd took max_retries 0 and scsi_debug the UNMAP error rule ($inject)"
	ktap_test_fail "kvbatch saw the UNMAPs requeued (no rule)" ;;
*)
	ktap_test_skip "no scsi_debug per-command error injection (before 6.7)"
	ktap_test_skip "no scsi_debug per-command error injection (before 6.7)" ;;
esac

reports=$(kvb_kernel_reports)
[ "$reports" = "$reports0" ] || dmesg | grep -E -A 20 'BUG:|Oops|general protection fault|KASAN|WARNING:' | head -40 | sed 's/^/# /'
ktap_check "no kernel report (oops, KASAN, warning)" test "$reports" = "$reports0"

wait $fio_pid
fio_rc=$?
ktap_check "read/write load finished cleanly" test $fio_rc = 0
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$disk"
# A request kvbatch has handed to the driver may have been started by
# it: once requeued it must take no more bios (the block layer's
# RQF_STARTED, which mq-deadline sets at dispatch, keeps any merge
# away). kvbatch keeps a requeued request out of its sort trees, but a
# deferred write goes back into dsort, the tree write bursts are taken
# from in order, where a bio ending at its first sector would find it
# for a front merge. Here: max_inflight 1; a normal read in flight (800
# ms), an idle-class write (the write tier, deferred) queued behind it;
# the write goes when the read completes and scsi_debug answers it NOT
# READY (ALUA transition) once, for which sd unprepares it and requeues
# it a second later. A demand read, issued meanwhile, goes first, so
# that the write comes back into dsort and stays there; then a write of
# the block before it arrives. It must become a request of its own.
requeued_write() {
	local out=$KVB_SCRATCH/requeued

	# 800 ms a command from here (the disk is idle: kvb_balanced).
	echo 800000000 > /sys/bus/pseudo/drivers/scsi_debug/ndelay || return 1
	echo "2 -1 0x2a 0x0 0x0 0x2 0x2 0x04 0x0a" > "$inject" || return 1
	echo 1 > "/sys/block/$disk/queue/iosched/max_inflight"
	echo 1 > "/sys/kernel/debug/block/$disk/sched/reset_stats"
	python3 - "$(dirname "$0")" "/dev/$disk" "$stats" > "$out" <<'PY'
import sys
import time

sys.path.insert(0, sys.argv[1])
from kvbio import BE, IDLE, RT, Ios, stat, wait_stat

dev, stats = sys.argv[2:4]
t0 = time.monotonic()


def snap(what):
    print('%s at %d ms: %s' % (what, (time.monotonic() - t0) * 1000,
          ' '.join('%s %s' % (k, stat(stats, k)) for k in
                   ('inflight', 'queued', 'dispatched', 'requeued',
                    'dispatched_demand', 'dispatched_write'))))


ios = Ios(dev)
ios.start('read', 1000, cls=BE)
ok = wait_stat(stats, 'inflight', 1) == 0
if ok:
    ios.start('write1', 2001, write=True, cls=IDLE)
    ok = wait_stat(stats, 'writes_deferred', 1) == 0
    snap('write1 queued')
if ok:
    ok = wait_stat(stats, 'requeued', 1, secs=30) == 0
    snap('write1 requeued')
if ok:
    ios.start('demand', 3000, cls=RT)
    ok = wait_stat(stats, 'dispatched_demand', 1, secs=30) == 0
    snap('demand dispatched')
    ok = ok and wait_stat(stats, 'queued', 1) == 0
if ok:
    print('setup ok')
    ios.start('write0', 2000, write=True, cls=IDLE)
    # Merged (no new request queued), or queued as a request of its own.
    for _ in range(1000):
        if stat(stats, 'bio_front_merges') or stat(stats, 'queued') == 2:
            break
        time.sleep(0.01)
    snap('write0 issued')
    print('front_merges', stat(stats, 'bio_front_merges'))
for name, ms in ios.join():
    print(name, 'completed after', ms, 'ms')
PY
	grep -v '^front_merges ' "$out" | sed 's/^/# /'
	log "$(tr '\n' ' ' < "$stats")"
	grep -qx 'setup ok' "$out" || return 1
	rw_merges=$(awk '$1 == "front_merges" { print $2 }' "$out")
	kvb_balanced "$disk"
}

# A request sent again from the hardware queue's dispatch list (a retry)
# completes once and is dispatched once; one that came back through
# kvbatch, twice.
rw_merges=
noinj="no scsi_debug per-command error injection (before 6.7)"
case $injecting in
1)
	again=$(($(kvb_stat "$disk" dispatched) - $(kvb_stat "$disk" completed)))
	ktap_check "kvbatch dispatched the requeued UNMAPs again ($again of $nr_inject)" \
		test "$again" -ge "$nr_inject"
	ktap_check "a deferred write requeued by sd, back in kvbatch behind a demand read" \
		requeued_write
	ktap_check "no bio merged into the requeued write (front merges: ${rw_merges:-?})" \
		test "${rw_merges:-x}" = 0 ;;
refused)
	ktap_test_fail "kvbatch dispatched the requeued UNMAPs again (no rule)"
	ktap_test_fail "a deferred write requeued by sd (no rule)"
	ktap_test_fail "no bio merged into the requeued write (no rule)" ;;
*)
	ktap_test_skip "kvbatch dispatched requeued UNMAPs again: $noinj"
	ktap_test_skip "a deferred write requeued by sd: $noinj"
	ktap_test_skip "no bio merged into a requeued write: $noinj" ;;
esac

[ -w "$inject" ] && echo "- 2 0x42" > "$inject" 2>/dev/null
[ -w "$inject" ] && echo "- 2 0x2a" > "$inject" 2>/dev/null
kvb_set_sched "$disk" none
modprobe -r scsi_debug 2>/dev/null || true
ktap_finished
