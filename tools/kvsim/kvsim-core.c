// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim-core: see kvsim-core.h. The KVBATCH scheduler follows the host
 * contract of kv-policy.h step by step, in the same order as the elevator,
 * so that what the tests observe is what the kernel would do with the same
 * sequence of events.
 */
#include <stdlib.h>

#include "kvsim-core.h"

const char *const kvs_sched_names[KVS_NR_SCHEDS] = {
	[KVS_FIFO]	= "fifo",
	[KVS_PRIO]	= "prio",
	[KVS_KVBATCH]	= "kvbatch",
	[KVS_ORACLE]	= "oracle",
};

static void kvs_hook(struct kvs_sim *s, enum kvs_event ev, struct kvs_req *rq)
{
	if (s->cfg.hook)
		s->cfg.hook(s, ev, rq, s->cfg.hook_arg);
}

static struct kvs_req *kvs_first(struct list_head *h)
{
	return list_first_entry_or_null(h, struct kvs_req, node);
}

/* Arrival of the oldest queued request of @b after an event, or 0. */
static u64 kvs_head_ns(struct kvp_batch *b)
{
	struct kvs_req *rq = kvs_first(&b->rqs);

	return rq ? rq->arrival : 0;
}

/* mq-deadline's view of ioprio: RT, then BE (NONE counts as BE), IDLE. */
static unsigned int kvs_prio_class(u16 ioprio)
{
	switch (KV_IOPRIO_CLASS(ioprio)) {
	case KV_IOPRIO_CLASS_RT:
		return 0;
	case KV_IOPRIO_CLASS_IDLE:
		return 2;
	default:
		return 1;
	}
}

/* ---- scheduler side --------------------------------------------------- */

static void kvs_sched_arrive(struct kvs_sim *s, struct kvs_req *rq)
{
	struct kvp_sched *ps = s->ps;
	struct kvp_batch *b;
	struct kvs_req *old;

	s->nr_arrivals++;
	if (s->cfg.sched == KVS_FIFO) {
		list_add_tail(&rq->node, &s->fifo);
		goto queued;
	}
	if (s->cfg.sched == KVS_ORACLE) {
		struct kvs_okey *k = &s->okeys[rq->okey];

		/* As kvbatch's: a key's batch lasts while it has requests. */
		if (!k->unfinished++)
			k->first = s->now;
		list_add_tail(&rq->node, &s->die_wait[rq->sdie]);
		goto queued;
	}
	if (s->cfg.sched == KVS_PRIO) {
		list_add_tail(&rq->node, &s->prio[kvs_prio_class(rq->ioprio)]);
		goto queued;
	}

	b = kvp_get_batch(ps, rq->key, rq->tier, s->now);
	if (s->cfg.merge_every && s->nr_arrivals % s->cfg.merge_every == 0 &&
	    !list_empty(&b->rqs)) {
		/*
		 * Back merge: the newest queued request of the batch leaves
		 * without being dispatched. It is reported before the new
		 * request is inserted, as the elevator would, so the batch
		 * may close (or start draining) in between: look it up again.
		 */
		old = list_entry(b->rqs.prev, struct kvs_req, node);
		list_del_init(&old->node);
		old->queued = false;
		old->merged = true;
		s->queued--;
		s->nr_tier_queued[old->tier]--;
		s->nr_merges++;
		rq->service += old->service;
		kvp_rq_unqueued(ps, b, kvs_head_ns(b), s->now);
		kvs_hook(s, KVS_EV_MERGE, old);
		b = kvp_get_batch(ps, rq->key, rq->tier, s->now);
	}
	rq->batch = b;
	list_add_tail(&rq->node, &b->rqs);
	kvp_rq_queued(ps, b, kvs_head_ns(b));
queued:
	/* Counted last, so the host and the core agree at every hook. */
	rq->queued = true;
	s->queued++;
	s->nr_tier_queued[rq->tier]++;
}

/* The deferred write to take in a burst: lowest sector >= burst_pos. */
static struct kvs_req *kvs_burst_next(struct kvs_sim *s)
{
	struct kvs_req *rq, *up = NULL, *low = NULL;

	list_for_each_entry(rq, &s->ps->wq->rqs, node) {
		if (!low || rq->sector < low->sector)
			low = rq;
		if (rq->sector >= s->burst_pos &&
		    (!up || rq->sector < up->sector))
			up = rq;
	}
	return up ? up : low;
}

/*
 * Whether the oracle serves @a before @b.
 *
 * Demand first, then normal reads, prefetch and deferrable writes, by
 * kvp_tier_of() as kvbatch tiers them, so that both serve the same
 * requests as demand: the report measures demand batch completion, and a
 * request of another tier served while demand waits on its die can only
 * delay it.
 *
 * Among demand, the batch with the fewest unfinished requests (arrived
 * and not completed, on all dies) first. A batch completes with its last
 * request, so its remaining requests are the work between it and its
 * completion: serving the batch with the least of it first is shortest
 * remaining processing time, which minimises the mean completion time on
 * one server, and serving a small batch ahead of a large one takes it out
 * of the mean early while delaying the large one by one request's time.
 * Ties go to the older batch, then the older request, so that no batch
 * waits for ever behind ones of its size. The other tiers go in arrival
 * order, as FIFO serves them: their completion is not what the report
 * measures.
 *
 * This is a heuristic, not an optimum. Minimising the mean completion
 * time of batches spread over several servers is NP-hard (concurrent
 * open shop), and so is minimising the mean completion time on one
 * server once requests arrive over time (1|r_j|sum C_j); the oracle looks
 * ahead no further than kvs_oracle_pick() says, and never reorders demand
 * for a request still to come. It is the best order kvsim knows, and one
 * that no elevator reaches: an elevator commits a request to its die's
 * FIFO when it dispatches it, and sees neither which die is free nor what
 * will arrive.
 */
static bool kvs_oracle_before(const struct kvs_sim *s,
			      const struct kvs_req *a, const struct kvs_req *b)
{
	const struct kvs_okey *ka = &s->okeys[a->okey];
	const struct kvs_okey *kb = &s->okeys[b->okey];

	if (a->tier != b->tier)
		return a->tier < b->tier;
	if (a->tier == KVB_TIER_DEMAND && a->okey != b->okey) {
		if (ka->unfinished != kb->unfinished)
			return ka->unfinished < kb->unfinished;
		if (ka->first != kb->first)
			return ka->first < kb->first;
	}
	if (a->arrival != b->arrival)
		return a->arrival < b->arrival;
	return a->id < b->id;
}

/* When the next demand request for die @d arrives, after now. */
static u64 kvs_oracle_next_demand(struct kvs_sim *s, u32 d)
{
	u32 *i = &s->demand_next[d];

	while (*i < s->demand_off[d + 1] && s->demand_at[*i] <= s->now)
		(*i)++;
	return *i < s->demand_off[d + 1] ? s->demand_at[*i] : KVS_NO_TIME;
}

/*
 * The oracle's next request: the first, by kvs_oracle_before(), of those
 * waiting for a free die. A die takes a request only when it is free, so
 * no request waits in the device and each die picks its next one from
 * everything that has arrived for it. Called while the device has room:
 * with fewer slots than dies, the free dies compete for them.
 *
 * The oracle knows the arrivals too: a die starts a request of another
 * tier than demand only if it ends by the time the die's next demand
 * request arrives, and otherwise idles until then (or takes one that
 * fits). An elevator can hold requests back as well, and kvbatch does,
 * holding deferrable writes while demand is about; a floor that could
 * not would lose to it. Demand is still served as soon as its die is
 * free, so among demand the oracle is work-conserving, and the time a
 * die idles is time some demand request did not spend waiting.
 */
static struct kvs_req *kvs_oracle_pick(struct kvs_sim *s)
{
	struct kvs_req *rq, *best = NULL;
	u64 next;
	u32 d;

	for (d = 0; d < s->cfg.dies; d++) {
		if (!list_empty(&s->die_q[d]))
			continue;
		next = kvs_oracle_next_demand(s, d);
		list_for_each_entry(rq, &s->die_wait[d], node) {
			if (rq->tier != KVB_TIER_DEMAND &&
			    next != KVS_NO_TIME && s->now + rq->service > next)
				continue;
			if (!best || kvs_oracle_before(s, rq, best))
				best = rq;
		}
	}
	return best;
}

/*
 * Choose the next request, or NULL. Returns NULL with *error set if the
 * core names something the host cannot dispatch (an empty batch).
 */
static struct kvs_req *kvs_sched_pick(struct kvs_sim *s, int *error)
{
	struct kvp_pick pick;
	struct kvs_req *rq;
	unsigned int c;

	if (s->cfg.sched == KVS_FIFO)
		return kvs_first(&s->fifo);
	if (s->cfg.sched == KVS_ORACLE)
		return kvs_oracle_pick(s);
	if (s->cfg.sched == KVS_PRIO) {
		for (c = 0; c < 3; c++)
			if (!list_empty(&s->prio[c]))
				return kvs_first(&s->prio[c]);
		return NULL;
	}

	pick = kvp_choose(s->ps, s->now);
	switch (pick.kind) {
	case KVP_PICK_BATCH:
		rq = kvs_first(&pick.batch->rqs);
		break;
	case KVP_PICK_WRITE:
		if (pick.burst_start)
			rq = kvs_first(&s->ps->wq->rqs);
		else
			rq = kvs_burst_next(s);
		if (rq)
			s->burst_pos = rq->sector + rq->nr_sectors;
		break;
	default:
		return NULL;
	}
	if (!rq || rq->batch != pick.batch) {
		*error = 1;
		return NULL;
	}
	rq->why = pick.why;
	rq->burst_start = pick.burst_start;
	return rq;
}

static void kvs_sched_dispatched(struct kvs_sim *s, struct kvs_req *rq)
{
	list_del_init(&rq->node);
	rq->queued = false;
	s->queued--;
	s->nr_tier_queued[rq->tier]--;
	if (s->cfg.sched != KVS_KVBATCH)
		return;
	/* As the elevator does: the bytes with the first dispatch only. */
	kvp_rq_dispatched(s->ps, rq->batch, kvs_head_ns(rq->batch),
			  rq->nr_requeue ? 0 : rq->nr_sectors * 512, s->now);
}

static void kvs_sched_requeue(struct kvs_sim *s, struct kvs_req *rq)
{
	rq->queued = true;
	s->queued++;
	s->nr_tier_queued[rq->tier]++;
	if (s->cfg.sched == KVS_FIFO) {
		list_add(&rq->node, &s->fifo);
	} else if (s->cfg.sched == KVS_PRIO) {
		list_add(&rq->node, &s->prio[kvs_prio_class(rq->ioprio)]);
	} else {
		list_add(&rq->node, &rq->batch->rqs);
		kvp_rq_requeued(s->ps, rq->batch, kvs_head_ns(rq->batch));
	}
}

/* ---- device side ------------------------------------------------------ */

/* The request enters its die's FIFO: the model says when it will end. */
static void kvs_start(struct kvs_sim *s, struct kvs_req *rq)
{
	u64 end = kvssd_die_submit(&s->dev, rq->sdie, s->now, rq->service,
				   rq->write);

	rq->start = end - rq->service;
}

static void kvs_dispatch(struct kvs_sim *s, struct kvs_req *rq)
{
	bool idle = !kvssd_die_busy(&s->dev, rq->sdie, s->now);

	kvs_sched_dispatched(s, rq);
	rq->dispatch = s->now;
	rq->dseq = s->nr_dispatches++;
	rq->nr_dispatch++;
	list_add_tail(&rq->dnode, &s->die_q[rq->sdie]);
	s->nr_tier_device[rq->tier]++;
	if (++s->in_device > s->max_in_device)
		s->max_in_device = s->in_device;
	if (!idle)
		s->nr_stalls++;
	if (!idle && s->cfg.sched == KVS_KVBATCH && s->cfg.requeue_every &&
	    !rq->nr_requeue && s->nr_stalls % s->cfg.requeue_every == 0) {
		/*
		 * It would wait for a busy die, so it has not started and
		 * can be handed back, as a driver returning BLK_STS_RESOURCE
		 * would.
		 */
		kvs_hook(s, KVS_EV_DISPATCH, rq);
		list_del_init(&rq->dnode);
		s->in_device--;
		s->nr_tier_device[rq->tier]--;
		rq->nr_requeue++;
		s->nr_requeues++;
		kvs_sched_requeue(s, rq);
		kvs_hook(s, KVS_EV_REQUEUE, rq);
		return;
	}
	kvs_start(s, rq);
	kvs_hook(s, KVS_EV_DISPATCH, rq);
}

static void kvs_complete(struct kvs_sim *s, struct kvs_req *rq)
{
	list_del_init(&rq->dnode);
	kvssd_die_done(&s->dev, rq->sdie);
	rq->complete = s->now;
	rq->nr_complete++;
	s->in_device--;
	s->nr_tier_device[rq->tier]--;
	s->end = s->now;
	if (s->cfg.sched == KVS_ORACLE)
		s->okeys[rq->okey].unfinished--;
	if (s->cfg.sched == KVS_KVBATCH)
		kvp_rq_completed(s->ps, rq->batch, s->now,
				 s->now - rq->dispatch,
				 kvp_depth_class(rq->write, rq->nr_sectors));
	kvs_hook(s, KVS_EV_COMPLETE, rq);
}

/* ---- the run ---------------------------------------------------------- */

static int kvs_cmp_arrival(const void *a, const void *b)
{
	const struct kvs_req *x = *(struct kvs_req *const *)a;
	const struct kvs_req *y = *(struct kvs_req *const *)b;

	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int kvs_cmp_key(const void *a, const void *b)
{
	const struct kvs_req *x = *(struct kvs_req *const *)a;
	const struct kvs_req *y = *(struct kvs_req *const *)b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/*
 * ORACLE: the per-die queues, a dense index for each distinct key, and
 * each die's demand arrivals in order, from @order (sorted by arrival).
 */
static int kvs_oracle_setup(struct kvs_sim *s, struct kvs_req **order)
{
	u32 i, n = 0, dies = s->cfg.dies, nr = s->nr ? s->nr : 1;
	struct kvs_req **by_key;

	s->die_wait = calloc(dies, sizeof(*s->die_wait));
	s->okeys = calloc(nr, sizeof(*s->okeys));
	s->demand_at = calloc(nr, sizeof(*s->demand_at));
	s->demand_off = calloc(dies + 1, sizeof(*s->demand_off));
	s->demand_next = calloc(dies, sizeof(*s->demand_next));
	by_key = calloc(nr, sizeof(*by_key));
	if (!s->die_wait || !s->okeys || !s->demand_at || !s->demand_off ||
	    !s->demand_next || !by_key) {
		free(by_key);
		return -1;
	}
	for (i = 0; i < dies; i++)
		INIT_LIST_HEAD(&s->die_wait[i]);
	for (i = 0; i < s->nr; i++)
		by_key[i] = &s->rqs[i];
	qsort(by_key, s->nr, sizeof(*by_key), kvs_cmp_key);
	for (i = 0; i < s->nr; i++) {
		if (i && by_key[i]->key != by_key[i - 1]->key)
			n++;
		by_key[i]->okey = n;
	}
	free(by_key);

	/* Count per die, make the counts offsets, then fill in order. */
	for (i = 0; i < s->nr; i++)
		if (order[i]->tier == KVB_TIER_DEMAND)
			s->demand_off[order[i]->sdie + 1]++;
	for (i = 0; i < dies; i++) {
		s->demand_off[i + 1] += s->demand_off[i];
		s->demand_next[i] = s->demand_off[i];
	}
	for (i = 0; i < s->nr; i++)
		if (order[i]->tier == KVB_TIER_DEMAND)
			s->demand_at[s->demand_next[order[i]->sdie]++] =
				order[i]->arrival;
	for (i = 0; i < dies; i++)
		s->demand_next[i] = s->demand_off[i];
	return 0;
}

static int kvs_setup(struct kvs_sim *s, const struct kvs_config *cfg,
		     struct kvs_req *rqs, u32 nr)
{
	/*
	 * Every request names its die and service time, so the model's
	 * striping and page times are not used: any valid values do.
	 */
	struct kvssd_config dev = {
		.channels = 1,
		.dies_per_channel = cfg->dies,
		.stripe_sectors = 8,
		.page_sectors = 8,
		.read_ns = 1,
		.program_ns = 1,
		.erase_ns = 1,
	};
	struct kvp_params p;
	u32 i;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->rqs = rqs;
	s->nr = nr;
	if (!cfg->dies || cfg->dies > KVS_MAX_DIES || !cfg->qdepth ||
	    cfg->sched >= KVS_NR_SCHEDS)
		return -1;
	s->dies = calloc(cfg->dies, sizeof(*s->dies));
	s->die_q = calloc(cfg->dies, sizeof(*s->die_q));
	if (!s->dies || !s->die_q || kvssd_model_init(&s->dev, &dev, s->dies))
		return -1;
	for (i = 0; i < cfg->dies; i++)
		INIT_LIST_HEAD(&s->die_q[i]);
	INIT_LIST_HEAD(&s->fifo);
	for (i = 0; i < 3; i++)
		INIT_LIST_HEAD(&s->prio[i]);

	for (i = 0; i < nr; i++) {
		struct kvs_req *rq = &rqs[i];

		/* A zero service time would complete before it started. */
		if (!rq->service)
			return -1;
		rq->id = i;
		rq->sdie = rq->die >= 0 ? rq->die % (int)cfg->dies :
			   (int)((rq->sector / (cfg->chunk ? cfg->chunk : 1)) %
				 cfg->dies);
		rq->tier = kvp_tier_of(rq->ioprio, rq->write, rq->sync,
				       cfg->params.hint_demand);
		rq->dispatch = rq->start = rq->complete = KVS_NO_TIME;
		rq->nr_dispatch = rq->nr_complete = rq->nr_requeue = 0;
		rq->merged = false;
		rq->queued = false;
		rq->batch = NULL;
		INIT_LIST_HEAD(&rq->node);
		INIT_LIST_HEAD(&rq->dnode);
	}

	if (cfg->sched == KVS_KVBATCH) {
		s->mem = calloc(1, kvp_size(cfg->nr_batches));
		if (!s->mem)
			return -1;
		s->ps = kvp_init(s->mem, cfg->nr_batches);
		p = cfg->params;
		if (cfg->auto_depth) {
			p.max_inflight = 0;
			p.limit_auto = true;
			p.limit_ceiling = cfg->qdepth;
		}
		kvp_set_params(s->ps, &p);
	}
	return 0;
}

int kvs_run(struct kvs_sim *s, const struct kvs_config *cfg,
	    struct kvs_req *rqs, u32 nr)
{
	struct kvs_req **order;
	u32 next = 0, d;
	int error = 0;

	if (kvs_setup(s, cfg, rqs, nr))
		return -1;
	order = calloc(nr ? nr : 1, sizeof(*order));
	if (!order)
		return -1;
	for (d = 0; d < nr; d++)
		order[d] = &rqs[d];
	qsort(order, nr, sizeof(*order), kvs_cmp_arrival);
	if (cfg->sched == KVS_ORACLE && kvs_oracle_setup(s, order)) {
		free(order);
		return -1;
	}

	for (;;) {
		u64 t = next < nr ? order[next]->arrival : KVS_NO_TIME;
		struct kvs_req *rq;

		for (d = 0; d < cfg->dies; d++) {
			rq = list_first_entry_or_null(&s->die_q[d],
						      struct kvs_req, dnode);
			if (rq && rq->start + rq->service < t)
				t = rq->start + rq->service;
		}
		if (t == KVS_NO_TIME)
			break;
		s->now = t;

		for (d = 0; d < cfg->dies; d++) {
			rq = list_first_entry_or_null(&s->die_q[d],
						      struct kvs_req, dnode);
			if (rq && rq->start + rq->service == t)
				kvs_complete(s, rq);
		}
		while (next < nr && order[next]->arrival == t) {
			rq = order[next++];
			kvs_sched_arrive(s, rq);
			kvs_hook(s, KVS_EV_ARRIVE, rq);
		}
		while (s->in_device < cfg->qdepth) {
			rq = kvs_sched_pick(s, &error);
			if (!rq)
				break;
			kvs_dispatch(s, rq);
		}
		if (error)
			break;
	}
	free(order);
	/* Anything still queued was never dispatched: the run is stuck. */
	return error || s->queued ? -1 : 0;
}

void kvs_free(struct kvs_sim *s)
{
	free(s->mem);
	free(s->dies);
	free(s->die_q);
	free(s->die_wait);
	free(s->okeys);
	free(s->demand_at);
	free(s->demand_off);
	free(s->demand_next);
	s->mem = NULL;
	s->ps = NULL;
	s->dies = NULL;
	s->die_q = NULL;
	s->die_wait = NULL;
	s->okeys = NULL;
	s->demand_at = NULL;
	s->demand_off = NULL;
	s->demand_next = NULL;
}

struct kvs_batch_time kvs_batch(const struct kvs_sim *s, u64 key)
{
	struct kvs_batch_time bt = { .first_arrival = KVS_NO_TIME };
	bool unfinished = false;
	u32 i;

	for (i = 0; i < s->nr; i++) {
		const struct kvs_req *rq = &s->rqs[i];

		if (rq->key != key || rq->merged)
			continue;
		if (rq->arrival < bt.first_arrival)
			bt.first_arrival = rq->arrival;
		/* A request never completed leaves the batch unfinished. */
		if (rq->complete == KVS_NO_TIME)
			unfinished = true;
		else if (rq->complete > bt.last_complete)
			bt.last_complete = rq->complete;
		bt.nr++;
	}
	if (unfinished || !bt.nr)
		bt.last_complete = KVS_NO_TIME;
	return bt;
}

u64 kvs_total_work(const struct kvs_sim *s)
{
	u64 sum = 0;
	u32 d;

	/* Nothing ran if the setup failed before the dies existed. */
	for (d = 0; s->dies && d < s->cfg.dies; d++)
		sum += s->dies[d].busy_ns;
	return sum;
}
