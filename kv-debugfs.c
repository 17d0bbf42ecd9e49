// SPDX-License-Identifier: GPL-2.0
/*
 * kvbatch: inspection through debugfs, in /sys/kernel/debug/block/<disk>/
 * sched/: the queued requests, the open batches, the tiers, the deferred
 * writes, the statistics and histogram (and their reset), and the depth
 * controller's state. Each file reads the elevator's state (kv-elv.h)
 * with the elevator held against teardown (kvb_elevator_hold()) and
 * under its lock, after applying the completions recorded without it, so
 * that what it shows is current. The files and their lines are described
 * in Documentation/kvbatch.rst.
 */
#include <linux/kernel.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "elevator.h"
#include "blk-mq-debugfs.h"

#include "kv-compat.h"
#include "kv-elv.h"

/*
 * kvbatch's state behind @q's sched files, or NULL when kvbatch is not
 * @q's scheduler; with the elevator held (kvb_elevator_hold()). On 7.3,
 * after a switch away from kvbatch whose new scheduler failed to start,
 * elevator_change() has torn kvbatch down but leaves its files, with
 * q->elevator NULL, until the disk goes (see "A switch that fails" in
 * Documentation/kvbatch.rst): a read then fails with -ENODEV.
 */
static struct kvb_data *kvb_debugfs_data(struct request_queue *q)
{
	struct elevator_queue *e = READ_ONCE(q->elevator);

	if (!e || e->type->queue_debugfs_attrs != kvb_queue_debugfs_attrs)
		return NULL;
	return e->elevator_data;
}

typedef int (*kvb_show_fn)(struct kvb_data *kd, struct seq_file *m);

/* Run @show on the state behind @data's files, the elevator held. */
static int kvb_debugfs_show(void *data, struct seq_file *m, kvb_show_fn show)
{
	struct request_queue *q = data;
	struct kvb_data *kd;
	int ret;

	ret = kvb_elevator_hold(q);
	if (ret)
		return ret;
	kd = kvb_debugfs_data(q);
	ret = kd ? show(kd, m) : -ENODEV;
	kvb_elevator_release(q);
	return ret;
}

/* The debugfs show of file NAME, around kvb_NAME(). */
#define KVB_DEBUGFS_SHOW(name)						\
static int kvb_##name##_show(void *data, struct seq_file *m)		\
{									\
	return kvb_debugfs_show(data, m, kvb_##name);			\
}

/*
 * Requests shown per list. Each list is walked under its lock, the
 * device lock with interrupts off or a lane's with preemption off: the
 * walk is bounded, whatever the list's length (seq_file may call a show
 * again with a larger buffer, each time under the lock), and shows the
 * head, the requests that go first.
 */
#define KVB_SHOW_RQS	32

/*
 * The first KVB_SHOW_RQS requests of @head, which @lock protects, then
 * "..." if there are more.
 */
static void kvb_show_rqs(struct seq_file *m, struct list_head *head,
			 spinlock_t *lock)
{
	struct request *rq;
	unsigned int n = 0;

	lockdep_assert_held(lock);

	list_for_each_entry(rq, head, queuelist) {
		if (n++ == KVB_SHOW_RQS) {
			seq_puts(m, "...\n");
			break;
		}
		__blk_mq_debugfs_rq_show(m, rq);
	}
}

static int kvb_dispatch(struct kvb_data *kd, struct seq_file *m)
{
	unsigned int i;

	spin_lock_irq(&kd->lock);
	kvb_show_rqs(m, &kd->dispatch, &kd->lock);
	spin_unlock_irq(&kd->lock);

	/*
	 * Dispatched on arrival, waiting for their context's dispatch. The
	 * lanes, not the hardware contexts: exit_hctx() runs before the
	 * core removes this file, the lanes go with @kd.
	 */
	for (i = 0; i < kd->nr_lanes; i++) {
		struct kvb_lane *lane = &kd->lanes[i];

		spin_lock(&lane->lock);
		kvb_show_rqs(m, &lane->rqs, &lane->lock);
		spin_unlock(&lane->lock);
	}
	return 0;
}

KVB_DEBUGFS_SHOW(dispatch)

static void kvb_show_batch(struct seq_file *m, struct kvp_batch *b, u64 now)
{
	seq_printf(m, "%s key=%#llx%s queued=%u inflight=%u done=%u bytes=%llu age_us=%llu\n",
		   kvb_tier_names[b->tier], b->key,
		   b->overflow ? "(overflow)" : "", b->queued, b->inflight,
		   b->nr_rqs, b->bytes,
		   b->open_ns && now > b->open_ns ?
		   div_u64(now - b->open_ns, NSEC_PER_USEC) : 0);
}

/* The open batches, newest first within each tier. */
static int kvb_batches(struct kvb_data *kd, struct seq_file *m)
{
	struct kvp_sched *ps = kd->ps;
	u64 now = ktime_get_ns();
	struct kvp_batch *b;
	u32 t;
	bool demand;

	demand = kvb_lock_applied(kd);
	/*
	 * The live list, not the pool: seq_file calls this again with a
	 * larger buffer when the output does not fit, each time with
	 * interrupts off, so the walk costs what is printed.
	 */
	for (t = 0; t < KVB_NR_BATCH_TIERS; t++) {
		list_for_each_entry(b, &ps->live, live_node)
			if (b->state == KVP_BATCH_OPEN && b->tier == t)
				kvb_show_batch(m, b, now);
		if (kvp_pending(&ps->fixed[t]))
			kvb_show_batch(m, &ps->fixed[t], now);
	}
	if (kvp_pending(ps->wq))
		kvb_show_batch(m, ps->wq, now);
	kvb_unlock_applied(kd, demand);
	return 0;
}

KVB_DEBUGFS_SHOW(batches)

static int kvb_stats(struct kvb_data *kd, struct seq_file *m)
{
	struct kvp_stats cs;
	struct kvb_stats st;
	unsigned int queued, inflight;
	int i;
	bool demand;

	demand = kvb_lock_applied(kd);
	st = kd->stats;
	cs = kd->ps->stats;
	queued = kd->nr_queued;
	inflight = kd->inflight;
	kvb_unlock_applied(kd, demand);

	seq_printf(m, "inserted %llu\n", st.inserted);
	seq_printf(m, "merged %llu\n", st.merged);
	seq_printf(m, "bio_back_merges %llu\n", st.bio_back_merges);
	seq_printf(m, "bio_front_merges %llu\n", st.bio_front_merges);
	seq_printf(m, "dispatched %llu\n", st.dispatched);
	seq_printf(m, "requeued %llu\n", st.requeued);
	seq_printf(m, "completed %llu\n", st.completed);
	seq_printf(m, "bypassed %llu\n", st.bypassed);
	seq_printf(m, "promoted %llu\n", st.promoted);
	seq_printf(m, "queued %u\n", queued);
	seq_printf(m, "inflight %u\n", inflight);
	for (i = 0; i < KVB_NR_REASONS; i++)
		seq_printf(m, "reason_%s %llu\n", kvb_reason_names[i],
			   cs.dispatched[i]);
	for (i = 0; i < KVB_NR_BATCH_TIERS; i++) {
		seq_printf(m, "%s_batches_opened %llu\n", kvb_tier_names[i],
			   cs.opened[i]);
		seq_printf(m, "%s_batches_closed %llu\n", kvb_tier_names[i],
			   cs.closed[i]);
		seq_printf(m, "%s_batch_us_mean %llu\n", kvb_tier_names[i],
			   cs.closed[i] ? div64_u64(cs.batch_ns_sum[i],
						    cs.closed[i] * 1000) : 0);
		seq_printf(m, "%s_batch_us_max %llu\n", kvb_tier_names[i],
			   div_u64(cs.batch_ns_max[i], 1000));
		seq_printf(m, "%s_batch_rqs_mean %llu\n", kvb_tier_names[i],
			   cs.closed[i] ? div64_u64(cs.batch_rqs_sum[i],
						    cs.closed[i]) : 0);
		seq_printf(m, "%s_batch_bytes_mean %llu\n", kvb_tier_names[i],
			   cs.closed[i] ? div64_u64(cs.batch_bytes_sum[i],
						    cs.closed[i]) : 0);
		seq_printf(m, "%s_batch_us_p50 %llu\n", kvb_tier_names[i],
			   kvp_hist_pct(cs.hist[i], 50));
		seq_printf(m, "%s_batch_us_p90 %llu\n", kvb_tier_names[i],
			   kvp_hist_pct(cs.hist[i], 90));
		seq_printf(m, "%s_batch_us_p99 %llu\n", kvb_tier_names[i],
			   kvp_hist_pct(cs.hist[i], 99));
		seq_printf(m, "%s_overflow_rqs %llu\n", kvb_tier_names[i],
			   cs.overflow_rqs[i]);
	}
	for (i = 0; i < KVB_NR_TIERS; i++)
		seq_printf(m, "dispatched_%s %llu\n", kvb_tier_names[i],
			   cs.dispatched_tier[i]);
	seq_printf(m, "writes_deferred %llu\n", cs.deferred);
	seq_printf(m, "write_bursts %llu\n", cs.bursts);
	seq_printf(m, "throttled %llu\n", cs.throttled);
	seq_printf(m, "direct %llu\n", cs.direct);
	seq_printf(m, "batches_live %u\n", cs.live);
	seq_printf(m, "batches_live_max %u\n", cs.live_max);
	return 0;
}

KVB_DEBUGFS_SHOW(stats)

/*
 * Each class with an unloaded time, in us: "r64k=16279" measured by a
 * probe, "r8k=~4312" inferred under load.
 */
static void kvb_depth_classes(struct seq_file *m, const struct kvp_depth *d)
{
	u32 cl;

	seq_puts(m, "auto_service_classes");
	for (cl = 0; cl < KVP_DEPTH_CLASSES; cl++) {
		u64 ns = d->base_ns[cl] ? d->base_ns[cl] : d->est_ns[cl];
		u32 size = cl % KVP_DEPTH_SIZES;

		if (!ns)
			continue;
		seq_printf(m, " %c%uk%s=%s%llu", cl < KVP_DEPTH_SIZES ? 'r' : 'w',
			   4U << size, size == KVP_DEPTH_SIZES - 1 ? "+" : "",
			   d->base_ns[cl] ? "" : "~", div_u64(ns, NSEC_PER_USEC));
	}
	seq_putc(m, '\n');
}

static int kvb_depth(struct kvb_data *kd, struct seq_file *m)
{
	const struct kvp_depth *d = &kd->ps->depth;
	bool demand;

	demand = kvb_lock_applied(kd);
	seq_printf(m, "nr_requests %u\n", kd->sched_depth);
	seq_printf(m, "nr_requests_too_small %d\n", kd->small_pool);
	seq_printf(m, "async_depth %u\n", kd->async_depth);
	seq_printf(m, "write_defer_max %u\n", kd->ps->p.write_defer_max);
	seq_printf(m, "max_inflight %u%s\n",
		   kd->ps->p.limit_auto ? d->limit : kd->ps->p.max_inflight,
		   kd->ps->p.limit_auto ? " (auto)" : "");
	seq_printf(m, "auto_limit %u\n", d->limit);
	seq_printf(m, "auto_ceiling %u\n", kd->ceiling);
	seq_printf(m, "auto_probing %d\n", d->probing);
	seq_printf(m, "auto_service_us %llu\n",
		   div_u64(d->base_ns[d->main], NSEC_PER_USEC));
	seq_printf(m, "auto_service_cv2_pct %u\n",
		   (u32)div_u64((u64)d->cv2[d->main] * 100, 1U << 16));
	kvb_depth_classes(m, d);
	seq_printf(m, "auto_dies %u\n", kvp_depth_dies(d));
	seq_printf(m, "auto_held %d\n", d->held);
	seq_printf(m, "auto_windows %llu\n", d->windows);
	seq_printf(m, "auto_probes %llu\n", d->probes);
	seq_printf(m, "auto_changes %llu\n", d->changes);
	seq_printf(m, "inflight %u\n", kd->ps->inflight);
	seq_printf(m, "held %d\n", kd->held);
	seq_printf(m, "demand_about %d\n", kd->ps->demand_about);
	kvb_unlock_applied(kd, demand);
	return 0;
}

KVB_DEBUGFS_SHOW(depth)

/*
 * Batch completion-time histogram per tier: one line per non-empty bucket,
 * "tier <upper bound in µs> count"; a bucket holds [bound / 2, bound).
 */
static int kvb_histogram(struct kvb_data *kd, struct seq_file *m)
{
	u64 hist[KVB_NR_BATCH_TIERS][KVB_HIST_BUCKETS];
	int t, i;
	bool demand;

	demand = kvb_lock_applied(kd);
	memcpy(hist, kd->ps->stats.hist, sizeof(hist));
	kvb_unlock_applied(kd, demand);

	for (t = 0; t < KVB_NR_BATCH_TIERS; t++)
		for (i = 0; i < KVB_HIST_BUCKETS; i++)
			if (hist[t][i])
				seq_printf(m, "%s %llu %llu\n",
					   kvb_tier_names[t], 1ULL << i,
					   hist[t][i]);
	return 0;
}

KVB_DEBUGFS_SHOW(histogram)

/* Requests queued in kvbatch and in flight, per tier. */
static int kvb_tiers(struct kvb_data *kd, struct seq_file *m)
{
	struct kvp_tier tiers[KVB_NR_TIERS];
	int t;
	bool demand;

	demand = kvb_lock_applied(kd);
	memcpy(tiers, kd->ps->tier, sizeof(tiers));
	kvb_unlock_applied(kd, demand);

	for (t = 0; t < KVB_NR_TIERS; t++)
		seq_printf(m, "%s queued %u inflight %u batches %u\n",
			   kvb_tier_names[t], tiers[t].queued,
			   tiers[t].inflight, tiers[t].work.n);
	return 0;
}

KVB_DEBUGFS_SHOW(tiers)

/* The deferred write queue, oldest first. */
static int kvb_deferred(struct kvb_data *kd, struct seq_file *m)
{
	spin_lock_irq(&kd->lock);
	kvb_show_rqs(m, &kd->ps->wq->rqs, &kd->lock);
	spin_unlock_irq(&kd->lock);
	return 0;
}

KVB_DEBUGFS_SHOW(deferred)

static int kvb_reset_stats(struct kvb_data *kd, struct seq_file *m)
{
	seq_puts(m, "write 1 to zero the counters in stats and histogram\n");
	return 0;
}

KVB_DEBUGFS_SHOW(reset_stats)

/* Zero the statistics; gauges (queued, in flight, live batches) stay. */
static ssize_t kvb_reset_stats_write(void *data, const char __user *buf,
				     size_t count, loff_t *ppos)
{
	struct request_queue *q = data;
	struct kvb_data *kd;
	char c[3] = { };
	ssize_t ret;
	bool demand;

	/*
	 * The input is read before the elevator is held: a fault on the
	 * user buffer takes mmap_lock, which ranks above q->elevator_lock
	 * (a fault can wait on a frozen queue, and a queue is frozen with
	 * the elevator lock taken after).
	 */
	if (count < 1 || count > 2 || copy_from_user(c, buf, count) ||
	    c[0] != '1' || (count == 2 && c[1] != '\n'))
		return -EINVAL;
	ret = kvb_elevator_hold(q);
	if (ret)
		return ret;
	kd = kvb_debugfs_data(q);
	if (!kd) {
		ret = -ENODEV;
	} else {
		demand = kvb_lock_applied(kd);
		memset(&kd->stats, 0, sizeof(kd->stats));
		kvp_stats_reset(kd->ps);
		kvb_unlock_applied(kd, demand);
		ret = count;
	}
	kvb_elevator_release(q);
	return ret;
}

const struct blk_mq_debugfs_attr kvb_queue_debugfs_attrs[] = {
	{"dispatch", 0400, kvb_dispatch_show},
	{"batches", 0400, kvb_batches_show},
	{"tiers", 0400, kvb_tiers_show},
	{"deferred", 0400, kvb_deferred_show},
	{"stats", 0400, kvb_stats_show},
	{"histogram", 0400, kvb_histogram_show},
	{"reset_stats", 0600, kvb_reset_stats_show, kvb_reset_stats_write},
	{"depth", 0400, kvb_depth_show},
	{},
};
