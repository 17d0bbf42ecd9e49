#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Zoned devices. kvbatch does not advertise ELEVATOR_F_ZBD_SEQ_WRITE, so on
# kernels that still rely on the elevator for zone write ordering (6.1)
# the block layer must refuse it for a sequential-write-required device;
# on kernels with zone write plugging (6.10+) ordering is done before the
# elevator and kvbatch must carry verified sequential zone writes.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio
kvb_load || ktap_exit_skip "cannot load kvbatch"
kvb_nullb_fresh zoned=1 zone_size=16 memory_backed=1 gb=1 irqmode=2 \
	completion_nsec=20000 hw_queue_depth=8
[ "$(cat /sys/block/nullb0/queue/zoned 2>/dev/null)" = host-managed ] ||
	ktap_exit_skip "nullb0 is not host-managed"

ktap_print_header
ktap_set_plan 2

# Zone write plugging lives in blk-zoned.c since 6.10.
major=$(uname -r | cut -d. -f1)
minor=$(uname -r | cut -d. -f2)
if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 10 ]; }; then
	ktap_check "kvbatch selected on a host-managed zoned disk" \
		kvb_set_sched nullb0 kvbatch
	ktap_check "sequential zone writes through kvbatch, verified" \
		kvb_fio zoned --filename=/dev/nullb0 --zonemode=zbd --rw=write \
		--bs=16k --direct=1 --ioengine=libaio --iodepth=8 --size=128M \
		--verify=crc32c --do_verify=1
else
	before=$(kvb_sched_of nullb0)
	refused() {
		! echo kvbatch > /sys/block/nullb0/queue/scheduler 2>/dev/null
	}
	ktap_check "kvbatch refused on a host-managed zoned disk" refused
	ktap_check "the disk keeps its scheduler ($before)" \
		test "$(kvb_sched_of nullb0)" = "$before"
fi

kvb_set_sched nullb0 none 2>/dev/null
kvb_nullb_teardown
ktap_finished
