/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch's tunables, in /sys/block/<dev>/queue/iosched/, one line each:
 *
 *   KVB_TUNABLE(enum suffix, sysfs name, default, minimum, maximum)
 *
 * This list is the only place they are written. It has no include guard:
 * kv-defs.h includes it to make enum kvb_tunable, kv-policy.c the range
 * table kvb_tunables[] (which the simulator and tools/kvsim's --tunables
 * read), and kv-sched.c the sysfs attributes, each with KVB_TUNABLE defined
 * its own way. Adding a tunable is one line here, what it means (in
 * kvp_params_from_tunables() or the elevator) and its documentation. A
 * store outside the range fails with -EINVAL and changes nothing; the unit
 * is part of the name. Documentation/kvbatch.rst has the trade-offs.
 */
/*	    enum suffix		sysfs name		default	min	max */
KVB_TUNABLE(DEMAND_EXPIRE_MS,	demand_expire_ms,	250,	1,	60000)
KVB_TUNABLE(NORMAL_EXPIRE_MS,	normal_expire_ms,	500,	1,	60000)
KVB_TUNABLE(PREFETCH_EXPIRE_MS,	prefetch_expire_ms,	2000,	1,	600000)
KVB_TUNABLE(WRITE_EXPIRE_MS,	write_expire_ms,	5000,	1,	600000)
KVB_TUNABLE(WRITE_BATCH,	write_batch,		16,	1,	256)
KVB_TUNABLE(WRITE_DEFER_MAX,	write_defer_max,	128,	1,	4096)
KVB_TUNABLE(BATCH_WINDOW_US,	batch_window_us,	0,	0,	1000000)
KVB_TUNABLE(MAX_INFLIGHT,	max_inflight,		0,	0,	4096)
KVB_TUNABLE(AUTO_KEEP_PERMILLE,	auto_keep_permille,	975,	500,	1000)
KVB_TUNABLE(FRONT_MERGES,	front_merges,		1,	0,	1)
KVB_TUNABLE(ASYNC_DEPTH,	async_depth,		0,	0,	65536)
KVB_TUNABLE(BATCH_KEY,		batch_key,		KVB_KEY_CGROUP_IOPRIO,
	    0, KVB_NR_KEY_MODES - 1)
KVB_TUNABLE(NORMAL_SHARE_PCT,	normal_share_pct,	0,	0,	50)
KVB_TUNABLE(PREFETCH_SHARE_PCT,	prefetch_share_pct,	5,	0,	50)
KVB_TUNABLE(WRITE_SHARE_PCT,	write_share_pct,	0,	0,	50)
KVB_TUNABLE(HINT_DEMAND,	hint_demand,		0,	0,	1)

#undef KVB_TUNABLE
