#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Work queued behind max_inflight starts when a completion makes room,
# not when the device has drained. max_inflight is 8 on a device with a
# 1.5 s service time, 4 KiB per request (max_sectors_kb 4); reads start
# 100 ms apart, then a probe read comes:
#
# - after eight reads, a 4 KiB probe: the limit is full and kvbatch's
#   queue empty when it is inserted, and has_work() says "no work", so
#   blk-mq never asks dispatch for it. Only the insert can tell the
#   completions that work waits.
# - after seven reads, an 8 KiB probe, split into two requests inserted
#   together: the dispatch of the first fills the limit, and blk-mq asks
#   for no more (has_work()). Only that dispatch can tell the
#   completions that the second waits.
#
# Either way the waiting request must start when the first read in
# flight completes (the probe takes about 2.2 s), not when the device
# has drained (about 2.9 s).
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3
# A debug kernel runs the reading threads more slowly: everything twice
# as long.
scale=1
kvb_debug_kernel && scale=2
svc_ms=$((1500 * scale))
gap_ms=$((100 * scale))
kvb_begin_nullb 6 submit_queues=1 hw_queue_depth=16 irqmode=2 \
	completion_nsec=$((svc_ms * 1000000))

d=nullb0
kvb_use_kvbatch "$d"
echo 64 > "/sys/block/$d/queue/nr_requests"
echo 4 > "/sys/block/$d/queue/max_sectors_kb"
echo 8 > "/sys/block/$d/queue/iosched/max_inflight"
# null_blk times requests out after 5 s; the probe may take 3 service times.
echo $((4 * svc_ms + 10000)) > "/sys/block/$d/queue/io_timeout"

# reads N KIB: N 4 KiB direct reads, each from a thread of its own,
# started 100 ms apart, then a probe read of KIB KiB. Each thread notes
# the time just before its read and the time it took (ms); printed in
# issue order. A thread may run late: the last read issued, whichever
# thread it was, is the probe.
reads() {
	python3 - "/dev/$d" "$gap_ms" "$1" "$2" <<'PY'
import mmap, os, sys, threading, time

dev, gap = sys.argv[1], int(sys.argv[2]) / 1000
n, probe = int(sys.argv[3]), int(sys.argv[4]) * 1024
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
out = []

def read(i, size):
    buf = mmap.mmap(-1, size)
    t = time.monotonic()
    os.preadv(fd, [buf], i << 20)
    out.append((t, time.monotonic() - t))

threads = []
for i in range(n + 1):
    size = probe if i == n else 4096
    threads.append(threading.Thread(target=read, args=(i, size)))
    threads[-1].start()
    time.sleep(gap)
for t in threads:
    t.join()
for t, lat in sorted(out):
    print(int(t * 1000), int(lat * 1000))
PY
}

# probe NAME N KIB: run reads N KIB and check the probe.
probe() {
	local name=$1 n=$2 issued=$KVB_SCRATCH/issued-$1
	local t9 lat9 busy first last limit

	reads "$n" "$3" > "$issued"
	read -r t9 lat9 < <(tail -n 1 "$issued")
	# Reads in flight when the probe was issued (issued before, done
	# after), and when the first and the last completed, in ms after it.
	read -r busy first last < <(awk -v t="$t9" -v n="$n" '
		NR <= n && $1 + $2 > t {
			k++; c = $1 + $2 - t
			if (!f || c < f) f = c
			if (c > l) l = c
		}
		END { print k + 0, f + 0, l + 0 }' "$issued")
	# Started at the first completion: first + service. At the last:
	# last + service. The limit is midway.
	limit=$((svc_ms + (first + last) / 2))
	log "$name: issue time (ms after the first) and latency (ms):" \
		"$(awk 'NR == 1 { t = $1 } { printf "%d/%d ", $1 - t, $2 }' \
			"$issued")"
	log "$name: $busy in flight, completing $first to $last ms later;" \
		"it took $lat9 ms: $((first + svc_ms)) if started at the first" \
		"completion, $((last + svc_ms)) at the last (limit $limit ms)"

	ktap_check "$name: $((n + 1)) reads, $n in flight at the probe" \
		test "$(wc -l < "$issued")" = $((n + 1)) -a "$busy" = "$n"
	ktap_check "$name: it started when the first read completed, not the last" \
		test "$lat9" -lt "$limit"
	# 100 ms for the timer and the queue run.
	ktap_check "$name: it waited for room: max_inflight held it" \
		test "$lat9" -ge $((first + svc_ms - 100))
}

probe "inserted behind a full limit" 8 4
probe "second half behind the dispatch that filled the limit" 7 8

kvb_set_sched "$d" none || true
kvb_nullb_teardown
ktap_finished
