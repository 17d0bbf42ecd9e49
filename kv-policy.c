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
 * which its oldest request goes first, oldest first across tiers.
 *
 * Writes that can wait are held while demand reads are queued or in
 * flight (flash serves reads slower while it writes), and then released
 * in bursts, sector-sorted by the host, so they still make progress.
 *
 * Batch metadata comes from a fixed pool: a workload inventing tags cannot
 * grow kernel memory. When the pool is exhausted, requests join their
 * tier's overflow batch and are served like any other batch.
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

/* The tag's layout is kv-ioprio.h's (the ioprio ABI). */
enum kvb_tier kvp_tier_of(u16 ioprio, bool write, bool sync)
{
	unsigned int class = KV_IOPRIO_CLASS(ioprio);

	/* Async writeback and idle writes can wait for demand to finish. */
	if (write && (!sync || class == KV_IOPRIO_CLASS_IDLE))
		return KVB_TIER_WRITE;
	if (class == KV_IOPRIO_CLASS_IDLE)
		return KVB_TIER_PREFETCH;
	if (class == KV_IOPRIO_CLASS_RT || KV_IOPRIO_HINT(ioprio))
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

	if (tier == KVB_TIER_DEMAND) {
		ps->demand_ns = now;
		WRITE_ONCE(ps->demand_about, true);
	} else if (ps->demand_about && !demand->queued && !demand->inflight &&
		   now > ps->demand_ns &&
		   now - ps->demand_ns > KVP_DEMAND_LINGER_NS) {
		WRITE_ONCE(ps->demand_about, false);
	}
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

	/* A new batch; reclaim the oldest draining one if the pool is dry. */
	if (!ps->free) {
		b = kvp_oldest_draining(ps);
		if (b)
			kvp_batch_finish(ps, b);
	}
	b = ps->free;
	if (!b) {
		ps->stats.overflow_rqs[tier]++;
		return &ps->fixed[tier];
	}
	ps->free = b->hnext;

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
		       u64 head_ns, u32 bytes)
{
	kvp_count(ps, b, -1, 1);
	b->nr_rqs++;
	b->bytes += bytes;
	kvp_set_head(ps, b, head_ns);
}

void kvp_rq_direct(struct kvp_sched *ps, struct kvp_batch *b, u32 bytes)
{
	kvp_count(ps, b, 0, 1);
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

void kvp_rq_completed(struct kvp_sched *ps, struct kvp_batch *b, u64 now)
{
	kvp_count(ps, b, 0, -1);
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

static struct kvp_pick kvp_pick_write(struct kvp_sched *ps,
				      enum kvb_reason why, bool start)
{
	struct kvp_pick pick = {
		.kind = KVP_PICK_WRITE, .why = why, .batch = ps->wq,
		.burst_start = start,
	};

	if (start) {
		ps->burst_forced = why == KVB_WHY_WRITE_BURST &&
				   ps->wq->queued >= ps->p.write_defer_max;
		ps->burst_left = ps->wq->queued < ps->p.write_batch ?
				 ps->wq->queued : ps->p.write_batch;
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
	p->share_pct[KVB_TIER_NORMAL] = tun[KVB_NORMAL_SHARE_PCT];
	p->share_pct[KVB_TIER_PREFETCH] = tun[KVB_PREFETCH_SHARE_PCT];
}

/*
 * Shares: while a background tier has requests queued, each dispatch earns
 * it share_pct hundredths of a request, and a tier owed a whole request is
 * served before demand. A backlogged tier thus gets at least share_pct
 * percent of the dispatches however much demand arrives; a tier that is
 * not waiting earns nothing, so it cannot bank credit and burst later.
 * Demand needs no share (it comes first) and writes are bounded by
 * write_defer_max instead.
 */
static void kvp_share_account(struct kvp_sched *ps, int served)
{
	int t;

	for (t = KVB_TIER_NORMAL; t < KVB_NR_BATCH_TIERS; t++) {
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

struct kvp_pick kvp_choose(struct kvp_sched *ps, u64 now)
{
	struct kvp_pick none = { .kind = KVP_PICK_NONE };
	struct kvp_batch *b, *oldest = NULL;
	struct kvp_batch *wq = ps->wq;
	struct kvp_pick pick;
	int t;

	if (!ps->queued)
		return none;
	if (kvp_throttled(ps)) {
		ps->stats.throttled++;
		return none;
	}

	/* 1. Past a deadline: the oldest expired request, across tiers. */
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		b = kvp_heap_top(&ps->tier[t].age);
		if (b && kvp_expired(ps, t, b->head_ns, now) &&
		    (!oldest || b->head_ns < oldest->head_ns))
			oldest = b;
	}
	if (wq->queued && kvp_expired(ps, KVB_TIER_WRITE, wq->head_ns, now) &&
	    (!oldest || wq->head_ns < oldest->head_ns)) {
		pick = kvp_pick_write(ps, KVB_WHY_EXPIRED, true);
		goto out;
	}
	if (oldest) {
		pick = kvp_pick_batch(oldest, KVB_WHY_EXPIRED);
		goto out;
	}

	/* 2. A background tier owed its share (kvp_share_account). */
	for (t = KVB_TIER_NORMAL; t < KVB_NR_BATCH_TIERS; t++) {
		if (ps->credit[t] < 100)
			continue;
		b = kvp_heap_top(&ps->tier[t].work);
		if (b) {
			pick = kvp_pick_batch(b, KVB_WHY_SHARE);
			goto out;
		}
	}

	/*
	 * 3. A full deferral queue forces a burst even ahead of queued
	 * demand, and the burst finishes: write_defer_max bounds the writes
	 * kvbatch holds, so that writeback (and the tags it holds) keeps
	 * moving under a recall flood.
	 */
	if (wq->queued && (wq->queued >= ps->p.write_defer_max ||
			   (ps->burst_left && ps->burst_forced))) {
		pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST, !ps->burst_left);
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
			pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST, false);
			goto out;
		}
		if (!ps->tier[KVB_TIER_DEMAND].inflight) {
			b = kvp_heap_top(&ps->tier[KVB_TIER_NORMAL].age);
			if (!b || wq->head_ns <= b->head_ns) {
				pick = kvp_pick_write(ps, KVB_WHY_WRITE_BURST,
						      true);
				goto out;
			}
		}
	} else {
		ps->burst_left = 0;
	}

	/* 6. Everything else that is not prefetch. */
	b = kvp_heap_top(&ps->tier[KVB_TIER_NORMAL].work);
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
	    !ps->tier[KVB_TIER_DEMAND].inflight ||
	    kvp_expired(ps, KVB_TIER_WRITE, wq->head_ns, now))
		return false;
	*until = wq->head_ns + ps->p.expire_ns[KVB_TIER_WRITE];
	return true;
}

/* ---- the depth controller (automatic max_inflight) --------------------- */

void kvp_depth_init(struct kvp_depth *d, u32 max)
{
	memset(d, 0, sizeof(*d));
	/*
	 * Start at the ceiling: a limit too low costs throughput at once,
	 * one too high costs only order until the first trials lower it.
	 */
	d->max = max > KVP_DEPTH_MIN ? max : KVP_DEPTH_MIN;
	d->limit = d->max;
}

void kvp_depth_set_max(struct kvp_depth *d, u32 max)
{
	u32 old = d->max;

	d->max = max > KVP_DEPTH_MIN ? max : KVP_DEPTH_MIN;
	/* A limit at the old ceiling found nothing to trim: it follows. */
	if (d->limit > d->max || d->limit == old)
		d->limit = d->max;
	/*
	 * So does the limit a running trial goes back to if it fails: it
	 * would otherwise restore the old ceiling, or a limit above the new
	 * one.
	 */
	if (d->trial != KVP_TRIAL_NONE &&
	    (d->trial_from > d->max || d->trial_from == old))
		d->trial_from = d->max;
}

/* Busy time of the current window up to @now. */
static u64 kvp_depth_busy(const struct kvp_depth *d, u64 now)
{
	u64 busy = d->busy_ns;

	if (d->busy_since && now > d->busy_since)
		busy += now - d->busy_since;
	return busy;
}

static void kvp_depth_window_reset(struct kvp_depth *d)
{
	d->busy_ns = 0;
	d->lat_ns = 0;
	d->min_ns = 0;
	d->done = 0;
	d->bound = 0;
	d->peak = 0;
}

/*
 * A new window from @now, with @inflight requests in the device: busy
 * from now if any, idle from now if none.
 */
static void kvp_depth_window_restart(struct kvp_depth *d, u64 now,
				     u32 inflight)
{
	kvp_depth_window_reset(d);
	d->busy_since = inflight ? (now ? now : 1) : 0;
	if (!inflight)
		d->idle_since = now;
}

/*
 * The first request after an idle period opens a busy period. Only busy
 * time counts towards a window, so bursts separated by think time are
 * measured as what they are; a window left half full for longer than a
 * second describes a device state that may be gone, and starts afresh.
 */
void kvp_depth_dispatched(struct kvp_depth *d, u32 inflight, u64 now)
{
	if (inflight > d->peak)
		d->peak = inflight;
	if (inflight != 1 || d->busy_since)
		return;
	if (d->idle_since && now > d->idle_since &&
	    now - d->idle_since > KVP_DEPTH_STALE_NS && d->done) {
		kvp_depth_window_reset(d);
		d->restarts++;
	}
	d->busy_since = now ? now : 1;
}

/* Start a trial at @limit, remembering where it came from. */
static void kvp_depth_try(struct kvp_depth *d, enum kvp_depth_trial trial,
			  u32 limit, u64 rate)
{
	d->trial = trial;
	d->trial_from = d->limit;
	d->trial_rate = rate;
	d->trial_mean = d->ref_mean;
	d->limit = limit;
	/*
	 * The requests in flight now were dispatched under the old limit
	 * and leave first: the trial's window starts after them.
	 */
	d->settle = d->peak > d->trial_from ? d->trial_from : d->peak;
}

/*
 * A trial's verdict after its window: keep its limit, or undo it and wait
 * longer (4, 8, ... windows) before the next trial of its kind. @rate and
 * @mean, the window's throughput and service time, become the reference
 * for later trials when it is kept; an undo passes 0 for them.
 */
static void kvp_depth_verdict(struct kvp_depth *d, bool keep, u64 rate,
			      u64 mean, u64 *kept, u32 *wait, u32 *backoff)
{
	d->trial = KVP_TRIAL_NONE;
	if (keep) {
		*backoff = 0;
		(*kept)++;
		d->ref_rate = rate;
		d->ref_mean = mean;
		return;
	}
	d->limit = d->trial_from;
	d->reverts++;
	*backoff = *backoff ? *backoff * 2 : 1;
	if (*backoff > KVP_DEPTH_BACKOFF_MAX)
		*backoff = KVP_DEPTH_BACKOFF_MAX;
	*wait = 4 * *backoff;
}

/*
 * One window's verdict. @rate is completions per second of busy time,
 * @mean the mean service time. The limit bound when it held work back for
 * at least a quarter of the completions, and was full for three quarters.
 */
static void kvp_depth_decide(struct kvp_depth *d, u64 rate, u64 mean)
{
	bool bound = d->bound * 4 >= d->done;
	bool full = d->bound * 4 >= d->done * 3;
	u32 peak = d->peak;
	u64 base = d->base_ns;
	bool idle_units, grow;
	u32 step, floor, from, driven;
	u64 need, used;

	/*
	 * A trial ends after one window: keep it or undo it. It is compared
	 * with the smoothed throughput at the limit it left, so one lucky or
	 * unlucky window does not decide it alone.
	 */
	if (d->trial == KVP_TRIAL_UP) {
		/* Deeper must buy at least 1/32 more throughput. */
		kvp_depth_verdict(d, rate * 32 >= d->trial_rate * 33, rate,
				  mean, &d->grows, &d->wait_up, &d->backoff_up);
		return;
	}
	if (d->trial == KVP_TRIAL_DOWN) {
		/*
		 * Shallower must show that depth was hurting: a service time
		 * at least 1/16 shorter (the requests no longer wait inside
		 * the device, they wait in kvbatch, where order applies), at
		 * a cost of at most 1/64 of the throughput. A device whose
		 * service time does not depend on depth (free parallel
		 * units, or a host that is slower than the device) keeps its
		 * depth: a hold there only adds a queue run to the wait.
		 *
		 * With the limit full all the window, Little's law gives the
		 * throughput as limit / mean service time, from every
		 * request's own time; counting completions over the window
		 * is off by up to a generation of requests in flight when
		 * they complete in waves.
		 *
		 * And only a trial whose limit held work back for a third of
		 * its window's completions or more shows anything. Where it
		 * held less (the load fell, or the limit was in force only
		 * while demand was about), the window's throughput and service
		 * time are the load's, which moves from window to window by
		 * more than these margins: a deep recall load's rate at one
		 * limit can vary by a factor of two or more between windows,
		 * and a trial that held back up to nearly a third of its
		 * completions could pass on the load's movement alone,
		 * halving the depth at half the throughput the deeper limit
		 * had shown a few windows before. A rate-throttled device
		 * whose load sits under the trial's limit but for its pulses
		 * holds back a little more than a third, and its service time
		 * does fall with the depth: the bar lies between the two. Not
		 * keeping a trial costs only order, until one that binds.
		 */
		if (d->bound * 3 < d->done) {
			kvp_depth_verdict(d, false, 0, 0, &d->shrinks,
					  &d->wait_down, &d->backoff_down);
			return;
		}
		if (full)
			rate = div64_u64((u64)d->limit * NSEC_PER_SEC,
					 mean ? mean : 1);
		kvp_depth_verdict(d, rate * 64 >= d->trial_rate * 63 &&
				  mean * 16 <= d->trial_mean * 15, rate, mean,
				  &d->shrinks, &d->wait_down, &d->backoff_down);
		return;
	}
	/*
	 * The first window starts with the device empty: its throughput
	 * counts the fill, up to a service time with nothing completing
	 * (a host-bound device's queue takes that long to build up). As
	 * the reference, it would let the first shallower trial pass at
	 * less than the device did, and every later trial is measured
	 * against what that one kept.
	 */
	if (d->windows == 1)
		return;
	d->ref_rate = d->windows > 2 ? (3 * d->ref_rate + rate) / 4 : rate;
	d->ref_mean = d->windows > 2 ? (3 * d->ref_mean + mean) / 4 : mean;
	rate = d->ref_rate;
	if (d->wait_up)
		d->wait_up--;
	if (d->wait_down)
		d->wait_down--;

	/*
	 * The service time is near its unloaded value while the limit binds:
	 * the device seems to have idle parallelism, so only a deeper trial
	 * makes sense, and a bold one; unless the last deeper trial just
	 * showed otherwise (the unloaded value may be a loaded one, if the
	 * device was never seen idle).
	 */
	idle_units = bound && mean * 4 < base * 5 && !d->wait_up;
	/*
	 * Nor when the limit was full nearly all the window: the throughput
	 * was the limit's (Little's law), and only a deeper trial shows
	 * whether the device would do more. A shallower one would keep the
	 * throughput only if the service time fell in proportion to the
	 * depth, and costs what it holds back until its verdict. A limit
	 * kept while the host was the bottleneck (its own delays shrinking
	 * the service time with the depth) can bind like this once the host
	 * is fast again.
	 */
	grow = idle_units || (full && !d->wait_up && d->limit < d->max);

	/*
	 * Try a quarter less depth: kept if the throughput holds, so the
	 * limit settles at the shallowest depth that keeps the device as busy
	 * as a deeper one, and the rest of the queue stays in kvbatch, where
	 * its order applies. Never below what Little's law says the measured
	 * throughput needs at the fastest service time seen.
	 */
	if (!d->wait_down && !grow) {
		/*
		 * From the depth actually used: under a limit that did not
		 * bind, a trial a quarter below the limit would change
		 * nothing and show nothing. Nor would one a quarter below
		 * the peak when bursts make the peak: there, the depth used
		 * on average (Little's law) is where a shallower limit
		 * starts to hold requests back and can show that it helps.
		 * But never below half the depth the device was driven at:
		 * the average depth of bursty work can sit far under what
		 * each burst needs, and a trial there is lost throughput
		 * even when it is turned back.
		 */
		driven = peak && peak < d->limit ? peak : d->limit;
		used = div64_u64(rate * mean, NSEC_PER_SEC) + 1;
		from = used < driven ? used : driven;
		need = div64_u64(rate * d->floor_ns, NSEC_PER_SEC) + 1;
		floor = need < d->max ? need : d->max;
		if (floor < KVP_DEPTH_MIN)
			floor = KVP_DEPTH_MIN;
		if (from * 3 / 4 > floor)
			floor = from * 3 / 4;
		if (driven / 2 > floor)
			floor = driven / 2;
		if (floor < d->limit) {
			kvp_depth_try(d, KVP_TRIAL_DOWN, floor, rate);
			return;
		}
	}

	/*
	 * Work waits for the limit: try more depth, kept only if it buys
	 * throughput. A device whose blocks hash onto dies keeps gaining past
	 * the point where its service time starts to rise; one with free
	 * units stops gaining at its parallelism.
	 */
	if (bound && !d->wait_up && d->limit < d->max) {
		step = grow ? d->limit / 2 : d->limit / 4;
		if (step < 2)
			step = 2;
		kvp_depth_try(d, KVP_TRIAL_UP, d->limit + step < d->max ?
			      d->limit + step : d->max, rate);
	}
}

/*
 * The mean service time of a shallower trial so far is no shorter than
 * before it; after a full window's completions, where the noise of the
 * mean is half that of a quarter window, not even 1/32 shorter. A trial
 * that helps shortens it by about what it took off the depth; on a device
 * of constant service time a failing one can still read slightly shorter
 * (the host's own delays shrink with the load).
 */
static bool kvp_depth_trial_failing(const struct kvp_depth *d)
{
	u64 mean = div64_u64(d->lat_ns, d->done);

	if (d->done >= KVP_DEPTH_WINDOW_RQS)
		return mean * 32 > d->trial_mean * 31;
	return mean >= d->trial_mean;
}

/*
 * A window closes once it has KVP_DEPTH_WINDOW_RQS completions over at
 * least KVP_DEPTH_WINDOW_NS of busy time: enough completions that its
 * throughput is not noise, on fast devices too; a trial's window, which
 * decides more, takes four times as many. A slow device closes a window
 * after KVP_DEPTH_WINDOW_MAX_NS with fewer.
 */
bool kvp_depth_completed(struct kvp_depth *d, u64 now, u64 lat_ns,
			 u32 inflight, bool bound)
{
	u32 old = d->limit;
	u64 busy, rate, mean;

	if (d->settle) {
		d->settle--;
		if (d->settle && inflight)
			return false;
		d->settle = 0;
		kvp_depth_window_restart(d, now, inflight);
		return false;
	}
	if (lat_ns) {
		if (!d->min_ns || lat_ns < d->min_ns)
			d->min_ns = lat_ns;
		d->lat_ns += lat_ns;
		d->done++;
		d->bound += bound;
	}
	/*
	 * A shallower trial that holds work back and leaves the service
	 * time where it was has failed, and it costs while it lasts: the
	 * device does less, and what the limit holds back waits in kvbatch,
	 * the lowest tiers longest (a trial begun under a light load can
	 * meet a heavy one far below its depth). Do not wait for its four
	 * windows: a quarter window of its own completions, and at least a
	 * limit's worth (the first of them waited behind the deeper queue),
	 * bound as a window counts it (a quarter of them found work held
	 * back), with a mean service time no shorter than before, decides.
	 * One that helps shortens the service time by about what it took
	 * off the depth, well clear of the noise of that many completions.
	 */
	if (d->trial == KVP_TRIAL_DOWN && d->done >= KVP_DEPTH_WINDOW_RQS / 4 &&
	    d->done >= d->limit && d->bound * 4 >= d->done &&
	    kvp_depth_trial_failing(d)) {
		kvp_depth_verdict(d, false, 0, 0, &d->shrinks, &d->wait_down,
				  &d->backoff_down);
		d->windows++;
		kvp_depth_window_restart(d, now, inflight);
		return d->limit != old;
	}
	busy = kvp_depth_busy(d, now);
	if (!inflight) {
		/* The device went idle: close the busy period. */
		d->busy_ns = busy;
		d->busy_since = 0;
		d->idle_since = now;
	}
	if (!(d->done >= (d->trial ? 4 : 1) * KVP_DEPTH_WINDOW_RQS &&
	      busy >= KVP_DEPTH_WINDOW_NS) &&
	    !(d->done >= KVP_DEPTH_WINDOW_MIN &&
	      busy >= KVP_DEPTH_WINDOW_MAX_NS))
		return false;

	rate = div64_u64((u64)d->done * NSEC_PER_SEC, busy);
	mean = div64_u64(d->lat_ns, d->done);
	d->windows++;
	if (!d->base_ns)
		d->base_ns = mean;
	if (!d->floor_ns || d->min_ns < d->floor_ns)
		d->floor_ns = d->min_ns;
	else
		d->floor_ns += (d->min_ns - d->floor_ns) / 256;
	kvp_depth_decide(d, rate, mean);

	/*
	 * The unloaded service time: the lowest window mean, which rises
	 * slowly when the device itself becomes slower. Windows where the
	 * limit did not bind see the load the device is offered; they
	 * follow the mean faster.
	 */
	if (mean < d->base_ns)
		d->base_ns = mean;
	else if (d->bound * 4 < d->done)
		d->base_ns += (mean - d->base_ns) / 8;
	else
		d->base_ns += (mean - d->base_ns) / 256;

	kvp_depth_window_reset(d);
	if (d->busy_since)
		d->busy_since = now;
	return d->limit != old;
}

