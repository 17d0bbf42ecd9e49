#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-guest.sh [TEST...]: run kvbatch selftests on this (test) machine as
# kselftest's runner does: one KTAP line per test program, its own output
# nested as "# " diagnostics, the timeout from ./settings, exit 4 = skip
# (with the reason the test gave).
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

# shellcheck source=selftests/ktap_helpers.sh
source ./ktap_helpers.sh
out=$(mktemp /tmp/kvb-run-guest.XXXXXX)
# Each test marks its start and end in the kernel log (lib.sh): no rate
# limit on /dev/kmsg, so that quick tests keep their marks.
devkmsg=$(cat /proc/sys/kernel/printk_devkmsg 2>/dev/null)
[ -z "$devkmsg" ] || { echo on > /proc/sys/kernel/printk_devkmsg; } 2>/dev/null
trap 'rm -f "$out"; [ -z "$devkmsg" ] || { echo "$devkmsg" > /proc/sys/kernel/printk_devkmsg; } 2>/dev/null' EXIT

ktap_print_header
ktap_set_plan ${#tests[@]}
for t in "${tests[@]}"; do
	ktap_print_msg "selftests: kvbatch: $t"
	start=$(date +%s)
	# A test may need longer than the others ("timeout.TEST=S").
	tmo=$(sed -n "s/^timeout\.$t=//p" settings)
	tmo=${tmo:-$timeout}
	timeout --foreground -k 10 "$tmo" "./$t" 2>&1 | tee "$out" | ktap_diag
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - start))
	case $rc in
	0) ktap_test_pass "selftests: kvbatch: $t # ${secs}s" ;;
	# The reason the test gave for its first skip (or, if it gave
	# none, that point's description).
	4) ktap_test_skip "selftests: kvbatch: $t" "$(awk '
		/^ok [0-9]+ .*# SKIP/ {
			r = $0; sub(/^.*# SKIP */, "", r)
			if (r == "") { r = $0; sub(/^ok [0-9]+ /, "", r); sub(/ *# SKIP.*$/, "", r) }
			print r; exit
		}' "$out")" ;;
	124) ktap_test_fail "selftests: kvbatch: $t # TIMEOUT $tmo seconds" ;;
	*) ktap_test_fail "selftests: kvbatch: $t # exit=$rc" ;;
	esac
done
[ "$KTAP_CNT_FAIL" -eq 0 ]
