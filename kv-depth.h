/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: the automatic max_inflight, a depth controller in the policy
 * core (kv-depth.c). Its only inputs are the core's request events: a
 * dispatch, and a completion with the request's time in the device and
 * the requests still waiting in kvbatch.
 */
#ifndef _KV_DEPTH_H
#define _KV_DEPTH_H

#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/minmax.h>
#include <linux/types.h>
#else
#include "kv-user.h"
#endif

/* Windows of the filters over the dies' count and the load's depth. */
#define KVP_DEPTH_SPAN		16
/*
 * The throughput the limit keeps unless told otherwise, in thousandths:
 * the auto_keep_permille tunable's default (kv-tunables.h).
 */
#define KVP_DEPTH_KEEP		975U

/*
 * Classes of request, each with its own unloaded service time: reads, and
 * writes and discards (programs, erases), each by size: 4 KiB or less, 8,
 * 16, 32, 64 KiB, larger.
 */
#define KVP_DEPTH_SIZES		6
#define KVP_DEPTH_CLASSES	(2 * KVP_DEPTH_SIZES)

static inline u32 kvp_depth_class(bool write, u32 sectors)
{
	u32 size = sectors > 8 ? min_t(u32, fls64(sectors - 1) - 3,
				       KVP_DEPTH_SIZES - 1) : 0;

	return (write ? KVP_DEPTH_SIZES : 0) + size;
}

struct kvp_depth {
	u32	limit;		/* in [1, max]; READ_ONCE() outside the lock */
	u32	max;		/* the host's ceiling: what the device holds */
	u32	keep;		/* share of the throughput kept, Q16 */
	bool	probing;	/* the limit is KVP_DEPTH_PROBE, engaged or not */
	u32	saved;		/* the limit to restore after the probe */

	/* The window: requests dispatched since @from_ns, over busy time. */
	u64	from_ns;
	u64	last_ns;	/* last event */
	u32	cur;		/* in flight after it */
	u32	n;		/* completions counted */
	u64	busy_ns;
	u64	lat_ns;		/* sum of their times in the device */
	u64	lat_min;	/* the shortest */
	/* Per class: completions, times, squares in 64 ns units (probe). */
	u32	n_cl[KVP_DEPTH_CLASSES];
	u64	lat_cl[KVP_DEPTH_CLASSES];
	u64	lat2[KVP_DEPTH_CLASSES];
	/* Requests outstanding (in flight + queued), summed per completion. */
	u64	out_sum;
	u32	out_n;

	/*
	 * The unloaded device per class: from the probes (mean time in the
	 * device, 0: unknown; its squared coefficient of variation, Q16),
	 * else inferred under load (0: not yet), with the probes' pooled
	 * variance. The class the last probe saw most of.
	 */
	u64	base_ns[KVP_DEPTH_CLASSES];
	u32	cv2[KVP_DEPTH_CLASSES];
	u64	est_ns[KVP_DEPTH_CLASSES];
	u32	cv2_all;
	u32	main;
	bool	fresh;		/* the next probe replaces base_ns and cv2 */
	u64	probe_start;
	u64	busy_since_probe;
	u64	probe_every;	/* busy time between probes */

	/* Per window: dies seen (Q8, 0: no queue seen), load's depth. */
	u32	dies[KVP_DEPTH_SPAN];
	u32	outs[KVP_DEPTH_SPAN];
	u32	slot;
	/*
	 * Completions a second of busy time: at the probe's depth, and per
	 * window deeper than it since the probe. The limit the formula gave.
	 */
	u64	probe_rate;
	u64	rates[KVP_DEPTH_SPAN];
	u32	rslot;
	u32	pk;
	/* Held at the probe's depth, or stepping out of it a window a time. */
	bool	held;
	/* The dies over the span after the last probe, and now. */
	u64	ref_dies, sum_dies;
	u32	nr_sum;

	/* Counters (debugfs). */
	u64	windows, probes, changes;
};

void kvp_depth_init(struct kvp_depth *d, u32 max);
/* The ceiling changed (nr_requests): the limit follows it or is clamped. */
void kvp_depth_set_max(struct kvp_depth *d, u32 max);
/*
 * The share of the throughput at the load's own depth that the limit
 * keeps, in thousandths (kvp_depth_init(): KVP_DEPTH_KEEP). The next
 * window's limit follows it.
 */
void kvp_depth_set_keep(struct kvp_depth *d, u32 permille);
/* A request entered the device; @inflight counts it. */
void kvp_depth_dispatched(struct kvp_depth *d, u32 inflight, u64 now);
/*
 * A request of class @cl (kvp_depth_class()) completed after @lat_ns in
 * the device (0: unknown); @inflight no longer counts it, @queued requests
 * wait in kvbatch. Returns true if the limit changed.
 */
bool kvp_depth_completed(struct kvp_depth *d, u64 now, u64 lat_ns, u32 cl,
			 u32 inflight, u32 queued);
/* Dies inferred over the last windows; 0: none (no queue in the device). */
u32 kvp_depth_dies(const struct kvp_depth *d);

#endif /* _KV_DEPTH_H */
