#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guestrun_cli.sh: what the guest runners refuse, on the host, before
# they boot or run anything. tools/kvvm refuses a plugin file that is not
# there, and a module older than the sources it is built from (the module
# is made old for the while and its time put back after);
# selftests/run-guest.sh refuses --claim without a writable directory and
# a test it does not have. selftests/run-all.sh runs it before the first
# guest boots: a guest starting while the module is made old would be
# refused.
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/guestrun-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
# The first kernel whose module is built.
krel=
for k in $(make -s -C "$top" --no-print-directory print-kernels); do
	[ -f "$top/build/$k/kvbatch.ko" ] && { krel=$k; break; }
done
[ -n "$krel" ] || ktap_exit_skip "no kernel with a built module (run make all-kernels)"
ktap_set_plan 5

"$top/tools/kvvm" -k "$krel" --plugin "$tmp/nosuch.so" -- true > /dev/null 2> "$tmp/err"
rc=$?
ktap_check "kvvm --plugin with no such file: exit 2, said so" \
	sh -c "[ $rc = 2 ] && grep -q 'no plugin file' '$tmp/err'"

ko=$top/build/$krel/kvbatch.ko
touch -r "$ko" "$tmp/ko-time"
touch -d 2000-01-01 "$ko"
"$top/tools/kvvm" -k "$krel" -t 120 -- true > /dev/null 2> "$tmp/err"
rc=$?
touch -r "$tmp/ko-time" "$ko"
ktap_check "kvvm refuses a module older than its sources: exit 1, said so" \
	sh -c "[ $rc = 1 ] && grep -q 'kvbatch.ko is older than' '$tmp/err'"

# refuses ARGS...: run-guest.sh exits 2 with its usage and runs nothing.
# shellcheck disable=SC2317
refuses() {
	"$top/selftests/run-guest.sh" "$@" > "$tmp/out" 2> "$tmp/err"
	[ $? = 2 ] && grep -q '^usage: run-guest.sh ' "$tmp/err" &&
		[ ! -s "$tmp/out" ]
}
ktap_check "run-guest.sh --claim with no directory: exit 2 with the usage" \
	refuses --claim
ktap_check "run-guest.sh --claim with no such directory: exit 2 with the usage" \
	refuses --claim "$tmp/nosuch" kvb_guest.sh
mkdir "$tmp/claims"
# shellcheck disable=SC2317
nothing_claimed() {
	refuses --claim "$tmp/claims" kvb_guest.sh nosuch.sh &&
		[ -z "$(ls "$tmp/claims")" ]
}
ktap_check "run-guest.sh with no such test: exit 2 with the usage, nothing claimed" \
	nothing_claimed
ktap_finished
