// SPDX-License-Identifier: GPL-2.0
/*
 * kvssd-model: see kvssd-model.h. Integer arithmetic only, so that the
 * same source builds into the kernel module, kvsim and the unit tests.
 */
#ifdef __KERNEL__
#include <linux/bitops.h>
#include <linux/math64.h>
#include <linux/string.h>
#include <linux/time64.h>
#else
#include "kv-user.h"
#endif

#include "kvssd-model.h"

/*
 * Bounds that keep every product below 2^64: a page time of at most a
 * second, at most 1024 pages to a stripe, and the exponential draw below
 * 2^21 in Q16 (-ln of 2^-32 is 22.2).
 */
#define KVSSD_MAX_NS		NSEC_PER_SEC
#define KVSSD_MAX_PAGES		1024
#define KVSSD_MAX_STRIPE	0x100000	/* sectors: 512 MiB */

static bool kvssd_pow2(u32 v)
{
	return v && !(v & (v - 1));
}

const char *kvssd_config_error(const struct kvssd_config *cfg)
{
	if (!cfg->channels || !cfg->dies_per_channel)
		return "channels and dies_per_channel must be at least 1";
	if ((u64)cfg->channels * cfg->dies_per_channel > KVSSD_MAX_DIES)
		return "more than 1024 dies";
	if (!kvssd_pow2(cfg->stripe_sectors) ||
	    cfg->stripe_sectors > KVSSD_MAX_STRIPE)
		return "the stripe must be a power of 2 of at most 512 MiB";
	if (!kvssd_pow2(cfg->page_sectors) ||
	    cfg->page_sectors > cfg->stripe_sectors ||
	    cfg->stripe_sectors / cfg->page_sectors > KVSSD_MAX_PAGES)
		return "the page must be a power of 2 from the stripe to 1/1024 of it";
	if (!cfg->read_ns || !cfg->program_ns || !cfg->erase_ns ||
	    cfg->read_ns > KVSSD_MAX_NS || cfg->program_ns > KVSSD_MAX_NS ||
	    cfg->erase_ns > KVSSD_MAX_NS)
		return "read, program and erase times must be 1 ns to 1 s";
	if (cfg->cv_pct > KVSSD_MAX_CV_PCT)
		return "cv_pct must be 0 to 100";
	return NULL;
}

int kvssd_config_check(const struct kvssd_config *cfg)
{
	return kvssd_config_error(cfg) ? -1 : 0;
}

u32 kvssd_nr_dies(const struct kvssd_config *cfg)
{
	if (kvssd_config_check(cfg))
		return 0;
	return cfg->channels * cfg->dies_per_channel;
}

int kvssd_model_init(struct kvssd_model *m, const struct kvssd_config *cfg,
		     struct kvssd_die *dies)
{
	u32 nr = kvssd_nr_dies(cfg);

	if (!nr)
		return -1;
	memset(m, 0, sizeof(*m));
	memset(dies, 0, nr * sizeof(*dies));
	m->cfg = *cfg;
	m->nr_dies = nr;
	m->stripe_shift = fls64(cfg->stripe_sectors) - 1;
	m->page_shift = fls64(cfg->page_sectors) - 1;
	/* xorshift has one fixed point, zero: any seed but that one. */
	m->rng = cfg->seed ? cfg->seed : 0x9e3779b97f4a7c15ULL;
	m->dies = dies;
	return 0;
}

/* xorshift64*: fast, repeatable, good enough for service times. */
static u64 kvssd_rand(struct kvssd_model *m)
{
	u64 x = m->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	m->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/*
 * -ln(x / 2^32) in Q16 for 1 <= x < 2^32: an exponential draw of mean 1
 * when x is uniform. log2 of the mantissa bit by bit (square it, and each
 * time it reaches 2 the next bit is 1), then times ln 2.
 */
static u64 kvssd_neg_ln_q16(u32 x)
{
	int ip = fls64(x) - 1;
	u64 mant = (u64)x << (31 - ip);		/* Q31, in [1, 2) */
	u32 frac = 0;
	u64 log2_q16;
	int i;

	for (i = 0; i < 16; i++) {
		mant = (mant * mant) >> 31;
		frac <<= 1;
		if (mant >= (2ULL << 31)) {
			mant >>= 1;
			frac |= 1;
		}
	}
	log2_q16 = ((u64)ip << 16) | frac;
	/* ln 2 = 45426 / 2^16 */
	return (((32ULL << 16) - log2_q16) * 45426) >> 16;
}

u64 kvssd_service(struct kvssd_model *m, enum kvssd_op op, u32 nr_sectors)
{
	u64 base = op == KVSSD_PROGRAM ? m->cfg.program_ns : m->cfg.read_ns;
	u32 pages = (nr_sectors + m->cfg.page_sectors - 1) >> m->page_shift;
	u64 fixed, spread, e;

	if (!pages)
		pages = 1;
	if (pages > m->cfg.stripe_sectors >> m->page_shift)
		pages = m->cfg.stripe_sectors >> m->page_shift;
	base *= pages;
	if (!m->cfg.cv_pct)
		return base;
	/*
	 * base * (1 - cv) + base * cv * E: the mean stays base, the
	 * standard deviation is cv * base, and no draw is below the fixed
	 * part, as no flash read is faster than its array time.
	 */
	fixed = div64_u64(base * (KVSSD_MAX_CV_PCT - m->cfg.cv_pct),
			  KVSSD_MAX_CV_PCT);
	spread = base - fixed;
	e = kvssd_neg_ln_q16((u32)(kvssd_rand(m) >> 32) | 1);
	return fixed + ((spread * e) >> 16) ? : 1;
}

u64 kvssd_die_submit(struct kvssd_model *m, u32 die, u64 now, u64 service,
		     bool program)
{
	struct kvssd_die *d = &m->dies[die];
	u64 end = (d->busy_until > now ? d->busy_until : now) + service;

	d->busy_until = end;
	d->busy_ns += service;
	d->queued++;
	d->ops++;
	if (program && m->cfg.gc_programs &&
	    ++d->programs >= m->cfg.gc_programs) {
		/* The erase follows the program that filled the block. */
		d->programs = 0;
		d->busy_until += m->cfg.erase_ns;
		d->busy_ns += m->cfg.erase_ns;
		d->erases++;
	}
	return end;
}

u64 kvssd_submit(struct kvssd_model *m, u64 now, enum kvssd_op op,
		 u64 sector, u32 nr_sectors, u32 *die)
{
	u32 d = kvssd_die_of(m, sector);

	if (die)
		*die = d;
	return kvssd_die_submit(m, d, now, kvssd_service(m, op, nr_sectors),
				op == KVSSD_PROGRAM);
}

u64 kvssd_max_iops(const struct kvssd_config *cfg, enum kvssd_op op)
{
	u64 per_op = op == KVSSD_PROGRAM ? cfg->program_ns : cfg->read_ns;
	u32 dies = kvssd_nr_dies(cfg);

	if (!dies)
		return 0;
	if (op == KVSSD_PROGRAM && cfg->gc_programs)
		return div64_u64((u64)dies * NSEC_PER_SEC * cfg->gc_programs,
				 per_op * cfg->gc_programs + cfg->erase_ns);
	return div64_u64((u64)dies * NSEC_PER_SEC, per_op);
}
