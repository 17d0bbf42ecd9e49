// SPDX-License-Identifier: GPL-2.0
/*
 * kvbatch policy core: batch bookkeeping and the choice of what to dispatch
 * next. Plain C with no blk-mq types, compiled into the module and into the
 * userspace unit tests and simulator, so the policy that is tested and
 * explained is the one that runs.
 *
 * Why this order. A recall batch is done when its last read is done, so
 * the cost of a batch is the completion time of its tail. On one device,
 * serving batches in order of least remaining work minimises the mean
 * batch completion time (shortest-remaining-processing-time at batch
 * granularity): finishing a small batch first delays a large one by a
 * little, while the reverse delays the small one by a lot. Demand
 * (decode-critical) batches therefore go first, smallest remaining first;
 * other work fills the device when no demand is queued; prefetch only when
 * nothing else waits. Reordering does not change the total work, only who
 * waits. Strict order starves, so every tier has an expire time after
 * which its oldest request goes first, oldest first across tiers; but
 * while demand is queued, another tier's expired request takes turns with
 * it, so that an unprivileged backlog deeper than its expire time cannot
 * put privileged recalls at the back of a FIFO.
 *
 * Precedence follows privilege. Demand is the RT class, which the kernel
 * grants only with CAP_SYS_NICE or CAP_SYS_ADMIN. Any process may set a
 * hint, so a hinted BE batch is a batch of the normal tier, and the
 * normal tier is served oldest request first, not by remaining work: a
 * flood of small hinted batches must gain nothing over a tenant whose
 * unhinted reads all share one batch (and one key).
 *
 * Writes that can wait are held while demand reads are queued or in
 * flight (flash serves reads slower while it writes), and then released
 * in bursts, sector-sorted by the host, so they still make progress. A
 * hold is bounded four ways: by time (write_expire_ms), by count
 * (write_defer_max), by a share of dispatches (write_share_pct), and, for
 * writes a writeback throttle counts, by the writers: once none has
 * joined them for KVP_WRITE_STALL_NS, they go (kv-policy.h says why).
 *
 * Batch metadata comes from a fixed pool: a workload inventing tags cannot
 * grow kernel memory. When the pool is exhausted, requests join their
 * tier's overflow batch and are served like any other batch. Part of the
 * pool is demand's alone (KVP_DEMAND_RESERVE()): keys anyone can invent
 * must not push privileged recalls into the overflow batch.
 */
#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/string.h>
#include <linux/time64.h>
#else
#include "kv-user.h"
#endif

#include "kv-policy.h"

#ifdef __KERNEL__
#include "kv-trace.h"
#else
/* Outside the kernel there are no tracepoints. */
#define trace_kvbatch_batch_open(...)	do { } while (0)
#define trace_kvbatch_batch_close(...)	do { } while (0)
#define trace_kvbatch_depth(dev, old, new, ns)			\
	((void)(dev), (void)(old), (void)(new), (void)(ns))
#endif

const char *const kvb_tier_names[KVB_NR_TIERS] = {
	[KVB_TIER_DEMAND]	= "demand",
	[KVB_TIER_NORMAL]	= "normal",
	[KVB_TIER_PREFETCH]	= "prefetch",
	[KVB_TIER_WRITE]	= "write",
};

const char *const kvb_reason_names[KVB_NR_REASONS] = {
	[KVB_WHY_EXPIRED]	= "expired",
	[KVB_WHY_TAIL]		= "tail",
	[KVB_WHY_NORMAL]	= "normal",
	[KVB_WHY_PREFETCH]	= "prefetch",
	[KVB_WHY_WRITE_BURST]	= "write_burst",
	[KVB_WHY_SHARE]		= "share",
};

/*
 * The tunables' names and ranges (the list is kv-tunables.h), here rather
 * than in kv-sched.c so that the simulator (tools/kvsim) starts from the
 * module's defaults and accepts the same ranges.
 */
#define KVB_TUNABLE(id, n, d, lo, hi)					\
	[KVB_##id] = { #n, d, lo, hi },
const struct kvb_tunable_desc kvb_tunables[KVB_NR_TUNABLES] = {
#include "kv-tunables.h"
};

enum { KVP_HEAP_WORK, KVP_HEAP_AGE };

/*
 * The tag's layout is kv-ioprio.h's (the ioprio ABI). Only the RT class
 * outranks others unless the administrator says otherwise (hint_demand):
 * the kernel checks a capability for RT and none for a hint.
 */
enum kvb_tier kvp_tier_of(u16 ioprio, bool write, bool sync,
			  bool hint_demand)
{
	unsigned int class = KV_IOPRIO_CLASS(ioprio);

	/* Async writeback and idle writes can wait for demand to finish. */
	if (write && (!sync || class == KV_IOPRIO_CLASS_IDLE))
		return KVB_TIER_WRITE;
	if (class == KV_IOPRIO_CLASS_IDLE)
		return KVB_TIER_PREFETCH;
	if (class == KV_IOPRIO_CLASS_RT ||
	    (hint_demand && KV_IOPRIO_HINT(ioprio)))
		return KVB_TIER_DEMAND;
	return KVB_TIER_NORMAL;
}

u64 kvp_hist_pct(const u64 *hist, unsigned int pct)
{
	u64 total = 0, seen = 0, want;
	unsigned int i;

	for (i = 0; i < KVB_HIST_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return 0;
	/* Nearest rank: the smallest bucket covering pct% of the samples. */
	want = (total * pct + 99) / 100;
	for (i = 0; i < KVB_HIST_BUCKETS; i++) {
		seen += hist[i];
		if (seen >= want)
			break;
	}
	return 1ULL << i;
}

void kvp_stats_reset(struct kvp_sched *ps)
{
	u32 live = ps->stats.live;

	memset(&ps->stats, 0, sizeof(ps->stats));
	ps->stats.live = live;
	ps->stats.live_max = live;
}

unsigned int kvp_hist_bucket(u64 ns)
{
	/* Bucket b > 0 holds [2^(b-1), 2^b) us: the bit length of us. */
	unsigned int b = fls64(ns / NSEC_PER_USEC);

	return b < KVB_HIST_BUCKETS ? b : KVB_HIST_BUCKETS - 1;
}

/* ---- heaps ------------------------------------------------------------ */

static bool kvp_before(const struct kvp_heap *h, const struct kvp_batch *a,
		       const struct kvp_batch *b)
{
	if (h->which == KVP_HEAP_WORK) {
		if (kvp_pending(a) != kvp_pending(b))
			return kvp_pending(a) < kvp_pending(b);
	} else if (a->head_ns != b->head_ns) {
		return a->head_ns < b->head_ns;
	}
	/* Sequence numbers wrap; compare them as a window. */
	return (s32)(a->seq - b->seq) < 0;
}

static void kvp_heap_set(struct kvp_heap *h, u32 i, struct kvp_batch *b)
{
	h->a[i] = b;
	b->heap_pos[h->which] = i;
}

static void kvp_heap_up(struct kvp_heap *h, u32 i)
{
	struct kvp_batch *b = h->a[i];

	while (i) {
		u32 parent = (i - 1) / 2;

		if (!kvp_before(h, b, h->a[parent]))
			break;
		kvp_heap_set(h, i, h->a[parent]);
		i = parent;
	}
	kvp_heap_set(h, i, b);
}

static void kvp_heap_down(struct kvp_heap *h, u32 i)
{
	struct kvp_batch *b = h->a[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && kvp_before(h, h->a[c + 1], h->a[c]))
			c++;
		if (!kvp_before(h, h->a[c], b))
			break;
		kvp_heap_set(h, i, h->a[c]);
		i = c;
	}
	kvp_heap_set(h, i, b);
}

static void kvp_heap_fix(struct kvp_heap *h, struct kvp_batch *b)
{
	int i = b->heap_pos[h->which];

	/*
	 * A lone batch is in order: the common case of a device with one
	 * stream, whose every insert and dispatch moves the batch's head.
	 */
	if (i < 0 || h->n == 1)
		return;
	kvp_heap_up(h, i);
	kvp_heap_down(h, b->heap_pos[h->which]);
}

static void kvp_heap_add(struct kvp_heap *h, struct kvp_batch *b)
{
	h->a[h->n] = b;
	b->heap_pos[h->which] = h->n;
	kvp_heap_up(h, h->n++);
}

static void kvp_heap_del(struct kvp_heap *h, struct kvp_batch *b)
{
	int i = b->heap_pos[h->which];

	if (i < 0)
		return;
	b->heap_pos[h->which] = -1;
	if ((u32)i == --h->n)
		return;
	/* Move the last entry into the hole and restore the order. */
	kvp_heap_set(h, i, h->a[h->n]);
	kvp_heap_fix(h, h->a[i]);
}

static struct kvp_batch *kvp_heap_top(const struct kvp_heap *h)
{
	return h->n ? h->a[0] : NULL;
}

/* ---- batches ---------------------------------------------------------- */

static u32 kvp_hash(const struct kvp_sched *ps, u64 key, enum kvb_tier tier)
{
	u64 h = (key ^ ((u64)tier << 61)) * 0x9e3779b97f4a7c15ULL;

	return (u32)(h >> (64 - ps->hash_bits));
}

static void kvp_hash_del(struct kvp_sched *ps, struct kvp_batch *b)
{
	struct kvp_batch **pp = &ps->hash[kvp_hash(ps, b->key, b->tier)];

	while (*pp && *pp != b)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = b->hnext;
	b->hnext = NULL;
}

static void kvp_batch_reset(struct kvp_batch *b, u64 key, enum kvb_tier tier)
{
	INIT_LIST_HEAD(&b->rqs);
	b->key = key;
	b->tier = tier;
	b->open_ns = 0;
	b->head_ns = 0;
	b->last_ns = 0;
	b->bytes = 0;
	b->nr_rqs = 0;
	b->queued = 0;
	b->inflight = 0;
	b->heap_pos[KVP_HEAP_WORK] = -1;
	b->heap_pos[KVP_HEAP_AGE] = -1;
	b->hnext = NULL;
	INIT_LIST_HEAD(&b->drain_node);
	INIT_LIST_HEAD(&b->live_node);
}

/* Record a finished batch and return it to the pool. */
static void kvp_batch_finish(struct kvp_sched *ps, struct kvp_batch *b)
{
	enum kvb_tier t = b->tier;
	u64 dur = b->last_ns > b->open_ns ? b->last_ns - b->open_ns : 0;

	/* Only a draining batch is on the draining list. */
	if (b->state == KVP_BATCH_DRAINING)
		list_del_init(&b->drain_node);
	kvp_hash_del(ps, b);
	list_del_init(&b->live_node);
	if (t != KVB_TIER_DEMAND)
		ps->other_live--;

	ps->stats.closed[t]++;
	ps->stats.batch_ns_sum[t] += dur;
	ps->stats.batch_rqs_sum[t] += b->nr_rqs;
	ps->stats.batch_bytes_sum[t] += b->bytes;
	if (dur > ps->stats.batch_ns_max[t])
		ps->stats.batch_ns_max[t] = dur;
	ps->stats.hist[t][kvp_hist_bucket(dur)]++;
	ps->stats.live--;
	trace_kvbatch_batch_close(ps->dev, b->key, t, b->seq, b->nr_rqs,
				  b->bytes, dur);

	b->state = KVP_BATCH_FREE;
	b->hnext = ps->free;
	ps->free = b;
}

/* Nothing of @b is pending any more. */
static void kvp_batch_done(struct kvp_sched *ps, struct kvp_batch *b, u64 now)
{
	if (b->overflow || b == ps->wq)
		return;
	b->last_ns = now;
	if (ps->p.window_ns) {
		b->state = KVP_BATCH_DRAINING;
		list_add_tail(&b->drain_node, &ps->draining);
	} else {
		kvp_batch_finish(ps, b);
	}
}

void kvp_flush_draining(struct kvp_sched *ps)
{
	struct kvp_batch *b;

	while ((b = kvp_oldest_draining(ps)))
		kvp_batch_finish(ps, b);
}

/*
 * Has @b's window passed at @now? The host's clock readings may come
 * slightly out of order (one cached per plug, others from other CPUs): a
 * time before the batch's last completion is inside its window.
 */
static bool kvp_window_passed(const struct kvp_sched *ps,
			      const struct kvp_batch *b, u64 now)
{
	return now > b->last_ns && now - b->last_ns > ps->p.window_ns;
}

void kvp_reap(struct kvp_sched *ps, u64 now)
{
	struct kvp_batch *b;

	/* The draining list is in completion order: stop at the first live. */
	while ((b = kvp_oldest_draining(ps)) && kvp_window_passed(ps, b, now))
		kvp_batch_finish(ps, b);
}

/* Hash buckets: the next power of two at or above the pool size. */
static u32 kvp_hash_bits(u32 nr_batches)
{
	u32 bits = 1;

	while ((1U << bits) < nr_batches)
		bits++;
	return bits;
}

unsigned long kvp_size(u32 nr_batches)
{
	u32 bits = kvp_hash_bits(nr_batches);

	/* The scheduler, the pool, two heaps per batch tier, the hash. */
	return sizeof(struct kvp_sched) +
		nr_batches * sizeof(struct kvp_batch) +
		2 * KVB_NR_BATCH_TIERS * (nr_batches + 1) *
		sizeof(struct kvp_batch *) +
		(1UL << bits) * sizeof(struct kvp_batch *);
}

struct kvp_sched *kvp_init(void *mem, u32 nr_batches)
{
	struct kvp_sched *ps = mem;
	char *p = (char *)(ps + 1);
	u32 i, t;

	memset(ps, 0, sizeof(*ps));
	INIT_LIST_HEAD(&ps->draining);
	INIT_LIST_HEAD(&ps->live);
	ps->nr_batches = nr_batches;
	ps->other_max = nr_batches - KVP_DEMAND_RESERVE(nr_batches);
	ps->pool = (struct kvp_batch *)p;
	p += nr_batches * sizeof(struct kvp_batch);
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		struct kvp_tier *tier = &ps->tier[t];

		tier->work.a = (struct kvp_batch **)p;
		tier->work.which = KVP_HEAP_WORK;
		p += (nr_batches + 1) * sizeof(struct kvp_batch *);
		tier->age.a = (struct kvp_batch **)p;
		tier->age.which = KVP_HEAP_AGE;
		p += (nr_batches + 1) * sizeof(struct kvp_batch *);
	}
	ps->hash = (struct kvp_batch **)p;
	ps->hash_bits = kvp_hash_bits(nr_batches);
	memset(ps->hash, 0, (1UL << ps->hash_bits) * sizeof(*ps->hash));

	for (i = nr_batches; i-- > 0; ) {
		struct kvp_batch *b = &ps->pool[i];

		kvp_batch_reset(b, 0, KVB_TIER_NORMAL);
		b->state = KVP_BATCH_FREE;
		b->overflow = false;
		b->hnext = ps->free;
		ps->free = b;
	}
	for (t = 0; t < KVB_NR_TIERS; t++) {
		struct kvp_batch *b = &ps->fixed[t];

		kvp_batch_reset(b, ~0ULL, t);
		b->state = KVP_BATCH_OPEN;
		b->overflow = t != KVB_TIER_WRITE;
	}
	ps->wq = &ps->fixed[KVB_TIER_WRITE];
	return ps;
}

/* A request of @tier arrives: is demand about (kvp_limit())? */
static void kvp_note_arrival(struct kvp_sched *ps, enum kvb_tier tier,
			     u64 now)
{
	const struct kvp_tier *demand = &ps->tier[KVB_TIER_DEMAND];

	if (tier == KVB_TIER_WRITE)
		ps->write_ns = now;
	if (tier == KVB_TIER_DEMAND) {
		ps->demand_ns = now;
		WRITE_ONCE(ps->demand_about, true);
	} else if (ps->demand_about && !demand->queued && !demand->inflight &&
		   now > ps->demand_ns &&
		   now - ps->demand_ns > KVP_DEMAND_LINGER_NS) {
		WRITE_ONCE(ps->demand_about, false);
	}
}

/*
 * Is there a pool batch for a new batch of @tier? Demand may take the
 * whole pool, the other tiers all but the reserve. Short of one, the
 * oldest draining batch is reclaimed, unless that is demand's and the
 * new batch is not: demand's reserve is not to be taken back.
 */
static bool kvp_pool_room(struct kvp_sched *ps, enum kvb_tier tier)
{
	bool demand = tier == KVB_TIER_DEMAND;
	struct kvp_batch *b;

	if (ps->free && (demand || ps->other_live < ps->other_max))
		return true;
	b = kvp_oldest_draining(ps);
	if (!b || (!demand && b->tier == KVB_TIER_DEMAND))
		return false;
	kvp_batch_finish(ps, b);
	return true;
}

struct kvp_batch *kvp_get_batch(struct kvp_sched *ps, u64 key,
				enum kvb_tier tier, u64 now)
{
	struct kvp_batch *b;

	kvp_note_arrival(ps, tier, now);
	if (tier == KVB_TIER_WRITE)
		return ps->wq;
	kvp_reap(ps, now);

	for (b = ps->hash[kvp_hash(ps, key, tier)]; b; b = b->hnext)
		if (b->key == key && b->tier == tier)
			break;

	if (b && b->state == KVP_BATCH_OPEN)
		return b;
	if (b) {
		/* Draining: joined within the window, or finished now. */
		if (!kvp_window_passed(ps, b, now)) {
			list_del_init(&b->drain_node);
			b->state = KVP_BATCH_OPEN;
			return b;
		}
		kvp_batch_finish(ps, b);
	}

	if (!kvp_pool_room(ps, tier)) {
		ps->stats.overflow_rqs[tier]++;
		return &ps->fixed[tier];
	}
	b = ps->free;
	ps->free = b->hnext;
	if (tier != KVB_TIER_DEMAND)
		ps->other_live++;

	kvp_batch_reset(b, key, tier);
	b->state = KVP_BATCH_OPEN;
	b->open_ns = now;
	b->seq = ps->seq++;
	b->hnext = ps->hash[kvp_hash(ps, key, tier)];
	ps->hash[kvp_hash(ps, key, tier)] = b;
	list_add(&b->live_node, &ps->live);

	ps->stats.opened[tier]++;
	trace_kvbatch_batch_open(ps->dev, key, tier, b->seq);
	if (++ps->stats.live > ps->stats.live_max)
		ps->stats.live_max = ps->stats.live;
	return b;
}

/* ---- request events --------------------------------------------------- */

static void kvp_set_head(struct kvp_sched *ps, struct kvp_batch *b,
			 u64 head_ns)
{
	struct kvp_tier *tier = &ps->tier[b->tier];

	b->head_ns = head_ns;
	if (b == ps->wq)
		return;
	if (b->queued && b->heap_pos[KVP_HEAP_WORK] < 0) {
		kvp_heap_add(&tier->work, b);
		kvp_heap_add(&tier->age, b);
	} else if (!b->queued) {
		kvp_heap_del(&tier->work, b);
		kvp_heap_del(&tier->age, b);
	} else {
		kvp_heap_fix(&tier->work, b);
		kvp_heap_fix(&tier->age, b);
	}
}

/*
 * Move one request between the batch's queued and in-flight counts (each
 * delta is -1, 0 or +1), keeping the tier's and the scheduler's totals.
 */
static void kvp_count(struct kvp_sched *ps, struct kvp_batch *b, int dq,
		      int di)
{
	struct kvp_tier *tier = &ps->tier[b->tier];

	b->queued += dq;
	tier->queued += dq;
	ps->queued += dq;
	b->inflight += di;
	tier->inflight += di;
	ps->inflight += di;
}

void kvp_rq_queued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns)
{
	kvp_count(ps, b, 1, 0);
	if (b == ps->wq)
		ps->stats.deferred++;
	kvp_set_head(ps, b, head_ns);
}

void kvp_rq_unqueued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns,
		     u64 now)
{
	kvp_count(ps, b, -1, 0);
	/* A write merged away mid-burst shortens the burst with it. */
	if (b == ps->wq && ps->burst_left > b->queued)
		ps->burst_left = b->queued;
	kvp_set_head(ps, b, head_ns);
	if (!kvp_pending(b))
		kvp_batch_done(ps, b, now);
}

void kvp_rq_dispatched(struct kvp_sched *ps, struct kvp_batch *b,
		       u64 head_ns, u32 bytes, u64 now)
{
	kvp_count(ps, b, -1, 1);
	b->nr_rqs++;
	b->bytes += bytes;
	kvp_set_head(ps, b, head_ns);
	if (ps->p.limit_auto)
		kvp_depth_dispatched(&ps->depth, ps->inflight, now);
}

void kvp_rq_direct(struct kvp_sched *ps, struct kvp_batch *b, u32 bytes,
		   u64 now)
{
	kvp_count(ps, b, 0, 1);
	if (ps->p.limit_auto)
		kvp_depth_dispatched(&ps->depth, ps->inflight, now);
	b->nr_rqs++;
	b->bytes += bytes;
	/* As kvp_share_account() would: no tier is queued, none is owed. */
	memset(ps->credit, 0, sizeof(ps->credit));
	ps->stats.direct++;
	ps->stats.dispatched[kvp_direct_why(b->tier)]++;
	ps->stats.dispatched_tier[b->tier]++;
}

void kvp_rq_requeued(struct kvp_sched *ps, struct kvp_batch *b, u64 head_ns)
{
	kvp_count(ps, b, 1, -1);
	/*
	 * Its next dispatch counts it again; its bytes are passed with the
	 * first dispatch only.
	 */
	if (b->nr_rqs)
		b->nr_rqs--;
	kvp_set_head(ps, b, head_ns);
}

void kvp_rq_completed(struct kvp_sched *ps, struct kvp_batch *b, u64 now,
		      u64 lat_ns, u32 cl)
{
	struct kvp_depth *d = &ps->depth;
	u32 old = d->limit;

	kvp_count(ps, b, 0, -1);
	if (ps->p.limit_auto &&
	    kvp_depth_completed(d, now, lat_ns, cl, ps->inflight,
				ps->queued))
		trace_kvbatch_depth(ps->dev, old, d->limit,
				    d->base_ns[d->main]);
	if (b->queued)
		kvp_heap_fix(&ps->tier[b->tier].work, b);
	else if (!b->inflight)
		kvp_batch_done(ps, b, now);
}

void kvp_batch_head_changed(struct kvp_sched *ps, struct kvp_batch *b,
			    u64 head_ns)
{
	if (b->queued)
		kvp_set_head(ps, b, head_ns);
}

/* ---- the choice ------------------------------------------------------- */

static bool kvp_expired(const struct kvp_sched *ps, enum kvb_tier t,
			u64 head_ns, u64 now)
{
	return now > head_ns && now - head_ns >= ps->p.expire_ns[t];
}

static struct kvp_pick kvp_pick_batch(struct kvp_batch *b, enum kvb_reason why)
{
	struct kvp_pick pick = {
		.kind = KVP_PICK_BATCH, .why = why, .batch = b,
	};

	return pick;
}

/*
 * The held writes are all their throttled writers will send until some
 * complete (KVP_WRITE_STALL_NS). Arrivals are stamped on the host's
 * clock, which may be a plug's and a little behind @now.
 */
static bool kvp_writes_stalled(const struct kvp_sched *ps, u64 now)
{
	return ps->write_throttled && now > ps->write_ns &&
	       now - ps->write_ns >= KVP_WRITE_STALL_NS;
}

/*
 * A deferred write: the next of the burst in progress if @len is 0, else
 * the oldest, starting a burst of up to @len; @forced: one that finishes
 * ahead of demand.
 */
static struct kvp_pick kvp_pick_write(struct kvp_sched *ps,
				      enum kvb_reason why, u32 len,
				      bool forced)
{
	struct kvp_pick pick = {
		.kind = KVP_PICK_WRITE, .why = why, .batch = ps->wq,
		.burst_start = len != 0,
	};

	if (len) {
		ps->burst_forced = forced;
		ps->burst_left = min(ps->wq->queued, len);
		ps->stats.bursts++;
	}
	ps->burst_left--;
	return pick;
}

void kvp_params_from_tunables(struct kvp_params *p, const unsigned int *tun)
{
	memset(p, 0, sizeof(*p));
	p->expire_ns[KVB_TIER_DEMAND] =
		(u64)tun[KVB_DEMAND_EXPIRE_MS] * NSEC_PER_MSEC;
	p->expire_ns[KVB_TIER_NORMAL] =
		(u64)tun[KVB_NORMAL_EXPIRE_MS] * NSEC_PER_MSEC;
	p->expire_ns[KVB_TIER_PREFETCH] =
		(u64)tun[KVB_PREFETCH_EXPIRE_MS] * NSEC_PER_MSEC;
	p->expire_ns[KVB_TIER_WRITE] =
		(u64)tun[KVB_WRITE_EXPIRE_MS] * NSEC_PER_MSEC;
	p->write_batch = tun[KVB_WRITE_BATCH];
	p->write_defer_max = tun[KVB_WRITE_DEFER_MAX];
	p->window_ns = (u64)tun[KVB_BATCH_WINDOW_US] * NSEC_PER_USEC;
	p->max_inflight = tun[KVB_MAX_INFLIGHT];
	p->auto_keep_permille = tun[KVB_AUTO_KEEP_PERMILLE];
	p->share_pct[KVB_TIER_NORMAL] = tun[KVB_NORMAL_SHARE_PCT];
	p->share_pct[KVB_TIER_PREFETCH] = tun[KVB_PREFETCH_SHARE_PCT];
	p->share_pct[KVB_TIER_WRITE] = tun[KVB_WRITE_SHARE_PCT];
	p->hint_demand = tun[KVB_HINT_DEMAND];
}

void kvp_set_params(struct kvp_sched *ps, const struct kvp_params *p)
{
	bool was_auto = ps->p.limit_auto;

	ps->p = *p;
	if (!p->limit_auto)
		return;
	if (!was_auto)
		kvp_depth_init(&ps->depth, p->limit_ceiling);
	else if (p->limit_ceiling != ps->depth.max)
		kvp_depth_set_max(&ps->depth, p->limit_ceiling);
	kvp_depth_set_keep(&ps->depth, p->auto_keep_permille);
}

/*
 * Shares: while a background tier has requests queued, each dispatch earns
 * it share_pct hundredths of a request, and a tier owed a whole request is
 * served before demand. A backlogged tier thus gets at least share_pct
 * percent of the dispatches however much demand arrives; a tier that is
 * not waiting earns nothing, so it cannot bank credit and burst later.
 * Demand needs no share (it comes first). Deferred writes may earn one
 * too: held while demand is in flight, which under a steady recall load
 * is always, they otherwise go only at their expiry or once
 * write_defer_max of them wait, and a writer keeping fewer than that in
 * flight falls behind for as long as the recalls last.
 */
static void kvp_share_account(struct kvp_sched *ps, int served)
{
	int t;

	for (t = KVB_TIER_NORMAL; t < KVB_NR_TIERS; t++) {
		u32 *c = &ps->credit[t];

		/* Called before the pick leaves the queue: queued >= 1. */
		if (!ps->tier[t].queued || !ps->p.share_pct[t]) {
			*c = 0;
			continue;
		}
		*c += ps->p.share_pct[t];
		if (t == served)
			*c = *c > 100 ? *c - 100 : 0;
		else if (*c > 200)
			*c = 200;
	}
}

/*
 * The batch of tier @t to serve next, past expiry: demand's and
 * prefetch's with the least remaining work (a process's own recalls or
 * prefetch, ranked for batch completion); the normal tier's with the
 * oldest queued request, so that no batch, however small, passes
 * another's older request: batches there are anyone's (a hint takes no
 * privilege), and all of a tenant's unhinted reads are one.
 */
static struct kvp_batch *kvp_tier_next(const struct kvp_sched *ps,
				       enum kvb_tier t)
{
	const struct kvp_tier *tier = &ps->tier[t];

	if (t == KVB_TIER_NORMAL)
		return kvp_heap_top(&tier->age);
	return kvp_heap_top(&tier->work);
}

struct kvp_pick kvp_choose(struct kvp_sched *ps, u64 now)
{
	struct kvp_pick none = { .kind = KVP_PICK_NONE };
	struct kvp_batch *b, *oldest = NULL;
	struct kvp_batch *wq = ps->wq;
	struct kvp_batch *dq = NULL;
	struct kvp_pick pick;
	bool aged = false;
	int t;

	if (!ps->queued)
		return none;
	if (kvp_throttled(ps)) {
		ps->stats.throttled++;
		return none;
	}

	/*
	 * 1. Past a deadline: the oldest expired request, across tiers. One
	 * of another tier takes turns with demand, one dispatch each, while
	 * demand is queued: a backlog deeper than its expire time must not
	 * make the device a FIFO for the privileged recalls behind it, and
	 * it still advances at least every other dispatch.
	 */
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		b = kvp_heap_top(&ps->tier[t].age);
		if (b && kvp_expired(ps, t, b->head_ns, now) &&
		    (!oldest || b->head_ns < oldest->head_ns))
			oldest = b;
	}
	if (wq->queued && kvp_expired(ps, KVB_TIER_WRITE, wq->head_ns, now) &&
	    (!oldest || wq->head_ns < oldest->head_ns))
		oldest = wq;
	if (oldest && oldest->tier != KVB_TIER_DEMAND && ps->aged_turn) {
		/* Demand's turn: its own expired request first, if any. */
		dq = kvp_heap_top(&ps->tier[KVB_TIER_DEMAND].age);
		if (dq && kvp_expired(ps, KVB_TIER_DEMAND, dq->head_ns, now)) {
			pick = kvp_pick_batch(dq, KVB_WHY_EXPIRED);
			goto out;
		}
		dq = kvp_heap_top(&ps->tier[KVB_TIER_DEMAND].work);
	}
	if (dq) {
		pick = kvp_pick_batch(dq, KVB_WHY_TAIL);
		goto out;
	}
	if (oldest) {
		aged = oldest->tier != KVB_TIER_DEMAND;
		if (oldest == wq)
			pick = kvp_pick_write(ps, KVB_WHY_EXPIRED,
					      ps->p.write_batch, false);
		else
			pick = kvp_pick_batch(oldest, KVB_WHY_EXPIRED);
		goto out;
	}

	/*
	 * 2. A background tier owed its share (kvp_share_account). A write
	 * goes alone, or as the next of a burst in progress: a share spreads
	 * writes among the reads rather than bunching them ahead of a tail.
	 */
	for (t = KVB_TIER_NORMAL; t < KVB_NR_BATCH_TIERS; t++) {
		if (ps->credit[t] < 100)
			continue;
		b = kvp_tier_next(ps, t);
		if (b) {
			pick = kvp_pick_batch(b, KVB_WHY_SHARE);
			goto out;
		}
	}
	if (wq->queued && ps->credit[KVB_TIER_WRITE] >= 100) {
		pick = kvp_pick_write(ps, KVB_WHY_SHARE, ps->burst_left ? 0 : 1,
				      false);
		goto out;
	}

	/*
	 * 3. A full deferral queue forces a burst even ahead of queued
	 * demand, and the burst finishes: write_defer_max bounds the writes
	 * kvbatch holds, so that writeback (and the tags it holds) keeps
	 * moving under a recall flood. So do throttled writes no write has
	 * joined for KVP_WRITE_STALL_NS: their writers wait for them, and
	 * under writeback throttling the queue never fills.
	 */
	if (wq->queued && (wq->queued >= ps->p.write_defer_max ||
			   kvp_writes_stalled(ps, now) ||
			   (ps->burst_left && ps->burst_forced))) {
		pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST,
				      ps->burst_left ? 0 : ps->p.write_batch,
				      true);
		goto out;
	}

	/* 4. Demand: the batch with the least remaining work. */
	b = kvp_heap_top(&ps->tier[KVB_TIER_DEMAND].work);
	if (b) {
		pick = kvp_pick_batch(b, KVB_WHY_TAIL);
		goto out;
	}

	/*
	 * 5. Writes. A burst in progress finishes; otherwise writes wait
	 * while demand is in flight, and then take turns with the normal
	 * tier in arrival order: a burst starts when the oldest deferred
	 * write is older than every queued normal request. Not by remaining
	 * work: foreign readers keep a request or two queued each, less than
	 * any burst, and a device they saturate would release writes only
	 * at their expiry.
	 */
	if (wq->queued) {
		if (ps->burst_left) {
			pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST, 0,
					      false);
			goto out;
		}
		if (!ps->tier[KVB_TIER_DEMAND].inflight) {
			b = kvp_heap_top(&ps->tier[KVB_TIER_NORMAL].age);
			if (!b || wq->head_ns <= b->head_ns) {
				pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST,
						      ps->p.write_batch,
						      false);
				goto out;
			}
		}
	} else {
		ps->burst_left = 0;
	}

	/* 6. Everything else that is not prefetch, oldest first. */
	b = kvp_tier_next(ps, KVB_TIER_NORMAL);
	if (b) {
		pick = kvp_pick_batch(b, KVB_WHY_NORMAL);
		goto out;
	}

	/* 7. Prefetch, when nothing above is waiting. */
	b = kvp_heap_top(&ps->tier[KVB_TIER_PREFETCH].work);
	if (b) {
		pick = kvp_pick_batch(b, KVB_WHY_PREFETCH);
		goto out;
	}
	return none;
out:
	ps->aged_turn = aged && ps->tier[KVB_TIER_DEMAND].queued;
	kvp_share_account(ps, pick.batch->tier);
	ps->stats.dispatched[pick.why]++;
	ps->stats.dispatched_tier[pick.batch->tier]++;
	return pick;
}

bool kvp_writes_held(const struct kvp_sched *ps, u64 now, u64 *until)
{
	const struct kvp_batch *wq = ps->wq;

	/* What kvp_choose() checks, in its order, for writes alone. */
	if (!wq->queued || wq->queued != ps->queued || kvp_throttled(ps) ||
	    ps->burst_left || wq->queued >= ps->p.write_defer_max ||
	    ps->credit[KVB_TIER_WRITE] >= 100 ||
	    !ps->tier[KVB_TIER_DEMAND].inflight ||
	    kvp_expired(ps, KVB_TIER_WRITE, wq->head_ns, now) ||
	    kvp_writes_stalled(ps, now))
		return false;
	*until = wq->head_ns + ps->p.expire_ns[KVB_TIER_WRITE];
	if (ps->write_throttled)
		*until = min(*until, ps->write_ns + KVP_WRITE_STALL_NS);
	return true;
}
