/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kv-ioprio.h: kvbatch's tag, the one definition shared by the policy
 * core (kv-policy.c, through kv-defs.h), the userspace tools (kvbench,
 * kvsim, the tagging example tools/examples/recall.c) and the unit tests.
 * A request's tag is its Linux I/O priority, whose layout is ABI: class in
 * bits 13..15, hint in bits 3..12, level in bits 0..2. The policy core
 * reads the tier from it (kvp_tier_of(): RT is demand, IDLE prefetch, the
 * rest normal; a hint makes a batch of its own, demand only with the
 * hint_demand tunable) and, with batch_key ioprio, the batch. It
 * depends on nothing, so that an application can copy it.
 *
 * Constant expressions, so that tables can be built from them (the uapi
 * header's IOPRIO_PRIO_VALUE_HINT() is a function, and absent from older
 * distributions' headers).
 */
#ifndef _KV_IOPRIO_H
#define _KV_IOPRIO_H

#define KV_IOPRIO_CLASS_SHIFT	13
#define KV_IOPRIO_HINT_SHIFT	3
#define KV_IOPRIO_CLASS_MASK	0x7
#define KV_IOPRIO_HINT_MASK	0x3ff

#define KV_IOPRIO_CLASS_NONE	0
#define KV_IOPRIO_CLASS_RT	1
#define KV_IOPRIO_CLASS_BE	2
#define KV_IOPRIO_CLASS_IDLE	3

/* The largest hint: each recall batch tagged with its own of 1..1023. */
#define KV_IOPRIO_HINT_MAX	KV_IOPRIO_HINT_MASK
/*
 * SCSI and ATA disks read hints 1..7 as command duration limits: a batch
 * id among them would be a time limit there. Batch ids start above.
 */
#define KV_IOPRIO_HINT_CDL_MAX	7

#define KV_IOPRIO(class, hint, level)				\
	(((class) << KV_IOPRIO_CLASS_SHIFT) |			\
	 ((hint) << KV_IOPRIO_HINT_SHIFT) | (level))
#define KV_IOPRIO_CLASS(p)	\
	(((p) >> KV_IOPRIO_CLASS_SHIFT) & KV_IOPRIO_CLASS_MASK)
#define KV_IOPRIO_HINT(p)	(((p) >> KV_IOPRIO_HINT_SHIFT) & KV_IOPRIO_HINT_MASK)

#endif /* _KV_IOPRIO_H */
