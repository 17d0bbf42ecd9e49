#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Leaks: after the other tests (and a few more select/deselect cycles),
# kmemleak must find no unreferenced object allocated by kvbatch. Runs last;
# needs a kernel with CONFIG_DEBUG_KMEMLEAK (the debug kernel of make
# test-debug), otherwise SKIP.
source "$(dirname "$0")/lib.sh"

km=/sys/kernel/debug/kmemleak

kvb_require_root
[ -w $km ] || ktap_exit_skip "kernel without kmemleak (make test-debug)"
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_nullb_fresh submit_queues=2 hw_queue_depth=8 irqmode=2 completion_nsec=20000

ktap_print_header
ktap_set_plan 2

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

# Two scans: kmemleak reports an object only once it was seen unreferenced
# by a scan after the previous one.
scan_clean() {
	local n mine

	echo scan > $km; sleep 2; echo scan > $km
	cat $km > "$KVB_SCRATCH/kmemleak"
	n=$(grep -c '^unreferenced object' "$KVB_SCRATCH/kmemleak")
	mine=$(awk '/^unreferenced object/ { o = $0 } /kv[bp]_|kvbatch/ && o { print o; o = "" }' \
		"$KVB_SCRATCH/kmemleak" | wc -l)
	log "kmemleak: $n unreferenced objects in total, $mine allocated by kvbatch"
	[ "$mine" -eq 0 ] || { grep -B2 -A20 -E 'kv[bp]_|kvbatch' "$KVB_SCRATCH/kmemleak" | head -60 | sed 's/^/# /'; return 1; }
}
ktap_check "kmemleak finds nothing allocated by kvbatch" scan_clean
ktap_finished
