/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvsim traces: the text format, the built-in seed situations and random
 * traces. A trace is a list of requests for kvsim-core plus the device
 * geometry and tunables it was written for. Batch names are interned: a
 * request's key is the index of its batch name, so the policy core sees
 * one key per name, as it would see one ioprio/cgroup tag per recall.
 *
 * The format (Documentation/kvsim.rst, "Trace format"), one item per line,
 * '#' starts a comment:
 *
 *   title TEXT | note TEXT | dies N | queue-depth N | chunk SECTORS |
 *   set TUNABLE=VALUE |
 *   model read=TIME program=TIME cv=PCT page=SECTORS seed=N
 *   TIME BATCH TIER OP SERVICE|model die=N|sector=N [size=BYTES]
 *
 * A request whose service is "model" takes a draw from the kvssd model
 * the "model" line describes (kvssd/kvssd-model.h), made when the trace
 * is read, in trace order: every scheduler then runs on the same times.
 */
#ifndef _KVSIM_TRACE_H
#define _KVSIM_TRACE_H

#include <stdio.h>

#include "kvsim-core.h"

#define KVSIM_NAME_MAX		32
#define KVSIM_TITLE_MAX		160
#define KVSIM_NOTE_MAX		1024
#define KVSIM_ERR_MAX		256

/* What the tier column of a request line means. */
enum kvsim_class {
	KVSIM_DEMAND,		/* RT: demand to kvbatch, first class to prio */
	KVSIM_HINT,		/* BE with an ioprio hint: demand to kvbatch */
	KVSIM_NORMAL,		/* BE */
	KVSIM_PREFETCH,		/* IDLE */
	KVSIM_WRITE,		/* BE async write: kvbatch's write tier */
	KVSIM_NR_CLASSES
};

extern const char *const kvsim_class_names[KVSIM_NR_CLASSES];

struct kvsim_trace {
	char		name[64];		/* built-in name or file name */
	char		title[KVSIM_TITLE_MAX];
	char		note[KVSIM_NOTE_MAX];

	/* Geometry from the trace; 0 when the trace does not say. */
	u32		dies;
	u32		qdepth;
	u64		chunk;

	/* The "model" line's service time model, when given. */
	bool		model_set;
	struct kvssd_config model;

	/* Tunables named by "set" lines (tun_set[i] when given). */
	unsigned int	tun[KVB_NR_TUNABLES];
	bool		tun_set[KVB_NR_TUNABLES];

	struct kvs_req	*rqs;
	u8		*cls;			/* enum kvsim_class per request */
	u32		*line;			/* source line per request */
	u32		nr, cap;

	char		(*bname)[KVSIM_NAME_MAX];
	u32		nr_batches, bcap;
};

struct kvsim_builtin {
	const char	*name;
	const char	*title;
	const char	*text;
};

extern const struct kvsim_builtin kvsim_builtins[];
extern const unsigned int kvsim_nr_builtins;

void kvsim_trace_init(struct kvsim_trace *t);
void kvsim_trace_free(struct kvsim_trace *t);

/*
 * Parse @text (NUL-terminated) into @t, which must be freshly initialised.
 * @fname names the source in messages. Returns 0, or -1 with "fname:line:
 * reason" in @err.
 */
int kvsim_parse(struct kvsim_trace *t, const char *text, const char *fname,
		char *err, size_t errlen);
/* A built-in by name; -1 if there is none. */
int kvsim_load_builtin(struct kvsim_trace *t, const char *name, char *err,
		       size_t errlen);
/* A file; -1 with a message if unreadable or invalid. */
int kvsim_load_file(struct kvsim_trace *t, const char *path, char *err,
		    size_t errlen);
/* @n requests of recalls, foreign reads, prefetch and writes, from @seed. */
int kvsim_random(struct kvsim_trace *t, u32 n, u64 seed, u32 dies);

/* Write @t back in the text format; kvsim_parse() reads it unchanged. */
void kvsim_write_trace(FILE *f, const struct kvsim_trace *t);

/* "name=value" against kvb_tunables[]: 0, or -1 with a message. */
int kvsim_parse_set(const char *arg, int *tunable, unsigned int *value,
		    char *err, size_t errlen);

/* Durations: a number with ns, us, ms or s (bare numbers are us). */
int kvsim_parse_time(const char *s, u64 *ns);
/* Tunables whose effect the device model has (--set, --list). */
bool kvsim_tunable_modelled(int t);
/* printf into the caller's error buffer, if it gave one. */
void kvsim_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Microseconds, with three decimals only when needed. */
const char *kvsim_fmt_us(char *buf, size_t len, u64 ns);

#endif /* _KVSIM_TRACE_H */
