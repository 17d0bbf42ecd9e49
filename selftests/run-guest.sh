#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-guest.sh [--claim DIR] [TEST...]: run kvbatch selftests on this
# (test) machine as kselftest's runner does: one KTAP line per test
# program, its own output nested as "# " diagnostics, the timeout from
# ./settings, exit 4 = skip (with the reason the test gave).
# With --claim DIR, several boots share the list: a test runs here only if
# this boot is the first to make DIR/TEST (mkdir is atomic, also between
# guests on the same 9p share), so each test runs once, in whichever boot
# is free first; the plan then comes last. make test gives each kernel's
# boots its list longest test first (selftests/run-all.sh).
# Meant to run inside a tools/kvvm guest; it reconfigures block devices.
set -u
cd "$(dirname "$0")" || exit 1

usage() {
	echo "usage: run-guest.sh [--claim DIR] [TEST...]   (tests: $(make -s list))" >&2
	exit 2
}

claim=
if [ "${1:-}" = --claim ]; then
	if [ -z "${2:-}" ] || [ ! -d "$2" ] || [ ! -w "$2" ]; then
		echo "run-guest.sh: --claim needs a writable directory (got '${2:-}')" >&2
		usage
	fi
	claim=$2
	shift 2
fi

# shellcheck source=tools/lib/kvbatch.sh
source ../tools/lib/kvbatch.sh

# ./settings, read once: "timeout=S" and "timeout.NAME=S" lines. (Under
# TCG a process per test, here or below, costs a fifth of a second or
# more: the loop below starts none it can do without.)
declare -A settings=()
while IFS='=' read -r k v; do
	[[ $k == timeout* ]] && settings[$k]=$v
done < settings
timeout=${settings[timeout]:-300}
# A debug kernel (KASAN or lockdep: make test-debug) under TCG runs the
# same work several times slower; its default is "timeout.debug".
if kvb_debug_kernel; then
	timeout=${settings[timeout.debug]:-$timeout}
fi

if [ $# -eq 0 ]; then
	read -r -a tests <<< "$(make -s --no-print-directory list)"
else
	tests=("$@")
fi

for t in "${tests[@]}"; do
	if [ ! -x "./$t" ]; then
		echo "run-guest.sh: no test program '$t'" >&2
		usage
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

# _ancestors: this shell and every process above it, one PID per line.
_ancestors() {
	local p=$$

	while [ -n "$p" ] && [ "$p" -gt 1 ]; do
		echo "$p"
		p=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
	done
}

# reap_leftovers: after a test killed at its timeout. Its own teardown
# (lib.sh) did not run: bash defers the TERM trap until the foreground
# command returns, and the KILL that follows leaves no trap at all. Its
# children outlive it (timeout --foreground signals the test alone) and
# keep null_blk or scsi_debug busy, so every later test that needs one
# would skip. Kill what is left in our process group (the test ran in
# it), except us and our ancestors, and what still has null_blk's or
# scsi_debug's disks open (fio's job processes need not be in our
# group), unmount what the test mounted on those disks, and unload them.
# A process stuck in the kernel survives this; the modules then stay,
# and the later tests say so in their skips.
reap_leftovers() {
	local pg keep p m f disks=" "

	pg=$(($(ps -o pgid= $$)))
	keep=" $(_ancestors | tr '\n' ' ') "
	for p in $(pgrep -g "$pg"); do
		case $keep in *" $p "*) continue ;; esac
		kill -KILL "$p" 2>/dev/null
	done
	# And whatever holds the test disks open from another group (by
	# /proc: the Debian 13 root has no fuser).
	for m in /dev/nullb* /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
		[ -e "$m" ] && disks="$disks/dev/${m##*/} "
	done
	if [ "$disks" != " " ]; then
		for f in /proc/[0-9]*/fd/*; do
			m=$(readlink "$f" 2>/dev/null) || continue
			case $disks in *" $m "*) ;; *) continue ;; esac
			p=${f#/proc/}
			p=${p%%/*}
			case $keep in *" $p "*) continue ;; esac
			kill -KILL "$p" 2>/dev/null
		done
	fi
	sleep 1
	awk '$1 ~ "^/dev/(nullb|sd)" { print $2 }' /proc/mounts |
		while read -r m; do umount -l "$m"; done
	for m in null_blk scsi_debug; do
		[ -d "/sys/module/$m" ] || continue
		modprobe -r "$m" 2>/dev/null ||
			ktap_print_msg "run-guest.sh: $m still in use after the timeout"
	done
}

# busy_ticks VAR: set VAR to the CPU time all CPUs spent outside idle and
# iowait so far, in USER_HZ ticks (/proc/stat). Beside another guest a
# test's seconds move with its neighbour; under TCG the CPU it used is
# what it costs the host, and what make test's two host CPUs run out of.
busy_ticks() {
	local -n _bt_var=$1
	local user nice sys irq softirq steal _

	read -r _ user nice sys _ _ irq softirq steal _ < /proc/stat
	_bt_var=$((user + nice + sys + irq + softirq + steal))
}
hz=$(getconf CLK_TCK)
busy0=0 busy1=0

ktap_print_header
[ -n "$claim" ] || ktap_set_plan ${#tests[@]}
for t in "${tests[@]}"; do
	# Another boot has it (or had it: a boot that claimed it and then
	# died leaves it unrun, which the host checks for).
	[ -z "$claim" ] || mkdir "$claim/$t" 2> /dev/null || continue
	ktap_print_msg "selftests: kvbatch: $t"
	start=$EPOCHSECONDS
	busy_ticks busy0
	# A test may need longer than the others ("timeout.TEST=S").
	tmo=${settings[timeout.$t]:-$timeout}
	timeout --foreground -k 10 "$tmo" "./$t" 2>&1 | tee "$out" | ktap_diag
	rc=${PIPESTATUS[0]}
	secs=$((EPOCHSECONDS - start))
	busy_ticks busy1
	ktap_print_msg "$t: ${secs}s, cpu $(((busy1 - busy0) / hz))s"
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
	# 124: ended by the TERM at the timeout; 137: by a KILL, timeout's
	# ten seconds after the TERM (or another's, the OOM killer's).
	124) ktap_test_fail "selftests: kvbatch: $t # TIMEOUT $tmo seconds"
		reap_leftovers ;;
	137) if [ "$secs" -ge "$tmo" ]; then
			ktap_test_fail "selftests: kvbatch: $t # TIMEOUT $tmo seconds (killed)"
		else
			ktap_test_fail "selftests: kvbatch: $t # exit=137 (killed)"
		fi
		reap_leftovers ;;
	# The first check that failed, so that a summary that keeps only
	# this line still says what went wrong.
	*) ktap_test_fail "selftests: kvbatch: $t # exit=$rc$(awk '
		/^not ok [0-9]+ / {
			r = $0; sub(/^not ok [0-9]+ /, "", r)
			print ": " r; exit
		}' "$out")" ;;
	esac
done
[ -z "$claim" ] || ktap_print_plan
[ "$KTAP_CNT_FAIL" -eq 0 ]
