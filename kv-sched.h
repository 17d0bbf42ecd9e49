/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: definitions shared by the elevator (kv-sched.c) and by code
 * built outside the kernel (unit tests, tools). Nothing in this header may
 * depend on blk-mq types, so that it compiles in userspace as is.
 */
#ifndef _KV_SCHED_H
#define _KV_SCHED_H

#define KVB_NAME	"kvbatch"
#define KVB_VERSION	"0.1.0"

/*
 * Tunables, exported in /sys/block/<dev>/queue/iosched/ under the names in
 * kvb_tunables[] (kv-sched.c), which also gives each one's default, minimum
 * and maximum. A store outside the range fails with -EINVAL and changes
 * nothing. The unit is part of the name. Documentation/kvbatch.rst carries
 * the same table with the trade-offs.
 */
enum kvb_tunable {
	KVB_WRITE_EXPIRE_MS,
	KVB_WRITES_STARVED,
	KVB_FRONT_MERGES,
	KVB_ASYNC_DEPTH,
	KVB_NR_TUNABLES
};

struct kvb_tunable_desc {
	const char	*name;
	unsigned int	def;
	unsigned int	min;
	unsigned int	max;
};

#endif /* _KV_SCHED_H */
