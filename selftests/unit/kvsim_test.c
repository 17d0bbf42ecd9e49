// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of kvsim (tools/kvsim): the built-in traces (tail, prefetch
 * and writes), as kvsim parses and runs them, finish in the order their
 * situations predict under FIFO, strict priority, kvbatch and the oracle,
 * with the same total work; the oracle follows its pick rule and is no
 * slower for demand than FIFO or kvbatch; random traces conserve work and
 * never dispatch a request twice; the trace format round-trips and
 * rejects bad input with its line number.
 * Output is TAP, like kvp_test.
 *
 * Expectations are orderings that follow from the situations, and a few
 * completion times worked out by hand in the comments, never figures
 * copied from a run.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvsim-run.h"
#include "tap.h"

#ifndef KVST_RANDOM_TRACES
#define KVST_RANDOM_TRACES	300
#endif

#define US	1000ULL


/* ---- helpers ---------------------------------------------------------- */

struct seed {
	struct kvsim_trace	t;
	struct kvsim_result	r;
	bool			ok;
};

static const struct kvsim_opts all_scheds = {
	.scheds = (1U << KVS_NR_SCHEDS) - 1,
};

/* Load built-in @name and run it under every scheduler. */
static bool seed_run(struct seed *s, const char *name)
{
	char err[KVSIM_ERR_MAX];
	u32 bad;

	kvsim_trace_init(&s->t);
	memset(&s->r, 0, sizeof(s->r));
	s->ok = false;
	if (kvsim_load_builtin(&s->t, name, err, sizeof(err))) {
		EXPECT(0, "%s: %s", name, err);
		return false;
	}
	if (kvsim_run_all(&s->r, &s->t, &all_scheds, err, sizeof(err))) {
		EXPECT(0, "%s: %s", name, err);
		return false;
	}
	EXPECT(s->r.nr_runs == KVS_NR_SCHEDS, "%s: %u runs", name,
	       s->r.nr_runs);
	bad = kvsim_check(&s->r, err, sizeof(err));
	EXPECT(bad == 0, "%s: %u check failures: %s", name, bad, err);
	s->ok = bad == 0 && s->r.nr_runs == KVS_NR_SCHEDS;
	return s->ok;
}

static void seed_free(struct seed *s)
{
	kvsim_result_free(&s->r);
	kvsim_trace_free(&s->t);
}

static int key_of(const struct seed *s, const char *batch)
{
	u32 b;

	for (b = 0; b < s->t.nr_batches; b++)
		if (!strcmp(s->t.bname[b], batch))
			return (int)b;
	EXPECT(0, "no batch %s", batch);
	return 0;
}

/* The run of @sched (runs are in enum order when all are selected). */
static const struct kvsim_run *run_of(const struct seed *s, enum kvs_sched k)
{
	return &s->r.run[k];
}

static u64 done(const struct seed *s, enum kvs_sched k, const char *batch)
{
	return run_of(s, k)->b[key_of(s, batch)].done;
}

static u64 ahead(const struct seed *s, enum kvs_sched k, const char *batch)
{
	return run_of(s, k)->b[key_of(s, batch)].ahead;
}

static void report(const struct seed *s, const char *const *batches, int n)
{
	int i, k;

	for (i = 0; i < n; i++) {
		char line[160];
		int off;

		off = snprintf(line, sizeof(line), "%s: %-8s", s->t.name,
			       batches[i]);
		for (k = 0; k < KVS_NR_SCHEDS; k++)
			off += snprintf(line + off, sizeof(line) - off,
					" %s=%lluus", kvs_sched_names[k],
					(unsigned long long)
					(done(s, k, batches[i]) / US));
		diag("%s", line);
	}
}

/* Identical total work, equal to the trace's service times. */
static void expect_same_work(const struct seed *s)
{
	u64 sum = 0;
	u32 i, k;

	for (i = 0; i < s->t.nr; i++)
		sum += s->t.rqs[i].service;
	for (k = 0; k < s->r.nr_runs; k++)
		EXPECT(s->r.run[k].work == sum, "%s: %s work %llu, trace %llu",
		       s->t.name, kvs_sched_names[s->r.run[k].sched],
		       (unsigned long long)s->r.run[k].work,
		       (unsigned long long)sum);
}

/*
 * The mean demand batch time of @run, last completion minus first
 * arrival, as kvsim reports it; 0 if the trace has no demand batch.
 */
static u64 demand_mean(const struct kvsim_result *r,
		       const struct kvsim_run *run)
{
	u64 sum = 0;
	u32 b, n = 0;

	for (b = 0; b < r->t->nr_batches; b++) {
		if (r->binfo[b].tier != KVB_TIER_DEMAND)
			continue;
		sum += run->b[b].done - r->binfo[b].first;
		n++;
	}
	return n ? sum / n : 0;
}

/*
 * The oracle is the floor the report compares with: its mean demand batch
 * time is no longer than FIFO's or kvbatch's, and it does the same work.
 */
static void expect_oracle_floor(const struct kvsim_result *r,
				const char *name)
{
	const struct kvsim_run *fifo = NULL, *kvb = NULL, *orc = NULL;
	u32 k;

	for (k = 0; k < r->nr_runs; k++) {
		if (r->run[k].sched == KVS_FIFO)
			fifo = &r->run[k];
		else if (r->run[k].sched == KVS_KVBATCH)
			kvb = &r->run[k];
		else if (r->run[k].sched == KVS_ORACLE)
			orc = &r->run[k];
	}
	if (!fifo || !kvb || !orc) {
		EXPECT(0, "%s: no fifo, kvbatch or oracle run", name);
		return;
	}
	EXPECT(demand_mean(r, orc) <= demand_mean(r, fifo) &&
	       demand_mean(r, orc) <= demand_mean(r, kvb),
	       "%s: demand mean oracle %llu, fifo %llu, kvbatch %llu ns",
	       name, (unsigned long long)demand_mean(r, orc),
	       (unsigned long long)demand_mean(r, fifo),
	       (unsigned long long)demand_mean(r, kvb));
	EXPECT(orc->work == fifo->work, "%s: oracle work %llu, fifo %llu",
	       name, (unsigned long long)orc->work,
	       (unsigned long long)fifo->work);
}

/*
 * What the built-ins below expect of their batches, in two tables: the
 * order of two completions (batch a under scheduler ka, then batch b under
 * kb), and completion times worked out by hand (in each one's comment).
 */
enum order { BEFORE, NOT_AFTER, SAME };

static const struct expect_order {
	const char *seed;
	enum kvs_sched ka;
	const char *a;
	enum order order;
	enum kvs_sched kb;
	const char *b;
	const char *msg;
} expect_orders_tab[] = {
	{ "tail", KVS_FIFO, "A", BEFORE, KVS_FIFO, "B",
	  "fifo: A arrived first but finished after B" },
	{ "tail", KVS_PRIO, "A", BEFORE, KVS_FIFO, "A",
	  "prio did not pull the RT recall forward" },
	{ "tail", KVS_KVBATCH, "B", BEFORE, KVS_KVBATCH, "A",
	  "kvbatch: the smaller recall B did not finish first" },
	{ "tail", KVS_KVBATCH, "B", BEFORE, KVS_FIFO, "B",
	  "kvbatch: B not earlier than under fifo and prio" },
	{ "tail", KVS_KVBATCH, "B", BEFORE, KVS_PRIO, "B",
	  "kvbatch: B not earlier than under fifo and prio" },
	{ "tail", KVS_KVBATCH, "A", NOT_AFTER, KVS_FIFO, "A",
	  "kvbatch: A later than under fifo" },
	{ "prefetch", KVS_FIFO, "prefetch", BEFORE, KVS_FIFO, "recall",
	  "fifo: the recall did not wait for the prefetch" },
	{ "prefetch", KVS_KVBATCH, "recall", BEFORE, KVS_KVBATCH, "prefetch",
	  "kvbatch: prefetch finished before the recall" },
	{ "prefetch", KVS_KVBATCH, "recall", BEFORE, KVS_FIFO, "recall",
	  "kvbatch: recall not earlier than fifo" },
	{ "prefetch", KVS_PRIO, "recall", BEFORE, KVS_FIFO, "recall",
	  "prio: recall not earlier than fifo" },
	{ "writes", KVS_KVBATCH, "recall", BEFORE, KVS_FIFO, "recall",
	  "kvbatch: recall not earlier than fifo" },
	{ "writes", KVS_PRIO, "recall", SAME, KVS_FIFO, "recall",
	  "prio differs from fifo with one class" },
};

static const struct expect_done {
	const char *seed;
	enum kvs_sched k;
	const char *batch;
	u64 at;
} expect_done_tab[] = {
	{ "tail", KVS_FIFO, "A", 300 * US },
	{ "tail", KVS_FIFO, "B", 400 * US },
	{ "tail", KVS_KVBATCH, "B", 200 * US },
	{ "prefetch", KVS_KVBATCH, "recall", 200 * US },
	{ "prefetch", KVS_FIFO, "recall", 400 * US },
	{ "writes", KVS_KVBATCH, "recall", 200 * US },
	{ "writes", KVS_FIFO, "recall", 500 * US },
	{ "tail", KVS_ORACLE, "A", 110 * US },
	{ "tail", KVS_ORACLE, "B", 210 * US },
	{ "tail", KVS_ORACLE, "foreign", 410 * US },
	{ "prefetch", KVS_ORACLE, "recall", 105 * US },
	{ "prefetch", KVS_ORACLE, "prefetch", 405 * US },
	{ "writes", KVS_ORACLE, "recall", 200 * US },
};

/* The built-in's rows of both tables. */
static void expect_seed(const struct seed *s, const char *seed)
{
	const struct expect_order *o;
	const struct expect_done *d;

	for (o = expect_orders_tab;
	     o < expect_orders_tab + ARRAY_SIZE(expect_orders_tab); o++) {
		u64 a, b;

		if (strcmp(o->seed, seed))
			continue;
		a = done(s, o->ka, o->a);
		b = done(s, o->kb, o->b);
		EXPECT(o->order == BEFORE ? a < b :
		       o->order == NOT_AFTER ? a <= b : a == b, "%s", o->msg);
	}
	for (d = expect_done_tab;
	     d < expect_done_tab + ARRAY_SIZE(expect_done_tab); d++)
		if (!strcmp(d->seed, seed))
			EXPECT(done(s, d->k, d->batch) == d->at,
			       "%s: %s done at %llu, expected %lluus",
			       kvs_sched_names[d->k], d->batch,
			       (unsigned long long)done(s, d->k, d->batch),
			       (unsigned long long)(d->at / US));
}

/*
 * Run the built-in @name under every scheduler, report its batches, and
 * check the same work and its rows of the tables; false if it did not
 * run.
 */
static bool seed_check(struct seed *s, const char *name,
		       const char *const *batches, int n)
{
	if (!seed_run(s, name))
		return false;
	report(s, batches, n);
	expect_same_work(s);
	expect_seed(s, name);
	expect_oracle_floor(&s->r, name);
	return true;
}

/* ---- the built-in situations ------------------------------------------ */

/*
 * tail. Three dies, queue depth 3, 100us reads. Six foreign reads (two
 * per die) at 0, recall A (RT, one read per die) at 10us, recall B (BE
 * with a hint, dies 0 and 2) at 20us, a foreign read on die 1 at 30us.
 *
 * FIFO: foreign, foreign, then A on every die (A done at 300us), then B
 * (400us). Strict priority: A is RT and goes before all BE work; B is BE,
 * like the foreign reads, so priority cannot tell them apart. kvbatch: B
 * and A are both demand; B has less work, so at 100us B's two reads go
 * first and finish at 200us, A follows (300us). The oracle knows A comes
 * at 10us: no die starts a 100us foreign read at 0, A runs from 10us
 * (110us), B on dies 0 and 2 from 110us (210us), the foreign reads after
 * it there and after A on die 1 (410us).
 */
static bool test_tail(void)
{
	static const char *const names[] = { "A", "B", "foreign" };
	struct seed s;

	if (!seed_check(&s, "tail", names, 3))
		goto out;
	/* FIFO leaves foreign work ahead of B's tail; kvbatch less. */
	EXPECT(ahead(&s, KVS_KVBATCH, "B") < ahead(&s, KVS_FIFO, "B"),
	       "kvbatch: as much foreign work ahead of B as under fifo");
out:
	seed_free(&s);
	return true;
}

/*
 * prefetch. Nine IDLE prefetch reads at 0, three per die, and a recall of
 * three reads (one per die) at 5us; queue depth 3. Three prefetch reads
 * are in the device when the recall arrives. FIFO serves the other six
 * first: the recall completes last, at 400us. Strict priority and kvbatch
 * both put the recall (BE with a hint: demand to kvbatch, BE above IDLE
 * to prio) before the queued prefetch: it completes at 200us, after the
 * one prefetch read per die already in the device. The oracle knows the
 * recall comes at 5us and starts no prefetch read before it: the recall
 * ends at 105us, the prefetch at 405us.
 */
static bool test_prefetch(void)
{
	static const char *const names[] = { "recall", "prefetch" };
	struct seed s;
	u32 i, last = 0;

	if (!seed_check(&s, "prefetch", names, 2))
		goto out;
	/* Once the recall is queued, no prefetch read leaves before it. */
	for (i = 0; i < s.t.nr; i++) {
		const struct kvs_req *q = &run_of(&s, KVS_KVBATCH)->rqs[i];

		if (q->key == (u64)key_of(&s, "recall") && q->dseq > last)
			last = q->dseq;
	}
	for (i = 0; i < s.t.nr; i++) {
		const struct kvs_req *q = &run_of(&s, KVS_KVBATCH)->rqs[i];

		if (q->key == (u64)key_of(&s, "prefetch") &&
		    q->dispatch >= 5 * US)
			EXPECT(q->dseq > last, "prefetch rq %u dispatched at "
			       "%llu ahead of the recall", i,
			       (unsigned long long)q->dispatch);
	}
out:
	seed_free(&s);
	return true;
}

/*
 * writes. Three 300us writes (async: deferrable), one per die, and a
 * recall of six 100us reads, two per die, all at 0; queue depth 4. FIFO
 * dispatches the three writes and one read: every die programs for 300us
 * first and the recall ends at 500us. Writes and hinted reads are both
 * BE, so strict priority is FIFO here. kvbatch holds the writes while
 * demand is queued or in flight: the reads alone fill the device and the
 * recall ends at 200us; the writes then run.
 */
static bool test_writes(void)
{
	static const char *const names[] = { "recall", "gc" };
	struct seed s;
	u64 recall;
	u32 i;

	if (!seed_check(&s, "writes", names, 2))
		goto out;
	recall = done(&s, KVS_KVBATCH, "recall");
	expect_seed(&s, "writes");
	EXPECT(ahead(&s, KVS_FIFO, "recall") > 0 &&
	       ahead(&s, KVS_KVBATCH, "recall") == 0,
	       "ahead of the recall's tail: fifo %llu kvbatch %llu",
	       (unsigned long long)ahead(&s, KVS_FIFO, "recall"),
	       (unsigned long long)ahead(&s, KVS_KVBATCH, "recall"));
	for (i = 0; i < s.t.nr; i++) {
		const struct kvs_req *q = &run_of(&s, KVS_KVBATCH)->rqs[i];

		if (q->write)
			EXPECT(q->dispatch >= recall,
			       "write %u dispatched at %llu, recall done %llu",
			       i, (unsigned long long)q->dispatch,
			       (unsigned long long)recall);
	}
out:
	seed_free(&s);
	return true;
}

/* Every event of a built-in falls on a tick of the timeline. */
static bool test_ticks(void)
{
	unsigned int i;
	u32 k, j;

	for (i = 0; i < kvsim_nr_builtins; i++) {
		struct seed s;

		if (!seed_run(&s, kvsim_builtins[i].name)) {
			seed_free(&s);
			continue;
		}
		EXPECT(s.r.tick > 0 && (u64)s.r.ticks * s.r.tick >= s.r.end,
		       "%s: %u ticks of %llu for end %llu", s.t.name,
		       s.r.ticks, (unsigned long long)s.r.tick,
		       (unsigned long long)s.r.end);
		for (k = 0; k < s.r.nr_runs; k++)
			for (j = 0; j < s.t.nr; j++) {
				const struct kvs_req *q = &s.r.run[k].rqs[j];

				EXPECT(q->dispatch % s.r.tick == 0 &&
				       q->start % s.r.tick == 0 &&
				       q->complete % s.r.tick == 0,
				       "%s: rq %u off the tick grid", s.t.name,
				       j);
			}
		seed_free(&s);
	}
	return true;
}

/* ---- the oracle ---------------------------------------------------------- */

/* Parse @text and run it under every scheduler; false if it did not. */
static bool text_run(struct seed *s, const char *name, const char *text)
{
	char err[KVSIM_ERR_MAX];
	u32 bad;

	kvsim_trace_init(&s->t);
	memset(&s->r, 0, sizeof(s->r));
	s->ok = false;
	if (kvsim_parse(&s->t, text, name, err, sizeof(err)) ||
	    kvsim_run_all(&s->r, &s->t, &all_scheds, err, sizeof(err))) {
		EXPECT(0, "%s: %s", name, err);
		return false;
	}
	bad = kvsim_check(&s->r, err, sizeof(err));
	EXPECT(bad == 0, "%s: %u check failures: %s", name, bad, err);
	s->ok = bad == 0 && s->r.nr_runs == KVS_NR_SCHEDS;
	return s->ok;
}

/*
 * A wall of foreign reads on one die. Two dies, a device queue of 16:
 * eight 100us foreign reads for die 0 at 0, then recall A, one read on
 * each die, at 100us. FIFO and kvbatch (blind to the dies) put all eight
 * foreign reads into the device at 0, in die 0's FIFO ahead of A, which
 * ends at 900us. The oracle gives die 0 one foreign read at 0 and, when
 * it frees at 100us, A's read: A ends at 200us, and the other seven
 * foreign reads follow it, so die 0 still ends at 900us.
 */
static bool test_oracle_wall(void)
{
	static const char text[] =
		"dies 2\n"
		"queue-depth 16\n"
		"0 f normal R 100us die=0\n0 f normal R 100us die=0\n"
		"0 f normal R 100us die=0\n0 f normal R 100us die=0\n"
		"0 f normal R 100us die=0\n0 f normal R 100us die=0\n"
		"0 f normal R 100us die=0\n0 f normal R 100us die=0\n"
		"100us A demand R 100us die=0\n"
		"100us A demand R 100us die=1\n";
	static const char *const names[] = { "A", "f" };
	const struct kvsim_run *orc;
	u64 a0 = KVS_NO_TIME;
	u32 i, before = 0;
	struct seed s;

	if (!text_run(&s, "wall", text))
		goto out;
	report(&s, names, 2);
	orc = run_of(&s, KVS_ORACLE);
	EXPECT(done(&s, KVS_ORACLE, "A") == 200 * US,
	       "oracle: A done at %llu, expected 200us",
	       (unsigned long long)done(&s, KVS_ORACLE, "A"));
	EXPECT(done(&s, KVS_FIFO, "A") == 900 * US,
	       "fifo: A done at %llu, expected 900us",
	       (unsigned long long)done(&s, KVS_FIFO, "A"));
	EXPECT(done(&s, KVS_ORACLE, "A") < done(&s, KVS_KVBATCH, "A"),
	       "oracle: A done at %llu, kvbatch at %llu",
	       (unsigned long long)done(&s, KVS_ORACLE, "A"),
	       (unsigned long long)done(&s, KVS_KVBATCH, "A"));
	EXPECT(orc->sim.end == run_of(&s, KVS_FIFO)->sim.end,
	       "oracle's last completion %llu, fifo's %llu",
	       (unsigned long long)orc->sim.end,
	       (unsigned long long)run_of(&s, KVS_FIFO)->sim.end);
	/* On die 0 only the read in service when A came starts first. */
	for (i = 0; i < s.t.nr; i++)
		if (orc->rqs[i].key == (u64)key_of(&s, "A") &&
		    orc->rqs[i].sdie == 0)
			a0 = orc->rqs[i].start;
	for (i = 0; i < s.t.nr; i++)
		if (orc->rqs[i].key == (u64)key_of(&s, "f") &&
		    orc->rqs[i].start < a0)
			before++;
	EXPECT(before == 1, "oracle: %u foreign reads before A on die 0",
	       before);
	expect_oracle_floor(&s.r, "wall");
out:
	seed_free(&s);
	return true;
}

/*
 * The oracle's pick rule on one die (queue depth 1), 100us each. Recall
 * "first" (one read) is in service from 0. Waiting when it ends: recall
 * "big" (three demand reads, 10us), a prefetch read (20us), a deferrable
 * write (30us), recall "small" (one read, BE with a hint: demand with
 * hint_demand set, as here, 40us) and a foreign read (50us). Demand first, the batch
 * with the fewest unfinished requests first: small ends at 200us.
 * Meanwhile two recalls of one read come, late2 at 105us and late1 at
 * 110us (in the other order in the trace): smaller than big, they go
 * next, tied on size, so the earlier batch first (300us, 400us); then big
 * (700us). Then normal before prefetch before writes: the foreign read
 * (800us), the prefetch (900us), the write (1000us).
 */
static bool test_oracle_rule(void)
{
	static const char text[] =
		"dies 1\n"
		"queue-depth 1\n"
		"set hint_demand=1\n"
		"0 first demand R 100us die=0\n"
		"10us big demand R 100us die=0\n"
		"10us big demand R 100us die=0\n"
		"10us big demand R 100us die=0\n"
		"20us pf prefetch R 100us die=0\n"
		"30us wb write W 100us sector=0\n"
		"40us small hint R 100us die=0\n"
		"50us g normal R 100us die=0\n"
		"110us late1 demand R 100us die=0\n"
		"105us late2 demand R 100us die=0\n";
	static const struct {
		const char *batch;
		u64 at;
	} want[] = {
		{ "first", 100 * US }, { "small", 200 * US },
		{ "late2", 300 * US },
		{ "late1", 400 * US }, { "big", 700 * US },
		{ "g", 800 * US }, { "pf", 900 * US }, { "wb", 1000 * US },
	};
	unsigned int i;
	struct seed s;

	if (!text_run(&s, "rule", text))
		goto out;
	for (i = 0; i < ARRAY_SIZE(want); i++)
		EXPECT(done(&s, KVS_ORACLE, want[i].batch) == want[i].at,
		       "oracle: %s done at %llu, expected %lluus",
		       want[i].batch,
		       (unsigned long long)done(&s, KVS_ORACLE, want[i].batch),
		       (unsigned long long)(want[i].at / US));
	expect_oracle_floor(&s.r, "rule");
out:
	seed_free(&s);
	return true;
}

/*
 * The oracle looks ahead to demand. One die: a 100us foreign read and a
 * 30us prefetch read at 0, recall d (one 100us read) at 50us. Starting
 * the foreign read would hold d until 100us; the prefetch read ends
 * before d comes, so it goes first (30us), the die idles until d comes
 * (150us), then the foreign read (250us).
 */
static bool test_oracle_lookahead(void)
{
	static const char text[] =
		"dies 1\n"
		"queue-depth 1\n"
		"0 long normal R 100us die=0\n"
		"0 short prefetch R 30us die=0\n"
		"50us d demand R 100us die=0\n";
	static const char *const names[] = { "d", "long", "short" };
	struct seed s;

	if (!text_run(&s, "lookahead", text))
		goto out;
	report(&s, names, 3);
	EXPECT(done(&s, KVS_ORACLE, "short") == 30 * US &&
	       done(&s, KVS_ORACLE, "d") == 150 * US &&
	       done(&s, KVS_ORACLE, "long") == 250 * US,
	       "oracle: short %llu d %llu long %llu, expected 30, 150, 250us",
	       (unsigned long long)done(&s, KVS_ORACLE, "short"),
	       (unsigned long long)done(&s, KVS_ORACLE, "d"),
	       (unsigned long long)done(&s, KVS_ORACLE, "long"));
	expect_oracle_floor(&s.r, "lookahead");
out:
	seed_free(&s);
	return true;
}

/* ---- the trace format ------------------------------------------------- */

static bool same_requests(const struct kvsim_trace *a,
			  const struct kvsim_trace *b)
{
	u32 i;

	if (a->nr != b->nr || a->nr_batches != b->nr_batches ||
	    a->dies != b->dies || a->qdepth != b->qdepth ||
	    a->chunk != b->chunk || strcmp(a->title, b->title))
		return false;
	for (i = 0; i < a->nr_batches; i++)
		if (strcmp(a->bname[i], b->bname[i]))
			return false;
	for (i = 0; i < a->nr; i++) {
		const struct kvs_req *x = &a->rqs[i], *y = &b->rqs[i];

		if (x->arrival != y->arrival || x->key != y->key ||
		    x->ioprio != y->ioprio || x->write != y->write ||
		    x->sync != y->sync || x->service != y->service ||
		    x->die != y->die || x->sector != y->sector ||
		    x->nr_sectors != y->nr_sectors || a->cls[i] != b->cls[i])
			return false;
	}
	return memcmp(a->tun_set, b->tun_set, sizeof(a->tun_set)) == 0;
}

/* --dump-trace output parses back into the same trace. */
static bool test_roundtrip(void)
{
	char err[KVSIM_ERR_MAX], *buf;
	unsigned int i;
	size_t len;

	for (i = 0; i < kvsim_nr_builtins + 20; i++) {
		struct kvsim_trace a, b;
		FILE *f;

		kvsim_trace_init(&a);
		kvsim_trace_init(&b);
		if (i < kvsim_nr_builtins)
			EXPECT(!kvsim_load_builtin(&a, kvsim_builtins[i].name,
						   err, sizeof(err)),
			       "%s", err);
		else
			EXPECT(!kvsim_random(&a, 50 + i, i, 1 + i % 8),
			       "random");
		if (i == kvsim_nr_builtins) {
			a.tun[KVB_WRITE_BATCH] = 3;
			a.tun_set[KVB_WRITE_BATCH] = true;
		}
		f = open_memstream(&buf, &len);
		kvsim_write_trace(f, &a);
		fclose(f);
		EXPECT(!kvsim_parse(&b, buf, "dump", err, sizeof(err)),
		       "trace %u: %s", i, err);
		EXPECT(same_requests(&a, &b), "trace %u differs after a dump",
		       i);
		EXPECT(b.tun[KVB_WRITE_BATCH] == a.tun[KVB_WRITE_BATCH],
		       "set line lost");
		free(buf);
		kvsim_trace_free(&a);
		kvsim_trace_free(&b);
	}
	return true;
}

/* Bad input: refused, with the line and the reason. */
static bool test_parse_errors(void)
{
	static const struct {
		const char *text;
		const char *msg;
	} bad[] = {
		{ "0 A demand R 100us\n", "got 5 fields" },
		{ "x A demand R 100us die=0\n", "bad time" },
		{ "1parsec A demand R 100us die=0\n", "bad time" },
		{ "0 A<b demand R 100us die=0\n", "bad batch name" },
		{ "0 A urgent R 100us die=0\n", "bad tier" },
		{ "0 A demand X 100us die=0\n", "bad op" },
		{ "0 A write R 100us die=0\n", "op W" },
		{ "0 A demand R 0us die=0\n", "bad service" },
		{ "0 A demand R 100us die=1024\n", "bad field" },
		{ "0 A demand R 100us lba=3\n", "bad field" },
		{ "0 A demand R 100us die=0 size=0\n", "bad size" },
		{ "0 A demand R 100us size=4k die=0\n", "bad field" },
		{ "dies 0\n", "dies takes" },
		{ "dies 1025\n", "dies takes" },
		{ "queue-depth x\n", "queue-depth takes" },
		{ "set write_batch=0\n", "write_batch takes" },
		{ "set front_merges=1\n", "not modelled" },
		{ "set nothing=1\n", "no such tunable" },
		{ "0 A demand R model die=0\n", "no model line" },
		{ "model read=4ms program=24ms cv=30 page=32\n",
		  "model takes read=TIME" },
		{ "model read=4ms program=24ms cv=30 page=32 seed=1 x=1\n",
		  "model takes read=TIME" },
		{ "model read=4ms read=4ms cv=30 page=32 seed=1\n",
		  "model takes read=TIME" },
		{ "model read=0 program=24ms cv=30 page=32 seed=1\n",
		  "model: read and program take" },
		{ "model read=4ms program=2s cv=30 page=32 seed=1\n",
		  "model: read and program take" },
		{ "model read=4ms program=24ms cv=101 page=32 seed=1\n",
		  "model: cv takes" },
		{ "model read=4ms program=24ms cv=30 page=24 seed=1\n",
		  "model: page takes" },
		{ "model read=4ms program=24ms cv=30 page=16384 seed=1\n",
		  "model: page takes" },
		{ "model read=4ms program=24ms cv=30 page=32 seed=x\n",
		  "model: seed takes" },
		{ "# only a comment\n", "no requests" },
	};
	char err[KVSIM_ERR_MAX], text[256];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kvsim_trace t;
		bool needs_line = strcmp(bad[i].msg, "no requests");

		kvsim_trace_init(&t);
		/* Preceded by a good line, so the error is on line 2. */
		snprintf(text, sizeof(text), "0 ok normal R 1us die=0\n%s",
			 bad[i].text);
		if (!needs_line)
			snprintf(text, sizeof(text), "%s", bad[i].text);
		err[0] = '\0';
		EXPECT(kvsim_parse(&t, text, "t", err, sizeof(err)) == -1,
		       "accepted: %s", bad[i].text);
		EXPECT(strstr(err, bad[i].msg) &&
		       (!needs_line || !strncmp(err, "t:2: ", 5)),
		       "'%s': message '%s', expected t:2: ...%s", bad[i].text,
		       err, bad[i].msg);
		kvsim_trace_free(&t);
	}
	return true;
}

/*
 * Service times drawn from the kvssd model: "model" in a request's
 * service column takes a draw from the model of the trace's "model" line,
 * in trace order, exactly what kvssd's model draws for the same requests
 * in the same order (a read of one 16 KiB page, 4 ms mean, cv 30%; 64 KiB
 * reads of four pages; one-page programs of 24 ms). The same trace gives
 * the same draws, another seed others; every scheduler runs on them.
 */
static bool test_model_service(void)
{
	struct kvssd_config cfg = {
		.channels = 1, .dies_per_channel = 1,
		.stripe_sectors = 32 * 1024, .page_sectors = 32,
		.read_ns = 4000 * US, .program_ns = 24000 * US, .erase_ns = 1,
		.cv_pct = 30, .seed = 7,
	};
	u64 sum[3] = { 0 }, min1 = KVS_NO_TIME;
	struct kvsim_trace t, t2, t3;
	char err[KVSIM_ERR_MAX], *text;
	struct kvssd_model m;
	struct kvssd_die die;
	struct kvsim_result r;
	u32 i, n[3] = { 0 }, same = 0, other = 0;
	size_t len = 0, cap = 1 << 20;
	FILE *f;

	text = malloc(cap);
	len += snprintf(text + len, cap - len, "dies 64\nchunk 128\n"
			"model read=4ms program=24ms cv=30 page=32 seed=7\n");
	for (i = 0; i < 3000; i++) {
		const char *kind = i % 30 == 1 ? "f%u normal W model" :
				   "r%u demand R model";

		len += snprintf(text + len, cap - len, "%uus ", i * 100);
		len += snprintf(text + len, cap - len, kind, i / 8);
		len += snprintf(text + len, cap - len, " die=%u%s\n", i % 64,
				i % 30 == 2 ? " size=64k" : "");
	}
	kvsim_trace_init(&t);
	kvsim_trace_init(&t2);
	kvsim_trace_init(&t3);
	EXPECT(!kvsim_parse(&t, text, "model", err, sizeof(err)), "%s", err);
	EXPECT(!kvsim_parse(&t2, text, "model", err, sizeof(err)), "%s", err);
	text[strstr(text, "seed=7") - text + 5] = '8';
	EXPECT(!kvsim_parse(&t3, text, "model", err, sizeof(err)), "%s", err);
	free(text);
	if (t.nr != 3000 || t2.nr != 3000 || t3.nr != 3000)
		goto out;

	kvssd_model_init(&m, &cfg, &die);
	for (i = 0; i < t.nr; i++) {
		const struct kvs_req *q = &t.rqs[i];
		u32 k = q->write ? 2 : q->nr_sectors > 32 ? 1 : 0;
		u64 want = kvssd_service(&m, q->write ? KVSSD_PROGRAM :
					 KVSSD_READ, q->nr_sectors);

		if (q->service != want) {
			EXPECT(0, "request %u: service %llu, the model's %llu",
			       i, (unsigned long long)q->service,
			       (unsigned long long)want);
			break;
		}
		sum[k] += q->service;
		n[k]++;
		if (!k && q->service < min1)
			min1 = q->service;
		same += q->service == t2.rqs[i].service;
		other += q->service == t3.rqs[i].service;
	}
	diag("model: one page %llu us mean, min %llu; four pages %llu; "
	     "program %llu", (unsigned long long)(sum[0] / n[0] / US),
	     (unsigned long long)(min1 / US),
	     (unsigned long long)(sum[1] / n[1] / US),
	     (unsigned long long)(sum[2] / n[2] / US));
	/* The mean is the base: 2800 draws of cv 30% fall within 2%. */
	EXPECT(sum[0] / n[0] > 3920 * US && sum[0] / n[0] < 4080 * US,
	       "one page: mean %llu", (unsigned long long)(sum[0] / n[0]));
	EXPECT(min1 >= 2800 * US, "one page: a draw of %llu below 70%%",
	       (unsigned long long)min1);
	EXPECT(sum[1] / n[1] > 4 * 3600 * US && sum[1] / n[1] < 4 * 4400 * US,
	       "four pages: mean %llu", (unsigned long long)(sum[1] / n[1]));
	EXPECT(sum[2] / n[2] > 21600 * US && sum[2] / n[2] < 26400 * US,
	       "program: mean %llu", (unsigned long long)(sum[2] / n[2]));
	EXPECT(same == t.nr, "the same trace: %u of %u draws the same", same,
	       t.nr);
	EXPECT(other < t.nr / 10, "another seed: %u of %u draws the same",
	       other, t.nr);

	/* A dump writes the draws out: it reads back to the same times. */
	kvsim_trace_free(&t2);
	f = open_memstream(&text, &len);
	kvsim_write_trace(f, &t);
	fclose(f);
	EXPECT(!kvsim_parse(&t2, text, "dump", err, sizeof(err)) &&
	       same_requests(&t, &t2) && t2.model_set &&
	       !memcmp(&t2.model, &t.model, sizeof(t.model)),
	       "a dump of a model trace differs: %s", err);
	free(text);

	EXPECT(!kvsim_run_all(&r, &t, &all_scheds, err, sizeof(err)) &&
	       !kvsim_check(&r, err, sizeof(err)), "%s", err);
	expect_oracle_floor(&r, "model");
	kvsim_result_free(&r);
out:
	kvsim_trace_free(&t);
	kvsim_trace_free(&t2);
	kvsim_trace_free(&t3);
	return true;
}

/* A die beyond the device is refused at run time, with its line. */
static bool test_die_range(void)
{
	struct kvsim_opts o = all_scheds;
	char err[KVSIM_ERR_MAX];
	struct kvsim_result r;
	struct kvsim_trace t;

	kvsim_trace_init(&t);
	EXPECT(!kvsim_parse(&t, "dies 2\n0 a normal R 1us die=0\n"
			    "0 a normal R 1us die=3\n", "t", err, sizeof(err)),
	       "%s", err);
	EXPECT(kvsim_run_all(&r, &t, &o, err, sizeof(err)) == -1 &&
	       strstr(err, "t:3: die 3"), "accepted, or '%s'", err);
	kvsim_result_free(&r);
	o.dies = 4;
	EXPECT(kvsim_run_all(&r, &t, &o, err, sizeof(err)) == 0, "%s", err);
	kvsim_result_free(&r);
	kvsim_trace_free(&t);
	return true;
}

/* ---- random traces ---------------------------------------------------- */

struct dctx {
	u32	*dispatched;	/* per request, counted by the hook */
	u32	twice;
};

static void dispatch_hook(struct kvs_sim *s, enum kvs_event ev,
			  struct kvs_req *rq, void *arg)
{
	struct dctx *c = arg;

	(void)s;
	if (ev == KVS_EV_DISPATCH && ++c->dispatched[rq->id] > 1)
		c->twice++;
}

/* Random tunables within the module's ranges, some of the time. */
static void random_tunables(struct kvsim_opts *o, u32 seed)
{
	u32 x = seed * 2654435761U;
	int i;

	if (x % 3)
		return;
	o->tun[KVB_DEMAND_EXPIRE_MS] = 1 + x % 3;
	o->tun[KVB_NORMAL_EXPIRE_MS] = 1 + (x >> 3) % 4;
	o->tun[KVB_PREFETCH_EXPIRE_MS] = 1 + (x >> 5) % 5;
	o->tun[KVB_WRITE_EXPIRE_MS] = 1 + (x >> 7) % 6;
	o->tun[KVB_WRITE_BATCH] = 1 + (x >> 9) % 16;
	o->tun[KVB_WRITE_DEFER_MAX] = 1 + (x >> 13) % 32;
	o->tun[KVB_BATCH_WINDOW_US] = (x >> 17) % 2 ? 0 : 100;
	o->tun[KVB_MAX_INFLIGHT] = (x >> 19) % 3 ? 0 : 1 + (x >> 21) % 6;
	for (i = KVB_DEMAND_EXPIRE_MS; i <= KVB_MAX_INFLIGHT; i++)
		o->tun_set[i] = true;
}

/*
 * Random traces on random geometries: kvsim's own check passes, and,
 * counted independently by a hook on the device model, no request is
 * ever dispatched twice and every one exactly once by the end.
 */
static bool test_random(void)
{
	u32 seed, bad_runs = 0, total = 0;
	char err[KVSIM_ERR_MAX];

	for (seed = 1; seed <= KVST_RANDOM_TRACES; seed++) {
		struct kvsim_opts o = all_scheds;
		struct kvsim_result r;
		struct kvsim_trace t;
		u32 n = 20 + seed % 280, dies = 1 + seed % 8, k, i;
		bool bad = false;

		kvsim_trace_init(&t);
		if (kvsim_random(&t, n, seed, dies)) {
			EXPECT(0, "seed %u: out of memory", seed);
			break;
		}
		o.qdepth = 1 + (seed / 8) % (2 * dies + 2);
		random_tunables(&o, seed);
		if (kvsim_run_all(&r, &t, &o, err, sizeof(err)) ||
		    kvsim_check(&r, err, sizeof(err))) {
			EXPECT(0, "seed %u: %s", seed, err);
			bad = true;
		}
		if (!bad) {
			char name[32];

			snprintf(name, sizeof(name), "seed %u", seed);
			expect_oracle_floor(&r, name);
		}
		for (k = 0; !bad && k < r.nr_runs; k++) {
			EXPECT(r.run[k].sim.max_in_device <= r.cfg.qdepth,
			       "seed %u %s: %u in the device, depth %u", seed,
			       kvs_sched_names[r.run[k].sched],
			       r.run[k].sim.max_in_device, r.cfg.qdepth);
		}
		for (k = 0; !bad && k < r.nr_runs; k++) {
			struct kvs_config cfg = r.cfg;
			struct dctx c = { 0 };
			struct kvs_req *rqs;
			struct kvs_sim sim;
			u64 busy = 0;

			c.dispatched = calloc(t.nr, sizeof(u32));
			rqs = malloc(t.nr * sizeof(*rqs));
			memcpy(rqs, t.rqs, t.nr * sizeof(*rqs));
			cfg.sched = r.run[k].sched;
			cfg.hook = dispatch_hook;
			cfg.hook_arg = &c;
			EXPECT(kvs_run(&sim, &cfg, rqs, t.nr) == 0,
			       "seed %u %s: run did not finish", seed,
			       kvs_sched_names[cfg.sched]);
			for (i = 0; i < t.nr; i++) {
				if (c.dispatched[i] != 1)
					bad = true;
				busy += rqs[i].complete - rqs[i].start;
			}
			EXPECT(!c.twice, "seed %u %s: %u double dispatches",
			       seed, kvs_sched_names[cfg.sched], c.twice);
			EXPECT(busy == r.trace_work &&
			       kvs_total_work(&sim) == r.trace_work,
			       "seed %u %s: busy %llu, work %llu", seed,
			       kvs_sched_names[cfg.sched],
			       (unsigned long long)busy,
			       (unsigned long long)r.trace_work);
			/* The same schedule as kvsim's own run. */
			for (i = 0; i < t.nr; i++)
				if (rqs[i].complete != r.run[k].rqs[i].complete)
					bad = true;
			kvs_free(&sim);
			free(rqs);
			free(c.dispatched);
		}
		if (bad)
			bad_runs++;
		total += t.nr;
		kvsim_result_free(&r);
		kvsim_trace_free(&t);
	}
	EXPECT(bad_runs == 0, "%u bad runs", bad_runs);
	diag("random: %u traces, %u requests, %u schedulers each",
	     KVST_RANDOM_TRACES, total, KVS_NR_SCHEDS);
	return true;
}

/*
 * Devices of a large SSD's size, 64 and 256 dies: random traces that
 * spread over every die run under every scheduler, pass kvsim's check,
 * and every die serves some of them.
 */
static bool test_many_dies(void)
{
	static const u32 sizes[] = { 64, 256 };
	char err[KVSIM_ERR_MAX];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct kvsim_result r;
		struct kvsim_trace t;
		u32 dies = sizes[i], k, d, idle;

		kvsim_trace_init(&t);
		if (kvsim_random(&t, 40 * dies, 5, dies)) {
			EXPECT(0, "%u dies: out of memory", dies);
			break;
		}
		if (kvsim_run_all(&r, &t, &all_scheds, err, sizeof(err)) ||
		    kvsim_check(&r, err, sizeof(err)))
			EXPECT(0, "%u dies: %s", dies, err);
		EXPECT(r.cfg.dies == dies, "%u dies: ran on %u", dies,
		       r.cfg.dies);
		for (k = 0; k < r.nr_runs; k++) {
			const struct kvs_sim *sim = &r.run[k].sim;

			idle = 0;
			for (d = 0; sim->dies && d < sim->cfg.dies; d++)
				idle += !sim->dies[d].busy_ns;
			EXPECT(sim->dies && !idle, "%u dies, %s: %u dies idle",
			       dies, kvs_sched_names[r.run[k].sched], idle);
		}
		diag("%u dies: %u requests, %u runs", dies, t.nr, r.nr_runs);
		kvsim_result_free(&r);
		kvsim_trace_free(&t);
	}
	return true;
}

/* The check catches what it is there to catch. */
static bool test_check_detects(void)
{
	char err[KVSIM_ERR_MAX];
	struct seed s;

	if (!seed_run(&s, "tail"))
		goto out;
	s.r.run[KVS_PRIO].work -= 1;
	EXPECT(kvsim_check(&s.r, err, sizeof(err)) == 1 &&
	       strstr(err, "prio: total work"), "work: '%s'", err);
	s.r.run[KVS_PRIO].work += 1;
	s.r.run[KVS_KVBATCH].rqs[3].nr_dispatch = 2;
	EXPECT(kvsim_check(&s.r, err, sizeof(err)) == 1 &&
	       strstr(err, "dispatched 2 times"), "dispatch: '%s'", err);
	s.r.run[KVS_KVBATCH].rqs[3].nr_dispatch = 1;
	EXPECT(kvsim_check(&s.r, err, sizeof(err)) == 0, "restored: '%s'",
	       err);
out:
	seed_free(&s);
	return true;
}

TAP_MAIN(
	{ test_tail, "kvsim: built-in tail: completion order, same work" },
	{ test_prefetch,
	  "kvsim: built-in prefetch: completion order, same work" },
	{ test_writes,
	  "kvsim: built-in writes: completion order, same work" },
	{ test_ticks, "kvsim: every event of a built-in on a tick" },
	{ test_oracle_wall,
	  "kvsim: oracle serves a recall before a wall on its die" },
	{ test_oracle_rule,
	  "kvsim: oracle picks demand, shortest batch, then tiers" },
	{ test_oracle_lookahead,
	  "kvsim: oracle starts no foreign work a recall would wait for" },
	{ test_roundtrip, "kvsim: dumped traces parse back unchanged" },
	{ test_parse_errors, "kvsim: bad trace lines refused with line" },
	{ test_die_range, "kvsim: dies beyond the device refused" },
	{ test_model_service,
	  "kvsim: service times drawn from the kvssd model" },
	{ test_random,
	  "kvsim: random traces conserve work, no double dispatch" },
	{ test_many_dies, "kvsim: 64 and 256 dies run, every die serves" },
	{ test_check_detects, "kvsim: the check catches lost work" }
)
