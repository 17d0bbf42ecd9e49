#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kvbatch-dkms Debian package, used as an operator would on a Debian 12
# server (the guest root is a throw-away overlay of the host's): dpkg -i
# builds and installs the module with DKMS; with no manual insmod, selecting
# the scheduler loads it through its alias; modinfo describes it; the udev
# rule selects kvbatch and raises nr_requests on devices tagged KVBATCH=1
# (and only those) when they appear; the modprobe.d file's option reaches
# the module; the engines' header builds a C99 program that tags its
# thread and the Python module imports from the system path alone;
# dpkg --purge leaves nothing behind.
source "$(dirname "$0")/lib.sh"

krel=$(uname -r)
deb=$(ls "$KVB_ROOT"/build/deb/kvbatch-dkms_*_all.deb 2>/dev/null | tail -1)
ver=$(sed -n 's/^#define KVB_VERSION[[:space:]]*"\(.*\)"/\1/p' \
	"$KVB_ROOT/kv-defs.h")
udevd=/lib/systemd/systemd-udevd

kvb_require_root
kvb_require_cmd dpkg dkms modinfo modprobe udevadm cc
[ -x $udevd ] || ktap_exit_skip "no $udevd"
[ -n "$deb" ] || ktap_exit_skip "no package in build/deb (run make deb)"
dpkg -s kvbatch-dkms >/dev/null 2>&1 &&
	ktap_exit_skip "kvbatch-dkms already installed; not touching it"
[ -e "/var/lib/dkms/kvbatch" ] && ktap_exit_skip "kvbatch already in DKMS"
[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"
[ -b /dev/nvme0n1 ] || ktap_exit_skip "no /dev/nvme0n1"

ktap_print_header
ktap_set_plan 12

ktap_check "kvbatch unloaded before installing the package" kvb_unload
# Whatever happens, leave no package, rule or udevd behind.
# shellcheck disable=SC2016
kvb_defer 'udevadm control --exit; rm -f /etc/udev/rules.d/69-kvbatch-local.rules
	! dpkg -s kvbatch-dkms || dpkg --purge kvbatch-dkms'

# dpkg -i runs DKMS's postinst: add, build and install for the running
# kernel (and the newest installed one).
install_pkg() {
	local start=$SECONDS

	dpkg -i "$deb" > "$KVB_SCRATCH/dpkg-i.log" 2>&1 ||
		{ sed 's/^/# /' "$KVB_SCRATCH/dpkg-i.log"; return 1; }
	log "dpkg -i took $((SECONDS - start)) s"
	dkms status kvbatch | sed 's/^/# /'
	dkms status -m kvbatch -v "$ver" -k "$krel" | grep -q ': installed' &&
		modinfo -n kvbatch | grep -q "^/lib/modules/$krel/updates/dkms/kvbatch.ko"
}
ktap_check "dpkg -i builds and installs kvbatch $ver with DKMS for $krel" \
	install_pkg

autoload() {
	echo kvbatch > /sys/block/nvme0n1/queue/scheduler || return 1
	kvb_loaded && [ "$(kvb_sched_of nvme0n1)" = kvbatch ] &&
		grep -q "updates/dkms" <<< "$(modinfo -n kvbatch)"
}
ktap_check "echo kvbatch > scheduler loads the DKMS module by its alias" \
	autoload

describe() {
	local f=$KVB_SCRATCH/modinfo

	modinfo kvbatch > "$f" || return 1
	sed 's/^/# /' "$f" | grep -E '^# (filename|description|version|alias|parm|vermagic):'
	grep -q '^description:.*[A-Za-z]' "$f" &&
		grep -q "^version: *$ver\$" "$f" &&
		grep -q '^alias: *kvbatch-iosched$' "$f" &&
		grep -q '^parm: *max_batches:' "$f"
}
ktap_check "modinfo kvbatch: description, version, alias, parameter" describe

# udev: tag nullb0 (default queue size) and nullb1 (its own), not nullb2.
cat > /etc/udev/rules.d/69-kvbatch-local.rules <<'RULES'
ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="nullb0", ENV{KVBATCH}="1"
ACTION=="add|change", SUBSYSTEM=="block", KERNEL=="nullb1", ENV{KVBATCH}="1", ENV{KVBATCH_NR_REQUESTS}="512"
RULES
$udevd --daemon > "$KVB_SCRATCH/udevd.log" 2>&1
udev_rule() {
	modprobe null_blk nr_devices=3 queue_mode=2 submit_queues=1 \
		hw_queue_depth=4 gb=1 || return 1
	udevadm settle -t 30 || return 1
	log "nullb0: $(cat /sys/block/nullb0/queue/scheduler)" \
		"nr_requests $(cat /sys/block/nullb0/queue/nr_requests)"
	log "nullb1: $(cat /sys/block/nullb1/queue/scheduler)" \
		"nr_requests $(cat /sys/block/nullb1/queue/nr_requests)"
	log "nullb2: $(cat /sys/block/nullb2/queue/scheduler)" \
		"nr_requests $(cat /sys/block/nullb2/queue/nr_requests)"
	[ "$(kvb_sched_of nullb0)" = kvbatch ] &&
		[ "$(cat /sys/block/nullb0/queue/nr_requests)" = 256 ] &&
		[ "$(kvb_sched_of nullb1)" = kvbatch ] &&
		[ "$(cat /sys/block/nullb1/queue/nr_requests)" = 512 ] &&
		[ "$(kvb_sched_of nullb2)" != kvbatch ]
}
ktap_check "udev rule selects kvbatch and sets nr_requests on tagged new devices only" \
	udev_rule
udevadm control --exit 2>/dev/null
rm -f /etc/udev/rules.d/69-kvbatch-local.rules
kvb_nullb_teardown

# The shipped modprobe.d file has its option commented out; an operator
# uncomments it and the option reaches the module at the next load.
modprobe_conf() {
	local f=/etc/modprobe.d/kvbatch.conf

	[ -f "$f" ] || return 1
	! grep -q '^options' "$f" || return 1
	echo none > /sys/block/nvme0n1/queue/scheduler || return 1
	rmmod kvbatch || return 1
	sed -i 's/^#options kvbatch max_batches=1024$/options kvbatch max_batches=1024/' "$f"
	modprobe kvbatch || return 1
	log "max_batches after modprobe: $(cat /sys/module/kvbatch/parameters/max_batches)"
	[ "$(cat /sys/module/kvbatch/parameters/max_batches)" = 1024 ]
}
ktap_check "the modprobe.d example's option reaches the module" modprobe_conf

# The engines' C header, from /usr/include alone: tags built, ids 1..7
# refused, the calling thread tagged and read back.
header() {
	local c=$KVB_SCRATCH/tagc.c out

	cat > "$c" <<'C'
#include <stdio.h>
#include <kvbatch/kvbatch.h>

int main(void)
{
	unsigned int ids = 0;
	int id = kvbatch_next_id(&ids), set;

	set = kvbatch_thread_set(kvbatch_tag(KVBATCH_GROUP, 9));
	printf("%d %x %x %x %d %d %x\n", id, kvbatch_tag(KVBATCH_DEMAND, id),
	       kvbatch_tag(KVBATCH_GROUP, 1023), kvbatch_tag(KVBATCH_PREFETCH, 0),
	       kvbatch_tag(KVBATCH_GROUP, 7), set, kvbatch_thread_get());
	return 0;
}
C
	cc -std=c99 -D_DEFAULT_SOURCE -pedantic -Wall -Wextra -Werror \
		-o "$KVB_SCRATCH/tagc" "$c" || return 1
	out=$("$KVB_SCRATCH/tagc")
	log "tagc: $out"
	[ "$out" = "8 2040 5ff8 6000 -22 0 4048" ]
}
ktap_check "kvbatch/kvbatch.h in /usr/include builds a C99 program that tags" header

# The Python module, from the system's path alone (-I: no current
# directory, no PYTHONPATH).
pymod() {
	local out

	out=$(/usr/bin/python3 -I -c 'import kvbatch
print(kvbatch.__file__, hex(kvbatch.tag("group", 1023)))') || return 1
	log "python3: $out"
	[ "$out" = "/usr/lib/python3/dist-packages/kvbatch.py 0x5ff8" ]
}
ktap_check "python3 imports kvbatch from dist-packages" pymod

purge() {
	rmmod kvbatch || return 1
	dpkg --purge kvbatch-dkms > "$KVB_SCRATCH/dpkg-purge.log" 2>&1 ||
		{ sed 's/^/# /' "$KVB_SCRATCH/dpkg-purge.log"; return 1; }
}
ktap_check "dpkg --purge kvbatch-dkms succeeds" purge

# In /usr/src the package owns kvbatch-VERSION only: a Debian 13 root that
# also holds the 7.3 debug kernel (make test-debug) has its tree in
# /usr/src/kvbatch-debug-7.3, which is not the package's.
leftovers() {
	local left

	left=$(find /lib/modules/*/updates /var/lib/dkms \
		/usr/lib/udev/rules.d /etc/modprobe.d -name '*kvbatch*' 2>/dev/null
	       find /usr/include /usr/lib/python3/dist-packages -maxdepth 1 \
		       -name 'kvbatch*' 2>/dev/null
	       find /usr/src -maxdepth 1 -name "kvbatch-$ver" 2>/dev/null)
	[ -z "$left" ] || { log "left behind: $left"; return 1; }
}
ktap_check "nothing left in /lib/modules, /usr/src, /var/lib/dkms, udev, modprobe.d, /usr/include, dist-packages" \
	leftovers
ktap_check "modprobe no longer finds kvbatch" \
	bash -c '! modprobe -n kvbatch 2>/dev/null'
# Leave the module loaded for the tests that follow, as kvvm did.
ktap_check "the built module loads again" kvb_load
ktap_finished
