// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the kvbatch policy core (kv-policy.c), run in userspace on
 * the device model of kvsim-core.c. Output is TAP; the last line is the
 * pass/fail count, and the exit status is 0 only if every test passed.
 *
 * The expectations are derived, not recorded: orderings that follow from
 * the policy on hand-built traces (the three built-in situations, tail,
 * prefetch and writes: a recall's tail behind interleaved reads, demand
 * against prefetch, writes during a recall), equalities that hold for any
 * order (total work), and invariants of the core's data structures,
 * checked after every event.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kv-rand.h"
#include "kvsim-core.h"
#include "tap.h"

/* Randomized traces in test f (override with -DKVT_RANDOM_TRACES=n). */
#ifndef KVT_RANDOM_TRACES
#define KVT_RANDOM_TRACES	200
#endif

/* Traces with requeues and merges in test j (-DKVT_MERGE_TRACES=n). */
#ifndef KVT_MERGE_TRACES
#define KVT_MERGE_TRACES	60
#endif

#define US	1000ULL
#define MS	1000000ULL

/* A failure detail: shares the per-test budget of EXPECT messages. */
#define FAIL_DIAG(...)							\
	do {								\
		if (t_msgs++ < 8)					\
			diag(__VA_ARGS__);				\
	} while (0)

/* ---- traces ----------------------------------------------------------- */

#define IOP_RT		KV_IOPRIO(KV_IOPRIO_CLASS_RT, 0, 4)
#define IOP_BE		KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 4)
#define IOP_BE_HINT	KV_IOPRIO(KV_IOPRIO_CLASS_BE, 1, 4)
#define IOP_IDLE	KV_IOPRIO(KV_IOPRIO_CLASS_IDLE, 0, 7)

/* A sync read of 8 sectors on @die. */
static struct kvs_req rd(u64 t, u64 key, u16 ioprio, int die, u64 svc)
{
	struct kvs_req rq = {
		.arrival = t, .key = key, .ioprio = ioprio, .sync = true,
		.sector = (u64)die * 1024, .nr_sectors = 8, .service = svc,
		.die = die,
	};

	return rq;
}

/* An async (deferrable) write of 8 sectors on @die. */
static struct kvs_req wr(u64 t, u64 key, u64 sector, int die, u64 svc)
{
	struct kvs_req rq = {
		.arrival = t, .key = key, .ioprio = IOP_BE, .write = true,
		.sync = false, .sector = sector, .nr_sectors = 8,
		.service = svc, .die = die,
	};

	return rq;
}

static struct kvp_params default_params(void)
{
	struct kvp_params p = {
		.expire_ns = {
			[KVB_TIER_DEMAND]	= 100 * MS,
			[KVB_TIER_NORMAL]	= 500 * MS,
			[KVB_TIER_PREFETCH]	= 1000 * MS,
			[KVB_TIER_WRITE]	= 5000 * MS,
		},
		.window_ns = 0,
		.write_batch = 16,
		.write_defer_max = 256,
		.max_inflight = 0,
	};

	return p;
}

static struct kvs_config base_config(enum kvs_sched sched)
{
	struct kvs_config cfg = {
		.dies = 3, .qdepth = 3, .chunk = 1024, .sched = sched,
		.nr_batches = 64, .params = default_params(),
	};

	return cfg;
}

/*
 * The three classic situations (tail, prefetch, writes) tag a recall BE
 * with a hint, as an unprivileged engine would: demand only on a host
 * whose administrator made it so (hint_demand).
 */
static struct kvs_config seed_config(void)
{
	struct kvs_config cfg = base_config(KVS_FIFO);

	cfg.params.hint_demand = true;
	return cfg;
}

/* ---- invariant checker ------------------------------------------------ */

struct inv_ctx {
	bool		bad;
	char		msg[256];
	u64		events;
};

/* Stops the checker at the first broken invariant, the useful one. */
#define INV(cond, ...)							\
	do {								\
		if (!(cond)) {						\
			snprintf(msg, len, __VA_ARGS__);		\
			return false;					\
		}							\
	} while (0)

/* kvp_before() of kv-policy.c, restated from the header's comments. */
static bool inv_before(int which, const struct kvp_batch *a,
		       const struct kvp_batch *b)
{
	if (which == 0) {
		if (kvp_pending(a) != kvp_pending(b))
			return kvp_pending(a) < kvp_pending(b);
	} else if (a->head_ns != b->head_ns) {
		return a->head_ns < b->head_ns;
	}
	return (s32)(a->seq - b->seq) < 0;
}

/* A batch's queue: length, links back to the batch, head arrival. */
static bool inv_batch_list(const struct kvp_batch *b, char *msg, size_t len)
{
	const struct kvs_req *rq;
	u32 n = 0;

	list_for_each_entry(rq, &b->rqs, node) {
		INV(rq->batch == b, "rq %u on a foreign batch list", rq->id);
		INV(rq->queued, "rq %u on a list but not queued", rq->id);
		n++;
	}
	INV(n == b->queued, "batch key %llu: queued %u but %u on its list",
	    (unsigned long long)b->key, b->queued, n);
	if (n) {
		rq = list_first_entry(&b->rqs, struct kvs_req, node);
		INV(b->head_ns == rq->arrival,
		    "batch key %llu: head_ns %llu, first rq arrived %llu",
		    (unsigned long long)b->key,
		    (unsigned long long)b->head_ns,
		    (unsigned long long)rq->arrival);
	}
	return true;
}

/* In both heaps of its tier iff something is queued. */
static bool inv_batch_heaps(const struct kvp_sched *ps,
			    const struct kvp_batch *b, char *msg, size_t len)
{
	const struct kvp_tier *tier = &ps->tier[b->tier];
	const struct kvp_heap *h[2] = { &tier->work, &tier->age };
	int w;

	for (w = 0; w < 2; w++) {
		int pos = b->heap_pos[w];

		if (!b->queued) {
			INV(pos == -1, "batch key %llu: idle but heap_pos[%d]=%d",
			    (unsigned long long)b->key, w, pos);
			continue;
		}
		INV(pos >= 0 && (u32)pos < h[w]->n && h[w]->a[pos] == b,
		    "batch key %llu tier %u: queued %u, heap_pos[%d]=%d n=%u",
		    (unsigned long long)b->key, b->tier, b->queued, w, pos,
		    h[w]->n);
	}
	return true;
}

static bool inv_check(const struct kvs_sim *s, char *msg, size_t len)
{
	const struct kvp_sched *ps = s->ps;
	u32 tq[KVB_NR_TIERS] = { 0 }, ti[KVB_NR_TIERS] = { 0 };
	u32 live = 0, draining = 0, nfree = 0, nhash = 0, i, t, w;
	const struct kvp_batch *b, *prev;
	const struct list_head *n;

	/* Heaps: order, positions, membership. */
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		const struct kvp_heap *h[2] = { &ps->tier[t].work,
						&ps->tier[t].age };

		for (w = 0; w < 2; w++) {
			INV(h[w]->n <= ps->nr_batches + 1,
			    "tier %u heap %u: n=%u", t, w, h[w]->n);
			for (i = 0; i < h[w]->n; i++) {
				b = h[w]->a[i];
				INV(b, "tier %u heap %u: hole at %u", t, w, i);
				INV(b->heap_pos[w] == (int)i,
				    "tier %u heap %u: a[%u] has heap_pos %d",
				    t, w, i, b->heap_pos[w]);
				INV(b->tier == t && b->queued,
				    "tier %u heap %u: a[%u] tier %u queued %u",
				    t, w, i, b->tier, b->queued);
				INV(b == &ps->fixed[t] ||
				    (b >= ps->pool &&
				     b < ps->pool + ps->nr_batches &&
				     b->state == KVP_BATCH_OPEN),
				    "tier %u heap %u: a[%u] not an open batch",
				    t, w, i);
				INV(!i || !inv_before(w, b, h[w]->a[(i - 1) / 2]),
				    "tier %u heap %u: a[%u] before its parent",
				    t, w, i);
			}
		}
	}

	/* Pool batches. */
	for (i = 0; i < ps->nr_batches; i++) {
		b = &ps->pool[i];
		if (b->state == KVP_BATCH_FREE) {
			INV(!b->queued && !b->inflight &&
			    b->heap_pos[0] == -1 && b->heap_pos[1] == -1,
			    "free batch %u still in use", i);
			continue;
		}
		live++;
		INV(!b->overflow && b->tier < KVB_NR_BATCH_TIERS,
		    "pool batch %u: tier %u overflow %d", i, b->tier,
		    b->overflow);
		if (b->state == KVP_BATCH_DRAINING) {
			draining++;
			INV(!kvp_pending(b), "draining batch %u has %u pending",
			    i, kvp_pending(b));
		} else {
			INV(b->state == KVP_BATCH_OPEN, "batch %u: state %u",
			    i, b->state);
			/* OPEN means "has queued or in-flight requests". */
			INV(kvp_pending(b), "open batch %u (key %llu) is empty",
			    i, (unsigned long long)b->key);
		}
		if (!inv_batch_list(b, msg, len) ||
		    !inv_batch_heaps(ps, b, msg, len))
			return false;
		tq[b->tier] += b->queued;
		ti[b->tier] += b->inflight;
	}

	/* Overflow batches and the write queue. */
	for (t = 0; t < KVB_NR_TIERS; t++) {
		b = &ps->fixed[t];
		if (!inv_batch_list(b, msg, len))
			return false;
		if (t < KVB_NR_BATCH_TIERS && !inv_batch_heaps(ps, b, msg, len))
			return false;
		tq[t] += b->queued;
		ti[t] += b->inflight;
	}
	INV(ps->wq == &ps->fixed[KVB_TIER_WRITE], "wq moved");

	/* Counters: tier = sum over its batches, global = sum of tiers. */
	{
		u32 sq = 0, si = 0;

		for (t = 0; t < KVB_NR_TIERS; t++) {
			INV(ps->tier[t].queued == tq[t],
			    "tier %u: queued %u, batches hold %u", t,
			    ps->tier[t].queued, tq[t]);
			INV(ps->tier[t].inflight == ti[t],
			    "tier %u: inflight %u, batches hold %u", t,
			    ps->tier[t].inflight, ti[t]);
			INV(ps->tier[t].queued == s->nr_tier_queued[t] &&
			    ps->tier[t].inflight == s->nr_tier_device[t],
			    "tier %u: core %u/%u, host %u/%u", t,
			    ps->tier[t].queued, ps->tier[t].inflight,
			    s->nr_tier_queued[t], s->nr_tier_device[t]);
			sq += tq[t];
			si += ti[t];
		}
		INV(ps->queued == sq && ps->inflight == si,
		    "global %u/%u, tiers %u/%u", ps->queued, ps->inflight,
		    sq, si);
		INV(ps->queued == s->queued && ps->inflight == s->in_device,
		    "core %u/%u, host %u/%u", ps->queued, ps->inflight,
		    s->queued, s->in_device);
	}

	/* Live batches, free list, draining list, hash. */
	INV(ps->stats.live == live, "stats.live %u, %u open or draining",
	    ps->stats.live, live);
	{
		const struct kvp_batch *l;
		u32 nlive = 0;

		for (prev = NULL, n = ps->live.next; n != &ps->live;
		     n = n->next) {
			l = list_entry(n, struct kvp_batch, live_node);
			INV(n->next->prev == n, "live list back link broken");
			INV(l->state != KVP_BATCH_FREE && !l->overflow,
			    "free or overflow batch on the live list");
			INV(++nlive <= ps->nr_batches, "live list loops");
			if (nlive > ps->nr_batches)
				break;
			prev = l;
		}
		INV(nlive == live, "live list holds %u, %u open or draining",
		    nlive, live);
	}
	for (b = ps->free; b; b = b->hnext) {
		INV(b->state == KVP_BATCH_FREE, "non-free batch on free list");
		INV(++nfree <= ps->nr_batches, "free list loops");
	}
	INV(nfree + live == ps->nr_batches, "free %u + live %u != pool %u",
	    nfree, live, ps->nr_batches);
	prev = NULL;
	i = 0;
	for (n = ps->draining.next; n != &ps->draining; n = n->next) {
		b = list_entry(n, struct kvp_batch, drain_node);
		INV(n->next->prev == n, "drain list back link");
		INV(b->state == KVP_BATCH_DRAINING, "open batch on drain list");
		INV(!prev || prev->last_ns <= b->last_ns,
		    "drain list out of completion order");
		INV(++i <= ps->nr_batches, "drain list loops");
		if (i > ps->nr_batches)
			break;
		prev = b;
	}
	INV(i == draining, "drain list holds %u of %u draining", i, draining);
	for (i = 0; i < (1U << ps->hash_bits); i++) {
		for (b = ps->hash[i]; b; b = b->hnext) {
			INV(b >= ps->pool && b < ps->pool + ps->nr_batches &&
			    b->state != KVP_BATCH_FREE,
			    "hash holds a free or fixed batch");
			INV(++nhash <= ps->nr_batches, "hash chain loops");
		}
	}
	INV(nhash == live, "hash holds %u of %u live batches", nhash, live);
	return true;
}

static void inv_hook(struct kvs_sim *s, enum kvs_event ev, struct kvs_req *rq,
		     void *arg)
{
	struct inv_ctx *c = arg;
	char msg[200];

	(void)ev;
	(void)rq;
	c->events++;
	if (c->bad || inv_check(s, msg, sizeof(msg)))
		return;
	c->bad = true;
	snprintf(c->msg, sizeof(c->msg), "t=%llu event %d: %s",
		 (unsigned long long)s->now, ev, msg);
}

/* ---- running one trace under the three schedulers --------------------- */

#define MAX_RQS		8192

struct run3 {
	struct kvs_sim	sim[KVS_NR_SCHEDS];
	struct kvs_req	*rq[KVS_NR_SCHEDS];
	u32		n;
	int		rc[KVS_NR_SCHEDS];
	struct inv_ctx	inv;
};

/* Run @trace under FIFO, PRIO and KVBATCH (invariants checked). */
static void run3(struct run3 *r, const struct kvs_req *trace, u32 n,
		 const struct kvs_config *cfg)
{
	int k;

	memset(&r->inv, 0, sizeof(r->inv));
	r->n = n;
	for (k = 0; k < KVS_NR_SCHEDS; k++) {
		struct kvs_config c = *cfg;

		c.sched = k;
		/* Hooks look at the core: KVBATCH only. */
		if (k != KVS_KVBATCH) {
			c.hook = NULL;
		} else if (!c.hook) {
			c.hook = inv_hook;
			c.hook_arg = &r->inv;
		}
		r->rq[k] = malloc(n * sizeof(*trace));
		memcpy(r->rq[k], trace, n * sizeof(*trace));
		r->rc[k] = kvs_run(&r->sim[k], &c, r->rq[k], n);
	}
}

static void run3_free(struct run3 *r)
{
	int k;

	for (k = 0; k < KVS_NR_SCHEDS; k++) {
		kvs_free(&r->sim[k]);
		free(r->rq[k]);
	}
}

/*
 * Every request dispatched once and completed once, its timeline in order;
 * the same per-die busy time (the total work) under every scheduler, equal
 * to the sum of the service times.
 */
static bool check_conservation(struct run3 *r, const struct kvs_req *trace)
{
	u64 per_die[KVS_MAX_DIES] = { 0 };
	u32 k, i, d;
	bool ok = true;

	for (i = 0; i < r->n; i++)
		per_die[r->rq[KVS_FIFO][i].sdie] += trace[i].service;
	for (k = 0; k < KVS_NR_SCHEDS; k++) {
		const struct kvs_sim *s = &r->sim[k];

		EXPECT(r->rc[k] == 0, "%s: run did not finish",
		       kvs_sched_names[k]);
		if (r->rc[k])
			ok = false;
		for (i = 0; i < r->n; i++) {
			const struct kvs_req *q = &r->rq[k][i];
			bool good = q->nr_dispatch == 1 &&
				    q->nr_complete == 1 &&
				    q->dispatch >= q->arrival &&
				    q->start >= q->dispatch &&
				    q->complete == q->start + q->service;

			EXPECT(good, "%s: rq %u dispatched %u completed %u "
			       "(arr %llu disp %llu start %llu end %llu)",
			       kvs_sched_names[k], i, q->nr_dispatch,
			       q->nr_complete,
			       (unsigned long long)q->arrival,
			       (unsigned long long)q->dispatch,
			       (unsigned long long)q->start,
			       (unsigned long long)q->complete);
			if (!good)
				ok = false;
		}
		for (d = 0; d < s->cfg.dies; d++) {
			EXPECT(s->dies[d].busy_ns == per_die[d],
			       "%s: die %u busy %llu, work %llu",
			       kvs_sched_names[k], d,
			       (unsigned long long)s->dies[d].busy_ns,
			       (unsigned long long)per_die[d]);
			if (s->dies[d].busy_ns != per_die[d])
				ok = false;
		}
	}
	EXPECT(!r->inv.bad, "invariant: %s", r->inv.msg);
	return ok && !r->inv.bad;
}

/*
 * Starvation bound of the expire rule, for a KVBATCH run without
 * requeues or merges. Once request r (tier t, arrival a) has waited
 * expire[t], its batch head is expired and at most a old, so every pick
 * returns an expired request that arrived no later than a (step 1 of
 * kvp_choose() comes first and takes the oldest expired head, across
 * tiers and the write queue), except that while demand is queued, an
 * expired request of another tier takes turns with it: a demand request
 * follows each. So:
 *   (1) order: no request that arrived after a is dispatched after a + E
 *       and before r, but, if r is not demand, one demand request after
 *       each request older than r dispatched in that time, and one more;
 *   (2) time: choose only says NONE to an expired request when
 *       max_inflight is reached, and a full or throttled device completes
 *       something within the longest service time S, so r waits at most
 *       E + (k + 1 + p) * S, where k counts the requests that arrived no
 *       later than a and were still undispatched at a + E, and p the
 *       demand requests that passed r so.
 * Returns the number of violations; *maxwait gets the worst wait per tier.
 */
static u32 check_bounds(const struct kvs_sim *s, const struct kvs_req *rqs,
			u32 n, u64 *maxwait)
{
	const u64 *exp = s->cfg.params.expire_ns;
	u64 smax = 0;
	u32 i, j, bad = 0;

	for (i = 0; i < n; i++)
		if (rqs[i].service > smax)
			smax = rqs[i].service;
	for (i = 0; i < n; i++) {
		const struct kvs_req *r = &rqs[i];
		u64 deadline = r->arrival + exp[r->tier];
		u64 wait = r->dispatch - r->arrival;
		u32 k = 0, before = 0, passed = 0;

		if (maxwait && wait > maxwait[r->tier])
			maxwait[r->tier] = wait;
		if (r->dispatch <= deadline)
			continue;
		for (j = 0; j < n; j++) {
			const struct kvs_req *q = &rqs[j];

			if (j == i || q->dispatch < deadline)
				continue;
			if (q->arrival <= r->arrival) {
				k++;
				before += q->dseq < r->dseq;
				continue;
			}
			if (q->dseq > r->dseq)
				continue;
			/* Newer, dispatched after r expired, before r. */
			if (r->tier != KVB_TIER_DEMAND &&
			    q->tier == KVB_TIER_DEMAND) {
				passed++;
				continue;
			}
			bad++;
			FAIL_DIAG("rq %u (tier %u, arrived %llu) expired at "
				  "%llu, passed by rq %u (tier %u, arrived "
				  "%llu) at %llu", i, r->tier,
				  (unsigned long long)r->arrival,
				  (unsigned long long)deadline, j, q->tier,
				  (unsigned long long)q->arrival,
				  (unsigned long long)q->dispatch);
		}
		if (passed > before + 1) {
			bad++;
			FAIL_DIAG("rq %u (tier %u) expired at %llu, passed by "
				  "%u demand requests, %u older went before "
				  "it", i, r->tier,
				  (unsigned long long)deadline, passed,
				  before);
		}
		if (wait > exp[r->tier] + (k + 1 + passed) * smax) {
			bad++;
			FAIL_DIAG("rq %u tier %u waited %llu > %llu + %u * %llu",
				  i, r->tier, (unsigned long long)wait,
				  (unsigned long long)exp[r->tier],
				  k + 1 + passed, (unsigned long long)smax);
		}
	}
	return bad;
}

static void report_batches(const char *name, struct run3 *r, const u64 *keys,
			   const char *const *labels, int nkeys)
{
	int k, i;

	for (i = 0; i < nkeys; i++) {
		char line[160];
		int off;

		off = snprintf(line, sizeof(line), "%s: batch %-10s", name,
			       labels[i]);
		for (k = 0; k < KVS_NR_SCHEDS; k++) {
			struct kvs_batch_time bt = kvs_batch(&r->sim[k],
							     keys[i]);

			off += snprintf(line + off, sizeof(line) - off,
					" %s=%lluus", kvs_sched_names[k],
					(unsigned long long)(bt.last_complete /
							     US));
		}
		diag("%s", line);
	}
}

static u64 done_at(struct run3 *r, int k, u64 key)
{
	return kvs_batch(&r->sim[k], key).last_complete;
}

/*
 * EXPECT_VS_FIFO(r, key, op, what): batch key completes under kvbatch op
 * (<, <=) under FIFO; what names the batch in the failure message.
 */
#define EXPECT_VS_FIFO(r, key, op, what)				\
	EXPECT(done_at(r, KVS_KVBATCH, key) op done_at(r, KVS_FIFO, key), \
	       "%s: kvbatch %llu, fifo %llu", what,			\
	       (unsigned long long)done_at(r, KVS_KVBATCH, key),		\
	       (unsigned long long)done_at(r, KVS_FIFO, key))

/* ---- a. tail blocking from interleaved reads --------------------------- */

/*
 * Three dies, 100us reads, room for three requests in the device. Foreign
 * BE reads are queued first on every die; two recall batches follow, A
 * (RT, three reads) and B (BE with a hint, two reads). FIFO puts all the
 * foreign reads ahead of both tails.
 */
static bool test_seed_tail(void)
{
	enum { FOREIGN = 100, A = 1, B = 2 };
	struct kvs_req t[] = {
		rd(0, FOREIGN, IOP_BE, 0, 100 * US),
		rd(0, FOREIGN, IOP_BE, 1, 100 * US),
		rd(0, FOREIGN, IOP_BE, 2, 100 * US),
		rd(0, FOREIGN, IOP_BE, 0, 100 * US),
		rd(0, FOREIGN, IOP_BE, 1, 100 * US),
		rd(0, FOREIGN, IOP_BE, 2, 100 * US),
		rd(10 * US, A, IOP_RT, 0, 100 * US),
		rd(10 * US, A, IOP_RT, 1, 100 * US),
		rd(10 * US, A, IOP_RT, 2, 100 * US),
		rd(20 * US, B, IOP_BE_HINT, 0, 100 * US),
		rd(20 * US, B, IOP_BE_HINT, 2, 100 * US),
		rd(30 * US, FOREIGN, IOP_BE, 1, 100 * US),
	};
	static const u64 keys[] = { A, B, FOREIGN };
	static const char *const labels[] = { "A(3,RT)", "B(2,hint)",
					      "foreign" };
	struct kvs_config cfg = seed_config();
	struct run3 r;
	u32 n = ARRAY_SIZE(t);

	run3(&r, t, n, &cfg);
	check_conservation(&r, t);
	report_batches("tail", &r, keys, labels, 3);

	/* B is the smaller demand batch: the critical tail. */
	EXPECT_VS_FIFO(&r, B, <, "B");
	EXPECT_VS_FIFO(&r, A, <=, "A");
	/* Smallest first: B's tail before A's. */
	EXPECT(done_at(&r, KVS_KVBATCH, B) < done_at(&r, KVS_KVBATCH, A),
	       "kvbatch finished A before the smaller B");
	/*
	 * Not asserted: the last completion. The device queue is FIFO per
	 * die and kvbatch does not know the dies, so a reordering can leave
	 * a die idle behind a full device queue; the work is the same, the
	 * makespan need not be.
	 */
	diag("tail: last completion fifo=%lluus prio=%lluus kvbatch=%lluus",
	     (unsigned long long)(r.sim[KVS_FIFO].end / US),
	     (unsigned long long)(r.sim[KVS_PRIO].end / US),
	     (unsigned long long)(r.sim[KVS_KVBATCH].end / US));
	run3_free(&r);
	return true;
}

/* ---- b. demand vs prefetch --------------------------------------------- */

static bool test_seed_prefetch(void)
{
	enum { PF = 50, D = 1 };
	struct kvs_req t[12];
	static const u64 keys[] = { D, PF };
	static const char *const labels[] = { "demand", "prefetch" };
	struct kvs_config cfg = seed_config();
	struct run3 r;
	u32 n = 0, i, k, last_demand = 0;

	/* Nine IDLE prefetch reads, three per die, then a 3-read recall. */
	for (i = 0; i < 9; i++)
		t[n++] = rd(0, PF, IOP_IDLE, i % 3, 100 * US);
	for (i = 0; i < 3; i++)
		t[n++] = rd(5 * US, D, IOP_BE_HINT, i, 100 * US);

	run3(&r, t, n, &cfg);
	check_conservation(&r, t);
	report_batches("prefetch", &r, keys, labels, 2);

	EXPECT_VS_FIFO(&r, D, <, "demand");
	for (k = 0; k < KVS_NR_SCHEDS; k++)
		EXPECT(done_at(&r, k, PF) != KVS_NO_TIME,
		       "%s: prefetch never completed", kvs_sched_names[k]);
	/* Once demand is queued, prefetch waits for all of it. */
	for (i = 0; i < n; i++) {
		const struct kvs_req *q = &r.rq[KVS_KVBATCH][i];

		if (q->key == D && q->dseq > last_demand)
			last_demand = q->dseq;
	}
	for (i = 0; i < n; i++) {
		const struct kvs_req *q = &r.rq[KVS_KVBATCH][i];

		if (q->key == PF && q->dispatch >= 5 * US)
			EXPECT(q->dseq > last_demand,
			       "prefetch rq %u dispatched at %llu ahead of "
			       "demand", i, (unsigned long long)q->dispatch);
	}
	run3_free(&r);
	return true;
}

/* ---- c. write (GC) timing during a decode-critical recall --------------- */

struct wctx {
	struct inv_ctx	inv;
	u32		writes_during_demand;	/* dispatched while pending */
	u32		unforced;		/* ... and not forced */
	bool		burst_forced;
};

/*
 * At each deferred write's dispatch: was a demand read queued or in the
 * device, and if so did expire or write_defer_max force it? A burst that
 * started forced carries that to its continuation.
 */
static void write_hook(struct kvs_sim *s, enum kvs_event ev, struct kvs_req *rq,
		       void *arg)
{
	struct wctx *c = arg;
	const struct kvp_sched *ps = s->ps;
	u32 demand;

	inv_hook(s, ev, rq, &c->inv);
	if (ev != KVS_EV_DISPATCH || rq->tier != KVB_TIER_WRITE)
		return;
	if (rq->burst_start)
		/* wq->queued was one more when kvp_choose() decided. */
		c->burst_forced = rq->why == KVB_WHY_EXPIRED ||
				  ps->wq->queued + 1 >= ps->p.write_defer_max;
	demand = s->nr_tier_queued[KVB_TIER_DEMAND] +
		 s->nr_tier_device[KVB_TIER_DEMAND];
	if (!demand)
		return;
	c->writes_during_demand++;
	if (!c->burst_forced)
		c->unforced++;
}

static u32 seed_gc_trace(struct kvs_req *t)
{
	u32 n = 0, i;

	/* GC: three 300us programs, one per die, queued at the recall. */
	for (i = 0; i < 3; i++)
		t[n++] = wr(0, 900, i * 1024 + 64, i, 300 * US);
	/* The recall: six 100us reads, two per die. */
	for (i = 0; i < 6; i++)
		t[n++] = rd(0, 1, IOP_BE_HINT, i % 3, 100 * US);
	return n;
}

static bool test_seed_gc(void)
{
	static const u64 keys[] = { 1, 900 };
	static const char *const labels[] = { "demand", "writes" };
	struct kvs_config cfg = seed_config();
	struct kvs_req t[16];
	struct wctx c = { 0 };
	struct run3 r;
	u64 demand_done;
	u32 n = seed_gc_trace(t), i;

	cfg.qdepth = 4;
	cfg.hook = write_hook;
	cfg.hook_arg = &c;
	run3(&r, t, n, &cfg);
	r.inv = c.inv;
	check_conservation(&r, t);
	report_batches("writes", &r, keys, labels, 2);

	demand_done = done_at(&r, KVS_KVBATCH, 1);
	/*
	 * The forced burst goes ahead of the queued demand (that is what
	 * write_defer_max is for): demand may lose its lead, never fall
	 * behind FIFO.
	 */
	EXPECT_VS_FIFO(&r, 1, <=, "demand");
	EXPECT(c.writes_during_demand == 0,
	       "%u writes dispatched while demand was pending",
	       c.writes_during_demand);
	for (i = 0; i < n; i++) {
		const struct kvs_req *q = &r.rq[KVS_KVBATCH][i];

		if (q->write)
			EXPECT(q->dispatch >= demand_done &&
			       q->complete != KVS_NO_TIME,
			       "write %u dispatched %llu, demand done %llu", i,
			       (unsigned long long)q->dispatch,
			       (unsigned long long)demand_done);
	}
	run3_free(&r);
	return true;
}

/* write_defer_max = 2 < three deferred writes: released while demand runs. */
static bool test_seed_gc_defer_max(void)
{
	struct kvs_config cfg = seed_config();
	struct kvs_req t[16];
	struct wctx c = { 0 };
	struct run3 r;
	u64 demand_done, first_write = KVS_NO_TIME;
	u32 n = seed_gc_trace(t), i;

	cfg.qdepth = 4;
	cfg.params.write_defer_max = 2;
	cfg.hook = write_hook;
	cfg.hook_arg = &c;
	run3(&r, t, n, &cfg);
	r.inv = c.inv;
	check_conservation(&r, t);

	demand_done = done_at(&r, KVS_KVBATCH, 1);
	for (i = 0; i < n; i++)
		if (r.rq[KVS_KVBATCH][i].write &&
		    r.rq[KVS_KVBATCH][i].dispatch < first_write)
			first_write = r.rq[KVS_KVBATCH][i].dispatch;
	diag("writes write_defer_max=2: demand done %lluus, first write "
	     "dispatched %lluus, %u writes dispatched during demand",
	     (unsigned long long)(demand_done / US),
	     (unsigned long long)(first_write / US), c.writes_during_demand);
	EXPECT(c.writes_during_demand > 0 && first_write < demand_done,
	       "no early release (first write %llu, demand done %llu)",
	       (unsigned long long)first_write,
	       (unsigned long long)demand_done);
	EXPECT(c.unforced == 0, "%u writes released during demand unforced",
	       c.unforced);
	/*
	 * The forced burst goes ahead of the queued demand (that is what
	 * write_defer_max is for): demand may lose its lead, never fall
	 * behind FIFO.
	 */
	EXPECT_VS_FIFO(&r, 1, <=, "demand");
	run3_free(&r);
	return true;
}

/* ---- d. least remaining work ------------------------------------------- */

static bool test_least_work(void)
{
	enum { BIG = 1, SMALL = 2 };
	struct kvs_config cfg = base_config(KVS_FIFO);
	struct kvs_req t[8];
	struct run3 r;
	u32 n = 0, i;

	/* One slot in the device, so every choice is the policy's. */
	cfg.dies = 2;
	cfg.qdepth = 1;
	for (i = 0; i < 5; i++)
		t[n++] = rd(0, BIG, IOP_RT, i % 2, 100 * US);
	for (i = 0; i < 2; i++)
		t[n++] = rd(1 * US, SMALL, IOP_RT, i % 2, 100 * US);

	run3(&r, t, n, &cfg);
	check_conservation(&r, t);
	diag("least-work: kvbatch small=%lluus big=%lluus, fifo small=%lluus "
	     "big=%lluus",
	     (unsigned long long)(done_at(&r, KVS_KVBATCH, SMALL) / US),
	     (unsigned long long)(done_at(&r, KVS_KVBATCH, BIG) / US),
	     (unsigned long long)(done_at(&r, KVS_FIFO, SMALL) / US),
	     (unsigned long long)(done_at(&r, KVS_FIFO, BIG) / US));
	EXPECT(done_at(&r, KVS_KVBATCH, SMALL) < done_at(&r, KVS_KVBATCH, BIG),
	       "the batch with less remaining work did not finish first");
	/* FIFO serves the older big batch first: the order is the policy's. */
	EXPECT(done_at(&r, KVS_FIFO, SMALL) > done_at(&r, KVS_FIFO, BIG),
	       "trace does not discriminate");
	/* The small batch arrived behind one big read: served right after. */
	EXPECT(done_at(&r, KVS_KVBATCH, SMALL) == 300 * US,
	       "small batch done at %llu, expected 300us",
	       (unsigned long long)done_at(&r, KVS_KVBATCH, SMALL));
	run3_free(&r);
	return true;
}

/* ---- e. starvation bounds ---------------------------------------------- */

/* Fixed seeds: identical traces everywhere. */
static u64 rng_state;

static u32 rnd(void)
{
	return kv_rand32(&rng_state);
}

static u32 rnd_in(u32 lo, u32 hi)
{
	return kv_rand_in(&rng_state, lo, hi);
}

static bool test_starvation(void)
{
	static struct kvs_req t[MAX_RQS];
	struct kvs_config cfg = base_config(KVS_KVBATCH);
	struct inv_ctx inv = { 0 };
	u64 maxwait[KVB_NR_TIERS] = { 0 }, ts;
	struct kvs_sim s;
	u32 n = 0, i, key = 1, bad, tier_n[KVB_NR_TIERS] = { 0 };
	int rc;

	rng_state = 0x5eed0e;
	/*
	 * 50 ms of recall batches of three 50us reads every 45us: 111% of
	 * three dies. Demand alone would keep the device busy forever; a
	 * normal read, a prefetch read and a deferred write arrive every ms.
	 */
	for (ts = 0; ts < 50 * MS; ts += 45 * US, key++)
		for (i = 0; i < 3; i++)
			t[n++] = rd(ts, key, key & 1 ? IOP_RT : IOP_BE_HINT,
				    rnd_in(0, 2), 50 * US);
	/* Both kinds of recall tag are demand here. */
	cfg.params.hint_demand = true;
	for (ts = 100 * US; ts < 50 * MS; ts += 1 * MS) {
		t[n++] = rd(ts, 100000 + ts / MS, IOP_BE, rnd_in(0, 2),
			    50 * US);
		t[n++] = rd(ts + 10 * US, 200000, IOP_IDLE, rnd_in(0, 2),
			    50 * US);
		t[n++] = wr(ts + 20 * US, 300000, rnd_in(0, 3071), -1,
			    100 * US);
	}
	cfg.qdepth = 4;
	cfg.nr_batches = 256;
	cfg.params.expire_ns[KVB_TIER_DEMAND] = 20 * MS;
	cfg.params.expire_ns[KVB_TIER_NORMAL] = 2 * MS;
	cfg.params.expire_ns[KVB_TIER_PREFETCH] = 4 * MS;
	cfg.params.expire_ns[KVB_TIER_WRITE] = 5 * MS;
	cfg.hook = inv_hook;
	cfg.hook_arg = &inv;
	rc = kvs_run(&s, &cfg, t, n);
	EXPECT(rc == 0, "run did not finish");
	EXPECT(!inv.bad, "invariant: %s", inv.msg);
	for (i = 0; i < n; i++) {
		EXPECT(t[i].nr_dispatch == 1 && t[i].nr_complete == 1,
		       "rq %u dispatched %u completed %u", i,
		       t[i].nr_dispatch, t[i].nr_complete);
		tier_n[t[i].tier]++;
	}
	bad = check_bounds(&s, t, n, maxwait);
	EXPECT(bad == 0, "%u requests beyond the expire bound", bad);
	/* The flood must really have held the others back to their expiry. */
	EXPECT(maxwait[KVB_TIER_NORMAL] >= cfg.params.expire_ns[KVB_TIER_NORMAL],
	       "normal reads never waited for expiry: not a flood");
	EXPECT(s.ps->stats.dispatched[KVB_WHY_EXPIRED] > 0, "nothing expired");
	diag("flood: %u requests (%u demand, %u normal, %u prefetch, %u write),"
	     " %llu expired picks", n, tier_n[0], tier_n[1], tier_n[2],
	     tier_n[3],
	     (unsigned long long)s.ps->stats.dispatched[KVB_WHY_EXPIRED]);
	for (i = 0; i < KVB_NR_TIERS; i++)
		diag("flood: max wait %-8s %6lluus (expire %lluus)",
		     kvb_tier_names[i], (unsigned long long)(maxwait[i] / US),
		     (unsigned long long)(cfg.params.expire_ns[i] / US));
	kvs_free(&s);
	return true;
}

/* ---- f. randomized traces ---------------------------------------------- */

static const u16 rnd_prios[] = {
	IOP_RT, IOP_BE, IOP_BE_HINT, IOP_IDLE, KV_IOPRIO(0, 0, 0),
	KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 0),
};

/* A random trace and configuration; returns the number of requests. */
static u32 random_trace(struct kvs_req *t, struct kvs_config *cfg, u32 max)
{
	u32 n = rnd_in(20, max), i;
	u64 ts = 0;

	*cfg = base_config(KVS_FIFO);
	cfg->dies = rnd_in(1, 4);
	cfg->qdepth = rnd_in(1, 8);
	cfg->chunk = 64;
	cfg->nr_batches = rnd_in(1, 6);
	cfg->params.max_inflight = rnd() % 3 ? 0 : rnd_in(1, cfg->qdepth + 1);
	cfg->params.window_ns = rnd() % 2 ? 0 : rnd_in(1, 300) * US;
	cfg->params.expire_ns[KVB_TIER_DEMAND] = rnd_in(200, 2000) * US;
	cfg->params.expire_ns[KVB_TIER_NORMAL] = rnd_in(500, 4000) * US;
	cfg->params.expire_ns[KVB_TIER_PREFETCH] = rnd_in(1000, 8000) * US;
	cfg->params.expire_ns[KVB_TIER_WRITE] = rnd_in(1000, 8000) * US;
	cfg->params.write_batch = rnd_in(1, 8);
	cfg->params.write_defer_max = rnd_in(1, 40);
	/* Shares go after expiry: the bounds hold whatever they are. */
	for (i = KVB_TIER_NORMAL; i < KVB_NR_TIERS; i++)
		cfg->params.share_pct[i] = rnd() % 2 ? 0 : rnd_in(1, 50);

	for (i = 0; i < n; i++) {
		struct kvs_req *q = &t[i];

		memset(q, 0, sizeof(*q));
		/* Bursts: 40% of requests arrive with the previous one. */
		if (rnd() % 10 >= 4)
			ts += rnd_in(1, 100) * US;
		q->arrival = ts;
		q->key = rnd_in(0, 11);
		q->ioprio = rnd_prios[rnd() % 6];
		q->write = rnd() % 4 == 0;
		q->sync = !q->write || rnd() % 10 < 3;
		q->sector = rnd_in(0, 1023);
		q->nr_sectors = rnd_in(1, 64);
		q->service = rnd_in(5, 200) * US + rnd_in(0, 999);
		q->die = rnd() % 2 ? -1 : (int)rnd_in(0, cfg->dies - 1);
	}
	return n;
}

static bool test_random(void)
{
	static struct kvs_req t[400];
	u32 seed, bad_runs = 0, events = 0, overflow = 0, throttled = 0;
	u32 wshares = 0;

	for (seed = 1; seed <= KVT_RANDOM_TRACES; seed++) {
		struct kvs_config cfg;
		struct run3 r;
		const struct kvs_sim *kv;
		u32 n, bad, k, tier;
		bool ok;

		rng_state = 0x9e3779b97f4a7c15ULL * seed;
		n = random_trace(t, &cfg, 300);
		run3(&r, t, n, &cfg);
		kv = &r.sim[KVS_KVBATCH];
		ok = check_conservation(&r, t);
		bad = check_bounds(kv, r.rq[KVS_KVBATCH], n, NULL);
		EXPECT(!bad, "seed %u: %u requests beyond the expire bound",
		       seed, bad);
		if (cfg.params.max_inflight)
			EXPECT(kv->max_in_device <= cfg.params.max_inflight,
			       "seed %u: %u in device, max_inflight %u", seed,
			       kv->max_in_device, cfg.params.max_inflight);
		/* Drained: every batch closes once its window is flushed. */
		if (!r.rc[KVS_KVBATCH]) {
			kvp_flush_draining(kv->ps);
			EXPECT(!kv->ps->queued && !kv->ps->inflight &&
			       !kv->ps->stats.live,
			       "seed %u: not drained (q %u f %u live %u)", seed,
			       kv->ps->queued, kv->ps->inflight,
			       kv->ps->stats.live);
			for (tier = 0; tier < KVB_NR_BATCH_TIERS; tier++)
				EXPECT(kv->ps->stats.opened[tier] ==
				       kv->ps->stats.closed[tier],
				       "seed %u tier %u: opened %llu closed "
				       "%llu", seed, tier,
				       (unsigned long long)
				       kv->ps->stats.opened[tier],
				       (unsigned long long)
				       kv->ps->stats.closed[tier]);
			for (tier = 0; tier < KVB_NR_BATCH_TIERS; tier++)
				overflow += kv->ps->stats.overflow_rqs[tier] > 0;
			throttled += kv->ps->stats.throttled > 0;
		}
		for (k = 0; k < n; k++)
			if (r.rq[KVS_KVBATCH][k].tier == KVB_TIER_WRITE &&
			    r.rq[KVS_KVBATCH][k].why == KVB_WHY_SHARE) {
				wshares++;
				break;
			}
		for (k = 0; k < KVS_NR_SCHEDS; k++)
			if (r.rc[k])
				ok = false;
		if (!ok || bad) {
			bad_runs++;
			FAIL_DIAG("seed %u failed (n=%u dies=%u qd=%u pool=%u"
				  " max_inflight=%u window=%llu)", seed, n,
				  cfg.dies, cfg.qdepth, cfg.nr_batches,
				  cfg.params.max_inflight,
				  (unsigned long long)cfg.params.window_ns);
		}
		events += r.inv.events;
		run3_free(&r);
	}
	diag("random: %u traces, %u invariant checks, overflow in %u "
	     "tier-runs, throttled in %u runs, write shares in %u",
	     KVT_RANDOM_TRACES, events, overflow, throttled, wshares);
	/* The generator must reach the corners it is meant to. */
	EXPECT(overflow > 0 && throttled > 0 && wshares > 0,
	       "random traces too tame");
	return bad_runs == 0;
}

/* ---- g. overflow ------------------------------------------------------- */

static bool test_overflow(void)
{
	struct kvs_config cfg = base_config(KVS_KVBATCH);
	struct inv_ctx inv = { 0 };
	struct kvs_req t[16];
	struct kvs_sim s;
	u32 n = 0, i, key;

	/* Five recall batches of two reads at once; a pool of two. */
	for (i = 0; i < 2; i++)
		for (key = 1; key <= 5; key++)
			t[n++] = rd(0, key, IOP_RT, (key + i) % 2,
				    100 * US);
	/* Later, once everything is done, two more batches. */
	for (key = 6; key <= 7; key++)
		t[n++] = rd(10 * MS, key, IOP_RT, key % 2, 100 * US);
	cfg.dies = 2;
	cfg.qdepth = 1;
	cfg.nr_batches = 2;
	cfg.hook = inv_hook;
	cfg.hook_arg = &inv;
	EXPECT(kvs_run(&s, &cfg, t, n) == 0, "run did not finish");
	EXPECT(!inv.bad, "invariant: %s", inv.msg);
	for (i = 0; i < n; i++)
		EXPECT(t[i].nr_complete == 1, "rq %u not completed", i);
	/* Keys 1 and 2 take the pool; 3..5 overflow with both their reads. */
	EXPECT(s.ps->stats.overflow_rqs[KVB_TIER_DEMAND] == 6,
	       "overflow_rqs %llu, expected 6",
	       (unsigned long long)s.ps->stats.overflow_rqs[KVB_TIER_DEMAND]);
	/* The pool was reused: four batches opened from two slots. */
	EXPECT(s.ps->stats.opened[KVB_TIER_DEMAND] == 4 &&
	       s.ps->stats.closed[KVB_TIER_DEMAND] == 4,
	       "opened %llu closed %llu, expected 4/4",
	       (unsigned long long)s.ps->stats.opened[KVB_TIER_DEMAND],
	       (unsigned long long)s.ps->stats.closed[KVB_TIER_DEMAND]);
	EXPECT(s.ps->stats.live_max == 2, "live_max %u", s.ps->stats.live_max);
	kvs_free(&s);
	return true;
}

/* ---- h. batch lifetime ------------------------------------------------- */

/* The documented bucket: 0 for < 1us, else i with 2^(i-1) <= us < 2^i. */
static unsigned int ref_bucket(u64 ns)
{
	u64 us = ns / 1000;
	unsigned int i = 0;

	if (!us)
		return 0;
	while (i < KVB_HIST_BUCKETS - 1 && !(us < (1ULL << i)))
		i++;
	return i;
}

static bool test_lifetime(void)
{
	static const u64 probes[] = { 0, 999, 1000, 1999, 2000, 3999, 4000,
				      250 * US, 1 * MS, 1ULL << 62 };
	struct kvs_config cfg = base_config(KVS_KVBATCH);
	struct inv_ctx inv = { 0 };
	struct kvs_req t[3];
	struct kvs_sim s;
	struct kvs_batch_time bt;
	u64 dur;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(probes); i++)
		EXPECT(kvp_hist_bucket(probes[i]) == ref_bucket(probes[i]),
		       "kvp_hist_bucket(%llu) = %u, expected %u",
		       (unsigned long long)probes[i],
		       kvp_hist_bucket(probes[i]), ref_bucket(probes[i]));

	t[0] = rd(0, 7, IOP_RT, 0, 100 * US);
	t[1] = rd(0, 7, IOP_RT, 1, 150 * US);
	t[2] = rd(20 * US, 7, IOP_RT, 2, 250 * US);
	cfg.hook = inv_hook;
	cfg.hook_arg = &inv;
	EXPECT(kvs_run(&s, &cfg, t, 3) == 0, "run did not finish");
	EXPECT(!inv.bad, "invariant: %s", inv.msg);
	bt = kvs_batch(&s, 7);
	dur = bt.last_complete - bt.first_arrival;
	EXPECT(dur == 270 * US, "batch took %llu", (unsigned long long)dur);
	EXPECT(s.ps->stats.opened[KVB_TIER_DEMAND] == 1 &&
	       s.ps->stats.closed[KVB_TIER_DEMAND] == 1 && !s.ps->stats.live,
	       "opened %llu closed %llu live %u",
	       (unsigned long long)s.ps->stats.opened[KVB_TIER_DEMAND],
	       (unsigned long long)s.ps->stats.closed[KVB_TIER_DEMAND],
	       s.ps->stats.live);
	EXPECT(s.ps->stats.hist[KVB_TIER_DEMAND][ref_bucket(dur)] == 1,
	       "270us not in bucket %u", ref_bucket(dur));
	EXPECT(s.ps->stats.batch_ns_max[KVB_TIER_DEMAND] == dur &&
	       s.ps->stats.batch_ns_sum[KVB_TIER_DEMAND] == dur,
	       "batch_ns max %llu sum %llu, expected %llu",
	       (unsigned long long)s.ps->stats.batch_ns_max[KVB_TIER_DEMAND],
	       (unsigned long long)s.ps->stats.batch_ns_sum[KVB_TIER_DEMAND],
	       (unsigned long long)dur);
	kvs_free(&s);
	return true;
}

static bool test_window(void)
{
	struct kvs_config cfg = base_config(KVS_KVBATCH);
	const struct kvp_stats *st;
	struct inv_ctx inv = { 0 };
	struct kvs_req t[4];
	struct kvs_sim s;
	u32 live;

	/*
	 * Window 100us. r0 completes at 100us; r1 arrives 50us later and
	 * joins (done 250us); r2 arrives 90us after that and joins (done
	 * 440us); r3 arrives 160us after that and opens a new batch.
	 */
	cfg.params.window_ns = 100 * US;
	t[0] = rd(0, 7, IOP_RT, 0, 100 * US);
	t[1] = rd(150 * US, 7, IOP_RT, 1, 100 * US);
	t[2] = rd(340 * US, 7, IOP_RT, 2, 100 * US);
	t[3] = rd(600 * US, 7, IOP_RT, 0, 100 * US);
	cfg.hook = inv_hook;
	cfg.hook_arg = &inv;
	EXPECT(kvs_run(&s, &cfg, t, 4) == 0, "run did not finish");
	EXPECT(!inv.bad, "invariant: %s", inv.msg);
	st = &s.ps->stats;
	live = st->live;
	EXPECT(st->opened[KVB_TIER_DEMAND] == 2,
	       "opened %llu, expected 2 (joins within the window)",
	       (unsigned long long)st->opened[KVB_TIER_DEMAND]);
	/* The first closed when r3 came; the second drains until flushed. */
	EXPECT(st->closed[KVB_TIER_DEMAND] == 1 && live == 1,
	       "before flush: closed %llu live %u",
	       (unsigned long long)st->closed[KVB_TIER_DEMAND], live);
	kvp_flush_draining(s.ps);
	EXPECT(st->closed[KVB_TIER_DEMAND] == 2 && !st->live,
	       "after flush: closed %llu live %u",
	       (unsigned long long)st->closed[KVB_TIER_DEMAND], st->live);
	/* 0..440us and 600..700us. */
	EXPECT(st->hist[KVB_TIER_DEMAND][ref_bucket(440 * US)] == 1 &&
	       st->hist[KVB_TIER_DEMAND][ref_bucket(100 * US)] == 1 &&
	       st->batch_ns_max[KVB_TIER_DEMAND] == 440 * US &&
	       st->batch_ns_sum[KVB_TIER_DEMAND] == 540 * US,
	       "durations: max %llu sum %llu",
	       (unsigned long long)st->batch_ns_max[KVB_TIER_DEMAND],
	       (unsigned long long)st->batch_ns_sum[KVB_TIER_DEMAND]);
	kvs_free(&s);
	return true;
}

/* ---- i. max_inflight --------------------------------------------------- */

static bool test_max_inflight(void)
{
	struct kvs_config cfg = base_config(KVS_KVBATCH);
	struct inv_ctx inv = { 0 };
	struct kvs_req t[48];
	struct kvs_sim s;
	u32 n = 0, i;

	rng_state = 0x1f1f1f;
	for (i = 0; i < 40; i++) {
		static const u16 p[] = { IOP_RT, IOP_BE, IOP_IDLE, IOP_BE_HINT };

		int die = rnd_in(0, 3);
		u64 svc = rnd_in(20, 150) * US;

		if (i % 5 == 4)
			t[n++] = wr(i * 10 * US, 900, die * 1024, -1, svc);
		else
			t[n++] = rd(i * 10 * US, i % 7, p[i % 4], die, svc);
	}
	cfg.dies = 4;
	cfg.qdepth = 8;
	cfg.params.max_inflight = 2;
	cfg.hook = inv_hook;
	cfg.hook_arg = &inv;
	EXPECT(kvs_run(&s, &cfg, t, n) == 0, "run did not finish");
	EXPECT(!inv.bad, "invariant: %s", inv.msg);
	EXPECT(s.max_in_device <= 2, "%u requests in the device",
	       s.max_in_device);
	EXPECT(s.ps->stats.throttled > 0, "max_inflight never held back");
	for (i = 0; i < n; i++)
		EXPECT(t[i].nr_complete == 1, "rq %u not completed", i);
	kvs_free(&s);

	/* The same trace fills more of the device without the limit. */
	cfg.params.max_inflight = 0;
	EXPECT(kvs_run(&s, &cfg, t, n) == 0, "run did not finish");
	EXPECT(s.max_in_device > 2, "trace does not discriminate");
	kvs_free(&s);
	return true;
}

/* ---- j. requeue and merged-away requests ------------------------------- */

static bool test_requeue_merge(void)
{
	static struct kvs_req t[400], orig[400];
	u32 seed, requeues = 0, merges = 0;

	for (seed = 1; seed <= KVT_MERGE_TRACES; seed++) {
		struct kvs_config cfg;
		struct inv_ctx inv = { 0 };
		struct kvs_sim s;
		u64 work = 0;
		u32 n, i;
		int rc;

		rng_state = 0xabcdef12345ULL * seed;
		n = random_trace(orig, &cfg, 300);
		memcpy(t, orig, n * sizeof(*t));
		for (i = 0; i < n; i++)
			work += orig[i].service;
		cfg.sched = KVS_KVBATCH;
		cfg.requeue_every = rnd_in(2, 4);
		cfg.merge_every = rnd_in(3, 6);
		cfg.hook = inv_hook;
		cfg.hook_arg = &inv;
		rc = kvs_run(&s, &cfg, t, n);
		EXPECT(rc == 0, "seed %u: run did not finish", seed);
		EXPECT(!inv.bad, "seed %u: invariant: %s", seed, inv.msg);
		for (i = 0; i < n; i++) {
			const struct kvs_req *q = &t[i];

			if (q->merged)
				EXPECT(!q->nr_complete &&
				       q->nr_dispatch == q->nr_requeue,
				       "seed %u: merged rq %u ran", seed, i);
			else
				EXPECT(q->nr_complete == 1 &&
				       q->nr_dispatch == 1 + q->nr_requeue,
				       "seed %u: rq %u dispatched %u requeued "
				       "%u completed %u", seed, i,
				       q->nr_dispatch, q->nr_requeue,
				       q->nr_complete);
		}
		/* A merge moves work to the absorbing request, never loses it. */
		EXPECT(kvs_total_work(&s) == work, "seed %u: work %llu of %llu",
		       seed, (unsigned long long)kvs_total_work(&s),
		       (unsigned long long)work);
		if (!rc) {
			kvp_flush_draining(s.ps);
			EXPECT(!s.ps->queued && !s.ps->inflight &&
			       !s.ps->stats.live, "seed %u: not drained", seed);
		}
		requeues += s.nr_requeues;
		merges += s.nr_merges;
		kvs_free(&s);
	}
	diag("requeue/merge: %u requeues, %u merges over %u traces", requeues,
	     merges, KVT_MERGE_TRACES);
	EXPECT(requeues > 0 && merges > 0, "no requeue or merge happened");
	return true;
}

/* Host side of the contract for the directed test below. */
struct mini_rq {
	struct list_head node;
	u64 arrival, sector;
};

static u64 mini_head(struct kvp_batch *b)
{
	struct mini_rq *rq = list_first_entry_or_null(&b->rqs, struct mini_rq,
						      node);

	return rq ? rq->arrival : 0;
}

static void mini_queue(struct kvp_sched *ps, struct kvp_batch *b,
		       struct mini_rq *rq)
{
	list_add_tail(&rq->node, &b->rqs);
	kvp_rq_queued(ps, b, mini_head(b));
}

/* Queue @n requests in @b, arriving a microsecond apart from @first. */
static void mini_fill(struct kvp_sched *ps, struct kvp_batch *b,
		      struct mini_rq *rq, u32 n, u64 first)
{
	u32 i;

	for (i = 0; i < n; i++) {
		rq[i].arrival = first + i * US;
		mini_queue(ps, b, &rq[i]);
	}
}

/*
 * Dispatch the first queued request of @pick's batch, as the host would,
 * and return it.
 */
static struct mini_rq *mini_dispatch(struct kvp_sched *ps,
				     const struct kvp_pick *pick, u64 now)
{
	struct mini_rq *rq = list_first_entry(&pick->batch->rqs,
					      struct mini_rq, node);

	list_del_init(&rq->node);
	kvp_rq_dispatched(ps, pick->batch, mini_head(pick->batch), 4096, now);
	return rq;
}

/* The demand tier closed @batches batches of @rqs requests, @bytes bytes. */
static void demand_closed(struct kvp_sched *ps, const char *what, u64 batches,
			  u64 rqs, u64 bytes)
{
	const struct kvp_stats *st = &ps->stats;

	EXPECT(st->closed[KVB_TIER_DEMAND] == batches &&
	       st->batch_rqs_sum[KVB_TIER_DEMAND] == rqs &&
	       st->batch_bytes_sum[KVB_TIER_DEMAND] == bytes,
	       "%s: closed %llu batches of %llu requests, %llu bytes", what,
	       (unsigned long long)st->closed[KVB_TIER_DEMAND],
	       (unsigned long long)st->batch_rqs_sum[KVB_TIER_DEMAND],
	       (unsigned long long)st->batch_bytes_sum[KVB_TIER_DEMAND]);
}

/*
 * A requeued request is one request of its batch however often it is
 * dispatched: the elevator passes its bytes with the first dispatch only
 * (kv-sched.c's KVB_RQ_COUNTED), and the batch's request count must
 * follow. Two reads, one requeued once: a batch of 2 requests, 8 KiB.
 */
static bool test_requeue_counts(void)
{
	struct kvp_params p = default_params();
	struct mini_rq r[2] = { { .arrival = 1 }, { .arrival = 2 } };
	struct kvp_batch *b;
	struct kvp_sched *ps;
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	ps->p = p;
	b = kvp_get_batch(ps, 3, KVB_TIER_DEMAND, 1);
	mini_queue(ps, b, &r[0]);
	mini_queue(ps, b, &r[1]);
	list_del_init(&r[0].node);
	kvp_rq_dispatched(ps, b, mini_head(b), 4096, 0);
	list_del_init(&r[1].node);
	kvp_rq_dispatched(ps, b, 0, 4096, 0);
	/* The driver hands r[0] back; it goes to the head of its batch. */
	list_add(&r[0].node, &b->rqs);
	kvp_rq_requeued(ps, b, mini_head(b));
	list_del_init(&r[0].node);
	kvp_rq_dispatched(ps, b, 0, 0, 0);
	kvp_rq_completed(ps, b, 10, 0, kvp_depth_class(false, 8));
	kvp_rq_completed(ps, b, 11, 0, kvp_depth_class(false, 8));
	kvp_flush_draining(ps);
	demand_closed(ps, "one read requeued", 1, 2, 2 * 4096);
	free(mem);
	return true;
}

/*
 * A deferred write merged away in the middle of a burst must not leave
 * the burst open: writes arriving later, while a demand read is in the
 * device and the write queue is far below write_defer_max, are held.
 */
static bool test_merge_burst(void)
{
	struct kvp_params p = default_params();
	struct mini_rq w[4] = {
		{ .arrival = 1, .sector = 100 }, { .arrival = 2, .sector = 200 },
		{ .arrival = 3, .sector = 300 }, { .arrival = 50, .sector = 400 },
	};
	struct mini_rq d = { .arrival = 40 };
	struct kvp_batch *db;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	p.write_batch = 3;
	p.write_defer_max = 100;
	ps->p = p;

	/* Three writes, nothing else: a burst of three starts. */
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 1), &w[0]);
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 2), &w[1]);
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 3), &w[2]);
	pick = kvp_choose(ps, 10);
	EXPECT(pick.kind == KVP_PICK_WRITE && pick.burst_start,
	       "three writes alone: no burst");
	list_del_init(&w[0].node);
	kvp_rq_dispatched(ps, ps->wq, mini_head(ps->wq), 4096, 0);

	/* w[2] merges into a queued neighbour and leaves unserved. */
	list_del_init(&w[2].node);
	kvp_rq_unqueued(ps, ps->wq, mini_head(ps->wq), 11);

	pick = kvp_choose(ps, 12);
	EXPECT(pick.kind == KVP_PICK_WRITE, "burst did not continue");
	list_del_init(&w[1].node);
	kvp_rq_dispatched(ps, ps->wq, mini_head(ps->wq), 4096, 0);
	kvp_rq_completed(ps, ps->wq, 20, 0, kvp_depth_class(true, 8));
	kvp_rq_completed(ps, ps->wq, 21, 0, kvp_depth_class(true, 8));
	EXPECT(!ps->queued && !ps->inflight, "not idle");

	/* A recall read goes to the device... */
	db = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 40);
	mini_queue(ps, db, &d);
	pick = kvp_choose(ps, 40);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == db,
	       "demand not picked");
	list_del_init(&d.node);
	kvp_rq_dispatched(ps, db, 0, 4096, 0);

	/* ...and a writeback arrives while it is in flight. */
	mini_queue(ps, ps->wq, &w[3]);
	diag("burst_left %u with %u deferred write(s) queued",
	     ps->burst_left, ps->wq->queued);
	pick = kvp_choose(ps, 50);
	EXPECT(pick.kind == KVP_PICK_NONE,
	       "write released while demand in flight (kind %d, why %s, "
	       "burst_start %d, wq %u < write_defer_max %u)", pick.kind,
	       pick.kind ? kvb_reason_names[pick.why] : "-",
	       pick.burst_start, ps->wq->queued, ps->p.write_defer_max);
	free(mem);
	return true;
}

/*
 * Dispatch on arrival (kvp_may_direct(), kvp_rq_direct()): only into an
 * empty scheduler with room under max_inflight, never a write; a request
 * so dispatched keeps its batch open until it completes and counts in the
 * batch's remaining work when the batch queues more; its reason is the
 * one kvp_choose() gives a lone request of its tier.
 */
static bool test_direct(void)
{
	struct kvp_params p = default_params();
	struct mini_rq a = { .arrival = 30 }, b = { .arrival = 31 };
	struct mini_rq w = { .arrival = 60, .sector = 8 };
	struct kvp_batch *da, *db, *nb;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	enum kvb_tier t;
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	p.max_inflight = 2;
	ps->p = p;

	/* Each tier's reason is what kvp_choose() says of a lone request. */
	for (t = KVB_TIER_DEMAND; t < KVB_NR_BATCH_TIERS; t++) {
		struct mini_rq m = { .arrival = 1 };

		nb = kvp_get_batch(ps, 9, t, 1);
		mini_queue(ps, nb, &m);
		pick = kvp_choose(ps, 1);
		EXPECT(pick.kind == KVP_PICK_BATCH &&
		       pick.why == kvp_direct_why(t),
		       "%s: lone request picked for %s, direct says %s",
		       kvb_tier_names[t], kvb_reason_names[pick.why],
		       kvb_reason_names[kvp_direct_why(t)]);
		list_del_init(&m.node);
		kvp_rq_dispatched(ps, nb, 0, 4096, 0);
		kvp_rq_completed(ps, nb, 2, 0, kvp_depth_class(false, 8));
	}
	EXPECT(!ps->queued && !ps->inflight, "not idle after the lone picks");
	kvp_stats_reset(ps);

	EXPECT(!kvp_may_direct(ps, KVB_TIER_WRITE), "a write went direct");
	EXPECT(kvp_may_direct(ps, KVB_TIER_DEMAND), "empty, yet not direct");

	/* Two recall reads of batch 7 go to the device on arrival. */
	da = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 10);
	kvp_rq_direct(ps, da, 4096, 0);
	EXPECT(kvp_may_direct(ps, KVB_TIER_NORMAL), "room left, not direct");
	kvp_rq_direct(ps, kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 11), 4096, 0);
	EXPECT(ps->inflight == 2 && da->inflight == 2 && !ps->queued,
	       "in flight %u (batch %u), queued %u", ps->inflight,
	       da->inflight, ps->queued);
	EXPECT(ps->stats.direct == 2 &&
	       ps->stats.dispatched[KVB_WHY_TAIL] == 2 &&
	       ps->stats.dispatched_tier[KVB_TIER_DEMAND] == 2,
	       "counted direct %llu, tail %llu",
	       (unsigned long long)ps->stats.direct,
	       (unsigned long long)ps->stats.dispatched[KVB_WHY_TAIL]);
	EXPECT(!kvp_may_direct(ps, KVB_TIER_DEMAND),
	       "direct past max_inflight");

	/*
	 * Batch 7 queues one more, batch 8 one: 8 has less work left (1
	 * against 7's 3) and goes first once the limit has room.
	 */
	mini_queue(ps, kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 30), &a);
	db = kvp_get_batch(ps, 8, KVB_TIER_DEMAND, 31);
	mini_queue(ps, db, &b);
	EXPECT(!kvp_may_direct(ps, KVB_TIER_DEMAND), "direct past a queue");
	kvp_rq_completed(ps, da, 40, 0, kvp_depth_class(false, 8));
	EXPECT(da->state == KVP_BATCH_OPEN, "batch closed with work left");
	pick = kvp_choose(ps, 41);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == db,
	       "picked batch %llu, not the one with least work",
	       pick.batch ? (unsigned long long)pick.batch->key : 0ULL);
	list_del_init(&b.node);
	kvp_rq_dispatched(ps, db, 0, 4096, 0);
	kvp_rq_completed(ps, db, 42, 0, kvp_depth_class(false, 8));

	pick = kvp_choose(ps, 43);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == da, "7 not next");
	list_del_init(&a.node);
	kvp_rq_dispatched(ps, da, 0, 4096, 0);

	/* A deferred write waiting keeps reads off the direct path. */
	mini_queue(ps, ps->wq, &w);
	EXPECT(!kvp_may_direct(ps, KVB_TIER_NORMAL),
	       "direct past a deferred write");
	list_del_init(&w.node);
	kvp_rq_unqueued(ps, ps->wq, 0, 61);

	/* Batch 7 closes with its last completion: 3 requests, 12 KiB. */
	kvp_rq_completed(ps, da, 70, 0, kvp_depth_class(false, 8));
	kvp_rq_completed(ps, da, 71, 0, kvp_depth_class(false, 8));
	EXPECT(!ps->queued && !ps->inflight, "not idle at the end");
	demand_closed(ps, "batches 7 and 8", 2, 4, 4 * 4096);
	free(mem);
	return true;
}

/*
 * An automatic max_inflight is in force only while demand is about: from
 * a demand arrival until KVP_DEMAND_LINGER_NS after the last one, once
 * none is pending; otherwise nothing is held (the hardware queues' own tags
 * bound each queue), but no request goes on arrival once the device's tags
 * (limit_ceiling) are in flight. A max_inflight set by hand always is.
 */
static bool test_limit_demand(void)
{
	struct kvp_params p = default_params();
	struct kvp_batch *nb, *db;
	struct kvp_sched *ps;
	u64 t = 10 * MS;
	void *mem;
	int i;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	p.max_inflight = 0;
	p.limit_auto = true;
	p.limit_ceiling = 5;
	kvp_set_params(ps, &p);
	/* What the controller decided (no latencies are given here). */
	ps->depth.limit = 2;

	/* Foreign reads alone: not held at the limit. */
	nb = kvp_get_batch(ps, 1, KVB_TIER_NORMAL, t);
	for (i = 0; i < 4; i++) {
		EXPECT(kvp_may_direct(ps, KVB_TIER_NORMAL) &&
		       !kvp_throttled(ps), "no demand about, yet held at %u in flight",
		       ps->inflight);
		kvp_rq_direct(ps, nb, 4096, 0);
	}

	/* A recall arrives: the limit holds from now on. */
	db = kvp_get_batch(ps, 2, KVB_TIER_DEMAND, t + 1);
	EXPECT(kvp_throttled(ps) && !kvp_may_direct(ps, KVB_TIER_DEMAND),
	       "demand about, %u in flight, limit 2: not held", ps->inflight);
	for (i = 0; i < 4; i++)
		kvp_rq_completed(ps, nb, t + 2, 0, kvp_depth_class(false, 8));
	kvp_rq_direct(ps, db, 4096, 0);
	kvp_rq_completed(ps, db, t + 3, 0, kvp_depth_class(false, 8));

	/* Within the linger after it, still in force... */
	nb = kvp_get_batch(ps, 1, KVB_TIER_NORMAL, t + KVP_DEMAND_LINGER_NS);
	kvp_rq_direct(ps, nb, 4096, 0);
	kvp_rq_direct(ps, nb, 4096, 0);
	EXPECT(kvp_throttled(ps), "limit lifted inside the linger");
	/* ...and lifted by the first arrival past it... */
	kvp_get_batch(ps, 1, KVB_TIER_NORMAL, t + 2 + KVP_DEMAND_LINGER_NS);
	EXPECT(!kvp_throttled(ps), "limit still held past the linger");
	for (i = 0; i < 3; i++)
		kvp_rq_direct(ps, nb, 4096, 0);
	/* ...but at the device's tags, none goes on arrival, ... */
	EXPECT(!kvp_may_direct(ps, KVB_TIER_NORMAL),
	       "%u in flight, ceiling 5: still dispatched on arrival",
	       ps->inflight);
	/* ...while queued work is never held, however deep. */
	for (i = 0; i < 300; i++)
		kvp_rq_direct(ps, nb, 4096, 0);
	EXPECT(!kvp_throttled(ps), "no demand about, held at %u in flight",
	       ps->inflight);

	/* Set by hand, it holds without demand. */
	ps->p.limit_auto = false;
	ps->p.max_inflight = 2;
	EXPECT(kvp_throttled(ps), "a max_inflight set by hand not in force");

	/*
	 * With demand about, an automatic limit at the ceiling holds
	 * nothing: the device's tags do. Below it, it holds.
	 */
	ps->p.limit_auto = true;
	kvp_get_batch(ps, 2, KVB_TIER_DEMAND, t + 3 + KVP_DEMAND_LINGER_NS);
	ps->p.max_inflight = 0;
	ps->depth.limit = 5;
	EXPECT(!kvp_throttled(ps) && kvp_limit(ps) == 0,
	       "demand about, automatic limit at the ceiling: held at %u in flight",
	       ps->inflight);
	ps->depth.limit = 4;
	EXPECT(kvp_throttled(ps) && kvp_limit(ps) == 4,
	       "demand about, automatic limit 4 under the ceiling: not held");
	/* The probe holds without demand, even at the ceiling's side. */
	ps->demand_about = false;
	EXPECT(!kvp_throttled(ps), "automatic limit held without demand");
	ps->depth.probing = true;
	EXPECT(kvp_throttled(ps) && kvp_limit(ps) == 4,
	       "the probe's limit not in force without demand");
	free(mem);
	return true;
}

/*
 * A queued request of batch Y receives the oldest request of batch X by a
 * merge (the host moves it to Y's head with X's arrival time). Y's age
 * must follow: it expires, and goes first, when X's request would have.
 */
static bool test_merge_head(void)
{
	struct kvp_params p = default_params();
	struct mini_rq x[2] = { { .arrival = 10 * US }, { .arrival = 30 * US } };
	struct mini_rq y = { .arrival = 20 * US };
	struct kvp_batch *xb, *yb, *idle;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u64 now = 10 * US + p.expire_ns[KVB_TIER_NORMAL];
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	ps->p = p;

	xb = kvp_get_batch(ps, 1, KVB_TIER_NORMAL, 10 * US);
	mini_queue(ps, xb, &x[0]);
	yb = kvp_get_batch(ps, 2, KVB_TIER_NORMAL, 20 * US);
	mini_queue(ps, yb, &y);
	mini_queue(ps, xb, &x[1]);

	/* x[0] merges into y: X loses its head, y takes x[0]'s arrival. */
	list_del_init(&x[0].node);
	kvp_rq_unqueued(ps, xb, mini_head(xb), 40 * US);
	y.arrival = x[0].arrival;
	kvp_batch_head_changed(ps, yb, mini_head(yb));

	EXPECT(yb->head_ns == 10 * US && xb->head_ns == 30 * US,
	       "heads X %llu Y %llu ns", (unsigned long long)xb->head_ns,
	       (unsigned long long)yb->head_ns);
	EXPECT(ps->tier[KVB_TIER_NORMAL].age.n == 2 &&
	       ps->tier[KVB_TIER_NORMAL].age.a[0] == yb,
	       "Y is not the oldest batch of its tier");
	pick = kvp_choose(ps, now);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == yb &&
	       pick.why == KVB_WHY_EXPIRED,
	       "at Y's expiry: picked %s batch, why %s",
	       pick.batch == yb ? "Y" : pick.batch == xb ? "X" : "no",
	       pick.kind ? kvb_reason_names[pick.why] : "-");

	/* A batch with nothing queued is left alone. */
	idle = kvp_get_batch(ps, 3, KVB_TIER_NORMAL, now);
	kvp_batch_head_changed(ps, idle, 1);
	EXPECT(idle->heap_pos[0] < 0 && idle->heap_pos[1] < 0,
	       "an empty batch entered the heaps");
	free(mem);
	return true;
}

/*
 * The host's clock readings may arrive slightly out of order (one cached
 * per plug, completions timed on other CPUs): a request of the same key
 * arriving at a time just before its batch's last completion is inside
 * the batch window and rejoins the batch, and a reap at such a time does
 * not close it. Unsigned arithmetic on such a time would make the window
 * look 584 years long passed.
 */
static bool test_window_clock_order(void)
{
	struct kvp_params p = default_params();
	struct mini_rq r = { .arrival = 100 * US };
	struct kvp_batch *b, *again;
	struct kvp_sched *ps;
	u32 seq;
	void *mem;

	p.window_ns = 50 * US;
	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	ps->p = p;

	b = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 100 * US);
	seq = b->seq;
	mini_queue(ps, b, &r);
	list_del_init(&r.node);
	kvp_rq_dispatched(ps, b, mini_head(b), 4096, 0);
	kvp_rq_completed(ps, b, 200 * US, 0, kvp_depth_class(false, 8));
	EXPECT(b->state == KVP_BATCH_DRAINING, "batch not draining after its last completion");

	kvp_reap(ps, 200 * US - 1);
	EXPECT(b->state == KVP_BATCH_DRAINING && ps->stats.closed[KVB_TIER_DEMAND] == 0,
	       "a reap 1 ns before the last completion closed the batch");
	again = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 200 * US - 1);
	EXPECT(again == b && again->seq == seq && b->state == KVP_BATCH_OPEN,
	       "a request 1 ns before the last completion opened batch %u, not %u",
	       again->seq, seq);

	/* Past the window, the batch closes and the key opens a new one. */
	kvp_rq_queued(ps, b, 0);
	kvp_rq_unqueued(ps, b, 0, 210 * US);
	again = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 261 * US);
	EXPECT(again->seq != seq && ps->stats.closed[KVB_TIER_DEMAND] == 1,
	       "past the window: batch %u, %llu closed", again->seq,
	       (unsigned long long)ps->stats.closed[KVB_TIER_DEMAND]);
	free(mem);
	return true;
}

/*
 * Shares: with demand, normal and prefetch all backlogged, the normal and
 * prefetch tiers get their share_pct of the dispatches (and nothing with
 * a share of 0); a tier that stopped waiting does not bank credit.
 */
static u32 share_run(u32 normal_pct, u32 prefetch_pct, u32 picks,
		     u32 *by_tier, bool idle_gap)
{
	enum { PER_TIER = 400 };
	static struct mini_rq rqs[KVB_NR_BATCH_TIERS][PER_TIER];
	struct kvp_params p = default_params();
	struct kvp_batch *b[KVB_NR_BATCH_TIERS];
	struct kvp_sched *ps;
	u32 i, t, first_demand = 0;
	void *mem;

	mem = calloc(1, kvp_size(8));
	ps = kvp_init(mem, 8);
	p.share_pct[KVB_TIER_NORMAL] = normal_pct;
	p.share_pct[KVB_TIER_PREFETCH] = prefetch_pct;
	ps->p = p;
	memset(by_tier, 0, KVB_NR_TIERS * sizeof(*by_tier));
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		b[t] = kvp_get_batch(ps, 10 + t, t, 1);
		for (i = 0; i < PER_TIER; i++) {
			rqs[t][i].arrival = 1 + i;
			/* The prefetch tier arrives late after an idle gap. */
			if (idle_gap && t == KVB_TIER_PREFETCH)
				continue;
			mini_queue(ps, b[t], &rqs[t][i]);
		}
	}
	for (i = 0; i < picks; i++) {
		struct kvp_pick pick;

		if (idle_gap && i == picks / 2) {
			/* Prefetch appears now: it has earned nothing yet. */
			for (t = 0; t < PER_TIER; t++)
				mini_queue(ps, b[KVB_TIER_PREFETCH],
					   &rqs[KVB_TIER_PREFETCH][t]);
			first_demand = i;
		}
		pick = kvp_choose(ps, 10 + i);
		if (pick.kind != KVP_PICK_BATCH)
			break;
		mini_dispatch(ps, &pick, 0);
		kvp_rq_completed(ps, pick.batch, 10 + i, 0, kvp_depth_class(false, 8));
		by_tier[pick.batch->tier]++;
		if (idle_gap && i == first_demand && first_demand &&
		    pick.batch->tier != KVB_TIER_DEMAND)
			first_demand = ~0U;
	}
	free(mem);
	return first_demand;
}

static bool test_share(void)
{
	u32 by[KVB_NR_TIERS];

	share_run(0, 0, 300, by, false);
	EXPECT(by[KVB_TIER_DEMAND] == 300, "shares 0: demand got %u of 300",
	       by[KVB_TIER_DEMAND]);
	share_run(20, 10, 300, by, false);
	diag("shares 20/10 over 300 dispatches: demand %u normal %u prefetch %u",
	     by[KVB_TIER_DEMAND], by[KVB_TIER_NORMAL], by[KVB_TIER_PREFETCH]);
	EXPECT(by[KVB_TIER_NORMAL] >= 59 && by[KVB_TIER_NORMAL] <= 61,
	       "normal share 20%%: %u of 300", by[KVB_TIER_NORMAL]);
	EXPECT(by[KVB_TIER_PREFETCH] >= 29 && by[KVB_TIER_PREFETCH] <= 31,
	       "prefetch share 10%%: %u of 300", by[KVB_TIER_PREFETCH]);
	share_run(50, 50, 300, by, false);
	EXPECT(by[KVB_TIER_NORMAL] >= 149 && by[KVB_TIER_PREFETCH] >= 149,
	       "shares 50/50: normal %u prefetch %u of 300",
	       by[KVB_TIER_NORMAL], by[KVB_TIER_PREFETCH]);
	EXPECT(share_run(0, 50, 200, by, true) != ~0U,
	       "a tier that was not waiting was served ahead of demand");
	return true;
}

/*
 * The write share: 60 deferred writes behind a demand backlog that never
 * empties. With no share they wait (for their expiry or write_defer_max);
 * with 25 they get one dispatch in four, one at a time and oldest first,
 * never two in a row; and a write queue left with only demand in flight
 * is not held while it is owed a dispatch.
 */
static u32 write_share_run(u32 pct, u32 picks, u32 *longest_run, bool *order)
{
	static struct mini_rq d[400], w[60];
	struct kvp_params p = default_params();
	struct kvp_batch *db;
	struct kvp_sched *ps;
	u32 i, writes = 0, run = 0, next = 0;
	void *mem;

	mem = calloc(1, kvp_size(8));
	ps = kvp_init(mem, 8);
	p.share_pct[KVB_TIER_WRITE] = pct;
	ps->p = p;
	db = kvp_get_batch(ps, 1, KVB_TIER_DEMAND, 1);
	mini_fill(ps, db, d, 400, 1);
	mini_fill(ps, ps->wq, w, 60, 2);
	*longest_run = 0;
	*order = true;
	for (i = 0; i < picks; i++) {
		struct kvp_pick pick = kvp_choose(ps, 10 * US + i);
		struct mini_rq *rq;

		if (!pick.kind)
			break;
		rq = mini_dispatch(ps, &pick, 0);
		if (pick.kind == KVP_PICK_WRITE) {
			if (rq != &w[next++] || !pick.burst_start ||
			    pick.why != KVB_WHY_SHARE)
				*order = false;
			writes++;
			if (++run > *longest_run)
				*longest_run = run;
		} else {
			run = 0;
		}
		kvp_rq_completed(ps, pick.batch, 10 * US + i, 0, kvp_depth_class(false, 8));
	}
	free(mem);
	return writes;
}

static bool test_write_share(void)
{
	struct mini_rq d, w;
	struct kvp_params p = default_params();
	struct kvp_sched *ps;
	struct kvp_batch *db;
	struct kvp_pick pick;
	u32 writes, run;
	bool order;
	u64 until;
	void *mem;

	writes = write_share_run(0, 200, &run, &order);
	EXPECT(writes == 0, "share 0: %u writes of 200 dispatches", writes);
	writes = write_share_run(25, 200, &run, &order);
	diag("write share 25%%: %u writes of 200 dispatches, at most %u in a "
	     "row", writes, run);
	EXPECT(writes >= 49 && writes <= 51,
	       "share 25%%: %u writes of 200 dispatches", writes);
	EXPECT(run == 1, "share 25%%: %u writes in a row", run);
	EXPECT(order, "a share's write was not the oldest, alone, as a share");

	/* Only writes queued, demand in flight, a dispatch owed: not held. */
	mem = calloc(1, kvp_size(8));
	ps = kvp_init(mem, 8);
	p.share_pct[KVB_TIER_WRITE] = 50;
	ps->p = p;
	db = kvp_get_batch(ps, 1, KVB_TIER_DEMAND, 1);
	mini_fill(ps, db, &d, 1, 1);
	mini_fill(ps, ps->wq, &w, 1, 2);
	ps->credit[KVB_TIER_WRITE] = 50;
	pick = kvp_choose(ps, 10 * US);
	EXPECT(pick.batch == db, "demand did not go first");
	list_del_init(&d.node);
	kvp_rq_dispatched(ps, db, 0, 4096, 10 * US);
	EXPECT(!kvp_writes_held(ps, 11 * US, &until),
	       "a write owed its share reported held (credit %u)",
	       ps->credit[KVB_TIER_WRITE]);
	pick = kvp_choose(ps, 11 * US);
	EXPECT(pick.kind == KVP_PICK_WRITE && pick.why == KVB_WHY_SHARE,
	       "the owed write did not go with demand in flight");
	free(mem);
	return true;
}

/* ---- tier mapping ------------------------------------------------------ */

static bool test_tiers(void)
{
	static const struct {
		u16 ioprio;
		bool write, sync;
		enum kvb_tier tier;
		const char *what;
		/* Demand with hint_demand set (else the same tier). */
		bool opt_in;
	} m[] = {
		{ IOP_RT, false, true, KVB_TIER_DEMAND, "RT read", false },
		/* A hint takes no privilege: it outranks no one by default. */
		{ IOP_BE_HINT, false, true, KVB_TIER_NORMAL, "BE+hint read",
		  true },
		{ KV_IOPRIO(0, 3, 0), false, true, KVB_TIER_NORMAL,
		  "NONE+hint read", true },
		{ KV_IOPRIO(KV_IOPRIO_CLASS_BE, 1, 0), false, true,
		  KVB_TIER_NORMAL, "BE+CDL hint read", true },
		{ KV_IOPRIO(KV_IOPRIO_CLASS_BE, 5, 0), true, true,
		  KVB_TIER_NORMAL, "BE+hint sync write", true },
		{ KV_IOPRIO(KV_IOPRIO_CLASS_BE, 5, 0), true, false,
		  KVB_TIER_WRITE, "BE+hint async write", false },
		{ KV_IOPRIO(KV_IOPRIO_CLASS_RT, 9, 2), false, true,
		  KVB_TIER_DEMAND, "RT+hint read", false },
		{ IOP_BE, false, true, KVB_TIER_NORMAL, "BE read", false },
		{ KV_IOPRIO(0, 0, 0), false, true, KVB_TIER_NORMAL,
		  "NONE read", false },
		{ IOP_IDLE, false, true, KVB_TIER_PREFETCH, "IDLE read", false },
		/* kv-defs.h: IDLE -> PREFETCH; hints lift BE only. */
		{ KV_IOPRIO(KV_IOPRIO_CLASS_IDLE, 1, 7), false, true,
		  KVB_TIER_PREFETCH, "IDLE+hint read", false },
		{ IOP_BE, true, false, KVB_TIER_WRITE, "async write", false },
		{ IOP_RT, true, false, KVB_TIER_WRITE, "async RT write", false },
		{ IOP_IDLE, true, true, KVB_TIER_WRITE, "IDLE sync write", false },
		{ IOP_BE, true, true, KVB_TIER_NORMAL, "BE sync write", false },
		{ IOP_RT, true, true, KVB_TIER_DEMAND, "RT sync write", false },
	};
	u32 i;

	for (i = 0; i < ARRAY_SIZE(m); i++) {
		enum kvb_tier want = m[i].opt_in ? KVB_TIER_DEMAND : m[i].tier;
		enum kvb_tier t = kvp_tier_of(m[i].ioprio, m[i].write,
					      m[i].sync, false);

		EXPECT(t == m[i].tier, "%s (ioprio 0x%04x): %s, expected %s",
		       m[i].what, m[i].ioprio, kvb_tier_names[t],
		       kvb_tier_names[m[i].tier]);
		t = kvp_tier_of(m[i].ioprio, m[i].write, m[i].sync, true);
		EXPECT(t == want, "hint_demand 1: %s (ioprio 0x%04x): %s, expected %s",
		       m[i].what, m[i].ioprio, kvb_tier_names[t],
		       kvb_tier_names[want]);
	}
	return true;
}

/*
 * Part of the pool is demand's: keys of the other tiers beyond the rest
 * share their tier's overflow batch, so that a flood of hinted or IDLE
 * keys (which anyone can tag) leaves privileged recalls their batches.
 * A reclaim for another tier does not take a draining demand batch.
 */
static bool test_pool_reserve(void)
{
	struct kvp_params p = default_params();
	struct kvp_batch *b, *last = NULL;
	struct kvp_sched *ps;
	u32 i, other;
	void *mem;

	mem = calloc(1, kvp_size(16));
	ps = kvp_init(mem, 16);
	ps->p = p;
	other = 16 - KVP_DEMAND_RESERVE(16);
	EXPECT(KVP_DEMAND_RESERVE(16) > 0, "no reserve in a pool of 16");

	/* Normal and prefetch keys, two for each slot of the pool. */
	for (i = 0; i < 32; i++) {
		b = kvp_get_batch(ps, 100 + i, i % 2 ? KVB_TIER_PREFETCH :
				  KVB_TIER_NORMAL, 1);
		/* Keep each open: a batch with a request in flight. */
		if (!b->overflow)
			kvp_rq_direct(ps, b, 4096, 1);
	}
	EXPECT(ps->other_live == other && ps->stats.live == other,
	       "other tiers hold %u batches, %u live; expected %u",
	       ps->other_live, ps->stats.live, other);
	EXPECT(ps->stats.overflow_rqs[KVB_TIER_NORMAL] +
	       ps->stats.overflow_rqs[KVB_TIER_PREFETCH] == 32 - other,
	       "overflowed %llu + %llu",
	       (unsigned long long)ps->stats.overflow_rqs[KVB_TIER_NORMAL],
	       (unsigned long long)ps->stats.overflow_rqs[KVB_TIER_PREFETCH]);

	/* Demand still gets a batch for each key of the reserve. */
	for (i = 0; i < KVP_DEMAND_RESERVE(16); i++) {
		b = kvp_get_batch(ps, 1 + i, KVB_TIER_DEMAND, 2);
		EXPECT(!b->overflow, "demand key %u overflowed", 1 + i);
		last = b;
	}
	b = kvp_get_batch(ps, 99, KVB_TIER_DEMAND, 2);
	EXPECT(b->overflow && ps->stats.overflow_rqs[KVB_TIER_DEMAND] == 1,
	       "demand beyond the whole pool did not overflow");

	/*
	 * With a window, the last demand batch drains; the pool is full:
	 * a normal key does not reclaim it, a demand key does.
	 */
	ps->p.window_ns = 1000 * MS;
	kvp_rq_direct(ps, last, 4096, 2);
	kvp_rq_completed(ps, last, 3, 0, kvp_depth_class(false, 8));
	EXPECT(last->state == KVP_BATCH_DRAINING, "demand batch not draining");
	b = kvp_get_batch(ps, 500, KVB_TIER_NORMAL, 4);
	EXPECT(b->overflow && last->state == KVP_BATCH_DRAINING,
	       "a normal key took a draining demand batch");
	b = kvp_get_batch(ps, 98, KVB_TIER_DEMAND, 4);
	EXPECT(!b->overflow && b == last && b->key == 98,
	       "a demand key did not reclaim the draining demand batch");
	free(mem);
	return true;
}

/*
 * The normal tier is served oldest request first: many small batches
 * (hinted, anyone's) gain nothing over one deep batch whose request came
 * first, where least remaining work would serve all of them before it.
 * Demand stays least remaining work first.
 */
static bool test_normal_order(void)
{
	struct kvp_params p = default_params();
	struct mini_rq deep[8], small[4], d[3];
	struct kvp_batch *db, *sb[4], *ra, *rb;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u32 i;
	void *mem;

	mem = calloc(1, kvp_size(64));
	ps = kvp_init(mem, 64);
	ps->p = p;

	/* A tenant's deep queue (one key), then four one-request batches. */
	db = kvp_get_batch(ps, 1, KVB_TIER_NORMAL, 10 * US);
	mini_fill(ps, db, deep, 8, 10 * US);
	for (i = 0; i < 4; i++) {
		sb[i] = kvp_get_batch(ps, 100 + i, KVB_TIER_NORMAL,
				      (20 + i) * US);
		small[i].arrival = (20 + i) * US;
		mini_queue(ps, sb[i], &small[i]);
	}
	/* Dispatch in order: the deep batch's eight, then the small ones. */
	for (i = 0; i < 12; i++) {
		struct kvp_batch *want = i < 8 ? db : sb[i - 8];

		pick = kvp_choose(ps, 30 * US);
		EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == want &&
		       pick.why == KVB_WHY_NORMAL,
		       "dispatch %u: %s batch %llu, expected %llu", i,
		       pick.kind ? kvb_reason_names[pick.why] : "no",
		       pick.batch ? (unsigned long long)pick.batch->key : 0ULL,
		       (unsigned long long)want->key);
		if (pick.kind != KVP_PICK_BATCH)
			break;
		mini_dispatch(ps, &pick, 30 * US);
	}

	/* Demand: the batch with less remaining work first, though younger. */
	ra = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 40 * US);
	d[0].arrival = 40 * US;
	d[1].arrival = 41 * US;
	mini_queue(ps, ra, &d[0]);
	mini_queue(ps, ra, &d[1]);
	rb = kvp_get_batch(ps, 8, KVB_TIER_DEMAND, 42 * US);
	d[2].arrival = 42 * US;
	mini_queue(ps, rb, &d[2]);
	pick = kvp_choose(ps, 50 * US);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == rb &&
	       pick.why == KVB_WHY_TAIL, "demand: the smaller batch not first");
	free(mem);
	return true;
}

/*
 * A tenant's backlog past its expire time does not turn the device into
 * a FIFO for privileged recalls: 32 normal requests long expired, then a
 * demand batch of 4. The expired requests still go oldest first, but take
 * turns with demand, one each, so the recall is done within 8 dispatches
 * and not after the whole backlog; once demand is done the backlog goes
 * on alone. An expired write queue takes turns the same way.
 */
static bool test_aged_vs_demand(void)
{
	struct kvp_params p = default_params();
	u64 now = 10ULL * 1000 * MS;
	struct mini_rq n[32], d[4], w[2];
	struct kvp_batch *nb, *db;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u32 i, next = 0, done = 0, last = 0;
	void *mem;

	mem = calloc(1, kvp_size(16));
	ps = kvp_init(mem, 16);
	ps->p = p;

	nb = kvp_get_batch(ps, 1, KVB_TIER_NORMAL, 1 * US);
	mini_fill(ps, nb, n, 32, 1 * US);
	db = kvp_get_batch(ps, 2, KVB_TIER_DEMAND, now);
	for (i = 0; i < 4; i++) {
		d[i].arrival = now;
		mini_queue(ps, db, &d[i]);
	}
	for (i = 0; i < 36; i++) {
		struct mini_rq *rq;

		pick = kvp_choose(ps, now);
		if (pick.kind != KVP_PICK_BATCH)
			break;
		rq = mini_dispatch(ps, &pick, now);
		if (pick.batch == db) {
			done++;
			last = i;
		} else {
			EXPECT(rq == &n[next] && pick.why == KVB_WHY_EXPIRED,
			       "dispatch %u: normal request %ld (%s), expected "
			       "%u", i, (long)(rq - n),
			       kvb_reason_names[pick.why], next);
			next++;
		}
	}
	EXPECT(i == 36 && done == 4 && next == 32,
	       "%u dispatches: %u demand, %u normal", i, done, next);
	EXPECT(last < 8, "the recall's last request went out at dispatch %u "
	       "of the 32 expired requests' 36", last);

	/* Expired writes take turns with demand too. */
	for (i = 0; i < 2; i++) {
		w[i].arrival = (1 + i) * US;
		mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 1), &w[i]);
	}
	for (i = 0; i < 2; i++) {
		d[i].arrival = now;
		mini_queue(ps, db, &d[i]);
	}
	for (i = 0; i < 4; i++) {
		bool want_write = !(i & 1);

		pick = kvp_choose(ps, now);
		EXPECT(pick.kind == (want_write ? KVP_PICK_WRITE :
				     KVP_PICK_BATCH),
		       "writes and demand, dispatch %u: %s", i,
		       pick.kind == KVP_PICK_WRITE ? "a write" :
		       pick.kind ? "demand" : "nothing");
		if (!pick.kind)
			break;
		mini_dispatch(ps, &pick, now);
	}
	free(mem);
	return true;
}

/*
 * write_defer_max bounds the deferred write queue even while demand reads
 * are queued: with the queue full, the next dispatch is a write, not the
 * demand batch. And kvp_writes_held() agrees with kvp_choose(): it says
 * "held" exactly when only deferred writes wait behind in-flight demand
 * and kvp_choose() returns nothing, and gives the time the oldest expires.
 */
static bool test_defer_max_and_hold(void)
{
	struct kvp_params p = default_params();
	struct mini_rq w[3] = {
		{ .arrival = 1, .sector = 100 }, { .arrival = 2, .sector = 200 },
		{ .arrival = 3, .sector = 300 },
	};
	struct mini_rq d[2] = { { .arrival = 4 }, { .arrival = 5 } };
	struct kvp_batch *db;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u64 until = 0;
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	p.write_defer_max = 2;
	ps->p = p;

	db = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, 4);
	mini_queue(ps, db, &d[0]);
	mini_queue(ps, db, &d[1]);
	/* One write: deferred behind the queued demand. */
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 1), &w[0]);
	pick = kvp_choose(ps, 10);
	EXPECT(pick.kind == KVP_PICK_BATCH && pick.batch == db,
	       "one deferred write went ahead of demand");
	list_del_init(&d[0].node);
	kvp_rq_dispatched(ps, db, mini_head(db), 4096, 0);

	/* Two writes: write_defer_max reached, a write goes next. */
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 2), &w[1]);
	pick = kvp_choose(ps, 11);
	EXPECT(pick.kind == KVP_PICK_WRITE,
	       "write_defer_max %u reached with demand queued: picked %s",
	       p.write_defer_max, pick.kind == KVP_PICK_BATCH ?
	       kvb_tier_names[pick.batch->tier] : "nothing");
	EXPECT(!kvp_writes_held(ps, 11, &until),
	       "held with demand queued");
	if (pick.kind == KVP_PICK_WRITE) {
		list_del_init(&w[0].node);
		kvp_rq_dispatched(ps, ps->wq, mini_head(ps->wq), 4096, 0);
		kvp_rq_completed(ps, ps->wq, 12, 0, kvp_depth_class(true, 8));
		ps->burst_left = 0;
	}

	/* Demand dispatched, one write left: held, and choose agrees. */
	pick = kvp_choose(ps, 13);
	EXPECT(pick.kind == KVP_PICK_BATCH, "demand not picked");
	list_del_init(&d[1].node);
	kvp_rq_dispatched(ps, db, mini_head(db), 4096, 0);
	EXPECT(kvp_writes_held(ps, 14, &until),
	       "one write behind in-flight demand not reported held");
	EXPECT(until == w[1].arrival + p.expire_ns[KVB_TIER_WRITE],
	       "held until %llu, expected %llu", (unsigned long long)until,
	       (unsigned long long)(w[1].arrival +
				    p.expire_ns[KVB_TIER_WRITE]));
	pick = kvp_choose(ps, 14);
	EXPECT(pick.kind == KVP_PICK_NONE, "held, yet choose picked");
	/* At its expiry it is no longer held, and choose takes it. */
	EXPECT(!kvp_writes_held(ps, until, &until), "held past expiry");
	pick = kvp_choose(ps, until);
	EXPECT(pick.kind == KVP_PICK_WRITE, "expired write not picked");
	free(mem);
	return true;
}

/*
 * Serve demand batch @db's first read at once, and queue it again: demand
 * that stays backlogged, as a recall flood keeps it.
 */
static void serve_again(struct kvp_sched *ps, struct kvp_batch *db, u64 now)
{
	struct mini_rq *rq = list_first_entry(&db->rqs, struct mini_rq, node);

	list_del_init(&rq->node);
	kvp_rq_dispatched(ps, db, mini_head(db), 4096, now);
	kvp_rq_completed(ps, db, now, 0, kvp_depth_class(false, 8));
	rq->arrival = now;
	mini_queue(ps, db, rq);
}

/*
 * Writes a writeback throttle counts that stop arriving are released
 * ahead of queued demand: their writers wait for them (wbt admits a few
 * at a time, counting the held ones), so the queue never reaches
 * write_defer_max. Writes that keep arriving are held as before, and so
 * are writes no throttle counts.
 */
static bool test_write_stall(void)
{
	struct kvp_params p = default_params();
	struct mini_rq w[2] = {
		{ .arrival = 1000, .sector = 100 },
		{ .arrival = 1001, .sector = 200 },
	};
	struct mini_rq d[64];
	const u64 step = KVP_WRITE_STALL_NS / 4;
	struct kvp_batch *db;
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u64 now = 1000, until;
	unsigned int i, writes = 0, held_picks = 0;
	void *mem;

	mem = calloc(1, kvp_size(4));
	ps = kvp_init(mem, 4);
	ps->p = p;
	kvp_write_throttled(ps, true);

	/* A backlog of demand, queued and in flight. */
	db = kvp_get_batch(ps, 7, KVB_TIER_DEMAND, now);
	for (i = 0; i < 64; i++) {
		d[i].arrival = now;
		mini_queue(ps, db, &d[i]);
	}
	/* Writes arrive every step/2 for two stall times: all held. */
	for (i = 0; now < 1000 + 2 * KVP_WRITE_STALL_NS; i++) {
		struct mini_rq *r = &w[i % 2 ? 1 : 0];

		if (i >= 2) {
			/* The two writes, queued again: a new arrival. */
			list_del_init(&r->node);
			kvp_rq_unqueued(ps, ps->wq, mini_head(ps->wq), now);
		}
		r->arrival = now;
		mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, now), r);
		pick = kvp_choose(ps, now);
		if (pick.kind == KVP_PICK_WRITE)
			writes++;
		else if (pick.kind == KVP_PICK_BATCH)
			held_picks++;
		if (pick.kind == KVP_PICK_BATCH)
			serve_again(ps, db, now);
		now += step / 2;
	}
	EXPECT(!writes && held_picks,
	       "writes still arriving: %u write(s) picked, %u demand",
	       writes, held_picks);
	EXPECT(!kvp_writes_held(ps, now, &until),
	       "held with demand queued");

	/* Not counted by a throttle: held past the stall. */
	kvp_write_throttled(ps, false);
	pick = kvp_choose(ps, ps->write_ns + KVP_WRITE_STALL_NS);
	EXPECT(pick.kind == KVP_PICK_BATCH,
	       "writes no throttle counts released at the stall");
	if (pick.kind == KVP_PICK_BATCH)
		serve_again(ps, db, now);
	kvp_write_throttled(ps, true);

	/* No arrival for KVP_WRITE_STALL_NS: the two go, ahead of demand. */
	now = ps->write_ns + KVP_WRITE_STALL_NS - 1;
	pick = kvp_choose(ps, now);
	EXPECT(pick.kind == KVP_PICK_BATCH, "released before the stall");
	if (pick.kind == KVP_PICK_BATCH) {
		struct mini_rq *rq = list_first_entry(&db->rqs, struct mini_rq,
						      node);

		list_del_init(&rq->node);
		kvp_rq_dispatched(ps, db, mini_head(db), 4096, now);
	}
	now++;
	for (i = 0; i < 2; i++) {
		pick = kvp_choose(ps, now);
		EXPECT(pick.kind == KVP_PICK_WRITE &&
		       pick.why == KVB_WHY_WRITE_BURST,
		       "stalled write %u: %s", i,
		       pick.kind == KVP_PICK_WRITE ? "picked, wrong reason" :
		       "demand went first");
		if (pick.kind != KVP_PICK_WRITE)
			break;
		list_del_init(&w[i].node);
		kvp_rq_dispatched(ps, ps->wq, mini_head(ps->wq), 4096, now);
	}
	EXPECT(!ps->wq->queued && ps->burst_left == 0,
	       "%u write(s) left, burst_left %u", ps->wq->queued,
	       ps->burst_left);
	free(mem);
	return true;
}

/*
 * With no demand in the device, deferred writes and foreign (normal) reads
 * are served in arrival order. Foreign readers keep a small batch each, so
 * a burst of write_batch writes never has less remaining work than the
 * least of them; were that the test, a device saturated by foreign reads
 * would release writes only at their expiry (a burst per write_expire_ms),
 * and an engine's KV offload backlog would grow without bound.
 */
static bool test_writes_vs_normal(void)
{
	struct kvp_params p = default_params();
	struct mini_rq n[8 + 64], w[2] = {
		{ .arrival = 9, .sector = 100 }, { .arrival = 10, .sector = 200 },
	};
	struct kvp_batch *nb[8];
	struct kvp_sched *ps;
	struct kvp_pick pick;
	u32 i, used = 0, before = 0;
	u64 now = 20;
	void *mem;

	mem = calloc(1, kvp_size(16));
	ps = kvp_init(mem, 16);
	ps->p = p;
	memset(n, 0, sizeof(n));
	/* Eight foreign readers, one request each, older than the writes. */
	for (i = 0; i < 8; i++) {
		n[used].arrival = i + 1;
		nb[i] = kvp_get_batch(ps, 100 + i, KVB_TIER_NORMAL, i + 1);
		mini_queue(ps, nb[i], &n[used++]);
	}
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 9), &w[0]);
	mini_queue(ps, kvp_get_batch(ps, 0, KVB_TIER_WRITE, 10), &w[1]);

	/* Each reader reissues as soon as its request is dispatched. */
	for (i = 0; i < 64; i++, now++) {
		pick = kvp_choose(ps, now);
		if (pick.kind != KVP_PICK_BATCH)
			break;
		before++;
		mini_dispatch(ps, &pick, 0);
		kvp_rq_completed(ps, pick.batch, now, 0, kvp_depth_class(false, 8));
		n[used].arrival = now;
		mini_queue(ps, kvp_get_batch(ps, pick.batch->key,
					     KVB_TIER_NORMAL, now),
			   &n[used++]);
	}
	diag("%u foreign reads dispatched before the first write", before);
	EXPECT(pick.kind == KVP_PICK_WRITE && pick.burst_start,
	       "writes queued at 9 and 10 ns not served in %u dispatches",
	       before);
	EXPECT(before == 8, "%u foreign reads went first, expected the 8 older",
	       before);
	free(mem);
	return true;
}

/*
 * Tracepoints record tier and reason names in KVB_NAME_LEN bytes: each
 * name must exist (a hole in the table would be a NULL), fit with its NUL
 * and be unique, or a trace would be cut short or ambiguous.
 */
static bool names_ok(const char *const *names, int n, const char *what)
{
	int i, j;

	for (i = 0; i < n; i++) {
		EXPECT(names[i], "%s %d has no name", what, i);
		if (!names[i])
			continue;
		EXPECT(strlen(names[i]) > 0 && strlen(names[i]) < KVB_NAME_LEN,
		       "%s name '%s' does not fit %d bytes", what, names[i],
		       KVB_NAME_LEN);
		for (j = 0; j < i; j++)
			EXPECT(!names[j] || strcmp(names[i], names[j]),
			       "%s name '%s' twice", what, names[i]);
	}
	return true;
}

static bool test_names(void)
{
	names_ok(kvb_tier_names, KVB_NR_TIERS, "tier");
	names_ok(kvb_reason_names, KVB_NR_REASONS, "reason");
	return true;
}

TAP_MAIN(
	{ test_seed_tail, "tail: tail blocking from interleaved reads" },
	{ test_seed_prefetch, "prefetch: demand vs prefetch" },
	{ test_seed_gc, "writes: writes held during a recall" },
	{ test_seed_gc_defer_max,
	  "writes: write_defer_max releases writes early" },
	{ test_least_work, "least remaining work first" },
	{ test_starvation, "starvation bounds under a demand flood" },
	{ test_random, "200 randomized traces, invariants per event" },
	{ test_overflow, "pool overflow and reuse" },
	{ test_lifetime, "batch lifetime and histogram" },
	{ test_window, "batch window joins and reopens" },
	{ test_window_clock_order, "batch window with clock readings out of order" },
	{ test_max_inflight, "max_inflight bounds the device" },
	{ test_requeue_merge, "requeue and merged-away requests" },
	{ test_requeue_counts,
	  "a requeued request counts once in its batch's size" },
	{ test_merge_burst,
	  "write merged away mid-burst keeps later writes deferred" },
	{ test_merge_head,
	  "a batch receiving older data by a merge ages from it" },
	{ test_direct, "dispatch on arrival: when, and what it counts" },
	{ test_limit_demand,
	  "automatic max_inflight in force only while demand is about" },
	{ test_tiers, "tier of each ioprio class and direction" },
	{ test_pool_reserve, "part of the pool is demand's" },
	{ test_normal_order, "normal tier oldest first, demand least work" },
	{ test_share, "normal and prefetch shares under a demand backlog" },
	{ test_write_share, "the write share under a demand backlog" },
	{ test_aged_vs_demand,
	  "an expired backlog takes turns with demand, not its place" },
	{ test_defer_max_and_hold,
	  "write_defer_max with demand queued; held agrees with choose" },
	{ test_writes_vs_normal,
	  "deferred writes and foreign reads in arrival order, demand idle" },
	{ test_write_stall,
	  "throttled writes no write has joined for a stall go first" },
	{ test_names, "tier and reason names fit the tracepoints' fields" }
)
