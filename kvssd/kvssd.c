// SPDX-License-Identifier: GPL-2.0
/*
 * kvssd: a deep KV-cache SSD as a blk-mq block device, for kvbatch's tests
 * and benchmarks (not shipped with kvbatch).
 *
 * An elevator orders only what enters the device. A real NVMe SSD accepts
 * far more than its dies can serve and queues the rest inside, FIFO per
 * die, so a scheduler that hands it everything has given the order away.
 * null_blk has no such queue; kvssd has: one disk, kvssd0, whose requests
 * go through the device model of kvssd-model.h (channels x dies, each die
 * a FIFO with drawn service times and garbage collection), and whose
 * hardware queues are far deeper (queue_depth) than the dies, so that work
 * past the knee waits inside the device.
 *
 * Each request is one model operation on one die: chunk_sectors is the
 * model's stripe and max_hw_sectors no larger, so the block layer never
 * builds one across two stripes. queue_rq() submits it to the model under
 * the model's lock, which gives its completion time at once, and arms the
 * request's hrtimer (absolute, CLOCK_MONOTONIC, hard interrupt context)
 * for that time; the timer tells the model the die is done with it and
 * completes it through blk_mq_complete_request(), so it ends on the CPU
 * blk-mq chooses, as an NVMe interrupt would. No thread polls, no data are
 * kept: reads return zeroes (zero_fill_bio()), writes are dropped.
 *
 * The device has no volatile write cache (a data-centre SSD with
 * power-loss protection): the block layer sends it no flush, and one that
 * comes anyway completes at once. Discard and write-zeroes are not
 * supported (the block layer refuses them with EOPNOTSUPP).
 *
 * /sys/kernel/debug/kvssd/kvssd0/ has "dies" (a line per die: index,
 * queued, ops, erases, busy_ns) and "config" (a "name value" line per
 * setting, the model's times in ns).
 *
 * It builds for Debian's 6.1, 6.12 and 7.3 kernels; the API differences
 * are in the compat helpers below.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blk-mq.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/debugfs.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/version.h>

#include "kvssd-model.h"

#define KVSSD_NAME		"kvssd0"
#define KVSSD_MAX_HW_QUEUES	64
#define KVSSD_MAX_QUEUE_DEPTH	4096
/* Bounds that keep the scaled times (us x time_scale x 1000) in a u64. */
#define KVSSD_MAX_US		10000000U
#define KVSSD_MAX_TIME_SCALE	10000U
#define KVSSD_MAX_STRIPE_KB	4096U
#define KVSSD_MAX_CAPACITY_MB	16777216U	/* 16 TiB */

/* The default device: 64 dies, 16 000 read IOPS (time_scale). */
#define KVSSD_DEF_CHANNELS	8
#define KVSSD_DEF_DIES		8
#define KVSSD_DEF_STRIPE_KB	64
#define KVSSD_DEF_PAGE_KB	16
#define KVSSD_DEF_READ_US	100
#define KVSSD_DEF_PROGRAM_US	600
#define KVSSD_DEF_ERASE_US	3000
#define KVSSD_DEF_CV_PCT	30
#define KVSSD_DEF_GC_PROGRAMS	64
#define KVSSD_DEF_TIME_SCALE	40

/* ---- compat: the kernels kvssd builds for ------------------------------ */

/* hrtimer_setup() replaced hrtimer_init() in 6.13; 7.3 has only it. */
static inline void kvssd_timer_setup(struct hrtimer *timer,
				     enum hrtimer_restart (*fn)(struct hrtimer *))
{
#if KERNEL_VERSION(6, 13, 0) <= LINUX_VERSION_CODE
	hrtimer_setup(timer, fn, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
#else
	hrtimer_init(timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	timer->function = fn;
#endif
}

/* Merging became the default in 6.14, which dropped the flag asking for it. */
#if KERNEL_VERSION(6, 14, 0) <= LINUX_VERSION_CODE
#define KVSSD_TAG_SET_FLAGS	0
#else
#define KVSSD_TAG_SET_FLAGS	BLK_MQ_F_SHOULD_MERGE
#endif

/*
 * The disk and its limits: since 6.9 blk_mq_alloc_disk() takes them as
 * queue_limits; 6.1 sets them on the queue afterwards. No rotation, no
 * entropy from its timings: the default since 6.11, asked for on 6.1.
 */
static struct gendisk *kvssd_alloc_disk(struct blk_mq_tag_set *set,
					void *queuedata, u32 stripe_sectors,
					u32 page_sectors)
{
#if KERNEL_VERSION(6, 9, 0) <= LINUX_VERSION_CODE
	struct queue_limits lim = {
		.max_hw_sectors		= stripe_sectors,
		.chunk_sectors		= stripe_sectors,
		.io_min			= page_sectors << SECTOR_SHIFT,
		.io_opt			= stripe_sectors << SECTOR_SHIFT,
	};

	return blk_mq_alloc_disk(set, &lim, queuedata);
#else
	struct gendisk *disk = blk_mq_alloc_disk(set, queuedata);
	struct request_queue *q;

	if (IS_ERR(disk))
		return disk;
	q = disk->queue;
	blk_queue_max_hw_sectors(q, stripe_sectors);
	blk_queue_chunk_sectors(q, stripe_sectors);
	blk_queue_io_min(q, page_sectors << SECTOR_SHIFT);
	blk_queue_io_opt(q, stripe_sectors << SECTOR_SHIFT);
	blk_queue_flag_set(QUEUE_FLAG_NONROT, q);
	blk_queue_flag_clear(QUEUE_FLAG_ADD_RANDOM, q);
	return disk;
#endif
}

/* ---- module parameters: the device, read-only once loaded ------------- */

static unsigned int hw_queues;
module_param(hw_queues, uint, 0444);
MODULE_PARM_DESC(hw_queues, "Hardware queues, 1..64 (0, the default: one per online CPU, at most 64)");

static unsigned int queue_depth = 256;
module_param(queue_depth, uint, 0444);
MODULE_PARM_DESC(queue_depth, "Tags per hardware queue, 1..4096 (default 256: far deeper than the dies)");

static unsigned int channels = KVSSD_DEF_CHANNELS;
module_param(channels, uint, 0444);
MODULE_PARM_DESC(channels, "Flash channels (default 8)");

static unsigned int dies_per_channel = KVSSD_DEF_DIES;
module_param(dies_per_channel, uint, 0444);
MODULE_PARM_DESC(dies_per_channel, "Dies per channel (default 8: 64 dies)");

static unsigned int stripe_kb = KVSSD_DEF_STRIPE_KB;
module_param(stripe_kb, uint, 0444);
MODULE_PARM_DESC(stripe_kb, "LBA stripe per die in KiB, a power of 2 from the page size to 4096 (default 64)");

static unsigned int page_kb = KVSSD_DEF_PAGE_KB;
module_param(page_kb, uint, 0444);
MODULE_PARM_DESC(page_kb, "Flash page in KiB, a power of 2 up to stripe_kb (default 16)");

static unsigned int read_us = KVSSD_DEF_READ_US;
module_param(read_us, uint, 0444);
MODULE_PARM_DESC(read_us, "Page read time in us, before time_scale (default 100)");

static unsigned int program_us = KVSSD_DEF_PROGRAM_US;
module_param(program_us, uint, 0444);
MODULE_PARM_DESC(program_us, "Page program time in us, before time_scale (default 600)");

static unsigned int erase_us = KVSSD_DEF_ERASE_US;
module_param(erase_us, uint, 0444);
MODULE_PARM_DESC(erase_us, "Block erase time in us, before time_scale (default 3000)");

static unsigned int cv_pct = KVSSD_DEF_CV_PCT;
module_param(cv_pct, uint, 0444);
MODULE_PARM_DESC(cv_pct, "Service time stdev / mean in percent, 0..100 (default 30)");

static unsigned int gc_programs = KVSSD_DEF_GC_PROGRAMS;
module_param(gc_programs, uint, 0444);
MODULE_PARM_DESC(gc_programs, "Programs per die between erases, 0: no GC (default 64)");

/*
 * The model's times are the parameters times time_scale. The guest's CPU
 * must not be the bottleneck under any scheduler: on QEMU's instruction
 * clock (tools/kvvm --icount, 1 ns per guest instruction) a 4 KiB read
 * costs a 6.1 guest about 10 us of CPU without an elevator and 18 us with
 * one, so a vCPU keeps up with about 50 000 IOPS and a device is the
 * bottleneck only below that. Unscaled, the default 64 dies of 100 us
 * reads would serve 640 000; times 40, reads take 4 ms and the device
 * serves 16 000 IOPS, a third of what one vCPU can issue.
 */
static unsigned int time_scale = KVSSD_DEF_TIME_SCALE;
module_param(time_scale, uint, 0444);
MODULE_PARM_DESC(time_scale, "Multiplier of the times, 1..10000 (default 40: 16 000 read IOPS from the defaults)");

static unsigned int capacity_mb = 4096;
module_param(capacity_mb, uint, 0444);
MODULE_PARM_DESC(capacity_mb, "Capacity in MiB (default 4096)");

static unsigned long long seed = 1;
module_param(seed, ullong, 0444);
MODULE_PARM_DESC(seed, "Seed of the model's service time draws (default 1)");

/* ---- the device -------------------------------------------------------- */

struct kvssd_dev {
	spinlock_t		lock;		/* the model: dies, generator */
	struct kvssd_model	model;
	struct blk_mq_tag_set	tag_set;
	struct gendisk		*disk;
	struct dentry		*debugfs;
};

/* A request's PDU: the die serving it and the timer of its completion. */
struct kvssd_cmd {
	struct hrtimer		timer;
	u32			die;
};

static struct kvssd_dev *kvssd;
static struct dentry *kvssd_debugfs_root;

static enum hrtimer_restart kvssd_timer_fn(struct hrtimer *timer)
{
	struct kvssd_cmd *cmd = container_of(timer, struct kvssd_cmd, timer);
	struct request *rq = blk_mq_rq_from_pdu(cmd);
	struct kvssd_dev *dev = rq->q->queuedata;
	unsigned long flags;

	spin_lock_irqsave(&dev->lock, flags);
	kvssd_die_done(&dev->model, cmd->die);
	spin_unlock_irqrestore(&dev->lock, flags);
	blk_mq_complete_request(rq);
	return HRTIMER_NORESTART;
}

static void kvssd_complete_rq(struct request *rq)
{
	blk_mq_end_request(rq, BLK_STS_OK);
}

/* Hand @rq to the model: its die, and when the die will be done with it. */
static u64 kvssd_issue(struct kvssd_dev *dev, struct request *rq,
		       enum kvssd_op op, u32 *die)
{
	lockdep_assert_held(&dev->lock);
	return kvssd_submit(&dev->model, ktime_get_ns(), op, blk_rq_pos(rq),
			    blk_rq_sectors(rq), die);
}

static blk_status_t kvssd_queue_rq(struct blk_mq_hw_ctx *hctx,
				   const struct blk_mq_queue_data *bd)
{
	struct kvssd_dev *dev = hctx->queue->queuedata;
	struct request *rq = bd->rq;
	struct kvssd_cmd *cmd = blk_mq_rq_to_pdu(rq);
	unsigned long flags;
	enum kvssd_op op;
	struct bio *bio;
	u64 done;

	switch (req_op(rq)) {
	case REQ_OP_READ:
		op = KVSSD_READ;
		break;
	case REQ_OP_WRITE:
		op = KVSSD_PROGRAM;
		break;
	case REQ_OP_FLUSH:
		/* Nothing is cached: there is nothing to write back. */
		blk_mq_start_request(rq);
		blk_mq_end_request(rq, BLK_STS_OK);
		return BLK_STS_OK;
	default:
		return BLK_STS_NOTSUPP;
	}

	blk_mq_start_request(rq);
	/* The data are ready when the read completes; they are zeroes. */
	if (op == KVSSD_READ)
		__rq_for_each_bio(bio, rq)
			zero_fill_bio(bio);

	spin_lock_irqsave(&dev->lock, flags);
	done = kvssd_issue(dev, rq, op, &cmd->die);
	spin_unlock_irqrestore(&dev->lock, flags);
	hrtimer_start(&cmd->timer, ns_to_ktime(done), HRTIMER_MODE_ABS);
	return BLK_STS_OK;
}

/*
 * The device loses nothing: its timer completes every request it holds,
 * however long the request waits behind its die. Past the knee that can
 * be longer than the block layer's timeout, which only restarts.
 */
static enum blk_eh_timer_return kvssd_timeout_rq(struct request *rq)
{
	return BLK_EH_RESET_TIMER;
}

static int kvssd_init_cmd(struct request *rq)
{
	struct kvssd_cmd *cmd = blk_mq_rq_to_pdu(rq);

	kvssd_timer_setup(&cmd->timer, kvssd_timer_fn);
	return 0;
}

/*
 * init_request()'s NUMA node became an int in 7.x, a fix that stable
 * kernels may take: the hook that matches the headers is chosen by type,
 * not by version.
 */
static int __maybe_unused
kvssd_init_request_uint(struct blk_mq_tag_set *set, struct request *rq,
			unsigned int hctx_idx, unsigned int numa_node)
{
	return kvssd_init_cmd(rq);
}

static int __maybe_unused
kvssd_init_request_int(struct blk_mq_tag_set *set, struct request *rq,
		       unsigned int hctx_idx, int numa_node)
{
	return kvssd_init_cmd(rq);
}

#define KVSSD_INIT_REQUEST						\
	__builtin_choose_expr(						\
		__same_type(((struct blk_mq_ops *)NULL)->init_request,	\
			    &kvssd_init_request_int),			\
		kvssd_init_request_int, kvssd_init_request_uint)

/* Called for every request when the tag set is freed. */
static void kvssd_exit_request(struct blk_mq_tag_set *set, struct request *rq,
			       unsigned int hctx_idx)
{
	struct kvssd_cmd *cmd = blk_mq_rq_to_pdu(rq);

	hrtimer_cancel(&cmd->timer);
}

static const struct blk_mq_ops kvssd_mq_ops = {
	.queue_rq	= kvssd_queue_rq,
	.complete	= kvssd_complete_rq,
	.timeout	= kvssd_timeout_rq,
	.init_request	= KVSSD_INIT_REQUEST,
	.exit_request	= kvssd_exit_request,
};

static const struct block_device_operations kvssd_fops = {
	.owner		= THIS_MODULE,
};

/* ---- debugfs ----------------------------------------------------------- */

static int kvssd_dies_show(struct seq_file *m, void *unused)
{
	struct kvssd_dev *dev = m->private;
	u32 i, n = dev->model.nr_dies;
	struct kvssd_die *snap;
	unsigned long flags;

	/* One snapshot, so that the lines agree with each other. */
	snap = kvmalloc_array(n, sizeof(*snap), GFP_KERNEL);
	if (!snap)
		return -ENOMEM;
	spin_lock_irqsave(&dev->lock, flags);
	memcpy(snap, dev->model.dies, n * sizeof(*snap));
	spin_unlock_irqrestore(&dev->lock, flags);
	for (i = 0; i < n; i++)
		seq_printf(m, "%u %u %llu %llu %llu\n", i, snap[i].queued,
			   snap[i].ops, snap[i].erases, snap[i].busy_ns);
	kvfree(snap);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvssd_dies);

static int kvssd_config_show(struct seq_file *m, void *unused)
{
	struct kvssd_dev *dev = m->private;
	const struct kvssd_config *cfg = &dev->model.cfg;

	seq_printf(m, "channels %u\n", cfg->channels);
	seq_printf(m, "dies_per_channel %u\n", cfg->dies_per_channel);
	seq_printf(m, "dies %u\n", dev->model.nr_dies);
	seq_printf(m, "stripe_sectors %u\n", cfg->stripe_sectors);
	seq_printf(m, "page_sectors %u\n", cfg->page_sectors);
	seq_printf(m, "read_ns %llu\n", cfg->read_ns);
	seq_printf(m, "program_ns %llu\n", cfg->program_ns);
	seq_printf(m, "erase_ns %llu\n", cfg->erase_ns);
	seq_printf(m, "cv_pct %u\n", cfg->cv_pct);
	seq_printf(m, "gc_programs %u\n", cfg->gc_programs);
	seq_printf(m, "seed %llu\n", cfg->seed);
	seq_printf(m, "time_scale %u\n", time_scale);
	seq_printf(m, "hw_queues %u\n", dev->tag_set.nr_hw_queues);
	seq_printf(m, "queue_depth %u\n", dev->tag_set.queue_depth);
	seq_printf(m, "capacity_sectors %llu\n",
		   (unsigned long long)get_capacity(dev->disk));
	seq_printf(m, "max_read_iops %llu\n", kvssd_max_iops(cfg, KVSSD_READ));
	seq_printf(m, "max_program_iops %llu\n",
		   kvssd_max_iops(cfg, KVSSD_PROGRAM));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kvssd_config);

static void kvssd_debugfs_init(struct kvssd_dev *dev)
{
	kvssd_debugfs_root = debugfs_create_dir(KBUILD_MODNAME, NULL);
	dev->debugfs = debugfs_create_dir(KVSSD_NAME, kvssd_debugfs_root);
	debugfs_create_file("dies", 0444, dev->debugfs, dev, &kvssd_dies_fops);
	debugfs_create_file("config", 0444, dev->debugfs, dev,
			    &kvssd_config_fops);
}

/* ---- the parameters, checked --------------------------------------------- */

/* The parameters the model checks, in the order kvssd_config_of() takes. */
enum {
	KVSSD_P_CHANNELS,
	KVSSD_P_DIES,
	KVSSD_P_STRIPE_KB,
	KVSSD_P_PAGE_KB,
	KVSSD_P_READ_US,
	KVSSD_P_PROGRAM_US,
	KVSSD_P_ERASE_US,
	KVSSD_P_CV_PCT,
	KVSSD_P_GC_PROGRAMS,
	KVSSD_NR_MPARAMS
};

static const struct kvssd_mparam {
	const char	*name;
	unsigned int	*val;
	unsigned int	def;
	bool		scaled;		/* a time, times time_scale */
} kvssd_mparams[KVSSD_NR_MPARAMS] = {
	[KVSSD_P_CHANNELS]	= { "channels", &channels,
				    KVSSD_DEF_CHANNELS },
	[KVSSD_P_DIES]		= { "dies_per_channel", &dies_per_channel,
				    KVSSD_DEF_DIES },
	[KVSSD_P_STRIPE_KB]	= { "stripe_kb", &stripe_kb,
				    KVSSD_DEF_STRIPE_KB },
	[KVSSD_P_PAGE_KB]	= { "page_kb", &page_kb, KVSSD_DEF_PAGE_KB },
	[KVSSD_P_READ_US]	= { "read_us", &read_us, KVSSD_DEF_READ_US,
				    true },
	[KVSSD_P_PROGRAM_US]	= { "program_us", &program_us,
				    KVSSD_DEF_PROGRAM_US, true },
	[KVSSD_P_ERASE_US]	= { "erase_us", &erase_us,
				    KVSSD_DEF_ERASE_US, true },
	[KVSSD_P_CV_PCT]	= { "cv_pct", &cv_pct, KVSSD_DEF_CV_PCT },
	[KVSSD_P_GC_PROGRAMS]	= { "gc_programs", &gc_programs,
				    KVSSD_DEF_GC_PROGRAMS },
};

/* The model's settings from parameter values @v, times @scale (in ns). */
static void kvssd_config_of(struct kvssd_config *cfg,
			    const unsigned int v[KVSSD_NR_MPARAMS],
			    unsigned int scale)
{
	u64 ns = (u64)scale * NSEC_PER_USEC;

	memset(cfg, 0, sizeof(*cfg));
	cfg->channels = v[KVSSD_P_CHANNELS];
	cfg->dies_per_channel = v[KVSSD_P_DIES];
	cfg->stripe_sectors = v[KVSSD_P_STRIPE_KB] * (SZ_1K >> SECTOR_SHIFT);
	cfg->page_sectors = v[KVSSD_P_PAGE_KB] * (SZ_1K >> SECTOR_SHIFT);
	cfg->read_ns = v[KVSSD_P_READ_US] * ns;
	cfg->program_ns = v[KVSSD_P_PROGRAM_US] * ns;
	cfg->erase_ns = v[KVSSD_P_ERASE_US] * ns;
	cfg->cv_pct = v[KVSSD_P_CV_PCT];
	cfg->gc_programs = v[KVSSD_P_GC_PROGRAMS];
	cfg->seed = seed;
}

/* A driver parameter out of its range (@min..@max, a power of 2 if @pow2). */
static bool kvssd_bad_range(const char *name, unsigned int val,
			    unsigned int min, unsigned int max, bool pow2)
{
	if (val >= min && val <= max && (!pow2 || is_power_of_2(val)))
		return false;
	pr_err("%s=%u: must be %s%u to %u\n", name, val,
	       pow2 ? "a power of 2 from " : "", min, max);
	return true;
}

/*
 * Check the parameters and fill @cfg, or say which is bad and return
 * -EINVAL. The driver checks what the block layer and the unit
 * conversions need; the model checks the rest (kvssd_config_check()),
 * each parameter alone in the default device, so that the message names
 * it, then all together.
 */
static int kvssd_check_params(struct kvssd_config *cfg)
{
	unsigned int v[KVSSD_NR_MPARAMS];
	unsigned int i, j;
	bool bad = false;

	if (!hw_queues)
		hw_queues = min_t(unsigned int, num_online_cpus(),
				  KVSSD_MAX_HW_QUEUES);
	bad |= kvssd_bad_range("hw_queues", hw_queues, 1,
			       KVSSD_MAX_HW_QUEUES, false);
	bad |= kvssd_bad_range("queue_depth", queue_depth, 1,
			       KVSSD_MAX_QUEUE_DEPTH, false);
	bad |= kvssd_bad_range("stripe_kb", stripe_kb, PAGE_SIZE / SZ_1K,
			       KVSSD_MAX_STRIPE_KB, true);
	bad |= kvssd_bad_range("page_kb", page_kb, 1, KVSSD_MAX_STRIPE_KB,
			       true);
	bad |= kvssd_bad_range("read_us", read_us, 1, KVSSD_MAX_US, false);
	bad |= kvssd_bad_range("program_us", program_us, 1, KVSSD_MAX_US,
			       false);
	bad |= kvssd_bad_range("erase_us", erase_us, 1, KVSSD_MAX_US, false);
	bad |= kvssd_bad_range("time_scale", time_scale, 1,
			       KVSSD_MAX_TIME_SCALE, false);
	bad |= kvssd_bad_range("capacity_mb", capacity_mb, 1,
			       KVSSD_MAX_CAPACITY_MB, false);
	if (bad)
		return -EINVAL;

	for (i = 0; i < KVSSD_NR_MPARAMS; i++)
		v[i] = *kvssd_mparams[i].val;
	kvssd_config_of(cfg, v, time_scale);
	/*
	 * Each alone in the default device; a time at this time_scale, the
	 * other times at their least (1 us), so that only it can be wrong.
	 */
	for (i = 0; i < KVSSD_NR_MPARAMS; i++) {
		const struct kvssd_mparam *p = &kvssd_mparams[i];
		unsigned int one[KVSSD_NR_MPARAMS];
		struct kvssd_config cfg1;

		for (j = 0; j < KVSSD_NR_MPARAMS; j++) {
			if (j == i)
				one[j] = v[j];
			else if (p->scaled && kvssd_mparams[j].scaled)
				one[j] = 1;
			else
				one[j] = kvssd_mparams[j].def;
		}
		kvssd_config_of(&cfg1, one,
				p->scaled ? time_scale : KVSSD_DEF_TIME_SCALE);
		if (!kvssd_config_check(&cfg1))
			continue;
		if (p->scaled)
			pr_err("%s=%u with time_scale=%u: %s\n", p->name, v[i],
			       time_scale, kvssd_config_error(&cfg1));
		else
			pr_err("%s=%u: %s\n", p->name, v[i],
			       kvssd_config_error(&cfg1));
		bad = true;
	}
	if (!bad && kvssd_config_check(cfg)) {
		pr_err("channels=%u dies_per_channel=%u stripe_kb=%u page_kb=%u together: %s\n",
		       channels, dies_per_channel, stripe_kb, page_kb,
		       kvssd_config_error(cfg));
		bad = true;
	}
	return bad ? -EINVAL : 0;
}

/* ---- load and unload ----------------------------------------------------- */

static void kvssd_free(struct kvssd_dev *dev)
{
	kvfree(dev->model.dies);
	kfree(dev);
}

static int __init kvssd_init(void)
{
	struct kvssd_config cfg;
	struct kvssd_die *dies;
	struct kvssd_dev *dev;
	struct gendisk *disk;
	int ret;

	ret = kvssd_check_params(&cfg);
	if (ret)
		return ret;

	dev = kzalloc_node(sizeof(*dev), GFP_KERNEL, NUMA_NO_NODE);
	if (!dev)
		return -ENOMEM;
	spin_lock_init(&dev->lock);
	dies = kvcalloc(kvssd_nr_dies(&cfg), sizeof(*dies), GFP_KERNEL);
	if (!dies) {
		kfree(dev);
		return -ENOMEM;
	}
	if (kvssd_model_init(&dev->model, &cfg, dies)) {
		/* kvssd_check_params() took it: the model disagrees. */
		pr_err("the model refuses its checked parameters: %s\n",
		       kvssd_config_error(&cfg));
		kvfree(dies);
		kfree(dev);
		return -EINVAL;
	}

	dev->tag_set.ops = &kvssd_mq_ops;
	dev->tag_set.nr_hw_queues = hw_queues;
	dev->tag_set.queue_depth = queue_depth;
	dev->tag_set.numa_node = NUMA_NO_NODE;
	dev->tag_set.cmd_size = sizeof(struct kvssd_cmd);
	dev->tag_set.flags = KVSSD_TAG_SET_FLAGS;
	dev->tag_set.driver_data = dev;
	ret = blk_mq_alloc_tag_set(&dev->tag_set);
	if (ret)
		goto out_free;

	disk = kvssd_alloc_disk(&dev->tag_set, dev, cfg.stripe_sectors,
				cfg.page_sectors);
	if (IS_ERR(disk)) {
		ret = PTR_ERR(disk);
		goto out_tag_set;
	}
	dev->disk = disk;
	disk->fops = &kvssd_fops;
	disk->private_data = dev;
	/* No partitions: no scan reads the disk behind the tests' backs. */
	disk->flags |= GENHD_FL_NO_PART;
	strscpy(disk->disk_name, KVSSD_NAME, DISK_NAME_LEN);
	set_capacity(disk, (sector_t)capacity_mb << (20 - SECTOR_SHIFT));
	ret = add_disk(disk);
	if (ret)
		goto out_disk;

	kvssd = dev;
	kvssd_debugfs_init(dev);
	pr_info("%s: %u dies, %u hardware queues of %u, %llu read IOPS at most\n",
		KVSSD_NAME, dev->model.nr_dies, hw_queues, queue_depth,
		kvssd_max_iops(&cfg, KVSSD_READ));
	return 0;

out_disk:
	put_disk(disk);
out_tag_set:
	blk_mq_free_tag_set(&dev->tag_set);
out_free:
	kvssd_free(dev);
	return ret;
}

static void __exit kvssd_exit(void)
{
	struct kvssd_dev *dev = kvssd;

	debugfs_remove_recursive(kvssd_debugfs_root);
	/* Waits for the requests in flight; then no timer is armed. */
	del_gendisk(dev->disk);
	put_disk(dev->disk);
	/* exit_request() cancels each request's timer (a callback ending). */
	blk_mq_free_tag_set(&dev->tag_set);
	kvssd_free(dev);
}

module_init(kvssd_init);
module_exit(kvssd_exit);

MODULE_DESCRIPTION("kvssd: a deep KV-cache SSD model as a block device (tests)");
MODULE_AUTHOR("kvbatch developers");
MODULE_LICENSE("GPL");
