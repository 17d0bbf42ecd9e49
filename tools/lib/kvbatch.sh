# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034
#
# tools/lib/kvbatch.sh: what the shell tools (kvsuite, kvrecord, kvab)
# and the selftests (selftests/lib.sh, selftests/run-guest.sh) share.
# Sourced; defines nothing but these names.

# kvb_usage_error TOOL USAGE [MESSAGE]: a bad argument, by the tools'
# command-line convention: "TOOL: MESSAGE" (if there is one) and then the
# one usage line USAGE on stderr, and exit 2. --help prints the usage on
# stdout and exits 0, which each tool does itself.
kvb_usage_error() {
	[ -z "${3:-}" ] || echo "$1: $3" >&2
	echo "$2" >&2
	exit 2
}

# The schedulers kvbatch is compared with, then kvbatch: the rows of
# every comparison table, in this order. The one copy of the list:
# tools/lib/kvbatch.py reads it from this line, for the Python tools
# (tools/kvreport), so it stays KVB_SCHEDS="name ...".
KVB_SCHEDS="none mq-deadline kyber bfq kvbatch"

# kvb_tunables HEADER: kvbatch's numeric tunables, from kv-tunables.h (the
# list the module is built from), one "name default min max" line each.
# batch_key, which takes a name, is not among them.
kvb_tunables() {
	local l re='^KVB_TUNABLE\([A-Z_]+,[[:space:]]*([a-z_]+),[[:space:]]*([0-9]+),[[:space:]]*([0-9]+),[[:space:]]*([0-9]+)\)'

	while IFS= read -r l; do
		[[ $l =~ $re ]] || continue
		echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
	done < "$1"
}

# kvb_tunable_ok HEADER KNOB VALUE: whether kvbatch takes VALUE for
# iosched/KNOB: a plain decimal in a numeric tunable's range, or one of
# batch_key's names.
kvb_tunable_ok() {
	local n d lo hi

	if [ "$2" = batch_key ]; then
		case $3 in ioprio|cgroup|cgroup+ioprio) return 0 ;; esac
		return 1
	fi
	while read -r n d lo hi; do
		[ "$n" = "$2" ] || continue
		[[ $3 =~ ^(0|[1-9][0-9]{0,9})$ ]] && [ "$3" -ge "$lo" ] &&
			[ "$3" -le "$hi" ]
		return
	done < <(kvb_tunables "$1")
	return 1
}

# kvb_load_peers: load the peers that are modules (kyber, bfq), so that a
# queue offers them; a kernel without one just does not.
kvb_load_peers() {
	modprobe -q kyber-iosched 2>/dev/null || true
	modprobe -q bfq 2>/dev/null || true
}

# kvb_nullb_load PARAM...: load null_blk with one blk-mq device, nullb0,
# shaped by the module parameters PARAM (later ones override earlier
# ones). Returns 1 if modprobe failed, 2 if it loaded but /dev/nullb0 did
# not appear.
kvb_nullb_load() {
	modprobe null_blk nr_devices=1 queue_mode=2 "$@" || return 1
	udevadm settle 2>/dev/null || true
	[ -b /dev/nullb0 ] || return 2
}

# kvb_nullb_reload PARAM...: kvb_nullb_load after unloading null_blk, so
# that a benchmark row gets a device of its own shape.
kvb_nullb_reload() {
	modprobe -r null_blk 2>/dev/null || true
	kvb_nullb_load "$@"
}

# The null_blk shapes of the benchmark rows, the same for tools/kvsuite
# and tools/kvab: the no-delay "cost" device, where the scheduler's own
# CPU time per request decides the IOPS, and the deep device (two
# hardware queues of 128 tags, 1 ms completions) of the steady and bursty
# rows.
# shellcheck disable=SC2034
KVB_NULLB_COST=(submit_queues=2 hw_queue_depth=64 irqmode=0 gb=4)
# shellcheck disable=SC2034
KVB_NULLB_DEEP=(submit_queues=2 hw_queue_depth=128 irqmode=2
		completion_nsec=1000000 gb=4)
# kvbench's deep recall row on that device (make bench's deep boot,
# tools/kvab's recall row): recall batches of 16-64 4k reads among 256
# foreign and 64 prefetch readers.
# shellcheck disable=SC2034
KVB_DEEP_RECALL=(-s 16,32,64 -b 4096 --foreign 256 --prefetch 64)
# A deep device that the recall row saturates (tools/kvab's satrecall
# row): 256 tags shared by both hardware queues, as a drive's parallel
# units are reachable from each of its queues, 8 ms per request.
# shellcheck disable=SC2034
KVB_NULLB_SAT=(submit_queues=2 hw_queue_depth=256 shared_tag_bitmap=1
	       irqmode=2 completion_nsec=8000000 gb=4)
# kvssd's shape for the recall row on a device that queues inside
# (tools/kvab's ssdrecall row): 64 dies (8 channels of 8) of 4 ms reads
# (100 us x 40), two hardware queues of 256 tags. Its bound, 16 000 read
# IOPS, is a fraction of what a guest vCPU drives on the instruction clock
# under any scheduler, so the device, not the guest, is the limit.
# shellcheck disable=SC2034
KVB_KVSSD_RECALL=(channels=8 dies_per_channel=8 read_us=100 time_scale=40
		  cv_pct=30 gc_programs=0 hw_queues=2 queue_depth=256
		  capacity_mb=4096 seed=7)

# kvb_kernel_has OPTION: the running kernel was built with OPTION=y.
# Debian 12 keeps a kernel's config in /boot, Debian 13 (the 7.3 guest's
# root) in /usr/lib/modules/<release>.
kvb_kernel_has() {
	local r

	read -r r < /proc/sys/kernel/osrelease
	grep -qsx "$1=y" "/boot/config-$r" "/lib/modules/$r/config"
}

# A debug kernel (make test-debug: KASAN, lockdep) under TCG runs several
# times slower: the selftest runner gives each test a longer timeout, and
# tests that need a device slower than the guest's own work (a queue that
# fills, a request that waits) give it more time.
kvb_debug_kernel() {
	kvb_kernel_has CONFIG_KASAN || kvb_kernel_has CONFIG_PROVE_LOCKING
}

# kvb_rotate WORD...: print the words with the first moved to the end.
# Benchmarks run their schedulers in an order rotated every round: the
# host's speed drifts by more than the differences measured, and rotating
# spreads the drift over all of them.
kvb_rotate() {
	[ $# -gt 0 ] || return 0
	local first=$1

	shift
	echo "$* $first" | sed 's/^ //'
}

# kvb_python: print a python3 that can import prometheus_client, which
# tools/kvbatch-stat's --prometheus needs; status 1 if there is none.
# Debian's /usr/bin/python3 has it once python3-prometheus-client is
# installed, but the first python3 on PATH may be another one.
kvb_python() {
	local p

	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import prometheus_client' 2>/dev/null; then
			command -v "$p"
			return 0
		fi
	done
	return 1
}
