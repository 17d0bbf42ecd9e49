// SPDX-License-Identifier: GPL-2.0
/*
 * kvbatch - a batch-aware blk-mq I/O scheduler for LLM inference servers
 * that keep their KV cache on NVMe.
 *
 * This file is the elevator: the glue between blk-mq and the policy core
 * (kv-policy.c). It owns the requests and their bookkeeping (insert, merge,
 * dispatch, requeue, completion), keeps each batch's queued requests in
 * arrival order, sizes the device depth, and exports the tunables in
 * sysfs. The core decides which batch, or which deferred write, goes next;
 * kv-debugfs.c shows the state (kv-elv.h) in debugfs.
 *
 * Locking: one spinlock per device (kvb_data.lock) protects everything,
 * including the core. It is taken with interrupts disabled because
 * completed_request() runs from the driver's completion context, which
 * may be a hard interrupt (null_blk's timer mode, many NVMe drivers). Most
 * completions do not take it: they are recorded in a per-CPU buffer
 * (kvb_pcpu, with its own lock, taken inside the device lock by the drain)
 * and applied by the next holder of the device lock, a bounded number per
 * section, the rest by a work item (kvb_drain()). Only a completion that
 * may have to run the queue, or that leaves the device idle, takes it: the
 * one that makes room for work held back by max_inflight, the last one in
 * flight when nothing is queued, and any while deferred writes wait for
 * the end of demand (kvb_request_done()). The last one in flight goes to
 * the lock without a record: it would take the lock anyway.
 *
 * See Documentation/kvbatch.rst.
 */
#define pr_fmt(fmt)	KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/init.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/blk-cgroup.h>
#include <linux/bio.h>
#include <linux/cgroup.h>
#include <linux/cpumask.h>
#include <linux/ctype.h>
#include <linux/hash.h>
#include <linux/ioprio.h>
#include <linux/ktime.h>
#include <linux/rbtree.h>
#include <linux/sbitmap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/workqueue.h>

#include <trace/events/block.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"
#include "blk-stat.h"

#include "kv-compat.h"
#include "kv-elv.h"

#define CREATE_TRACE_POINTS
#include "kv-trace.h"

/* Batches per device; past this, requests share their tier's overflow. */
static unsigned int max_batches = 256;
module_param(max_batches, uint, 0444);
MODULE_PARM_DESC(max_batches,
		 "batch descriptors per device, 16..65536 (default 256)");

/* A scheduler pool smaller than this leaves kvbatch little to reorder. */
#define KVB_MIN_REORDER_DEPTH	64

/*
 * Per-request state, kept in rq->elv.priv[0] as a bit mask; priv[1] holds
 * the request's batch in the core, or NULL for requests served from the
 * dispatch list. Both are written under kvb_data.lock.
 */
enum {
	/* Counted in stats.inserted; survives requeue so it counts once. */
	KVB_RQ_INSERTED		= 1UL << 0,
	/* On kvbatch's lists; included in nr_queued. */
	KVB_RQ_QUEUED		= 1UL << 1,
	/* Handed to the driver and not yet completed. */
	KVB_RQ_INFLIGHT		= 1UL << 2,
	/* A write in the deferred write queue (sorted in dsort). */
	KVB_RQ_DEFERRED		= 1UL << 3,
	/* Its bytes were added to its batch (at first dispatch). */
	KVB_RQ_COUNTED		= 1UL << 4,
};

static const char *const kvb_key_names[KVB_NR_KEY_MODES] = {
	[KVB_KEY_IOPRIO]	= "ioprio",
	[KVB_KEY_CGROUP]	= "cgroup",
	[KVB_KEY_CGROUP_IOPRIO]	= "cgroup+ioprio",
};

static inline unsigned long kvb_rq_state(struct request *rq)
{
	return (unsigned long)rq->elv.priv[0];
}

static inline void kvb_rq_set_state(struct request *rq, unsigned long state)
{
	rq->elv.priv[0] = (void *)state;
}

static inline struct kvp_batch *kvb_rq_batch(struct request *rq)
{
	return rq->elv.priv[1];
}

static inline struct rb_root *kvb_sort_root(struct kvb_data *kd,
					    struct request *rq)
{
	if (kvb_rq_state(rq) & KVB_RQ_DEFERRED)
		return &kd->dsort;
	return &kd->sort[rq_data_dir(rq)];
}

/*
 * Flushes and passthrough commands are never scheduled: they go to the
 * dispatch list and are never accounted. On 6.1 a passthrough request
 * was prepared (state 0), and its completion finds it not in flight.
 */
static inline bool kvb_rq_bypass(struct request *rq)
{
	return !kvb_rq_is_sched(rq) || blk_rq_is_passthrough(rq);
}

/*
 * A queued request's arrival time is kvbatch's own stamp in rq->fifo_time,
 * taken from start_time_ns when it is queued: attempt_merge() lowers the
 * receiving request's start_time_ns before kvb_requests_merged() runs.
 * On 6.1 fifo_time shares storage with the completion IPI's csd, so it is
 * valid only while the request is queued here.
 */
static u64 kvb_head_ns(struct kvp_batch *b)
{
	struct request *rq;

	rq = list_first_entry_or_null(&b->rqs, struct request, queuelist);
	return rq ? rq->fifo_time : 0;
}

/* The batch key of @rq under the batch_key tunable. */
static u64 kvb_rq_key(struct kvb_data *kd, struct request *rq)
{
	enum kvb_key_mode mode = kvb_tun(kd, KVB_BATCH_KEY);
	u64 prio = req_get_ioprio(rq);
	u64 cgid = 0;

	if (mode != KVB_KEY_IOPRIO && rq->bio) {
		struct cgroup_subsys_state *css = bio_blkcg_css(rq->bio);

		if (css)
			cgid = cgroup_id(css->cgroup);
	}
	switch (mode) {
	case KVB_KEY_IOPRIO:
		return prio;
	case KVB_KEY_CGROUP:
		return cgid << 16;
	default:
		return cgid << 16 | prio;
	}
}

/* Derive the core's parameters from the tunables. */
static void kvb_apply_params(struct kvb_data *kd)
{
	struct kvp_params p;

	lockdep_assert_held(&kd->lock);

	kvp_params_from_tunables(&p, kd->tun);
	/* max_inflight 0: the depth controller's (kv-depth.c). */
	if (!p.max_inflight) {
		p.limit_auto = true;
		p.limit_ceiling = max(kd->ceiling, 1U);
	}
	/*
	 * Deferred writes hold tags of async_depth, the share every write
	 * allocates from (kvb_limit_depth()). Let them hold at most half of
	 * it, so that a sync write -- an fsync, a journal commit -- finds a
	 * tag while writes are deferred, rather than waiting write_expire_ms
	 * for one.
	 */
	p.write_defer_max = min(p.write_defer_max,
				max(kd->async_depth / 2, 1U));
	/* Whole, for the readers without the lock (kvb_limit_unlocked()). */
	write_seqcount_begin(&kd->params_seq);
	kvp_set_params(kd->ps, &p);
	write_seqcount_end(&kd->params_seq);
	if (!p.window_ns)
		kvp_flush_draining(kd->ps);
}

/*
 * Apply one completion to the core: the batch's accounting (which may close
 * it) and the depth controller's sample.
 */
static void kvb_complete_one(struct kvb_data *kd, const struct kvb_done *c)
{
	struct kvp_sched *ps = kd->ps;

	lockdep_assert_held(&kd->lock);

	kd->inflight--;
	kd->stats.completed++;
	/* Work waits for max_inflight: a hold, until the kick. */
	if (ps->queued && kvp_throttled(ps))
		WRITE_ONCE(kd->held, true);
	kvp_rq_completed(ps, c->b, c->now, c->lat, c->cl);
}

/*
 * A batch that finished inside batch_window_us drains until the window
 * passes or its key returns. On a busy queue the next insert closes it;
 * the timer closes it on an idle one, so that the statistics show it
 * without a read changing them.
 */
static void kvb_arm_reap(struct kvb_data *kd)
{
	struct kvp_batch *b = kvp_oldest_draining(kd->ps);
	u64 now, end;

	lockdep_assert_held(&kd->lock);

	if (!b)
		return;
	now = ktime_get_ns();
	end = b->last_ns + kd->ps->p.window_ns;
	/*
	 * Never later than a run already armed, which a batch that has
	 * drained since cannot need earlier; but earlier, when
	 * batch_window_us was lowered meanwhile.
	 */
	timer_reduce(&kd->reap_timer, jiffies + 1 +
		     usecs_to_jiffies(end > now ? div_u64(end - now,
							  NSEC_PER_USEC) : 0));
}

/*
 * Apply up to @max of @pc's records, oldest first; the CPU leaves the
 * mask once it has none. Returns how many were applied.
 */
static unsigned int kvb_drain_cpu(struct kvb_data *kd, struct kvb_pcpu *pc,
				  unsigned int cpu, unsigned int max)
{
	unsigned int i, n;

	lockdep_assert_held(&kd->lock);

	spin_lock(&pc->lock);
	n = min(pc->n, max);
	atomic_sub(n, &kd->undrained);
	for (i = 0; i < n; i++)
		kvb_complete_one(kd, &pc->rec[i]);
	pc->n -= n;
	if (pc->n)
		memmove(pc->rec, pc->rec + n, pc->n * sizeof(pc->rec[0]));
	else
		cpumask_clear_cpu(cpu, &kd->pcpu_mask);
	spin_unlock(&pc->lock);
	return n;
}

/*
 * Apply the completions recorded without the lock, at most KVB_DRAIN_MAX
 * of them. The lock is held with interrupts off, and a section calls this
 * at most three times (on entry, after its own updates, in kvb_hold()):
 * so a section applies a bounded number of records, however many CPUs
 * have recorded. Records beyond the budget are left to drain_work, which
 * applies them in sections of their own, with interrupts enabled in
 * between, and acts on what they free (kvb_drain_work_fn()).
 *
 * Records leave the undrained count, in one subtraction per CPU, before
 * any of them leaves the core's in-flight count. A lockless reader
 * (kvb_inflight()) may be off either way in between. Reading low only
 * sends a completion to the lock, or blk-mq to a dispatch that finds
 * nothing to start. Reading high, a completion that has just recorded
 * behind a CPU already passed here sees work in flight that is done and
 * leaves its record to us: so look again after our updates, until a look
 * finds nothing (its record, barrier, read; our updates, barrier, read:
 * one of the two reads sees the other's write), or hand what the look
 * found to drain_work, which looks again under the lock.
 */
void kvb_drain(struct kvb_data *kd)
{
	unsigned int cpu, budget = KVB_DRAIN_MAX;
	bool applied = false;

	lockdep_assert_held(&kd->lock);

	while (atomic_read(&kd->undrained)) {
		if (!budget) {
			kblockd_schedule_work(&kd->drain_work);
			break;
		}
		for_each_cpu(cpu, &kd->pcpu_mask) {
			budget -= kvb_drain_cpu(kd, per_cpu_ptr(kd->pcpu, cpu),
						cpu, budget);
			if (!budget)
				break;
		}
		applied = true;
		/* Pairs with the barrier in kvb_record_needs_lock(). */
		smp_mb();
	}
	if (applied)
		kvb_arm_reap(kd);
}

/*
 * Record a completion on this CPU for kvb_drain(); false if the CPU's
 * buffer is full.
 */
static bool kvb_record(struct kvb_data *kd, const struct kvb_done *c)
{
	struct kvb_pcpu *pc;
	unsigned long flags;
	bool done = false;

	local_irq_save(flags);
	pc = this_cpu_ptr(kd->pcpu);
	spin_lock(&pc->lock);
	if (pc->n < KVB_DONE_RECS) {
		pc->rec[pc->n++] = *c;
		/* Tested first: the mask is shared by every CPU. */
		if (!cpumask_test_cpu(smp_processor_id(), &kd->pcpu_mask))
			cpumask_set_cpu(smp_processor_id(), &kd->pcpu_mask);
		/*
		 * The CPU's bit before the count: whoever sees the count and
		 * drains (kvb_request_done()) finds the record.
		 */
		smp_mb__before_atomic();
		atomic_inc(&kd->undrained);
		done = true;
	}
	spin_unlock(&pc->lock);
	local_irq_restore(flags);
	return done;
}

/*
 * In-flight requests as the core will count them after kvb_drain(), read
 * without the lock: momentarily off by the records a drain is applying.
 */
static u32 kvb_inflight(struct kvb_data *kd)
{
	int undrained, inflight;

	/* Pairs with the barrier after the record in kvb_request_done(). */
	smp_mb();
	undrained = atomic_read(&kd->undrained);
	inflight = READ_ONCE(kd->ps->inflight);
	return inflight > undrained ? inflight - undrained : 0;
}

/*
 * Take @rq off every kvbatch list. Safe on a request that was never
 * queued: an insert merge hands us the new request as the merged-away one
 * before it reached our lists.
 */
static void kvb_remove_request(struct kvb_data *kd, struct request *rq)
{
	struct request_queue *q = rq->q;
	unsigned long state = kvb_rq_state(rq);

	lockdep_assert_held(&kd->lock);

	list_del_init(&rq->queuelist);
	if (!RB_EMPTY_NODE(&rq->rb_node))
		elv_rb_del(kvb_sort_root(kd, rq), rq);
	elv_rqhash_del(q, rq);
	if (q->last_merge == rq)
		q->last_merge = NULL;

	if (state & KVB_RQ_QUEUED) {
		kvb_rq_set_state(rq, state & ~KVB_RQ_QUEUED);
		kd->nr_queued--;
	}
}

/* Hand @rq to the driver. */
static void kvb_start_request(struct kvb_data *kd, struct request *rq,
			      u64 now)
{
	struct kvp_batch *b;
	unsigned long state;
	u32 bytes = 0;

	lockdep_assert_held(&kd->lock);

	/*
	 * The driver may start the command (as mq-deadline, say so): a
	 * request it gives back unprepared comes through kvb_insert_request()
	 * again, and a deferred write goes back into dsort, where a bio
	 * ending at its first sector would find it for a front merge.
	 * RQF_STARTED is one of RQF_NOMERGE_FLAGS: no merge reaches it.
	 */
	rq->rq_flags |= RQF_STARTED;

	/*
	 * A request we do not schedule was only put on the dispatch list. Its
	 * hash and rb nodes may never have been initialised and, for a flush,
	 * elv.priv shares storage with the flush machinery: touch nothing but
	 * the list.
	 */
	if (kvb_rq_bypass(rq)) {
		list_del_init(&rq->queuelist);
		return;
	}

	kvb_remove_request(kd, rq);
	state = kvb_rq_state(rq);
	if (!(state & KVB_RQ_COUNTED)) {
		bytes = blk_rq_bytes(rq);
		state |= KVB_RQ_COUNTED;
	}
	kvb_rq_set_state(rq, state | KVB_RQ_INFLIGHT);
	kd->inflight++;
	kd->stats.dispatched++;

	b = kvb_rq_batch(rq);
	if (b)
		kvp_rq_dispatched(kd->ps, b, kvb_head_ns(b), bytes, now);
}

/* The first deferred write at or after @pos in sector order, wrapping. */
static struct request *kvb_deferred_from(struct kvb_data *kd, sector_t pos)
{
	struct rb_node *node = kd->dsort.rb_node;
	struct request *rq, *res = NULL;

	while (node) {
		rq = rb_entry_rq(node);
		if (blk_rq_pos(rq) >= pos) {
			res = rq;
			node = node->rb_left;
		} else {
			node = node->rb_right;
		}
	}
	if (!res && !RB_EMPTY_ROOT(&kd->dsort))
		res = rb_entry_rq(rb_first(&kd->dsort));
	return res;
}

static struct request *kvb_pick_request(struct kvb_data *kd,
					struct kvp_pick *pick, u64 now)
{
	struct kvp_batch *wq = kd->ps->wq;
	struct request *rq;

	lockdep_assert_held(&kd->lock);

	*pick = kvp_choose(kd->ps, now);
	switch (pick->kind) {
	case KVP_PICK_BATCH:
		return list_first_entry(&pick->batch->rqs, struct request,
					queuelist);
	case KVP_PICK_WRITE:
		/*
		 * A burst starts at the oldest deferred write, so none waits
		 * forever, and sweeps upwards in sector order from there.
		 */
		if (pick->burst_start) {
			rq = list_first_entry(&wq->rqs, struct request,
					      queuelist);
			trace_kvbatch_write_release(kd->ps->dev,
						    kd->ps->burst_left + 1,
						    wq->queued, pick->why);
		} else {
			rq = kvb_deferred_from(kd, kd->burst_pos);
		}
		kd->burst_pos = blk_rq_pos(rq) + blk_rq_sectors(rq);
		return rq;
	default:
		return NULL;
	}
}

/*
 * Work is held back by max_inflight: publish the hold, so that the
 * completion that makes room takes the lock and runs the queue. Called
 * wherever the limit may have come to hold work back: after a dispatch
 * (the one that fills the limit is the last blk-mq asks for, as
 * has_work() then says "no work"), and after an insert (work queued
 * behind a full limit is never asked for). A completion recorded before
 * the hold was visible did not see it and will not: drain it here. True
 * if that made room.
 */
static bool kvb_hold(struct kvb_data *kd)
{
	lockdep_assert_held(&kd->lock);

	if (!kd->ps->queued || !kvp_throttled(kd->ps))
		return false;
	WRITE_ONCE(kd->held, true);
	/* Pairs with the barrier in kvb_record_needs_lock(). */
	smp_mb();
	kvb_drain(kd);
	return !kvp_throttled(kd->ps);
}

/* Requests max_inflight must have room for before a hold ends. */
static inline u32 kvb_kick_batch(u32 limit)
{
	return clamp(limit / 8, 1U, 16U);
}

/*
 * Deferred writes are held behind demand in flight: arm the write timer
 * for the oldest one's expiry, in case demand is still in flight then and
 * nothing else runs the queue. A timer of our own, not a delayed queue
 * run: blk-mq keeps one run per hardware context, and any run asked for
 * meanwhile (a hold that ends, a driver tag freed) replaces the delayed
 * one, or the delayed one is not armed because another is pending.
 *
 * The timer wheel fires a timer late by up to its level's step, an
 * eighth of the delay (at HZ=250, 256 ms of a 5 s write_expire_ms): so
 * the timer is armed for seven eighths of the delay, and when it fires
 * early it arms itself again for the rest (kvb_write_timer_fn()), on
 * finer levels, until the last step, rounded up, ends no earlier than
 * the expiry. @now: the caller's time, or 0.
 */
static void kvb_arm_write_timer(struct kvb_data *kd, u64 now)
{
	struct kvp_sched *ps = kd->ps;
	unsigned long delay;
	u64 until;

	lockdep_assert_held(&kd->lock);

	/*
	 * kvp_writes_held() checks these too; asking first keeps the clock
	 * read off every call that has no write held: none queued, other
	 * work queued with them (the dispatch that takes it arms again),
	 * or no demand in flight.
	 */
	if (!ps->wq->queued || ps->wq->queued != ps->queued ||
	    !ps->tier[KVB_TIER_DEMAND].inflight)
		return;
	if (!now)
		now = ktime_get_ns();
	if (!kvp_writes_held(ps, now, &until))
		return;
	delay = nsecs_to_jiffies(until - now + TICK_NSEC - 1);
	timer_reduce(&kd->write_timer, jiffies + 1 + delay - delay / 8);
}

/*
 * Completions were applied where no dispatch follows: at a completion that
 * took the lock, the reap or the write timer, a statistics read or a
 * tunable store. Each event that would run the queue may have been one of
 * them: a completion that recorded and returned may have made the room a
 * hold waits for (kvb_record_needs_lock() read the count before a drain
 * had applied what it subtracted), or been the last demand request while
 * writes waited; a depth window closed here may have lowered the limit
 * below what is in flight, with no hold published, so that has_work() says
 * "no work" and no completion takes the lock. Publish the hold the limit
 * calls for, end one there is room for, arm the write timer for writes
 * held behind demand, and return true if the queue must run.
 * @demand: demand was in flight before the drain.
 */
static bool kvb_settle(struct kvb_data *kd, bool demand)
{
	struct kvp_sched *ps = kd->ps;
	u32 limit;

	lockdep_assert_held(&kd->lock);

	kvb_hold(kd);
	/*
	 * Writes held behind demand, now that room or the hold is applied
	 * (the queue run below finds has_work() saying "no work" for
	 * them); or write_expire_ms was lowered.
	 */
	kvb_arm_write_timer(kd, 0);
	limit = kvp_limit(ps);
	/*
	 * Run the queue when a hold has room for a batch of requests (an
	 * eighth of max_inflight, at most 16): a queue run per completion
	 * would cost a kblockd work item per request, more than the device
	 * time on a fast device. The requests still in flight complete and
	 * make the room, so a hold always ends.
	 */
	if (kd->held && (!ps->queued || !limit ||
			 ps->inflight + kvb_kick_batch(limit) <= limit)) {
		WRITE_ONCE(kd->held, false);
		if (ps->queued)
			return true;
	}
	/* The last demand request is done while requests (writes) wait. */
	return ps->queued && demand && !ps->tier[KVB_TIER_DEMAND].inflight;
}

/*
 * The lock for a reader outside the request paths (debugfs, the reap
 * and write timers, a tunable store), with the recorded completions
 * applied; returns what kvb_unlock_applied() needs. Interrupts are
 * enabled on entry.
 */
bool kvb_lock_applied(struct kvb_data *kd)
	__acquires(&kd->lock)
{
	bool demand;

	spin_lock_irq(&kd->lock);
	demand = kd->ps->tier[KVB_TIER_DEMAND].inflight;
	kvb_drain(kd);
	return demand;
}

/*
 * Run the queue for work in kvbatch's device-wide queue: a hold that
 * ended, a write that may go, a tunable that frees requests. One hardware
 * context does: any context's dispatch takes the next request, and blk-mq
 * issues it on the request's own context (rq->mq_hctx). Every context
 * would cost a kblockd work item each (one per CPU on an NVMe drive) for
 * one request's worth of room, and each that found the room taken by
 * another would have blk-mq arm a delayed run of every context (a
 * dispatch that returns nothing after has_work() said "work"). A lane
 * needs no run from here: its requests are taken by the run of its own
 * context that follows their insert.
 *
 * @hctx: the context to run, or NULL for this CPU's. A stopped context
 * does not run until its driver starts it again: then every context
 * that is not stopped runs instead, so that the work need not wait.
 */
static void kvb_run_queue(struct kvb_data *kd, struct blk_mq_hw_ctx *hctx)
{
	if (!hctx)
		hctx = blk_mq_map_queue_type(kd->q, HCTX_TYPE_DEFAULT,
					     raw_smp_processor_id());
	if (hctx && !blk_mq_hctx_stopped(hctx))
		blk_mq_run_hw_queue(hctx, true);
	else
		blk_mq_run_hw_queues(kd->q, true);
}

/* Release it, and run the queue if what was applied calls for it. */
void kvb_unlock_applied(struct kvb_data *kd, bool demand)
	__releases(&kd->lock)
{
	bool run = kvb_settle(kd, demand);

	spin_unlock_irq(&kd->lock);
	if (run)
		kvb_run_queue(kd, NULL);
}

/* Release it, and run the queue whatever was applied: the caller needs it. */
static void kvb_unlock_run(struct kvb_data *kd, bool demand)
	__releases(&kd->lock)
{
	kvb_settle(kd, demand);
	spin_unlock_irq(&kd->lock);
	kvb_run_queue(kd, NULL);
}

/* The first request on @hctx's lane (kvb_insert_direct()), if any. */
static struct request *kvb_lane_take(struct blk_mq_hw_ctx *hctx)
{
	struct kvb_lane *lane = hctx->sched_data;
	struct request *rq;

	if (list_empty_careful(&lane->rqs))
		return NULL;
	spin_lock(&lane->lock);
	rq = list_first_entry_or_null(&lane->rqs, struct request, queuelist);
	if (rq)
		list_del_init(&rq->queuelist);
	spin_unlock(&lane->lock);
	return rq;
}

static struct request *kvb_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct kvb_data *kd = hctx->queue->elevator->elevator_data;
	struct kvp_pick pick = { .kind = KVP_PICK_NONE };
	struct request *rq;
	unsigned long flags;
	bool listed;
	u64 now;

	/* Dispatched on arrival: already counted and traced. */
	rq = kvb_lane_take(hctx);
	if (rq)
		return rq;
	/*
	 * Nothing for the device-wide queue either; a request queued
	 * meanwhile on another CPU is dispatched by the queue run that
	 * follows its insert.
	 */
	listed = !list_empty_careful(&kd->dispatch);
	if (!listed && !READ_ONCE(kd->ps->queued))
		return NULL;

	/*
	 * Only a choice needs the time. Read it before the lock (a clock
	 * read may be slow), unless the dispatch list has a request to take.
	 */
	now = listed ? 0 : kvb_now();
	spin_lock_irqsave(&kd->lock, flags);
	kvb_drain(kd);
	rq = list_first_entry_or_null(&kd->dispatch, struct request, queuelist);
	if (!rq) {
		/* Taken by another dispatch since the look. */
		if (!now)
			now = kvb_now();
		rq = kvb_pick_request(kd, &pick, now);
	}
	if (!rq && kvb_hold(kd))
		rq = kvb_pick_request(kd, &pick, now);
	if (rq) {
		kvb_start_request(kd, rq, now);
		kvb_hold(kd);
	}
	/*
	 * Writes held back, by demand this may have started: has_work()
	 * says "no work" from here until a queue run. The time the pick was
	 * made at, so that the two agree on whether the oldest has expired.
	 */
	kvb_arm_write_timer(kd, now);
	if (rq && pick.kind != KVP_PICK_NONE) {
		struct kvp_batch *b = pick.batch;

		trace_kvbatch_dispatch(kd->ps->dev, blk_rq_pos(rq),
				       blk_rq_bytes(rq), b->key, b->tier,
				       b->seq, pick.why, kvp_pending(b) - 1);
	}
	spin_unlock_irqrestore(&kd->lock, flags);

	return rq;
}

/*
 * The limit in force (kvp_limit()), read without kd->lock: by has_work()
 * and by completions. The limit comes from three of the core's parameters
 * (limit_auto, max_inflight, limit_ceiling) and, when automatic, from the
 * depth controller, and a store to a tunable rewrites them all under the
 * lock (kvb_apply_params()); when max_inflight turns automatic the
 * controller is restarted, zeroed on the way. Read field by field during
 * that, the limit could come from a set that never existed: a fixed limit
 * of 0, which means none, or an automatic one of 0. So the reader reads
 * inside kd->params_seq and retries if a write section overlapped.
 *
 * A sequence count rather than a copy published through an RCU pointer:
 * the parameters live in the policy core, whose locked paths (nearly all
 * of its readers) read them in place, and they change only when a tunable
 * or nr_requests is written, so a reader almost never retries and a write
 * costs two increments. Every write section is under kd->lock with
 * interrupts off, so a completion interrupt never spins on a section its
 * own CPU has open.
 */
static u32 kvb_limit_unlocked(struct kvb_data *kd)
{
	unsigned int seq;
	u32 limit;

	do {
		seq = read_seqcount_begin(&kd->params_seq);
		limit = kvp_limit(kd->ps);
	} while (read_seqcount_retry(&kd->params_seq, seq));
	return limit;
}

/*
 * kvp_writes_held() without kd->lock: a hint, stale if the queues move,
 * but from one set of parameters (kvb_limit_unlocked()).
 */
static bool kvb_writes_held_unlocked(struct kvb_data *kd, u64 now)
{
	unsigned int seq;
	u64 until;
	bool held;

	do {
		seq = read_seqcount_begin(&kd->params_seq);
		held = kvp_writes_held(kd->ps, now, &until);
	} while (read_seqcount_retry(&kd->params_seq, seq));
	return held;
}

/*
 * has_work() runs without the lock and may be momentarily stale, but never
 * wrongly "no work" for long: every insert is followed by a run of the
 * hardware context it came on, whose lane holds what it dispatched on
 * arrival;
 * while max_inflight holds requests back, the completion that makes room
 * runs the queue (kvb_request_done()); and while deferred writes are
 * held behind in-flight demand it says "no work", as dispatch would, so
 * blk-mq does not poll: the last demand completion runs the queue, and
 * the write timer (kvb_arm_write_timer()) the oldest write's expiry.
 */
static bool kvb_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct kvb_data *kd = hctx->queue->elevator->elevator_data;
	struct kvb_lane *lane = hctx->sched_data;
	struct kvp_sched *ps = kd->ps;
	u32 limit = kvb_limit_unlocked(kd);

	if (!list_empty_careful(&lane->rqs) ||
	    !list_empty_careful(&kd->dispatch))
		return true;
	if (!READ_ONCE(ps->queued))
		return false;
	/* ps->inflight counts unapplied completions: at most too high. */
	if (limit && READ_ONCE(ps->inflight) >= limit &&
	    kvb_inflight(kd) >= limit)
		return false;
	/*
	 * Only writes queued while demand is in flight: the rare case. On
	 * dispatch's clock (kvb_now(), which may be the plug's, a little
	 * behind ktime_get_ns()), read after this one: a write expired here
	 * has expired there too, rather than a dispatch that finds nothing
	 * after "work", for which blk-mq runs every context again.
	 */
	if (READ_ONCE(ps->wq->queued) == READ_ONCE(ps->queued) &&
	    READ_ONCE(ps->tier[KVB_TIER_DEMAND].inflight))
		return !kvb_writes_held_unlocked(kd, kvb_now());
	return true;
}

/*
 * The tier of data with priority @prio and flags @opf (request or bio).
 * Swap-out is never deferred: reclaim frees the page only once its write
 * completes, and the memory it frees may be what a held writer, or the
 * recall itself, waits for. It is asynchronous unless reclaim waits for
 * it, so only REQ_SWAP tells it apart from writeback.
 */
static enum kvb_tier kvb_tier(struct kvb_data *kd, u16 prio, blk_opf_t opf)
{
	return kvp_tier_of(prio, op_is_write(opf),
			   op_is_sync(opf) || (opf & REQ_SWAP),
			   kvb_tun(kd, KVB_HINT_DEMAND));
}

static enum kvb_tier kvb_rq_tier(struct kvb_data *kd, struct request *rq)
{
	return kvb_tier(kd, req_get_ioprio(rq), rq->cmd_flags);
}

/*
 * Nothing waits in kvbatch and the limit in force (kvp_limit()) has room,
 * so @rq is what the policy would pick next (kvp_may_direct()): it is
 * dispatched as it arrives, counted in flight and traced now, past the
 * sort trees, the merge hash and the heaps, which it would leave again at
 * the next dispatch. It goes on @direct, which the caller moves to its
 * hardware context's lane once the device lock is dropped; that context's
 * dispatch empties the lane without the device lock. On a device deep
 * enough for its load that is nearly every request, and kvbatch then
 * costs little more than a FIFO per hardware context. Requests so
 * dispatched count against the limit from their arrival, so once it is
 * full the next arrival is queued, and from then on every arrival until
 * the queue has drained: what waits for the device is ordered as before.
 * A request on a lane is no merge target; in the queues it would not have
 * been one for long.
 */
static bool kvb_insert_direct(struct kvb_data *kd, struct request *rq,
			      enum kvb_tier tier, unsigned long state,
			      struct list_head *direct, u64 now)
{
	struct kvp_batch *b;

	lockdep_assert_held(&kd->lock);

	if (!kvp_may_direct(kd->ps, tier))
		return false;
	b = kvp_get_batch(kd->ps, kvb_rq_key(kd, rq), tier, now);
	rq->elv.priv[1] = b;
	rq->rq_flags |= RQF_STARTED;	/* as kvb_start_request() */
	kvb_rq_set_state(rq, state | KVB_RQ_INFLIGHT | KVB_RQ_COUNTED);
	list_add_tail(&rq->queuelist, direct);
	kd->inflight++;
	kd->stats.dispatched++;
	kvp_rq_direct(kd->ps, b, blk_rq_bytes(rq), now);
	trace_kvbatch_dispatch(kd->ps->dev, blk_rq_pos(rq), blk_rq_bytes(rq),
			       b->key, b->tier, b->seq, kvp_direct_why(tier),
			       kvp_pending(b) - 1);
	return true;
}

/*
 * Writeback throttling counts @rq, a write, until it completes: it marks
 * the writes it counts (rq->wbt_flags), and only those.
 */
static inline bool kvb_rq_wbt_counted(struct request *rq)
{
#ifdef CONFIG_BLK_WBT
	return rq->wbt_flags;
#else
	return false;
#endif
}

/* Queue a scheduled request of @tier in its batch. */
static void kvb_queue_request(struct kvb_data *kd, struct request *rq,
			      enum kvb_tier tier, u64 now)
{
	struct request_queue *q = rq->q;
	unsigned long state = kvb_rq_state(rq);
	struct kvp_batch *b;

	lockdep_assert_held(&kd->lock);

	b = kvp_get_batch(kd->ps, kvb_rq_key(kd, rq), tier, now);
	rq->elv.priv[1] = b;
	if (tier == KVB_TIER_WRITE)
		state |= KVB_RQ_DEFERRED;
	kvb_rq_set_state(rq, state);

	elv_rb_add(kvb_sort_root(kd, rq), rq);
	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	rq->fifo_time = rq->start_time_ns;
	list_add_tail(&rq->queuelist, &b->rqs);
	if (tier == KVB_TIER_WRITE)
		kvp_write_throttled(kd->ps, kvb_rq_wbt_counted(rq));
	kvp_rq_queued(kd->ps, b, kvb_head_ns(b));
	if (tier == KVB_TIER_WRITE)
		trace_kvbatch_write_defer(kd->ps->dev, blk_rq_pos(rq),
					  blk_rq_bytes(rq), b->queued);
}

static void kvb_insert_request(struct kvb_data *kd, struct request *rq,
			       bool at_head, struct list_head *free,
			       struct list_head *direct, u64 now)
{
	struct request_queue *q = rq->q;
	enum kvb_tier tier;
	struct kvp_batch *b;
	unsigned long state;
	bool first;

	lockdep_assert_held(&kd->lock);

	if (kvb_rq_bypass(rq)) {
		/* Flush or passthrough: never held back, never accounted. */
		kd->stats.bypassed++;
		if (at_head)
			list_add(&rq->queuelist, &kd->dispatch);
		else
			list_add_tail(&rq->queuelist, &kd->dispatch);
		return;
	}

	state = kvb_rq_state(rq);
	b = kvb_rq_batch(rq);
	if (state & KVB_RQ_INFLIGHT) {
		/*
		 * Requeued by the driver: back to the head of its batch.
		 * rb_node shares storage with special_vec, which the driver
		 * may have used since dispatch (sd's discard payload, freed
		 * when the command is unprepared) and left behind. Like
		 * mq-deadline, keep a requeued request out of sort[]: it is
		 * no merge target. A deferred write goes back into dsort,
		 * which orders write bursts; elv_rb_add() rewrites the node.
		 */
		state = (state & ~KVB_RQ_INFLIGHT) | KVB_RQ_QUEUED;
		kvb_rq_set_state(rq, state);
		kd->inflight--;
		kd->nr_queued++;
		RB_CLEAR_NODE(&rq->rb_node);
		if (b) {
			/*
			 * A completion IPI may have overwritten fifo_time
			 * (6.1); start_time_ns is as old as anything merged
			 * into the request.
			 */
			rq->fifo_time = rq->start_time_ns;
			list_add(&rq->queuelist, &b->rqs);
			if (state & KVB_RQ_DEFERRED)
				elv_rb_add(&kd->dsort, rq);
			kvp_rq_requeued(kd->ps, b, kvb_head_ns(b));
		} else {
			list_add(&rq->queuelist, &kd->dispatch);
		}
		return;
	}

	if (!(state & KVB_RQ_INSERTED)) {
		state |= KVB_RQ_INSERTED;
		kd->stats.inserted++;
	}
	kvb_rq_set_state(rq, state);

	/*
	 * Where a command takes several discard ranges, the block layer
	 * merges any two discard requests, wherever they lie, and an insert
	 * merge of them does not call requests_merged(): the request merged
	 * away would be freed uncounted, and one merged away while queued
	 * (down the insert merge's hash chain) freed while still on our
	 * lists. Such discards merge as bios only.
	 */
	if (!blk_discard_mergable(rq) &&
	    blk_mq_sched_try_insert_merge(q, rq, free))
		return;

	trace_block_rq_insert(rq);

	/*
	 * At-head inserts are the block layer's own (requeues of requests
	 * that must go first). Writes in a flush sequence are never held:
	 * blk_insert_flush() strips REQ_PREFLUSH, and REQ_FUA when the
	 * device lacks FUA, so on 6.12 and later a FUA write to a
	 * write-back cache arrives as a plain sync write marked
	 * RQF_FLUSH_SEQ, and every flush waits while it is held. (6.1 never
	 * hands such writes to an elevator.) A FUA write the device
	 * executes needs no flush sequence: it keeps REQ_FUA, carries no
	 * RQF_FLUSH_SEQ, and is a sync write like any other, scheduled in
	 * its tier and counted against max_inflight. Letting it pass would
	 * let O_DSYNC writers overtake queued demand.
	 */
	first = at_head || (rq->rq_flags & RQF_FLUSH_SEQ);
	tier = kvb_rq_tier(kd, rq);
	if (!first && kvb_insert_direct(kd, rq, tier, state, direct, now))
		return;

	kvb_rq_set_state(rq, state | KVB_RQ_QUEUED);
	kd->nr_queued++;
	if (first) {
		if (at_head)
			list_add(&rq->queuelist, &kd->dispatch);
		else
			list_add_tail(&rq->queuelist, &kd->dispatch);
		return;
	}
	kvb_queue_request(kd, rq, tier, now);
}

static void kvb_insert_requests(struct blk_mq_hw_ctx *hctx,
				struct list_head *list, KVB_INSERT_T flags)
{
	struct request_queue *q = hctx->queue;
	struct kvb_data *kd = q->elevator->elevator_data;
	struct kvb_lane *lane = hctx->sched_data;
	bool at_head = kvb_insert_at_head(flags);
	u64 now = kvb_now();
	unsigned long irqflags;
	LIST_HEAD(direct);
	LIST_HEAD(free);
	bool writes_waited;

	spin_lock_irqsave(&kd->lock, irqflags);
	/* A batch whose last request completed is closed before it is joined. */
	kvb_drain(kd);
	writes_waited = kd->ps->wq->queued;
	while (!list_empty(list)) {
		struct request *rq;

		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		kvb_insert_request(kd, rq, at_head, &free, &direct, now);
	}
	/*
	 * The first deferred write: a completion that read the write queue
	 * empty recorded without the lock, and may be the last demand
	 * request the write is about to be held behind. Its check after the
	 * record (kvb_record_needs_lock()) reads the queue again: either it
	 * sees the write and takes the lock, or this drain sees its record.
	 * A write queue emptied and filled again within this list (a
	 * deferred write promoted at insert, then a new one) is not seen
	 * here, and a completion that read it empty in between needs no
	 * drain here either: the promoted request stays queued, so the
	 * dispatch that follows the insert, or the completion that ends a
	 * hold, drains that record before it picks.
	 */
	if (!writes_waited && kd->ps->wq->queued) {
		/* Pairs with the barrier in kvb_record_needs_lock(). */
		smp_mb();
		kvb_drain(kd);
	}
	/* The queue run that follows the insert sees any room this makes. */
	kvb_hold(kd);
	kvb_arm_write_timer(kd, now);
	spin_unlock_irqrestore(&kd->lock, irqflags);

	/* Before the queue run that follows: it takes them. */
	if (!list_empty(&direct)) {
		spin_lock(&lane->lock);
		list_splice_tail(&direct, &lane->rqs);
		spin_unlock(&lane->lock);
	}

	/* Requests merged away at insert are freed outside the lock. */
	blk_mq_free_requests(&free);
}

/* Called from blk_mq_rq_ctx_init() for every request we will schedule. */
static void kvb_prepare_request(struct request *rq)
{
	kvb_rq_set_state(rq, 0);
	rq->elv.priv[1] = NULL;
}

/*
 * Must this completion, already recorded, take the lock? Only if it may
 * have to run the queue, or the device goes idle.
 *
 * Work waits behind max_inflight (kd->held) and this completion leaves
 * room for a batch: it runs the queue. While the hold lasts with less
 * room, a later completion makes the room: of completions that race, the
 * last to read the count sees all of their records (each reads after its
 * own record, behind a full barrier). It may still read high, while a
 * drain has taken records off the undrained count but not yet off the
 * in-flight count; that drain then applies its record too, and ends the
 * hold itself (kvb_settle(), or the dispatch or insert it is part of), or
 * leaves it to the drain work, which does both. So the room is never
 * missed.
 *
 * Nothing is left in flight or queued: the device goes idle, and its
 * batches close now rather than at the next request. Work still queued
 * with nothing in flight is not held (a hold needs requests in flight):
 * the dispatch that takes it is running or follows its insert, and
 * applies the record. A queued count read stale here belongs to a request
 * a dispatch has just started, whose own completion decides again.
 *
 * Deferred writes are queued: this completion read the write queue empty
 * before recording, and the first write arrived since. The insert held
 * the write behind the demand it saw in flight, and this may be the last
 * of that demand: only a locked path can tell.
 */
static bool kvb_record_needs_lock(struct kvb_data *kd)
{
	u32 inflight, limit;

	/*
	 * Pairs with the barriers in kvb_hold(), kvb_drain() and
	 * kvb_insert_requests().
	 */
	smp_mb__after_atomic();
	/* A write queued since the look in kvb_request_done(). */
	if (READ_ONCE(kd->ps->wq->queued))
		return true;
	inflight = kvb_inflight(kd);
	if (READ_ONCE(kd->held)) {
		limit = kvb_limit_unlocked(kd);
		return !limit || inflight + kvb_kick_batch(limit) <= limit;
	}
	return !inflight && !READ_ONCE(kd->ps->queued);
}

/*
 * Is this completion, not yet recorded, the last request in flight, with
 * nothing queued or held? The device then goes idle and the completion
 * would take the lock after recording (kvb_record_needs_lock()), so it
 * goes there without the record, its drain and their barriers: on a
 * device as fast as its submitters, most completions. Read without the
 * lock and possibly stale; either answer leads to a correct path, only a
 * dearer one.
 */
static bool kvb_goes_idle(struct kvb_data *kd)
{
	return READ_ONCE(kd->ps->inflight) <= 1 &&
	       !READ_ONCE(kd->ps->queued) && !READ_ONCE(kd->held);
}

/*
 * A request handed to the driver is done, at @now.
 *
 * The completion is recorded on this CPU and applied by the next holder of
 * the lock (kvb_drain(): at dispatch, insert, a statistics read, or the
 * completion that needs it), unless it may have to run the queue
 * (kvb_record_needs_lock()). Deferred writes may wait for the end of
 * demand, which only a locked path sees: while writes are queued, every
 * completion takes the lock; one that recorded as the first write was
 * queued either sees the write after its record and takes the lock too,
 * or has its record applied by the insert (kvb_insert_requests()).
 */
static void kvb_request_done(struct request *rq, u64 now)
{
	struct request_queue *q = rq->q;
	struct kvb_data *kd = q->elevator->elevator_data;
	struct kvp_sched *ps = kd->ps;
	struct kvp_batch *b = kvb_rq_batch(rq);
	struct blk_mq_hw_ctx *hctx = rq->mq_hctx;
	struct kvb_done c = {
		.b = b, .now = now,
		.cl = kvp_depth_class(op_is_write(req_op(rq)),
				      blk_rq_stats_sectors(rq)),
	};
	bool recorded = false, demand, run;
	unsigned long flags;

	if (rq->io_start_time_ns && now > rq->io_start_time_ns)
		c.lat = now - rq->io_start_time_ns;
	kvb_rq_set_state(rq, 0);

	if (b && !READ_ONCE(ps->wq->queued) && !kvb_goes_idle(kd) &&
	    kvb_record(kd, &c)) {
		recorded = true;
		if (!kvb_record_needs_lock(kd))
			return;
	}

	spin_lock_irqsave(&kd->lock, flags);
	/* Before the records: one of them may be the last demand request. */
	demand = ps->tier[KVB_TIER_DEMAND].inflight;
	kvb_drain(kd);
	if (!b) {
		kd->inflight--;
		kd->stats.completed++;
	} else if (!recorded) {
		kvb_complete_one(kd, &c);
		kvb_arm_reap(kd);
		/*
		 * A completion that recorded meanwhile may have read the
		 * in-flight count before this one: see kvb_drain().
		 */
		smp_mb();
		kvb_drain(kd);
	}
	run = kvb_settle(kd, demand);
	spin_unlock_irqrestore(&kd->lock, flags);

	/* Its context's tag is free, or about to be. */
	if (run)
		kvb_run_queue(kd, hctx);
}

/*
 * blk-mq completes a request, with the time it has just read for its own
 * accounting (every scheduled request has it read): the completion is
 * applied with that time, which spares a clock read per request. Before
 * RQF_USE_SCHED (6.1) this is called for every request of the queue,
 * flushes included, whose elevator fields are not ours.
 */
static void kvb_completed_request(struct request *rq, u64 now)
{
	if (kvb_rq_is_sched(rq) && (kvb_rq_state(rq) & KVB_RQ_INFLIGHT))
		kvb_request_done(rq, now ? now : kvb_now());
}

/*
 * Called when a request is freed: after its completion (applied by
 * kvb_completed_request() just before), or after it was merged into
 * another request. One still in flight here was freed without a
 * completion; it is done now.
 */
static void kvb_finish_request(struct request *rq)
{
	unsigned long state = kvb_rq_state(rq);

	/* Freed while still on our lists would leave a dangling entry. */
	WARN_ON_ONCE(state & KVB_RQ_QUEUED);
	if (state & KVB_RQ_INFLIGHT)
		kvb_request_done(rq, kvb_now());
}

/*
 * The driver gave @rq back. It stays in flight until it is inserted again
 * (kvb_insert_request()) or completes from the hardware dispatch list it
 * may be put on directly (RQF_DONTPREP requests).
 */
static void kvb_requeue_request(struct request *rq)
{
	struct kvb_data *kd = rq->q->elevator->elevator_data;
	unsigned long flags;

	spin_lock_irqsave(&kd->lock, flags);
	kd->stats.requeued++;
	spin_unlock_irqrestore(&kd->lock, flags);
}

static int kvb_request_merge(struct request_queue *q, struct request **rq,
			     struct bio *bio)
{
	struct kvb_data *kd = q->elevator->elevator_data;
	sector_t sector = bio_end_sector(bio);
	struct request *__rq;

	lockdep_assert_held(&kd->lock);

	if (!kvb_tun(kd, KVB_FRONT_MERGES))
		return ELEVATOR_NO_MERGE;

	__rq = elv_rb_find(&kd->sort[bio_data_dir(bio)], sector);
	if (!__rq && bio_data_dir(bio) == WRITE)
		__rq = elv_rb_find(&kd->dsort, sector);
	if (__rq && elv_bio_merge_ok(__rq, bio)) {
		*rq = __rq;
		if (blk_discard_mergable(__rq))
			return ELEVATOR_DISCARD_MERGE;
		return ELEVATOR_FRONT_MERGE;
	}

	return ELEVATOR_NO_MERGE;
}

static void kvb_request_merged(struct request_queue *q, struct request *req,
			       enum elv_merge type)
{
	struct kvb_data *kd = q->elevator->elevator_data;

	lockdep_assert_held(&kd->lock);

	if (type == ELEVATOR_BACK_MERGE)
		kd->stats.bio_back_merges++;
	if (type != ELEVATOR_FRONT_MERGE)
		return;
	kd->stats.bio_front_merges++;

	/* A front merge moved the start sector: re-sort. */
	if (!RB_EMPTY_NODE(&req->rb_node)) {
		elv_rb_del(kvb_sort_root(kd, req), req);
		elv_rb_add(kvb_sort_root(kd, req), req);
	}
}

/*
 * @req, queued in batch @rb, took over data older than its own: move it
 * back past the requests of @rb that arrived after that data.
 */
static void kvb_move_older(struct kvp_batch *rb, struct request *req)
{
	struct request *pos = req;

	list_for_each_entry_continue_reverse(pos, &rb->rqs, queuelist)
		if (pos->fifo_time <= req->fifo_time)
			break;
	list_move(&req->queuelist, &pos->queuelist);
}

/*
 * @req, a deferred write, took over data that is not to be deferred (a
 * sync write merged into it at insert, or by a front merge of requests):
 * the whole request leaves the write queue for the batch that data
 * belongs to (@key, @tier), keeping its arrival, so that the sync data
 * does not wait for the end of demand.
 */
static void kvb_promote(struct kvb_data *kd, struct request *req, u64 key,
			enum kvb_tier tier, u64 now)
{
	struct kvp_batch *wq = kvb_rq_batch(req);
	unsigned long state = kvb_rq_state(req);
	struct kvp_batch *b;

	lockdep_assert_held(&kd->lock);

	if (!RB_EMPTY_NODE(&req->rb_node))
		elv_rb_del(&kd->dsort, req);
	list_del_init(&req->queuelist);
	kvp_rq_unqueued(kd->ps, wq, kvb_head_ns(wq), now);
	kvb_rq_set_state(req, state & ~KVB_RQ_DEFERRED);

	b = kvp_get_batch(kd->ps, key, tier, now);
	req->elv.priv[1] = b;
	elv_rb_add(kvb_sort_root(kd, req), req);
	list_add_tail(&req->queuelist, &b->rqs);
	kvb_move_older(b, req);
	kvp_rq_queued(kd->ps, b, kvb_head_ns(b));
	kd->stats.promoted++;
}

/* @next was merged into @req and will be freed. */
static void kvb_requests_merged(struct request_queue *q, struct request *req,
				struct request *next)
{
	struct kvb_data *kd = q->elevator->elevator_data;
	struct kvp_batch *b = kvb_rq_batch(next);
	struct kvp_batch *rb = kvb_rq_batch(req);
	bool queued = kvb_rq_state(next) & KVB_RQ_QUEUED;
	enum kvb_tier tier;
	bool older;

	lockdep_assert_held(&kd->lock);

	kd->stats.merged++;
	/*
	 * The tier @next's data is in: for a queued request its batch's,
	 * not its flags'. A deferred write promoted for the sync data it
	 * took keeps its async flags, and in an insert merge's chain (the
	 * new request into one queued request, then that one into the
	 * request before it) it may be merged into another deferred write.
	 */
	tier = queued && b ? b->tier : kvb_rq_tier(kd, next);

	/*
	 * The merged request takes the older arrival and position, so
	 * merging never makes queued data wait longer than it already has.
	 * (A request merged at insert was not queued: it is the newer one.)
	 */
	older = b && rb && queued && (kvb_rq_state(req) & KVB_RQ_QUEUED) &&
		next->fifo_time < req->fifo_time;
	if (older) {
		req->fifo_time = next->fifo_time;
		if (b == rb)
			list_move(&req->queuelist, &next->queuelist);
		else
			kvb_move_older(rb, req);
	}

	kvb_remove_request(kd, next);
	if (b && queued)
		kvp_rq_unqueued(kd->ps, b, kvb_head_ns(b), ktime_get_ns());
	/* Another batch received @next's data: its head may be older now. */
	if (older && b != rb)
		kvp_batch_head_changed(kd->ps, rb, kvb_head_ns(rb));

	/* Data that must not wait went into a deferred write. */
	if ((kvb_rq_state(req) & (KVB_RQ_QUEUED | KVB_RQ_DEFERRED)) ==
	    (KVB_RQ_QUEUED | KVB_RQ_DEFERRED) && tier != KVB_TIER_WRITE)
		kvb_promote(kd, req, kvb_rq_key(kd, next), tier, kvb_now());
}

/*
 * A bio that is not to be deferred does not merge into a deferred write:
 * it would wait with it for the end of demand, up to write_expire_ms.
 * Called with the lock held for our queued requests (elv_merge() from
 * kvb_bio_merge()); requests in a plug are not ours yet (state 0).
 */
static bool kvb_allow_merge(struct request_queue *q, struct request *rq,
			    struct bio *bio)
{
	struct kvb_data *kd = q->elevator->elevator_data;

	if (!(kvb_rq_state(rq) & KVB_RQ_DEFERRED))
		return true;
	return kvb_tier(kd, bio->bi_ioprio, bio->bi_opf) == KVB_TIER_WRITE;
}

/*
 * The submitting task's bucket. By task rather than by CPU: between the
 * merge offer and the allocation the task may sleep (a cgroup's I/O
 * throttle, a preemption), another task may submit on its CPU, and it may
 * resume on another CPU; its bucket still holds its mark.
 */
static struct kvb_submit_bucket *kvb_submit_bucket(struct kvb_data *kd)
{
	return &kd->submit[hash_ptr(current, kd->submit_shift)];
}

/*
 * Leave the class of the submitting task's bio for the allocation that
 * may follow (kvb_submit_idle()): in the task's own way of its bucket, or
 * a free one. In a full bucket it takes a way at random: the marks there
 * are mostly of tasks whose last bio merged and needs no request. A task
 * that loses its mark, to that or to a race with another task of the
 * bucket, is classed by its own ioprio.
 */
static void kvb_submit_mark(struct kvb_data *kd, bool idle)
{
	struct kvb_submit_bucket *b = kvb_submit_bucket(kd);
	unsigned long me = (unsigned long)current;
	unsigned long m, mark = me | (idle ? KVB_SUBMIT_IDLE : 0);
	int i, way = -1;

	for (i = 0; i < KVB_SUBMIT_WAYS; i++) {
		m = READ_ONCE(b->mark[i]);
		if ((m & ~KVB_SUBMIT_IDLE) == me) {
			if (m == mark || cmpxchg(&b->mark[i], m, mark) == m)
				return;
			break;
		}
		if (!m && way < 0)
			way = i;
	}
	if (way >= 0 && !cmpxchg(&b->mark[way], 0, mark))
		return;
	WRITE_ONCE(b->mark[get_random_u32() % KVB_SUBMIT_WAYS], mark);
}

static bool kvb_bio_merge(struct request_queue *q, struct bio *bio,
			  unsigned int nr_segs)
{
	struct kvb_data *kd = q->elevator->elevator_data;
	struct request *free = NULL;
	unsigned long flags;
	bool ret;

	/* The class of the request the task may allocate next. */
	kvb_submit_mark(kd, IOPRIO_PRIO_CLASS(bio->bi_ioprio) ==
			IOPRIO_CLASS_IDLE);

	/*
	 * Nothing queued, nothing to merge with: on a device that keeps up
	 * every bio would otherwise take the lock for nothing. A request
	 * queued meanwhile on another CPU is missed, as it would have been
	 * a moment earlier.
	 */
	if (!READ_ONCE(kd->ps->queued))
		return false;

	spin_lock_irqsave(&kd->lock, flags);
	ret = blk_mq_sched_try_merge(q, bio, nr_segs, &free);
	spin_unlock_irqrestore(&kd->lock, flags);

	if (free)
		blk_mq_free_request(free);

	return ret;
}

/*
 * Whether the read being allocated is IDLE. The allocation carries no bio,
 * but the block layer offers each bio for a merge (kvb_bio_merge()) right
 * before it allocates a request for it, in the same task: the mark the
 * task left gives the bio's own class, per request from io_uring's
 * sqe->ioprio or libaio's aio_reqprio, else the task's. The allocation
 * uses the mark up; a bio that needs none (merged, or given a request the
 * plug had cached) leaves it to the task's next bio. Without a mark (no
 * merge offered: nomerges 2, a REQ_NOMERGE read; the mark lost in a full
 * bucket) the task's class decides.
 */
static bool kvb_submit_idle(struct kvb_data *kd)
{
	struct kvb_submit_bucket *b = kvb_submit_bucket(kd);
	unsigned long me = (unsigned long)current, m;
	int i;

	for (i = 0; i < KVB_SUBMIT_WAYS; i++) {
		m = READ_ONCE(b->mark[i]);
		if ((m & ~KVB_SUBMIT_IDLE) != me)
			continue;
		/* Free the way; another task's mark, written since, stays. */
		cmpxchg(&b->mark[i], m, 0);
		return m & KVB_SUBMIT_IDLE;
	}
	return IOPRIO_PRIO_CLASS(get_current_ioprio()) == IOPRIO_CLASS_IDLE;
}

/*
 * Keep a share of the scheduler tags for demand and other synchronous
 * reads: async requests, writes, readahead and IDLE-class (prefetch) reads
 * may only take async_depth of them, so neither a burst of writeback nor a
 * flood of prefetch can leave a reader waiting for a tag before kvbatch
 * even sees it. A read is IDLE by its bio's class (kvb_submit_idle()).
 * Requests the block layer allocates at once for a plug's bios take the
 * first bio's budget: a limited allocation takes one tag, so only a batch
 * begun by an unlimited read is shared with the bios after it.
 */
static void kvb_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data)
{
	struct kvb_data *kd = data->q->elevator->elevator_data;

	if (op_is_sync(opf) && !op_is_write(opf) && !(opf & REQ_RAHEAD) &&
	    !kvb_submit_idle(kd))
		return;

	data->shallow_depth = kvb_shallow_depth(data->hctx,
						READ_ONCE(kd->async_depth));
}

/*
 * The most requests the device can take at once, the automatic
 * max_inflight's ceiling: its hardware tags, on every hardware queue
 * unless they share one set, and no more than the scheduler's pool of
 * @depth per queue (one pool, too, when the tags are shared). Dispatched
 * past the hardware tags, a request would wait in blk-mq's own dispatch
 * list, in arrival order, where kvbatch's order no longer applies.
 */
static u32 kvb_depth_ceiling(struct request_queue *q, unsigned int depth)
{
	struct blk_mq_tag_set *set = q->tag_set;
	/* Reserved tags are for the driver's own commands (SCSI on 7.3). */
	unsigned int hw = set->queue_depth - set->reserved_tags;
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;
	u32 nr = 0;

	if (blk_mq_is_shared_tags(set->flags))
		return min(depth, hw);
	/*
	 * Polled queues carry only polled I/O, which kvbatch never sees; a
	 * context no CPU maps to has no driver tags and takes no request.
	 */
	queue_for_each_hw_ctx(q, hctx, i)
		nr += hctx->tags && hctx->type != HCTX_TYPE_POLL;
	return min(depth, hw) * max(nr, 1U);
}

/*
 * Derive what follows from the scheduler pool size, kd->sched_depth. The
 * async budget is the async_depth tunable, or 3/4 of the pool when it is
 * 0, and never more than the pool. Where the core keeps the budget in the
 * queue (7.3), it is stored there too, as mq-deadline and kyber do, so
 * that queue/async_depth shows the budget in force and a write to it
 * reaches kvbatch (kvb_depth_updated()).
 *
 * Under the lock, with the pool size read there: a write to the tunable
 * (elevator sysfs lock) and one to nr_requests (the queue's) run
 * concurrently, and a budget worked out from a pool size read outside
 * would be stored over the new pool's.
 */
static void kvb_derive_depth(struct kvb_data *kd)
{
	unsigned int depth = kd->sched_depth;
	unsigned int want = kvb_tun(kd, KVB_ASYNC_DEPTH);
	unsigned int async;

	lockdep_assert_held(&kd->lock);

	if (!want)
		want = depth * 3 / 4;
	async = clamp(want, 1U, max(depth, 1U));
	WRITE_ONCE(kd->async_depth, async);
	kvb_q_set_async_depth(kd->q, async);
	kd->ceiling = kvb_depth_ceiling(kd->q, depth);
	kvb_apply_params(kd);
}

/* The scheduler pool is now @depth requests per hardware context. */
static void kvb_update_depth(struct kvb_data *kd, unsigned int depth)
{
	struct request_queue *q = kd->q;

	spin_lock_irq(&kd->lock);
	WRITE_ONCE(kd->sched_depth, depth);
	kvb_derive_depth(kd);
	spin_unlock_irq(&kd->lock);

	/*
	 * An elevator cannot grow nr_requests itself; say once per device
	 * when the pool is too small for reordering to matter.
	 */
	if (depth < KVB_MIN_REORDER_DEPTH && !kd->small_pool) {
		pr_warn("%s: nr_requests %u leaves little to reorder; raise it: echo 1024 > /sys/block/%s/queue/nr_requests\n",
			q->disk ? q->disk->disk_name : "?", depth,
			q->disk ? q->disk->disk_name : "<disk>");
	}
	kd->small_pool = depth < KVB_MIN_REORDER_DEPTH;
}

static void kvb_depth_updated(KVB_DEPTH_ARG_T arg)
{
	struct request_queue *q = kvb_depth_arg_queue(arg);
	struct kvb_data *kd = q->elevator->elevator_data;
	struct blk_mq_hw_ctx *hctx;
	unsigned int depth = 0;
	unsigned long i;

	/*
	 * All hardware contexts share one nr_requests; take the largest.
	 * Up to 6.12 the core resizes only contexts with driver tags: one
	 * no CPU maps to has none (blk_mq_map_swqueue()) and keeps the old
	 * depth, which is not what requests get.
	 */
	queue_for_each_hw_ctx(q, hctx, i) {
		if (!hctx->sched_tags || !hctx->tags)
			continue;
		depth = max(depth, kvb_sched_depth(hctx));
		kvb_set_min_shallow_depth(q, hctx);
	}

	/*
	 * 7.3 also calls this when queue/async_depth is written, with the
	 * pool unchanged: the operator's value is then the budget, until
	 * the pool or kvbatch's own async_depth changes. (For a new pool
	 * size the core has scaled q->async_depth; kvbatch's rule above
	 * decides instead, so the tunable means the same on every kernel.)
	 */
	if (kvb_q_async_depth(q)) {
		spin_lock_irq(&kd->lock);
		if (depth == kd->sched_depth) {
			WRITE_ONCE(kd->async_depth,
				   clamp(kvb_q_async_depth(q), 1U,
					 max(depth, 1U)));
			/* write_defer_max follows the budget. */
			kvb_apply_params(kd);
			spin_unlock_irq(&kd->lock);
			return;
		}
		spin_unlock_irq(&kd->lock);
	}
	kvb_update_depth(kd, depth);
}

static int kvb_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct request_queue *q = hctx->queue;
	struct kvb_data *kd = q->elevator->elevator_data;

	/* init_sched() sized the lanes for every context of the queue. */
	if (WARN_ON_ONCE(hctx_idx >= kd->nr_lanes))
		return -EINVAL;
	hctx->sched_data = &kd->lanes[hctx_idx];

	kvb_set_min_shallow_depth(q, hctx);
	kvb_update_depth(kd, max(READ_ONCE(kd->sched_depth),
				 kvb_sched_depth(hctx)));
	return 0;
}

/* The lane stays with kvb_data until exit_sched() (struct kvb_lane). */
static void kvb_exit_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct kvb_lane *lane = hctx->sched_data;

	/* The queue is frozen: every request on a lane was dispatched. */
	WARN_ON_ONCE(!list_empty(&lane->rqs));
	hctx->sched_data = NULL;
}

static void kvb_reap_timer_fn(struct timer_list *t)
{
	struct kvb_data *kd = container_of(t, struct kvb_data, reap_timer);
	bool demand = kvb_lock_applied(kd);

	kvp_reap(kd->ps, ktime_get_ns());
	kvb_arm_reap(kd);
	kvb_unlock_applied(kd, demand);
}

/*
 * The oldest held write has expired (kvb_arm_write_timer()), and the
 * queue run dispatches it. Or the timer fired early, as armed (seven
 * eighths of the delay) or for a write dispatched since, and a write is
 * still held: has_work() then keeps the run from dispatch, so the timer
 * must arm itself again, which kvb_settle() does under the lock.
 */
static void kvb_write_timer_fn(struct timer_list *t)
{
	struct kvb_data *kd = container_of(t, struct kvb_data, write_timer);
	bool demand = kvb_lock_applied(kd);

	kvb_unlock_run(kd, demand);
}

/*
 * Records a kvb_drain() left over, beyond its budget: apply them, a
 * budget per section with interrupts enabled in between (each drain
 * queues the work again while records remain), and act on what they
 * free, as after any drain that no dispatch follows (kvb_settle()): end
 * a hold, run the queue for writes held behind demand that is done.
 */
static void kvb_drain_work_fn(struct work_struct *work)
{
	struct kvb_data *kd = container_of(work, struct kvb_data, drain_work);
	bool demand = kvb_lock_applied(kd);

	kvb_unlock_applied(kd, demand);
}

static int kvb_init_sched(struct request_queue *q, KVB_INIT_ARG_T arg)
{
	unsigned int nr = clamp(max_batches, 16U, 65536U);
	struct kvb_pcpu __percpu *pcpu;
	struct kvb_submit_bucket *submit;
	unsigned int submit_shift;
	struct elevator_queue *eq;
	struct kvb_lane *lanes;
	struct kvb_data *kd;
	unsigned int cpu, noio;
	void *mem;
	int i;

	/*
	 * The queue is frozen: an elevator switch, or a rebuild of the
	 * hardware contexts, which freezes every queue of the tag set.
	 * Reclaim that wrote to one of them (swap on it, its dirty pages)
	 * would wait for this very freeze. 7.3's freeze, and Debian 6.12's
	 * sysfs store, open a no-I/O scope; 6.1 and 6.12's context rebuild
	 * do not. A scope rather than GFP_NOIO: it also covers the core's
	 * elevator_alloc() (up to 6.12) and alloc_percpu(), which take no
	 * flags from us.
	 */
	noio = memalloc_noio_save();
	eq = kvb_elevator_alloc(q, arg);
	kd = kzalloc_node(sizeof(*kd), GFP_KERNEL, q->node);
	mem = kvzalloc_node(kvp_size(nr), GFP_KERNEL, q->node);
	pcpu = alloc_percpu(struct kvb_pcpu);
	/* About four buckets of eight ways per CPU. */
	submit_shift = clamp(order_base_2(nr_cpu_ids) + 2, 4, 10);
	submit = kvzalloc_node(sizeof(*submit) << submit_shift, GFP_KERNEL,
			       q->node);
	lanes = kcalloc_node(max(q->nr_hw_queues, 1U), sizeof(*lanes),
			     GFP_KERNEL, q->node);
	if (!eq || !kd || !mem || !pcpu || !submit || !lanes) {
		memalloc_noio_restore(noio);
		kfree(lanes);
		kvfree(submit);
		free_percpu(pcpu);
		kvfree(mem);
		kfree(kd);
		if (eq)
			kvb_elevator_free(eq);
		return -ENOMEM;
	}
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(pcpu, cpu)->lock);
	kd->pcpu = pcpu;
	kd->submit = submit;
	kd->submit_shift = submit_shift;
	kd->nr_lanes = max(q->nr_hw_queues, 1U);
	for (i = 0; i < kd->nr_lanes; i++) {
		spin_lock_init(&lanes[i].lock);
		INIT_LIST_HEAD(&lanes[i].rqs);
	}
	kd->lanes = lanes;

	spin_lock_init(&kd->lock);
	seqcount_spinlock_init(&kd->params_seq, &kd->lock);
	timer_setup(&kd->reap_timer, kvb_reap_timer_fn, 0);
	timer_setup(&kd->write_timer, kvb_write_timer_fn, 0);
	INIT_WORK(&kd->drain_work, kvb_drain_work_fn);
	kd->q = q;
	INIT_LIST_HEAD(&kd->dispatch);
	kd->sort[READ] = RB_ROOT;
	kd->sort[WRITE] = RB_ROOT;
	kd->dsort = RB_ROOT;
	kd->ps = kvp_init(mem, nr);
	memalloc_noio_restore(noio);
	kd->ps->dev = q->disk ? disk_devt(q->disk) : 0;
	for (i = 0; i < KVB_NR_TUNABLES; i++)
		kd->tun[i] = kvb_tunables[i].def;
	kd->ceiling = kvb_depth_ceiling(q, q->nr_requests);
	spin_lock_irq(&kd->lock);
	kvb_apply_params(kd);
	spin_unlock_irq(&kd->lock);
	kd->sched_depth = q->nr_requests;
	kvb_update_depth(kd, q->nr_requests);

	eq->elevator_data = kd;

	/* Service times for the automatic depth (io_start_time_ns). */
	blk_stat_enable_accounting(q);
	/*
	 * No QUEUE_FLAG_SQ_SCHED: with it, blk-mq runs only the current
	 * CPU's hardware context where it means to run them all (at the
	 * end of a quiesce, say), and a request on another context's lane
	 * would wait for that context's next insert. Queued work is
	 * device-wide: whichever context runs dispatches the next request
	 * in kvbatch's order. blk-mq clears the flag only on a switch to
	 * none, and mq-deadline and bfq set it: clear it here.
	 */
	blk_queue_flag_clear(QUEUE_FLAG_SQ_SCHED, q);

	kvb_elevator_publish(q, eq);
	return 0;
}

static void kvb_exit_sched(struct elevator_queue *e)
{
	struct kvb_data *kd = e->elevator_data;
	struct kvp_sched *ps = kd->ps;
	int t;

	/*
	 * The core froze the queue: every request has completed, so anything
	 * still accounted here, once the recorded completions are applied,
	 * is a bookkeeping bug worth a splat.
	 */
	timer_shutdown_sync(&kd->reap_timer);
	timer_shutdown_sync(&kd->write_timer);
	/*
	 * Nothing records any more: drain what is left a budget at a time,
	 * then wait for, or cancel, the work the drains may have queued.
	 */
	while (atomic_read(&kd->undrained)) {
		spin_lock_irq(&kd->lock);
		kvb_drain(kd);
		spin_unlock_irq(&kd->lock);
	}
	cancel_work_sync(&kd->drain_work);
	WARN_ON_ONCE(!list_empty(&kd->dispatch));
	WARN_ON_ONCE(!RB_EMPTY_ROOT(&kd->sort[READ]) ||
		     !RB_EMPTY_ROOT(&kd->sort[WRITE]) ||
		     !RB_EMPTY_ROOT(&kd->dsort));
	WARN_ONCE(kd->nr_queued || kd->inflight || ps->queued || ps->inflight,
		  "kvbatch: %u/%u queued and %u/%u in flight at exit\n",
		  kd->nr_queued, ps->queued, kd->inflight, ps->inflight);
	for (t = 0; t < KVB_NR_TIERS; t++)
		WARN_ON_ONCE(!list_empty(&ps->fixed[t].rqs));

	blk_stat_disable_accounting(kd->q);
	kfree(kd->lanes);
	kvfree(kd->submit);
	free_percpu(kd->pcpu);
	kvfree(ps);
	kfree(kd);
}

/*
 * sysfs. A store parses an unsigned decimal integer; anything else, or a
 * value outside the tunable's range, is rejected with -EINVAL and the old
 * value stays. batch_key takes one of its names instead.
 */
static ssize_t kvb_tunable_show(struct elevator_queue *e, char *page,
				enum kvb_tunable t)
{
	struct kvb_data *kd = e->elevator_data;
	unsigned int v = kvb_tun(kd, t);
	int i, len = 0;

	if (t != KVB_BATCH_KEY)
		return sysfs_emit(page, "%u\n", v);

	for (i = 0; i < KVB_NR_KEY_MODES; i++)
		len += sysfs_emit_at(page, len, i == v ? "%s[%s]" : "%s%s",
				     i ? " " : "", kvb_key_names[i]);
	return len + sysfs_emit_at(page, len, "\n");
}

static int kvb_parse_key(const char *page, size_t count, unsigned int *val)
{
	int i;

	if (count && page[count - 1] == '\n')
		count--;
	for (i = 0; i < KVB_NR_KEY_MODES; i++) {
		if (strlen(kvb_key_names[i]) == count &&
		    !strncmp(page, kvb_key_names[i], count)) {
			*val = i;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * Tunables are plain unsigned decimals: digits and at most one trailing
 * newline. kstrtouint() alone would also take a leading '+' and would stop
 * at an embedded NUL ("5\0junk" read as 5); both are refused here so that
 * a malformed write never changes a value.
 */
static int kvb_parse_uint(const char *page, size_t count, unsigned int *val)
{
	size_t i;

	if (count && page[count - 1] == '\n')
		count--;
	if (!count)
		return -EINVAL;
	for (i = 0; i < count; i++)
		if (!isdigit(page[i]))
			return -EINVAL;
	return kstrtouint(page, 10, val);
}

static ssize_t kvb_tunable_store(struct elevator_queue *e, const char *page,
				 size_t count, enum kvb_tunable t)
{
	struct kvb_data *kd = e->elevator_data;
	unsigned int val;
	bool demand;

	if (t == KVB_BATCH_KEY) {
		if (kvb_parse_key(page, count, &val))
			return -EINVAL;
	} else if (kvb_parse_uint(page, count, &val)) {
		return -EINVAL;
	}
	if (val < kvb_tunables[t].min || val > kvb_tunables[t].max)
		return -EINVAL;

	/* A lower max_inflight may hold work already queued. */
	demand = kvb_lock_applied(kd);
	WRITE_ONCE(kd->tun[t], val);
	if (t == KVB_ASYNC_DEPTH)
		kvb_derive_depth(kd);
	else
		kvb_apply_params(kd);
	/* A shorter batch window closes draining batches sooner. */
	if (t == KVB_BATCH_WINDOW_US)
		kvb_arm_reap(kd);
	/* A higher max_inflight, or a shorter expire, may free requests. */
	kvb_unlock_run(kd, demand);
	return count;
}

/* One show and one store per tunable (the list is kv-tunables.h). */
#define KVB_TUNABLE(id, n, ...)						\
static ssize_t kvb_##n##_show(struct elevator_queue *e, char *page)	\
{									\
	return kvb_tunable_show(e, page, KVB_##id);			\
}									\
static ssize_t kvb_##n##_store(struct elevator_queue *e,		\
			       const char *page, size_t count)		\
{									\
	return kvb_tunable_store(e, page, count, KVB_##id);		\
}

#include "kv-tunables.h"

#define KVB_TUNABLE(id, n, ...)						\
	[KVB_##id] = __ATTR(n, 0644, kvb_##n##_show, kvb_##n##_store),

static struct elv_fs_entry kvb_attrs[KVB_NR_TUNABLES + 1] = {
#include "kv-tunables.h"
	[KVB_NR_TUNABLES] = __ATTR_NULL
};

static struct elevator_type kvbatch_sched = {
	.ops = {
		.init_sched		= kvb_init_sched,
		.exit_sched		= kvb_exit_sched,
		.init_hctx		= kvb_init_hctx,
		.exit_hctx		= kvb_exit_hctx,
		.depth_updated		= kvb_depth_updated,
		.limit_depth		= kvb_limit_depth,
		.allow_merge		= kvb_allow_merge,
		.bio_merge		= kvb_bio_merge,
		.request_merge		= kvb_request_merge,
		.request_merged		= kvb_request_merged,
		.requests_merged	= kvb_requests_merged,
		.prepare_request	= kvb_prepare_request,
		.completed_request	= kvb_completed_request,
		.finish_request		= kvb_finish_request,
		.requeue_request	= kvb_requeue_request,
		.insert_requests	= kvb_insert_requests,
		.dispatch_request	= kvb_dispatch_request,
		.has_work		= kvb_has_work,
		.next_request		= elv_rb_latter_request,
		.former_request		= elv_rb_former_request,
	},
#ifdef CONFIG_BLK_DEBUG_FS
	.queue_debugfs_attrs	= kvb_queue_debugfs_attrs,
#endif
	.elevator_attrs		= kvb_attrs,
	.elevator_name		= KVB_NAME,
	.elevator_owner		= THIS_MODULE,
};
MODULE_ALIAS(KVB_NAME "-iosched");

static int __init kvbatch_init(void)
{
	if (max_batches < 16 || max_batches > 65536) {
		pr_err("max_batches must be 16..65536\n");
		return -EINVAL;
	}
	return elv_register(&kvbatch_sched);
}

static void __exit kvbatch_exit(void)
{
	elv_unregister(&kvbatch_sched);
}

module_init(kvbatch_init);
module_exit(kvbatch_exit);

MODULE_AUTHOR("The kvbatch developers");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Batch-aware I/O scheduler for KV-cache recall on NVMe");
MODULE_VERSION(KVB_VERSION);
