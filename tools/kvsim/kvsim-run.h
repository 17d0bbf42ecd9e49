/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvsim runs: one trace under several schedulers on the same device, the
 * checks that make the comparison fair (the same work, every request
 * dispatched and completed exactly once), and what the reports need:
 * per-batch completion, each batch's tail and the foreign work ahead of
 * it, the tick grid of the timeline.
 */
#ifndef _KVSIM_RUN_H
#define _KVSIM_RUN_H

#include "kvsim-trace.h"

/* The timeline has at most this many ticks (a coarser tick if needed). */
#define KVSIM_MAX_TICKS		1000

/* Per batch name, from the trace. */
struct kvsim_binfo {
	u64		first;		/* first arrival */
	u64		work;		/* sum of service times */
	u32		nr;
	u8		tier;		/* kvp_tier_of() of the first request */
};

/* Per batch name, per scheduler. */
struct kvsim_bres {
	u64		done;		/* last completion: the batch's time */
	u32		tail;		/* index of the request that ended it */
	u64		ahead;		/* foreign work ahead of the tail */
	u32		nr_ahead;	/* requests contributing to it */
};

struct kvsim_run {
	enum kvs_sched		sched;
	int			rc;		/* kvs_run() */
	struct kvs_sim		sim;
	struct kvs_req		*rqs;		/* the trace, with results */
	struct kvsim_bres	*b;
	u64			work;		/* kvs_total_work() */
};

struct kvsim_result {
	const struct kvsim_trace *t;
	struct kvs_config	cfg;
	unsigned int		tun[KVB_NR_TUNABLES];
	struct kvsim_binfo	*binfo;
	u64			trace_work;	/* sum of all service times */
	u32			nr_runs;
	struct kvsim_run	run[KVS_NR_SCHEDS];
	u64			end;		/* latest last completion */
	u64			tick;
	u32			ticks;
};

/*
 * The run options: geometry overrides (0 = the trace's, or the default),
 * tunable overrides (set[i]), the schedulers (a bit per enum kvs_sched)
 * and the tick (0 = automatic).
 */
struct kvsim_opts {
	u32		dies;
	u32		qdepth;
	u64		chunk;
	unsigned int	tun[KVB_NR_TUNABLES];
	bool		tun_set[KVB_NR_TUNABLES];
	unsigned int	scheds;
	u64		tick;
};

#define KVSIM_DEFAULT_DIES	4
#define KVSIM_DEFAULT_CHUNK	128
/* Batch descriptors: the module parameter max_batches' default. */
#define KVSIM_NR_BATCHES	256

/*
 * Run @t under every scheduler in @o->scheds. Returns 0, or -1 with a
 * message when the trace does not fit the device or memory runs out. A
 * run that did not finish is not an error here: kvsim_check() says so.
 */
int kvsim_run_all(struct kvsim_result *r, const struct kvsim_trace *t,
		  const struct kvsim_opts *o, char *err, size_t errlen);
void kvsim_result_free(struct kvsim_result *r);

/*
 * The fairness checks: every run finished; every request was dispatched
 * once and completed once, after its arrival, taking its service time;
 * each run's total work equals the trace's. Returns the number of
 * violations, the first one described in @err.
 */
u32 kvsim_check(const struct kvsim_result *r, char *err, size_t errlen);

/* Is request @i the tail (the last to complete) of its batch in @run? */
bool kvsim_is_tail(const struct kvsim_run *run, u32 i);
/* Is request @i foreign work ahead of batch @b's tail in @run? */
bool kvsim_is_ahead(const struct kvsim_result *r, const struct kvsim_run *run,
		    u32 b, u32 i);

/* Per tick: the request in service on @die at time @t0, or -1. */
int kvsim_on_die(const struct kvsim_run *run, u32 die, u64 t0, u64 t1);

#endif /* _KVSIM_RUN_H */
