/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kv-user.h: the few kernel types and list helpers the kvbatch policy core
 * (kv-policy.c) uses, for building it in userspace (unit tests, kvsim).
 * Written for this project; only the names follow the kernel's so the core
 * compiles unchanged.
 */
#ifndef _KV_USER_H
#define _KV_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

/* Single-threaded here: a plain access through a volatile lvalue. */
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile __typeof__(x) *)&(x) = (v))

static inline u64 div64_u64(u64 dividend, u64 divisor)
{
	return dividend / divisor;
}

/* a * b / c without overflowing the product. */
static inline u64 mul_u64_u64_div_u64(u64 a, u64 b, u64 c)
{
	return (u64)((unsigned __int128)a * b / c);
}

/* The integer square root, rounded down. */
static inline u32 int_sqrt64(u64 x)
{
	u64 r = 0, bit = 1ULL << 62;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return (u32)r;
}

#define U32_MAX		((u32)~0U)
#define BIT_ULL(n)	(1ULL << (n))
#define min(a, b)	((a) < (b) ? (a) : (b))
#define max(a, b)	((a) > (b) ? (a) : (b))
#define min_t(t, a, b)	min((t)(a), (t)(b))
#define max_t(t, a, b)	max((t)(a), (t)(b))
#define clamp_t(t, v, lo, hi)	min_t(t, max_t(t, v, lo), hi)

/* The kernel's fls64(): the 1-based index of the highest set bit, or 0. */
static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* A circular doubly-linked list with a sentinel head. */
struct list_head {
	struct list_head *next, *prev;
};

static inline void INIT_LIST_HEAD(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

static inline void list_link(struct list_head *n, struct list_head *prev,
			     struct list_head *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

static inline void list_add(struct list_head *n, struct list_head *h)
{
	list_link(n, h, h->next);
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	list_link(n, h->prev, h);
}

static inline void list_del_init(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	INIT_LIST_HEAD(n);
}

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(h, type, member) list_entry((h)->next, type, member)
#define list_first_entry_or_null(h, type, member) \
	(list_empty(h) ? NULL : list_first_entry(h, type, member))
#define list_for_each_entry(pos, h, member)				\
	for (pos = list_entry((h)->next, __typeof__(*pos), member);	\
	     &pos->member != (h);					\
	     pos = list_entry(pos->member.next, __typeof__(*pos), member))

#endif /* _KV_USER_H */
