#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers for kvbatch selftests. Each test sources this file, reports its
# checks with ktap_* and ends with ktap_finished. Conventions follow
# tools/testing/selftests: KTAP output, exit 0 pass, 1 fail, 4 skip.
# Every test runs with set -u: a variable it never set is an error.
set -u

# Every test pays for what sourcing this file and its teardown run, and
# under TCG each process costs a fifth of a second or more beside another
# guest (a test that does nothing takes about 3.5 s): so they read files
# with the shell's own read (kvb_read()) and name directories by
# parameter expansion, starting no process they can do without.
_kvb_dir=${BASH_SOURCE[0]%/*}
[ "$_kvb_dir" != "${BASH_SOURCE[0]}" ] || _kvb_dir=.
# shellcheck source=selftests/ktap_helpers.sh
source "$_kvb_dir/ktap_helpers.sh"

if [ -z "${KVB_ROOT:-}" ]; then
	_kvb_pwd=$PWD
	cd "$_kvb_dir/.." && KVB_ROOT=$PWD
	cd "$_kvb_pwd" || exit 1
fi
[ -n "${KVB_KREL:-}" ] || read -r KVB_KREL < /proc/sys/kernel/osrelease
KVB_KO=${KVB_KO:-$KVB_ROOT/build/$KVB_KREL/kvbatch.ko}
# fio writes verify state and scratch files into the working directory.
KVB_SCRATCH=${KVB_SCRATCH:-$(mktemp -d /tmp/kvb-test.XXXXXX)}
# The null_blk loader and the scheduler list, shared with the tools.
# shellcheck source=tools/lib/kvbatch.sh
source "$KVB_ROOT/tools/lib/kvbatch.sh"

log() {
	ktap_print_msg "$@"
}

# ---- per-test setup and teardown ------------------------------------------
#
# Sourcing this file starts a test: a line in the kernel log names it, and
# the state tests change is recorded. However the test ends (pass, fail, a
# skip half-way, an error, the runner's timeout), kvb_teardown then puts
# that state back, so that the next test finds the guest as this one did:
# the test's background jobs are stopped, what it registered with
# kvb_defer runs, sysctls set with kvb_sysctl and CPUs taken offline come
# back, each disk gets its scheduler back, null_blk and scsi_debug are
# unloaded if the test loaded them, kvbatch is loaded (with the
# max_batches it had) or not as it was, and a second line in the kernel
# log says the test ended and how.

KVB_TEST=${0##*/}
_kvb_deferred=()
_kvb_sysctls=()
declare -A _kvb_sched0 _kvb_online0

# kvb_kernel_reports: how many kernel reports (oops, BUG, KASAN, WARNING)
# the kernel log holds; compare a count taken before with one after. On a
# KCSAN kernel a data race counts only where kvbatch or kvssd is one side
# of it (tools/kvvm's KCSAN_FOREIGN).
kvb_kernel_reports() {
	dmesg | awk '/BUG: KCSAN:/ && !/\[(kvbatch|kvssd)\]/ { next }
		/BUG:|Oops|general protection fault|KASAN|WARNING:/ { n++ }
		END { print n + 0 }'
}

# kvb_kmsg TEXT: TEXT in the kernel log, as "kvvm-mark: TEXT": tools/kvvm
# names the last mark before a kernel report (WARN, BUG, KASAN ...).
kvb_kmsg() {
	{ echo "<5>kvvm-mark: $*" > /dev/kmsg; } 2>/dev/null || true
}

# kvb_sleep SECONDS: sleep (fractions too) without a process of its own:
# bash's read timing out on a pipe only this shell holds (opened once per
# shell). Under TCG a process costs: in a 6.1 guest alone a "sleep 0.1"
# takes more than twice its tenth of a second and an eighth of a CPU
# second, one of these barely more than its tenth and a hundredth of a
# CPU second, and the tests' polling loops are made of them.
kvb_sleep() {
	[ -n "${_kvb_sleep_fd:-}" ] || exec {_kvb_sleep_fd}<> <(:)
	read -r -t "$1" -u "$_kvb_sleep_fd" _ || :
}

# kvb_has_line FILE PREFIX: a line of FILE starts with PREFIX (read by the
# shell: for polling loops, where a grep per look costs a process).
kvb_has_line() {
	local l

	while IFS= read -r l; do
		[[ $l == "$2"* ]] && return 0
	done < "$1"
	return 1
}

# kvb_bpftrace_wait OUT PID: wait, up to four minutes (a debug kernel's
# guest beside another loads BTF slowly), until the bpftrace writing OUT
# (process PID) has attached its probes: it says "Attaching N probes"
# (0.17) or "Attached N probes" (0.23) once the program compiled. Fails,
# saying why and with what bpftrace printed, if it exits first or never
# says so.
kvb_bpftrace_wait() {
	local i why="not attached after 240 s"

	for i in $(seq 480); do
		kvb_has_line "$1" Attach && return 0
		if ! kill -0 "$2" 2>/dev/null; then
			why="exited before attaching"
			break
		fi
		kvb_sleep 0.5
	done
	log "bpftrace $why: $(head -c 300 "$1" | tr '\n' ' ')"
	return 1
}

# kvb_defer COMMAND: run COMMAND (one string, evaluated then) at the
# test's end, before the generic teardown; last registered runs first.
kvb_defer() {
	_kvb_deferred+=("$1")
}

# kvb_sysctl NAME=VALUE...: set sysctls for this test only.
kvb_sysctl() {
	local kv

	for kv in "$@"; do
		_kvb_sysctls+=("${kv%%=*}=$(sysctl -n "${kv%%=*}")")
	done
	sysctl -qw "$@"
}

# _kvb_tree PID: PID and everything it started, parents first.
_kvb_tree() {
	local c

	echo "$1"
	for c in $(pgrep -P "$1" 2>/dev/null); do
		_kvb_tree "$c"
	done
}

_kvb_setup() {
	local f d

	for f in /sys/block/*/queue/scheduler; do
		[ -e "$f" ] || continue
		d=${f#/sys/block/}
		d=${d%%/*}
		_kvb_sched_var "_kvb_sched0[$d]" "$d"
	done
	for f in /sys/devices/system/cpu/cpu*/online; do
		[ -e "$f" ] && kvb_read "_kvb_online0[$f]" "$f"
	done
	_kvb_nullb0=0 _kvb_sd0=0 _kvb_maxb0=
	[ -d /sys/module/null_blk ] && _kvb_nullb0=1
	[ -d /sys/module/scsi_debug ] && _kvb_sd0=1
	kvb_loaded && kvb_read _kvb_maxb0 /sys/module/kvbatch/parameters/max_batches
	kvb_kmsg "start $KVB_TEST"
	trap kvb_teardown EXIT
	# The runner's timeout sends TERM: end through the teardown.
	trap 'exit 143' TERM
	trap 'exit 130' INT
}

kvb_teardown() {
	local rc=$? i p d c v _kvb_n
	local -a _kvb_jobs=()

	trap - EXIT TERM INT
	# Background jobs first: they hold the devices. Collect each job's
	# process tree before killing any of it, so that none continues.
	# (Listed through a file: no subshell when there are none.)
	jobs -p > "$KVB_SCRATCH/.jobs" 2>/dev/null &&
		mapfile -t _kvb_jobs < "$KVB_SCRATCH/.jobs"
	p=
	for i in "${_kvb_jobs[@]}"; do
		p+=" $(_kvb_tree "$i")"
	done
	if [ -n "${p// /}" ]; then
		# shellcheck disable=SC2086
		kill -TERM $p 2>/dev/null
		for i in $(seq 100); do
			[ -z "$(jobs -pr)" ] && break
			kvb_sleep 0.1
		done
		# Reap them, unless one is stuck (in the kernel).
		[ -n "$(jobs -pr)" ] || { wait; } 2>/dev/null
	fi
	# (Its own counter: what it evaluates may use any name.)
	for ((_kvb_n = ${#_kvb_deferred[@]} - 1; _kvb_n >= 0; _kvb_n--)); do
		eval "${_kvb_deferred[$_kvb_n]}" > /dev/null 2>&1
	done
	for ((i = ${#_kvb_sysctls[@]} - 1; i >= 0; i--)); do
		sysctl -qw "${_kvb_sysctls[$i]}" 2>/dev/null
	done
	for c in "${!_kvb_online0[@]}"; do
		kvb_read v "$c" 2>/dev/null
		[ "$v" = "${_kvb_online0[$c]}" ] ||
			echo "${_kvb_online0[$c]}" > "$c" 2>/dev/null
	done
	for d in "${!_kvb_sched0[@]}"; do
		[ -e "/sys/block/$d" ] || continue
		_kvb_sched_var v "$d"
		[ "$v" = "${_kvb_sched0[$d]}" ] ||
			echo "${_kvb_sched0[$d]}" > "/sys/block/$d/queue/scheduler" 2>/dev/null
	done
	if [ $_kvb_nullb0 = 0 ] && [ -d /sys/module/null_blk ]; then
		for c in /sys/kernel/config/nullb/*/; do
			[ -f "$c/power" ] || continue
			echo 0 > "$c/power" 2>/dev/null
			rmdir "$c" 2>/dev/null
		done
		kvb_nullb_teardown
	fi
	if [ $_kvb_sd0 = 0 ] && [ -d /sys/module/scsi_debug ]; then
		modprobe -r scsi_debug 2>/dev/null
	fi
	if [ -n "$_kvb_maxb0" ]; then
		# Loaded, with the parameter it had.
		kvb_loaded && kvb_read v /sys/module/kvbatch/parameters/max_batches
		if kvb_loaded && [ "$v" != "$_kvb_maxb0" ]; then
			kvb_unload 2>/dev/null
		fi
		kvb_loaded || insmod "$KVB_KO" max_batches="$_kvb_maxb0" 2>/dev/null
	elif kvb_loaded; then
		kvb_unload 2>/dev/null
	fi
	rm -rf "$KVB_SCRATCH"
	kvb_kmsg "end $KVB_TEST (exit $rc)"
	exit "$rc"
}

# Skip the whole test, with the reason, unless we are root in a guest that
# can safely have its devices reconfigured.
kvb_require_root() {
	[ "$EUID" -eq 0 ] || ktap_exit_skip "needs root"
}

kvb_require_cmd() {
	local c

	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || ktap_exit_skip "$c not installed"
	done
}

kvb_loaded() {
	[ -d /sys/module/kvbatch ]
}

# Deselect kvbatch on every disk and unload it (a fresh guest: nothing
# else selected it), so that a test can install and load it its own way.
kvb_unload() {
	local d

	for d in /sys/block/*/queue/scheduler; do
		grep -q '\[kvbatch\]' "$d" && echo none > "$d"
	done
	! kvb_loaded || rmmod kvbatch
}

kvb_load() {
	kvb_loaded && return 0
	[ -f "$KVB_KO" ] || { log "missing $KVB_KO"; return 1; }
	insmod "$KVB_KO"
}

# kvbatch's numeric tunables, read from the list the module is built from
# (kv-tunables.h; batch_key takes a name and is tested on its own), so a
# new tunable needs nothing here: "name default min max load-max" each.
# The sysfs test fails if iosched/ and this table differ. load-max is the
# largest value the stress tests write under load: beyond these, expiry
# times reach minutes, and a loaded queue would only starve the test's own
# fio, which says nothing about safety. A tunable not named here is
# written up to its maximum.
declare -A KVB_LOAD_MAX=(
	[demand_expire_ms]=1000 [normal_expire_ms]=1000
	[prefetch_expire_ms]=3000 [write_expire_ms]=5000 [write_batch]=64
	[write_defer_max]=512 [batch_window_us]=5000 [max_inflight]=64
	[async_depth]=64
)
KVB_TUNABLES=()
while read -r _kvb_n _kvb_d _kvb_lo _kvb_hi; do
	KVB_TUNABLES+=("$_kvb_n	$_kvb_d	$_kvb_lo	$_kvb_hi	${KVB_LOAD_MAX[$_kvb_n]:-$_kvb_hi}")
done < <(kvb_tunables "$KVB_ROOT/kv-tunables.h")

# kvb_tunables_random DIR: write a random valid value, up to the load
# maximum, to every tunable in DIR (a queue's iosched/).
kvb_tunables_random() {
	local t name lo hi v rc=0

	for t in "${KVB_TUNABLES[@]}"; do
		read -r name _ lo _ hi <<< "$t"
		v=$((lo + RANDOM % (hi - lo + 1)))
		echo "$v" > "$1/$name" || { log "$name: $v refused"; rc=1; }
	done
	return $rc
}

# kvb_tunables_default DIR: every tunable in DIR back to its default.
kvb_tunables_default() {
	local t name def

	for t in "${KVB_TUNABLES[@]}"; do
		read -r name def _ <<< "$t"
		echo "$def" > "$1/$name"
	done
}

# kvb_read VAR FILE: FILE's first line, without its newline, into VAR;
# false if FILE cannot be read. No fork: the selftests read sysfs files
# thousands of times, and in the emulated guest each $(cat FILE) is a fork
# and an exec, tens of milliseconds (several times that on a debug kernel).
kvb_read() {
	local -n _kvb_read_var=$1

	_kvb_read_var=
	IFS= read -r _kvb_read_var < "$2" || [ -n "$_kvb_read_var" ]
}

# kvb_is FILE VALUE: FILE's first line is VALUE (kvb_read()).
kvb_is() {
	local _kvb_is_v

	kvb_read _kvb_is_v "$1" && [ "$_kvb_is_v" = "$2" ]
}

# Current scheduler of a disk (the bracketed name; nothing if none is).
kvb_sched_of() {
	local _kvb_s

	_kvb_sched_var _kvb_s "$1"
	[ -z "$_kvb_s" ] || echo "$_kvb_s"
}

# _kvb_sched_var VAR DISK: set VAR to DISK's scheduler (as kvb_sched_of()),
# without the subshell a $(kvb_sched_of DISK) costs.
_kvb_sched_var() {
	local -n _kvb_sv_var=$1
	local _kvb_sv_line

	_kvb_sv_var=
	kvb_read _kvb_sv_line "/sys/block/$2/queue/scheduler" || return 0
	[[ $_kvb_sv_line =~ \[([^]]*)\] ]] && _kvb_sv_var=${BASH_REMATCH[1]}
	return 0
}

# kvb_set_sched DISK NAME: select NAME, report whether it took (in the
# shell: the switch tests call this hundreds of times).
kvb_set_sched() {
	local line

	echo "$2" > "/sys/block/$1/queue/scheduler" 2>/dev/null &&
		kvb_read line "/sys/block/$1/queue/scheduler" &&
		[[ $line == *"[$2]"* ]]
}

# kvb_use_kvbatch DISK: select kvbatch on DISK, or fail the test there.
kvb_use_kvbatch() {
	kvb_set_sched "$1" kvbatch || { ktap_test_fail "select kvbatch"; ktap_finished; }
}

# A memory-backed null_blk (nullb0) with a few tags and timer completions:
# requests complete asynchronously, as on a real device, and data written
# can be read back and verified. Extra module parameters override these.
kvb_nullb_setup() {
	if [ -b /dev/nullb0 ]; then
		return 0
	fi
	kvb_nullb_load submit_queues=2 hw_queue_depth=8 memory_backed=1 gb=1 \
		irqmode=2 completion_nsec=20000 "$@"
}

# kvb_nullb_fresh PARAM...: load null_blk (one queue_mode=2 device) with
# exactly the test's own parameters, or skip the test: a null_blk already
# loaded would have someone else's shape.
kvb_nullb_fresh() {
	[ -b /dev/nullb0 ] && ktap_exit_skip "null_blk already in use"
	kvb_nullb_load "$@"
	case $? in
	1) ktap_exit_skip "cannot load null_blk $*" ;;
	2) ktap_exit_skip "nullb0 did not appear" ;;
	esac
}

# kvb_nullb_writeback FUA [PARAM=VALUE...]: kvb_nullb_fresh with a 1 GiB
# memory-backed null_blk behind a write-back cache (one queue), offering
# FUA writes (FUA 1) or not (0) where null_blk has the fua= parameter
# (6.12 and later; 6.1's always offers FUA with its cache).
kvb_nullb_writeback() {
	local fua=()

	modinfo -p null_blk 2>/dev/null | grep -q '^fua:' && fua=("fua=$1")
	shift
	kvb_nullb_fresh submit_queues=1 memory_backed=1 gb=1 cache_size=64 \
		irqmode=2 "$@" "${fua[@]}"
}

# kvb_begin_nullb PLAN PARAM...: the opening of a test of kvbatch on a
# null_blk of its own: load kvbatch, then null_blk with exactly PARAM
# (kvb_nullb_fresh), skipping the test if either cannot be; then the KTAP
# header and the plan of PLAN test points.
kvb_begin_nullb() {
	local plan=$1

	shift
	kvb_load || ktap_exit_skip "cannot load kvbatch"
	kvb_nullb_fresh "$@"
	ktap_print_header
	ktap_set_plan "$plan"
}

# Mount configfs (null_blk's configfs devices live there) if the guest
# has not.
kvb_configfs() {
	[ -d /sys/kernel/config/nullb ] && return 0
	mountpoint -q /sys/kernel/config ||
		mount -t configfs configfs /sys/kernel/config 2>/dev/null
	[ -d /sys/kernel/config/nullb ]
}

# kvb_cfs_nullb NAME ATTR=VALUE...: make the configfs null_blk NAME with
# these attributes, power it on and select kvbatch on it; on failure it is
# removed again. null_blk names the disk after the directory. Needs
# null_blk loaded and kvb_configfs.
kvb_cfs_nullb() {
	local name=$1 c=/sys/kernel/config/nullb/$1 a

	shift
	mkdir "$c" || { log "$name: configfs mkdir failed"; return 1; }
	for a in "$@"; do
		echo "${a#*=}" > "$c/${a%%=*}"
	done
	echo 1 > "$c/power"
	udevadm settle 2>/dev/null || true
	if [ ! -b "/dev/$name" ] || ! kvb_set_sched "$name" kvbatch; then
		log "$name: cannot power on and select kvbatch"
		echo 0 > "$c/power" 2>/dev/null; rmdir "$c"
		return 1
	fi
}

# kvb_cfs_removal NAME: a configfs null_blk NAME (memory backed, timer
# completions) with kvbatch selected is removed (power 0, rmdir) while fio
# does I/O on it: fio must end with errors well before its runtime and the
# disk must be gone. Needs null_blk loaded and kvb_configfs.
kvb_cfs_removal() {
	local name=$1 c=/sys/kernel/config/nullb/$1 pid n0 rc

	kvb_cfs_nullb "$name" size=512 memory_backed=1 irqmode=2 \
		completion_nsec=200000 hw_queue_depth=4 || return 1
	echo 256 > "/sys/block/$name/queue/nr_requests"
	n0=$(kvb_io_count "$name")
	(cd "$KVB_SCRATCH" && timeout -k 5 120 fio --name=rm \
		--filename="/dev/$name" --direct=1 --ioengine=io_uring \
		--rw=randrw --bs=4k --iodepth=32 --numjobs=2 \
		--time_based --runtime=60 --continue_on_error=all \
		>/dev/null 2>&1) &
	pid=$!
	rc=0
	kvb_wait_io "$name" "$n0" || { log "$name: fio did no I/O"; rc=1; }
	echo 0 > "$c/power" || { log "$name: power off failed"; rc=1; }
	rmdir "$c" || { log "$name: rmdir failed"; rc=1; }
	# fio sees errors and must finish well before its runtime.
	wait $pid
	[ $? -ne 124 ] || { log "$name: fio hung after removal"; rc=1; }
	[ ! -e "/sys/block/$name" ] || { log "$name: still present"; rc=1; }
	return $rc
}

# kvb_kmemleak_scan FILE: scan twice (kmemleak reports an object only once
# a scan after the previous one has seen it unreferenced) and save the
# report in FILE.
kvb_kmemleak_scan() {
	local km=/sys/kernel/debug/kmemleak

	echo scan > $km; kvb_sleep 2; echo scan > $km
	cat $km > "$1"
}

# kvb_kmemleak_clean: scan, and return whether kmemleak found nothing
# allocated on kvbatch's behalf, printing what it found: objects whose
# allocation backtrace has a frame of kvbatch (kvb_*, kvp_*, [kvbatch])
# or of the block core's elevator switch path that allocates for it
# (elevator*, elv_*, blk_mq*); kmemleak-ours.awk reads both kernels'
# formats. Needs kmemleak.
kvb_kmemleak_clean() {
	local f=$KVB_SCRATCH/kmemleak n mine

	kvb_kmemleak_scan "$f"
	awk -f "$KVB_ROOT/selftests/kmemleak-ours.awk" "$f" > "$f.ours"
	n=$(grep -c '^unreferenced object' "$f")
	mine=$(grep -c '^unreferenced object' "$f.ours")
	log "kmemleak: $n unreferenced objects in total, $mine allocated by kvbatch or in an elevator switch"
	[ "$mine" -eq 0 ] || { head -60 "$f.ours" | sed 's/^/# /'; return 1; }
}

kvb_nullb_teardown() {
	local d

	for d in /sys/block/nullb*; do
		[ -e "$d" ] || continue
		echo none > "$d/queue/scheduler" 2>/dev/null || true
	done
	modprobe -r null_blk 2>/dev/null || true
}

# kvb_scsi_debug_fresh ARGS...: load scsi_debug with ARGS and set
# KVB_SD_DISK to its disk's name; the test is a skip if that fails.
kvb_scsi_debug_fresh() {
	local d i

	[ -d /sys/bus/pseudo/drivers/scsi_debug ] &&
		ktap_exit_skip "scsi_debug already in use"
	modprobe scsi_debug "$@" || ktap_exit_skip "cannot load scsi_debug $*"
	# The guest has no udev to load the disk driver.
	modprobe sd_mod 2>/dev/null
	udevadm settle 2>/dev/null || true
	KVB_SD_DISK=
	for i in $(seq 100); do
		for d in /sys/block/sd*; do
			[ -e "$d/device/model" ] || continue
			grep -q scsi_debug "$d/device/model" && KVB_SD_DISK=${d##*/}
		done
		[ -n "$KVB_SD_DISK" ] && return 0
		kvb_sleep 0.1
	done
	modprobe -r scsi_debug
	ktap_exit_skip "no scsi_debug disk"
}

# kvb_read_key VAR FILE NAME: the value on FILE's "NAME VALUE" line into
# VAR (kvbatch's debugfs files); false, VAR empty, if there is none. No
# fork, like kvb_read(): a test can read a counter within milliseconds of
# an event on a loaded TCG host.
kvb_read_key() {
	local -n _kvb_rk_var=$1
	local _kvb_rk_k _kvb_rk_v

	_kvb_rk_var=
	while read -r _kvb_rk_k _kvb_rk_v; do
		if [ "$_kvb_rk_k" = "$3" ]; then
			_kvb_rk_var=$_kvb_rk_v
			return 0
		fi
	done < "$2"
	return 1
}

# kvb_read_stat VAR DISK NAME: the counter NAME of kvbatch's debugfs stats
# on DISK into VAR, as kvb_read_key().
kvb_read_stat() {
	kvb_read_key "$1" "/sys/kernel/debug/block/$2/sched/stats" "$3"
}

# kvb_read_keys ARRAY FILE: every "NAME VALUE" line of FILE (kvbatch's
# debugfs files) into the associative ARRAY, from one open: kvbatch fills
# such a file under its lock when it is opened and read (seq_file), so
# the values agree with each other, where separate reads do not while I/O
# runs. No fork. False if it cannot be read.
kvb_read_keys() {
	local -n _kvb_rks_arr=$1
	local _kvb_rks_k _kvb_rks_v

	_kvb_rks_arr=()
	[ -r "$2" ] || return 1
	while read -r _kvb_rks_k _kvb_rks_v; do
		# An associative array (the nameref hides it): $ is needed.
		# shellcheck disable=SC2004
		[ -n "$_kvb_rks_k" ] && _kvb_rks_arr[$_kvb_rks_k]=$_kvb_rks_v
	done < "$2"
	return 0
}

# kvb_read_stats ARRAY DISK: kvbatch's debugfs stats on DISK, as
# kvb_read_keys().
kvb_read_stats() {
	kvb_read_keys "$1" "/sys/kernel/debug/block/$2/sched/stats"
}

# kvb_stat DISK NAME: print one counter from kvbatch's debugfs stats
# (nothing if there is none).
kvb_stat() {
	local v

	kvb_read_stat v "$1" "$2" && echo "$v"
	return 0
}

# kvb_depth_stat DISK NAME: print one value of kvbatch's debugfs depth
# (nothing if there is none).
kvb_depth_stat() {
	local v

	kvb_read_key v "/sys/kernel/debug/block/$1/sched/depth" "$2" &&
		echo "$v"
	return 0
}

# kvb_io_count DISK: I/Os DISK has completed (reads + writes).
kvb_io_count() {
	local st

	read -r -a st < "/sys/block/$1/stat" 2>/dev/null || return 1
	echo $((st[0] + st[4]))
}

# kvb_wait_io DISK SINCE [SECONDS]: wait (default 30 s) until DISK has
# completed more I/Os than SINCE (a kvb_io_count taken before starting the
# load), so that a test acts on a device that is really under load: a
# starting fio can take seconds to open its files in a loaded TCG guest,
# and the kernel's partition scan has already read from a new disk.
kvb_wait_io() {
	local i n

	for i in $(seq $((${3:-30} * 10))); do
		n=$(kvb_io_count "$1") || return 1
		[ "$n" -gt "$2" ] && return 0
		kvb_sleep 0.1
	done
	return 1
}

# kvb_balanced DISK: after the disk went idle, kvbatch holds nothing, every
# batch has closed, and every request it took either completed exactly
# once or was merged into another (inserted = completed + merged).
kvb_balanced() {
	local d=$1 i
	local -A st

	# The last finish_request() may trail fio's exit by a moment, and a
	# batch drains for batch_window_us after it (the reap timer closes it).
	for i in $(seq 50); do
		kvb_read_stats st "$d" || return 1
		[ "${st[inflight]}" = 0 ] && [ "${st[queued]}" = 0 ] &&
			[ "${st[batches_live]}" = 0 ] && break
		kvb_sleep 0.1
	done
	# One snapshot: read one counter at a time, a request inserted and
	# completed between two reads would count on one side only.
	log "$d: inserted ${st[inserted]} completed ${st[completed]} merged ${st[merged]} queued ${st[queued]} inflight ${st[inflight]} batches_live ${st[batches_live]} requeued ${st[requeued]} bypassed ${st[bypassed]}"
	[ "${st[queued]}" = 0 ] && [ "${st[inflight]}" = 0 ] &&
		[ "${st[batches_live]}" = 0 ] && [ "${st[inserted]}" -gt 0 ] &&
		[ $((st[completed] + st[merged])) -eq "${st[inserted]}" ]
}

# Common start of the data tests: root, fio, kvbatch loaded, the default
# null_blk, and the test disks in the array "disks".
kvb_setup_disks() {
	kvb_require_root
	kvb_require_cmd fio
	kvb_load || ktap_exit_skip "cannot load kvbatch"
	kvb_nullb_setup || log "null_blk unavailable"
	mapfile -t disks < <(kvb_test_disks)
	[ ${#disks[@]} -gt 0 ] || ktap_exit_skip "no test disk"
}

# The test disks: the QEMU NVMe namespace and a null_blk device.
kvb_test_disks() {
	local d

	for d in nvme0n1 nullb0; do
		[ -b "/dev/$d" ] && echo "$d"
	done
}

# kvb_fio NAME FIO-ARGS...: run fio from the scratch directory (it writes
# verify state there) with a log kept for failures. Returns fio's status,
# which is nonzero on any I/O or verify error (verify_fatal). FIO-ARGS may
# define several jobs with --name=; options before the first one apply to
# all of them. Without a --name= in FIO-ARGS, NAME is the one job.
kvb_fio() {
	local name=$1 job=() rc

	shift
	case " $* " in
	*" --name="*) ;;
	*) job=(--name="$name") ;;
	esac
	(cd "$KVB_SCRATCH" && fio --output="$KVB_SCRATCH/$name.log" \
		--verify_fatal=1 --exitall_on_error=1 "${job[@]}" "$@") \
		>/dev/null 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		log "fio $name failed (status $rc):"
		sed 's/^/#   /' "$KVB_SCRATCH/$name.log" | grep -iE 'err|verify|bad|fail' | head -20
	fi
	return $rc
}

_kvb_setup

# kvb_bpftrace_stop PID: stop a bpftrace as Ctrl-C would, so that it
# prints its maps and exits. Debian 12's bpftrace can, rarely, let a
# SIGINT pass unheeded, with the guest idle and its kernel log clean: as
# a user would, press Ctrl-C again after 30 s, and say so; after 60 s
# kill it and fail.
kvb_bpftrace_stop() {
	local p=$1 i

	kill -INT "$p" 2>/dev/null
	for i in $(seq 120); do
		kill -0 "$p" 2>/dev/null || break
		if [ "$i" = 60 ]; then
			log "bpftrace $p still running 30s after SIGINT: a second SIGINT"
			kill -INT "$p" 2>/dev/null
		fi
		kvb_sleep 0.5
	done
	if kill -0 "$p" 2>/dev/null; then
		log "bpftrace $p did not exit on two SIGINTs within 60s: $(tr '\0' ' ' < /proc/"$p"/cmdline)"
		kill -KILL "$p"
		wait "$p" 2>/dev/null
		return 1
	fi
	wait "$p" 2>/dev/null
	return 0
}
