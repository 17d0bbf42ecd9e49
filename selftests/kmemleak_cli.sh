#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kmemleak_cli.sh: kmemleak-ours.awk, the filter kvb_kmemleak.sh and
# kvb_faults.sh read kmemleak's report through, on the host. Reports in
# both kernels' formats (print_unreferenced() in mm/kmemleak.c: frames
# "    [<%p>] %pS" on 6.1, "    %pS" on 6.12 and 7.3), each with one
# object kvbatch allocated, one whose frame is a bare address in the range
# an unloaded module occupied, and one that only its comm and hex dump
# tie to kvbatch: the first by name, the second by range, never the
# third. (A filter that matched 6.1's frames only would find no leak on
# 6.12 and 7.3.) Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
awkf=$top/selftests/kmemleak-ours.awk
tmp=$(mktemp -d /tmp/kmemleak-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
ktap_set_plan 6

# The three objects, in FORMAT (6.1 or 6.12).
report() {
	local fmt=$1 i frames

	for i in 1 2 3; do
		echo "unreferenced object 0xffff888104b3${i}000 (size 64):"
		echo "  comm \"kvb_kmemleak.sh\", pid 812, jiffies 4294912345"
		echo "  hex dump (first 16 bytes):"
		echo "    6b 76 62 5f 69 6e 69 74 00 00 00 00 00 00 00 00  kvb_init........"
		case $i in
		1) frames="__kmalloc_cache_noprof+0x2a1/0x3b0
kvb_init_sched+0x8a/0x3f0 [kvbatch]
blk_mq_init_sched+0x11c/0x250" ;;
		2) frames="__kmalloc_cache_noprof+0x2a1/0x3b0
0xffffffffc0a01234
do_syscall_64+0x82/0x190" ;;
		3) frames="__kmalloc_noprof+0x2a1/0x3b0
null_add_dev+0x1c/0x600 [null_blk]
do_syscall_64+0x82/0x190" ;;
		esac
		if [ "$fmt" = 6.1 ]; then
			echo "  backtrace:"
			echo "$frames" | while read -r f; do
				echo "    [<00000000a1b2c3d$i>] $f"
			done
		else
			echo "  backtrace (crc 5a5a5a5a):"
			echo "$frames" | while read -r f; do
				echo "    $f"
			done
		fi
	done
}

# ours FORMAT [AWK-ARGS...]: the objects the filter keeps, by number.
ours() {
	local fmt=$1

	shift
	report "$fmt" > "$tmp/r$fmt"
	awk "$@" -f "$awkf" "$tmp/r$fmt" |
		sed -n 's/^unreferenced object 0xffff888104b3\([0-9]\)000 .*/\1/p' | tr -d '\n'
}

for fmt in 6.1 6.12; do
	got=$(ours $fmt)
	ktap_check "$fmt format: by name, the object kvbatch allocated alone (got '${got}')" \
		test "$got" = 1
	got=$(ours $fmt -v lo=ffffffffc0a00000 -v hi=ffffffffc0a20000)
	ktap_check "$fmt format: by range, the object of the unloaded module alone (got '${got}')" \
		test "$got" = 2
	got=$(ours $fmt -v lo=ffffffffc0b00000 -v hi=ffffffffc0b20000)
	ktap_check "$fmt format: by another range, none (got '${got}')" test -z "$got"
done
ktap_finished
