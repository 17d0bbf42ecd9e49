/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvsim-core: a small deterministic discrete-event model of a flash device,
 * used to drive the kvbatch policy core (kv-policy.c) the way the elevator
 * does, and to compare it with FIFO and class-priority dispatch on the same
 * trace.
 *
 * The device is the flash model of kvssd/kvssd-model.h, which the kvssd
 * test driver also runs: D dies (parallel servers), each a FIFO, behind a
 * device queue of at most qdepth requests. A request dispatched to the
 * device joins its die's FIFO and is served when the die is free, so the
 * scheduler only decides the order in which requests enter the device:
 * that is all an elevator controls. Every request costs its service time
 * on its die under every scheduler, so the per-die busy time (the "total
 * work") does not depend on the order.
 *
 * The oracle is the exception: it knows each request's die and when each
 * die frees, so it releases a request into the device only when its die
 * is free. The device then holds no FIFO backlog, and each die, whenever
 * it frees, takes its next request from all the arrived requests mapped
 * to it (kvs_oracle_before() in kvsim-core.c says which), starting a
 * request of another tier than demand only if it ends before the die's
 * next demand request arrives. It is the best order kvsim knows, a floor
 * for what an elevator blind to the dies can do; it is not a proven
 * optimum.
 *
 * Time is integer nanoseconds. Ties are broken deterministically: at one
 * instant, completions are handled first (lowest die first), then arrivals
 * (in trace order), then the scheduler fills the free device slots.
 */
#ifndef _KVSIM_CORE_H
#define _KVSIM_CORE_H

#include "kv-user.h"
#include "kv-policy.h"
#include "kvssd/kvssd-model.h"

/* As many dies as the model takes: a large SSD has 64 to 256. */
#define KVS_MAX_DIES	KVSSD_MAX_DIES
#define KVS_NO_TIME	(~0ULL)

enum kvs_sched {
	KVS_FIFO,	/* arrival order */
	KVS_PRIO,	/* RT > BE > IDLE, FIFO within a class (mq-deadline) */
	KVS_KVBATCH,	/* the policy core, through the host contract */
	KVS_ORACLE,	/* clairvoyant: each die picks its next when free */
	KVS_NR_SCHEDS
};

extern const char *const kvs_sched_names[KVS_NR_SCHEDS];

struct kvs_req {
	/* Input: filled by the caller. */
	u64		arrival;
	u64		key;		/* batch key (recall id) */
	u16		ioprio;
	bool		write;
	bool		sync;
	u64		sector;
	u32		nr_sectors;
	u64		service;	/* time on the die */
	int		die;		/* < 0: (sector / chunk) % dies */

	/* Output: filled by kvs_run(). */
	u64		dispatch;	/* last dispatch to the device */
	u32		dseq;		/* order of that dispatch */
	u64		start;		/* service started on the die */
	u64		complete;
	u32		nr_dispatch;	/* counts, to check "exactly once" */
	u32		nr_complete;
	u32		nr_requeue;
	bool		merged;		/* absorbed by a later request */
	u8		tier;		/* kvp_tier_of() */
	u8		why;		/* KVBATCH: reason of the last pick */
	bool		burst_start;	/* KVBATCH: first write of a burst */

	/* Private to the simulator. */
	u32		id;
	int		sdie;		/* resolved die */
	bool		queued;		/* waiting in the scheduler */
	struct list_head node;		/* scheduler queue */
	struct list_head dnode;		/* die FIFO */
	struct kvp_batch *batch;	/* KVBATCH: the batch it joined */
	u32		okey;		/* ORACLE: index of its key */
};

/* ORACLE: a key's current batch, from its arrivals and completions. */
struct kvs_okey {
	u64		first;		/* the batch's first arrival */
	u32		unfinished;	/* arrived, not completed */
};

enum kvs_event {
	KVS_EV_ARRIVE,		/* after the request was queued */
	KVS_EV_MERGE,		/* @rq was absorbed by the arriving request */
	KVS_EV_DISPATCH,	/* after the request entered the device */
	KVS_EV_REQUEUE,		/* after the request went back to the queue */
	KVS_EV_COMPLETE,	/* after the completion was reported */
};

struct kvs_sim;
typedef void (*kvs_hook_fn)(struct kvs_sim *s, enum kvs_event ev,
			    struct kvs_req *rq, void *arg);

struct kvs_config {
	u32		dies;		/* 1..KVS_MAX_DIES */
	u32		qdepth;		/* device queue bound, >= 1 */
	u64		chunk;		/* sectors per die stripe (die < 0) */
	enum kvs_sched	sched;

	/* KVBATCH only. */
	u32		nr_batches;	/* pool size for kvp_size()/kvp_init() */
	struct kvp_params params;
	/*
	 * Fault injection, KVBATCH only, 0 = off. Every requeue_every-th
	 * dispatch of a request that has to wait for a busy die is bounced
	 * back to the scheduler (once per request). Every merge_every-th
	 * arrival absorbs the newest queued request of its batch (a back
	 * merge): that request leaves unserved and the arriving one takes
	 * over its service time, so the total work is unchanged.
	 */
	u32		requeue_every;
	u32		merge_every;
	/*
	 * KVBATCH only: max_inflight set by the module's depth controller
	 * (kv-depth.c), at most qdepth, as the module does when the tunable
	 * is 0.
	 */
	bool		auto_depth;

	kvs_hook_fn	hook;		/* called after every event, or NULL */
	void		*hook_arg;
};

struct kvs_sim {
	struct kvs_config cfg;
	struct kvs_req	*rqs;
	u32		nr;
	u64		now;

	/*
	 * Device: the model, and each die's requests in completion order
	 * (head completes first); cfg.dies of each, allocated by kvs_run().
	 */
	struct kvssd_model dev;
	struct kvssd_die *dies;
	struct list_head *die_q;
	u32		in_device;
	u32		max_in_device;

	/* FIFO / PRIO queues. */
	struct list_head fifo;
	struct list_head prio[3];

	/*
	 * ORACLE: per die, its arrived requests; per distinct key, a batch;
	 * per die, the arrival times of its demand requests in order
	 * (demand_at[demand_off[d] .. demand_off[d + 1]]), demand_next[d]
	 * the first not yet arrived.
	 */
	struct list_head *die_wait;
	struct kvs_okey	*okeys;
	u64		*demand_at;
	u32		*demand_off;
	u32		*demand_next;

	/* KVBATCH. */
	struct kvp_sched *ps;
	void		*mem;
	u64		burst_pos;

	u32		queued;			/* all schedulers */
	u32		nr_tier_queued[KVB_NR_TIERS];
	u32		nr_tier_device[KVB_NR_TIERS];
	u32		nr_dispatches;
	u32		nr_stalls;		/* waits for a busy die */
	u32		nr_arrivals;
	u32		nr_merges;
	u32		nr_requeues;
	u64		end;			/* last completion */
};

/* Per batch key: what a recall waits for. */
struct kvs_batch_time {
	u64	first_arrival;
	u64	last_complete;		/* the batch completion time */
	u32	nr;
};

/*
 * Run @rqs (any order; sorted internally by arrival, stably) to the end.
 * Returns 0, or -1 if the configuration is invalid or the run did not
 * finish (a request was never dispatched). The caller owns @s and must
 * call kvs_free() afterwards, whatever kvs_run() returned; s->ps and
 * s->dies stay valid until then so tests can inspect the core's
 * statistics and the dies' busy times.
 */
int kvs_run(struct kvs_sim *s, const struct kvs_config *cfg,
	    struct kvs_req *rqs, u32 nr);
void kvs_free(struct kvs_sim *s);

/* Completion time of the batch @key, from the last run's output. */
struct kvs_batch_time kvs_batch(const struct kvs_sim *s, u64 key);
/* Sum of die busy times. */
u64 kvs_total_work(const struct kvs_sim *s);

#endif /* _KVSIM_CORE_H */
