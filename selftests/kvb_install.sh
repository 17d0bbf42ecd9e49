#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make install / make uninstall, used the way an operator would: install
# into /lib/modules/<ver>/updates (the guest root is a throw-away overlay),
# then with no manual insmod "echo kvbatch > .../scheduler" must load the
# module through its alias; uninstall must leave nothing behind. Then the
# operator fio jobs of tools/fio run against kvbatch and two peers.
#
# Both make install and make uninstall run a full "depmod -a". Over the
# guest's 9p root under TCG that reads (and on 6.12 and 7.3 decompresses)
# every one of the kernel's 4000-odd modules: 1.5 to 3.3 minutes each. So
# for the while the kernel's own modules are hidden under an empty tmpfs,
# and depmod indexes what an operator's install adds to the tree:
# updates/. Its index is put back after.
source "$(dirname "$0")/lib.sh"

krel=$(uname -r)
dst=/lib/modules/$krel/updates/kvbatch.ko
kdir=/lib/modules/$krel/kernel
savedir=$KVB_SCRATCH/modules-index

kvb_require_root
kvb_require_cmd make depmod modinfo fio mountpoint
[ -f "$KVB_KO" ] || ktap_exit_skip "no module at $KVB_KO (run make)"
[ -e "$dst" ] && ktap_exit_skip "$dst already exists; not touching it"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"

ktap_print_header
ktap_set_plan 11

ktap_check "kvbatch unloaded before installing" kvb_unload
# null_blk for the operator fio jobs below, while modprobe can still find
# it.
kvb_nullb_load submit_queues=1 hw_queue_depth=4 irqmode=2 \
	completion_nsec=100000 gb=1

# Whatever happens, leave nothing installed and the kernel's modules and
# their index as they were (kvb_defer: last registered runs first).
# unhide_modules: the kernel's modules and the saved index back.
unhide_modules() {
	{ ! mountpoint -q "$kdir" || umount "$kdir"; } &&
		{ [ ! -f "$savedir/modules.dep" ] ||
		  cp -a "$savedir"/modules.* /lib/modules/"$krel"/; }
}
kvb_defer unhide_modules
# shellcheck disable=SC2016
kvb_defer 'rm -f "$dst"'
hide_modules() {
	mkdir -p "$savedir" &&
		cp -a /lib/modules/"$krel"/modules.* "$savedir"/ &&
		mount -t tmpfs -o size=1m,mode=0755 kvb-hidden "$kdir" &&
		[ -z "$(ls -A "$kdir")" ]
}
ktap_check "the kernel's own modules hidden for the while" hide_modules

install_it() {
	make -s -C "$KVB_ROOT" --no-print-directory KERNELRELEASE="$krel" \
		install > "$KVB_SCRATCH/install.log" 2>&1 ||
		{ sed 's/^/# /' "$KVB_SCRATCH/install.log"; return 1; }
	[ -f "$dst" ] && [ "$(modinfo -n kvbatch)" = "$dst" ]
}
ktap_check "make install puts kvbatch.ko where modprobe finds it" install_it

autoload() {
	echo kvbatch > /sys/block/nvme0n1/queue/scheduler || return 1
	kvb_loaded && [ "$(kvb_sched_of nvme0n1)" = kvbatch ]
}
ktap_check "echo kvbatch > scheduler loads the installed module" autoload
log "$(cat /sys/block/nvme0n1/queue/scheduler)"

fiojobs() {
	local s=$1 f

	kvb_set_sched nullb0 "$s" || return 1
	[ "$s" = none ] || echo 256 > /sys/block/nullb0/queue/nr_requests
	for f in "$KVB_ROOT"/tools/fio/{tail,prefetch,writes}.fio; do
		# They run, and fio says so: a second each is enough.
		(cd "$KVB_SCRATCH" && DEV=/dev/nullb0 RUNTIME=1 fio \
			--output="$KVB_SCRATCH/$(basename "$f").$s.log" "$f") ||
			{ log "$f under $s failed"; return 1; }
	done
	grep -h -E '^ *(high|low) prio' "$KVB_SCRATCH"/tail.fio."$s".log \
		2>/dev/null | head -2 | sed "s/^/# $s: /"
	return 0
}
for s in kvbatch mq-deadline none; do
	ktap_check "tools/fio's tail, prefetch and writes jobs run under $s" fiojobs "$s"
done
kvb_set_sched nullb0 none

uninstall_it() {
	echo none > /sys/block/nvme0n1/queue/scheduler || return 1
	rmmod kvbatch || return 1
	make -s -C "$KVB_ROOT" --no-print-directory KERNELRELEASE="$krel" \
		uninstall > "$KVB_SCRATCH/uninstall.log" 2>&1 || return 1
	[ ! -e "$dst" ]
}
ktap_check "make uninstall removes the module" uninstall_it
ktap_check "nothing left: modprobe no longer finds kvbatch" \
	bash -c '! modprobe -n kvbatch 2>/dev/null'
modules_back() {
	unhide_modules && ! mountpoint -q "$kdir" && modprobe -n null_blk
}
ktap_check "the kernel's modules and their index back" modules_back
# Leave the module loaded for the tests that follow, as kvvm did.
ktap_check "the built module loads again" kvb_load
kvb_nullb_teardown
ktap_finished
