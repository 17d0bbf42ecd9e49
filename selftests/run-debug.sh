#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make test-debug: for each series in DEBUG_SERIES (default
# "6.1 6.12 7.3"), build (once; cached in /var/cache/kvbatch) the debug
# guest kernel of scripts/debug-kernel.sh (KASAN, lockdep, atomic-sleep
# checks, kmemleak, fault injection), build kvbatch against it, and run
# every selftest in it, the fault tests included, ending with kmemleak
# scans. 7.3's kernel and kvbatch are built in the Debian 13 root with its
# gcc-14 (the Makefile finds the kernel's build tree only there), and its
# guest runs on that root, like make test's 7.3 guest. Any WARN, BUG,
# KASAN, lockdep or kmemleak report in the guest's kernel log fails the
# run. The package test (DKMS would compile kvbatch for every installed
# kernel inside the emulated debug guest) is left to make test.
#
# DEBUG_FLAVOUR=kcsan runs on the data-race flavour instead
# (scripts/debug-kernel.sh --kcsan: KCSAN in place of KASAN), where a data
# race with kvbatch's code on one side fails the run like any report.
#
# Output is TAP; the last line is "N passed, N failed, N skipped".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
logdir=$top/build/test-logs/debug
source "$top/selftests/lib-host.sh"
host_begin

# KASAN and lockdep make the emulated guest several times slower. Its
# vmlinux does not start through the PVH entry under this QEMU (QEMU exits
# at once, with no output), so the bzImage is booted.
export KVVM_PVH=0
# Its guests get 4 hours and 3 GiB (guest_run()): on the 6.12 debug
# kernel, on a host that runs other guests beside it, the tests before
# kvb_faults alone can take close to 2 hours.
KVVM_OPTS="-t 14400 -m 3072"
make --no-print-directory tools selftests-bin > "$logdir/tools.log" 2>&1 ||
	{ ktap_diag < "$logdir/tools.log"; ktap_test_fail "tools and selftest helpers build"; }
# The selftests that remove scsi_debug's disk (see below).
DEBUG_ALONE="kvb_requeue.sh kvb_shared_tags.sh"
case ${DEBUG_FLAVOUR:-} in
'') flavour=() ;;
kcsan) flavour=(--kcsan) ;;
*) echo "make test-debug: DEBUG_FLAVOUR is empty or kcsan" >&2; exit 2 ;;
esac
tests=${KVB_TESTS:-$(make -s --no-print-directory -C selftests list | tr ' ' '\n' | grep -vx kvb_package.sh | tr '\n' ' ')}

for series in ${DEBUG_SERIES:-6.1 6.12 7.3}; do
	t0=$(date +%s)
	# Its messages go to a log, not through a process substitution,
	# which would write them into $k (they are what it says while it
	# builds the kernel).
	if k=$(scripts/debug-kernel.sh -s "$series" "${flavour[@]}" 2> "$logdir/debug-kernel-$series.log"); then
		ktap_diag < "$logdir/debug-kernel-$series.log"
		ktap_test_pass "debug kernel $k built from linux-source-$series ($(($(date +%s) - t0)) s)"
	else
		ktap_diag < "$logdir/debug-kernel-$series.log"
		ktap_test_fail "debug kernel built from linux-source-$series"
		continue
	fi
	# kvssd too: the depth controller's tests need a device that queues.
	if make --no-print-directory KERNELRELEASE="$k" W=1 -B modules kvssd > "$logdir/build-$k.log" 2>&1 &&
	   ! grep -qE 'warning:|error:' "$logdir/build-$k.log"; then
		ktap_test_pass "kvbatch and kvssd build against $k with W=1, warning-free"
	else
		grep -E 'warning:|error:' "$logdir/build-$k.log" | ktap_diag
		ktap_test_fail "kvbatch and kvssd build against $k with W=1, warning-free"
		continue
	fi
	# The tests that remove a SCSI disk boot on their own, after the
	# rest. In 6.12's lockdep every queue's freeze shares one class, so
	# the flusher's writeback to nvme0n1 earlier in the boot and
	# sd_remove() waiting for writeback make a "circular locking
	# dependency" report of the core's, with no kvbatch frame (testing.rst,
	# "make test-debug"). A boot of their own keeps the kernel log check
	# whole, for them and for the rest.
	rest="" alone=""
	for t in $tests; do
		case " $DEBUG_ALONE " in
		*" $t "*) alone="$alone $t" ;;
		*) rest="$rest $t" ;;
		esac
	done
	# shellcheck disable=SC2086
	[ -z "$rest" ] || guest_run "$k" $rest
	# shellcheck disable=SC2086
	[ -z "$alone" ] || KVB_BOOT=scsi guest_run "$k" $alone
done

host_end
