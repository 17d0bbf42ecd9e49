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

# One bpftrace for all the phases below: its start is most of what this
# test costs under TCG (some 5 s for an empty program in an idle guest,
# more beside another: one per phase would add half a minute or more). A
# kprobe on the x86 patch queue, which every static-key switch goes
# through (one call per patched site), counts the patches; at each mark
# the program prints the count so far. A mark is "kill -0" of a PID past
# the kernel's limit (4194304), which no process can have (bash's
# builtin: no process of its own, and nothing else sends it; positive, as
# the tracepoint's arguments compare unsigned). It is seen at the raw
# syscall entry (kill is x86-64's syscall 62), which every kernel with
# tracepoints has: the per-syscall events (syscalls:sys_enter_kill) need
# CONFIG_FTRACE_SYSCALLS, which the debug kernels of make test-debug do
# not set. bpftrace's output, with the patches' kernel stacks at its end,
# stays in $KVB_SCRATCH/patches.out.
out=$KVB_SCRATCH/patches.out
mark=2000000000
bpftrace -e "
	BEGIN { printf(\"attached\\n\"); }
	tracepoint:raw_syscalls:sys_enter
	/args->id == 62 && args->args[1] == 0 &&
	 args->args[0] > $mark && args->args[0] < $mark + 1000/ {
		printf(\"mark %d %d\\n\", args->args[0], @n); }
	kprobe:arch_jump_label_transform_queue {
		@n = @n + 1; @where[kstack(6)] = count(); }" > "$out" 2>&1 &
bt=$!
kvb_defer "kvb_bpftrace_stop $bt"
for _ in $(seq 300); do
	kvb_has_line "$out" attached && break
	kill -0 "$bt" 2>/dev/null || break
	kvb_sleep 0.1
done
# BEGIN may run before the probes are armed: let them settle.
kvb_sleep 1

# take_mark: mark, and set mark_n to the count printed at it. Each mark
# is a PID of its own, printed with the count, so a mark the program
# missed is not mistaken for another: the first one can come before the
# tracepoint's program is armed, which the settling above does not
# always cover (a debug kernel beside other guests: every phase would
# then read -1). So a mark unseen within 2 s is taken again, up to 30
# times.
marks=0
take_mark() {
	local i l want tries

	for ((tries = 0; tries < 30; tries++)); do
		marks=$((marks + 1))
		want="mark $((mark + marks)) "
		kill -0 "$((mark + marks))" 2> /dev/null
		for ((i = 0; i < 20; i++)); do
			while read -r l; do
				[[ $l == "$want"* ]] || continue
				mark_n=${l#"$want"}
				return 0
			done < "$out"
			kvb_sleep 0.1
		done
	done
	return 1
}
take_mark || mark_n=-1
log "patches before the first phase: $mark_n"

# patches COMMAND...: set n to how many jump-label patches the kernel made
# while COMMAND ran (between the marks before and after it); -1 if a mark
# went unseen (bpftrace not running) or COMMAND failed.
patches() {
	local before=$mark_n rc

	"$@"
	rc=$?
	# A key freed by its last user may switch off only after a delay
	# (deferred static keys wait a second).
	kvb_sleep 2
	if [ "$before" = -1 ] || ! take_mark || [ "$rc" != 0 ]; then
		ktap_diag < "$out"
		log "$* failed (status $rc), or bpftrace did not count"
		n=-1
		mark_n=-1
		return
	fi
	n=$((mark_n - before))
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
# a work item. (The io controller is switched on for the root's children
# here, and off at the end.)
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

dump=0
# 3: none while rings come and go.
patches rings
log "patches while fio made and freed 6 io_uring rings: $n"
ktap_check "no kernel code patched while fio's io_uring rings come and go ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || dump=1

# 4: none while a cgroup comes and goes.
patches cgroups
log "patches while a cgroup with the io controller was made and removed: $n"
ktap_check "no kernel code patched while a cgroup comes and goes ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || dump=1

# The first memory cgroup, with no other about: with the hold taken away
# for the while, its keys would switch off (when its memory state is freed,
# from a work item: hence the pause) and on again, unless kvvm's boot
# options (cgroup.memory=nokmem,nosocket,nobpf) keep them off. The hold
# itself is made so at every boot.
first_cgroup() {
	local rc=0

	rmdir "$cg/kvvm-hold" || return 1
	kvb_sleep 2
	{ mkdir "$cg/kvb-guest" && rmdir "$cg/kvb-guest"; } || rc=1
	kvb_sleep 2
	mkdir "$cg/kvvm-hold" || rc=1
	return "$rc"
}

# 5: none while the first memory cgroup comes and goes.
patches first_cgroup
log "patches while the only memory cgroup was removed and two made: $n"
ktap_check "no kernel code patched by the first memory cgroup ($n)" \
	test "$n" -eq 0
[ "$n" -eq 0 ] || dump=1

# 6: the probe sees a tracepoint's key switched on and off; last, so that
# a patch of it seen late could only add to no phase that must count none.
if [ -w "$ev" ]; then
	patches flip
	log "patches while module:module_load was switched on and off: $n"
	ktap_check "the kprobe counts jump-label patches (tracepoint on/off: $n)" \
		test "$n" -ge 2
	[ "$n" -ge 2 ] || dump=1
else
	ktap_test_skip "the kprobe counts jump-label patches" "no $ev"
fi

# The patches' stacks come at bpftrace's exit.
kvb_bpftrace_stop "$bt"
[ "$dump" = 0 ] || ktap_diag < "$out"
ktap_finished
