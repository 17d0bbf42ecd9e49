#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hctx_runs.sh: kvb_runs.sh (queue runs per request, kvbatch against
# mq-deadline, on eight hardware queues) in a guest of eight vCPUs of its
# own, on the newest kernel the Makefile builds for. make test's guests
# have two vCPUs, where running every hardware queue costs little more
# than running one: the difference the test looks for shows with eight.
# The guest runs on the instruction clock (tools/kvvm --icount), whose
# vCPUs take turns on one host thread: eight vCPUs each on a host thread
# of a 2-core host have crashed at boot in the kernel's own code patching
# (an int3 Oops in timekeeping, before any module was loaded), and a
# count of queue runs needs no real time.
#
# Output is TAP (ktap_helpers.sh): kvb_runs.sh's points, as the guest
# printed them.
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"
ktap_no_args hctx_runs.sh "$@"

krel=$(make -s -C "$top" --no-print-directory print-kernels | tr ' ' '\n' |
	sort -V | tail -n 1)
[ -n "$krel" ] || { ktap_print_header; ktap_exit_skip "no kernel to build for"; }
[ -f "$top/build/$krel/kvbatch.ko" ] ||
	{ ktap_print_header; ktap_exit_skip "kvbatch is not built for $krel"; }

mkdir -p "$top/build/hctx-runs"
out=$top/build/hctx-runs/guest.log
"$top/tools/kvvm" -k "$krel" -c 8 --icount -- selftests/run-guest.sh kvb_runs.sh \
	> "$out" 2>&1
rc=$?
# run-guest.sh nests the test's own KTAP one level down ("# ok 1 ...").
ktap_print_header
n=$(grep -cE '^# (not )?ok [0-9]+ ' "$out")
ktap_set_plan "$n"
grep -E '^# # ' "$out" | sed 's/^# //'
while read -r line; do
	case $line in
	"not ok "*)
		ktap_test_fail "$krel: ${line#not ok * }" ;;
	*"# SKIP"*)
		d=${line#ok * }
		ktap_test_skip "$krel: ${d%% # SKIP*}" "${d#*# SKIP }" ;;
	*)
		ktap_test_pass "$krel: ${line#ok * }" ;;
	esac
done < <(grep -E '^# (not )?ok [0-9]+ ' "$out" | sed 's/^# //')
[ "$n" -gt 0 ] || { echo "# kvvm exited $rc, no test point; its log: $out"; exit 1; }
ktap_finished
