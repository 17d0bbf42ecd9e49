# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Host-side helpers of the test drivers (run-all.sh, run-debug.sh): one
# guest boot running selftests whose KTAP results become test points.
# Sourced from the top of the tree with $top and $logdir set.

# shellcheck source=selftests/ktap_helpers.sh
source "$top/selftests/ktap_helpers.sh"

# host_begin: the common start of a test driver: the TAP header, the
# clock, and the Debian packages of scripts/deps.txt.
host_begin() {
	mkdir -p "$logdir"
	start=$(date +%s)
	ktap_print_header
	scripts/install-deps.sh 2>&1 | ktap_diag
	# The installer's status, not the diagnostics filter's.
	[ "${PIPESTATUS[0]}" = 0 ] ||
		ktap_test_fail "install Debian packages from scripts/deps.txt"
}

# host_end: the plan, the totals line, and the exit status.
host_end() {
	ktap_print_plan
	echo "# total time $(($(date +%s) - start))s"
	echo "$KTAP_CNT_PASS passed, $KTAP_CNT_FAIL failed, $KTAP_CNT_SKIP skipped"
	[ "$KTAP_CNT_FAIL" -eq 0 ]
}

# host_test SCRIPT PREFIX LOG: run selftests/SCRIPT on the host, its
# output in $logdir/LOG; its test points become ours under PREFIX, its
# diagnostics ours. A run that printed no point fails, and so does one
# that exited with a failure no point shows: a plan it did not keep
# (ktap_finished() counts that without a point), or a stop part way.
host_test() {
	"selftests/$1" > "$logdir/$3" 2>&1
	host_test_points "$1" "$2" "$logdir/$3" $?
}

# host_test_points SCRIPT PREFIX LOG RC: the test points of a run of
# selftests/SCRIPT that wrote LOG and exited RC (one run in the
# background, then this).
host_test_points() {
	local script=$1 prefix=$2 log=$3 rc=$4

	tap_points "$prefix" "$log" '^(not )?ok [0-9]+ '
	grep '^# ' "$log" | ktap_diag
	if ! grep -qE '^(not )?ok [0-9]+ ' "$log"; then
		ktap_test_fail "${prefix}$script ran (exit $rc, no test point)"
	elif [ "$rc" != 0 ] && [ "$rc" != "$KSFT_SKIP" ] &&
	     ! grep -q '^not ok ' "$log"; then
		ktap_test_fail "${prefix}$script exited $rc with no failed point (a plan not kept, or a stop part way)"
	fi
}

# tap_points PREFIX FILE REGEX: each KTAP result line of FILE matching
# REGEX ("ok 3 - desc", "not ok 2 selftests: ...", "ok 4 desc # SKIP
# reason") becomes a test point named PREFIX plus its description.
tap_points() {
	local prefix=$1 file=$2 re=$3 line desc reason

	while read -r line; do
		desc=${line#not }
		desc=${desc#ok }
		desc=${desc#* }
		desc=${desc#- }
		case $line in
		"ok "*"# SKIP"*)
			reason=${desc#*# SKIP}
			ktap_test_skip "$prefix${desc%% # SKIP*}" "${reason# }" ;;
		"ok "*) ktap_test_pass "$prefix$desc" ;;
		*) ktap_test_fail "$prefix$desc" ;;
		esac
	done < <(grep -E "$re" "$file")
}

# kreport_first KVVMLOG: the console line of the first kernel report kvvm
# found (its first "kernel report: after" line in KVVMLOG), or nothing.
kreport_first() {
	awk '/^kvvm: kernel report: after "/ {
		print substr($0, index($0, "\": ") + 3); exit }' "$1"
}

# kreport_brief KVVMLOG CONSOLE: the gist of the first kernel report in
# the guest's CONSOLE log, in at most 24 lines: the report line kvvm
# found first (its "kernel report: after" line in KVVMLOG, by kvvm's own
# KREPORT_RE), then the report's opening lines ("BUG:", "Oops:",
# "WARNING:"), where it struck (RIP) and the reliable frames of its call
# trace, without timestamps. A CI log shown only in part keeps the lines
# beside a failure; the full report is in CONSOLE.
kreport_brief() {
	local first

	[ -f "$2" ] || return 0
	first=$(kreport_first "$1")
	[ -n "$first" ] || return 0
	awk -v first="$first" '
	!on && index($0, first) == 1 { on = 1 }
	!on { next }
	{ sub(/^\[ *[0-9]+\.[0-9]+\] /, ""); sub(/\r$/, "") }
	/---\[ end trace/ { exit }
	n == 0 || /^(BUG|Oops|WARNING|Kernel panic|general protection)/ ||
	/RIP: / || /^ *[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+\/0x[0-9a-f]+/ {
		print; if (++n == 24) exit
	}' "$2"
}

# guest_start KREL TEST...: boot KREL in tools/kvvm (extra kvvm options in
# KVVM_OPTS) in the background and run the tests in it with
# selftests/run-guest.sh; guest_finish KREL waits for that boot and turns
# its top-level results and the kernel log check into test points. A
# driver may keep several boots going (make test runs two at once) and
# finish them in any order: the output of the boot being finished is shown
# live if it still runs, whole if it has ended, so the TAP stream stays in
# one piece per boot. A driver that
# boots one kernel more than once names each boot in KVB_BOOT: it tells
# the boots' logs and test points apart.
declare -A guest_pid guest_t0 guest_args guest_retried
guest_start() {
	local k=$1 boot=$1${KVB_BOOT:+-$KVB_BOOT}

	shift
	guest_args[$boot]="$*"
	# The whole suite takes 8 to 20 minutes per kernel, more on a loaded
	# host; each test has its own timeout (settings), this one only
	# catches a guest that stopped making progress.
	# shellcheck disable=SC2086
	tools/kvvm -k "$k" -t "${KVB_GUEST_TIMEOUT:-2700}" ${KVVM_OPTS:-} \
		-l "$logdir/console-$boot.log" -- \
		selftests/run-guest.sh "$@" > "$logdir/guest-$boot.log" 2>&1 &
	guest_pid[$boot]=$!
	guest_t0[$boot]=$SECONDS
}

# guest_died_booting BOOT: the ended boot BOOT (KREL, or KREL-KVB_BOOT)
# died while its kernel was booting: a kernel report before any mark
# (kvvm: "after (no mark)"), no selftest runner started, and kvbatch
# never loaded (no "kvbatch" in its kernel log). Under multi-threaded TCG
# a vCPU can run the transient int3 of a jump-label patch after the patch
# is over (testing.rst, "Oops: int3"); on a host running three guests at
# once a boot can die so a few seconds into the kernel's start, before
# anything of kvbatch's has run.
guest_died_booting() {
	! grep -q '^TAP version' "$logdir/guest-$1.log" &&
		grep -q '^kvvm: kernel report: after "(no mark)"' "$logdir/guest-$1.log" &&
		! grep -qs kvbatch "$logdir/console-$1.log"
}

# tcg_int3 KVVMLOG CONSOLE: the first kernel report of a boot
# (kreport_first()) is an "Oops: int3" whose report, to its end, names
# nothing of kvbatch's or kvssd's: no frame of either module and no
# function of theirs. That is the transient int3 of a code patch that a
# vCPU of multi-threaded TCG ran after the patch was over (testing.rst,
# "Oops: int3"), in code the kernel patched for itself (ftrace, a static
# key). An int3 in kvbatch's code, or with its frames on the stack, is
# not taken for it.
tcg_int3() {
	local first

	[ -f "$2" ] || return 1
	first=$(kreport_first "$1")
	case $first in
	*"Oops: int3"*) ;;
	*) return 1 ;;
	esac
	awk -v first="$first" '
	!on && index($0, first) == 1 { on = 1 }
	!on { next }
	/\[(kvbatch|kvssd)\]/ || /[^A-Za-z0-9_](kvb|kvp|kvssd)_[A-Za-z0-9_]*\+0x/ {
		ours = 1; exit
	}
	/---\[ end trace/ { exit }
	END { exit !on || ours }' "$2"
}

# guest_unclaim BOOT: give back the claims (run-guest.sh --claim) of the
# tests the ended boot BOOT started, so that they run again, in the boot
# that replaces it or in its kernel's other boot: without their results
# in its log, which a retry sets aside, they would have none.
guest_unclaim() {
	local dir t

	dir=$(sed -n 's/^--claim \([^ ]*\) .*/\1/p' <<< "${guest_args[$1]} ")
	[ -n "$dir" ] || return 0
	sed -n 's/^# selftests: kvbatch: \([^ ]*\)$/\1/p' "$logdir/guest-$1.log" |
		while read -r t; do
			rmdir "$dir/$t" 2> /dev/null || true
		done
}

# guest_retry KREL: if KREL's ended boot (KVB_BOOT names it) died while
# booting, or its first report is a TCG int3 (tcg_int3()), and it was not
# booted again yet, say so with its first report and start it again with
# the same tests; the first boot's logs are kept as *.died.log. True if
# it did. A second death is a failure like any other. The boot's time
# keeps counting from the first start: the run took both.
guest_retry() {
	local k=$1 boot=$1${KVB_BOOT:+-$KVB_BOOT} f t0 why

	[ -z "${guest_retried[$boot]:-}" ] || return 1
	if guest_died_booting "$boot"; then
		why="died while booting, before kvbatch was loaded"
	elif tcg_int3 "$logdir/guest-$boot.log" "$logdir/console-$boot.log"; then
		why="hit a TCG int3 outside kvbatch and kvssd"
	else
		return 1
	fi
	guest_retried[$boot]=1
	grep -m 1 '^kvvm: kernel report: after' "$logdir/guest-$boot.log" |
		sed "s/^/# $boot: $why; booting it again: /"
	# Failures before the death stay on record, though their tests
	# run again.
	grep -E '^not ok [0-9]+ selftests:' "$logdir/guest-$boot.log" |
		sed "s/^/# $boot (first boot): /" || true
	guest_unclaim "$boot"
	for f in console guest; do
		[ ! -f "$logdir/$f-$boot.log" ] ||
			mv "$logdir/$f-$boot.log" "$logdir/$f-$boot.died.log"
	done
	t0=${guest_t0[$boot]}
	# shellcheck disable=SC2086
	guest_start "$k" ${guest_args[$boot]}
	guest_t0[$boot]=$t0
}

guest_finish() {
	local k=$1 boot=$1${KVB_BOOT:+-$KVB_BOOT} vm rc
	local log=$logdir/guest-$boot.log p="$1${KVB_BOOT:+ ($KVB_BOOT)}: "

	echo "# booting $k${KVB_BOOT:+ ($KVB_BOOT)}"
	while :; do
		vm=${guest_pid[$boot]}
		# Live while it runs; all of it at once if it has ended.
		tail -n +1 -f --pid="$vm" "$log" 2>/dev/null | ktap_diag
		wait "$vm"
		rc=$?
		guest_retry "$k" || break
	done
	echo "# ${p}guest run took $((SECONDS - guest_t0[$boot])) s${guest_retried[$boot]:+ (both boots)}"
	tap_points "$p" "$log" '^(not )?ok [0-9]+ selftests:'
	# A boot that shares its kernel's tests (run-guest.sh --claim) may
	# find them all taken: an empty plan from a run that ended well.
	if ! grep -qE '^(not )?ok [0-9]+ selftests:' "$log"; then
		if [ "$rc" = 0 ] && grep -q '^1\.\.0$' "$log"; then
			echo "# ${p}the other boots took every test"
		else
			ktap_test_fail "${p}guest ran the selftests (kvvm status $rc)"
		fi
	fi
	case $rc in
	124|125) ktap_test_fail "${p}guest finished (kvvm status $rc)" ;;
	esac
	# kvvm exits 3 for a report only when the command passed; a failing
	# test's status hides it, so read kvvm's own report lines as well.
	if [ "$rc" = 3 ] || grep -q '^kvvm: kernel report:' "$log"; then
		ktap_test_fail "${p}guest kernel log free of WARN/BUG/lockdep/KASAN/kmemleak reports"
		# Which test was running and the first report line, again
		# beside the failure: a CI log shown in part may have cut
		# the full report above.
		grep '^kvvm: kernel report: after ' "$log" | head -n 5 | ktap_diag
		kreport_brief "$log" "$logdir/console-$boot.log" | ktap_diag
	elif [ "$rc" != 124 ] && [ "$rc" != 125 ]; then
		ktap_test_pass "${p}guest kernel log free of WARN/BUG/lockdep/KASAN/kmemleak reports"
	fi
}

# guest_run KREL TEST...: one boot, start to finish.
guest_run() {
	guest_start "$@"
	guest_finish "$1"
}
