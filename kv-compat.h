/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: the elevator API differences between the kernels kvbatch builds
 * for, in one place. The KVB_* feature macros come from kv-probe.h, which
 * scripts/kv-probe.sh generates by reading the headers actually compiled
 * against. The test suite exercises Debian's 6.1, 6.12 and 7.3 kernels;
 * the branches in between (6.16, 6.17) are compiled by none of them.
 */
#ifndef _KV_COMPAT_H
#define _KV_COMPAT_H

#include <linux/blk-mq.h>
#include <linux/sbitmap.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"
#include "kv-probe.h"

/* struct blk_mq_tags moved to <linux/blk-mq.h> when this header went away. */
#ifdef KVB_HAVE_BLK_MQ_TAG_H
#include "blk-mq-tag.h"
#endif

/* insert_requests(): a bool at_head up to 6.4, blk_insert_t flags since. */
#ifdef KVB_HAVE_BLK_INSERT_T
#define KVB_INSERT_T	blk_insert_t

static inline bool kvb_insert_at_head(blk_insert_t flags)
{
	return flags & BLK_MQ_INSERT_AT_HEAD;
}
#else
#define KVB_INSERT_T	bool

static inline bool kvb_insert_at_head(bool at_head)
{
	return at_head;
}
#endif

/*
 * True when the core ran our prepare_request() for @rq and will call
 * finish_request() for it. Flush requests never are. Passthrough requests
 * are on 6.1 (RQF_ELVPRIV), where a plug also hands them to
 * insert_requests(); since RQF_USE_SCHED they are not, and the plug sends
 * them past the elevator. kvbatch schedules neither (kvb_rq_bypass()).
 */
static inline bool kvb_rq_is_sched(const struct request *rq)
{
#ifdef RQF_USE_SCHED
	return !!(rq->rq_flags & RQF_USE_SCHED);
#else
	return !!(rq->rq_flags & RQF_ELVPRIV);
#endif
}

/*
 * init_sched(): up to 6.16.3 the elevator allocates the elevator_queue
 * (elevator_alloc()); since, the core allocates it (elevator_alloc() is no
 * longer exported) and passes it in, and frees it if init_sched() fails.
 * Publishing it in q->elevator stays the elevator's job on every kernel
 * (mq-deadline and kyber of 7.3 still do): the core calls init_hctx(),
 * which reads q->elevator, right after init_sched() returns.
 */
#ifdef KVB_INIT_SCHED_TAKES_EQ
#define KVB_INIT_ARG_T	struct elevator_queue *

static inline struct elevator_queue *
kvb_elevator_alloc(struct request_queue *q, struct elevator_queue *eq)
{
	return eq;
}

static inline void kvb_elevator_free(struct elevator_queue *eq)
{
}
#else
#define KVB_INIT_ARG_T	struct elevator_type *

static inline struct elevator_queue *
kvb_elevator_alloc(struct request_queue *q, struct elevator_type *e)
{
	return elevator_alloc(q, e);
}

static inline void kvb_elevator_free(struct elevator_queue *eq)
{
	kobject_put(&eq->kobj);
}
#endif

static inline void kvb_elevator_publish(struct request_queue *q,
					struct elevator_queue *eq)
{
	q->elevator = eq;
}

/* depth_updated(): per hardware context up to 6.17.3, per queue since. */
#ifdef KVB_DEPTH_UPDATED_TAKES_Q
#define KVB_DEPTH_ARG_T	struct request_queue *

static inline struct request_queue *kvb_depth_arg_queue(struct request_queue *q)
{
	return q;
}
#else
#define KVB_DEPTH_ARG_T	struct blk_mq_hw_ctx *

static inline struct request_queue *
kvb_depth_arg_queue(struct blk_mq_hw_ctx *hctx)
{
	return hctx->queue;
}
#endif

/*
 * Size of the scheduler tag pool. Up to 6.12 it is read from the sbitmap
 * rather than from q->nr_requests: on 6.1, depth_updated() runs before the
 * core stores the new nr_requests. Where depth_updated() takes the queue,
 * the core stores nr_requests first (before init_sched() too), and the
 * sbitmap of tags shared by all hardware queues is sized nr_requests less
 * the tag set's reserved tags, so it would read one short on a SCSI host
 * with a reserved tag: take q->nr_requests, as mq-deadline and kyber do.
 */
static inline unsigned int kvb_sched_depth(struct blk_mq_hw_ctx *hctx)
{
#ifdef KVB_DEPTH_UPDATED_TAKES_Q
	return hctx->queue->nr_requests;
#else
	return hctx->sched_tags->bitmap_tags.sb.depth;
#endif
}

/*
 * limit_depth() returns a tag budget in requests; convert it to what the
 * core's shallow_depth means on this kernel: bits of one sbitmap word
 * (6.1..6.12 before the sbitmap rework) or bits of the whole map.
 */
static inline unsigned int kvb_shallow_depth(struct blk_mq_hw_ctx *hctx,
					     unsigned int depth)
{
#ifdef KVB_SHALLOW_DEPTH_PER_WORD
	struct sbitmap_queue *bt = &hctx->sched_tags->bitmap_tags;
	unsigned int nr = bt->sb.depth;

	return max(1U, ((depth << bt->sb.shift) + nr - 1) / nr);
#else
	return max(1U, depth);
#endif
}

/*
 * The debugfs files' hold on the elevator. Since 6.16 the core tears an
 * elevator down (exit_hctx(), exit_sched()) under q->elevator_lock and
 * removes its debugfs files only later, without that lock: a read of a
 * sched file can meet freed state unless it holds the lock, as the core's
 * own files that read scheduler state do. Before, the queue's sched files
 * are removed, waiting for their readers, before exit_sched() runs.
 */
#ifdef KVB_HAVE_ELEVATOR_LOCK
static inline int kvb_elevator_hold(struct request_queue *q)
{
	return mutex_lock_interruptible(&q->elevator_lock);
}

static inline void kvb_elevator_release(struct request_queue *q)
{
	mutex_unlock(&q->elevator_lock);
}
#else
static inline int kvb_elevator_hold(struct request_queue *q)
{
	return 0;
}

static inline void kvb_elevator_release(struct request_queue *q)
{
}
#endif

/*
 * The clock for request events. Since 6.9 the block layer caches one
 * reading per plug (blk_time_get_ns(), outside a plug or a task a plain
 * read); start_time_ns, kvbatch's arrival stamp, comes from it, so events
 * timed with it agree with the stamps and a plug of requests costs one
 * clock read. A cached reading may be older than one taken since on
 * another CPU: the policy core accepts times slightly out of order.
 */
static inline u64 kvb_now(void)
{
#ifdef KVB_HAVE_BLK_TIME
	return blk_time_get_ns();
#else
	return ktime_get_ns();
#endif
}

/*
 * The async tag budget. Up to 6.12 each elevator keeps its own; in 7.3 the
 * core keeps it as q->async_depth: queue/async_depth in sysfs (writable
 * while an elevator is attached, then depth_updated() is called), scaled
 * by the core when nr_requests changes, and set by each elevator's
 * init_sched(). kvbatch follows that (see kvb_update_depth()); where the
 * field does not exist these do nothing.
 */
#ifdef KVB_HAVE_Q_ASYNC_DEPTH
static inline unsigned int kvb_q_async_depth(struct request_queue *q)
{
	return READ_ONCE(q->async_depth);
}

static inline void kvb_q_set_async_depth(struct request_queue *q,
					 unsigned int depth)
{
	WRITE_ONCE(q->async_depth, depth);
}
#else
static inline unsigned int kvb_q_async_depth(struct request_queue *q)
{
	return 0;
}

static inline void kvb_q_set_async_depth(struct request_queue *q,
					 unsigned int depth)
{
}
#endif

/*
 * Our shallow depths never go below one request. Since 6.17.4 the helper
 * sets it on every hardware context of @q at once (7.3 has it as an
 * inline of blk-mq-sched.h); @hctx is then only the caller's iterator.
 */
static inline void kvb_set_min_shallow_depth(struct request_queue *q,
					     struct blk_mq_hw_ctx *hctx)
{
#ifdef KVB_HAVE_MIN_SHALLOW_DEPTH_Q
	blk_mq_set_min_shallow_depth(q, 1);
#else
	sbitmap_queue_min_shallow_depth(&hctx->sched_tags->bitmap_tags, 1);
#endif
}

#endif /* _KV_COMPAT_H */
