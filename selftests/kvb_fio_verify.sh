#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Data integrity through kvbatch: fio random read, random write, mixed,
# sequential (merging) and buffered (writeback + flush) jobs with
# --verify=crc32c on every test disk, then kvbatch's own accounting must
# balance: nothing left queued or in flight, and every inserted request
# either completed exactly once or was merged into another.
source "$(dirname "$0")/lib.sh"

SIZE=${SIZE:-16M}

kvb_setup_disks

ktap_print_header
ktap_set_plan $((${#disks[@]} * 7))

common=(--size="$SIZE" --ioengine=libaio --verify=crc32c --do_verify=1)

buffered() {
	local args=(--filename="/dev/$1" --rw=randwrite --bs=16k --offset=192M
		    "${common[@]}")

	kvb_fio "$1-buffered" "${args[@]}" --direct=0 --end_fsync=1 &&
		kvb_fio "$1-buffered" "${args[@]}" --direct=1 --verify_only=1
}

for d in "${disks[@]}"; do
	dev=/dev/$d
	if ! kvb_set_sched "$d" kvbatch; then
		for i in $(seq 7); do ktap_test_fail "$d: select kvbatch"; done
		continue
	fi
	ktap_check "$d: random write 4k-64k, verified" \
		kvb_fio "$d-randwrite" --filename=$dev --rw=randwrite \
		--bsrange=4k-64k --direct=1 --iodepth=32 "${common[@]}"
	# Random reads of what the previous job wrote, in its order, each
	# block checked against the header and crc32c written with it.
	ktap_check "$d: random read of written data, verified" \
		kvb_fio "$d-randwrite" --filename=$dev --rw=randwrite \
		--bsrange=4k-64k --direct=1 --iodepth=32 "${common[@]}" \
		--verify_only=1
	ktap_check "$d: mixed random read/write with verify backlog" \
		kvb_fio "$d-mixed" --filename=$dev --rw=randrw --rwmixread=60 \
		--bs=4k --direct=1 --iodepth=16 --verify_backlog=256 \
		--offset=64M "${common[@]}"
	ktap_check "$d: sequential 4k writes (merges), verified" \
		kvb_fio "$d-seq" --filename=$dev --rw=write --bs=4k --direct=1 \
		--iodepth=64 --iodepth_batch_submit=16 --offset=128M "${common[@]}"
	# Buffered: the device sees async writeback and a flush; the data is
	# then read back with O_DIRECT so the check is against the device,
	# not the page cache.
	ktap_check "$d: buffered writes + fsync, read back direct, verified" \
		buffered "$d"
	ktap_check "$d: 4 concurrent verified writers on disjoint ranges" \
		kvb_fio "$d-multi" --filename=$dev --rw=randwrite --bs=8k \
		--direct=1 --iodepth=8 --numjobs=4 --offset=256M \
		--offset_increment=16M --size=8M --ioengine=libaio \
		--verify=crc32c
	ktap_check "$d: accounting balances (inserted = completed + merged)" \
		kvb_balanced "$d"
	kvb_set_sched "$d" none
done

kvb_nullb_teardown
ktap_finished
