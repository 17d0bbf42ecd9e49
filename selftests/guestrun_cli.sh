#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guestrun_cli.sh: what the guest runners refuse, on the host, before
# they boot or run anything. tools/kvvm refuses a plugin file that is not
# there, and a module older than the sources it is built from (the module
# is made old for the while and its time put back after);
# selftests/run-guest.sh refuses --claim without a writable directory and
# a test it does not have. And the drivers' guest_run() (lib-host.sh)
# boots once more a guest that died while booting, and only once: a real
# boot with too little memory for its initramfs (96 MiB: the 6.1 kernel
# panics "Out of memory and no killable processes" about 2 s in, before
# any mark), which dies the second time too. selftests/run-all.sh runs it
# before the first guest boots: a guest starting while the module is made
# old would be refused.
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
ktap_set_plan 11

"$top/tools/kvvm" -k "$krel" --plugin "$tmp/nosuch.so" -- true > /dev/null 2> "$tmp/err"
rc=$?
ktap_check "kvvm --plugin with no such file: exit 2, said so" \
	sh -c "[ $rc = 2 ] && grep -q 'no plugin file' '$tmp/err'"

# Bad values exit 2 with the usage line before anything boots, counts
# beyond what QEMU or bash's arithmetic takes among them, and a guest
# root that does not exist (named in the message).
# shellcheck disable=SC2034 # read by cli_refuses()
vm_bad=("-c|0|--|true" "-c|x|--|true" "-c|256|--|true" "-m|63|--|true"
	"-m|99999999|--|true" "-t|0|--|true" "-t|604801|--|true"
	"-t|99999999999999999999|--|true" "-r|/nonexistent|--|true"
	"--bogus|--|true")
ktap_check "kvvm: 10 bad option values exit 2 with the usage line, nothing booted" \
	cli_refuses '^usage: tools/kvvm ' vm_bad -- \
		timeout 30 "$top/tools/kvvm" -k "$krel" --no-module
"$top/tools/kvvm" -k "$krel" -r /nonexistent -- true > /dev/null 2> "$tmp/err"
ktap_check "kvvm -r with no such directory names it" \
	grep -q "no guest root directory '/nonexistent'" "$tmp/err"

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

# In a subshell: lib-host.sh sources ktap_helpers.sh, whose counts are
# this script's.
retry_start=$SECONDS
(
	logdir=$tmp/logs
	mkdir -p "$logdir"
	# shellcheck source=selftests/lib-host.sh
	source "$top/selftests/lib-host.sh"
	cd "$top" &&
		KVVM_OPTS="-m 96" KVB_GUEST_TIMEOUT=300 guest_run "$krel" kvb_module.sh
) > "$tmp/retry.out" 2>&1
elapsed=$((SECONDS - retry_start))
sed 's/^/# retry: /' "$tmp/retry.out" | grep -E 'died while booting|not ok|guest run took'
ktap_check "guest_run boots a guest that died while booting once more" \
	sh -c "[ \$(grep -c '^# $krel: died while booting, before kvbatch was loaded; booting it again: kvvm: kernel report: after \"(no mark)\"' '$tmp/retry.out') = 1 ]"
ktap_check "the first boot's logs kept as *.died.log, beside the second's" \
	test -s "$tmp/logs/guest-$krel.died.log" -a -s "$tmp/logs/console-$krel.died.log" \
	-a -s "$tmp/logs/guest-$krel.log"
ktap_check "a second death while booting fails the boot" \
	grep -q "^not ok [0-9]* $krel: guest ran the selftests" "$tmp/retry.out"
# guest_run is all the subshell does: the time it reports is the two
# boots', within the second or two of sourcing and rounding.
took=$(sed -n "s/^# $krel: guest run took \([0-9]*\) s.*/\1/p" "$tmp/retry.out")
echo "# retry: the subshell took $elapsed s, guest_run reported ${took:-nothing}"
ktap_check "the time guest_run reports counts both boots" \
	test "${took:-0}" -ge $((elapsed - 2))
ktap_finished
