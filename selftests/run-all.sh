#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-all.sh: the kvbatch test suite ("make test", called by .ci/run).
#
#   1. install missing Debian packages (scripts/install-deps.sh);
#   2. static checks: W=1 build for every supported kernel and sparse;
#      kvssd.ko (kvssd/), which kvb_kvssd.sh loads in the guests;
#      the tools and the selftest helpers; what
#      kvvm and run-guest.sh refuse (selftests/guestrun_cli.sh);
#   3. for each supported kernel (Debian 12's 6.1 and 6.12, Debian 13's
#      7.3 on the Debian 13 root of scripts/trixie-root.sh): boot it in
#      QEMU guests with tools/kvvm, its selftests shared by two boots
#      (KVB_GUEST_SPLIT, 1 to 4; each takes the next test when free), run
#      them (run-guest.sh), check each ran in one of them, and check each
#      guest kernel log is free of warnings, BUGs, lockdep and KASAN
#      reports. Two guests run at once (KVB_GUEST_JOBS, 1 to 9); each
#      boot's results are shown whole, in kernel order;
#   4. beside the first two boots, the host tests: checkpatch --strict
#      with each kernel's own checkpatch.pl; tools/kvab's
#      arguments, variant builds and instruction counts
#      (selftests/kvab_cli.sh, which boots a guest of its own); the unit
#      tests (policy core, kvsim, kvbench's tier model), kvsim's command
#      line and trace
#      converter (selftests/kvsim_cli.sh) and its page in headless
#      Chromium (selftests/kvsim_browser.sh); kvbench --trace and
#      kvtracegen on a regular file (selftests/kvtrace_cli.sh);
#      tools/kvbatch-stat on fixture files (selftests/kvstat_cli.sh);
#      tools/kvreport's targets on fixture results
#      (selftests/kvreport_cli.sh); every tool's --help, -h and bad
#      arguments against the tools' command-line convention
#      (selftests/tools_cli.sh); the engines' tagging header and Python
#      module (selftests/engine_cli.sh); a guest of four vCPUs on QEMU's
#      instruction clock (selftests/kvvm_icount.sh); that the
#      documentation stays reference
#      (selftests/docs_check.sh); install-deps' and ksrc-prepare's
#      pairing of each kernel image with its own source
#      (selftests/deps_cli.sh); the Debian package, lintian, and what
#      the package gives engines (selftests/deb_contents.sh).
#
# Output is TAP; the last line is "N passed, N failed, N skipped".
# Environment: KVB_KERNELS="krel ..." restricts the kernels; KVB_TESTS
# restricts the selftests run in the guest. The package test
# (kvb_package.sh: dpkg -i builds the module with DKMS inside the emulated
# guest, 6 to 9 minutes) runs only in make test-extended: with it, three
# kernels take about an hour, against the 35 minutes the suite aims at.
# make test still builds the package and runs lintian on it. The install
# test (kvb_install.sh: make install, the alias, the operator fio jobs
# under three schedulers; 1.5 to 4 minutes) runs on the newest kernel only:
# its subject, the Makefile's install and modprobe's updates/ lookup, is
# the same on every kernel (kvb_module.sh still loads by alias on each).
# So is kvb_compare.sh's (30 to 54 s): tools/kvcompare's rounds.
# KVB_ALL_KERNELS=1 (make test-extended; KVB_PACKAGE_ALL=1 does the same)
# runs all three on every kernel.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
logdir=$top/build/test-logs
source "$top/selftests/lib-host.sh"
host_begin

kernels=${KVB_KERNELS:-$(make -s --no-print-directory print-kernels)}
kernels=$(echo "$kernels" | tr -s ' ' '\n' | grep -v '^$')
[ -n "$kernels" ] || ktap_test_fail "a supported kernel is installed (6.1, 6.12 or 7.3)"

# --- static checks -------------------------------------------------------
for k in $kernels; do
	log=$logdir/build-$k.log
	if make --no-print-directory KERNELRELEASE="$k" W=1 -B modules > "$log" 2>&1; then
		if grep -E 'warning:|error:' "$log" | ktap_diag | grep .; then
			ktap_test_fail "build $k with W=1 is warning-free"
		else
			ktap_test_pass "build $k with W=1 is warning-free"
		fi
	else
		tail -20 "$log" | ktap_diag
		ktap_test_fail "build $k with W=1 is warning-free"
	fi
	log=$logdir/kvssd-$k.log
	if make --no-print-directory KERNELRELEASE="$k" W=1 -B kvssd > "$log" 2>&1; then
		if grep -E 'warning:|error:' "$log" | ktap_diag | grep .; then
			ktap_test_fail "build kvssd for $k with W=1 is warning-free"
		else
			ktap_test_pass "build kvssd for $k with W=1 is warning-free"
		fi
	else
		tail -20 "$log" | ktap_diag
		ktap_test_fail "build kvssd for $k with W=1 is warning-free"
	fi
done

first=$(echo "$kernels" | head -1)
if [ -n "$first" ]; then
	# make sparse runs kbuild with C=2, which checks every source whether
	# or not it needs building: no source is touched (a touched one would
	# leave every module but the last kernel's older than it, and
	# tools/kvvm refuses such a module).
	for k in $kernels; do
		log=$logdir/sparse-$k.log
		make --no-print-directory KERNELRELEASE="$k" sparse > "$log" 2>&1
		# kbuild drops C=2 with only a warning when its
		# checker-valid.sh rejects the sparse it finds: Debian 13's
		# 0.6.4 cannot parse 7.3's __typeof_unqual__ (and 7.3's
		# headers package lacks that script). Nothing was checked.
		if grep -q 'specified, but sparse is not available or not up to date' "$log"; then
			ktap_test_skip "sparse on $k" "kbuild rejects the sparse it finds as too old for $k, so nothing was checked (see $log)"
		elif grep -E '^/.*: (warning|error):' "$log" | ktap_diag | grep -q .; then
			ktap_test_fail "sparse is clean on $k"
		elif ! grep -q '^ *CHECK ' "$log"; then
			tail -5 "$log" | ktap_diag
			ktap_test_fail "sparse is clean on $k (sparse checked nothing)"
		else
			ktap_test_pass "sparse is clean on $k"
		fi
	done
fi

# --- what the guests need: the tools and the selftest helpers ----------
if make --no-print-directory tools > "$logdir/tools.log" 2>&1; then
	ktap_test_pass "tools build with -Wall -Wextra -Werror"
else
	ktap_diag < "$logdir/tools.log"
	ktap_test_fail "tools build with -Wall -Wextra -Werror"
fi

if make --no-print-directory selftests-bin > "$logdir/selftests-bin.log" 2>&1; then
	ktap_test_pass "selftest helpers build with -Wall -Wextra -Werror"
else
	ktap_diag < "$logdir/selftests-bin.log"
	ktap_test_fail "selftest helpers build with -Wall -Wextra -Werror"
fi
# --- kvvm's and run-guest.sh's refusals (host, before any guest boots) -----
host_test guestrun_cli.sh "guest runners: " guestrun-cli.log

# --- guest selftests ---------------------------------------------------
newest=$(echo "$kernels" | sort -V | tail -1)
newest_only="kvb_install.sh kvb_compare.sh"
extended_only="kvb_package.sh"
[ "${KVB_PACKAGE_ALL:-0}" != 1 ] || KVB_ALL_KERNELS=1
# drop_test T: take T out of $tests.
drop_test() {
	tests=$(echo "$tests" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}
# The guests run two at a time (KVB_GUEST_JOBS): one emulated guest keeps
# only about one host CPU busy, as most of a selftest's time is fio,
# sleeps and waits on the emulated device. Each kernel's tests are shared
# by KVB_GUEST_SPLIT boots (2 by default, 1 to 4), each taking the next
# test as it becomes free (order_tests), so that no kernel's boot runs
# alone for long at the end: with one boot per kernel, two at a time, the
# last kernel's runs alone for about a third of make test. Two boots per
# kernel gain only a few percent over that: a boot runs slower beside
# another, and the host's CPUs are busy most of the time already. Boots
# are started and shown in kernel order, the first ones before the host
# tests below, which run beside them.
jobs=${KVB_GUEST_JOBS:-2}
case $jobs in
[1-9]) ;;
*) ktap_test_fail "KVB_GUEST_JOBS is a number from 1 to 9 (got '$jobs')"; jobs=1 ;;
esac
split=${KVB_GUEST_SPLIT:-2}
case $split in
[1-4]) ;;
*) ktap_test_fail "KVB_GUEST_SPLIT is a number from 1 to 4 (got '$split')"; split=1 ;;
esac
# Seconds each test is expected to take (selftests/durations).
declare -A duration
while read -r t secs; do
	[[ $t == \#* || -z $t ]] || duration[$t]=$secs
done < selftests/durations
# Tests that look back over what ran before them in their boot (leaks,
# the fault injection's own leak check): last, whatever their time.
last_tests="kvb_kmemleak.sh kvb_faults.sh"
# order_tests: $tests, longest first by selftests/durations (60 s for a
# test it does not list), ties in list order, $last_tests at the end.
# A kernel's boots claim their tests from this list as each becomes free
# (run-guest.sh --claim), so they end within about one test of each
# other: longest first leaves the short ones to even out the end. Dealt
# to the boots in advance instead, the boots of a kernel would end
# minutes apart, as a test's time moves with what runs beside it (by half
# or more from one run to the next).
order_tests() {
	local t i=0 late

	while read -r _ _ _ t; do
		echo -n "$t "
	done < <(for t in $tests; do
			late=0
			case " $last_tests " in *" $t "*) late=1 ;; esac
			echo "$late ${duration[$t]:-60} $i $t"
			i=$((i + 1))
		 done | sort -k1,1n -k2,2nr -k3,3n)
}
# Boot I: kernel boot_k[I], name boot_name[I] (KVB_BOOT: none when a
# kernel has one boot), run-guest.sh's arguments boot_args[I]; the
# kernel's tests kernel_tests[K].
boot_k=()
boot_name=()
boot_args=()
declare -A kernel_tests
for k in $kernels; do
	tests=${KVB_TESTS:-$(make -s --no-print-directory -C selftests list)}
	if [ -z "${KVB_TESTS:-}" ] && [ "${KVB_ALL_KERNELS:-0}" != 1 ]; then
		for t in $extended_only; do
			drop_test "$t"
			ktap_test_skip "$k: $t" "DKMS build in the emulated guest: make test-extended runs it"
		done
		if [ "$k" != "$newest" ]; then
			for t in $newest_only; do
				drop_test "$t"
				ktap_test_skip "$k: $t" "runs on $newest only (make test-extended for all)"
			done
		fi
	fi
	kernel_tests[$k]=$(order_tests)
	args=${kernel_tests[$k]}
	if [ "$split" != 1 ]; then
		# In the writable build share, which the guests see at the
		# same path.
		claims=$top/build/claims/$k
		rm -rf "$claims"
		mkdir -p "$claims" ||
			ktap_test_fail "$k: make the claim directory $claims"
		args="--claim $claims $args"
	fi
	for ((p = 1; p <= split; p++)); do
		boot_k+=("$k")
		if [ "$split" = 1 ]; then
			boot_name+=("")
		else
			boot_name+=("part$p")
		fi
		boot_args+=("$args")
	done
done
# all_ran K: each of K's tests has one result in its boots' logs, not
# none (a boot that claimed it and then died) nor two (a claim that did
# not hold).
all_ran() {
	local k=$1 t j n bad="" logs=()

	for ((j = 0; j < ${#boot_k[@]}; j++)); do
		[ "${boot_k[j]}" = "$k" ] && logs+=("$logdir/guest-$k-${boot_name[j]}.log")
	done
	for t in ${kernel_tests[$k]}; do
		n=$(cat "${logs[@]}" 2> /dev/null |
			grep -cE "^(not )?ok [0-9]+ selftests: kvbatch: $t( |\$)")
		[ "$n" = 1 ] || bad+=" $t ($n)"
	done
	[ -z "$bad" ] && return 0
	ktap_print_msg "$k: tests without exactly one result (results):$bad"
	return 1
}
next=0
boot_pid=()
# boot_next: start the next boot.
boot_next() {
	# shellcheck disable=SC2086
	KVB_BOOT=${boot_name[next]} guest_start "${boot_k[next]}" \
		${boot_args[next]}
	boot_pid[next]=$!
	next=$((next + 1))
}
# boot_retry J: boot J again, once, if it died while booting
# (guest_retry()). True if it did.
boot_retry() {
	KVB_BOOT=${boot_name[$1]} guest_retry "${boot_k[$1]}" || return 1
	boot_pid[$1]=${guest_pid[${boot_k[$1]}${boot_name[$1]:+-${boot_name[$1]}}]}
}
# boot_running J: boot J was started and has not ended, by this shell's
# table of its jobs (an ended boot's PID may be another process's by now:
# the host's pid_max is 32768).
boot_running() {
	local r

	r=$(jobs -pr)
	[[ $'\n'$r$'\n' == *$'\n'"${boot_pid[$1]}"$'\n'* ]]
}
# boots_fill: start boots while fewer than $jobs run.
boots_fill() {
	local j n=0

	for ((j = 0; j < next; j++)); do
		boot_running "$j" || boot_retry "$j" || continue
		n=$((n + 1))
	done
	while [ $next -lt ${#boot_k[@]} ] && [ $n -lt "$jobs" ]; do
		boot_next
		n=$((n + 1))
	done
}
boots_fill

# --- checkpatch, in the background beside the first guests --------------
# Each series' own checkpatch.pl: newer ones check more (6.12's flags
# unused macro arguments, 6.1's does not). It only reads the sources, and
# run before the first boot it would hold the boots back by 15 to 25 s
# per kernel; the points come after the other host tests.
for k in $kernels; do
	make --no-print-directory KERNELRELEASE="$k" checkpatch \
		> "$logdir/checkpatch-$k.log" 2>&1
	echo "$k $?"
done > "$logdir/checkpatch.rc" &
checkpatch_pid=$!

# --- host tests, beside the first guests ---------------------------------
# Nothing here writes what a guest reads (build/KREL, build/tools, the
# selftest helpers).

# --- tools/kvab: arguments, variant builds, instruction counts -------------
# In the background: it boots a guest of its own, which would hold the
# other boots back by minutes if it ran first, and its builds go to
# build/kvab.
selftests/kvab_cli.sh > "$logdir/kvab-cli.log" 2>&1 &
kvab_pid=$!

# --- policy core unit tests (userspace) ---------------------------------
if make --no-print-directory unit > "$logdir/unit.log" 2>&1; then
	unit_rc=0
else
	unit_rc=1
fi
tap_points "unit: " "$logdir/unit.log" '^(not )?ok [0-9]+ - '
if [ $unit_rc -ne 0 ] || ! grep -qE '^ok [0-9]+ - ' "$logdir/unit.log"; then
	tail -20 "$logdir/unit.log" | ktap_diag
	ktap_test_fail "unit tests build and run"
fi

# --- kvsim: command line, converter, its page in headless Chromium (host) -
for t in cli browser; do
	host_test "kvsim_$t.sh" "kvsim $t: " "kvsim-$t.log"
done

# --- kvbench --trace and kvtracegen (host, a regular file, no device) -----
host_test kvtrace_cli.sh "kvtrace: " kvtrace-cli.log

# --- kvbatch-stat on fixture files (host) ---------------------------------
host_test kvstat_cli.sh "kvbatch-stat: " kvstat-cli.log

# --- tools/kvreport on fixture results (host) -----------------------------
host_test kvreport_cli.sh "kvreport: " kvreport-cli.log

# --- every tool's command line: --help, -h, bad arguments (host) ----------
host_test tools_cli.sh "tools cli: " tools-cli.log

# --- the engines' tagging API: kvbatch.h and kvbatch.py (host) ------------
host_test engine_cli.sh "engine tagging: " engine-cli.log

# --- kvvm --icount: a guest of four vCPUs on the instruction clock --------
host_test kvvm_icount.sh "kvvm --icount: " kvvm-icount.log

# --- queue runs per request on eight hardware queues: a guest of its own ---
host_test hctx_runs.sh "queue runs, 8 vCPUs: " hctx-runs.log

# --- the documentation: its length, and no history in the tree (host) -----
host_test docs_check.sh "docs: " docs-check.log

# --- install-deps / ksrc-prepare: each image's own source (host, stubs) ----
host_test deps_cli.sh "deps: " deps-cli.log

# --- the guests' kmemleak filter on both kernels' report formats (host) ---
host_test kmemleak_cli.sh "kmemleak filter: " kmemleak-cli.log

# --- the Debian package (installed in the guest by kvb_package.sh) -------
if make --no-print-directory deb > "$logdir/deb.log" 2>&1; then
	ktap_test_pass "make deb builds the kvbatch-dkms package"
	if lintian --tag-display-limit 0 -I build/deb/kvbatch_*.changes \
		> "$logdir/lintian.log" 2>&1 && ! grep -qE '^[EWI]: ' "$logdir/lintian.log"; then
		ktap_test_pass "lintian is clean on the package (errors, warnings, info)"
	else
		grep -v 'root privileges' "$logdir/lintian.log" | ktap_diag
		ktap_test_fail "lintian is clean on the package (errors, warnings, info)"
	fi
	host_test deb_contents.sh "package: " deb-contents.log
else
	ktap_diag < "$logdir/deb.log"
	ktap_test_fail "make deb builds the kvbatch-dkms package"
fi

wait "$kvab_pid"
host_test_points kvab_cli.sh "kvab: " "$logdir/kvab-cli.log" $?

wait "$checkpatch_pid"
for k in $kernels; do
	log=$logdir/checkpatch-$k.log
	if [ "$(awk -v k="$k" '$1 == k { print $2 }' "$logdir/checkpatch.rc")" = 0 ]; then
		ktap_test_pass "checkpatch.pl --strict of $k is clean"
	else
		grep -E '^(ERROR|WARNING|CHECK)|^#|kvbatch:' "$log" | ktap_diag
		ktap_test_fail "checkpatch.pl --strict of $k is clean"
	fi
done

# --- guest results, in kernel order ---------------------------------------
# The next boot starts as soon as any running one ends, not when the one
# whose results come next does: a boot that dies early (a fault of the
# emulator's, not the kernel's) would otherwise leave a host CPU idle
# while its pair runs on alone. A boot still running when its turn comes is shown whole once
# it ends.
for ((i = 0; i < ${#boot_k[@]}; i++)); do
	while boot_running "$i"; do
		boots_fill
		sleep 5
	done
	boots_fill
	KVB_BOOT=${boot_name[i]} guest_finish "${boot_k[i]}"
	# After a kernel's last boot: every test of it ran somewhere.
	if [ "$split" != 1 ] && [ "${boot_k[i + 1]:-}" != "${boot_k[i]}" ]; then
		n=$(echo "${kernel_tests[${boot_k[i]}]}" | wc -w)
		ktap_check "${boot_k[i]}: each of its $n selftests ran once, in one of its boots" \
			all_ran "${boot_k[i]}"
	fi
done

host_end
