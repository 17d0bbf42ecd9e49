// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier: the tiered KV-cache model of kvbench --trace (see kvtier.h).
 *
 * Every block id ever named has a record, found through a hash table,
 * and sits on up to two lists: the memory LRU (oldest first) and the SSD
 * log (oldest write first). A record on neither list is in no tier; it
 * is kept, so memory follows the number of distinct ids, not the number
 * of accesses.
 */
#include <stdlib.h>

#include "kv-user.h"
#include "kvtier.h"

const char *const kvt_class_names[KVT_NR_CLASSES] = {
	"hit", "recall", "new",
};

struct kvt_block {
	uint64_t		id;
	uint64_t		slot;	/* valid while on the SSD log */
	struct kvt_block	*hnext;
	struct list_head	mem;	/* linked: in memory */
	struct list_head	ssd;	/* linked: on the SSD */
};

struct kvt_tier {
	uint64_t		mem_cap, mem_used;
	uint64_t		ssd_slots, ssd_used;
	struct list_head	lru;	/* memory, least recently used first */
	struct list_head	log;	/* SSD, oldest write first */
	struct kvt_block	**hash;
	unsigned int		hash_bits;
	uint64_t		nr_blocks;
	struct kvt_stats	st;
};

static inline bool linked(const struct list_head *n)
{
	return !list_empty(n);
}

static size_t hash_of(uint64_t id, unsigned int bits)
{
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
}

struct kvt_tier *kvt_tier_new(uint64_t mem_blocks, uint64_t ssd_slots)
{
	struct kvt_tier *t;

	if (!ssd_slots)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->mem_cap = mem_blocks;
	t->ssd_slots = ssd_slots;
	INIT_LIST_HEAD(&t->lru);
	INIT_LIST_HEAD(&t->log);
	t->hash_bits = 10;
	t->hash = calloc((size_t)1 << t->hash_bits, sizeof(*t->hash));
	if (!t->hash) {
		free(t);
		return NULL;
	}
	return t;
}

void kvt_tier_free(struct kvt_tier *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < (size_t)1 << t->hash_bits; i++) {
		struct kvt_block *b = t->hash[i], *next;

		for (; b; b = next) {
			next = b->hnext;
			free(b);
		}
	}
	free(t->hash);
	free(t);
}

static struct kvt_block *lookup(const struct kvt_tier *t, uint64_t id)
{
	struct kvt_block *b = t->hash[hash_of(id, t->hash_bits)];

	while (b && b->id != id)
		b = b->hnext;
	return b;
}

/* Double the table when it holds more records than buckets. */
static int grow(struct kvt_tier *t)
{
	unsigned int bits = t->hash_bits + 1;
	struct kvt_block **h = calloc((size_t)1 << bits, sizeof(*h));
	size_t i;

	if (!h)
		return -1;
	for (i = 0; i < (size_t)1 << t->hash_bits; i++) {
		struct kvt_block *b = t->hash[i], *next;

		for (; b; b = next) {
			size_t k = hash_of(b->id, bits);

			next = b->hnext;
			b->hnext = h[k];
			h[k] = b;
		}
	}
	free(t->hash);
	t->hash = h;
	t->hash_bits = bits;
	return 0;
}

static struct kvt_block *get_block(struct kvt_tier *t, uint64_t id)
{
	struct kvt_block *b = lookup(t, id);
	size_t k;

	if (b)
		return b;
	if (t->nr_blocks >= (uint64_t)1 << t->hash_bits && grow(t))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->id = id;
	INIT_LIST_HEAD(&b->mem);
	INIT_LIST_HEAD(&b->ssd);
	k = hash_of(id, t->hash_bits);
	b->hnext = t->hash[k];
	t->hash[k] = b;
	t->nr_blocks++;
	return b;
}

/*
 * Make @b the most recently used block in memory, evicting the least
 * recently used one if memory is over capacity. With no memory tier the
 * block leaves again at once.
 */
static void mem_insert(struct kvt_tier *t, struct kvt_block *b)
{
	if (linked(&b->mem)) {
		list_del_init(&b->mem);
		list_add_tail(&b->mem, &t->lru);
		return;
	}
	list_add_tail(&b->mem, &t->lru);
	if (++t->mem_used > t->mem_cap) {
		struct kvt_block *old = list_first_entry(&t->lru,
							 struct kvt_block, mem);

		list_del_init(&old->mem);
		t->mem_used--;
		t->st.mem_evictions++;
	}
}

/*
 * The next slot of the log: a never used one while there are any, then
 * the slot of the oldest write, whose block leaves the SSD.
 */
static void ssd_write(struct kvt_tier *t, struct kvt_block *b)
{
	if (t->ssd_used < t->ssd_slots) {
		b->slot = t->ssd_used++;
	} else {
		struct kvt_block *old = list_first_entry(&t->log,
							 struct kvt_block, ssd);

		list_del_init(&old->ssd);
		b->slot = old->slot;
		t->st.ssd_evictions++;
	}
	list_add_tail(&b->ssd, &t->log);
}

int kvt_tier_access(struct kvt_tier *t, uint64_t id, uint64_t *slot)
{
	struct kvt_block *b = get_block(t, id);
	enum kvt_class c;

	if (!b)
		return -1;
	if (linked(&b->mem)) {
		c = KVT_HIT;
	} else if (linked(&b->ssd)) {
		c = KVT_RECALL;
	} else {
		c = KVT_NEW;
		ssd_write(t, b);
	}
	if (c != KVT_HIT)
		*slot = b->slot;
	mem_insert(t, b);
	t->st.blocks[c]++;
	return c;
}

bool kvt_tier_in_mem(const struct kvt_tier *t, uint64_t id)
{
	const struct kvt_block *b = lookup(t, id);

	return b && linked(&b->mem);
}

bool kvt_tier_on_ssd(const struct kvt_tier *t, uint64_t id, uint64_t *slot)
{
	const struct kvt_block *b = lookup(t, id);

	if (!b || !linked(&b->ssd))
		return false;
	if (slot)
		*slot = b->slot;
	return true;
}

const struct kvt_stats *kvt_tier_stats(const struct kvt_tier *t)
{
	return &t->st;
}
