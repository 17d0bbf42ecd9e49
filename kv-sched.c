// SPDX-License-Identifier: GPL-2.0
/*
 * kvbatch - a blk-mq I/O scheduler for LLM inference servers that keep
 * their KV cache on NVMe.
 *
 * This file is the elevator: the glue between blk-mq and kvbatch's
 * queues. It owns request bookkeeping (insert, merge, dispatch, requeue,
 * completion), the sysfs tunables and the debugfs state. The ordering
 * policy is deliberately simple here: reads in arrival order ahead of
 * writes, with writes served after at most writes_starved read dispatches
 * and never later than write_expire_ms.
 *
 * See Documentation/kvbatch.rst.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/init.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/bio.h>
#include <linux/jiffies.h>
#include <linux/rbtree.h>
#include <linux/sbitmap.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include <trace/events/block.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-debugfs.h"
#include "blk-mq-sched.h"

#include "kv-compat.h"
#include "kv-sched.h"

enum kvb_dir {
	KVB_READ	= READ,
	KVB_WRITE	= WRITE,
	KVB_DIR_COUNT,
};

/*
 * Per-request state, kept in rq->elv.priv[0] as a bit mask. It is written
 * under kvb_data.lock, except in finish_request() where the request is
 * already exclusively owned by the freeing context.
 */
enum {
	/* Counted in stats.inserted; survives requeue so it counts once. */
	KVB_RQ_INSERTED		= 1UL << 0,
	/* On kvbatch's lists (dispatch, fifo/sort); included in nr_queued. */
	KVB_RQ_QUEUED		= 1UL << 1,
	/* Handed to the driver and not yet completed; included in inflight. */
	KVB_RQ_INFLIGHT		= 1UL << 2,
};

/* Cumulative counters, only touched under kvb_data.lock. */
struct kvb_stats {
	u64		inserted;
	u64		merged;
	u64		bio_back_merges;
	u64		bio_front_merges;
	u64		dispatched;
	u64		bypassed;
};

struct kvb_data {
	/*
	 * One lock for the whole device: blk-mq calls dispatch per hardware
	 * context, but the order is a device-wide decision. Taken without
	 * disabling interrupts: no hook that takes it runs in hard or soft
	 * interrupt context (completion only touches atomics).
	 */
	spinlock_t		lock;

	/* At-head inserts and requests we do not schedule, served first. */
	struct list_head	dispatch;
	/* Arrival order, one list per direction; the dispatch order. */
	struct list_head	fifo[KVB_DIR_COUNT];
	/* Sector order, one tree per direction; used for front merges. */
	struct rb_root		sort[KVB_DIR_COUNT];

	/* Read dispatches since the last write while writes waited. */
	unsigned int		starved;
	/* Requests on our lists (KVB_RQ_QUEUED). */
	unsigned int		nr_queued;
	/* Requests owned by the driver (KVB_RQ_INFLIGHT). */
	atomic_t		inflight;

	/* Tag budget of async requests, derived from async_depth. */
	unsigned int		async_depth;
	/* Size of the scheduler tag pool (nr_requests). */
	unsigned int		sched_depth;

	unsigned int		tun[KVB_NR_TUNABLES];
	struct kvb_stats	stats;
	/* Counted from completion context, without the lock. */
	atomic64_t		requeued;
	atomic64_t		completed;
};

static const struct kvb_tunable_desc kvb_tunables[KVB_NR_TUNABLES] = {
	/*			   name			default	min	max */
	[KVB_WRITE_EXPIRE_MS]	= { "write_expire_ms",	5000,	1,	600000 },
	[KVB_WRITES_STARVED]	= { "writes_starved",	2,	0,	1024 },
	[KVB_FRONT_MERGES]	= { "front_merges",	1,	0,	1 },
	[KVB_ASYNC_DEPTH]	= { "async_depth",	0,	0,	65536 },
};

static inline unsigned int kvb_tun(struct kvb_data *kd, enum kvb_tunable t)
{
	return READ_ONCE(kd->tun[t]);
}

static inline unsigned long kvb_rq_state(struct request *rq)
{
	return (unsigned long)rq->elv.priv[0];
}

static inline void kvb_rq_set_state(struct request *rq, unsigned long state)
{
	rq->elv.priv[0] = (void *)state;
}

static inline struct rb_root *kvb_sort_root(struct kvb_data *kd,
					    struct request *rq)
{
	return &kd->sort[rq_data_dir(rq)];
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

/* Hand @rq to the driver: it leaves our lists and counts as in flight. */
static struct request *kvb_start_request(struct kvb_data *kd,
					 struct request *rq)
{
	lockdep_assert_held(&kd->lock);

	/*
	 * A request we do not schedule was only put on the dispatch list. Its
	 * hash and rb nodes were never initialised and, for a flush, elv.priv
	 * shares storage with the flush machinery: touch nothing but the list.
	 */
	if (!kvb_rq_is_sched(rq)) {
		list_del_init(&rq->queuelist);
		return rq;
	}

	kvb_remove_request(kd, rq);
	kvb_rq_set_state(rq, kvb_rq_state(rq) | KVB_RQ_INFLIGHT);
	atomic_inc(&kd->inflight);
	kd->stats.dispatched++;
	return rq;
}

static bool kvb_fifo_expired(struct kvb_data *kd, enum kvb_dir dir,
			     unsigned long now)
{
	struct request *rq;
	unsigned long expire;

	lockdep_assert_held(&kd->lock);

	rq = list_first_entry_or_null(&kd->fifo[dir], struct request,
				      queuelist);
	if (!rq)
		return false;
	expire = msecs_to_jiffies(kvb_tun(kd, KVB_WRITE_EXPIRE_MS));
	return time_after_eq(now, (unsigned long)rq->fifo_time + expire);
}

/*
 * Choose the next scheduled request. Reads go first because a reader is
 * usually waiting for them; a write is taken when no read is queued, after
 * writes_starved consecutive read dispatches while writes waited, or when
 * the oldest write has waited write_expire_ms. Within a direction the order
 * is arrival order.
 */
static struct request *kvb_choose_request(struct kvb_data *kd)
{
	bool reads = !list_empty(&kd->fifo[KVB_READ]);
	bool writes = !list_empty(&kd->fifo[KVB_WRITE]);
	enum kvb_dir dir;

	lockdep_assert_held(&kd->lock);

	if (writes && (!reads ||
		       kd->starved >= kvb_tun(kd, KVB_WRITES_STARVED) ||
		       kvb_fifo_expired(kd, KVB_WRITE, jiffies))) {
		dir = KVB_WRITE;
		kd->starved = 0;
	} else if (reads) {
		dir = KVB_READ;
		if (writes)
			kd->starved++;
	} else {
		return NULL;
	}

	return list_first_entry(&kd->fifo[dir], struct request, queuelist);
}

static struct request *kvb_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct kvb_data *kd = hctx->queue->elevator->elevator_data;
	struct request *rq;

	spin_lock(&kd->lock);
	rq = list_first_entry_or_null(&kd->dispatch, struct request, queuelist);
	if (!rq)
		rq = kvb_choose_request(kd);
	if (rq)
		kvb_start_request(kd, rq);
	spin_unlock(&kd->lock);

	return rq;
}

/*
 * has_work() is called without the lock. It may see a stale answer, but
 * never a false "no work" after an insert: insert_requests() is followed
 * by a queue run, which calls dispatch, which takes the lock.
 */
static bool kvb_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct kvb_data *kd = hctx->queue->elevator->elevator_data;

	return !list_empty_careful(&kd->dispatch) ||
		!list_empty_careful(&kd->fifo[KVB_READ]) ||
		!list_empty_careful(&kd->fifo[KVB_WRITE]);
}

static void kvb_insert_request(struct kvb_data *kd, struct request *rq,
			       bool at_head, struct list_head *free)
{
	struct request_queue *q = rq->q;
	unsigned long state;

	lockdep_assert_held(&kd->lock);

	if (!kvb_rq_is_sched(rq)) {
		/* Flush or passthrough: never held back, never accounted. */
		kd->stats.bypassed++;
		if (at_head)
			list_add(&rq->queuelist, &kd->dispatch);
		else
			list_add_tail(&rq->queuelist, &kd->dispatch);
		return;
	}

	state = kvb_rq_state(rq);
	if (state & KVB_RQ_INFLIGHT) {
		/* A requeued request coming back from the driver. */
		state &= ~KVB_RQ_INFLIGHT;
		atomic_dec(&kd->inflight);
	}
	if (!(state & KVB_RQ_INSERTED)) {
		state |= KVB_RQ_INSERTED;
		kd->stats.inserted++;
	}
	kvb_rq_set_state(rq, state);

	if (blk_mq_sched_try_insert_merge(q, rq, free))
		return;

	trace_block_rq_insert(rq);

	kvb_rq_set_state(rq, state | KVB_RQ_QUEUED);
	kd->nr_queued++;
	rq->fifo_time = jiffies;

	if (at_head) {
		list_add(&rq->queuelist, &kd->dispatch);
		return;
	}

	elv_rb_add(kvb_sort_root(kd, rq), rq);
	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	list_add_tail(&rq->queuelist, &kd->fifo[rq_data_dir(rq)]);
}

static void kvb_insert_requests(struct blk_mq_hw_ctx *hctx,
				struct list_head *list, KVB_INSERT_T flags)
{
	struct request_queue *q = hctx->queue;
	struct kvb_data *kd = q->elevator->elevator_data;
	bool at_head = kvb_insert_at_head(flags);
	LIST_HEAD(free);

	spin_lock(&kd->lock);
	while (!list_empty(list)) {
		struct request *rq;

		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		kvb_insert_request(kd, rq, at_head, &free);
	}
	spin_unlock(&kd->lock);

	/* Requests merged away at insert are freed outside the lock. */
	blk_mq_free_requests(&free);
}

/* Called from blk_mq_rq_ctx_init() for every request we will schedule. */
static void kvb_prepare_request(struct request *rq)
{
	kvb_rq_set_state(rq, 0);
}

/*
 * Called when a request is freed: after completion, or after it was merged
 * into another request. Only requests handed to the driver count.
 */
static void kvb_finish_request(struct request *rq)
{
	struct kvb_data *kd = rq->q->elevator->elevator_data;
	unsigned long state = kvb_rq_state(rq);

	/* Freed while still on our lists would leave a dangling entry. */
	WARN_ON_ONCE(state & KVB_RQ_QUEUED);

	if (state & KVB_RQ_INFLIGHT) {
		atomic_dec(&kd->inflight);
		atomic64_inc(&kd->completed);
	}
	kvb_rq_set_state(rq, 0);
}

/*
 * The driver gave @rq back. It stays counted as in flight until it is
 * either inserted again (kvb_insert_request) or completes from the
 * dispatch list it may be put on directly (RQF_DONTPREP requests).
 */
static void kvb_requeue_request(struct request *rq)
{
	struct kvb_data *kd = rq->q->elevator->elevator_data;

	atomic64_inc(&kd->requeued);
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

/* @next was merged into @req and will be freed. */
static void kvb_requests_merged(struct request_queue *q, struct request *req,
				struct request *next)
{
	struct kvb_data *kd = q->elevator->elevator_data;

	lockdep_assert_held(&kd->lock);

	kd->stats.merged++;

	/*
	 * The merged request keeps the older arrival time and position, so
	 * merging never makes queued data wait longer than it already has.
	 */
	if (!list_empty(&req->queuelist) && !list_empty(&next->queuelist) &&
	    time_before((unsigned long)next->fifo_time,
			(unsigned long)req->fifo_time)) {
		list_move(&req->queuelist, &next->queuelist);
		req->fifo_time = next->fifo_time;
	}

	kvb_remove_request(kd, next);
}

static bool kvb_bio_merge(struct request_queue *q, struct bio *bio,
			  unsigned int nr_segs)
{
	struct kvb_data *kd = q->elevator->elevator_data;
	struct request *free = NULL;
	bool ret;

	spin_lock(&kd->lock);
	ret = blk_mq_sched_try_merge(q, bio, nr_segs, &free);
	spin_unlock(&kd->lock);

	if (free)
		blk_mq_free_request(free);

	return ret;
}

/*
 * Keep a share of the scheduler tags for synchronous reads: async requests
 * and writes may only take async_depth of them, so a burst of writeback
 * cannot leave a reader waiting for a tag before kvbatch even sees it.
 */
static void kvb_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data)
{
	struct kvb_data *kd = data->q->elevator->elevator_data;

	if (op_is_sync(opf) && !op_is_write(opf))
		return;

	data->shallow_depth = kvb_shallow_depth(data->hctx,
						READ_ONCE(kd->async_depth));
}

/* Recompute the async tag budget from async_depth and the pool size. */
static void kvb_update_async_depth(struct kvb_data *kd)
{
	unsigned int depth = READ_ONCE(kd->sched_depth);
	unsigned int want = kvb_tun(kd, KVB_ASYNC_DEPTH);

	if (!want)
		want = depth * 3 / 4;
	WRITE_ONCE(kd->async_depth, clamp(want, 1U, max(depth, 1U)));
}

static void kvb_depth_updated(KVB_DEPTH_ARG_T arg)
{
	struct request_queue *q = kvb_depth_arg_queue(arg);
	struct kvb_data *kd = q->elevator->elevator_data;
	struct blk_mq_hw_ctx *hctx;
	unsigned long i;
	unsigned int depth = 0;

	/* All hardware contexts share one nr_requests; take the largest. */
	queue_for_each_hw_ctx(q, hctx, i) {
		if (hctx->sched_tags)
			depth = max(depth, kvb_sched_depth(hctx));
		kvb_set_min_shallow_depth(q, hctx);
	}
	WRITE_ONCE(kd->sched_depth, depth);
	kvb_update_async_depth(kd);
}

static int kvb_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	struct request_queue *q = hctx->queue;
	struct kvb_data *kd = q->elevator->elevator_data;

	WRITE_ONCE(kd->sched_depth, max(READ_ONCE(kd->sched_depth),
					kvb_sched_depth(hctx)));
	kvb_set_min_shallow_depth(q, hctx);
	kvb_update_async_depth(kd);
	return 0;
}

static int kvb_init_sched(struct request_queue *q, KVB_INIT_ARG_T arg)
{
	struct elevator_queue *eq;
	struct kvb_data *kd;
	int i;

	eq = kvb_elevator_alloc(q, arg);
	if (!eq)
		return -ENOMEM;

	kd = kzalloc_node(sizeof(*kd), GFP_KERNEL, q->node);
	if (!kd) {
		kvb_elevator_free(eq);
		return -ENOMEM;
	}

	spin_lock_init(&kd->lock);
	INIT_LIST_HEAD(&kd->dispatch);
	for (i = 0; i < KVB_DIR_COUNT; i++) {
		INIT_LIST_HEAD(&kd->fifo[i]);
		kd->sort[i] = RB_ROOT;
	}
	atomic_set(&kd->inflight, 0);
	atomic64_set(&kd->requeued, 0);
	atomic64_set(&kd->completed, 0);
	for (i = 0; i < KVB_NR_TUNABLES; i++)
		kd->tun[i] = kvb_tunables[i].def;
	kd->sched_depth = q->nr_requests;
	kvb_update_async_depth(kd);

	eq->elevator_data = kd;

	/* The order is device-wide: dispatch from one hardware context. */
	blk_queue_flag_set(QUEUE_FLAG_SQ_SCHED, q);

	kvb_elevator_publish(q, eq);
	return 0;
}

static void kvb_exit_sched(struct elevator_queue *e)
{
	struct kvb_data *kd = e->elevator_data;
	int i;

	/*
	 * The core froze the queue: every request has completed, so anything
	 * still accounted here is a bookkeeping bug worth a splat.
	 */
	WARN_ON_ONCE(!list_empty(&kd->dispatch));
	for (i = 0; i < KVB_DIR_COUNT; i++)
		WARN_ON_ONCE(!list_empty(&kd->fifo[i]));
	WARN_ONCE(kd->nr_queued || atomic_read(&kd->inflight),
		  "kvbatch: %u queued and %d in flight at exit\n",
		  kd->nr_queued, atomic_read(&kd->inflight));

	kfree(kd);
}

/*
 * sysfs: one show/store pair per tunable, generated from KVB_TUNABLES.
 * A store parses an unsigned decimal integer; anything else, or a value
 * outside the tunable's range, is rejected with -EINVAL and the old value
 * stays.
 */
static ssize_t kvb_tunable_show(struct elevator_queue *e, char *page,
				enum kvb_tunable t)
{
	struct kvb_data *kd = e->elevator_data;

	return sysfs_emit(page, "%u\n", kvb_tun(kd, t));
}

static ssize_t kvb_tunable_store(struct elevator_queue *e, const char *page,
				 size_t count, enum kvb_tunable t)
{
	struct kvb_data *kd = e->elevator_data;
	unsigned int val;

	if (kstrtouint(page, 10, &val))
		return -EINVAL;
	if (val < kvb_tunables[t].min || val > kvb_tunables[t].max)
		return -EINVAL;

	WRITE_ONCE(kd->tun[t], val);
	if (t == KVB_ASYNC_DEPTH)
		kvb_update_async_depth(kd);
	return count;
}

#define KVB_SHOW(__name, __t)						\
static ssize_t kvb_##__name##_show(struct elevator_queue *e, char *page) \
{									\
	return kvb_tunable_show(e, page, __t);				\
}

KVB_SHOW(write_expire_ms, KVB_WRITE_EXPIRE_MS);
KVB_SHOW(writes_starved, KVB_WRITES_STARVED);
KVB_SHOW(front_merges, KVB_FRONT_MERGES);
KVB_SHOW(async_depth, KVB_ASYNC_DEPTH);
#undef KVB_SHOW

#define KVB_STORE(__name, __t)						\
static ssize_t kvb_##__name##_store(struct elevator_queue *e,		\
				    const char *page, size_t count)	\
{									\
	return kvb_tunable_store(e, page, count, __t);			\
}

KVB_STORE(write_expire_ms, KVB_WRITE_EXPIRE_MS);
KVB_STORE(writes_starved, KVB_WRITES_STARVED);
KVB_STORE(front_merges, KVB_FRONT_MERGES);
KVB_STORE(async_depth, KVB_ASYNC_DEPTH);
#undef KVB_STORE

#define KVB_ATTR(name) __ATTR(name, 0644, kvb_##name##_show, kvb_##name##_store)

static struct elv_fs_entry kvb_attrs[] = {
	KVB_ATTR(write_expire_ms),
	KVB_ATTR(writes_starved),
	KVB_ATTR(front_merges),
	KVB_ATTR(async_depth),
	__ATTR_NULL
};

#undef KVB_ATTR

#ifdef CONFIG_BLK_DEBUG_FS
/* The request lists, for debugfs. */
enum kvb_list {
	KVB_LIST_DISPATCH,
	KVB_LIST_READ,
	KVB_LIST_WRITE,
};

static struct list_head *kvb_list_head(struct kvb_data *kd, enum kvb_list l)
{
	switch (l) {
	case KVB_LIST_READ:
		return &kd->fifo[KVB_READ];
	case KVB_LIST_WRITE:
		return &kd->fifo[KVB_WRITE];
	default:
		return &kd->dispatch;
	}
}

static int kvb_list_show(struct request_queue *q, struct seq_file *m,
			 enum kvb_list l)
{
	struct kvb_data *kd = q->elevator->elevator_data;
	struct request *rq;

	spin_lock(&kd->lock);
	list_for_each_entry(rq, kvb_list_head(kd, l), queuelist)
		__blk_mq_debugfs_rq_show(m, rq);
	spin_unlock(&kd->lock);
	return 0;
}

static int kvb_dispatch_show(void *data, struct seq_file *m)
{
	return kvb_list_show(data, m, KVB_LIST_DISPATCH);
}

static int kvb_read_fifo_show(void *data, struct seq_file *m)
{
	return kvb_list_show(data, m, KVB_LIST_READ);
}

static int kvb_write_fifo_show(void *data, struct seq_file *m)
{
	return kvb_list_show(data, m, KVB_LIST_WRITE);
}

static int kvb_stats_show(void *data, struct seq_file *m)
{
	struct request_queue *q = data;
	struct kvb_data *kd = q->elevator->elevator_data;
	struct kvb_stats st;
	unsigned int queued;

	spin_lock(&kd->lock);
	st = kd->stats;
	queued = kd->nr_queued;
	spin_unlock(&kd->lock);

	seq_printf(m, "inserted %llu\n", st.inserted);
	seq_printf(m, "merged %llu\n", st.merged);
	seq_printf(m, "bio_back_merges %llu\n", st.bio_back_merges);
	seq_printf(m, "bio_front_merges %llu\n", st.bio_front_merges);
	seq_printf(m, "dispatched %llu\n", st.dispatched);
	seq_printf(m, "requeued %lld\n",
		   (long long)atomic64_read(&kd->requeued));
	seq_printf(m, "completed %lld\n",
		   (long long)atomic64_read(&kd->completed));
	seq_printf(m, "bypassed %llu\n", st.bypassed);
	seq_printf(m, "queued %u\n", queued);
	seq_printf(m, "inflight %d\n", atomic_read(&kd->inflight));
	return 0;
}

static int kvb_depth_show(void *data, struct seq_file *m)
{
	struct request_queue *q = data;
	struct kvb_data *kd = q->elevator->elevator_data;

	seq_printf(m, "nr_requests %u\n", READ_ONCE(kd->sched_depth));
	seq_printf(m, "async_depth %u\n", READ_ONCE(kd->async_depth));
	return 0;
}

static const struct blk_mq_debugfs_attr kvb_queue_debugfs_attrs[] = {
	{"dispatch", 0400, kvb_dispatch_show},
	{"read_fifo", 0400, kvb_read_fifo_show},
	{"write_fifo", 0400, kvb_write_fifo_show},
	{"stats", 0400, kvb_stats_show},
	{"depth", 0400, kvb_depth_show},
	{},
};
#endif

static struct elevator_type kvbatch_sched = {
	.ops = {
		.init_sched		= kvb_init_sched,
		.exit_sched		= kvb_exit_sched,
		.init_hctx		= kvb_init_hctx,
		.depth_updated		= kvb_depth_updated,
		.limit_depth		= kvb_limit_depth,
		.bio_merge		= kvb_bio_merge,
		.request_merge		= kvb_request_merge,
		.request_merged		= kvb_request_merged,
		.requests_merged	= kvb_requests_merged,
		.prepare_request	= kvb_prepare_request,
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
MODULE_ALIAS("kvbatch-iosched");

static int __init kvbatch_init(void)
{
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
