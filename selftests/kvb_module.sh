#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Module life cycle: metadata, registration, selection on every test disk,
# rmmod refused while selected, unload/reload loops, and loading through
# the "kvbatch-iosched" alias when a disk asks for kvbatch.
source "$(dirname "$0")/lib.sh"

RELOADS=${RELOADS:-10}

kvb_require_root
kvb_require_cmd modinfo insmod rmmod depmod fio
[ -f "$KVB_KO" ] || ktap_exit_skip "no module at $KVB_KO (run make)"

ktap_print_header
ktap_set_plan 13

kvb_nullb_setup || log "null_blk unavailable; testing nvme0n1 only"
mapfile -t disks < <(kvb_test_disks)
[ ${#disks[@]} -gt 0 ] || ktap_exit_skip "no nvme0n1 or nullb0"
log "disks: ${disks[*]}"

modinfo_ok() {
	local f

	for f in description version license alias; do
		modinfo -F "$f" "$KVB_KO" | grep -q . || { log "modinfo: no $f"; return 1; }
	done
	modinfo -F alias "$KVB_KO" | grep -qx kvbatch-iosched &&
		modinfo -F license "$KVB_KO" | grep -qx GPL
}
ktap_check "modinfo has description, version, GPL license, alias" modinfo_ok

registered_everywhere() {
	local d

	for d in "${disks[@]}"; do
		grep -qw kvbatch "/sys/block/$d/queue/scheduler" || return 1
	done
}
kvb_load
ktap_check "insmod registers kvbatch on ${disks[*]}" registered_everywhere

select_all() {
	local d

	for d in "${disks[@]}"; do
		kvb_set_sched "$d" kvbatch || { log "cannot select on $d"; return 1; }
	done
}
ktap_check "kvbatch selected on ${disks[*]}" select_all

io_all() {
	local d

	for d in "${disks[@]}"; do
		kvb_fio "io-$d" --filename="/dev/$d" --rw=randwrite --bs=4k \
			--size=4M --direct=1 --ioengine=libaio --iodepth=8 \
			--verify=crc32c || return 1
	done
}
ktap_check "verified I/O through kvbatch" io_all

rmmod_refused() {
	if rmmod kvbatch 2>/dev/null; then
		log "rmmod succeeded while kvbatch was selected"
		return 1
	fi
	kvb_loaded && [ "$(kvb_sched_of "${disks[0]}")" = kvbatch ]
}
ktap_check "rmmod refused while selected, nothing changed" rmmod_refused

deselect_unload() {
	local d

	for d in "${disks[@]}"; do
		kvb_set_sched "$d" none || return 1
	done
	rmmod kvbatch || return 1
	! kvb_loaded || return 1
	for d in "${disks[@]}"; do
		! grep -qw kvbatch "/sys/block/$d/queue/scheduler" || return 1
	done
}
ktap_check "unload after deselecting removes kvbatch everywhere" deselect_unload

reload_loop() {
	local i d

	for i in $(seq "$RELOADS"); do
		insmod "$KVB_KO" || { log "insmod $i failed"; return 1; }
		for d in "${disks[@]}"; do
			kvb_set_sched "$d" kvbatch || { log "select $i/$d"; return 1; }
			dd if="/dev/$d" of=/dev/null bs=64k count=16 iflag=direct \
				status=none || { log "read $i/$d"; return 1; }
			kvb_set_sched "$d" none || return 1
		done
		rmmod kvbatch || { log "rmmod $i failed"; return 1; }
	done
}
ktap_check "$RELOADS load/select/read/unload cycles" reload_loop

# Install the module where modprobe looks, then let the block layer load it
# by itself: elevator_get() calls request_module("kvbatch-iosched"). A full
# "depmod -a" reads every module of the kernel over 9p (half a minute under
# TCG), so index just this module and put the distro's index back after.
krel=$(uname -r)
moddir=/lib/modules/$krel/updates/kvbatch-selftest
savedir=$KVB_SCRATCH/modules-index
install_for_alias() {
	mkdir -p "$moddir" "$savedir" &&
		cp -a /lib/modules/"$krel"/modules.* "$savedir"/ &&
		cp "$KVB_KO" "$moddir/" &&
		depmod "$krel" "$moddir/kvbatch.ko" &&
		modprobe -n kvbatch-iosched
}
remove_alias_install() {
	rm -rf "$moddir"
	[ ! -f "$savedir/modules.dep" ] || cp -a "$savedir"/modules.* /lib/modules/"$krel"/
}
kvb_defer remove_alias_install
ktap_check "depmod resolves the kvbatch-iosched alias" install_for_alias

autoload() {
	! kvb_loaded || return 1
	echo kvbatch > "/sys/block/${disks[0]}/queue/scheduler" || return 1
	kvb_loaded && [ "$(kvb_sched_of "${disks[0]}")" = kvbatch ]
}
ktap_check "echo kvbatch > scheduler loads the module by alias" autoload
log "$(cat "/sys/block/${disks[0]}/queue/scheduler")"

ktap_check "I/O after alias load" io_all
ktap_check "deselect and unload the alias-loaded module" deselect_unload
remove_alias_install

unknown_refused() {
	! echo kvbatchx > "/sys/block/${disks[0]}/queue/scheduler" 2>/dev/null &&
		[ "$(kvb_sched_of "${disks[0]}")" = none ]
}
ktap_check "an unknown scheduler name is refused and changes nothing" unknown_refused

# init_sched() allocates while the core has the queue frozen: an elevator
# switch, and a rebuild of the hardware contexts, which freezes every
# queue of the tag set and switches the elevator off and on. Reclaim that
# wrote to one of those disks there (swap on it, its dirty pages) would
# wait for the freeze it is part of, so kvbatch sets itself up in a
# memalloc_noio scope. The core opens one for a switch through sysfs on
# 7.3 and Debian's 6.12, but not for a rebuild there, nor for either on
# 6.1. Seen from the policy core's init, which runs after the
# allocations, inside the scope: a configfs null_blk selects kvbatch,
# then its submit_queues changes.
noio_init() {
	local out=$KVB_SCRATCH/noio.out c=/sys/kernel/config/nullb/kvbnoio
	local pid io rc=0

	bpftrace -e 'kprobe:kvp_init {
		if (curtask->flags & 0x80000) { @noio = count(); }
		else { @io = count(); } }' > "$out" 2>&1 &
	pid=$!
	kvb_bpftrace_wait "$out" "$pid" || rc=1
	if kvb_cfs_nullb kvbnoio size=64 submit_queues=2; then
		echo 1 > "$c/submit_queues" || { log "submit_queues 1 refused"; rc=1; }
		[ "$(kvb_sched_of kvbnoio)" = kvbatch ] ||
			{ log "kvbatch not selected after the rebuild"; rc=1; }
		echo 0 > "$c/power"
		rmdir "$c"
	else
		rc=1
	fi
	kvb_bpftrace_stop "$pid" || rc=1
	log "kvp_init: $(grep '^@' "$out" | tr '\n' ' ')"
	# bpftrace may print a map that was never incremented, as 0.
	io=$(awk '$1 == "@io:" { print $2 }' "$out")
	[ $rc = 0 ] && [ "$(awk '$1 == "@noio:" { print $2 }' "$out")" = 2 ] &&
		[ "${io:-0}" = 0 ]
}
kvb_load
if ! command -v bpftrace > /dev/null; then
	ktap_test_skip "kvbatch sets itself up without I/O from reclaim" "no bpftrace"
elif modprobe null_blk nr_devices=0 2>/dev/null && kvb_configfs &&
     grep -qw submit_queues /sys/kernel/config/nullb/features 2>/dev/null; then
	ktap_check "kvbatch sets itself up without I/O from reclaim (memalloc_noio), on a switch and a context rebuild" \
		noio_init
else
	ktap_test_skip "kvbatch sets itself up without I/O from reclaim" \
		"no null_blk configfs with submit_queues"
fi
kvb_nullb_teardown
ktap_finished
