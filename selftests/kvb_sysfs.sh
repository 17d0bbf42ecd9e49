#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# sysfs tunables: each knob round-trips its minimum, its maximum and its
# default; each bad input (garbage, sign, fraction, hex, out of range,
# overflow, empty line, a huge string) fails with EINVAL and leaves the value
# unchanged; so do boundary values and FUZZ (default 200) random byte strings
# per knob. Also checks that the debugfs state files exist, that
# concurrent nr_requests and async_depth writes leave the budget both call
# for, and that random valid knob and nr_requests writes under verified
# load are safe.
source "$(dirname "$0")/lib.sh"

kvb_require_root
kvb_require_cmd python3
disk=nvme0n1
[ -b /dev/$disk ] || ktap_exit_skip "no /dev/$disk"
kvb_load || ktap_exit_skip "cannot load kvbatch"

ktap_print_header
ktap_set_plan $((${#KVB_TUNABLES[@]} * 5 + 8))

kvb_use_kvbatch $disk
dir=/sys/block/$disk/queue/iosched

only_known_knobs() {
	local want have

	want=$( (for k in "${KVB_TUNABLES[@]}"; do echo "${k%%[[:space:]]*}"; done; echo batch_key) | sort)
	have=$(ls "$dir" | sort)
	[ "$want" = "$have" ] || { log "knobs: want [$want] have [$have]"; return 1; }
}
ktap_check "iosched/ holds exactly the documented knobs" only_known_knobs

roundtrip() {
	local f=$1 v now

	for v in "${@:2}"; do
		echo "$v" > "$f" || { log "$f: write $v failed"; return 1; }
		kvb_read now "$f"
		[ "$now" = "$v" ] || { log "$f: wrote $v, read $now"; return 1; }
	done
}

# write_rejected FILE VALUE: the write must fail with EINVAL. One write(2)
# of VALUE, by the shell itself (no subshell: see kvb_read()).
write_rejected() {
	local f=$1 v=$2 err

	{ printf '%s' "$v" > "$f"; } 2> "$KVB_SCRATCH/write.err" && return 1
	err=
	kvb_read err "$KVB_SCRATCH/write.err"
	case "$err" in
	*"Invalid argument"*) return 0 ;;
	*) log "$f <- '${v:0:20}': unexpected error: $err"; return 1 ;;
	esac
}

# Below the page size, so the core hands it to our store (longer writes
# are refused by kernfs itself with E2BIG).
huge=$(head -c 4000 /dev/zero | tr '\0' 7)
bad_inputs() {
	local f=$1 max=$2 before v

	kvb_read before "$f" || return 1
	for v in abc -1 1.5 0x10 " 5" "5 5" $'\n' "$((max + 1))" \
		 4294967296 99999999999999999999 "$huge" "1e3" "+-1"; do
		write_rejected "$f" "$v" || { log "$f accepted '${v:0:20}'"; return 1; }
		kvb_is "$f" "$before" || { log "$f changed after '${v:0:20}'"; return 1; }
	done
}

# boundaries FILE MIN MAX: the edges of the range (and leading zeros, and
# one trailing newline) are taken and read back; one step outside either
# edge, the unsigned and 64-bit limits, signs, surrounding whitespace and a
# second newline are refused and change nothing.
boundaries() {
	local f=$1 min=$2 max=$3 before v now

	for v in "$min" "$max" "000$max" "$min"$'\n'; do
		printf '%s' "$v" > "$f" || { log "$f: '$v' refused"; return 1; }
		kvb_read now "$f"
		[ "$now" = "$((10#${v%$'\n'}))" ] ||
			{ log "$f: wrote '$v', read $now"; return 1; }
	done
	kvb_read before "$f" || return 1
	set -- "$((max + 1))" 4294967295 4294967296 18446744073709551615 \
		18446744073709551616 "+$min" "+$max" "-0" "-$max" " $max" \
		"$max " "$max"$'\t' "$max"$'\r' "$max"$'\n\n' $'\n'"$max"
	[ "$min" = 0 ] || set -- "$@" "$((min - 1))"
	for v; do
		write_rejected "$f" "$v" || { log "$f accepted '$v'"; return 1; }
		kvb_is "$f" "$before" || { log "$f changed after '$v'"; return 1; }
	done
}

# FUZZ writes of random bytes to each knob (sysfs-fuzz.py): noise, and
# the knob's value with noise around or inside it, NUL bytes included;
# each must fail with EINVAL and change nothing. One run for every knob,
# after the other checks (under TCG a Python start costs more than its 200
# writes): fuzz_args collects the knobs and the values they hold.
FUZZ=${FUZZ:-200}
fuzz_args=()

for k in "${KVB_TUNABLES[@]}"; do
	read -r name def min max _ <<< "$k"
	f=$dir/$name
	ktap_check "$name: default is $def" kvb_is "$f" "$def"
	ktap_check "$name: $min and $max round-trip" roundtrip "$f" "$min" "$max" "$def"
	ktap_check "$name: bad input -> EINVAL, value unchanged" bad_inputs "$f" "$max"
	ktap_check "$name: boundary values" boundaries "$f" "$min" "$max"
	echo "$def" > "$f"
	fuzz_args+=("$f" "$def")
done

# batch_key is a choice of names, shown like the scheduler list.
key=$dir/batch_key
ktap_check "batch_key: default is cgroup+ioprio" \
	test "$(cat $key)" = "ioprio cgroup [cgroup+ioprio]"
key_roundtrip() {
	local v

	for v in ioprio cgroup cgroup+ioprio; do
		echo "$v" > $key || return 1
		grep -q "\[$v\]" $key || { log "batch_key: wrote $v, read $(cat $key)"; return 1; }
	done
}
ktap_check "batch_key: every mode round-trips" key_roundtrip
key_rejects() {
	local before v

	kvb_read before $key || return 1
	for v in $'\n' IOPRIO "cgroup " cgroup+ cgroup+ioprioX 0 1 "$huge"; do
		write_rejected $key "$v" || { log "batch_key accepted '${v:0:20}'"; return 1; }
		kvb_is $key "$before" || return 1
	done
}

dbg=/sys/kernel/debug/block/$disk/sched
debugfs_files() {
	local f

	for f in stats depth dispatch batches tiers deferred histogram reset_stats; do
		[ -r "$dbg/$f" ] || { log "missing $dbg/$f"; return 1; }
		cat "$dbg/$f" > /dev/null || return 1
	done
}
ktap_check "batch_key: bad names -> EINVAL, value unchanged" key_rejects
fuzz_args+=("$key" cgroup+ioprio)

# The fuzz of every knob: sysfs-fuzz.py prints "ok FILE" for each whose
# writes were all refused (the seed and what went wrong are logged).
seed=$RANDOM$RANDOM
"$(dirname "$0")/sysfs-fuzz.py" "$FUZZ" "$seed" "${fuzz_args[@]}" \
	> "$KVB_SCRATCH/fuzz" 2> "$KVB_SCRATCH/fuzz.err" ||
	{ log "sysfs-fuzz.py $FUZZ $seed (every knob): exit $?"; ktap_diag < "$KVB_SCRATCH/fuzz.err"; }
fuzz_passed() {
	local l

	while IFS= read -r l; do
		[ "$l" = "ok $1" ] && return 0
	done < "$KVB_SCRATCH/fuzz"
	return 1
}
for ((i = 0; i < ${#fuzz_args[@]}; i += 2)); do
	f=${fuzz_args[$i]}
	ktap_check "${f##*/}: $FUZZ random byte strings -> EINVAL, value unchanged" \
		fuzz_passed "$f"
done
ktap_check "debugfs state files readable" debugfs_files

# A write to nr_requests and one to the async_depth knob, at once: they
# take different locks (the queue's and the elevator's sysfs lock), and
# kvbatch's budget must end as the pool and the knob say (0: 3/4 of the
# pool; N: N, at most the pool), never as an older pool did.
depth_races() {
	local nrq=/sys/block/$disk/queue/nr_requests
	local dbg=/sys/kernel/debug/block/$disk/sched/depth
	local sizes=(64 256 1000) knobs=(0 16 500)
	local nr0 i nr tun want kn kb nrv rc=0
	local -A dv

	kvb_read nr0 $nrq
	for ((i = 0; i < 40; i++)); do
		nr=${sizes[$((RANDOM % 3))]} tun=${knobs[$((RANDOM % 3))]}
		echo "$nr" > $nrq &
		echo "$tun" > $dir/async_depth &
		wait
		want=$((tun ? (tun < nr ? tun : nr) : nr * 3 / 4))
		# Read by the shell: a process per read would be most of a
		# round.
		kvb_read_keys dv $dbg
		kn=${dv[nr_requests]:-} kb=${dv[async_depth]:-}
		kvb_read nrv $nrq
		if [ "$kn" != "$nrv" ] || [ "$kb" != "$want" ]; then
			log "round $i: nr_requests $nr, async_depth knob $tun: kvbatch has pool $kn, budget $kb (want $want)"
			rc=1
		fi
	done
	echo 0 > $dir/async_depth
	echo "$nr0" > $nrq
	return $rc
}
ktap_check "nr_requests and async_depth written at once: the budget follows both" \
	depth_races

# Knob changes under load must be safe.
knobs_under_load() {
	local pid i t0 rc=0

	(cd "$KVB_SCRATCH" && fio --name=load --filename=/dev/$disk --rw=randrw \
		--bs=4k --size=16M --direct=1 --ioengine=libaio --iodepth=16 \
		--runtime=8 --time_based --verify=crc32c --verify_fatal=1 \
		--output=/dev/null) &
	pid=$!
	local keys=(ioprio cgroup cgroup+ioprio)
	local nrq=/sys/block/$disk/queue/nr_requests nr0 nr

	nr0=$(cat $nrq)
	# Change things for as long as the load runs, at least 20 times and
	# at most 100: each nr_requests write freezes the queue, which can
	# take long in an emulated guest.
	t0=$SECONDS
	for ((i = 0; i < 100; i++)); do
		[ $i -lt 20 ] || kill -0 $pid 2>/dev/null || break
		# Each nr_requests write freezes the queue and resizes the
		# scheduler tags under kvbatch (its depth_updated hook).
		nr=$((4 + RANDOM % 1021))
		echo $nr > $nrq || { log "nr_requests $nr refused"; rc=1; }
		kvb_is $nrq $nr || { log "nr_requests: wrote $nr, read $(cat $nrq)"; rc=1; }
		kvb_tunables_random $dir || rc=1
		echo "${keys[$((RANDOM % 3))]}" > $dir/batch_key
	done
	log "$i changes of nr_requests and the knobs under load in $((SECONDS - t0)) s"
	echo cgroup+ioprio > $dir/batch_key
	echo "$nr0" > $nrq
	wait $pid || rc=1
	kvb_tunables_default $dir
	return $rc
}
ktap_check "random valid knob and nr_requests writes under verified load" \
	knobs_under_load

kvb_set_sched $disk none
ktap_finished
