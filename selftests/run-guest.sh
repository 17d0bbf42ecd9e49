#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-guest.sh [TEST...]: run kvbatch selftests on this (test) machine as
# kselftest's runner does: one KTAP line per test program, its own output
# nested as "# " diagnostics, the timeout from ./settings, exit 4 = skip.
# Meant to run inside a tools/kvvm guest; it reconfigures block devices.
set -u
cd "$(dirname "$0")" || exit 1

timeout=$(sed -n 's/^timeout=//p' settings)
timeout=${timeout:-300}

if [ $# -eq 0 ]; then
	read -r -a tests <<< "$(make -s --no-print-directory list)"
else
	tests=("$@")
fi

for t in "${tests[@]}"; do
	if [ ! -x "./$t" ]; then
		echo "run-guest.sh: no test program '$t'" >&2
		echo "usage: run-guest.sh [TEST...]   (tests: $(make -s list))" >&2
		exit 2
	fi
done

echo "TAP version 13"
echo "1..${#tests[@]}"
n=0 failed=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	echo "# selftests: kvbatch: $t"
	start=$(date +%s)
	# A test may need longer than the others ("timeout.TEST=S").
	tmo=$(sed -n "s/^timeout\.$t=//p" settings)
	tmo=${tmo:-$timeout}
	timeout --foreground -k 10 "$tmo" "./$t" 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	case $rc in
	0) echo "ok $n selftests: kvbatch: $t # ${secs}s" ;;
	4) echo "ok $n selftests: kvbatch: $t # SKIP" ;;
	124) echo "not ok $n selftests: kvbatch: $t # TIMEOUT $tmo seconds"
	     failed=1 ;;
	*) echo "not ok $n selftests: kvbatch: $t # exit=$rc"
	   failed=1 ;;
	esac
done
exit $failed
