#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A deferred write held behind demand goes to the device when it expires
# (write_expire_ms), even when nothing is inserted after it and the
# demand it waits behind is still in flight; and then, not a timer-wheel
# step later.
#
# On a null_blk with a 4 s service time and max_inflight 2: two normal
# reads fill the limit; an idle-class write (deferred) and a real-time
# read (demand) queue behind them. When the two reads complete, the
# demand read is dispatched and the write is held behind it, with nothing
# inserted from then on. write_expire_ms is set so that the write expires
# half a second after that, while the demand read has three and a half
# seconds left: the write must then start, and complete about
# write_expire_ms plus one service time after it was issued. A write that
# waits for the end of demand instead takes about 3.5 s more.
#
# Then, in five rounds, a demand read is in flight when the write comes,
# which is held from its insert, with write_expire_ms 3000 (the read
# completes a second later): the write must start within 300 ms of its
# expiry, and within 64 ms on average. The kernel's timer wheel fires a
# timer set that far ahead (750 jiffies at HZ=250) up to a 64-jiffy step
# (256 ms) late: a timer armed for the whole delay is 128 ms late on
# average.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3
svc_ms=4000
kvb_begin_nullb 8 submit_queues=1 hw_queue_depth=16 irqmode=2 \
	completion_nsec=$((svc_ms * 1000000))

d=nullb0
out=$KVB_SCRATCH/done
kvb_use_kvbatch "$d"
echo 64 > "/sys/block/$d/queue/nr_requests"
echo 2 > "/sys/block/$d/queue/iosched/max_inflight"
echo 30000 > "/sys/block/$d/queue/io_timeout"
# Expiry 500 ms after the reads complete and the demand read starts
# (svc_ms after the reads were issued, shortly before the write), long
# before the demand read completes (2 x svc_ms).
expire_ms=$((svc_ms + 500))
echo "$expire_ms" > "/sys/block/$d/queue/iosched/write_expire_ms"
echo 1 > "/sys/kernel/debug/block/$d/sched/reset_stats"

# One process: each I/O (4 KiB, O_DIRECT) from a thread of its own in its
# I/O priority class, started once kvbatch's statistics show the one
# before it in place (10 s a step; no process is started meanwhile, so
# the steps take milliseconds). Prints "setup ok" or what went wrong,
# then per I/O its name and latency (ms, from just before the system
# call), in completion order.
python3 - "$(dirname "$0")" "/dev/$d" \
	"/sys/kernel/debug/block/$d/sched/stats" > "$out" <<'PY'
import sys

sys.path.insert(0, sys.argv[1])
from kvbio import BE, IDLE, RT, Ios, wait_stat

dev, stats = sys.argv[2:4]
ios = Ios(dev)
ios.start('read1', 10, cls=BE)
ios.start('read2', 20, cls=BE)
ok = wait_stat(stats, 'inflight', 2) == 0
if ok:
    ios.start('write', 30, write=True, cls=IDLE)
    ok = wait_stat(stats, 'queued', 1) == 0
if ok:
    ios.start('demand', 40, cls=RT)
    ok = wait_stat(stats, 'queued', 2) == 0
if ok:
    print('setup ok')
for name, ms in ios.join():
    print(name, ms)
PY
# What went wrong in the setup, if anything (diagnostics already); the
# I/Os' lines, in completion order.
grep -vE '^([a-z0-9]+ [0-9]+|setup ok)$' "$out"
done_ios=$(grep -E '^[a-z0-9]+ [0-9]+$' "$out")
log "completed (name, ms): $(echo "$done_ios" | tr '\n' ' ')"
log "$(tr '\n' ' ' < /sys/kernel/debug/block/$d/sched/stats)"

ktap_check "two reads in flight, the write and the demand read queued" \
	grep -qx "setup ok" "$out"
ktap_check "the write was deferred" \
	test "$(kvb_stat $d writes_deferred)" -ge 1
lat_w=$(echo "$done_ios" | awk '$1 == "write" { print $2 }')
lat_d=$(echo "$done_ios" | awk '$1 == "demand" { print $2 }')
# Expiry, then one service time; 1 s for the guest's threads and timers.
# Waiting for the end of demand would add about 3.5 s.
limit=$((expire_ms + svc_ms + 1000))
log "write took ${lat_w:-?} ms (limit $limit), demand read ${lat_d:-?} ms"
ktap_check "the write started when it expired, not at the end of demand" \
	test "${lat_w:-999999}" -lt "$limit"
ktap_check "the demand read completed first" \
	test "$(echo "$done_ios" | sed -n 3p | cut -d' ' -f1)" = demand

# Rounds: a demand read in flight, then the write, held from its insert.
# Per round the write's lateness: its latency less write_expire_ms and
# the service time (the device's timer is exact; the thread's own time
# to issue and return is a few ms).
expire2_ms=3000
echo "$expire2_ms" > "/sys/block/$d/queue/iosched/write_expire_ms"
python3 - "$(dirname "$0")" "/dev/$d" \
	"/sys/kernel/debug/block/$d/sched/stats" > "$out" <<'PY'
import sys

sys.path.insert(0, sys.argv[1])
from kvbio import IDLE, RT, Ios, wait_stat

dev, stats = sys.argv[2:4]
for i in range(5):
    ios = Ios(dev)
    ios.start('demand', 100 + 2 * i, cls=RT)
    ok = wait_stat(stats, 'inflight', 1) == 0
    if ok:
        ios.start('write', 101 + 2 * i, write=True, cls=IDLE)
        ok = wait_stat(stats, 'queued', 1) == 0
    lat = dict(ios.join())
    print('round', i, 'ok' if ok else 'setup-failed', lat.get('write', -1))
PY
grep -v '^round ' "$out"
# Each round's lateness (ms), or "setup" where the round did not come to
# pass.
late=$(awk -v e="$expire2_ms" -v s="$svc_ms" '$1 == "round" {
	print ($3 == "ok" ? $4 - e - s : "setup") }' "$out")
log "write_expire_ms $expire2_ms, held from its insert: late by (ms) ${late//$'\n'/, }"
ktap_check "5 rounds: a demand read in flight, the write held from its insert" \
	test "$(echo "$late" | grep -cx -- '-\?[0-9]\+')" = 5
# shellcheck disable=SC2016
ktap_check "each write started after its expiry, within 300 ms" \
	awk '$1 == "setup" || $1 >= 300 || $1 < -50 { bad = 1 }
		END { exit bad }' <<< "$late"
# shellcheck disable=SC2016
ktap_check "the writes started within 64 ms of their expiry on average" \
	awk '$1 != "setup" { sum += $1; n++ }
		END { exit !(n && sum / n < 64) }' <<< "$late"
ktap_check "accounting balances (inserted = completed + merged)" \
	kvb_balanced "$d"

kvb_set_sched "$d" none || true
kvb_nullb_teardown
ktap_finished
