#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A lower limit, set while work waits, still lets that work start.
#
# A reader issues rounds of 16 direct 4 KiB reads, one per thread, and
# waits for all 16 before the next round: nothing else is inserted while
# a round waits. max_inflight is 8 on a device with a 2 ms service time,
# so half of each round waits behind the limit, and every completion of
# the first half ends the hold and runs the queue. At a random moment in
# each round max_inflight drops to 1 (back to 8 between rounds). A store
# that lands between the completion that ended a hold and the queue run
# it asked for finds work queued, the hold ended and more in flight than
# the new limit: the queue run then finds "no work" (has_work()), and
# unless the store publishes the hold, no completion runs the queue again
# and the round never ends. Each round must end within 5 s; one that does
# not is counted, and freed (max_inflight 8 runs the queue), so that the
# test goes on.
#
# The same state follows when a depth window closed by a statistics read
# or the reap timer lowers the automatic limit (kvb_settle()); a store
# is the way to reach it at will.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3
secs=${KVB_RELIMIT_SECS:-30}
kvb_debug_kernel && secs=$((secs * 2))
kvb_begin_nullb 3 submit_queues=1 hw_queue_depth=64 irqmode=2 \
	completion_nsec=2000000

d=nullb0
kvb_use_kvbatch "$d"
echo 64 > "/sys/block/$d/queue/nr_requests"
echo 4 > "/sys/block/$d/queue/max_sectors_kb"
echo 8 > "/sys/block/$d/queue/iosched/max_inflight"

out=$KVB_SCRATCH/relimit
python3 - "/dev/$d" "/sys/block/$d/queue/iosched/max_inflight" "$secs" \
	> "$out" <<'PY'
import mmap, os, random, sys, threading, time

dev, knob, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
n = 16
fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
start = threading.Barrier(n + 1)
done = threading.Semaphore(0)
stop = False

def limit(v):
    with open(knob, "w") as f:
        f.write(str(v))

def reader(i):
    buf = mmap.mmap(-1, 4096)
    while True:
        start.wait()
        if stop:
            return
        os.preadv(fd, [buf], random.randrange(0, 1 << 18) << 12)
        done.release()

threads = [threading.Thread(target=reader, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
rounds = stuck = 0
worst = 0.0
end = time.monotonic() + secs
while time.monotonic() < end:
    limit(8)
    t0 = time.monotonic()
    start.wait()
    time.sleep(random.uniform(0, 0.01))
    limit(1)
    left, freed = n, False
    while left:
        if done.acquire(timeout=5):
            left -= 1
        elif not freed:
            stuck += 1
            freed = True
            limit(8)
        else:
            print("reads lost", left)
            sys.exit(1)
    worst = max(worst, time.monotonic() - t0)
    rounds += 1
stop = True
start.wait()
limit(8)
print(rounds, stuck, int(worst * 1000))
PY
rc=$?
read -r rounds stuck worst < "$out"
log "$rounds rounds of 16 reads, $stuck stuck until freed; slowest ${worst} ms"
ktap_check "the reader ran (rc $rc) and finished at least 100 rounds" \
	test "$rc" = 0 -a "${rounds:-0}" -ge 100
ktap_check "no round stuck behind a lower max_inflight" \
	test "${stuck:-1}" = 0
ktap_check "max_inflight is back to 8" \
	test "$(cat "/sys/block/$d/queue/iosched/max_inflight")" = 8

kvb_set_sched "$d" none || true
kvb_nullb_teardown
ktap_finished
