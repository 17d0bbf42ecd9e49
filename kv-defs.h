/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: what the scheduler shows the outside, the same for the module,
 * the simulator, the tests and the tools: its name and version, the
 * tunables, the batch key modes, the service tiers and the dispatch
 * reasons (with the names debugfs and the tracepoints print for them),
 * and the histogram's buckets. The policy core's interface is kv-policy.h.
 */
#ifndef _KV_DEFS_H
#define _KV_DEFS_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include "kv-user.h"
#endif

#include "kv-ioprio.h"

/*
 * The module's name, which its elevator, its alias and its trace system
 * take: Kbuild's KVB_MODNAME, so that a copy built under another name
 * loads beside kvbatch.
 */
#ifndef KVB_MODNAME
#define KVB_MODNAME	kvbatch
#endif
#define KVB_STR(x)	#x
#define KVB_XSTR(x)	KVB_STR(x)
#define KVB_NAME	KVB_XSTR(KVB_MODNAME)
#define KVB_VERSION	"0.3.0"

/* The tunables (the list is kv-tunables.h): KVB_<NAME> indexes them. */
#define KVB_TUNABLE(id, ...)	KVB_##id,
enum kvb_tunable {
#include "kv-tunables.h"
	KVB_NR_TUNABLES
};

/* A tunable's sysfs name, default and accepted range. */
struct kvb_tunable_desc {
	const char	*name;
	unsigned int	def;
	unsigned int	min;
	unsigned int	max;
};

extern const struct kvb_tunable_desc kvb_tunables[KVB_NR_TUNABLES];

/* What a batch is keyed by (the batch_key tunable). */
enum kvb_key_mode {
	KVB_KEY_IOPRIO,
	KVB_KEY_CGROUP,
	KVB_KEY_CGROUP_IOPRIO,
	KVB_NR_KEY_MODES
};

/*
 * Service tiers. A request's tier follows from its I/O priority:
 *   RT					-> DEMAND   (decode-critical recall)
 *   BE (or NONE), with or without a hint	-> NORMAL   (everything else)
 *   IDLE					-> PREFETCH
 * The RT class takes CAP_SYS_NICE or CAP_SYS_ADMIN; a hint takes nothing,
 * so a hint alone groups a process's reads into a batch of its own but
 * ranks it above no one, unless the administrator sets hint_demand.
 * Writes that can wait (async writeback, IDLE writes) leave their tier for
 * the WRITE tier: the deferred write queue.
 */
enum kvb_tier {
	KVB_TIER_DEMAND,
	KVB_TIER_NORMAL,
	KVB_TIER_PREFETCH,
	KVB_TIER_WRITE,
	KVB_NR_TIERS
};

/* Batch tiers are those with per-batch queues; WRITE has one queue. */
#define KVB_NR_BATCH_TIERS	KVB_TIER_WRITE

/* Why a request was dispatched (debugfs, tracepoints). */
enum kvb_reason {
	KVB_WHY_EXPIRED,	/* waited past its tier's expire time */
	KVB_WHY_TAIL,		/* demand batch with least remaining work */
	KVB_WHY_NORMAL,		/* a normal batch */
	KVB_WHY_PREFETCH,	/* prefetch, nothing else waiting */
	KVB_WHY_WRITE_BURST,	/* deferred writes released */
	KVB_WHY_SHARE,		/* a background tier's guaranteed share */
	KVB_NR_REASONS
};

/* Batch completion-time histogram: bucket i holds [2^(i-1), 2^i) µs. */
#define KVB_HIST_BUCKETS	32

/*
 * Their names in debugfs, sysfs and the tracepoints (kv-policy.c); with
 * the NUL, each fits in KVB_NAME_LEN bytes (a tracepoint field).
 */
#define KVB_NAME_LEN		12
extern const char *const kvb_tier_names[KVB_NR_TIERS];
extern const char *const kvb_reason_names[KVB_NR_REASONS];

#endif /* _KV_DEFS_H */
