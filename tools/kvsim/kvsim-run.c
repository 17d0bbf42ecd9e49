// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim runs: see kvsim-run.h.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "kvsim-run.h"

static u64 kvsim_gcd(u64 a, u64 b)
{
	while (b) {
		u64 r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/* The smallest 1, 2 or 5 times a power of ten that is >= @v. */
static u64 kvsim_nice(u64 v)
{
	u64 p = 1;

	for (;;) {
		if (v <= p)
			return p;
		if (v <= 2 * p)
			return 2 * p;
		if (v <= 5 * p)
			return 5 * p;
		p *= 10;
	}
}

/*
 * Every event time is a sum of arrivals and service times, so their
 * greatest common divisor is a tick on which every event falls: each
 * tick of the timeline then shows one state. A trace with fine-grained
 * times gets a coarser, round tick instead, to keep the timeline short.
 */
static void kvsim_ticks(struct kvsim_result *r, u64 want)
{
	const struct kvsim_trace *t = r->t;
	u64 g = 0;
	u32 i;

	for (i = 0; i < t->nr; i++) {
		g = kvsim_gcd(g, t->rqs[i].arrival);
		g = kvsim_gcd(g, t->rqs[i].service);
	}
	r->tick = want ? want : g;
	if (!want && (r->end + r->tick - 1) / r->tick > KVSIM_MAX_TICKS)
		r->tick = kvsim_nice((r->end + KVSIM_MAX_TICKS - 1) /
				     KVSIM_MAX_TICKS);
	r->ticks = (u32)((r->end + r->tick - 1) / r->tick);
	if (!r->ticks)
		r->ticks = 1;
}

bool kvsim_is_tail(const struct kvsim_run *run, u32 i)
{
	return run->b[run->rqs[i].key].tail == i;
}

bool kvsim_is_ahead(const struct kvsim_result *r, const struct kvsim_run *run,
		    u32 b, u32 i)
{
	const struct kvs_req *q = &run->rqs[i];
	const struct kvs_req *tail = &run->rqs[run->b[b].tail];

	/*
	 * Foreign work on the tail's die that ran while the batch waited:
	 * between its first arrival and the start of its tail. The die
	 * serves one request at a time, so this is time the tail lost.
	 */
	return q->key != b && q->sdie == tail->sdie &&
	       q->complete > r->binfo[b].first && q->start < tail->start;
}

/* Tails, completion times and the foreign work ahead of each tail. */
static void kvsim_batches(struct kvsim_result *r, struct kvsim_run *run)
{
	const struct kvsim_trace *t = r->t;
	u32 i, b;

	for (i = 0; i < t->nr; i++) {
		const struct kvs_req *q = &run->rqs[i];
		struct kvsim_bres *br = &run->b[q->key];
		const struct kvs_req *tail = &run->rqs[br->tail];

		if (q->complete == KVS_NO_TIME)
			continue;
		/* Ties: the one that started later waited longer. */
		if (br->done == KVS_NO_TIME || q->complete > br->done ||
		    (q->complete == br->done && q->start >= tail->start)) {
			br->done = q->complete;
			br->tail = i;
		}
	}
	for (b = 0; b < t->nr_batches; b++) {
		struct kvsim_bres *br = &run->b[b];

		if (br->done == KVS_NO_TIME)
			continue;
		for (i = 0; i < t->nr; i++) {
			const struct kvs_req *q = &run->rqs[i];
			u64 from = r->binfo[b].first;

			if (!kvsim_is_ahead(r, run, b, i))
				continue;
			br->ahead += q->complete - (q->start > from ?
						    q->start : from);
			br->nr_ahead++;
		}
	}
}

int kvsim_run_all(struct kvsim_result *r, const struct kvsim_trace *t,
		  const struct kvsim_opts *o, char *err, size_t errlen)
{
	struct kvs_config *cfg = &r->cfg;
	u32 i, b;
	int k;

	memset(r, 0, sizeof(*r));
	r->t = t;
	cfg->dies = o->dies ? o->dies : t->dies ? t->dies : KVSIM_DEFAULT_DIES;
	cfg->qdepth = o->qdepth ? o->qdepth : t->qdepth ? t->qdepth :
		      cfg->dies;
	cfg->chunk = o->chunk ? o->chunk : t->chunk ? t->chunk :
		     KVSIM_DEFAULT_CHUNK;
	cfg->nr_batches = KVSIM_NR_BATCHES;
	/* Module defaults, then the trace's "set" lines, then --set. */
	for (k = 0; k < KVB_NR_TUNABLES; k++)
		r->tun[k] = o->tun_set[k] ? o->tun[k] :
			    t->tun_set[k] ? t->tun[k] : kvb_tunables[k].def;
	/*
	 * As the module derives them; max_inflight 0 runs the module's depth
	 * controller, within the device queue depth (--queue-depth); --set
	 * max_inflight=N fixes the limit.
	 */
	kvp_params_from_tunables(&cfg->params, r->tun);
	cfg->auto_depth = !r->tun[KVB_MAX_INFLIGHT];

	if (cfg->dies > KVS_MAX_DIES) {
		kvsim_err(err, errlen, "%u dies: at most %d", cfg->dies,
			  KVS_MAX_DIES);
		return -1;
	}
	for (i = 0; i < t->nr; i++) {
		if (t->rqs[i].die >= (int)cfg->dies) {
			kvsim_err(err, errlen, "%s:%u: die %d, but the device "
				  "has %u dies (--dies)", t->name, t->line[i],
				  t->rqs[i].die, cfg->dies);
			return -1;
		}
	}

	r->binfo = calloc(t->nr_batches, sizeof(*r->binfo));
	if (!r->binfo)
		goto nomem;
	for (b = 0; b < t->nr_batches; b++)
		r->binfo[b].first = KVS_NO_TIME;
	for (i = 0; i < t->nr; i++) {
		const struct kvs_req *q = &t->rqs[i];
		struct kvsim_binfo *bi = &r->binfo[q->key];

		if (!bi->nr)
			bi->tier = kvp_tier_of(q->ioprio, q->write, q->sync,
					       cfg->params.hint_demand);
		if (q->arrival < bi->first)
			bi->first = q->arrival;
		bi->work += q->service;
		bi->nr++;
		r->trace_work += q->service;
	}

	for (k = 0; k < KVS_NR_SCHEDS; k++) {
		struct kvsim_run *run;

		if (!(o->scheds & (1U << k)))
			continue;
		run = &r->run[r->nr_runs++];
		run->sched = k;
		run->rqs = malloc(t->nr * sizeof(*run->rqs));
		run->b = calloc(t->nr_batches, sizeof(*run->b));
		if (!run->rqs || !run->b)
			goto nomem;
		memcpy(run->rqs, t->rqs, t->nr * sizeof(*run->rqs));
		cfg->sched = k;
		run->rc = kvs_run(&run->sim, cfg, run->rqs, t->nr);
		run->work = kvs_total_work(&run->sim);
		for (b = 0; b < t->nr_batches; b++)
			run->b[b].done = KVS_NO_TIME;
		kvsim_batches(r, run);
		if (run->sim.end > r->end)
			r->end = run->sim.end;
	}
	kvsim_ticks(r, o->tick);
	return 0;
nomem:
	kvsim_err(err, errlen, "out of memory");
	return -1;
}

void kvsim_result_free(struct kvsim_result *r)
{
	u32 k;

	for (k = 0; k < r->nr_runs; k++) {
		kvs_free(&r->run[k].sim);
		free(r->run[k].rqs);
		free(r->run[k].b);
	}
	free(r->binfo);
	memset(r, 0, sizeof(*r));
}

u32 kvsim_check(const struct kvsim_result *r, char *err, size_t errlen)
{
	const struct kvsim_trace *t = r->t;
	u32 bad = 0, k, i;

#define KVSIM_BAD(...)							\
	do {								\
		if (!bad++)						\
			kvsim_err(err, errlen, __VA_ARGS__);		\
	} while (0)

	for (k = 0; k < r->nr_runs; k++) {
		const struct kvsim_run *run = &r->run[k];
		const char *name = kvs_sched_names[run->sched];

		if (run->rc)
			KVSIM_BAD("%s: the run did not finish (%u requests "
				  "never dispatched)", name,
				  run->sim.queued);
		for (i = 0; i < t->nr; i++) {
			const struct kvs_req *q = &run->rqs[i];

			if (q->nr_dispatch != 1 || q->nr_complete != 1)
				KVSIM_BAD("%s: request %u (%s:%u) dispatched %u "
					  "times, completed %u times", name, i,
					  t->name, t->line[i], q->nr_dispatch,
					  q->nr_complete);
			else if (q->dispatch < q->arrival ||
				 q->start < q->dispatch ||
				 q->complete != q->start + q->service)
				KVSIM_BAD("%s: request %u (%s:%u) served out of "
					  "order", name, i, t->name,
					  t->line[i]);
		}
		if (run->work != r->trace_work)
			KVSIM_BAD("%s: total work %llu ns, but the trace's "
				  "service times add up to %llu ns", name,
				  (unsigned long long)run->work,
				  (unsigned long long)r->trace_work);
	}
#undef KVSIM_BAD
	return bad;
}

int kvsim_on_die(const struct kvsim_run *run, u32 die, u64 t0, u64 t1)
{
	int best = -1;
	u32 i;

	for (i = 0; i < run->sim.nr; i++) {
		const struct kvs_req *q = &run->rqs[i];

		if (q->sdie != (int)die || q->start == KVS_NO_TIME)
			continue;
		if (q->start <= t0 && q->complete > t0)
			return (int)i;
		/* Idle at the tick's start: what starts within it. */
		if (q->start > t0 && q->start < t1 &&
		    (best < 0 || q->start < run->rqs[best].start))
			best = (int)i;
	}
	return best;
}
