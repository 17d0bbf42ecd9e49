#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvssd (kvssd/kvssd.c), the deep SSD model as a block device, against
# what its model says. kvssd0 is loaded with 8 dies (2 channels of 4) of
# 40 ms reads (read_us 500 x time_scale 80), no spread (cv_pct 0) and no
# GC: 200 IOPS at most, which any guest outruns, even a TCG one beside
# another (a debug kernel's times are doubled). With fio (4 KiB random
# direct reads, io_uring, scheduler none):
#
# - at QD1 the mean completion latency is the service time: never less,
#   at most 5% more (the guest's own path: about 1 ms under TCG beside
#   another guest, which 40 ms makes 2.5%);
# - at QD 128, 16 times the dies, the device serves what its dies can,
#   dies / service time within 10% and never more, counted by its own
#   debugfs over the steady part of the run (fio's figure also counts the
#   drain at its end); the work waits inside it (its dies hold 90% of the
#   128 or more); and fio's mean latency is Little's, outstanding / IOPS,
#   within 10%;
# - debugfs "dies": the counts sum to what fio issued and to what the disk
#   completed, each die's busy time is its reads times the service time,
#   every die served some and nothing is left queued;
# - a read across a stripe boundary is two requests, one on each die
#   (chunk_sectors), and reads return zeroes;
# - bad parameters fail the load with EINVAL and a kernel log line naming
#   the parameter, and leave no disk;
# - rmmod is refused while fio holds the disk, then unloads cleanly: no
#   disk, no debugfs directory; the defaults give 64 dies and 16 000 read
#   IOPS; no kernel report.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio jq
ko=$KVB_ROOT/build/$KVB_KREL/kvssd/kvssd.ko
[ -f "$ko" ] || ktap_exit_skip "no $ko: make kvssd KERNELRELEASE=$KVB_KREL"
for f in "$KVB_ROOT"/kvssd/Kbuild "$KVB_ROOT"/kvssd/*.[ch]; do
	[ "$f" -nt "$ko" ] &&
		ktap_exit_skip "kvssd.ko is older than kvssd/${f##*/}: make kvssd KERNELRELEASE=$KVB_KREL"
done
[ -d /sys/module/kvssd ] && ktap_exit_skip "kvssd is loaded already"
kvb_defer "rmmod kvssd"

scale=80
kvb_debug_kernel && scale=160
read_us=500
svc_ns=$((read_us * scale * 1000))
dies=8
max_iops=$((dies * 1000000000 / svc_ns))
qd=128
params=(channels=2 dies_per_channel=4 "read_us=$read_us" "time_scale=$scale"
	cv_pct=0 gc_programs=0 hw_queues=2 queue_depth=256 capacity_mb=1024
	seed=7)
d=kvssd0
dbg=/sys/kernel/debug/kvssd/$d
reports0=$(kvb_kernel_reports)

ktap_print_header
ktap_set_plan 22

# --- bad parameters ------------------------------------------------------

# Each set of bad parameters is loaded after a mark in the kernel log;
# then one read of the log (a dmesg costs seconds in a TCG guest beside
# another) must have, after each mark, a line of kvssd naming the first
# parameter of the set.
bad=(channels=0 cv_pct=101 stripe_kb=3 page_kb=128 hw_queues=65
	queue_depth=0 time_scale=0 read_us=30000
	"channels=64 dies_per_channel=32")
declare -A insmod_out
for i in "${!bad[@]}"; do
	kvb_kmsg "kvb_kvssd: bad $i"
	# shellcheck disable=SC2086 # one or two parameters
	if insmod_out[$i]=$(insmod "$ko" ${bad[i]} 2>&1); then
		insmod_out[$i]="loaded"
		rmmod kvssd
	elif [ -e /sys/block/$d ] || [ -d /sys/module/kvssd ]; then
		insmod_out[$i]+=" (and kvssd0 or the module is there)"
	fi
done
dmesg > "$KVB_SCRATCH/dmesg"
# refused I: set I was refused with EINVAL, named after its mark, and
# left nothing.
refused() {
	local p=${bad[$1]%% *} named

	named=$(awk -v m="kvvm-mark: kvb_kvssd: bad $1\$" -v p="kvssd: $p" '
		$0 ~ m { on = 1; next }
		/kvvm-mark: / { on = 0 }
		on && index($0, p) { print; exit }' "$KVB_SCRATCH/dmesg")
	log "insmod ${bad[$1]}: ${insmod_out[$1]}"
	log "kernel log: ${named:-nothing names $p}"
	# kmod's insmod words EINVAL as "Invalid parameters".
	[[ ${insmod_out[$1]} == *"Invalid parameters" ]] && [ -n "$named" ]
}
for i in "${!bad[@]}"; do
	ktap_check "refused: ${bad[i]} (EINVAL, named in the kernel log, no disk)" \
		refused "$i"
done

# --- the test device -----------------------------------------------------

loaded() {
	local i

	insmod "$ko" "${params[@]}" || return 1
	for i in $(seq 50); do
		[ -b /dev/$d ] && break
		kvb_sleep 0.1
	done
	[ -b /dev/$d ] && kvb_set_sched $d none
}
if ! ktap_check "loads: ${params[*]}" loaded; then
	ktap_finished
fi

config_ok() {
	local chunk maxkb
	local -A cfg

	kvb_read_keys cfg "$dbg/config" || return 1
	kvb_read chunk /sys/block/$d/queue/chunk_sectors
	kvb_read maxkb /sys/block/$d/queue/max_hw_sectors_kb
	log "config: $(tr '\n' ' ' < "$dbg/config")"
	log "chunk_sectors $chunk, max_hw_sectors_kb $maxkb"
	[ "${cfg[dies]}" = $dies ] && [ "${cfg[read_ns]}" = $svc_ns ] &&
		[ "${cfg[max_read_iops]}" = $max_iops ] &&
		[ "${cfg[hw_queues]}" = 2 ] && [ "${cfg[queue_depth]}" = 256 ] &&
		[ "$chunk" = 128 ] && [ "$maxkb" -le 64 ]
}
ktap_check "config: $dies dies, $svc_ns ns reads, $max_iops IOPS; a 64 KiB stripe is chunk_sectors and bounds max_hw_sectors_kb" \
	config_ok

# dies_read: the debugfs dies, into the caller's dops (an array of each
# die's ops), ops and queued (their sums), busy_bad (dies whose busy time
# is not ops x the service time) and idle (dies with no ops).
dies_read() {
	local i q o b

	dops=() ops=0 queued=0 busy_bad=0 idle=0
	while read -r i q o _ b; do
		dops[i]=$o
		ops=$((ops + o))
		queued=$((queued + q))
		[ "$b" = $((o * svc_ns)) ] || busy_bad=$((busy_bad + 1))
		[ "$o" != 0 ] || idle=$((idle + 1))
	done < "$dbg/dies"
}

# --- a read across two stripes ---------------------------------------------

split_read() {
	local -a before
	local ops0

	dies_read
	before=("${dops[@]}")
	ops0=$ops
	# 32 KiB from 48 KiB: the last page of stripe 0 (die 0), the
	# first of stripe 1 (die 1).
	dd if=/dev/$d of="$KVB_SCRATCH/split" bs=32k count=1 skip=49152 \
		iflag=direct,skip_bytes status=none || return 1
	dies_read
	log "die 0: ${before[0]} -> ${dops[0]} ops, die 1: ${before[1]} -> ${dops[1]} ops"
	[ $((dops[0] - before[0])) = 1 ] && [ $((dops[1] - before[1])) = 1 ] &&
		[ "$ops" = $((ops0 + 2)) ] &&
		cmp -s -n 32768 "$KVB_SCRATCH/split" /dev/zero
}
ktap_check "a 32 KiB read across a stripe boundary: one request on each die, zeroes" \
	split_read

# --- QD1: the service time ---------------------------------------------------

# fio times with the kernel's CLOCK_MONOTONIC, the model's clock: its
# default, the TSC scaled by a rate it measures at start, is several
# percent off in a TCG guest on a busy host.
randread() {
	local name=$1

	shift
	kvb_fio "$name" --filename=/dev/$d --direct=1 --ioengine=io_uring \
		--rw=randread --bs=4k --clocksource=clock_gettime \
		--output-format=json "$@"
}
# fio_read NAME FIELD: the jq FIELD of fio run NAME's read, rounded down.
fio_read() {
	jq ".jobs[0].read.$2 | floor" "$KVB_SCRATCH/$1.log"
}

dies_read
ops_qd1=$ops
if randread qd1 --iodepth=1 --time_based --runtime=6; then
	clat=$(fio_read qd1 clat_ns.mean)
	n_qd1=$(fio_read qd1 total_ios)
	dies_read
	log "QD1: $n_qd1 reads, mean completion latency $clat ns; service time $svc_ns ns"
	ktap_check "QD1: mean latency is the service time (1.00-1.05 x)" \
		test $((clat * 100)) -ge $((svc_ns * 99)) -a \
		$((clat * 100)) -le $((svc_ns * 105))
	ktap_check "QD1: the dies counted each read fio issued ($n_qd1)" \
		test $((ops - ops_qd1)) = "$n_qd1"
else
	ktap_test_fail "QD1: mean latency is the service time (fio failed)"
	ktap_test_fail "QD1: the dies counted each read fio issued (fio failed)"
fi

# --- QD 128: saturation, Little's law ---------------------------------------

# Steady: fio's I/O under way (most of its 128 inside), then 2 s more,
# then a window of 8 s: what the dies did and held, what the disk
# completed and the time those took (its stat's read ticks, summed in ns
# and shown in ms). fio's own figures count the drain at its end, where
# the requests left are those of the longest queues: they are logged.
randread qd$qd --iodepth=$qd --time_based --ramp_time=2 --runtime=14 &
pid=$!
for i in $(seq 300); do
	dies_read
	[ "$queued" -ge $((qd / 2)) ] && break
	kvb_sleep 0.1
done
kvb_sleep 2
t0=${EPOCHREALTIME/[.,]/}
dies_read
read -r -a st0 < /sys/block/$d/stat
ops0=$ops
qsum=0
nq=0
for i in $(seq 16); do
	kvb_sleep 0.5
	dies_read
	qsum=$((qsum + queued))
	nq=$((nq + 1))
done
t1=${EPOCHREALTIME/[.,]/}
dies_read
read -r -a st1 < /sys/block/$d/stat
ops1=$ops
running=0
kill -0 $pid 2>/dev/null && running=1
wait $pid
fio_rc=$?
fio_lat=$(fio_read qd$qd lat_ns.mean)
fio_iops=$(fio_read qd$qd iops)
dt=$((10#$t1 - 10#$t0))
[ "$dt" -gt 0 ] || dt=1
took=$((ops1 - ops0))
iops_m=$((took * 1000000000 / dt))
held=$((qsum / (nq > 0 ? nq : 1)))
done_w=$((st1[0] - st0[0]))
[ "$done_w" -gt 0 ] || done_w=1
# The disk's mean latency in the window, and Little's: the outstanding
# over the throughput (both in us).
lat_us=$(((st1[3] - st0[3]) * 1000 / done_w))
little_us=$((qd * dt / done_w))
log "QD $qd: the dies took $took reads in $dt us: $((iops_m / 1000)).$(printf %03d $((iops_m % 1000))) IOPS (bound $max_iops), held $held on average"
log "QD $qd: the disk completed $done_w, mean latency $lat_us us; $qd / IOPS = $little_us us"
log "QD $qd: fio (with its drain): $fio_iops IOPS, mean latency $((fio_lat / 1000)) us"
steady() {
	[ $fio_rc = 0 ] && [ $running = 1 ] ||
		{ log "fio exited $fio_rc, or ended before the window did"; return 1; }
}
saturated() {
	steady && [ $((iops_m / 10)) -ge $((max_iops * 90)) ] &&
		[ $((iops_m / 10)) -le $((max_iops * 102)) ]
}
ktap_check "QD $qd: the device serves dies / service time ($max_iops IOPS, 0.90-1.02 x)" \
	saturated
ktap_check "QD $qd: the work waits inside the device (its dies hold >= 90% of $qd)" \
	test $((held * 10)) -ge $((qd * 9))
little() {
	local diff=$((lat_us - little_us))

	steady && [ $((${diff#-} * 10)) -le "$little_us" ]
}
ktap_check "QD $qd: mean latency = outstanding / IOPS (Little's law, within 10%)" \
	little

# --- the dies' counts ----------------------------------------------------------

counts() {
	local -a st

	dies_read
	read -r -a st < /sys/block/$d/stat
	log "dies: $ops ops, $queued queued, $idle idle, $busy_bad with busy != ops x $svc_ns; disk: ${st[0]} reads, ${st[4]} writes completed"
	[ "$queued" = 0 ] && [ "$idle" = 0 ] && [ "$busy_bad" = 0 ] &&
		[ "$ops" = $((st[0] + st[4])) ]
}
ktap_check "dies: ops sum to the disk's completed requests, busy = ops x service time, none idle, none queued" \
	counts

# --- unload ------------------------------------------------------------------

randread hold --iodepth=8 --time_based --runtime=4 &
pid=$!
for i in $(seq 300); do
	dies_read
	[ "$queued" -gt 0 ] && break
	kvb_sleep 0.1
done
busy_refused() {
	if rmmod kvssd 2>/dev/null; then
		log "rmmod succeeded with fio on the disk"
		return 1
	fi
	[ -b /dev/$d ] && [ "$queued" -gt 0 ]
}
ktap_check "rmmod refused while fio holds the disk" busy_refused
wait $pid
unloaded() {
	rmmod kvssd || return 1
	[ ! -e /sys/block/$d ] && [ ! -e /dev/$d ] && [ ! -d /sys/module/kvssd ] &&
		[ ! -d /sys/kernel/debug/kvssd ]
}
ktap_check "rmmod after the I/O: no disk, no module, no debugfs directory" \
	unloaded

defaults() {
	local n rc=0
	local -A cfg

	insmod "$ko" || return 1
	kvb_read_keys cfg "$dbg/config" || rc=1
	log "defaults: $(tr '\n' ' ' < "$dbg/config")"
	n=$(getconf _NPROCESSORS_ONLN)
	[ "$n" -le 64 ] || n=64
	[ "${cfg[dies]}" = 64 ] && [ "${cfg[max_read_iops]}" = 16000 ] &&
		[ "${cfg[read_ns]}" = 4000000 ] && [ "${cfg[hw_queues]}" = "$n" ] &&
		[ "${cfg[queue_depth]}" = 256 ] || rc=1
	rmmod kvssd || rc=1
	return $rc
}
ktap_check "defaults: 64 dies of 4 ms reads (x40), 16000 IOPS, a queue per CPU of 256" \
	defaults

ktap_check "no kernel report (WARN, BUG, Oops, KASAN)" \
	test "$(kvb_kernel_reports)" = "$reports0"

ktap_finished
