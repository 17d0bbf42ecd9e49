#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvvm_icount.sh: tools/kvvm --icount, on the host, in one guest of four
# vCPUs on the newest Debian 6.1 kernel.
#
# Benchmarks compare schedulers on the guest's instruction clock, so that
# the host's speed and load do not enter the figures; multi-queue paths
# need more than one vCPU on that clock. This checks that such a guest
# has all its vCPUs online, that a four-queue null_blk maps a hardware
# context to each of them, that the guest's time is not the host's (a
# guest sleep of 60 s is skipped over, not waited for), and that a device's
# service time reads as the device's (null_blk's 1 ms completion at queue
# depth 1 reads 1.000-1.050 ms: the guest's CPU adds only its few
# microseconds per request).
#
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
ktap_no_args kvvm_icount.sh "$@"

ktap_print_header
ktap_set_plan 4

krel=$(make -s -C "$top" --no-print-directory print-kernels | tr ' ' '\n' | grep '^6\.1\.' | head -n 1)
[ -n "$krel" ] || ktap_exit_skip "no Debian 6.1 kernel in /boot (scripts/install-deps.sh installs it)"

mkdir -p "$top/build/kvvm-icount"
out=$top/build/kvvm-icount/out.txt
guest=$top/build/kvvm-icount/guest.sh
cat > "$guest" <<'EOF'
echo "cpus $(nproc)"
modprobe null_blk submit_queues=4 poll_queues=0 hw_queue_depth=128 irqmode=2 completion_nsec=1000000 || exit 1
mapped=0
for h in /sys/block/nullb0/mq/*/; do
	[ -n "$(cat "$h/cpu_list")" ] && mapped=$((mapped + 1))
done
echo "mapped $mapped"
t0=$(date +%s)
echo "sleeping"
sleep 60
echo "slept $(($(date +%s) - t0))"
cd /tmp && fio --name=qd1 --filename=/dev/nullb0 --direct=1 --rw=randread \
	--bs=4k --ioengine=psync --iodepth=1 --runtime=1 --time_based \
	--output-format=json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]["read"]["clat_ns"]
print("clat_us %.1f" % (j["mean"] / 1000))'
EOF

# Each line of the guest's output stamped with the host's time on arrival
# (kvvm streams it live).
"$top/tools/kvvm" --icount -k "$krel" --no-module -c 4 -t 600 -- bash "$guest" 2>&1 |
	while IFS= read -r line; do echo "$(date +%s) $line"; done > "$out"
rc=${PIPESTATUS[0]}
sed 's/^[0-9]* /guest: /' "$out" | ktap_diag
[ $rc = 0 ] || ktap_print_msg "kvvm exited $rc"

# val NAME: the value of the guest's line "NAME VALUE"; at NAME: the host
# time that line arrived.
val() { sed -n "s/^[0-9]* $1 //p" "$out" | tail -n 1; }
at() { sed -n "s/^\([0-9]*\) $1\( .*\)\{0,1\}\$/\1/p" "$out" | tail -n 1; }
cpus=$(val cpus) mapped=$(val mapped) slept=$(val slept) clat=$(val clat_us)
t0=$(at sleeping) t1=$(at slept)
host_secs=$(( ${t1:-0} - ${t0:-0} ))
skipped() { [ "${slept:-0}" -ge 60 ] && [ -n "$t0" ] && [ -n "$t1" ] && [ "$host_secs" -lt 30 ]; }
ktap_check "the guest has its 4 vCPUs online (${cpus:-none})" [ "${cpus:-0}" = 4 ]
ktap_check "null_blk's 4 hardware contexts each have a CPU (${mapped:-none})" [ "${mapped:-0}" = 4 ]
ktap_check "a guest sleep of 60 s (${slept:-none} s) took under 30 s of the host's ($host_secs s)" skipped
ktap_check "a 1 ms null_blk read at queue depth 1 reads 1000-1050 us (${clat:-none})" \
	awk -v c="${clat:-0}" 'BEGIN { exit !(c >= 1000 && c <= 1050) }'

ktap_finished
