# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# ktap_helpers.sh: the one TAP emitter of the shell tests, after the
# kernel's tools/testing/selftests/kselftest/ktap_helpers.sh. Sourced by
# lib.sh (the guest tests), lib-host.sh (make test's drivers), run-guest.sh
# and the host tests kvsim_cli.sh and kvsim_browser.sh. (The C unit tests
# have theirs in unit/tap.h.)
#
# A test point is "ok N DESC", "not ok N DESC" or "ok N DESC # SKIP
# REASON"; KTAP_CNT_PASS, KTAP_CNT_FAIL and KTAP_CNT_SKIP count them. The
# plan comes first (ktap_set_plan) or, where the count is not known in
# advance, last (ktap_print_plan).

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

KTAP_TESTNO=0
KTAP_CNT_PASS=0
KTAP_CNT_FAIL=0
KTAP_CNT_SKIP=0
_ktap_planned=

# ktap_no_args NAME [ARG...]: the command line of a host test that takes
# none: --help or -h prints its usage line and exits 0, anything else
# prints it on stderr and exits 2.
ktap_no_args() {
	case ${2-} in
	-h|--help) echo "usage: $1 [--help]"; exit 0 ;;
	'') ;;
	*) echo "usage: $1 [--help]" >&2; exit 2 ;;
	esac
}

ktap_print_header() {
	echo "TAP version 13"
}

ktap_set_plan() {
	_ktap_planned=$1
	echo "1..$1"
}

# ktap_print_plan: the plan after the test points.
ktap_print_plan() {
	echo "1..$KTAP_TESTNO"
}

# _ktap_point RESULT TEXT: the next test point.
_ktap_point() {
	KTAP_TESTNO=$((KTAP_TESTNO + 1))
	echo "$1 $KTAP_TESTNO $2"
}

ktap_test_pass() {
	KTAP_CNT_PASS=$((KTAP_CNT_PASS + 1))
	_ktap_point ok "$*"
}

ktap_test_fail() {
	KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1))
	_ktap_point "not ok" "$*"
}

# ktap_test_skip DESC [REASON]
ktap_test_skip() {
	KTAP_CNT_SKIP=$((KTAP_CNT_SKIP + 1))
	_ktap_point ok "$1 # SKIP${2:+ $2}"
}

# ktap_check DESCRIPTION COMMAND...: one test point from a command's status.
ktap_check() {
	local desc=$1

	shift
	if "$@"; then
		ktap_test_pass "$desc"
	else
		ktap_test_fail "$desc"
	fi
}

# cli_refuses USAGE_RE LISTS -- COMMAND [ARGS...]: for each list in the
# array named LISTS (arguments separated by '|', a trailing '|' giving an
# empty last one), COMMAND ARGS... LIST... must exit 2 with nothing on
# stdout and a line matching USAGE_RE on stderr: the host tests' check
# that a tool refuses bad arguments. A diagnostic names each list that is
# not refused so; true if every one is.
cli_refuses() {
	local re=$1 lists=$2 args rc ok=0 out err
	local -a argv

	shift 3
	out=$(mktemp) err=$(mktemp)
	local -n _cli_lists=$lists
	for args in "${_cli_lists[@]}"; do
		IFS='|' read -r -a argv <<< "$args"
		[ "${args: -1}" != "|" ] || argv+=("")
		"$@" "${argv[@]}" > "$out" 2> "$err"
		rc=$?
		if [ $rc != 2 ] || [ -s "$out" ] || ! grep -q -- "$re" "$err"; then
			ktap_print_msg "not refused (exit $rc): ${*##*/} ${argv[*]}: $(head -n 1 "$err")"
			ok=1
		fi
	done
	rm -f "$out" "$err"
	return $ok
}

# ktap_print_msg TEXT: a diagnostic line.
ktap_print_msg() {
	echo "# $*"
}

# ktap_diag: standard input as diagnostic lines.
ktap_diag() {
	sed -u 's/^/# /'
}

# ktap_exit_skip REASON: the whole program is a skip, before any test
# point; its runner reports REASON.
ktap_exit_skip() {
	ktap_test_skip "${0##*/}" "$*"
	exit $KSFT_SKIP
}

ktap_print_totals() {
	echo "# totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL skip:$KTAP_CNT_SKIP"
}

# ktap_finished: the totals, and the exit status: fail if any point failed
# or the plan was not kept, skip if every point was a skip, else pass.
ktap_finished() {
	if [ -z "$_ktap_planned" ]; then
		ktap_print_plan
	elif [ "$_ktap_planned" -ne "$KTAP_TESTNO" ]; then
		echo "# planned $_ktap_planned test points, ran $KTAP_TESTNO"
		KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1))
	fi
	ktap_print_totals
	[ "$KTAP_CNT_FAIL" -eq 0 ] || exit $KSFT_FAIL
	# Nothing ran: the program is a skip, not a pass.
	[ "$KTAP_CNT_PASS" -eq 0 ] && [ "$KTAP_CNT_SKIP" -gt 0 ] && exit $KSFT_SKIP
	exit $KSFT_PASS
}
