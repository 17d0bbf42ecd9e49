/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch: the elevator's per-device state, shared by the elevator
 * (kv-sched.c), which owns it, and its debugfs inspection (kv-debugfs.c),
 * which reads it under the same lock.
 */
#ifndef _KV_ELV_H
#define _KV_ELV_H

#include <linux/atomic.h>
#include <linux/blk-mq.h>
#include <linux/cpumask.h>
#include <linux/list.h>
#include <linux/percpu.h>
#include <linux/rbtree.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#include "kv-policy.h"

/* Cumulative counters of the elevator itself (the core has its own). */
struct kvb_stats {
	u64		inserted;
	u64		merged;
	u64		bio_back_merges;
	u64		bio_front_merges;
	u64		dispatched;
	u64		bypassed;
	u64		requeued;
	u64		completed;
	u64		promoted;	/* deferred writes given sync data */
};

/*
 * Completions recorded without the device lock (kvb_request_done()),
 * applied to the core under it by kvb_drain(): the time and service time
 * of each, and the batch it belongs to, which stays open until then.
 * KVB_DONE_RECS per CPU; KVB_DRAIN_MAX at most per kvb_drain() call,
 * whatever the number of CPUs: the rest waits for the next call, or for
 * kvbatch's drain work.
 */
#define KVB_DONE_RECS	32
#define KVB_DRAIN_MAX	32

struct kvb_done {
	struct kvp_batch	*b;
	u64			now;
	u64			lat;
	u32			cl;	/* kvp_depth_class() */
};

struct kvb_pcpu {
	spinlock_t		lock;	/* this CPU's completions vs the drain */
	unsigned int		n;
	struct kvb_done		rec[KVB_DONE_RECS];
};

/*
 * A hardware context's lane. A request dispatched on arrival
 * (kvb_insert_direct()) is counted in flight under kvb_data.lock and then
 * waits here, on the context it arrived on, for that context's next
 * dispatch, which takes it under this lock alone: on a device that keeps
 * up, no device-wide lock at dispatch. A leaf lock, never taken from
 * interrupt context nor with kvb_data.lock held. The lanes live in
 * kvb_data and go with it: the core calls exit_hctx() before it removes
 * the queue's sched debugfs files, whose dispatch file lists the lanes.
 */
struct kvb_lane {
	spinlock_t		lock;	/* the context's inserts vs its dispatch */
	struct list_head	rqs;
} ____cacheline_aligned_in_smp;

struct kvb_data {
	/* Protects all of kvb_data and the core; irq-safe (see top). */
	spinlock_t		lock;
	struct request_queue	*q;

	/* At-head, flush sequence and unscheduled requests: first out. */
	struct list_head	dispatch;
	/* Sector order of queued requests, for front merges and bursts. */
	struct rb_root		sort[2];	/* scheduled reads, writes */
	struct rb_root		dsort;		/* deferred writes */
	sector_t		burst_pos;	/* next sector of a write burst */

	struct kvp_sched	*ps;
	/*
	 * Write section around every change of the core's parameters
	 * (kvb_apply_params()), for the readers of its limit that do not
	 * take the lock (kvb_limit_unlocked()).
	 */
	seqcount_spinlock_t	params_seq;

	/* One per hardware context, by index (hctx->sched_data points in). */
	struct kvb_lane		*lanes;
	unsigned int		nr_lanes;

	unsigned int		nr_queued;	/* KVB_RQ_QUEUED requests */
	unsigned int		inflight;	/* KVB_RQ_INFLIGHT requests */
	/*
	 * max_inflight held work back; a completion will run the queue.
	 * Written under the lock, read by completions without it.
	 */
	bool			held;

	/* Closes batches past their batch_window_us on an idle queue. */
	struct timer_list	reap_timer;
	/* Runs the queue when the oldest held write expires. */
	struct timer_list	write_timer;

	/* Completions not yet applied to the core, and where they wait. */
	struct kvb_pcpu __percpu *pcpu;
	struct cpumask		pcpu_mask;
	atomic_t		undrained;
	/* Applies the records a kvb_drain() left over (kblockd). */
	struct work_struct	drain_work;

	unsigned int		async_depth;	/* async tag budget */
	/*
	 * For each task whose bio was last offered for a merge, in the
	 * bucket its address hashes to: the task, with KVB_SUBMIT_IDLE if
	 * that bio is IDLE, the class of the request it allocates next
	 * (kvb_limit_depth()). 1 << submit_shift buckets.
	 */
	struct kvb_submit_bucket *submit;
	unsigned int		submit_shift;
	unsigned int		sched_depth;	/* nr_requests */
	bool			small_pool;	/* warned about nr_requests */

	/* What the device holds: the automatic max_inflight's ceiling. */
	unsigned int		ceiling;
	unsigned int		tun[KVB_NR_TUNABLES];
	struct kvb_stats	stats;
};

/* task_struct is cache-line aligned: bit 0 of its address is free. */
#define KVB_SUBMIT_IDLE		1UL

/*
 * A bucket is one cache line: a task that submits reads and writes its
 * bucket alone for each bio.
 */
#define KVB_SUBMIT_WAYS		8
struct kvb_submit_bucket {
	unsigned long		mark[KVB_SUBMIT_WAYS];
} ____cacheline_aligned_in_smp;

static inline unsigned int kvb_tun(struct kvb_data *kd, enum kvb_tunable t)
{
	return READ_ONCE(kd->tun[t]);
}

/*
 * Apply the completions recorded without the lock to the core; with
 * kvb_data.lock held. Every reader of the core's state calls it first.
 */
void kvb_drain(struct kvb_data *kd);
bool kvb_lock_applied(struct kvb_data *kd) __acquires(&kd->lock);
void kvb_unlock_applied(struct kvb_data *kd, bool demand)
	__releases(&kd->lock);

#ifdef CONFIG_BLK_DEBUG_FS
#include "blk-mq-debugfs.h"

extern const struct blk_mq_debugfs_attr kvb_queue_debugfs_attrs[];
#endif

#endif /* _KV_ELV_H */
