#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Requeued discards on a SCSI disk. sd builds an UNMAP's parameter list in
# a page hung on rq->special_vec, which shares storage with rq->rb_node.
# When the command must be prepared again (here: scsi_debug answers UNMAP
# with NOT READY, "asymmetric access state transition", for which the
# SCSI midlayer unprepares the request and requeues it after a second),
# sd frees that page and leaves the pointer; the request comes back
# through the elevator and kvbatch must not take the stale pointer for a
# position in its sort trees. (A RECOVERED ERROR would not do: the
# midlayer completes the whole discard.)
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
ktap_set_plan 7

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
# failure, not an old kernel.
if [ -e "$inject" ]; then
	injecting=refused
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
# 30 s, or 300 s in a debug kernel's guest, where each blkdiscard took
# about 2.5 s on an idle host and longer beside a kernel build
# (2026-11-30, 6.12: 3 of the 16 still running at 30 s).
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
	ktap_test_fail "scsi_debug took the UNMAP error rule ($inject)"
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

[ -w "$inject" ] && echo "- 2 0x42" > "$inject" 2>/dev/null
kvb_set_sched "$disk" none
modprobe -r scsi_debug 2>/dev/null || true
ktap_finished
