#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# An engine's tagged reads reach kvbatch as its batches. On an ext4
# filesystem (ext2 from busybox's mke2fs where there is no mkfs.ext4, as
# in the Debian 13 root) on a kvbatch-scheduled null_blk, tools/examples/recall.py
# (one file per KV block, a thread pool, each request a recall batch of
# O_DIRECT reads inside kvbatch.recall()) runs as root in the demand tier:
# every request must open a demand batch of its own and every read be
# dispatched as demand. Unprivileged (setpriv, no capability), demand must
# raise PermissionError and issue nothing, and tier="group" must run; on a
# module with the hint_demand tunable (BE with a hint is a normal-tier
# batch unless it is set), the group batches must be normal-tier batches,
# none demand. The io_uring example (build/tools/recall, kvbatch.h) must
# open a demand batch as root and be refused demand without privilege.
source "$(dirname "$0")/lib.sh"

py=/usr/bin/python3
recall_c=$KVB_ROOT/build/tools/recall
requests=12
per=4

kvb_require_root
kvb_require_cmd setpriv mount umount $py
if command -v mkfs.ext4 > /dev/null; then
	mkfs=(mkfs.ext4 -q -F -E 'nodiscard,lazy_itable_init=0,lazy_journal_init=0')
	fstype=ext4
elif busybox --list 2>/dev/null | grep -qx mke2fs; then
	mkfs=(busybox mke2fs -F -b 4096)
	fstype=ext2
else
	ktap_exit_skip "no mkfs.ext4 and no busybox mke2fs"
fi
[ -x "$recall_c" ] || ktap_exit_skip "build/tools/recall not built (make tools)"
kvb_begin_nullb 7 submit_queues=1 hw_queue_depth=4 memory_backed=1 gb=1 \
	irqmode=2 completion_nsec=100000

q=/sys/block/nullb0/queue
# The unprivileged runs need every directory on the way readable: the
# programs and the mount point live in directories of their own.
bin=$(mktemp -d /tmp/kvb-engine-bin.XXXXXX)
mnt=$(mktemp -d /tmp/kvb-engine-mnt.XXXXXX)
kvb_defer "umount $mnt 2>/dev/null; rm -rf $bin; rmdir $mnt"
mkdir "$bin/examples" "$bin/python"
cp "$KVB_ROOT/tools/examples/recall.py" "$bin/examples/"
cp "$KVB_ROOT/tools/python/kvbatch.py" "$bin/python/"
cp "$recall_c" "$bin/recall"
chmod -R a+rX "$bin" "$mnt"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all
	--bounding-set=-all)

fs() {
	kvb_set_sched nullb0 kvbatch || return 1
	echo 256 > $q/nr_requests
	# A request's reads come one after another from its thread: the
	# window keeps them one batch across the gaps between them.
	echo 50000 > $q/iosched/batch_window_us
	"${mkfs[@]}" /dev/nullb0 > "$KVB_SCRATCH/mkfs.log" 2>&1 ||
		{ ktap_diag < "$KVB_SCRATCH/mkfs.log"; return 1; }
	mount -o noatime /dev/nullb0 "$mnt" || return 1
	mkdir "$mnt/kv" && chmod 755 "$mnt/kv" || return 1
	# The block files, written once; then nothing in flight.
	$py "$bin/examples/recall.py" -n 32 -r 1 -p 1 -t group "$mnt/kv" \
		> /dev/null || return 1
	sync && chmod -R a+rX "$mnt/kv"
}
ktap_check "$fstype with 32 KV block files on kvbatch's nullb0" fs

# delta NAME: NAME's growth since the snapshot in "before".
declare -A before after
snap() {
	kvb_balanced nullb0 > /dev/null
	kvb_read_stats "$1" nullb0
}
delta() {
	echo $(( ${after[$1]:-0} - ${before[$1]:-0} ))
}

demand_py() {
	local out=$KVB_SCRATCH/demand.out n

	snap before
	$py "$bin/examples/recall.py" -r $requests -p $per -j 4 -t demand \
		"$mnt/kv" > "$out" 2>&1 || { ktap_diag < "$out"; return 1; }
	snap after
	tail -n 3 "$out" | ktap_diag
	n=$(grep -c '^request [0-9]*: batch [0-9]* ioprio 0x2' "$out")
	log "demand: $n requests printed; demand batches opened $(delta demand_batches_opened), closed $(delta demand_batches_closed), dispatched_demand $(delta dispatched_demand)"
	[ "$n" = $requests ] &&
		[ "$(delta demand_batches_opened)" -ge $requests ] &&
		[ "$(delta demand_batches_closed)" = "$(delta demand_batches_opened)" ] &&
		[ "$(delta dispatched_demand)" -ge $((requests * per)) ]
}
ktap_check "recall.py as root: $requests requests open >= $requests demand batches, all reads demand" \
	demand_py

# Unprivileged demand: PermissionError on entry, the thread's I/O
# priority unchanged, nothing issued as demand; the example exits 1.
denied() {
	local out=$KVB_SCRATCH/denied.out

	snap before
	"${nobody[@]}" $py -c '
import sys
sys.path.insert(0, sys.argv[1])
import kvbatch
p = kvbatch.thread_ioprio()
try:
    with kvbatch.recall():
        sys.exit("entered")
except PermissionError as e:
    print(e)
    sys.exit(0 if kvbatch.thread_ioprio() == p and "CAP_SYS_NICE" in str(e) else 1)
' "$bin/python" > "$out" 2>&1 || { ktap_diag < "$out"; return 1; }
	ktap_diag < "$out"
	"${nobody[@]}" $py "$bin/examples/recall.py" -r 2 -t demand "$mnt/kv" \
		> "$out" 2>&1
	if [ $? != 1 ] || ! grep -q 'CAP_SYS_NICE' "$out"; then
		ktap_diag < "$out"
		return 1
	fi
	snap after
	[ "$(delta demand_batches_opened)" = 0 ]
}
ktap_check "unprivileged demand: PermissionError, ioprio unchanged, no demand batch" denied

group_py() {
	local out=$KVB_SCRATCH/group.out n

	snap before
	"${nobody[@]}" $py "$bin/examples/recall.py" -r $requests -p $per \
		-j 4 -t group "$mnt/kv" > "$out" 2>&1 ||
		{ ktap_diag < "$out"; return 1; }
	snap after
	n=$(grep -c '^request [0-9]*: batch [0-9]* ioprio 0x4' "$out")
	log "group: $n requests printed; batches opened: demand $(delta demand_batches_opened), normal $(delta normal_batches_opened)"
	[ "$n" = $requests ]
}
ktap_check "recall.py unprivileged, tier group: $requests requests served" group_py

if [ ! -e $q/iosched/hint_demand ]; then
	ktap_test_skip "group batches are normal-tier batches" \
		"no hint_demand tunable: this module counts BE with a hint as demand"
else
	group_normal() {
		echo 0 > $q/iosched/hint_demand || return 1
		group_py || return 1
		[ "$(delta normal_batches_opened)" -ge $requests ] &&
			[ "$(delta demand_batches_opened)" = 0 ]
	}
	ktap_check "hint_demand 0: group batches are normal-tier batches, none demand" \
		group_normal
fi

# The io_uring example on one block file: 4 reads of 64 KiB, one batch.
uring() {
	local f=$mnt/kv/kvblock-000003 out=$KVB_SCRATCH/uring.out

	snap before
	"$bin/recall" -t demand "$f" 40 4 65536 > "$out" 2>&1 ||
		{ ktap_diag < "$out"; return 1; }
	snap after
	ktap_diag < "$out"
	grep -q 'demand batch 40, tag 0x2140' "$out" &&
		[ "$(delta demand_batches_opened)" -ge 1 ] &&
		[ "$(delta dispatched_demand)" -ge 4 ] || return 1
	"${nobody[@]}" "$bin/recall" -t demand "$f" 41 4 65536 > "$out" 2>&1
	if [ $? != 1 ] || ! grep -q 'needs CAP_SYS_NICE' "$out"; then
		ktap_diag < "$out"
		return 1
	fi
	"${nobody[@]}" "$bin/recall" -t group "$f" 42 4 65536 > "$out" 2>&1 ||
		{ ktap_diag < "$out"; return 1; }
}
ktap_check "recall (io_uring, kvbatch.h): a demand batch as root; unprivileged, demand refused, group served" \
	uring

ktap_check "kvbatch balanced after the runs" kvb_balanced nullb0
umount "$mnt"
kvb_nullb_teardown
ktap_finished
