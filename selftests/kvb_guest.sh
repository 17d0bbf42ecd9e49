#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The guest harness itself: tools/kvvm keeps one io_uring ring and one
# memory cgroup for the whole run, so that the rings fio and kvbench
# create and free, and the cgroups tests make and remove, never make the
# kernel rewrite a static branch: io_submit_sqes()'s (7.3 has one) or the
# memory cgroup's accounting branches. A rewrite goes through a transient
# int3, and under multi-threaded TCG a vCPU can execute that int3 after
# the rewrite is over: the guest oopses, and the tests still to run are
# lost.
#
# Checked directly: a kprobe counts the kernel's jump-label patches while
# fio's io_uring rings come and go, and while a cgroup with the io
# controller is made and removed; there must be none. The same probe must
# count the patches of a tracepoint switched on and off, or it proves
# nothing. On kernels without the io_uring key (6.1, 6.12) the ring count
# is zero with or without the held ring. And the first memory cgroup of a
# boot patches nothing either: kvvm's boot options keep the memory
# controller's keys off, since the hold is itself a first cgroup.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd fio bpftrace
[ "$(hostname)" = kvvm ] || ktap_exit_skip "not in a tools/kvvm guest"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"
grep -qw arch_jump_label_transform_queue /proc/kallsyms ||
	ktap_exit_skip "no arch_jump_label_transform_queue to probe"

ktap_print_header
ktap_set_plan 6

# 1: the holder runs and holds a ring.
held=0
for p in $(pgrep -f 'python3 - kvvm-uring-hold$'); do
	for f in /proc/"$p"/fd/*; do
		[ "$(readlink "$f")" = "anon_inode:[io_uring]" ] && held=1
	done
done
ktap_check "kvvm holds an io_uring ring (python3 - kvvm-uring-hold)" \
	test "$held" = 1
# 2: and the memory cgroup.
cg=/sys/fs/cgroup
ktap_check "kvvm holds a memory cgroup ($cg/kvvm-hold)" \
	grep -qw memory "$cg/kvvm-hold/cgroup.controllers"

# patches COMMAND...: how many jump-label patches the kernel makes while
# COMMAND runs (the count from a kprobe on the x86 patch queue, which
# every static-key switch goes through, one call per patched site); -1 if
# bpftrace did not start or COMMAND failed. bpftrace's output, with the
# patches' kernel stacks, stays in $KVB_SCRATCH/patches-COMMAND.out.
patches() {
	local out=$KVB_SCRATCH/patches-$1.out bt n rc

	: > "$out"
	bpftrace -e '
		BEGIN { printf("attached\n"); }
		kprobe:arch_jump_label_transform_queue {
			@n = count(); @where[kstack(6)] = count(); }' \
		> "$out" 2>&1 &
	bt=$!
	for _ in $(seq 300); do
		grep -q '^attached' "$out" && break
		kill -0 "$bt" 2>/dev/null || break
		sleep 0.1
	done
	# BEGIN may run before the kprobe is armed: let it settle.
	sleep 1
	"$@"
	rc=$?
	# A key freed by its last user may switch off only after a delay
	# (deferred static keys wait a second).
	sleep 2
	kvb_bpftrace_stop "$bt" >&2 || rc=$?
	if ! grep -q '^attached' "$out" || [ "$rc" != 0 ]; then
		ktap_diag < "$out" >&2
		echo "# $* failed (status $rc)" >&2
		echo -1
		return
	fi
	n=$(sed -n 's/^@n: *\([0-9]*\)$/\1/p' "$out")
	echo "${n:-0}"
}

rings() {
	local i

	for i in 1 2 3; do
		fio --name=ring$i --filename=/dev/nvme0n1 --ioengine=io_uring \
			--direct=1 --rw=randread --bs=4k --size=8M --numjobs=2 \
			--group_reporting >/dev/null 2>&1 || return 1
	done
}

# A cgroup with the io controller (which brings the memory controller's
# state with it), made and removed; its memory state is freed later, from
# a work item. (patches runs it in a subshell: the io controller is
# switched on for the root's children, and off at the end, out here.)
cgroups() {
	mkdir "$cg/kvb-guest" && rmdir "$cg/kvb-guest"
}
if ! grep -qw io "$cg/cgroup.subtree_control"; then
	echo +io > "$cg/cgroup.subtree_control"
	kvb_defer "echo -io > $cg/cgroup.subtree_control"
fi

ev=/sys/kernel/tracing/events/module/module_load/enable
flip() {
	echo 1 > "$ev" && echo 0 > "$ev"
}

# 3: the probe sees a tracepoint's key switched on and off.
if [ -w "$ev" ]; then
	n=$(patches flip)
	log "patches while module:module_load was switched on and off: $n"
	ktap_check "the kprobe counts jump-label patches (tracepoint on/off: $n)" \
		test "$n" -ge 2
else
	ktap_test_skip "the kprobe counts jump-label patches" "no $ev"
fi

# 4: none while rings come and go.
n=$(patches rings)
log "patches while fio made and freed 6 io_uring rings: $n"
ktap_check "no kernel code patched while fio's io_uring rings come and go ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || ktap_diag < "$KVB_SCRATCH/patches-rings.out"

# 5: none while a cgroup comes and goes.
n=$(patches cgroups)
log "patches while a cgroup with the io controller was made and removed: $n"
ktap_check "no kernel code patched while a cgroup comes and goes ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || ktap_diag < "$KVB_SCRATCH/patches-cgroups.out"

# The first memory cgroup, with no other about: with the hold taken away
# for the while, its keys would switch off (when its memory state is freed,
# from a work item: hence the pause) and on again, unless kvvm's boot
# options (cgroup.memory=nokmem,nosocket,nobpf) keep them off. The hold
# itself is made so at every boot.
first_cgroup() {
	local rc=0

	rmdir "$cg/kvvm-hold" || return 1
	sleep 2
	{ mkdir "$cg/kvb-guest" && rmdir "$cg/kvb-guest"; } || rc=1
	sleep 2
	mkdir "$cg/kvvm-hold" || rc=1
	return "$rc"
}

# 6: none while the first memory cgroup comes and goes.
n=$(patches first_cgroup)
log "patches while the only memory cgroup was removed and two made: $n"
ktap_check "no kernel code patched by the first memory cgroup ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || ktap_diag < "$KVB_SCRATCH/patches-first_cgroup.out"

ktap_finished
