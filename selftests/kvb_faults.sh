#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Faults under kvbatch: requests that time out, are requeued by the driver,
# or fail on submission must still complete (or fail) exactly once and
# leave kvbatch's accounting balanced; allocation failures while kvbatch is
# being selected must fail the switch cleanly and leave the old scheduler.
#
# Uses the kernel's fault injection (fail_io_timeout, fail_make_request,
# failslab, fail_page_alloc) and null_blk's requeue/timeout injection: the
# debug kernel of "make test-debug" has them, Debian's kernels do not, so
# there each part says SKIP with the reason.
source "$(dirname "$0")/lib.sh"

RUNTIME=${RUNTIME:-8}
DBG=/sys/kernel/debug
NULLB_BASE=(nr_devices=1 queue_mode=2 submit_queues=2 hw_queue_depth=8
	    memory_backed=1 gb=1 irqmode=2 completion_nsec=50000)

kvb_require_root
kvb_require_cmd fio jq
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"

ktap_print_header
ktap_set_plan 6

# fault_attr NAME [PROBABILITY INTERVAL TIMES]: configure (or, with no
# numbers, disarm) one of the kernel's fault attributes. verbose=0: the
# default prints a stack trace per injected fault, which is no splat.
fault_attr() {
	local a=$DBG/$1

	echo 0 > "$a/verbose"
	if [ $# -eq 1 ]; then
		echo 0 > "$a/probability"
		echo 0 > "$a/times"
		return
	fi
	echo "$2" > "$a/probability"
	echo "$3" > "$a/interval"
	echo "$4" > "$a/times"
	echo 0 > "$a/space"
}

nullb_up() {
	modprobe null_blk "${NULLB_BASE[@]}" "$@" || return 1
	udevadm settle 2>/dev/null || true
	[ -b /dev/nullb0 ] && kvb_set_sched nullb0 kvbatch &&
		echo 256 > /sys/block/nullb0/queue/nr_requests
}

nullb_down() {
	kvb_nullb_teardown
}

# Fill the device with a verifiable pattern, no faults armed.
fill() {
	kvb_fio fill --filename=/dev/nullb0 --direct=1 --ioengine=io_uring \
		--rw=write --bs=64k --size=256M --verify=crc32c \
		--do_verify=0 --verify_state_save=0
}

# read_back NAME [noverify]: verified random reads of what fill() wrote
# while faults fire; I/O errors are allowed, a verify error is not. Prints
# how many of fio's 2 jobs saw an I/O error (fio's JSON keeps each job's
# first error code, not a count).
read_back() {
	local name=$1 out=$KVB_SCRATCH/$1.json verify

	verify=(--verify=crc32c --verify_only=0 --verify_fatal=1 --verify_state_load=0)
	[ "${2:-}" != noverify ] || verify=()
	(cd "$KVB_SCRATCH" && fio --output-format=json --output="$out" \
		--name="$name" --filename=/dev/nullb0 --direct=1 \
		--ioengine=io_uring --rw=randread --bs=64k --size=256M \
		--iodepth=16 --numjobs=2 --time_based --runtime="$RUNTIME" \
		--continue_on_error=io "${verify[@]}" >/dev/null 2>&1)
	jq '[.jobs[] | select(.error != 0)] | length' "$out" 2>/dev/null || echo -1
}

# armed_reads ATTR DISKFILE PROBABILITY TIMES DESCRIPTION: verified reads
# of nullb0 with the kernel fault ATTR armed for it (DISKFILE is its
# per-disk switch); one test point: what completes verifies and kvbatch's
# accounting balances, plus, for fail_make_request, that faults happened.
armed_reads() {
	local attr=$1 file=$2 errs

	[ -d "$DBG/$attr" ] || { ktap_test_skip "$attr: kernel without it (make test-debug)"; return; }
	nullb_up || { ktap_test_fail "$attr: null_blk"; return; }
	fill || { ktap_test_fail "$attr: fill"; nullb_down; return; }
	echo 1000 > /sys/block/nullb0/queue/io_timeout
	echo 1 > "/sys/block/nullb0/$file"
	fault_attr "$attr" "$3" 1 "$4"
	errs=$(read_back "$attr")
	fault_attr "$attr"
	echo 0 > "/sys/block/nullb0/$file"
	log "$attr: $errs of 2 fio jobs saw I/O errors"
	check() {
		# Timed-out requests are retried or failed by the driver;
		# failed submissions always reach fio.
		[ "$attr" != fail_make_request ] || [ "$errs" -gt 0 ] || return 1
		kvb_balanced nullb0
	}
	ktap_check "$attr: $5" check
	nullb_down
}

# null_blk's own injection: requeue (BLK_STS_RESOURCE back to the
# scheduler) and timeout (a request the driver never completes).
nullb_inject() {
	local what=$1 param=$2 errs rq

	if [ ! -e /sys/module/null_blk ] && ! modinfo -p null_blk 2>/dev/null | grep -q "^$what:"; then
		ktap_test_skip "null_blk $what injection: null_blk built without CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION (make test-debug)"
		return
	fi
	nullb_up "$what=$param" || { ktap_test_fail "null_blk $what injection: null_blk"; return; }
	echo 1000 > /sys/block/nullb0/queue/io_timeout
	if [ "$what" = timeout ]; then
		# Injected from the first request on: writes would time out
		# too, so there is no pattern to verify; reads must still
		# all end, the timed-out ones with an error.
		errs=$(read_back "nullb-$what" noverify)
	else
		fill || { ktap_test_fail "null_blk $what injection: fill"; nullb_down; return; }
		errs=$(read_back "nullb-$what")
	fi
	rq=$(kvb_stat nullb0 requeued)
	log "null_blk $what=$param: $errs of 2 fio jobs saw I/O errors, kvbatch requeued $rq"
	check() {
		case $what in
		requeue) [ "$errs" = 0 ] && [ "$rq" -gt 0 ] ;;
		*) [ "$errs" -gt 0 ] ;;
		esac && kvb_balanced nullb0
	}
	ktap_check "null_blk $what injection: every request ends once, what completes verifies" check
	nullb_down
}

# Allocation failures while kvbatch is being selected: one slab or page
# allocation of the writer fails (probability 100, interval k: a different
# allocation for k = 1..40); the switch either succeeds or fails
# and leaves mq-deadline in place, and kvbatch is selectable afterwards.
# An injection that fired is seen as the attribute's "times" dropping from
# 1 to 0. A page allocation failure may be absorbed by design (blk-mq
# retries the request pool at a lower order, kvmalloc falls back to
# vmalloc, and debugfs entries are optional), so a switch that succeeds is
# no failure. Which allocations the k-th one hits depends on the kernel: on
# 6.1 failslab failed 39 of 40 switches, on 6.12 none. Aiming at kvbatch's
# own allocations alone needs CONFIG_FAULT_INJECTION_STACKTRACE_FILTER.
alloc_failures() {
	local attr=$1 k ok=0 failed=0 fired=0 broken=0 minorder

	[ -d "$DBG/$attr" ] || { ktap_test_skip "$attr on kvbatch's allocations: kernel without it (make test-debug)"; return; }
	nullb_up || { ktap_test_fail "$attr: null_blk"; return; }
	echo 1 > "$DBG/$attr/task-filter"
	# By default sleeping (GFP_KERNEL) allocations are exempt, and those
	# are the ones an elevator's init makes; fail_page_alloc also exempts
	# order-0 pages by default.
	echo N > "$DBG/$attr/ignore-gfp-wait"
	if [ -f "$DBG/$attr/min-order" ]; then
		minorder=$(cat "$DBG/$attr/min-order")
		echo 0 > "$DBG/$attr/min-order"
	fi
	for k in $(seq 1 40); do
		kvb_set_sched nullb0 mq-deadline || { log "$attr: cannot reset"; broken=1; break; }
		fault_attr "$attr" 100 "$k" 1
		# Only this subshell has make-it-fail set.
		if bash -c 'echo 1 > /proc/self/make-it-fail; echo kvbatch > /sys/block/nullb0/queue/scheduler' 2>/dev/null; then
			ok=$((ok + 1))
		else
			failed=$((failed + 1))
		fi
		[ "$(cat "$DBG/$attr/times")" = 0 ] && fired=$((fired + 1))
		fault_attr "$attr"
		# Failed or not, the queue has one scheduler and does I/O.
		case $(kvb_sched_of nullb0) in
		kvbatch|mq-deadline) ;;
		*) log "$attr k=$k: scheduler is '$(kvb_sched_of nullb0)'"; broken=1; break ;;
		esac
		dd if=/dev/nullb0 of=/dev/null bs=64k count=16 iflag=direct status=none ||
			{ log "$attr k=$k: I/O failed"; broken=1; break; }
	done
	echo 0 > "$DBG/$attr/task-filter"
	echo Y > "$DBG/$attr/ignore-gfp-wait"
	[ -z "${minorder:-}" ] || echo "$minorder" > "$DBG/$attr/min-order"
	log "$attr: 40 selections, one allocation failing in each (interval 1..40): $fired injections fired; $ok selections succeeded, $failed failed cleanly"
	check() {
		[ $broken = 0 ] && [ $fired -gt 0 ] && kvb_set_sched nullb0 kvbatch
	}
	ktap_check "$attr: selecting kvbatch with an allocation failing fails cleanly or recovers" check
	nullb_down
}

# A request completed by the timeout handler must leave kvbatch exactly as
# a normal completion does.
armed_reads fail_io_timeout io-timeout-fail 2 40 \
	"reads time out, the rest verify, accounting balances"
# Bios failed at submission never reach the scheduler; the rest must be
# unaffected.
armed_reads fail_make_request make-it-fail 5 -1 \
	"5% of bios fail, the rest verify, accounting balances"
nullb_inject requeue "1,10,0,-1"
nullb_inject timeout "1,50,0,30"
alloc_failures failslab
alloc_failures fail_page_alloc
ktap_finished
