/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kv-rand.h: the pseudo-random numbers of the userspace tools and tests
 * (kvbench, kvsim's random traces, the unit tests). xorshift64* (Vigna),
 * so that a seed gives the same sequence on every machine. Each caller
 * keeps its own state word, which must not be zero.
 */
#ifndef _KV_RAND_H
#define _KV_RAND_H

#include <stdint.h>

/* The next 64 bits of the sequence in *st. */
static inline uint64_t kv_rand64(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 0x2545f4914f6cdd1dULL;
}

/* 32 bits: the high half, the better one of xorshift64*. */
static inline uint32_t kv_rand32(uint64_t *st)
{
	return (uint32_t)(kv_rand64(st) >> 32);
}

/* Uniform in [lo, hi] (the modulo bias is negligible for these ranges). */
static inline uint32_t kv_rand_in(uint64_t *st, uint32_t lo, uint32_t hi)
{
	return lo + kv_rand32(st) % (hi - lo + 1);
}

/* Uniform in [0, 1), from the top 53 bits. */
static inline double kv_rand_unit(uint64_t *st)
{
	return (double)(kv_rand64(st) >> 11) * (1.0 / 9007199254740992.0);
}

#endif /* _KV_RAND_H */
