#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kvab_cli.sh: tools/kvab on the host (selftests/run-all.sh runs it with
# the other host tests). --help prints the usage on stdout and exits 0;
# every bad argument, by its short or long option, exits 2 with the usage
# and builds nothing; -n builds a variant from a revision and one from a
# patch file, each through KVB_MODNAME, and each module carries only its
# own names (module, alias, elevator, trace system), so that it loads
# beside kvbatch; a patch that does not apply exits nonzero. Then one
# short guest: -p counts each scheduler's instructions per request and
# puts each one's own functions under it alone. (kvvm's own refusals are
# selftests/guestrun_cli.sh's.)
# It writes nothing a guest of make test reads, so run-all.sh runs it
# beside them.
# Output is TAP (ktap_helpers.sh).
set -uf
top=$(cd "$(dirname "$0")/.." && pwd)
kvab=$top/tools/kvab
tmp=$(mktemp -d /tmp/kvab-cli.XXXXXX)
trap 'rm -rf "$tmp" "$top/build/kvab/c1" "$top/build/kvab/c2" "$top/build/kvab/c3" "$top/build/kvab/c4"' EXIT

# shellcheck source=selftests/ktap_helpers.sh
source "$(dirname "$0")/ktap_helpers.sh"

ktap_print_header
krel=$(make -s -C "$top" --no-print-directory print-kernels | tr ' ' '\n' |
	grep -m1 '^6\.12\.')
if [ -z "$krel" ] || [ ! -e "/boot/vmlinuz-$krel" ] ||
   [ ! -d "/lib/modules/$krel/build" ]; then
	ktap_exit_skip "no Debian 6.12 kernel and headers on this host"
fi

# refuses ARGS...: exit 2, the usage on stderr, nothing on stdout, and no
# build directory made.
refuses() {
	local before after

	before=$(ls "$top/build/kvab" 2>/dev/null)
	"$kvab" "$@" > "$tmp/out" 2> "$tmp/err"
	[ $? = 2 ] && grep -q '^usage: tools/kvab ' "$tmp/err" &&
		[ ! -s "$tmp/out" ] || return 1
	after=$(ls "$top/build/kvab" 2>/dev/null)
	[ "$before" = "$after" ]
}

bad=0
for args in "-r 0" "-r x" "-r 100" "-t 0" "-t 1000" "-c 0" "-c 9" "-c x" \
	    "-w foo" "-w cost,steady" \
	    "-s kyber,kvbatch" "-s kvbc1" "-s kvbc1:max_inflight=4" \
	    "-s none:max_inflight=4" "-s kvbatch:max_inflight" \
	    "-s kvbatch:max_inflight=4;x" "-s kvbatch:max_inflight=4," \
	    "-k nosuch" "-x" "C1=HEAD" \
	    "c1" "c1=" "toolongname=HEAD" "c1=nosuchrev" "c1=HEAD c1=HEAD"; do
	# shellcheck disable=SC2086
	if ! refuses $args; then
		ktap_print_msg "not refused as expected: tools/kvab $args"
		bad=$((bad + 1))
	fi
done
# A scheduler listed twice (its runs would sum into one mean), and a
# variant named so that it would be a second kvbatch; a kvbatch tunable
# it does not have or a value it refuses (checked before the build and the
# boot, not in the guest), one scheduler alone, a row twice (the kvssd
# row too), and -p with -n; the long options; a revision older than
# KVB_MODNAME (the first commit), whose module cannot be renamed.
root=$(git -C "$top" rev-list --max-parents=0 HEAD | tail -n 1)
for args in "-s|mq-deadline kvbatch kvbatch" "atch=HEAD" \
	    "-s|mq-deadline kvbatch:nosuch_knob=1" \
	    "-s|mq-deadline kvbatch:max_inflight=abc" \
	    "-s|mq-deadline kvbatch:max_inflight=4097" \
	    "-s|mq-deadline kvbatch:batch_key=bogus" \
	    "-s|kvbatch" "-w|cost cost" "-w|ssdrecall recall ssdrecall" "-n|-p" \
	    "--rounds|0" "--time=1000" "--cpus|9" "--rows|foo" \
	    "--schedulers|kvbatch" "--kernel|nosuch" "--build-only|--profile" \
	    "c1=$root"; do
	IFS='|' read -r -a argv <<< "$args"
	if ! refuses "${argv[@]}"; then
		ktap_print_msg "not refused as expected: tools/kvab ${argv[*]}"
		bad=$((bad + 1))
	fi
done
ktap_check "43 bad argument lists: exit 2 with the usage, nothing built" \
	[ $bad = 0 ]
# helps: --help and -h print the usage and the long options on stdout,
# nothing on stderr, and exit 0. (Called through ktap_check.)
# shellcheck disable=SC2317
helps() {
	local opt

	for opt in --help -h; do
		"$kvab" "$opt" > "$tmp/out" 2> "$tmp/err" &&
			grep -q '^usage: tools/kvab ' "$tmp/out" &&
			grep -q -- '--schedulers' "$tmp/out" &&
			[ ! -s "$tmp/err" ] || return 1
	done
}
ktap_check "--help and -h: the usage and the options on stdout, exit 0" helps

# kvinsns.py on fixed counts: each scheduler's own functions are its
# module's ([kyber_iosched] for kyber, [kvbatch] for kvbatch) or, built
# in, its prefix (dd_ for mq-deadline); 10 requests of 100 instructions
# in one function each, so 100 per request under every scheduler.
mkdir "$tmp/prof-fix"
printf '%s\n' 'cost mq-deadline 10 0 1 1' 'cost kyber 10 0 2 1' \
	'cost kvbatch 10 0 3 1' > "$tmp/prof-fix/runs"
printf 'ffffffff81000000 T blk_mq_submit_bio\nffffffff81677350 t dd_has_work\n'\
'ffffffffc0001000 t kyber_has_work\t[kyber_iosched]\n'\
'ffffffffc0002000 t kvb_has_work\t[kvbatch]\n' > "$tmp/prof-fix/kallsyms-cost"
: > "$tmp/prof-fix/snap.0"
echo 'ffffffff81677350 10 100' > "$tmp/prof-fix/snap.1"
echo 'ffffffffc0001000 10 100' > "$tmp/prof-fix/snap.2"
echo 'ffffffffc0002000 10 100' > "$tmp/prof-fix/snap.3"
python3 "$top/tools/lib/kvinsns.py" "$tmp/prof-fix" > "$tmp/fix.out" 2>&1
ktap_check "kvinsns.py: a module scheduler's (kyber's) own functions are its module's" \
	grep -qE "^the scheduler's own functions +100 +100 +100\$" "$tmp/fix.out"
# Its bad arguments: the usage and exit 2, not a traceback.
# shellcheck disable=SC2034 # read by cli_refuses()
insns_bad=("/nonexistent" "--nosuch" "$tmp/prof-fix|0" "$tmp/prof-fix|x"
	   "$tmp/prof-fix|1|2" "$tmp")
ktap_check "kvinsns.py: 6 bad argument lists exit 2 with the usage" \
	cli_refuses '^usage: tools/lib/kvinsns.py ' insns_bad -- \
		python3 "$top/tools/lib/kvinsns.py"

# A patch that adds a modinfo field, to find in its module.
mkdir -p "$tmp/a" "$tmp/b"
cp "$top/kv-sched.c" "$tmp/a/kv-sched.c"
cp "$top/kv-sched.c" "$tmp/b/kv-sched.c"
echo 'MODULE_INFO(kvab_mark, "kvab-cli-mark");' >> "$tmp/b/kv-sched.c"
(cd "$tmp" && diff -u a/kv-sched.c b/kv-sched.c > both.patch)

if "$kvab" -n -k "$krel" c1=HEAD c2="$tmp/both.patch" > "$tmp/kos" 2> "$tmp/err"; then
	ktap_test_pass "-n builds a variant from a revision and one from a patch"
else
	ktap_print_msg "$(tail -5 "$tmp/err")"
	ktap_test_fail "-n builds a variant from a revision and one from a patch"
fi

# names KO NAME: the module's name, alias, elevator and trace system are
# NAME's, and kvbatch's appear nowhere. (Called through ktap_check.)
# shellcheck disable=SC2317
names() {
	local ko=$1 m=$2

	[ -f "$ko" ] &&
	[ "$(modinfo -F name "$ko")" = "$m" ] &&
	[ "$(modinfo -F alias "$ko")" = "$m-iosched" ] &&
	strings "$ko" | grep -qx "$m" &&
	! strings "$ko" | grep -qxE 'kvbatch|kvbatch-iosched'
}
ko1=$(sed -n 1p "$tmp/kos") ko2=$(sed -n 2p "$tmp/kos")
ktap_check "the revision's module is kvbc1 throughout (name, alias, elevator)" \
	names "$ko1" kvbc1
ktap_check "the patched module is kvbc2 and carries the patch" \
	sh -c "[ \"\$(modinfo -F kvab_mark '$ko2')\" = kvab-cli-mark ] &&
	       [ \"\$(modinfo -F name '$ko2')\" = kvbc2 ]"

# A kernel tools/kvvm boots from the Debian 13 root (7.3: no /boot image
# on the host) is one kvab builds for too.
k73=$(make -s -C "$top" --no-print-directory print-kernels | tr ' ' '\n' |
	grep -m1 '^7\.3\.')
if [ -z "$k73" ]; then
	ktap_test_skip "-k a kernel of the Debian 13 root: no 7.3 kernel on this host"
elif "$kvab" -n -k "$k73" c4=HEAD > "$tmp/ko73" 2> "$tmp/err" &&
     grep -q "/kvbc4/$k73/kvbc4.ko\$" "$tmp/ko73"; then
	ktap_test_pass "-k a kernel of the Debian 13 root ($k73): built for"
else
	ktap_print_msg "$(tail -3 "$tmp/err")"
	ktap_test_fail "-k a kernel of the Debian 13 root ($k73): built for"
fi

printf -- '--- a/kv-sched.c\n+++ b/kv-sched.c\n@@ -1,1 +1,1 @@\n-no such line\n+x\n' \
	> "$tmp/bad.patch"
"$kvab" -n -k "$krel" c3="$tmp/bad.patch" > "$tmp/out" 2> "$tmp/err"
rc=$?
ktap_check "a patch that does not apply: nonzero exit, said so, no module" \
	sh -c "[ $rc != 0 ] && grep -q 'does not apply' '$tmp/err' && [ ! -s '$tmp/out' ]"

# -p: mq-deadline and kvbatch, one short run each on the cost row, on the
# NVMe disk and on the recall row (kvbench); in a guest of one vCPU (-c).
# kvbatch with a tunable set: max_inflight at its ceiling (256, the pool
# every row gives it) is no limit, so the rows run as under the default.
"$kvab" -p -c 1 -k "$krel" -r 1 -t 2 -w "cost nvme recall" \
	-s "mq-deadline kvbatch:max_inflight=256" > "$tmp/prof" 2> "$tmp/err"
rc=$?
ktap_diag < "$tmp/prof"
ktap_check "-c 1: the guest has one vCPU" grep -q '^guest: .*, 1 vCPUs$' "$tmp/prof"
ktap_check "-s kvbatch:max_inflight=256: set on both disks, read back" \
	sh -c "grep -qx 'kvab: nullb0 under kvbatch:max_inflight=256: max_inflight 256' '$tmp/prof' &&
	       grep -qx 'kvab: nvme0n1 under kvbatch:max_inflight=256: max_inflight 256' '$tmp/prof'"
# col LABEL N: the N-th number on the first report line that starts with
# LABEL (the totals come before the functions).
# shellcheck disable=SC2317
col() {
	awk -v l="$1" -v n="$2" 'index($0, l) == 1 {
		split(substr($0, length(l) + 1), f); print f[n]; exit }' "$tmp/prof"
}
# shellcheck disable=SC2317
prof_ok() {
	[ "$rc" = 0 ] && grep -q '^== cost: guest instructions per request ==' "$tmp/prof" &&
	[ "$(col requests 1)" -gt 1000 ] && [ "$(col requests 2)" -gt 1000 ] &&
	[ "$(col kernel 1)" -gt 1000 ] && [ "$(col kernel 2)" -gt 1000 ] &&
	[ "$(col "the scheduler's own functions" 1)" -gt 50 ] &&
	[ "$(col "the scheduler's own functions" 2)" -gt 50 ] &&
	awk -v a="$(col 'dd_insert_requests' 1)" -v b="$(col 'dd_insert_requests' 2)" \
		'BEGIN { exit !(a > 0 && b == 0) }' &&
	awk -v a="$(col 'kvb_insert_requests [kvbatch]' 1)" \
		-v b="$(col 'kvb_insert_requests [kvbatch]' 2)" \
		'BEGIN { exit !(a == 0 && b > 0) }'
}
ktap_check "-p counts instructions per request, each scheduler's own under it alone" prof_ok
# The recall row's report: the requests kvbench completed, and kvbatch's
# own functions under it alone.
# shellcheck disable=SC2317
recall_ok() {
	sed -n '/^== recall: guest instructions per request ==/,$p' "$tmp/prof" |
		awk 'index($0, "requests") == 1 { r1 = $2; r2 = $3 }
		     index($0, "kvb_insert_requests [kvbatch]") == 1 { k1 = $3; k2 = $4 }
		     END { exit !(r1 > 1000 && r2 > 1000 && k1 == 0 && k2 > 0) }'
}
ktap_check "-p counts the recall row's requests (kvbench) too" recall_ok
# The nvme row's report: fio's requests, each scheduler's own functions
# under it alone, and the NVMe driver's submission (further down the
# list than kvab prints: all of it, from the counts kvab left).
# shellcheck disable=SC2317
nvme_ok() {
	python3 "$top/tools/lib/kvinsns.py" "$top/build/kvab/prof" 1000 |
		sed -n '/^== nvme: guest instructions per request ==/,/^== recall/p' |
		awk 'index($0, "requests") == 1 { r1 = $2; r2 = $3 }
		     index($0, "kvb_insert_requests [kvbatch]") == 1 { k1 = $3; k2 = $4 }
		     index($0, "nvme_queue_rq") == 1 { n1 = $(NF - 1); n2 = $NF }
		     END { exit !(r1 > 1000 && r2 > 1000 && k1 == 0 && k2 > 0 &&
				  n1 > 0 && n2 > 0) }'
}
ktap_check "-p runs the nvme row on QEMU's NVMe disk" nvme_ok

ktap_finished
