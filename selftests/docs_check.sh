#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# docs_check.sh: the documentation stays reference, on the host.
#
# README.md is short (at most 120 lines) and kvbatch.rst, benchmarks.rst
# and testing.rst together stay at most 2 000 lines, so that a reader
# finds what kvbatch is rather than how it got there. Nothing the project
# ships or runs (README.md, Documentation/, the sources, scripts, tools,
# selftests, the packaging) tells the history of its own development:
# no issue numbers, numbered work periods or CI run names, no paths of one
# machine, no documents outside the tree. The one date allowed is the day
# a results table was taken, written "(YYYY-MM-DD)" or "taken YYYY-MM-DD"
# in README.md or benchmarks.rst. History belongs in commit messages (and, for users,
# debian/changelog).
#
# Output is TAP (ktap_helpers.sh); each point names the offending lines.
# Usage: selftests/docs_check.sh [--help]
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
ktap_no_args docs_check.sh "$@"

ktap_print_header
ktap_set_plan 8

cd "$top" || exit 1

# Every text file in the tree but this one (it spells the patterns out),
# the changelog (user-visible history has its place there) and recorded
# samples (data, not prose).
mapfile -t files < <(git ls-files | grep -vE \
	'^(selftests/docs_check\.sh|debian/changelog|tools/kvsim/samples/)' |
	while read -r f; do
		[ -f "$f" ] && grep -Iq . "$f" && echo "$f"
	done)
if [ ${#files[@]} -lt 50 ]; then
	ktap_exit_skip "not a git work tree with the project's files (found ${#files[@]})"
fi

# none_of DESC REGEX [FILES...]: a point that fails on any line of the
# files (all of them if none given) matching the extended REGEX,
# case-insensitively, and shows the first few.
none_of() {
	local desc=$1 re=$2 hits

	shift 2
	[ $# -gt 0 ] || set -- "${files[@]}"
	hits=$(grep -nHiE -- "$re" "$@" 2>/dev/null)
	if [ -z "$hits" ]; then
		ktap_test_pass "$desc"
	else
		ktap_print_msg "$(echo "$hits" | wc -l) line(s), first:"
		echo "$hits" | head -n 5 | ktap_diag
		ktap_test_fail "$desc"
	fi
}

lines=$(wc -l < README.md)
ktap_check "README.md is at most 120 lines ($lines)" [ "$lines" -le 120 ]

rst=(Documentation/kvbatch.rst Documentation/benchmarks.rst Documentation/testing.rst)
lines=$(cat "${rst[@]}" | wc -l)
ktap_check "kvbatch.rst, benchmarks.rst and testing.rst are at most 2000 lines ($lines)" \
	[ "$lines" -le 2000 ]

none_of "no issue numbers" '(^|[^a-z])issues? #?[0-9]+'
none_of "no numbered work periods or CI run names" \
	'(session [0-9]+|[0-9]+(st|nd|rd|th) session|(first|second|third|[a-z]+(th|ty|st|nd|rd)) session|ci-run[0-9])'
none_of "no paths of one machine" '(^|[^a-z0-9_.])(/work/|/home/[a-z])'
none_of "no documents from outside the tree" \
	'(shared/seeds|seeds/batch|BRIEF\.md|KERNEL-NOTES|the seed'"'"'?s|write-up)'

# Dates: only a table's, in the two files with results tables.
dates='20[2-3][0-9]-[01][0-9]-[0-3][0-9]'
others=()
for f in "${files[@]}"; do
	case $f in README.md|Documentation/benchmarks.rst) ;; *) others+=("$f") ;; esac
done
none_of "no dates outside results tables" "$dates" "${others[@]}"
hits=$(grep -nHE -- "$dates" README.md Documentation/benchmarks.rst |
	grep -vE "(\\(|taken )$dates")
if [ -z "$hits" ]; then
	ktap_test_pass "results tables' dates written as \"(YYYY-MM-DD)\" or \"taken YYYY-MM-DD\", no other date"
else
	echo "$hits" | head -n 5 | ktap_diag
	ktap_test_fail "results tables' dates written as \"(YYYY-MM-DD)\" or \"taken YYYY-MM-DD\", no other date"
fi

ktap_finished
