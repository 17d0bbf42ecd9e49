#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Leaks: after the other tests (and a few more select/deselect cycles),
# kmemleak must find no unreferenced object allocated by kvbatch, neither
# while the module is loaded (backtraces name kvbatch's functions) nor after
# it is unloaded (backtraces then hold bare addresses, checked against the
# range the module occupied). Runs after the other tests but kvb_faults.sh
# (which checks for leaks from its own failed switches); needs a kernel with
# CONFIG_DEBUG_KMEMLEAK (the debug kernel of make test-debug), otherwise
# SKIP.
source "$(dirname "$0")/lib.sh"

km=/sys/kernel/debug/kmemleak

kvb_require_root
[ -w $km ] || ktap_exit_skip "kernel without kmemleak (make test-debug)"
kvb_begin_nullb 3 submit_queues=2 hw_queue_depth=8 irqmode=2 completion_nsec=20000

cycles() {
	local i

	for i in $(seq 20); do
		kvb_set_sched nullb0 kvbatch || return 1
		dd if=/dev/nullb0 of=/dev/null bs=64k count=32 iflag=direct status=none || return 1
		kvb_set_sched nullb0 none || return 1
	done
}
ktap_check "20 select/read/deselect cycles" cycles
kvb_nullb_teardown

ktap_check "kmemleak finds nothing allocated by kvbatch" kvb_kmemleak_clean

# After rmmod: an object kvbatch leaked outlives the module, and its
# allocation backtrace points into the module's former text.
scan_after_unload() {
	local f=$KVB_SCRATCH/kmemleak base size n mine lo hi

	read -r base size < <(awk '$1 == "kvbatch" { print $6, $2 }' /proc/modules)
	case $base in
	0x*[1-9a-f]*) ;;
	*) log "cannot read kvbatch's address from /proc/modules ($base)"; return 1 ;;
	esac
	kvb_unload || { log "rmmod kvbatch failed"; return 1; }
	kvb_kmemleak_scan "$f"
	n=$(grep -c '^unreferenced object' "$f")
	# The range as 16 hex digits (bash prints a kernel address, negative
	# in its signed arithmetic, in two's complement).
	lo=$(printf '%016x' $((base))) hi=$(printf '%016x' $((base + size)))
	awk -v lo="$lo" -v hi="$hi" -f "$KVB_ROOT/selftests/kmemleak-ours.awk" \
		"$f" > "$f.ours"
	mine=$(grep -c '^unreferenced object' "$f.ours")
	log "kmemleak after unload: $n unreferenced objects in total, $mine from kvbatch's former range $base+$size"
	[ "$mine" -eq 0 ] || { head -60 "$f.ours" | sed 's/^/# /'; return 1; }
}
ktap_check "after rmmod, kmemleak finds nothing allocated by kvbatch" scan_after_unload
ktap_finished
