#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Faults under kvbatch: requests that time out, are requeued by the driver,
# or fail on submission must still complete (or fail) exactly once and
# leave kvbatch's accounting balanced; an allocation failure anywhere in a
# switch to kvbatch must fail the switch cleanly (or be absorbed), leave the
# queue doing I/O and leak nothing.
#
# Uses the kernel's fault injection (fail_io_timeout, fail_make_request,
# failslab, fail_page_alloc) and null_blk's requeue/timeout injection: the
# debug kernel of "make test-debug" has them, Debian's kernels do not, so
# there each part says SKIP with the reason.
source "$(dirname "$0")/lib.sh"

RUNTIME=${RUNTIME:-8}
DBG=/sys/kernel/debug
NULLB_BASE=(submit_queues=2 hw_queue_depth=8 memory_backed=1 gb=1 irqmode=2
	    completion_nsec=50000)

kvb_require_root
kvb_require_cmd fio jq
kvb_load || ktap_exit_skip "cannot load kvbatch"
[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"

ktap_print_header
ktap_set_plan 9

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
	kvb_nullb_load "${NULLB_BASE[@]}" "$@" && kvb_set_sched nullb0 kvbatch &&
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
# first error code, not a count), or -1 if fio's output is unreadable, and
# returns 1 on a verify error: fio ends the job with EILSEQ (84) and
# prints "verify: ..." (with continue_on_error=io and verify_fatal, as on
# a loop device with a corrupted block), which the count must not take
# for an I/O error.
read_back() {
	local name=$1 out=$KVB_SCRATCH/$1.json err=$KVB_SCRATCH/$1.err verify

	verify=(--verify=crc32c --verify_only=0 --verify_fatal=1 --verify_state_load=0)
	[ "${2:-}" != noverify ] || verify=()
	(cd "$KVB_SCRATCH" && fio --output-format=json --output="$out" \
		--name="$name" --filename=/dev/nullb0 --direct=1 \
		--ioengine=io_uring --rw=randread --bs=64k --size=256M \
		--iodepth=16 --numjobs=2 --time_based --runtime="$RUNTIME" \
		--continue_on_error=io "${verify[@]}" >/dev/null 2>"$err")
	jq '[.jobs[] | select(.error != 0 and .error != 84)] | length' "$out" 2>/dev/null || echo -1
	if grep -q "^verify:\|verify failed" "$err" ||
	   [ "$(jq '[.jobs[] | select(.error == 84)] | length' "$out" 2>/dev/null)" != 0 ]; then
		log "$name: verify error: $(head -3 "$err")" >&2
		return 1
	fi
}

# armed_reads ATTR DISKFILE PROBABILITY TIMES DESCRIPTION: verified reads
# of nullb0 with the kernel fault ATTR armed for it (DISKFILE is its
# per-disk switch); one test point: what completes verifies and kvbatch's
# accounting balances, plus, for fail_make_request, that faults happened.
armed_reads() {
	local attr=$1 file=$2 times=$4 errs verified=1 left fired

	[ -d "$DBG/$attr" ] || { ktap_test_skip "$attr: kernel without it (make test-debug)"; return; }
	nullb_up || { ktap_test_fail "$attr: null_blk"; return; }
	fill || { ktap_test_fail "$attr: fill"; nullb_down; return; }
	echo 1000 > /sys/block/nullb0/queue/io_timeout
	echo 1 > "/sys/block/nullb0/$file"
	fault_attr "$attr" "$3" 1 "$4"
	errs=$(read_back "$attr") || verified=0
	# times counts down as faults fire (-1: no limit, no count).
	left=$(cat "$DBG/$attr/times")
	fired=$((times < 0 ? -1 : times - left))
	fault_attr "$attr"
	echo 0 > "/sys/block/nullb0/$file"
	log "$attr: $fired faults fired (-1: not counted), $errs of 2 fio jobs saw I/O errors, verified $verified"
	check() {
		[ "$verified" = 1 ] && [ "$errs" -ge 0 ] || return 1
		# A limited fault must have fired, or nothing was tested.
		[ "$times" -lt 0 ] || [ "$fired" -gt 0 ] || return 1
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
	local what=$1 param=$2 errs rq verified=1

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
		errs=$(read_back "nullb-$what" noverify) || verified=0
	else
		fill || { ktap_test_fail "null_blk $what injection: fill"; nullb_down; return; }
		errs=$(read_back "nullb-$what") || verified=0
	fi
	rq=$(kvb_stat nullb0 requeued)
	log "null_blk $what=$param: $errs of 2 fio jobs saw I/O errors, kvbatch requeued $rq, verified $verified"
	check() {
		[ "$verified" = 1 ] || return 1
		case $what in
		requeue) [ "$errs" = 0 ] && [ "$rq" -gt 0 ] ;;
		*) [ "$errs" -gt 0 ] ;;
		esac && kvb_balanced nullb0
	}
	ktap_check "null_blk $what injection: every request ends once, what completes verifies" check
	nullb_down
}

# Allocation failures while kvbatch is being selected, systematically: the
# write that selects kvbatch is repeated with its 1st, 2nd, 3rd ... slab or
# page allocation failing (fail-nth, through kvb_failnth), until a write
# runs with no fault injected; by then every allocation the switch makes
# has failed once. A switch that fails must leave the queue working with no
# scheduler (the core falls back to "none" once the old one is torn down)
# or the old one (a failure before that), return ENOMEM, and kvbatch must
# be selectable afterwards; a failure the kernel absorbs (a vmalloc
# fallback, optional debugfs files) may let the switch succeed.
#
# SCOPE "all" counts every allocation of the write: the sysfs buffer, the
# scheduler tags and requests, debugfs and sysfs entries and kvbatch's own.
# SCOPE "kvbatch" counts only allocations with kvbatch's text on the stack
# (failslab's and fail_page_alloc's require-start/require-end), which
# needs CONFIG_FAULT_INJECTION_STACKTRACE_FILTER: 6.12's debug kernel has
# it; 6.1 cannot (the option depends on !X86_64 there), so SKIP.
FAILNTH=$KVB_ROOT/build/selftests/kvb_failnth
# The scheduler each write switches from. On 6.1 and 6.12, mq-deadline: the
# old scheduler's teardown is in every run, as it is in real use. 7.x's
# elevator_change() (7.3.4's block/elevator.c) releases the old scheduler
# in elevator_change_done(), which runs only when the new one started: a
# switch whose new scheduler fails to start has already exited the old one
# but leaves its iosched directory registered and its tags allocated, so
# every later switch on that queue fails on the duplicate name ("sysfs:
# cannot create duplicate filename .../queue/iosched"). That is the core's,
# and it breaks a failed switch to mq-deadline the same way; from none
# there is no old scheduler, and every allocation of kvbatch's start still
# fails in turn.
case $(uname -r) in
6.*) FROM=mq-deadline ;;
*) FROM=none ;;
esac
# More sites than any switch makes; reaching it means fail-nth never ran out.
FAILNTH_MAX=${FAILNTH_MAX:-3000}

# failnth_ready DESC: fail-nth injection can run here; if not, DESC is
# skipped with the reason.
failnth_ready() {
	[ -d "$DBG/failslab" ] && [ -d "$DBG/fail_page_alloc" ] ||
		{ ktap_test_skip "$1: kernel without failslab/fail_page_alloc (make test-debug)"; return 1; }
	[ -x "$FAILNTH" ] || { ktap_test_skip "$1: kvb_failnth not built (make selftests-bin)"; return 1; }
}

# alloc_attrs on|off [START END]: make every sleeping slab and page
# allocation (of any order) a fault site, optionally only those called
# from [START, END); or restore the defaults.
alloc_attrs() {
	local a

	for a in failslab fail_page_alloc; do
		echo 0 > "$DBG/$a/verbose"
		if [ "$1" = on ]; then
			echo N > "$DBG/$a/ignore-gfp-wait"
		else
			echo Y > "$DBG/$a/ignore-gfp-wait"
		fi
		if [ -f "$DBG/$a/require-start" ]; then
			echo 32 > "$DBG/$a/stacktrace-depth"
			echo "${2:-0}" > "$DBG/$a/require-start"
			echo "${3:-0xffffffffffffffff}" > "$DBG/$a/require-end"
		fi
	done
	if [ "$1" = on ]; then
		echo 0 > "$DBG/fail_page_alloc/min-order"
	else
		echo 1 > "$DBG/fail_page_alloc/min-order"
	fi
}

# kvb_text: "START END" of kvbatch's .text in the running kernel.
kvb_text() {
	local start size

	start=$(cat /sys/module/kvbatch/sections/.text 2>/dev/null) || return 1
	size=$(readelf -SW "$KVB_KO" |
		awk '{ for (i = 1; i < NF; i++) if ($i == ".text") { print "0x" $(i + 4); exit } }')
	[ -n "$size" ] || return 1
	printf '0x%x 0x%x\n' $((start)) $((start + size))
}

alloc_failures() {
	local scope=$1 k inj err ok=0 failed=0 broken=0 sites=0 range=
	local desc="each allocation of a switch to kvbatch fails in turn"

	[ "$scope" = all ] || desc="each allocation made by kvbatch's code in a switch fails in turn"
	desc+=" (fail-nth): the switch fails with ENOMEM or recovers, I/O goes on, kvbatch selectable after"

	failnth_ready "$desc" || return
	if [ "$scope" = kvbatch ]; then
		[ -f "$DBG/failslab/require-start" ] ||
			{ ktap_test_skip "$desc: kernel without CONFIG_FAULT_INJECTION_STACKTRACE_FILTER"; return; }
		range=$(kvb_text) || { ktap_test_fail "$desc: cannot find kvbatch's text"; return; }
	fi
	nullb_up || { ktap_test_fail "$desc: null_blk"; return; }
	# shellcheck disable=SC2086
	alloc_attrs on $range
	for k in $(seq 1 "$FAILNTH_MAX"); do
		kvb_set_sched nullb0 "$FROM" || { log "$scope k=$k: cannot reset to $FROM"; broken=1; break; }
		read -r inj err < <("$FAILNTH" -n "$k" /sys/block/nullb0/queue/scheduler kvbatch)
		case $inj in
		injected=N) sites=$((k - 1)); break ;;
		injected=Y) ;;
		*) log "$scope k=$k: kvb_failnth failed"; broken=1; break ;;
		esac
		case "${err#errno=}:$(kvb_sched_of nullb0)" in
		0:kvbatch) ok=$((ok + 1)) ;;
		"12:none"|"12:$FROM") failed=$((failed + 1)) ;;
		*) log "$scope k=$k: switch gave $err, scheduler '$(kvb_sched_of nullb0)'"; broken=1; break ;;
		esac
		dd if=/dev/nullb0 of=/dev/null bs=64k count=16 iflag=direct status=none ||
			{ log "$scope k=$k: I/O failed"; broken=1; break; }
	done
	[ $broken = 1 ] || [ $sites -gt 0 ] || { log "$scope: still injecting after $FAILNTH_MAX sites"; broken=1; }
	# Nothing a failed switch left behind keeps kvbatch from working.
	if [ $broken = 0 ] && ! { kvb_set_sched nullb0 "$FROM" && kvb_set_sched nullb0 kvbatch &&
		dd if=/dev/nullb0 of=/dev/null bs=64k count=16 iflag=direct status=none; }; then
		log "$scope: kvbatch not selectable afterwards"; broken=1
	fi
	alloc_attrs off
	log "$scope: $sites allocation sites in a switch from $FROM to kvbatch${range:+ (text of kvbatch: $range)}; with each failing, $failed switches failed with ENOMEM and $ok succeeded"
	check() {
		# Elevator init has no fallback for its first allocation, so at
		# least one switch must fail, whatever the scope.
		[ $broken = 0 ] && [ $sites -gt 0 ] && [ $failed -gt 0 ]
	}
	ktap_check "$desc" check
	nullb_down
}

# After the failed switches kmemleak must find nothing leaked on the way
# (an init that fails halfway frees what it took).
alloc_leaks() {
	[ -w $DBG/kmemleak ] || { ktap_test_skip "no leak from the failed switches" "kernel without kmemleak"; return; }
	ktap_check "no leak from the failed switches (kmemleak)" kvb_kmemleak_clean
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
# alloc_refs BEFORE: kvbatch's module reference count (null_blk unloaded)
# is back to BEFORE after the failed switches. 6.1's core leaks one when a
# switch fails before the new elevator_queue exists (see the SKIP); since
# that pins kvbatch until reboot, this test runs after every test that
# unloads it.
alloc_refs() {
	local now leak

	now=$(cat /sys/module/kvbatch/refcnt)
	leak=$((now - $1))
	log "kvbatch module references: $1 before the failed switches, $now after"
	if [ $leak -gt 0 ]; then
		case $(uname -r) in
		6.1.*)
			ktap_test_skip "no module reference leaked by failed switches: 6.1's __elevator_change() hands its reference to the elevator_queue, so a switch that fails before that exists (scheduler tags, elevator_alloc) never drops it; $leak leaked here (6.12's elevator_alloc takes its own reference)"
			return ;;
		esac
	fi
	ktap_check "no module reference leaked by the failed switches" test $leak = 0
}

# stale_reads: a switch away from kvbatch, its allocations failing in
# turn, until one fails after kvbatch was torn down (the queue is left
# with none). 7.3's core then leaves kvbatch's debugfs files behind (see
# FROM): each read, and a write of reset_stats, must fail (ENODEV), not
# reach for the state that exit_sched() freed. On 6.1 and 6.12 the files
# go with kvbatch. It stops there, since on 7.3 every later switch on the
# queue fails (with a sysfs call trace); and it runs last, since on 7.3
# the core keeps kvbatch's elevator_queue, and with it a module
# reference, until reboot.
stale_reads() {
	local desc="a failed switch away from kvbatch: whatever debugfs files it leaves fail to read, with no kernel report"
	local k inj err torn=0 files=0 refused=0 reports0 f

	failnth_ready "$desc" || return
	nullb_up || { ktap_test_fail "$desc: null_blk"; return; }
	reports0=$(kvb_kernel_reports)
	alloc_attrs on
	for k in $(seq 1 "$FAILNTH_MAX"); do
		kvb_set_sched nullb0 kvbatch || { log "stale files: k=$k: cannot select kvbatch"; break; }
		read -r inj err < <("$FAILNTH" -n "$k" /sys/block/nullb0/queue/scheduler mq-deadline)
		[ "$inj" = injected=Y ] || break
		[ "$err" = errno=12 ] && [ "$(kvb_sched_of nullb0)" = none ] || continue
		torn=$k
		for f in "$DBG"/block/nullb0/sched/*; do
			[ -f "$f" ] && [ -r "$f" ] || continue
			files=$((files + 1))
			cat "$f" > /dev/null 2>&1 || refused=$((refused + 1))
		done
		# The one writable file: a write must fail as well.
		f=$DBG/block/nullb0/sched/reset_stats
		if [ -f "$f" ]; then
			files=$((files + 1))
			echo 1 2>/dev/null > "$f" || refused=$((refused + 1))
		fi
		break
	done
	alloc_attrs off
	log "stale files: allocation $torn failed the switch after kvbatch was torn down; $files reads and writes of the debugfs files left, $refused refused"
	check() {
		[ "$torn" -gt 0 ] && [ "$refused" = "$files" ] &&
			[ "$(kvb_kernel_reports)" = "$reports0" ]
	}
	ktap_check "$desc" check
	nullb_down
}

# Whatever happens, leave no fault armed.
# shellcheck disable=SC2016
kvb_defer 'for a in fail_io_timeout fail_make_request; do
		[ ! -d $DBG/$a ] || fault_attr $a
	done
	[ ! -d $DBG/failslab ] || alloc_attrs off'
refs=$(cat /sys/module/kvbatch/refcnt)
alloc_failures all
alloc_failures kvbatch
alloc_leaks
if [ -d "$DBG/failslab" ]; then
	alloc_refs "$refs"
else
	ktap_test_skip "no module reference leaked by failed switches: kernel without failslab (make test-debug)"
fi
stale_reads
ktap_finished
