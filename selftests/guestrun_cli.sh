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
# any mark), which dies the second time too; and tcg_int3() tells an
# "Oops: int3" of TCG's, which boots again too, from one in kvbatch's code
# or on its stack, on kernel logs as a boot leaves them.
# selftests/run-all.sh runs it before the first guest boots: a guest
# starting while the module is made old would be refused.
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
ktap_set_plan 15

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

# tcg_int3() on kernel logs as a boot leaves them: an int3 Oops in the
# kernel's own code is TCG's (boot again), one in kvbatch's code or with
# its frame on the stack is kvbatch's, and a report that is not an int3
# Oops is never TCG's.
# int3_log NAME RIP FRAME FIRST: a kvvm log and a console log, NAME.kvvm
# and NAME.console, whose first report is FIRST ("Oops: int3" or
# another), struck at RIP, with FRAME on its call trace.
int3_log() {
	local c=$tmp/$1.console line="[   48.102345] $4: 0000 [#1] PREEMPT SMP NOPTI"

	printf 'kvvm: kernel report: after "start kvb_irqoff.sh": %s\n' \
		"$line" > "$tmp/$1.kvvm"
	{
		echo "[   48.100000] kvvm-mark: start kvb_irqoff.sh"
		echo "$line"
		echo "[   48.102400] CPU: 1 UID: 0 PID: 1234 Comm: bpftrace Tainted: G           O       7.3.4+deb13-amd64 #1"
		echo "[   48.102410] Modules linked in: kvbatch(O) kvssd(O) null_blk"
		echo "[   48.102500] RIP: 0010:$2"
		echo "[   48.102600] Call Trace:"
		echo "[   48.102610]  <TASK>"
		echo "[   48.102620]  $3"
		echo "[   48.102630]  entry_SYSCALL_64_after_hwframe+0x76/0x7e"
		echo "[   48.102640]  </TASK>"
		echo "[   48.102650] ---[ end trace 0000000000000000 ]---"
		echo "[   48.200000] BUG: kernel NULL pointer dereference, address: 0000000000000008"
		echo "[   48.200010]  kvb_dispatch_request+0x10/0x200 [kvbatch]"
	} > "$c"
}
int3_log kernel ksys_read+0x5/0xe0 do_syscall_64+0x82/0x190 "Oops: int3"
int3_log frame ksys_read+0x5/0xe0 "kvb_drain+0x1c/0x90 [kvbatch]" "Oops: int3"
int3_log rip "kvp_choose+0x5/0x300 [kvbatch]" do_syscall_64+0x82/0x190 "Oops: int3"
int3_log bug ksys_read+0x5/0xe0 do_syscall_64+0x82/0x190 "BUG: unable to handle page fault for address: ffffc90000000000"
# shellcheck disable=SC2317
int3_is() {
	(
		# shellcheck source=selftests/lib-host.sh
		source "$top/selftests/lib-host.sh" > /dev/null
		tcg_int3 "$tmp/$1.kvvm" "$tmp/$1.console"
	)
}
# shellcheck disable=SC2317
int3_ours() {
	! int3_is frame && ! int3_is rip
}
ktap_check "tcg_int3: an int3 Oops in the kernel's code is TCG's" int3_is kernel
ktap_check "tcg_int3: not with a kvbatch frame on its stack, or struck in kvbatch" \
	int3_ours
ktap_check "tcg_int3: a first report other than an int3 Oops is never TCG's" \
	eval '! int3_is bug'

# guest_unclaim(): a boot that died after claiming tests gives back the
# claims of those it started (a result or not), and no other boot's.
# shellcheck disable=SC2317
unclaimed() {
	mkdir -p "$tmp/ul/claims/kvb_a.sh" "$tmp/ul/claims/kvb_b.sh" \
		"$tmp/ul/claims/kvb_c.sh"
	printf '%s\n' "TAP version 13" "# selftests: kvbatch: kvb_a.sh" \
		"# # ok 1 first" "ok 1 selftests: kvbatch: kvb_a.sh # 3s" \
		"# selftests: kvbatch: kvb_b.sh" "# # ok 1 half" \
		> "$tmp/ul/guest-K-part1.log"
	(
		logdir=$tmp/ul
		# shellcheck source=selftests/lib-host.sh
		source "$top/selftests/lib-host.sh" > /dev/null
		guest_args[K-part1]="--claim $tmp/ul/claims kvb_a.sh kvb_b.sh"
		guest_unclaim K-part1
	)
	[ ! -e "$tmp/ul/claims/kvb_a.sh" ] && [ ! -e "$tmp/ul/claims/kvb_b.sh" ] &&
		[ -d "$tmp/ul/claims/kvb_c.sh" ]
}
ktap_check "guest_unclaim: a dead boot's started tests are claimable again" \
	unclaimed

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
