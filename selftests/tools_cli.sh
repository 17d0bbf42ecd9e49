#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools_cli.sh: every tool's command line against the tools' convention,
# on the host (selftests/run-all.sh runs it with the other host tests):
#   --help and -h print the usage on stdout, nothing on stderr, exit 0;
#   a bad argument (an unknown long option, an unknown short option, a bad
#   number) exits 2 with nothing on stdout and, on stderr, one usage line
#   naming the tool ("usage: TOOL ..."), optionally preceded by one line
#   saying what was wrong ("TOOL: ...").
# A tool with a short and a long form of the numeric option checked must
# refuse its bad value alike under both: the long form is there.
# The C tools are built first (make tools); one that does not build fails
# its points. Each refusal runs under a timeout with no standard input.
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/tools-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
# The C tools: kvbench and recall in build/tools, kvsim in place.
if ! make -s --no-print-directory -C "$top" tools > "$tmp/build.log" 2>&1; then
	ktap_diag < "$tmp/build.log"
	ktap_test_fail "the C tools build (make tools)"
fi

# What kvinsns.py needs to read before its TOP: a directory with runs.
mkdir "$tmp/insns"
: > "$tmp/insns/runs"

# The tools: NAME (as the usage line names it, a path before it allowed),
# the command, and the numeric refusal: "|"-separated arguments, then,
# after " ; ", the same with the short form of the option if it has one.
# "-" for a tool that takes no number.
tools=(
	"kvbatch-stat	$top/tools/kvbatch-stat	12x"
	"kvbench	$top/build/tools/kvbench	--time|12x ; -t|12x"
	"kvtracegen	$top/tools/kvbench/kvtracegen	--seed|12x"
	"kvcompare	$top/tools/kvcompare	--rounds|12x ; -R|12x"
	"kvreport	$top/tools/kvreport	-"
	"kvrecord	$top/tools/kvsim/kvrecord	--buffer-kb|12x|--device|nullb0|--output|$tmp/rec|--|true ; -b|12x|-d|nullb0|-o|$tmp/rec|--|true"
	"kvtrace2sim	$top/tools/kvsim/kvtrace2sim	--dies|12x"
	"kvsuite	$top/tools/kvsuite	--time|12x ; -t|12x"
	"kvvm	$top/tools/kvvm	--mem|12x|--|true ; -m|12x|--|true"
	"kvsim	$top/tools/kvsim/kvsim	--trace|tail|--dies|12x"
	"kvinsns.py	$top/tools/lib/kvinsns.py	$tmp/insns|12x"
	"recall	$top/build/tools/recall	/dev/null|12x|8"
	"recall.py	$top/tools/examples/recall.py	--requests|12x|$tmp ; -r|12x|$tmp"
	"kvab	$top/tools/kvab	-r|12x"
)

# run OUT ERR TOOL ARGS...: TOOL ARGS... with no standard input, under a
# timeout, its output in OUT and ERR; its exit status in $rc. Python
# scripts that are not executable run under python3.
run() {
	local out=$1 err=$2 cmd=$3

	shift 3
	if [ "${cmd%.py}" != "$cmd" ]; then
		set -- python3 "$cmd" "$@"
	else
		set -- "$cmd" "$@"
	fi
	timeout 30 "$@" < /dev/null > "$out" 2> "$err"
	rc=$?
}

# usage_re NAME: a usage line naming NAME.
usage_re() {
	local n=${1//./\\.}

	echo "^usage: ([^ ]*/)?$n( |\$)"
}

# helps NAME CMD OPT: CMD OPT exits 0 with a usage line naming NAME on
# stdout and nothing on stderr.
helps() {
	run "$tmp/o" "$tmp/e" "$2" "$3"
	if [ "$rc" = 0 ] && [ ! -s "$tmp/e" ] &&
	   grep -qE "$(usage_re "$1")" "$tmp/o"; then
		return 0
	fi
	echo "$1 $3: exit $rc, stdout: $(grep -m 1 . "$tmp/o"), stderr: $(head -n 1 "$tmp/e")" | ktap_diag
	return 1
}

# refuses NAME CMD ARGS...: CMD ARGS... exits 2 with nothing on stdout
# and, on stderr, the usage line naming NAME, alone or after one line
# "NAME: what was wrong". Its stderr stays in $tmp/e.
refuses() {
	local name=$1 cmd=$2 n why=""

	shift 2
	run "$tmp/o" "$tmp/e" "$cmd" "$@"
	n=$(wc -l < "$tmp/e")
	if [ "$rc" != 2 ]; then
		why="exit $rc"
	elif [ -s "$tmp/o" ]; then
		why="output on stdout"
	elif [ "$n" != 1 ] && [ "$n" != 2 ]; then
		why="$n lines on stderr"
	elif ! tail -n 1 "$tmp/e" | grep -qE "$(usage_re "$name")"; then
		why="no usage line naming $name last on stderr"
	elif [ "$n" = 2 ] && ! head -n 1 "$tmp/e" | grep -q "^$name: "; then
		why="the line before the usage does not start '$name: '"
	fi
	[ -z "$why" ] && return 0
	echo "$name $*: $why" | ktap_diag
	head -n 3 "$tmp/e" | sed 's/^/  stderr: /' | ktap_diag
	return 1
}

# numeric NAME CMD SPEC: the bad number of SPEC (see tools) refused, and
# refused alike in the short form if SPEC gives one.
numeric() {
	local name=$1 cmd=$2 long=${3%% ; *} short= long_err
	local -a argv

	[ "$long" = "$3" ] || short=${3#* ; }
	IFS='|' read -r -a argv <<< "$long"
	refuses "$name" "$cmd" "${argv[@]}" || return 1
	[ -n "$short" ] || return 0
	long_err=$(sed 's/--[a-z-]*/OPT/g; s/ -[a-zA-Z]\b/ OPT/g' "$tmp/e")
	IFS='|' read -r -a argv <<< "$short"
	refuses "$name" "$cmd" "${argv[@]}" || return 1
	[ "$long_err" = "$(sed 's/--[a-z-]*/OPT/g; s/ -[a-zA-Z]\b/ OPT/g' "$tmp/e")" ] &&
		return 0
	echo "$name: '$long' and '$short' are refused differently:" | ktap_diag
	echo "$long_err" | sed 's/^/  long: /' | ktap_diag
	sed 's/--[a-z-]*/OPT/g; s/ -[a-zA-Z]\b/ OPT/g; s/^/  short: /' "$tmp/e" | ktap_diag
	return 1
}

for t in "${tools[@]}"; do
	IFS=$'\t' read -r name cmd num <<< "$t"
	if [ ! -e "$cmd" ]; then
		for p in "--help" "-h" "unknown long option" "unknown short option" "bad number"; do
			ktap_test_fail "$name: $p (no ${cmd#"$top"/}: make tools did not build it)"
		done
		continue
	fi
	if [ "${cmd%.py}" != "$cmd" ] || head -n 1 "$cmd" | grep -q python; then
		if ! command -v python3 > /dev/null; then
			for p in "--help" "-h" "unknown long option" "unknown short option" "bad number"; do
				ktap_test_skip "$name: $p" "python3 is not installed"
			done
			continue
		fi
	fi
	ktap_check "$name: --help prints the usage on stdout, exit 0" \
		helps "$name" "$cmd" --help
	ktap_check "$name: -h prints the usage on stdout, exit 0" \
		helps "$name" "$cmd" -h
	ktap_check "$name: an unknown long option: exit 2, one usage line on stderr" \
		refuses "$name" "$cmd" --no-such-option
	ktap_check "$name: an unknown short option: exit 2, one usage line on stderr" \
		refuses "$name" "$cmd" -Z
	if [ "$num" = - ]; then
		ktap_test_skip "$name: a bad number: exit 2, one usage line on stderr" \
			"$name takes no number"
	else
		ktap_check "$name: a bad number: exit 2, one usage line on stderr" \
			numeric "$name" "$cmd" "$num"
	fi
done

ktap_finished
