/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtier: the tiered KV-cache model behind kvbench --trace. Pure
 * userspace bookkeeping, no I/O, so that the unit tests can drive it.
 *
 * Two tiers of fixed-size KV blocks, each named by a 64-bit block id (a
 * trace's hash_ids):
 *
 *  - host memory: at most @mem_blocks blocks, least recently used first
 *    out. Eviction from memory costs no I/O: every block in memory was
 *    either read from the SSD or written to it when it was new.
 *  - the SSD: @ssd_slots slots, written in order like a log. A new block
 *    takes the next slot; once every slot has been used, the next new
 *    block takes the slot of the block written longest ago, which leaves
 *    the SSD (if it is not in memory either, it is gone, and it is new
 *    again the next time a request names it). A block keeps its slot for
 *    as long as it is on the SSD.
 *
 * kvt_tier_access() classifies one block of a request and updates both
 * tiers, in the order the request names its blocks:
 *
 *   HIT     in memory: no I/O, the block becomes the most recently used;
 *   RECALL  on the SSD, not in memory: read from its slot, then inserted
 *           into memory (possibly evicting);
 *   NEW     in neither: computed by the prefill, then written to a newly
 *           allocated slot and inserted into memory.
 */
#ifndef _KVTIER_H
#define _KVTIER_H

#include <stdbool.h>
#include <stdint.h>

enum kvt_class {
	KVT_HIT,
	KVT_RECALL,
	KVT_NEW,
	KVT_NR_CLASSES
};

extern const char *const kvt_class_names[KVT_NR_CLASSES];

struct kvt_stats {
	uint64_t	blocks[KVT_NR_CLASSES];	/* accesses per class */
	uint64_t	mem_evictions;	/* blocks pushed out of memory */
	uint64_t	ssd_evictions;	/* slots taken from an older block */
};

struct kvt_tier;

/*
 * NULL when out of memory or with no SSD slot. @mem_blocks may be 0 (no
 * memory tier: every block is read again each time it is named).
 */
struct kvt_tier *kvt_tier_new(uint64_t mem_blocks, uint64_t ssd_slots);
void kvt_tier_free(struct kvt_tier *t);

/*
 * One block of a request: its class (enum kvt_class), and in *slot the
 * SSD slot to read (RECALL) or write (NEW). -1 when out of memory.
 */
int kvt_tier_access(struct kvt_tier *t, uint64_t id, uint64_t *slot);

/* Where a block is now, for tests and reports. */
bool kvt_tier_in_mem(const struct kvt_tier *t, uint64_t id);
bool kvt_tier_on_ssd(const struct kvt_tier *t, uint64_t id, uint64_t *slot);

const struct kvt_stats *kvt_tier_stats(const struct kvt_tier *t);

#endif /* _KVTIER_H */
