/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvssd-model: a flash device with dies, in pure C. The same model serves
 * the kvssd block driver (a deep SSD in a test guest), the simulator kvsim
 * and the unit tests, so that an offline optimum computed by kvsim and a
 * run measured in the guest are of the same device.
 *
 * The device has channels x dies parallel units. The LBA space is striped
 * over the dies in stripes of stripe_sectors: a request (the driver keeps
 * each within one stripe) is one operation on one die. Each die serves its
 * operations one at a time in the order they reached it (a FIFO), so the
 * device, not the host, decides the order of everything it has accepted:
 * work past the knee waits inside it, as on a real SSD whose queues are far
 * deeper than its dies.
 *
 * An operation's service time is its kind's base time (read, program)
 * times the number of flash pages it covers, drawn around that mean with a
 * coefficient of variation cv_pct: base * (1 - cv) + base * cv * E, with E
 * exponential of mean 1, so the mean stays the base and the standard
 * deviation is cv times it. Every gc_programs programs a die erases a
 * block (erase_ns): garbage collection takes the die away from the
 * operations queued behind it.
 *
 * A die is modelled by the time it is busy until: an operation submitted
 * at @now starts at max(now, busy_until) and ends its service time later.
 * That is a FIFO per die without keeping the FIFO, so submission is O(1)
 * and the completion time is known when the operation arrives (the driver
 * arms its timer then). Time is integer nanoseconds; the model has no
 * clock of its own and no locking: the caller serialises submissions.
 * Draws come from the model's own generator, seeded by the caller, so a
 * run is repeatable.
 */
#ifndef _KVSSD_MODEL_H
#define _KVSSD_MODEL_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include "kv-user.h"
#endif

#define KVSSD_MAX_DIES		1024
#define KVSSD_MAX_CV_PCT	100

enum kvssd_op {
	KVSSD_READ,
	KVSSD_PROGRAM,
	KVSSD_NR_OPS
};

struct kvssd_config {
	u32	channels;		/* 1.. */
	u32	dies_per_channel;	/* 1..; channels x dies <= MAX_DIES */
	u32	stripe_sectors;		/* LBA stripe per die, power of 2 */
	u32	page_sectors;		/* flash page, power of 2, <= stripe */
	u64	read_ns;		/* per page, >= 1 */
	u64	program_ns;		/* per page, >= 1 */
	u64	erase_ns;		/* one block erase (GC), >= 1 */
	u32	cv_pct;			/* 0..100: stdev / mean of a service */
	u32	gc_programs;		/* programs per die between erases, 0: none */
	u64	seed;			/* generator seed */
};

struct kvssd_die {
	u64	busy_until;		/* end of the last operation accepted */
	u64	busy_ns;		/* total service and erase time */
	u32	queued;			/* accepted, not yet completed */
	u32	programs;		/* since the last erase */
	u64	ops;
	u64	erases;
};

struct kvssd_model {
	struct kvssd_config cfg;
	u32		nr_dies;
	u32		stripe_shift;
	u32		page_shift;
	u64		rng;
	struct kvssd_die *dies;		/* nr_dies, owned by the caller */
};

/*
 * Check @cfg: 0, or -1 naming nothing (the caller reports which field from
 * its own parameters; kvssd_config_error() gives a reason).
 */
int kvssd_config_check(const struct kvssd_config *cfg);
const char *kvssd_config_error(const struct kvssd_config *cfg);

/* Number of dies @cfg describes (0 if it is invalid). */
u32 kvssd_nr_dies(const struct kvssd_config *cfg);

/*
 * Set up @m over @dies (kvssd_nr_dies(@cfg) entries, zeroed here). Returns
 * 0, or -1 if @cfg is invalid.
 */
int kvssd_model_init(struct kvssd_model *m, const struct kvssd_config *cfg,
		     struct kvssd_die *dies);

/* The die that serves @sector. */
static inline u32 kvssd_die_of(const struct kvssd_model *m, u64 sector)
{
	return (u32)((sector >> m->stripe_shift) % m->nr_dies);
}

/* A service time for @op over @nr_sectors, drawn from the model. */
u64 kvssd_service(struct kvssd_model *m, enum kvssd_op op, u32 nr_sectors);

/*
 * Accept an operation of @service ns on @die at @now: it waits behind
 * what the die already holds. Returns its completion time. A program
 * counts towards the die's next erase, which follows it on the die.
 * The caller reports the completion with kvssd_die_done().
 */
u64 kvssd_die_submit(struct kvssd_model *m, u32 die, u64 now, u64 service,
		     bool program);

/* kvssd_die_submit() of a request: its die, a drawn service time. */
u64 kvssd_submit(struct kvssd_model *m, u64 now, enum kvssd_op op,
		 u64 sector, u32 nr_sectors, u32 *die);

static inline void kvssd_die_done(struct kvssd_model *m, u32 die)
{
	m->dies[die].queued--;
}

/* True if an operation submitted to @die at @now would have to wait. */
static inline bool kvssd_die_busy(const struct kvssd_model *m, u32 die,
				  u64 now)
{
	return m->dies[die].busy_until > now;
}

/*
 * The device's throughput bound for @op in operations per second: every
 * die busy, each operation one page of mean service time, erases included.
 */
u64 kvssd_max_iops(const struct kvssd_config *cfg, enum kvssd_op op);

#endif /* _KVSSD_MODEL_H */
