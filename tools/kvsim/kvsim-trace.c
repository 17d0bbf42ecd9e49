// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim traces: see kvsim-trace.h. The built-in situations are kept
 * as trace text and go through the same parser as files, so what --list
 * and --dump-trace show is exactly what runs.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "kv-rand.h"
#include "kvsim-trace.h"

const char *const kvsim_class_names[KVSIM_NR_CLASSES] = {
	[KVSIM_DEMAND]		= "demand",
	[KVSIM_HINT]		= "hint",
	[KVSIM_NORMAL]		= "normal",
	[KVSIM_PREFETCH]	= "prefetch",
	[KVSIM_WRITE]		= "write",
};

/* The I/O priority a class of request carries: the tags kvbatch reads. */
static const u16 kvsim_class_ioprio[KVSIM_NR_CLASSES] = {
	[KVSIM_DEMAND]		= KV_IOPRIO(KV_IOPRIO_CLASS_RT, 0, 4),
	[KVSIM_HINT]		= KV_IOPRIO(KV_IOPRIO_CLASS_BE, 1, 4),
	[KVSIM_NORMAL]		= KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 4),
	[KVSIM_PREFETCH]	= KV_IOPRIO(KV_IOPRIO_CLASS_IDLE, 0, 7),
	[KVSIM_WRITE]		= KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 4),
};

/*
 * The built-in situations, named by what they show (tail, prefetch,
 * writes): three dies, a few reads per request, built by hand. Service
 * times are round so that the timeline's ticks are few and readable.
 */
static const char kvsim_builtin_tail[] =
"title Tail blocking from interleaved reads\n"
"note Six foreign reads, two per die, are queued first. Recall A (RT, one\n"
"note read per die) and recall B (BE with an ioprio hint, two reads) follow,\n"
"note then one more foreign read. FIFO serves them in arrival order, so every\n"
"note foreign read sits ahead of both tails; kvbatch serves the smaller\n"
"note recall, B, first.\n"
"dies 3\n"
"queue-depth 3\n"
"set hint_demand=1\n"
"# time  batch    tier    op  service  target\n"
"0us     foreign  normal  R   100us    die=0\n"
"0us     foreign  normal  R   100us    die=1\n"
"0us     foreign  normal  R   100us    die=2\n"
"0us     foreign  normal  R   100us    die=0\n"
"0us     foreign  normal  R   100us    die=1\n"
"0us     foreign  normal  R   100us    die=2\n"
"10us    A        demand  R   100us    die=0\n"
"10us    A        demand  R   100us    die=1\n"
"10us    A        demand  R   100us    die=2\n"
"20us    B        hint    R   100us    die=0\n"
"20us    B        hint    R   100us    die=2\n"
"30us    foreign  normal  R   100us    die=1\n";

static const char kvsim_builtin_prefetch[] =
"title Demand vs prefetch\n"
"note Nine speculative prefetch reads (IDLE), three per die, are queued\n"
"note when a decode-critical recall of three reads arrives. FIFO makes the\n"
"note recall wait for the prefetch ahead of it; a scheduler that knows the\n"
"note tiers serves the recall first and the prefetch after it.\n"
"dies 3\n"
"queue-depth 3\n"
"set hint_demand=1\n"
"# time  batch     tier      op  service  target\n"
"0us     prefetch  prefetch  R   100us    die=0\n"
"0us     prefetch  prefetch  R   100us    die=1\n"
"0us     prefetch  prefetch  R   100us    die=2\n"
"0us     prefetch  prefetch  R   100us    die=0\n"
"0us     prefetch  prefetch  R   100us    die=1\n"
"0us     prefetch  prefetch  R   100us    die=2\n"
"0us     prefetch  prefetch  R   100us    die=0\n"
"0us     prefetch  prefetch  R   100us    die=1\n"
"0us     prefetch  prefetch  R   100us    die=2\n"
"5us     recall    hint      R   100us    die=0\n"
"5us     recall    hint      R   100us    die=1\n"
"5us     recall    hint      R   100us    die=2\n";

static const char kvsim_builtin_writes[] =
"title Write (GC) timing during a decode-critical recall\n"
"note Three 300 us flash programs (garbage collection, or KV offload), one\n"
"note per die, are queued together with a recall of six 100 us reads, two\n"
"note per die. FIFO starts the programs first and the recall waits 300 us\n"
"note on every die; kvbatch holds the writes until the recall is done.\n"
"dies 3\n"
"queue-depth 4\n"
"chunk 1024\n"
"set hint_demand=1\n"
"# time  batch   tier   op  service  target\n"
"0us     gc      write  W   300us    sector=64\n"
"0us     gc      write  W   300us    sector=1088\n"
"0us     gc      write  W   300us    sector=2112\n"
"0us     recall  hint   R   100us    die=0\n"
"0us     recall  hint   R   100us    die=1\n"
"0us     recall  hint   R   100us    die=2\n"
"0us     recall  hint   R   100us    die=0\n"
"0us     recall  hint   R   100us    die=1\n"
"0us     recall  hint   R   100us    die=2\n";

const struct kvsim_builtin kvsim_builtins[] = {
	{ "tail", "Tail blocking from interleaved reads",
	  kvsim_builtin_tail },
	{ "prefetch", "Demand vs prefetch", kvsim_builtin_prefetch },
	{ "writes", "Write (GC) timing during a decode-critical recall",
	  kvsim_builtin_writes },
};

const unsigned int kvsim_nr_builtins =
	sizeof(kvsim_builtins) / sizeof(kvsim_builtins[0]);

/* Tunables whose effect the device model does not have. */
bool kvsim_tunable_modelled(int t)
{
	return t != KVB_FRONT_MERGES && t != KVB_ASYNC_DEPTH &&
	       t != KVB_BATCH_KEY;
}

void kvsim_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

void kvsim_trace_init(struct kvsim_trace *t)
{
	memset(t, 0, sizeof(*t));
}

void kvsim_trace_free(struct kvsim_trace *t)
{
	free(t->rqs);
	free(t->cls);
	free(t->line);
	free(t->bname);
	kvsim_trace_init(t);
}

/* ---- numbers ---------------------------------------------------------- */

static int kvsim_parse_u64(const char *s, u64 *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || *end ? -1 : 0;
}

int kvsim_parse_time(const char *s, u64 *ns)
{
	u64 whole = 0, frac = 0, fdiv = 1, mul;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (~0ULL - 9) / 10)
			return -1;
		whole = whole * 10 + (u64)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++) {
			/* Beyond nanoseconds the digits do not matter. */
			if (fdiv < 1000000000ULL) {
				frac = frac * 10 + (u64)(*p - '0');
				fdiv *= 10;
			}
		}
	}
	if (!strcmp(p, "ns"))
		mul = 1;
	else if (!strcmp(p, "us") || !*p)
		mul = 1000;
	else if (!strcmp(p, "ms"))
		mul = 1000000;
	else if (!strcmp(p, "s"))
		mul = 1000000000;
	else
		return -1;
	/* About 584 years of nanoseconds fit: refuse more. */
	if (whole > ~0ULL / mul / 2)
		return -1;
	*ns = whole * mul + frac * mul / fdiv;
	return 0;
}

const char *kvsim_fmt_us(char *buf, size_t len, u64 ns)
{
	if (ns % 1000)
		snprintf(buf, len, "%llu.%03llu", (unsigned long long)(ns / 1000),
			 (unsigned long long)(ns % 1000));
	else
		snprintf(buf, len, "%llu", (unsigned long long)(ns / 1000));
	return buf;
}

/* Bytes: a number with an optional k, m or g (binary) suffix. */
static int kvsim_parse_size(const char *s, u64 *bytes)
{
	char num[32];
	size_t n = strlen(s);
	u64 mul = 1, v;

	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	switch (tolower((unsigned char)num[n - 1])) {
	case 'k':
		mul = 1ULL << 10;
		break;
	case 'm':
		mul = 1ULL << 20;
		break;
	case 'g':
		mul = 1ULL << 30;
		break;
	}
	if (mul != 1)
		num[n - 1] = '\0';
	if (kvsim_parse_u64(num, &v) || v > (1ULL << 40) / mul)
		return -1;
	*bytes = v * mul;
	return 0;
}

int kvsim_parse_set(const char *arg, int *tunable, unsigned int *value,
		    char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	u64 v;
	int i;

	if (!eq) {
		kvsim_err(err, errlen, "'%s': expected NAME=VALUE", arg);
		return -1;
	}
	for (i = 0; i < KVB_NR_TUNABLES; i++)
		if (strlen(kvb_tunables[i].name) == (size_t)(eq - arg) &&
		    !strncmp(kvb_tunables[i].name, arg, eq - arg))
			break;
	if (i == KVB_NR_TUNABLES) {
		kvsim_err(err, errlen, "'%.*s': no such tunable (kvsim --list)",
			  (int)(eq - arg), arg);
		return -1;
	}
	if (!kvsim_tunable_modelled(i)) {
		kvsim_err(err, errlen, "'%s': not modelled by kvsim",
			  kvb_tunables[i].name);
		return -1;
	}
	if (kvsim_parse_u64(eq + 1, &v) || v < kvb_tunables[i].min ||
	    v > kvb_tunables[i].max) {
		kvsim_err(err, errlen, "'%s': %s takes %u..%u", arg,
			  kvb_tunables[i].name, kvb_tunables[i].min,
			  kvb_tunables[i].max);
		return -1;
	}
	*tunable = i;
	*value = (unsigned int)v;
	return 0;
}

/* ---- building a trace ------------------------------------------------- */

static bool kvsim_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= KVSIM_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.:+-", *s))
			return false;
	return true;
}

/* The key of batch @name, added if new; -1 on allocation failure. */
static int kvsim_intern(struct kvsim_trace *t, const char *name)
{
	u32 i;

	for (i = 0; i < t->nr_batches; i++)
		if (!strcmp(t->bname[i], name))
			return (int)i;
	if (t->nr_batches == t->bcap) {
		u32 cap = t->bcap ? 2 * t->bcap : 16;
		void *p = realloc(t->bname, cap * sizeof(*t->bname));

		if (!p)
			return -1;
		t->bname = p;
		t->bcap = cap;
	}
	snprintf(t->bname[t->nr_batches], KVSIM_NAME_MAX, "%s", name);
	return (int)t->nr_batches++;
}

static struct kvs_req *kvsim_add(struct kvsim_trace *t, u32 line)
{
	if (t->nr == t->cap) {
		u32 cap = t->cap ? 2 * t->cap : 64;
		struct kvs_req *rqs = realloc(t->rqs, cap * sizeof(*rqs));
		u8 *cls;
		u32 *ln;

		if (!rqs)
			return NULL;
		t->rqs = rqs;
		cls = realloc(t->cls, cap * sizeof(*cls));
		if (!cls)
			return NULL;
		t->cls = cls;
		ln = realloc(t->line, cap * sizeof(*ln));
		if (!ln)
			return NULL;
		t->line = ln;
		t->cap = cap;
	}
	t->line[t->nr] = line;
	memset(&t->rqs[t->nr], 0, sizeof(t->rqs[0]));
	return &t->rqs[t->nr++];
}

/* Fill @rq from its class and operation. */
static void kvsim_set_kind(struct kvs_req *rq, enum kvsim_class c,
			   bool write, bool sync)
{
	rq->ioprio = kvsim_class_ioprio[c];
	rq->write = write;
	rq->sync = sync;
}

/* ---- the parser ------------------------------------------------------- */

#define KVSIM_MAX_TOKENS	8

static void kvsim_append(char *dst, size_t len, const char *s)
{
	size_t n = strlen(dst);

	if (n && n + 1 < len)
		dst[n++] = ' ';
	snprintf(dst + n, len - n, "%s", s);
}

/* A request line: TIME BATCH TIER OP SERVICE TARGET [size=BYTES]. */
static int kvsim_parse_request(struct kvsim_trace *t, char **tok, int n,
			       u32 line, char *msg, size_t len)
{
	struct kvs_req *rq;
	u64 arrival, service, v, bytes = 4096;
	int c, key, i;
	bool write, sync;

	if (n < 6 || n > 7) {
		kvsim_err(msg, len, "expected TIME BATCH TIER OP SERVICE "
			  "die=N|sector=N [size=BYTES], got %d fields", n);
		return -1;
	}
	if (kvsim_parse_time(tok[0], &arrival)) {
		kvsim_err(msg, len, "bad time '%s' (e.g. 10us, 1.5ms)", tok[0]);
		return -1;
	}
	if (!kvsim_name_ok(tok[1])) {
		kvsim_err(msg, len, "bad batch name '%s' (1..%d of A-Z a-z 0-9 "
			  "_ . : + -)", tok[1], KVSIM_NAME_MAX - 1);
		return -1;
	}
	for (c = 0; c < KVSIM_NR_CLASSES; c++)
		if (!strcmp(tok[2], kvsim_class_names[c]))
			break;
	if (c == KVSIM_NR_CLASSES) {
		kvsim_err(msg, len, "bad tier '%s' (demand, hint, normal, "
			  "prefetch, write)", tok[2]);
		return -1;
	}
	if (!strcmp(tok[3], "R")) {
		write = false;
		sync = true;
	} else if (!strcmp(tok[3], "W")) {
		write = true;
		sync = false;
	} else if (!strcmp(tok[3], "WS")) {
		write = true;
		sync = true;
	} else {
		kvsim_err(msg, len, "bad op '%s' (R, W or WS)", tok[3]);
		return -1;
	}
	if (c == KVSIM_WRITE && (!write || sync)) {
		kvsim_err(msg, len, "tier write is for deferrable writes: op W");
		return -1;
	}
	/* 0: drawn from the model once the whole trace is read. */
	service = 0;
	if (strcmp(tok[4], "model") &&
	    (kvsim_parse_time(tok[4], &service) || !service)) {
		kvsim_err(msg, len, "bad service time '%s' (> 0, e.g. 100us, or model)",
			  tok[4]);
		return -1;
	}
	key = kvsim_intern(t, tok[1]);
	rq = key < 0 ? NULL : kvsim_add(t, line);
	if (!rq) {
		kvsim_err(msg, len, "out of memory");
		return -1;
	}
	rq->arrival = arrival;
	rq->key = (u64)key;
	rq->service = service;
	rq->die = -1;
	t->cls[t->nr - 1] = (u8)c;
	kvsim_set_kind(rq, c, write, sync);

	for (i = 5; i < n; i++) {
		if (!strncmp(tok[i], "die=", 4) && i == 5) {
			if (kvsim_parse_u64(tok[i] + 4, &v) || v >= KVS_MAX_DIES)
				goto bad_target;
			rq->die = (int)v;
		} else if (!strncmp(tok[i], "sector=", 7) && i == 5) {
			if (kvsim_parse_u64(tok[i] + 7, &v))
				goto bad_target;
			rq->sector = v;
		} else if (!strncmp(tok[i], "size=", 5) && i == 6) {
			if (kvsim_parse_size(tok[i] + 5, &bytes) || !bytes) {
				kvsim_err(msg, len, "bad size '%s'", tok[i]);
				goto undo;
			}
		} else {
			goto bad_target;
		}
	}
	rq->nr_sectors = (u32)((bytes + 511) / 512);
	/* Reads on a given die still need a sector for write bursts. */
	if (rq->die >= 0)
		rq->sector = (u64)rq->die * 1024;
	return 0;

bad_target:
	kvsim_err(msg, len, "bad field '%s' (die=0..%d or sector=N, then "
		  "optionally size=BYTES)", tok[i], KVS_MAX_DIES - 1);
undo:
	t->nr--;
	return -1;
}

/* The model's largest stripe (kvssd-model.c), in sectors. */
#define KVSIM_MODEL_MAX_STRIPE	0x100000
/* A flash page of up to kvssd's largest stripe, 4 MiB. */
#define KVSIM_MODEL_MAX_PAGE	8192
#define KVSIM_MODEL_KEYS	5

/*
 * "model read=TIME program=TIME cv=PCT page=SECTORS seed=N": each field
 * once, none left out, so that the line alone says where the times came
 * from. The values are those kvssd's model takes, its times already
 * multiplied by the driver's time_scale.
 */
static int kvsim_parse_model(struct kvsim_trace *t, char **tok, int n,
			     char *msg, size_t len)
{
	static const char *const keys[KVSIM_MODEL_KEYS] = {
		"read", "program", "cv", "page", "seed",
	};
	struct kvssd_config *m = &t->model;
	u64 v[KVSIM_MODEL_KEYS];
	unsigned int seen = 0, k;
	int i;

	if (t->model_set) {
		kvsim_err(msg, len, "model given twice");
		return -1;
	}
	for (i = 1; i < n; i++) {
		const char *eq = strchr(tok[i], '=');

		for (k = 0; eq && k < KVSIM_MODEL_KEYS; k++)
			if (strlen(keys[k]) == (size_t)(eq - tok[i]) &&
			    !strncmp(keys[k], tok[i], eq - tok[i]))
				break;
		if (!eq || k == KVSIM_MODEL_KEYS || (seen & (1U << k)))
			goto usage;
		seen |= 1U << k;
		if (k < 2 ? kvsim_parse_time(eq + 1, &v[k]) :
		    kvsim_parse_u64(eq + 1, &v[k])) {
			kvsim_err(msg, len, "model: %s takes %s: '%s'", keys[k],
				  k < 2 ? "a time" : "a number", eq + 1);
			return -1;
		}
	}
	if (seen != (1U << KVSIM_MODEL_KEYS) - 1)
		goto usage;
	if (!v[0] || !v[1] || v[0] > NSEC_PER_SEC || v[1] > NSEC_PER_SEC) {
		kvsim_err(msg, len, "model: read and program take 1ns..1s");
		return -1;
	}
	if (v[2] > KVSSD_MAX_CV_PCT) {
		kvsim_err(msg, len, "model: cv takes 0..%d (percent)",
			  KVSSD_MAX_CV_PCT);
		return -1;
	}
	if (!v[3] || v[3] > KVSIM_MODEL_MAX_PAGE || (v[3] & (v[3] - 1))) {
		kvsim_err(msg, len, "model: page takes a power of 2, 1..%d sectors",
			  KVSIM_MODEL_MAX_PAGE);
		return -1;
	}
	memset(m, 0, sizeof(*m));
	m->channels = 1;
	m->dies_per_channel = 1;
	m->page_sectors = (u32)v[3];
	/* Up to 1024 pages to a request, as the model allows. */
	m->stripe_sectors = v[3] << 10 < KVSIM_MODEL_MAX_STRIPE ?
			    (u32)(v[3] << 10) : KVSIM_MODEL_MAX_STRIPE;
	m->read_ns = v[0];
	m->program_ns = v[1];
	m->erase_ns = 1;		/* no garbage collection in kvsim */
	m->cv_pct = (u32)v[2];
	m->seed = v[4];
	t->model_set = true;
	return 0;
usage:
	kvsim_err(msg, len,
		  "model takes read=TIME program=TIME cv=PCT page=SECTORS seed=N, each once");
	return -1;
}

/*
 * Draw the service times of the requests that said "model", in trace
 * order, as kvssd's model draws them: a read or program of its size.
 */
static int kvsim_draw_services(struct kvsim_trace *t, const char *fname,
			       char *err, size_t errlen)
{
	struct kvssd_model m;
	struct kvssd_die die;
	u32 i;

	for (i = 0; i < t->nr && t->rqs[i].service; i++)
		;
	if (i == t->nr)
		return 0;
	if (!t->model_set) {
		kvsim_err(err, errlen, "%s:%u: service model, but no model line",
			  fname, t->line[i]);
		return -1;
	}
	if (kvssd_model_init(&m, &t->model, &die)) {
		kvsim_err(err, errlen, "%s: model: %s", fname,
			  kvssd_config_error(&t->model));
		return -1;
	}
	for (i = 0; i < t->nr; i++) {
		struct kvs_req *rq = &t->rqs[i];

		if (!rq->service)
			rq->service = kvssd_service(&m, rq->write ?
						    KVSSD_PROGRAM : KVSSD_READ,
						    rq->nr_sectors);
	}
	return 0;
}

static int kvsim_parse_line(struct kvsim_trace *t, char *s, u32 line,
			    char *msg, size_t len)
{
	char *tok[KVSIM_MAX_TOKENS + 1], *p, *rest;
	int n = 0, tun;
	unsigned int val;
	u64 v;

	p = strchr(s, '#');
	if (p)
		*p = '\0';
	while (isspace((unsigned char)*s))
		s++;
	p = s + strlen(s);
	while (p > s && isspace((unsigned char)p[-1]))
		*--p = '\0';
	if (!*s)
		return 0;

	/* Text directives keep the rest of the line as it is. */
	rest = s + strcspn(s, " \t");
	if (*rest) {
		*rest++ = '\0';
		while (isspace((unsigned char)*rest))
			rest++;
	}
	if (!strcmp(s, "title")) {
		snprintf(t->title, sizeof(t->title), "%s", rest);
		return 0;
	}
	if (!strcmp(s, "note")) {
		kvsim_append(t->note, sizeof(t->note), rest);
		return 0;
	}

	tok[n++] = s;
	for (p = strtok(rest, " \t"); p; p = strtok(NULL, " \t")) {
		if (n == KVSIM_MAX_TOKENS) {
			kvsim_err(msg, len, "too many fields");
			return -1;
		}
		tok[n++] = p;
	}

	if (!strcmp(tok[0], "dies") || !strcmp(tok[0], "queue-depth") ||
	    !strcmp(tok[0], "chunk")) {
		bool dies = !strcmp(tok[0], "dies");
		u64 max = dies ? KVS_MAX_DIES : 1U << 20;

		if (n != 2 || kvsim_parse_u64(tok[1], &v) || !v || v > max) {
			kvsim_err(msg, len, "%s takes one number, 1..%llu",
				  tok[0], (unsigned long long)max);
			return -1;
		}
		if (dies)
			t->dies = (u32)v;
		else if (tok[0][0] == 'q')
			t->qdepth = (u32)v;
		else
			t->chunk = v;
		return 0;
	}
	if (!strcmp(tok[0], "model"))
		return kvsim_parse_model(t, tok, n, msg, len);
	if (!strcmp(tok[0], "set")) {
		if (n != 2) {
			kvsim_err(msg, len, "set takes one NAME=VALUE");
			return -1;
		}
		if (kvsim_parse_set(tok[1], &tun, &val, msg, len))
			return -1;
		t->tun[tun] = val;
		t->tun_set[tun] = true;
		return 0;
	}
	return kvsim_parse_request(t, tok, n, line, msg, len);
}

int kvsim_parse(struct kvsim_trace *t, const char *text, const char *fname,
		char *err, size_t errlen)
{
	char buf[1024], msg[KVSIM_ERR_MAX];
	const char *p = text;
	u32 line = 0;

	if (!t->name[0])
		snprintf(t->name, sizeof(t->name), "%s", fname);
	while (*p) {
		size_t n = strcspn(p, "\n");

		line++;
		if (n >= sizeof(buf)) {
			kvsim_err(err, errlen, "%s:%u: line too long", fname,
				  line);
			return -1;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		p += n + (p[n] == '\n');
		msg[0] = '\0';
		if (kvsim_parse_line(t, buf, line, msg, sizeof(msg))) {
			kvsim_err(err, errlen, "%s:%u: %s", fname, line, msg);
			return -1;
		}
	}
	if (!t->nr) {
		kvsim_err(err, errlen, "%s: no requests", fname);
		return -1;
	}
	return kvsim_draw_services(t, fname, err, errlen);
}

int kvsim_load_builtin(struct kvsim_trace *t, const char *name, char *err,
		       size_t errlen)
{
	unsigned int i;

	for (i = 0; i < kvsim_nr_builtins; i++) {
		if (strcmp(kvsim_builtins[i].name, name))
			continue;
		snprintf(t->name, sizeof(t->name), "%s", name);
		return kvsim_parse(t, kvsim_builtins[i].text, name, err,
				   errlen);
	}
	kvsim_err(err, errlen, "no built-in trace '%s'", name);
	return -1;
}

int kvsim_load_file(struct kvsim_trace *t, const char *path, char *err,
		    size_t errlen)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 0, n;
	char *text = NULL, *p;
	const char *base;
	int ret;

	if (!f) {
		kvsim_err(err, errlen, "%s: %s%s", path, strerror(errno),
			  errno == ENOENT && !strchr(path, '/') ?
			  " (and no built-in trace of that name: kvsim --list)" :
			  "");
		return -1;
	}
	for (;;) {
		if (cap - len < 4096) {
			cap = cap ? 2 * cap : 65536;
			p = realloc(text, cap + 1);
			if (!p) {
				free(text);
				fclose(f);
				kvsim_err(err, errlen, "%s: out of memory",
					  path);
				return -1;
			}
			text = p;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (!n)
			break;
	}
	if (ferror(f) || memchr(text, '\0', len)) {
		kvsim_err(err, errlen, "%s: %s", path,
			  ferror(f) ? "read error" : "not a text file");
		free(text);
		fclose(f);
		return -1;
	}
	fclose(f);
	text[len] = '\0';
	base = strrchr(path, '/');
	snprintf(t->name, sizeof(t->name), "%s", base ? base + 1 : path);
	ret = kvsim_parse(t, text, path, err, errlen);
	free(text);
	return ret;
}

/* ---- random traces ---------------------------------------------------- */

/* The same trace for a seed on every machine. */
static u64 kvsim_rng;

static int kvsim_rand_rq(struct kvsim_trace *t, u64 ts, const char *name,
			 enum kvsim_class c, u32 dies)
{
	int key = kvsim_intern(t, name);
	struct kvs_req *rq = key < 0 ? NULL : kvsim_add(t, 0);

	if (!rq)
		return -1;
	rq->arrival = ts;
	rq->key = (u64)key;
	rq->nr_sectors = 8 * kv_rand_in(&kvsim_rng, 1, 16);
	t->cls[t->nr - 1] = (u8)c;
	if (c == KVSIM_WRITE) {
		/* Writes go by sector, so bursts have something to sort. */
		kvsim_set_kind(rq, c, true, false);
		rq->sector = kv_rand_in(&kvsim_rng, 0, 64 * dies - 1) * 64;
		rq->die = -1;
		rq->service = kv_rand_in(&kvsim_rng, 100, 400) * 1000ULL;
	} else {
		kvsim_set_kind(rq, c, false, true);
		rq->die = (int)kv_rand_in(&kvsim_rng, 0, dies - 1);
		rq->sector = (u64)rq->die * 1024;
		rq->service = kv_rand_in(&kvsim_rng, 20, 150) * 1000ULL;
	}
	return 0;
}

/*
 * Recalls of 1..8 reads arriving together (demand, RT or hinted), among
 * foreign readers, prefetch and deferrable writes: about half the
 * requests are recall reads. Arrivals come a little faster than the
 * @dies dies serve them, so queues form and the order matters.
 */
int kvsim_random(struct kvsim_trace *t, u32 n, u64 seed, u32 dies)
{
	char name[KVSIM_NAME_MAX];
	u32 recall = 0, i, k;
	u64 ts = 0;

	kvsim_rng = seed * 0x9e3779b97f4a7c15ULL + 0x5eed;
	if (!kvsim_rng)
		kvsim_rng = 1;
	snprintf(t->name, sizeof(t->name), "random-%llu",
		 (unsigned long long)seed);
	snprintf(t->title, sizeof(t->title),
		 "Random trace: %u requests, seed %llu", n,
		 (unsigned long long)seed);
	snprintf(t->note, sizeof(t->note),
		 "Recalls of 1 to 8 reads (r*), foreign readers (f*), prefetch "
		 "(pf) and deferrable writes (wb), arriving a little faster "
		 "than the dies serve them.");
	t->dies = dies;
	/* Both recall tags are demand, as on a dedicated host. */
	t->tun[KVB_HINT_DEMAND] = 1;
	t->tun_set[KVB_HINT_DEMAND] = true;
	t->chunk = 64;

	for (i = 0; i < n; ) {
		u32 kind = kv_rand32(&kvsim_rng) % 10;

		ts += kv_rand_in(&kvsim_rng, 0, 400 / dies) * 1000ULL;
		if (kind < 4) {
			u32 size = kv_rand_in(&kvsim_rng, 1, 8);
			enum kvsim_class c = kv_rand32(&kvsim_rng) % 2 ?
					     KVSIM_DEMAND : KVSIM_HINT;

			snprintf(name, sizeof(name), "r%u", ++recall);
			for (k = 0; k < size && i < n; k++, i++)
				if (kvsim_rand_rq(t, ts, name, c, dies))
					return -1;
			continue;
		}
		if (kind < 7) {
			snprintf(name, sizeof(name), "f%u",
				 kv_rand_in(&kvsim_rng, 1, 3));
			if (kvsim_rand_rq(t, ts, name, KVSIM_NORMAL, dies))
				return -1;
		} else if (kind < 9) {
			if (kvsim_rand_rq(t, ts, "pf", KVSIM_PREFETCH, dies))
				return -1;
		} else if (kvsim_rand_rq(t, ts, "wb", KVSIM_WRITE, dies)) {
			return -1;
		}
		i++;
	}
	return 0;
}

/* ---- writing ---------------------------------------------------------- */

static void kvsim_write_note(FILE *f, const char *note)
{
	const char *p = note;

	/* Break the note into lines of about 72 columns, at spaces. */
	while (*p) {
		size_t n = strlen(p), cut = n;

		if (n > 67) {
			cut = 67;
			while (cut > 20 && p[cut] != ' ')
				cut--;
			if (p[cut] != ' ')
				cut = 67;
		}
		fprintf(f, "note %.*s\n", (int)cut, p);
		p += cut;
		while (*p == ' ')
			p++;
	}
}

void kvsim_write_trace(FILE *f, const struct kvsim_trace *t)
{
	char a[32], s[32];
	u32 i;
	int k;

	if (t->title[0])
		fprintf(f, "title %s\n", t->title);
	kvsim_write_note(f, t->note);
	if (t->dies)
		fprintf(f, "dies %u\n", t->dies);
	if (t->qdepth)
		fprintf(f, "queue-depth %u\n", t->qdepth);
	if (t->chunk)
		fprintf(f, "chunk %llu\n", (unsigned long long)t->chunk);
	for (k = 0; k < KVB_NR_TUNABLES; k++)
		if (t->tun_set[k])
			fprintf(f, "set %s=%u\n", kvb_tunables[k].name,
				t->tun[k]);
	/* The draws are written out: the line only says where from. */
	if (t->model_set)
		fprintf(f, "model read=%sus program=%sus cv=%u page=%u seed=%llu\n",
			kvsim_fmt_us(a, sizeof(a), t->model.read_ns),
			kvsim_fmt_us(s, sizeof(s), t->model.program_ns),
			t->model.cv_pct, t->model.page_sectors,
			(unsigned long long)t->model.seed);
	fprintf(f, "# time  batch  tier  op  service  target  size\n");
	for (i = 0; i < t->nr; i++) {
		const struct kvs_req *rq = &t->rqs[i];

		fprintf(f, "%sus %s %s %s %sus ",
			kvsim_fmt_us(a, sizeof(a), rq->arrival),
			t->bname[rq->key], kvsim_class_names[t->cls[i]],
			!rq->write ? "R" : rq->sync ? "WS" : "W",
			kvsim_fmt_us(s, sizeof(s), rq->service));
		if (rq->die >= 0)
			fprintf(f, "die=%d", rq->die);
		else
			fprintf(f, "sector=%llu",
				(unsigned long long)rq->sector);
		fprintf(f, " size=%u\n", rq->nr_sectors * 512);
	}
}
