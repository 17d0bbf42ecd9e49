#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# NVMe passthrough is never scheduled. io_uring uring_cmd writes on the
# generic char device (/dev/ng0n1) are plugged, and on 6.1 the plug hands
# them to kvbatch's insert_requests() with RQF_ELVPRIV set. They must go
# straight to the dispatch list: not into the deferred write queue, where,
# while RT reads keep demand in flight, they would wait up to
# write_expire_ms.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio ionice python3
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"
[ -c /dev/ng0n1 ] || ktap_exit_skip "no NVMe generic device /dev/ng0n1"
fio --enghelp=io_uring_cmd >/dev/null 2>&1 ||
	ktap_exit_skip "fio has no io_uring_cmd engine"

ktap_print_header
ktap_set_plan 5

d=nvme0n1
stats=/sys/kernel/debug/block/$d/sched/stats

kvb_use_kvbatch "$d"
expire_ms=$(cat "/sys/block/$d/queue/iosched/write_expire_ms")
echo 256 > "/sys/block/$d/queue/nr_requests"
echo 1 > "/sys/kernel/debug/block/$d/sched/reset_stats"

# RT (demand) readers keep demand requests in flight the whole time.
n0=$(kvb_io_count "$d")
(cd "$KVB_SCRATCH" && ionice -c 1 -n 0 fio --name=demand \
	--filename=/dev/$d --direct=1 --ioengine=libaio --rw=randread \
	--bs=4k --iodepth=32 --numjobs=2 --size=256M --time_based \
	--runtime=16 >/dev/null 2>&1) &
demand=$!
# Without demand in flight nothing would be deferred, and the checks
# below would hold however passthrough were handled.
ktap_check "RT demand readers are doing I/O" kvb_wait_io "$d" "$n0"
kvb_sleep 1

# Passthrough writes, 16 commands per io_uring_enter(): io_uring plugs a
# submission of more than two, and the plug inserts them through kvbatch.
pt() {
	(cd "$KVB_SCRATCH" && fio --name=passthru --filename=/dev/ng0n1 \
		--ioengine=io_uring_cmd --cmd_type=nvme --rw=randwrite \
		--bs=4k --iodepth=32 --iodepth_low=16 \
		--iodepth_batch_submit=16 --iodepth_batch_complete_min=16 \
		--offset=512M --size=64M \
		--time_based --runtime=8 --output-format=json \
		--output="$KVB_SCRATCH/pt.json" >/dev/null 2>&1)
}
ktap_check "passthrough writes (io_uring_cmd on ng0n1) while demand reads run" pt
wait $demand

read -r ios p99 max < <(python3 - "$KVB_SCRATCH/pt.json" <<'EOF' 2>/dev/null
import json, sys
w = json.load(open(sys.argv[1]))["jobs"][0]["write"]
c = w["clat_ns"]
p = c.get("percentile", {}).get("99.000000", 0)
print(w["total_ios"], p // 1000000, c["max"] // 1000000)
EOF
)
log "passthrough writes: ${ios:-?} ios, clat p99 ${p99:-?} ms, max ${max:-?} ms (write_expire_ms $expire_ms)"
log "$(tr '\n' ' ' < $stats)"

# 6.1's plug hands passthrough to insert_requests(); later kernels' plug
# sends it past the elevator, and kvbatch never sees it: there neither
# check could fail.
case $(uname -r) in
6.1.*)
	ktap_check "passthrough writes were not deferred (writes_deferred 0)" \
		test "$(kvb_stat $d writes_deferred)" -eq 0
	ktap_check "plugged passthrough writes went to the dispatch list (bypassed)" \
		test "$(kvb_stat $d bypassed)" -gt 0 ;;
*)
	ktap_test_skip "passthrough writes were not deferred" \
		"the plug keeps passthrough from the elevator on $(uname -r)"
	ktap_test_skip "plugged passthrough writes went to the dispatch list" \
		"the plug keeps passthrough from the elevator on $(uname -r)" ;;
esac
ktap_check "passthrough write p99 latency below write_expire_ms / 5" \
	test "${p99:-999999}" -lt $((expire_ms / 5))

kvb_set_sched "$d" none
ktap_finished
