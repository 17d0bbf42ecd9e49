/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: the policy core's interface, shared by the elevator (kv-sched.c)
 * and by code built outside the kernel (unit tests, simulator). Nothing in
 * this header depends on blk-mq types: a "host" (the elevator, or a test
 * harness) owns the requests and keeps each batch's queued requests in
 * arrival order on kvp_batch.rqs; the core (kv-policy.c) keeps the batch
 * bookkeeping and decides what is dispatched next.
 *
 * Every kvp_* function must be called with the host's lock held; none of
 * them allocates or sleeps.
 */
#ifndef _KV_POLICY_H
#define _KV_POLICY_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/list.h>
#else
#include "kv-user.h"
#endif

#include "kv-defs.h"
#include "kv-depth.h"

enum kvp_batch_state {
	KVP_BATCH_FREE,
	KVP_BATCH_OPEN,		/* has queued or in-flight requests */
	KVP_BATCH_DRAINING,	/* done, may still be joined (batch_window_us) */
};

struct kvp_batch {
	/* Host-owned: the batch's queued requests, oldest first. */
	struct list_head	rqs;

	u64			key;
	u64			open_ns;	/* first request inserted */
	u64			head_ns;	/* arrival of oldest queued request */
	u64			last_ns;	/* last completion */
	u64			bytes;		/* bytes dispatched */
	u32			nr_rqs;		/* requests dispatched */
	u32			queued;		/* requests waiting in kvbatch */
	u32			inflight;	/* requests in the device */
	u32			seq;		/* open order: ties go to the oldest */
	int			heap_pos[2];	/* in the tier's heaps, or -1 */
	u8			tier;
	u8			state;
	bool			overflow;	/* the tier's shared overflow batch */

	struct kvp_batch	*hnext;		/* hash chain, or free list */
	struct list_head	drain_node;	/* on kvp_sched.draining */
	struct list_head	live_node;	/* on kvp_sched.live */
};

/* Policy parameters, derived by the host from the tunables. */
struct kvp_params {
	u64	expire_ns[KVB_NR_TIERS];
	u64	window_ns;
	u32	write_batch;
	u32	write_defer_max;
	u32	max_inflight;		/* 0: no limit */
	u32	auto_keep_permille;	/* throughput the automatic one keeps */
	/*
	 * The tunable is 0: the depth controller (kvp_sched.depth) sets the
	 * limit, and it applies only while demand is about or the controller
	 * probes; otherwise nothing is held (kvp_limit()), and limit_ceiling
	 * (what the device holds; 0: no bound) bounds only dispatch on
	 * arrival (kvp_may_direct()).
	 */
	bool	limit_auto;
	u32	limit_ceiling;
	/*
	 * Minimum share of dispatches, in percent, while backlogged; the
	 * write tier's while its writes are deferred.
	 */
	u32	share_pct[KVB_NR_TIERS];
	/* BE (or NONE) with a hint is demand (kvp_tier_of()). */
	bool	hint_demand;
};

struct kvp_stats {
	u64	opened[KVB_NR_BATCH_TIERS];
	u64	closed[KVB_NR_BATCH_TIERS];
	u64	overflow_rqs[KVB_NR_BATCH_TIERS];
	u64	dispatched[KVB_NR_REASONS];
	u64	dispatched_tier[KVB_NR_TIERS];
	u64	deferred;		/* writes queued for deferral */
	u64	bursts;			/* write bursts started */
	u64	throttled;		/* choices held back by max_inflight */
	u64	direct;			/* dispatched on arrival (kvp_rq_direct) */
	u64	batch_ns_sum[KVB_NR_BATCH_TIERS];
	u64	batch_ns_max[KVB_NR_BATCH_TIERS];
	u64	batch_rqs_sum[KVB_NR_BATCH_TIERS];	/* requests of closed batches */
	u64	batch_bytes_sum[KVB_NR_BATCH_TIERS];
	u64	hist[KVB_NR_BATCH_TIERS][KVB_HIST_BUCKETS];
	u32	live;			/* batches open or draining */
	u32	live_max;
};

/* A min-heap of batches, with each batch's position kept in the batch. */
struct kvp_heap {
	struct kvp_batch	**a;
	u32			n;
	u8			which;		/* index into heap_pos[] */
};

struct kvp_tier {
	struct kvp_heap		work;		/* by (queued + inflight, seq) */
	struct kvp_heap		age;		/* by head_ns */
	u32			queued;
	u32			inflight;
};

struct kvp_sched {
	struct kvp_params	p;
	u32			dev;		/* for tracepoints (dev_t) */
	struct kvp_tier		tier[KVB_NR_TIERS];
	/* Per-tier overflow batches, then the write queue: always present. */
	struct kvp_batch	fixed[KVB_NR_TIERS];
	struct kvp_batch	*wq;

	struct kvp_batch	*pool;
	u32			nr_batches;
	/* Pool batches the other tiers may hold, and hold (live). */
	u32			other_max;
	u32			other_live;
	struct kvp_batch	*free;
	struct kvp_batch	**hash;
	u32			hash_bits;
	/* Draining batches, oldest completion first. */
	struct list_head	draining;
	/*
	 * The pool's batches that are open or draining, newest first:
	 * walking them costs the live batches, not the pool. The tiers'
	 * overflow batches and the write queue are not among them.
	 */
	struct list_head	live;

	u32			seq;
	/* The last demand arrival, and whether demand is about. */
	u64			demand_ns;
	bool			demand_about;
	u32			queued;		/* all tiers */
	u32			inflight;	/* all tiers */
	/*
	 * The last arrival of a deferred write, and whether a writeback
	 * throttle counts it (KVP_WRITE_STALL_NS).
	 */
	u64			write_ns;
	bool			write_throttled;
	u32			burst_left;	/* writes left in this burst */
	bool			burst_forced;	/* ahead of demand (step 3) */
	/* The last pick was another tier's expired request, demand waiting. */
	bool			aged_turn;
	/* Share owed to each tier, in hundredths of a request. */
	u32			credit[KVB_NR_TIERS];
	/* The automatic max_inflight, fed with limit_auto only. */
	struct kvp_depth	depth;
	struct kvp_stats	stats;
};

enum kvp_pick_kind {
	KVP_PICK_NONE,		/* nothing to dispatch now */
	KVP_PICK_BATCH,		/* the oldest queued request of .batch */
	KVP_PICK_WRITE,		/* a deferred write (see burst_start) */
};

struct kvp_pick {
	enum kvp_pick_kind	kind;
	enum kvb_reason		why;
	struct kvp_batch	*batch;
	/*
	 * KVP_PICK_WRITE: true for the first write of a burst, which is the
	 * oldest deferred write; the rest of the burst follows in ascending
	 * sector order from there.
	 */
	bool			burst_start;
};

/* Set-up: one allocation of kvp_size() bytes, zeroed, handed to kvp_init. */
unsigned long kvp_size(u32 nr_batches);
struct kvp_sched *kvp_init(void *mem, u32 nr_batches);
/* Close every draining batch (teardown, or batch_window_us lowered). */
void kvp_flush_draining(struct kvp_sched *ps);
/* Close the draining batches whose window has passed. */
void kvp_reap(struct kvp_sched *ps, u64 now);

/*
 * Tier of a request from its ioprio and direction; @hint_demand: the
 * tunable (kvp_params.hint_demand).
 */
enum kvb_tier kvp_tier_of(u16 ioprio, bool write, bool sync,
			  bool hint_demand);

/*
 * The part of the pool only demand batches take: the other tiers' keys
 * beyond the rest share their tier's overflow batch, so that a flood of
 * them cannot leave demand with none.
 */
#define KVP_DEMAND_RESERVE(nr_batches)	((nr_batches) / 4)

/* The batch a new request with @key joins; never NULL. */
struct kvp_batch *kvp_get_batch(struct kvp_sched *ps, u64 key,
				enum kvb_tier tier, u64 now);

/*
 * Request events. @head_ns is the arrival time of the batch's oldest
 * queued request after the event (ignored when none is queued). The write
 * queue is ps->wq and takes the same events.
 */
void kvp_rq_queued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns);
void kvp_rq_unqueued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns,
		     u64 now);
void kvp_rq_dispatched(struct kvp_sched *ps, struct kvp_batch *b,
		       u64 head_ns, u32 bytes, u64 now);
void kvp_rq_requeued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns);
/*
 * @lat_ns: the request's time in the device, 0 if unknown; @cl its class
 * for the depth controller (kvp_depth_class()).
 */
void kvp_rq_completed(struct kvp_sched *ps, struct kvp_batch *b, u64 now,
		      u64 lat_ns, u32 cl);
/*
 * The arrival time of @b's oldest queued request changed without a request
 * entering or leaving it: a request of @b received an older one by a merge.
 */
void kvp_batch_head_changed(struct kvp_sched *ps, struct kvp_batch *b,
			    u64 head_ns);

/*
 * The policy's parameters from the tunables (values within the ranges of
 * kvb_tunables[]). max_inflight 0 stays 0, no limit, unless the host makes
 * it automatic (limit_auto, with the device's limit_ceiling), as the module
 * does.
 */
void kvp_params_from_tunables(struct kvp_params *p, const unsigned int *tun);
/*
 * Apply @p (from kvp_params_from_tunables(), then the host's ceiling in
 * limit_ceiling). The depth controller starts afresh when the limit turns
 * automatic, and follows the ceiling.
 */
void kvp_set_params(struct kvp_sched *ps, const struct kvp_params *p);

/*
 * Demand is about from a demand request's arrival until KVP_DEMAND_LINGER_NS
 * after the last one, once none is pending. An automatic max_inflight
 * holds only then: it keeps the device's queue short so that a recall's
 * tail is not behind it, and with no recall about a short device queue
 * only costs the host a queue of its own. Otherwise nothing is held: each
 * hardware queue's own tags bound it, and blk-mq stops asking for work
 * at the first request without a tag, so what the device cannot take
 * still waits in kvbatch, in order and open to merges. A device-wide
 * count (limit_ceiling, the sum of the queues' tags) would do that
 * worse: unless every queue is loaded alike, it fills while one queue's
 * tags are idle. The linger is longer than the gaps between a serving
 * engine's recalls, so under recall traffic the automatic limit stays in
 * force.
 */
#define KVP_DEMAND_LINGER_NS	(1000ULL * 1000 * 1000)

/*
 * Writeback throttling (blk-wbt) counts a buffered write from its
 * submission to its completion, and beside reads admits a few at a time
 * (a quarter of its depth, four by default); the rest of the writeback,
 * and an fsync's writes behind it, wait for those to complete. Held
 * writes it counts are thus all that will come: once none has joined
 * the write queue for this long, holding them longer only stalls the
 * flusher, fsync and reclaim, so they go as a burst ahead of demand.
 * (Unthrottled writers keep adding writes, up to write_defer_max.) Long
 * enough for a writer to submit its next request (microseconds apart),
 * short beside a device's write time, so that writeback moves at about
 * the pace wbt gives it without kvbatch; a jiffy at HZ=250.
 */
#define KVP_WRITE_STALL_NS	(4ULL * 1000 * 1000)

/*
 * The limit on requests in flight now; 0: none. An automatic limit at
 * the device's tags (limit_ceiling) holds nothing they do not, and
 * holding would cost: a hold ends only once a batch of requests has
 * completed (kvb_kick_batch() in the host), so a device kept full by
 * other work would idle that many tags at each end, and a recall would
 * wait for them.
 *
 * The host may call it without its lock (has_work, completions): the
 * controller's fields are then read once each, and the host keeps the
 * parameters whole for such a reader (kv-sched.c's params_seq) since
 * kvp_set_params() rewrites them, and restarting the controller zeroes it.
 */
static inline u32 kvp_limit(const struct kvp_sched *ps)
{
	const struct kvp_params *p = &ps->p;
	u32 limit;

	if (!p->limit_auto)
		return p->max_inflight;
	limit = READ_ONCE(ps->depth.limit);
	/* The probe measures the unloaded device: it holds regardless. */
	if (READ_ONCE(ps->depth.probing))
		return limit;
	if (!READ_ONCE(ps->demand_about) ||
	    (p->limit_ceiling && limit >= p->limit_ceiling))
		return 0;
	return limit;
}

/* True while the limit in force is full. */
static inline bool kvp_throttled(const struct kvp_sched *ps)
{
	u32 limit = kvp_limit(ps);

	return limit && ps->inflight >= limit;
}

/*
 * Dispatch on arrival. When nothing is queued (no deferred write either)
 * and the limit in force has room, a new request of the demand, normal or
 * prefetch tier is what kvp_choose() would pick next whatever its batch:
 * the host may then hand it to the device directly, past the queues and
 * the heaps, and report it with kvp_rq_direct() instead of
 * kvp_rq_queued() and kvp_rq_dispatched(). It counts in flight from then
 * on, so the limit bounds such requests as it bounds the device.
 * Writes never go this way: they may be deferred. Nor does a request
 * once the device's tags (limit_ceiling) are all in flight, limit or
 * not: it would wait past kvbatch for a tag, out of its order and out of
 * reach of merges, where queued it waits in kvbatch until blk-mq asks.
 */
static inline bool kvp_may_direct(const struct kvp_sched *ps,
				  enum kvb_tier tier)
{
	u32 ceiling = ps->p.limit_ceiling;

	return tier != KVB_TIER_WRITE && !ps->queued && !kvp_throttled(ps) &&
	       (!ceiling || ps->inflight < ceiling);
}

/* The reason kvp_choose() gives a lone request of @tier (not WRITE). */
static inline enum kvb_reason kvp_direct_why(enum kvb_tier tier)
{
	if (tier == KVB_TIER_DEMAND)
		return KVB_WHY_TAIL;
	return tier == KVB_TIER_NORMAL ? KVB_WHY_NORMAL : KVB_WHY_PREFETCH;
}

/*
 * A request of @b, of @bytes, dispatched on arrival: counted in flight at
 * once, so that @b stays open until it completes.
 */
void kvp_rq_direct(struct kvp_sched *ps, struct kvp_batch *b, u32 bytes,
		   u64 now);

/* What to dispatch next. The host must dispatch what it is told. */
struct kvp_pick kvp_choose(struct kvp_sched *ps, u64 now);

/*
 * The deferred write arriving now is (@throttled) or is not counted by a
 * writeback throttle until it completes: KVP_WRITE_STALL_NS applies.
 */
static inline void kvp_write_throttled(struct kvp_sched *ps, bool throttled)
{
	ps->write_throttled = throttled;
}

/*
 * True when the only queued work is deferred writes held behind in-flight
 * demand, so that kvp_choose() returns nothing until the demand completes
 * or, at *@until, the oldest write expires or throttled writes have had
 * no arrival for KVP_WRITE_STALL_NS. Reads the core without
 * changing it: the host may call it without its lock for a hint
 * (has_work), and must then tolerate a stale answer, and keep the
 * parameters whole as for kvp_limit().
 */
bool kvp_writes_held(const struct kvp_sched *ps, u64 now, u64 *until);

static inline u32 kvp_pending(const struct kvp_batch *b)
{
	return b->queued + b->inflight;
}

/* The draining batch whose window ends first, or NULL. */
static inline struct kvp_batch *kvp_oldest_draining(struct kvp_sched *ps)
{
	return list_first_entry_or_null(&ps->draining, struct kvp_batch,
					drain_node);
}

unsigned int kvp_hist_bucket(u64 ns);
/* Upper bound, in µs, of the bucket holding the @pct-th percentile. */
u64 kvp_hist_pct(const u64 *hist, unsigned int pct);
/* Zero the counters; gauges (live batches) keep their value. */
void kvp_stats_reset(struct kvp_sched *ps);

#endif /* _KV_POLICY_H */
