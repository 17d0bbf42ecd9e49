/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvbatch.h: tag a KV-cache engine's reads for the kvbatch I/O scheduler.
 * Header-only C99 that needs the C library and kv-ioprio.h (installed
 * beside it), nothing else: no liburing, no libaio, no kernel headers.
 *
 * A tag is a Linux I/O priority (kv-ioprio.h has the layout). It reaches
 * the scheduler on direct I/O only (O_DIRECT): buffered reads lose it.
 *
 *   demand    class RT, hint = batch id: a recall the GPU waits on, served
 *             before the other tiers. RT needs CAP_SYS_NICE or
 *             CAP_SYS_ADMIN: ioprio_set(), io_uring and aio fail with
 *             EPERM without it.
 *   group     class BE, hint = batch id: the reads are one batch (counted,
 *             traced, in the statistics) in the normal tier, with no
 *             precedence over other I/O. No privilege needed.
 *   prefetch  class IDLE, hint = batch id (or 0): served when nothing
 *             else waits.
 *
 * Batch ids are 8..1023: hints 1..7 are SCSI/ATA command duration limits
 * on disks that have them enabled. An id of 0 (demand and prefetch only)
 * leaves the batch to the level and the cgroup.
 *
 * Where the tag goes:
 *
 *   per thread   kvbatch_thread_set(tag), then the thread's reads;
 *                kvbatch_thread_set(saved) with what kvbatch_thread_get()
 *                returned before. Threads it starts meanwhile inherit it.
 *   io_uring     sqe->ioprio = tag;     (KVBATCH_SQE_SET(sqe, tag))
 *   libaio       iocb->aio_reqprio = tag;
 *                iocb->u.c.flags |= KVBATCH_IOCB_FLAG_IOPRIO;
 *                (KVBATCH_LIBAIO_SET(iocb, tag))
 *   raw aio      (struct iocb of <linux/aio_abi.h>)
 *                cb.aio_reqprio = tag;
 *                cb.aio_flags |= KVBATCH_IOCB_FLAG_IOPRIO;
 *
 * Functions return a value >= 0 or -errno, as the kernel does. syscall()
 * is declared with _DEFAULT_SOURCE or _GNU_SOURCE (gnu99 and gnu11 set
 * it; -std=c99 alone does not).
 */
#ifndef _KVBATCH_H
#define _KVBATCH_H

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kv-ioprio.h"

/* Batch ids: the ioprio hints left once command duration limits (1..7). */
#define KVBATCH_ID_MIN		(KV_IOPRIO_HINT_CDL_MAX + 1)
#define KVBATCH_ID_MAX		KV_IOPRIO_HINT_MAX
#define KVBATCH_NR_IDS		(KVBATCH_ID_MAX - KVBATCH_ID_MIN + 1)

/* IOPRIO_WHO_PROCESS of ioprio_set(2): with who 0, the calling thread. */
#define KVBATCH_WHO_PROCESS	1

/* IOCB_FLAG_IOPRIO of <linux/aio_abi.h>: aio_reqprio is valid. */
#define KVBATCH_IOCB_FLAG_IOPRIO	(1 << 1)

enum kvbatch_tier {
	KVBATCH_DEMAND,
	KVBATCH_GROUP,
	KVBATCH_PREFETCH,
};

/*
 * The tag of batch @id in @tier, or -EINVAL: an unknown tier, an id
 * outside 8..1023, or 0 for a group (BE without a hint is ordinary I/O).
 */
static inline int kvbatch_tag(enum kvbatch_tier tier, unsigned int id)
{
	int hint = (int)id;

	if (id && (id < KVBATCH_ID_MIN || id > KVBATCH_ID_MAX))
		return -EINVAL;
	switch (tier) {
	case KVBATCH_DEMAND:
		return KV_IOPRIO(KV_IOPRIO_CLASS_RT, hint, 0);
	case KVBATCH_GROUP:
		return hint ? KV_IOPRIO(KV_IOPRIO_CLASS_BE, hint, 0) : -EINVAL;
	case KVBATCH_PREFETCH:
		return KV_IOPRIO(KV_IOPRIO_CLASS_IDLE, hint, 0);
	}
	return -EINVAL;
}

/*
 * The next batch id from @counter (zero it once), cycling through
 * 8..1023. Safe between threads sharing @counter with GCC or Clang; give
 * each thread its own counter otherwise. An id comes back after 1016
 * others: a batch must complete before then to stay apart.
 */
static inline unsigned int kvbatch_next_id(unsigned int *counter)
{
	unsigned int n;

#if defined(__GNUC__)
	n = __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
#else
	n = (*counter)++;
#endif
	return KVBATCH_ID_MIN + n % KVBATCH_NR_IDS;
}

/* The calling thread's I/O priority, or -errno. */
static inline int kvbatch_thread_get(void)
{
	long r = syscall(SYS_ioprio_get, KVBATCH_WHO_PROCESS, 0);

	return r < 0 ? -errno : (int)r;
}

/*
 * Tag the calling thread's I/O with @tag (other threads keep theirs):
 * 0 or -errno (-EPERM: demand without CAP_SYS_NICE or CAP_SYS_ADMIN;
 * -EINVAL: not a valid I/O priority).
 */
static inline int kvbatch_thread_set(int tag)
{
	if (tag < 0)
		return -EINVAL;
	return syscall(SYS_ioprio_set, KVBATCH_WHO_PROCESS, 0, tag) < 0 ?
	       -errno : 0;
}

/* The tag on one io_uring request (liburing's struct io_uring_sqe). */
#define KVBATCH_SQE_SET(sqe, tag)	((sqe)->ioprio = (tag))

/* The tag on one libaio request (libaio's struct iocb). */
#define KVBATCH_LIBAIO_SET(iocb, tag)				\
	((iocb)->aio_reqprio = (tag),				\
	 (iocb)->u.c.flags |= KVBATCH_IOCB_FLAG_IOPRIO)

#endif /* _KVBATCH_H */
