// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench - a KV-cache recall load generator that measures batch
 * completion: the time from submitting a recall batch to the completion of
 * its LAST read, which is what a GPU waiting on the recall sees and what
 * fio cannot report.
 *
 * One thread, one io_uring, O_DIRECT. Demand recall batches arrive open
 * loop (Poisson, -r batches/s) and/or closed loop (--streams N, each
 * stream submitting its next batch a think time after the previous one
 * completed), and are submitted all at once, each with its own tag
 * (ioprio class plus a distinct hint, so each is its own batch to the
 * scheduler). Batch sizes are a fixed size, a uniform choice from a set,
 * or a KV-chunk model (tokens x bytes per token / request size).
 * Background roles keep a fixed number of requests outstanding: foreign
 * random reads (untagged, default class), prefetch random reads (IDLE)
 * and sequential writes in their own region, either O_DIRECT (IDLE) or
 * buffered and pushed to the device as asynchronous writeback.
 *
 * Before the run, each batch size is measured alone on the idle device
 * (its "solo" time); slowdown = completion / solo.
 *
 * --trace FILE replays an LLM-serving trace (JSONL, kvtrace.h) instead:
 * a tier model (kvtier.h: host memory in front of the SSD) turns each
 * request's KV blocks into a recall batch of the blocks that are on the
 * SSD only and, after the recall, IDLE offload writes of its new blocks,
 * at the block size of a model (--model or --bytes-per-token). It
 * reports each request's recall completion, the slowdown against a
 * recall of the same number of blocks alone, the offload write
 * throughput and the backlog of offload writes at the window's end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <liburing.h>
#include <linux/fs.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <kvbatch/kvbatch.h>

#include "kv-ioprio.h"
#include "kv-rand.h"
#include "kv-user.h"
#include "kvtier.h"
#include "kvtrace.h"

#define MAX_SIZES	16
#define MAX_DEPTH	16384

enum role { R_DEMAND, R_FOREIGN, R_PREFETCH, R_WRITE, NR_ROLES };
static const char *const role_names[NR_ROLES] = {
	"demand", "foreign", "prefetch", "write",
};

enum tag_mode { TAG_BE_HINT, TAG_RT, TAG_BE, TAG_NONE, NR_TAG_MODES };
static const char *const tag_names[NR_TAG_MODES] = {
	"be-hint", "rt", "be", "none",
};

enum write_mode { WRITE_DIRECT, WRITE_BUFFERED, NR_WRITE_MODES };
static const char *const write_mode_names[NR_WRITE_MODES] = {
	"direct", "buffered",
};

#define MAX_STREAMS	1024
#define CDF_POINTS	200	/* batch completion CDF: 0.5% steps */

/* Long options without a short letter. */
enum {
	OPT_TRACE = 256, OPT_MODEL, OPT_BPT, OPT_BLOCK_TOKENS,
	OPT_MEM_BLOCKS, OPT_SPEED, OPT_FROM, OPT_DURATION,
};

struct opts {
	const char *dev;
	double seconds;
	double rate;			/* demand batches per second */
	unsigned int sizes[MAX_SIZES];	/* batch sizes, in requests */
	unsigned int nr_sizes;
	unsigned int bs;
	enum tag_mode tag;
	unsigned int qd[NR_ROLES];	/* background queue depths */
	enum write_mode write_mode;
	unsigned int streams;		/* closed-loop demand streams */
	double think_ms;		/* mean think time between batches */
	unsigned int kv_tokens[MAX_SIZES];	/* --kv: sizes from tokens */
	unsigned int kv_bpt;
	unsigned int solo_runs;
	uint64_t seed;
	bool json;
	/* --trace: replay a serving trace through the tier model. */
	const char *trace;
	const char *model;		/* preset, unless bytes_per_token */
	unsigned int bytes_per_token;
	unsigned int block_tokens;
	uint64_t mem_blocks;
	double speed;
	double from_ms, duration_ms;	/* duration < 0: to the trace's end */
};

struct batch {
	uint64_t submit_ns;
	uint64_t done_ns;
	unsigned int size;
	unsigned int left;	/* reads not completed */
	unsigned int queued;	/* reads not yet handed to the ring */
	unsigned int size_idx;
	int stream;		/* closed-loop stream, or -1 */
	uint16_t prio;
	/* --trace: each block's SSD slot (else random offsets), request */
	const uint64_t *slots;
	size_t treq;
	struct list_head queue;	/* while it has reads to issue */
};

/*
 * A buffered writer's request is a write into the page cache followed by
 * a sync_file_range(WRITE | WAIT_AFTER) of the same range: the kernel
 * writes it back as an asynchronous (not REQ_SYNC) write, which is what a
 * KV offload's writeback looks like to the scheduler, and the writer
 * slot is busy until the device has it, so the queue depth stays bounded.
 */
enum req_stage { STAGE_IO, STAGE_WRITEBACK };

struct req {
	enum role role;
	enum req_stage stage;
	struct batch *batch;	/* demand only */
	uint64_t submit_ns;
	uint64_t off;
	bool busy;
};

/* Closed-loop streams: each has its own random sequence of sizes. */
struct stream {
	uint64_t rng;
	uint64_t next_ns;	/* next submission, or ~0 while one is out */
};

/* A growable array of samples (ns) with percentile queries. */
struct samples {
	uint64_t *v;
	size_t n, cap;
	bool sorted;
};

static struct opts o = {
	.seconds = 10, .rate = 20, .bs = 65536, .tag = TAG_RT,
	.solo_runs = 5, .seed = 1,
	.sizes = { 4, 8, 16, 32 }, .nr_sizes = 4,
	.model = "llama-3.1-8b", .block_tokens = 512, .mem_blocks = 64,
	.speed = 1, .duration_ms = -1,
};

/*
 * KV bytes per token of a few open models: layers x KV heads x head
 * dimension x bytes per element x 2 (K and V), from each model's
 * config.json (grouped-query attention: KV heads, not attention heads).
 */
static const struct kv_model {
	const char *name;
	unsigned int layers, kv_heads, head_dim, elem_bytes;
} kv_models[] = {
	{ "llama-3.1-8b",  32, 8, 128, 2 },
	{ "llama-3.1-70b", 80, 8, 128, 2 },
	{ "qwen2.5-7b",    28, 4, 128, 2 },
	{ "mistral-7b",    32, 8, 128, 2 },
};

#define NR_MODELS	(sizeof(kv_models) / sizeof(kv_models[0]))

/* A trace request, as the tier model planned it. */
struct treq {
	uint64_t at_ns;		/* arrival, after the replay's start */
	const uint64_t *slots;	/* nr_recall slots to read, nr_new to write */
	unsigned int nr_hit, nr_recall, nr_new;
	uint64_t wnext;		/* its next offload write request */
};

/* --trace: the plan, the layout on the device, the offload writes. */
static struct {
	struct treq *req;
	size_t nr;
	size_t warmup;		/* requests before --from: model only */
	size_t recalling;	/* requests with a recall */
	uint64_t *slots;
	uint64_t block_bytes;
	unsigned int chunks;	/* -b requests per block */
	uint64_t stride;	/* bytes per slot: chunks x -b */
	uint64_t nr_slots;
	struct kvt_stats st;	/* of the window's requests */
	unsigned int solo_blocks[MAX_SIZES];
	unsigned int recall_depth;	/* recall reads outstanding, at most */
	uint64_t window_ns;	/* the window's length, after --speed */
	uint64_t end_ns;	/* the window's end */
	/* Requests whose offload writes are due, in order (a FIFO). */
	size_t *wq;
	size_t wq_head, wq_tail;
	uint64_t owed;		/* write requests of the arrived requests */
} tr;

/*
 * Two random streams: one for the demand trace (arrival times, batch
 * sizes), one for offsets. The trace must not depend on how many
 * background requests completed, so every scheduler sees the same one.
 */
static uint64_t rng_trace, rng_io;
static uint64_t dev_bytes;

/* The usage line a bad argument prints, after what was wrong. */
static const char kvbench_usage[] =
"usage: kvbench -d DEV [--trace FILE.jsonl] [OPTION]... (kvbench --help for the options)\n";

/* --help. */
static const char kvbench_help[] =
"usage: kvbench -d DEV [-t SECONDS] [-r BATCHES_PER_S] [-s SIZE,SIZE,...]\n"
"               [--kv TOKENS,...:BYTES_PER_TOKEN] [--streams N] [--think MS]\n"
"               [-b BLOCK_SIZE] [--tag rt|be-hint|be|none]\n"
"               [--foreign QD] [--prefetch QD] [--write QD]\n"
"               [--write-mode direct|buffered] [--solo-runs N] [--seed N] [--json]\n"
"       kvbench -d DEV --trace FILE.jsonl [--model NAME | --bytes-per-token N]\n"
"               [--block-tokens N] [--mem-blocks N] [--speed X] [--from MS]\n"
"               [--duration MS] [-b BLOCK_SIZE] [--tag ...] [--foreign QD]\n"
"               [--prefetch QD] [--write QD] [--write-mode ...] [--solo-runs N]\n"
"               [--seed N] [--json]\n"
"\n"
"Issue KV-cache recall batches (or replay a serving trace) on DEV beside\n"
"background readers and writers, and report each batch's completion time.\n"
"\n"
"  -d, --device DEV        the block device (or file) to read and write\n"
"  -t, --time SECONDS      the run's length, 0.1..86400 (default 10)\n"
"  -r, --rate N            recall batches a second, Poisson, 0..100000\n"
"                          (default 20)\n"
"  -s, --sizes SIZE,...    batch sizes in requests, 1..1024, each batch\n"
"                          one of them (default 4,8,16,32)\n"
"  -b, --block-size BYTES  the request size, a multiple of 512\n"
"                          (default 65536)\n"
"  -h, --help              print this help\n"
"Each other option has only its long form, above.\n";

/*
 * What getopt_long() found wrong ('?'), in one line: @arg is the word it
 * stopped at, @opt its optopt (0 for a long option it does not know).
 */
static void bad_option(const char *tool, const char *arg, int opt)
{
	if (!opt)
		fprintf(stderr, "%s: unknown option %s\n", tool, arg);
	else if (!strncmp(arg, "--", 2))
		fprintf(stderr, "%s: %s takes no value\n", tool, arg);
	else
		fprintf(stderr, "%s: unknown option -%c\n", tool, opt);
}

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvbench: %s\n", msg);
	fputs(kvbench_usage, stderr);
	exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Offsets: deterministic with --seed. */
static uint64_t rnd(void)
{
	return kv_rand64(&rng_io);
}

/* Exponential with the given mean, in ns. */
static uint64_t rnd_exp_ns(uint64_t *st, double mean_s)
{
	return (uint64_t)(-log(1 - kv_rand_unit(st)) * mean_s * 1e9);
}

/*
 * A comma-separated list has no empty element: strtok_r() would skip one
 * ("4,,8" read as 4,8), so a typo would go unnoticed.
 */
static void check_list(const char *s, const char *msg)
{
	size_t n = strlen(s);

	if (!n || s[0] == ',' || s[n - 1] == ',' || strstr(s, ",,"))
		usage(msg);
}

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == 'k' || *end == 'K' || *end == 'm' || *end == 'M') {
		unsigned int shift = (*end == 'k' || *end == 'K') ? 10 : 20;

		/* A multiple past the type is out of range, not wrapped. */
		if (v > ULONG_MAX >> shift)
			errno = ERANGE;
		v <<= shift;
		end++;
	}
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "kvbench: bad %s '%s' (%lu..%lu)\n", what, s,
			lo, hi);
		usage(NULL);
	}
	return v;
}

/* The index of s among the n names, or usage(msg). */
static unsigned int parse_name(const char *s, const char *const *names,
			       unsigned int n, const char *msg)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	usage(msg);
	return 0;
}

static double parse_double(const char *s, const char *what, double lo,
			   double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "kvbench: bad %s '%s' (%g..%g)\n", what, s, lo,
			hi);
		usage(NULL);
	}
	return v;
}

static void samples_add(struct samples *s, uint64_t v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v) {
			perror("realloc");
			exit(1);
		}
	}
	s->v[s->n++] = v;
	s->sorted = false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile, in ns; 0 when empty. */
static uint64_t pct(struct samples *s, double p)
{
	size_t i;

	if (!s->n)
		return 0;
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
		s->sorted = true;
	}
	i = (size_t)ceil(p / 100.0 * s->n);
	return s->v[i ? i - 1 : 0];
}

static double mean(const struct samples *s)
{
	double sum = 0;
	size_t i;

	for (i = 0; i < s->n; i++)
		sum += s->v[i];
	return s->n ? sum / s->n : 0;
}

struct bench {
	struct io_uring ring;
	int fd;
	int wfd;		/* buffered writers' descriptor, or -1 */
	/*
	 * Every read lands in one buffer and every write comes from one:
	 * the data is never looked at, and memory stays at two blocks
	 * however many requests are outstanding.
	 */
	char *rbuf, *wbuf;
	/* Batches whose reads are not all in the ring yet, oldest first. */
	struct list_head queue;
	struct req reqs[MAX_DEPTH];
	struct req *free[MAX_DEPTH];	/* stack of idle requests */
	unsigned int nr_free;
	unsigned int inflight[NR_ROLES];
	uint64_t write_pos;
	uint64_t ios[NR_ROLES];
	struct samples lat[NR_ROLES];
	uint64_t errors;
	unsigned int next_hint;
};

static struct req *get_req(struct bench *b)
{
	if (!b->nr_free) {
		fprintf(stderr, "kvbench: more than %d requests outstanding\n",
			MAX_DEPTH);
		exit(1);
	}
	return b->free[--b->nr_free];
}

/* Regions: demand and background reads use the first 3/4, writes the rest. */
static uint64_t read_offset(void)
{
	uint64_t blocks = dev_bytes / 4 * 3 / o.bs;

	return (rnd() % blocks) * o.bs;
}

/* The background writer's next block, in its last-quarter region. */
static uint64_t write_offset(struct bench *b)
{
	uint64_t base = dev_bytes / 4 * 3;
	uint64_t span = dev_bytes - base;
	uint64_t off = base + b->write_pos % (span / o.bs * o.bs);

	b->write_pos += o.bs;
	return off;
}

static void prep(struct bench *b, enum role role, struct batch *batch,
		 uint16_t ioprio, uint64_t t, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	struct req *r = get_req(b);

	if (!sqe) {
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	r->role = role;
	r->stage = STAGE_IO;
	r->batch = batch;
	r->submit_ns = t;
	r->busy = true;
	if (role == R_WRITE)
		io_uring_prep_write(sqe, o.write_mode == WRITE_BUFFERED ?
				    b->wfd : b->fd, b->wbuf, o.bs, off);
	else
		io_uring_prep_read(sqe, b->fd, b->rbuf, o.bs, off);
	r->off = off;
	sqe->ioprio = ioprio;
	io_uring_sqe_set_data(sqe, r);
	b->inflight[role]++;
}

static uint16_t demand_prio(struct bench *b)
{
	/* A distinct batch id per batch, so each is its own batch stream. */
	unsigned int id = kvbatch_next_id(&b->next_hint);

	switch (o.tag) {
	case TAG_RT:
		return kvbatch_tag(KVBATCH_DEMAND, id);
	case TAG_BE:
		return KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 0);
	case TAG_NONE:
		return 0;
	default:
		return kvbatch_tag(KVBATCH_GROUP, id);
	}
}

static uint16_t role_prio(enum role role)
{
	switch (role) {
	case R_PREFETCH:
	case R_WRITE:
		return KV_IOPRIO(KV_IOPRIO_CLASS_IDLE, 0, 0);
	default:
		return 0;
	}
}

/*
 * Where a batch's next read goes: with --trace, the blocks' slots one
 * after the other, each read through in -b requests; else anywhere in
 * the read region.
 */
static uint64_t batch_offset(const struct batch *bt)
{
	unsigned int i = bt->size - bt->queued;

	if (!bt->slots)
		return read_offset();
	return bt->slots[i / tr.chunks] * tr.stride +
	       (uint64_t)(i % tr.chunks) * o.bs;
}

/*
 * Offload writes: the new blocks of each request whose prefill is done,
 * in that order, each block written through in -b requests to its slot,
 * with at most --write of them outstanding, and none issued after the
 * window's end. They are IDLE class, like the background writer's: the
 * deferrable writes of a KV offload.
 */
static bool pump_writes(struct bench *b, uint64_t t)
{
	bool any = false;

	while (tr.wq_head < tr.wq_tail && t < tr.end_ns &&
	       b->inflight[R_WRITE] < o.qd[R_WRITE]) {
		struct treq *q = &tr.req[tr.wq[tr.wq_head]];
		uint64_t i = q->wnext++;
		uint64_t off = q->slots[q->nr_recall + i / tr.chunks] *
			tr.stride + (i % tr.chunks) * o.bs;

		prep(b, R_WRITE, NULL, role_prio(R_WRITE), t, off);
		if (q->wnext == (uint64_t)q->nr_new * tr.chunks)
			tr.wq_head++;
		any = true;
	}
	return any;
}

/*
 * Hand queued reads to the ring, oldest batch first, and with --trace the
 * offload writes that are due. Without --trace every batch goes in whole
 * at once; a trace's recall can be larger than the ring, so its reads
 * wait here only while MAX_DEPTH less the background depths are
 * outstanding.
 */
static void pump(struct bench *b, uint64_t t)
{
	bool any = false;

	while (!list_empty(&b->queue)) {
		struct batch *bt = list_first_entry(&b->queue, struct batch,
						    queue);

		while (bt->queued &&
		       (!o.trace || b->inflight[R_DEMAND] < tr.recall_depth)) {
			prep(b, R_DEMAND, bt, bt->prio, t, batch_offset(bt));
			bt->queued--;
			any = true;
		}
		if (bt->queued)
			break;
		list_del_init(&bt->queue);
	}
	if (o.trace && pump_writes(b, t))
		any = true;
	if (any)
		io_uring_submit(&b->ring);
}

static void submit_batch(struct bench *b, struct batch *batch, uint64_t t)
{
	batch->prio = demand_prio(b);
	batch->submit_ns = t;
	batch->left = batch->size;
	batch->queued = batch->size;
	list_add_tail(&batch->queue, &b->queue);
	pump(b, t);
}

/*
 * Background roles, each kept at its depth. With --trace the write role
 * is the trace's offload writes (pump_writes()), not the sequential
 * writer.
 */
static void refill(struct bench *b, uint64_t t)
{
	int role, last = o.trace ? R_PREFETCH : R_WRITE;
	bool any = false;

	for (role = R_FOREIGN; role <= last; role++)
		while (b->inflight[role] < o.qd[role]) {
			prep(b, role, NULL, role_prio(role), t,
			     role == R_WRITE ? write_offset(b) : read_offset());
			any = true;
		}
	if (any)
		io_uring_submit(&b->ring);
}

/*
 * The second stage of a buffered write: write back the range just
 * written. SYNC_FILE_RANGE_WRITE without WAIT_BEFORE is WB_SYNC_NONE
 * writeback, so the block layer sees an asynchronous write.
 */
static void writeback(struct bench *b, struct req *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);

	if (!sqe) {
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	r->stage = STAGE_WRITEBACK;
	io_uring_prep_sync_file_range(sqe, b->wfd, o.bs, r->off,
				      SYNC_FILE_RANGE_WRITE |
				      SYNC_FILE_RANGE_WAIT_AFTER);
	io_uring_sqe_set_data(sqe, r);
	io_uring_submit(&b->ring);
}

/* Reap one completion; returns the batch it finished, if any. */
static struct batch *reap(struct bench *b, struct io_uring_cqe *cqe, uint64_t t)
{
	struct req *r = io_uring_cqe_get_data(cqe);
	struct batch *done = NULL;
	int want = r->stage == STAGE_WRITEBACK ? 0 : (int)o.bs;

	if (r->role == R_WRITE && o.write_mode == WRITE_BUFFERED &&
	    r->stage == STAGE_IO && cqe->res == want) {
		io_uring_cqe_seen(&b->ring, cqe);
		writeback(b, r);
		return NULL;
	}
	if (cqe->res != want) {
		if (!b->errors)
			fprintf(stderr, "kvbench: %s I/O failed: %s\n",
				role_names[r->role],
				cqe->res < 0 ? strerror(-cqe->res) : "short");
		b->errors++;
	}
	b->inflight[r->role]--;
	b->ios[r->role]++;
	samples_add(&b->lat[r->role], t - r->submit_ns);
	if (r->batch && --r->batch->left == 0) {
		r->batch->done_ns = t;
		done = r->batch;
	}
	r->busy = false;
	b->free[b->nr_free++] = r;
	io_uring_cqe_seen(&b->ring, cqe);
	return done;
}

static void bench_setup(struct bench *b)
{
	unsigned int i;
	int ret;

	memset(b, 0, sizeof(*b));
	INIT_LIST_HEAD(&b->queue);
	b->fd = open(o.dev, O_RDWR | O_DIRECT);
	if (b->fd < 0) {
		perror(o.dev);
		exit(1);
	}
	b->wfd = -1;
	if (o.write_mode == WRITE_BUFFERED) {
		b->wfd = open(o.dev, O_RDWR);
		if (b->wfd < 0) {
			perror(o.dev);
			exit(1);
		}
	}
	if (posix_memalign((void **)&b->rbuf, 4096, o.bs) ||
	    posix_memalign((void **)&b->wbuf, 4096, o.bs)) {
		perror("posix_memalign");
		exit(1);
	}
	memset(b->wbuf, 0x5a, o.bs);
	ret = io_uring_queue_init(MAX_DEPTH, &b->ring, 0);
	if (ret < 0) {
		fprintf(stderr, "kvbench: io_uring: %s\n", strerror(-ret));
		exit(1);
	}
	for (i = MAX_DEPTH; i-- > 0; )
		b->free[b->nr_free++] = &b->reqs[i];
}

/*
 * Wait for a completion until @due, or for 1 ms when @due is not ahead
 * of @t: true with one in *cqe.
 */
static bool wait_cqe_until(struct bench *b, uint64_t t, uint64_t due,
			   struct io_uring_cqe **cqe)
{
	uint64_t wait = due > t ? due - t : 1000000;
	struct __kernel_timespec ts = {
		.tv_sec = wait / 1000000000ULL,
		.tv_nsec = wait % 1000000000ULL,
	};

	return io_uring_wait_cqe_timeout(&b->ring, cqe, &ts) == 0;
}

/* Wait for the background requests still outstanding. */
static void drain(struct bench *b)
{
	while (b->inflight[R_FOREIGN] + b->inflight[R_PREFETCH] +
	       b->inflight[R_WRITE]) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&b->ring, &cqe) < 0)
			break;
		reap(b, cqe, now_ns());
	}
}

/*
 * Median completion of solo batches of each size on the idle device.
 * With --trace, a size is a number of blocks (o.sizes[] in requests),
 * each solo batch reads that many slots drawn at random, a block at a
 * time like a recall, and the reads beyond the ring wait in pump().
 */
static void measure_solo(struct bench *b, double *solo_ns)
{
	uint64_t *slots = NULL;
	unsigned int s, k, i;

	if (o.trace && o.nr_sizes) {
		slots = calloc(tr.solo_blocks[o.nr_sizes - 1], sizeof(*slots));
		if (!slots) {
			perror("kvbench: solo");
			exit(1);
		}
	}
	for (s = 0; s < o.nr_sizes; s++) {
		struct samples sm = { 0 };

		for (k = 0; k < o.solo_runs; k++) {
			struct batch batch = { .size = o.sizes[s],
					       .slots = slots };
			struct io_uring_cqe *cqe;

			for (i = 0; slots && i < tr.solo_blocks[s]; i++)
				slots[i] = rnd() % tr.nr_slots;
			submit_batch(b, &batch, now_ns());
			while (batch.left) {
				if (io_uring_wait_cqe(&b->ring, &cqe) < 0)
					exit(1);
				reap(b, cqe, now_ns());
				pump(b, now_ns());
			}
			samples_add(&sm, batch.done_ns - batch.submit_ns);
		}
		solo_ns[s] = (double)pct(&sm, 50);
		free(sm.v);
	}
	free(slots);
	for (s = 0; s < NR_ROLES; s++) {
		b->ios[s] = 0;
		free(b->lat[s].v);
		memset(&b->lat[s], 0, sizeof(b->lat[s]));
	}
}

static void print_ms_row(const char *name, struct samples *s, double scale)
{
	printf("  %-20s %7zu %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n", name, s->n,
	       mean(s) / scale, pct(s, 50) / scale, pct(s, 90) / scale,
	       pct(s, 99) / scale, pct(s, 99.9) / scale, pct(s, 100) / scale);
}

static void json_dist(const char *name, struct samples *s, double scale,
		      bool comma)
{
	printf("    \"%s\": {\"n\": %zu, \"mean\": %.4f, \"p50\": %.4f, \"p90\": %.4f, \"p99\": %.4f, \"p999\": %.4f, \"max\": %.4f}%s\n",
	       name, s->n, mean(s) / scale, pct(s, 50) / scale,
	       pct(s, 90) / scale, pct(s, 99) / scale, pct(s, 99.9) / scale,
	       pct(s, 100) / scale, comma ? "," : "");
}

static void print_ms_header(const char *what)
{
	printf("  %-20s %7s %9s %9s %9s %9s %9s %9s\n", what, "n", "mean",
	       "p50", "p90", "p99", "p99.9", "max");
}

/* Per-role request latency, then @ios over @secs as IOPS and MB/s. */
static void print_roles(struct bench *b, const uint64_t *ios, double secs,
			const char *label)
{
	int role;

	print_ms_header("request (ms)");
	for (role = 0; role < NR_ROLES; role++)
		print_ms_row(role_names[role], &b->lat[role], 1e6);
	printf("  %s", label);
	for (role = 0; role < NR_ROLES; role++)
		printf(" %s %.0f IOPS %.1f MB/s%s", role_names[role],
		       secs > 0 ? ios[role] / secs : 0,
		       secs > 0 ? ios[role] * (double)o.bs / secs / 1e6 : 0,
		       role + 1 < NR_ROLES ? "," : "\n");
}

static void print_json_depths(void)
{
	printf("  \"write_mode\": \"%s\", \"depth\": {\"foreign\": %u, \"prefetch\": %u, \"write\": %u},\n",
	       write_mode_names[o.write_mode],
	       o.qd[R_FOREIGN], o.qd[R_PREFETCH], o.qd[R_WRITE]);
}

/* Quantiles of batch completion, for CDF plots. */
static void print_json_cdf(const char *name, struct samples *s)
{
	int i;

	printf("  \"%s\": [", name);
	for (i = 0; i <= CDF_POINTS; i++)
		printf("%s%.4f", i ? ", " : "",
		       pct(s, 100.0 * i / CDF_POINTS) / 1e6);
	printf("],\n");
}

/* "request_ms", "iops" and "mbps" (no newline after the last). */
static void print_json_roles(struct bench *b, const uint64_t *ios, double secs)
{
	int role;

	printf("  \"request_ms\": {\n");
	for (role = 0; role < NR_ROLES; role++)
		json_dist(role_names[role], &b->lat[role], 1e6,
			  role + 1 < NR_ROLES);
	printf("  },\n  \"iops\": {");
	for (role = 0; role < NR_ROLES; role++)
		printf("%s\"%s\": %.1f", role ? ", " : "", role_names[role],
		       secs > 0 ? ios[role] / secs : 0);
	printf("},\n  \"mbps\": {");
	for (role = 0; role < NR_ROLES; role++)
		printf("%s\"%s\": %.2f", role ? ", " : "", role_names[role],
		       secs > 0 ? ios[role] * (double)o.bs / secs / 1e6 : 0);
	printf("}");
}

/*
 * Batches live until the end of the run (requests point at them), so they
 * come from fixed chunks that are never moved.
 */
#define BATCH_CHUNK	4096

static struct batch **batch_chunks;
static size_t nr_batches, nr_chunks;

static struct batch *new_batch(void)
{
	if (nr_batches == nr_chunks * BATCH_CHUNK) {
		batch_chunks = realloc(batch_chunks,
				       (nr_chunks + 1) * sizeof(*batch_chunks));
		if (!batch_chunks)
			goto oom;
		batch_chunks[nr_chunks] = calloc(BATCH_CHUNK,
						 sizeof(struct batch));
		if (!batch_chunks[nr_chunks])
			goto oom;
		nr_chunks++;
	}
	nr_batches++;
	return &batch_chunks[(nr_batches - 1) / BATCH_CHUNK]
		[(nr_batches - 1) % BATCH_CHUNK];
oom:
	perror("kvbench: batches");
	exit(1);
}

/* --kv TOKENS,...:BYTES_PER_TOKEN -> batch sizes, in requests. */
static void parse_kv(char *arg)
{
	char *colon = strrchr(arg, ':'), *tok, *save;
	unsigned int n = 0, i;

	if (!colon)
		usage("--kv needs TOKENS,...:BYTES_PER_TOKEN");
	*colon = '\0';
	o.kv_bpt = parse_num(colon + 1, "bytes per token", 1, 16 << 20);
	check_list(arg, "--kv lists token counts by commas, none empty");
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES)
			usage("too many token counts");
		o.kv_tokens[n++] = parse_num(tok, "token count", 1, 1 << 24);
	}
	if (!n)
		usage("--kv needs at least one token count");
	o.nr_sizes = n;
	for (i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)o.kv_tokens[i] * o.kv_bpt;
		uint64_t reqs = (bytes + o.bs - 1) / o.bs;

		if (reqs > 1024) {
			fprintf(stderr, "kvbench: --kv %u tokens x %u bytes is %" PRIu64 " requests of %u bytes (at most 1024)\n",
				o.kv_tokens[i], o.kv_bpt, reqs, o.bs);
			usage(NULL);
		}
		o.sizes[i] = reqs;
	}
}

static void fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("kvbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* --model NAME: its preset's KV bytes per token. */
static unsigned int model_bytes_per_token(const char *name)
{
	size_t i;

	for (i = 0; i < NR_MODELS; i++)
		if (!strcmp(kv_models[i].name, name))
			return kv_models[i].layers * kv_models[i].kv_heads *
			       kv_models[i].head_dim *
			       kv_models[i].elem_bytes * 2;
	fprintf(stderr, "kvbench: unknown --model '%s'; the presets are:", name);
	for (i = 0; i < NR_MODELS; i++)
		fprintf(stderr, " %s", kv_models[i].name);
	fputc('\n', stderr);
	usage(NULL);
	return 0;
}

static void trace_load(struct kvt_trace *t)
{
	char err[KVT_ERR_MAX];
	FILE *f = fopen(o.trace, "r");

	if (!f)
		fatal("%s: %s", o.trace, strerror(errno));
	if (kvt_trace_read(t, f, o.trace, err))
		fatal("%s", err);
	fclose(f);
	if (!t->nr)
		fatal("%s: no request in the trace", o.trace);
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

/*
 * The recall sizes (in blocks) to measure alone: every size the window
 * recalls if there are at most MAX_SIZES of them, else powers of two up
 * to the largest recall, and the largest, between which solo times are
 * interpolated (trace_solo_ns()).
 */
static void trace_solo_sizes(void)
{
	unsigned int *v = malloc((tr.nr + 1) * sizeof(*v)), n = 0, d = 0, k;
	size_t i;

	if (!v)
		fatal("out of memory");
	for (i = 0; i < tr.nr; i++)
		if (tr.req[i].nr_recall)
			v[n++] = tr.req[i].nr_recall;
	qsort(v, n, sizeof(*v), cmp_uint);
	for (i = 0; i < n; i++)
		if (!d || v[d - 1] != v[i])
			v[d++] = v[i];
	if (d <= MAX_SIZES) {
		memcpy(tr.solo_blocks, v, d * sizeof(*v));
	} else {
		for (d = 0, k = 1; k < v[n - 1] && d < MAX_SIZES - 1; k *= 2)
			tr.solo_blocks[d++] = k;
		tr.solo_blocks[d++] = v[n - 1];
	}
	o.nr_sizes = d;
	for (i = 0; i < d; i++)
		o.sizes[i] = tr.solo_blocks[i] * tr.chunks;
	free(v);
}

/* The solo time of a recall of @blocks blocks, in ns. */
static double trace_solo_ns(unsigned int blocks, const double *solo_ns)
{
	unsigned int j = 0, lo, hi;

	while (j + 1 < o.nr_sizes && tr.solo_blocks[j] < blocks)
		j++;
	if (!j || tr.solo_blocks[j] <= blocks)
		return solo_ns[j];
	lo = tr.solo_blocks[j - 1];
	hi = tr.solo_blocks[j];
	return solo_ns[j - 1] +
	       (solo_ns[j] - solo_ns[j - 1]) * (blocks - lo) / (hi - lo);
}

/* Trace milliseconds after the window's start as replay nanoseconds. */
static uint64_t replay_ns(double ms)
{
	double ns = ms / o.speed * 1e6;

	/* A century: beyond it the conversion to 64 bits would overflow. */
	if (ns > 3.2e18)
		fatal("%g ms at --speed %g is too long a replay", ms, o.speed);
	return (uint64_t)ns;
}

/*
 * The whole trace through the tier model, before any I/O: the requests
 * before --from only warm the tiers; each request of the window gets its
 * arrival time (divided by --speed), the slots its recall reads and the
 * slots its new blocks are written to. The plan depends on the trace
 * and the options alone, so every scheduler replays the same I/O.
 */
static void trace_plan(const struct kvt_trace *t)
{
	double end_ms = o.duration_ms < 0 ? INFINITY :
		o.from_ms + o.duration_ms;
	struct kvt_stats before = { 0 };
	const struct kvt_stats *st;
	struct kvt_tier *tier;
	size_t i, j, c, maxids = 1, used = 0;
	uint64_t *slot;
	int *cls;

	tr.block_bytes = (uint64_t)o.bytes_per_token * o.block_tokens;
	if ((tr.block_bytes + o.bs - 1) / o.bs > 1U << 20)
		usage("a KV block is more than 1048576 requests of -b bytes: raise -b");
	tr.chunks = (tr.block_bytes + o.bs - 1) / o.bs;
	tr.stride = (uint64_t)tr.chunks * o.bs;
	tr.nr_slots = dev_bytes / tr.stride;
	if (!tr.nr_slots)
		fatal("%s: %" PRIu64 " bytes, less than one KV block of %" PRIu64 " bytes",
		      o.dev, dev_bytes, tr.stride);
	tier = kvt_tier_new(o.mem_blocks, tr.nr_slots);
	for (i = 0; i < t->nr; i++)
		if (t->req[i].nr_ids > maxids)
			maxids = t->req[i].nr_ids;
	tr.req = calloc(t->nr, sizeof(*tr.req));
	tr.wq = calloc(t->nr, sizeof(*tr.wq));
	tr.slots = calloc(t->nr_ids + 1, sizeof(*tr.slots));
	slot = calloc(maxids, sizeof(*slot));
	cls = calloc(maxids, sizeof(*cls));
	if (!tier || !tr.req || !tr.wq || !tr.slots || !slot || !cls)
		fatal("out of memory");
	st = kvt_tier_stats(tier);
	for (i = 0; i < t->nr && t->req[i].ts_ms < end_ms; i++) {
		const struct kvt_req *r = &t->req[i];
		const uint64_t *ids = kvt_req_ids(t, r);
		bool warm = r->ts_ms < o.from_ms;
		struct treq *q;

		if (!warm && !tr.nr)
			before = *st;
		for (j = 0; j < r->nr_ids; j++) {
			cls[j] = kvt_tier_access(tier, ids[j], &slot[j]);
			if (cls[j] < 0)
				fatal("out of memory");
		}
		if (warm) {
			tr.warmup++;
			continue;
		}
		q = &tr.req[tr.nr++];
		q->at_ns = replay_ns(r->ts_ms - o.from_ms);
		q->slots = tr.slots + used;
		/* The recall's slots first, then the new blocks'. */
		for (c = KVT_RECALL; c <= KVT_NEW; c++)
			for (j = 0; j < r->nr_ids; j++)
				if (cls[j] == (int)c)
					tr.slots[used++] = slot[j];
		for (j = 0; j < r->nr_ids; j++) {
			q->nr_hit += cls[j] == KVT_HIT;
			q->nr_recall += cls[j] == KVT_RECALL;
			q->nr_new += cls[j] == KVT_NEW;
		}
		if ((uint64_t)q->nr_recall * tr.chunks > UINT_MAX)
			fatal("%s:%zu: a recall of %u blocks of %u requests is too many requests: raise -b",
			      o.trace, r->line, q->nr_recall, tr.chunks);
		tr.recalling += q->nr_recall > 0;
	}
	if (!tr.nr) {
		fprintf(stderr, "kvbench: %s: no request in the window (its timestamps run from %g to %g ms)\n",
			o.trace, t->req[0].ts_ms, t->req[t->nr - 1].ts_ms);
		usage(NULL);
	}
	for (c = 0; c < KVT_NR_CLASSES; c++)
		tr.st.blocks[c] = st->blocks[c] - before.blocks[c];
	tr.st.mem_evictions = st->mem_evictions - before.mem_evictions;
	tr.st.ssd_evictions = st->ssd_evictions - before.ssd_evictions;
	tr.window_ns = o.duration_ms < 0 ? tr.req[tr.nr - 1].at_ns :
		replay_ns(o.duration_ms);
	tr.recall_depth = MAX_DEPTH - o.qd[R_FOREIGN] - o.qd[R_PREFETCH] -
		o.qd[R_WRITE];
	trace_solo_sizes();
	kvt_tier_free(tier);
	free(slot);
	free(cls);
}

/* A request's prefill is done: its new blocks are due to be written. */
static void trace_offload(size_t i)
{
	if (tr.req[i].nr_new)
		tr.wq[tr.wq_tail++] = i;
}

/* What a replay measured. */
struct replay {
	struct samples comp, slow;	/* recall completion (ns), slowdown */
	uint64_t start, end, done;	/* start, window's end, last recall */
	bool ended;
	/* At the window's end: I/O completed, offload writes owed. */
	uint64_t ios[NR_ROLES];
	uint64_t owed, backlog, backlog_inflight;
};

/*
 * Each request of the window arrives at its time; its recall (if any)
 * is one batch with one tag, and when its last read completes, or at
 * arrival when it recalls nothing, its new blocks are queued for
 * offload. Background foreign and prefetch readers run until the
 * window's end; then the open recalls are waited for.
 */
static void replay(struct bench *b, const double *solo_ns, struct replay *res)
{
	size_t next = 0, open = 0;
	uint64_t t;

	res->start = now_ns();
	tr.end_ns = res->start + tr.window_ns;
	refill(b, res->start);
	for (;;) {
		struct io_uring_cqe *cqe;
		uint64_t due;
		struct batch *done;

		t = now_ns();
		while (next < tr.nr && t >= res->start + tr.req[next].at_ns) {
			struct treq *q = &tr.req[next];

			tr.owed += (uint64_t)q->nr_new * tr.chunks;
			if (q->nr_recall) {
				struct batch *bt = new_batch();

				bt->stream = -1;
				bt->treq = next;
				bt->slots = q->slots;
				bt->size = q->nr_recall * tr.chunks;
				submit_batch(b, bt, res->start + q->at_ns);
				open++;
			} else {
				trace_offload(next);
			}
			next++;
		}
		if (t >= tr.end_ns && !res->ended) {
			res->ended = true;
			res->end = t;
			memcpy(res->ios, b->ios, sizeof(res->ios));
			res->owed = tr.owed;
			res->backlog = tr.owed - b->ios[R_WRITE];
			res->backlog_inflight = b->inflight[R_WRITE];
		}
		if (res->ended) {
			if (!open)
				break;
		} else {
			refill(b, t);
		}
		pump(b, t);
		/* Wake for the next arrival, or the window's end. */
		due = next < tr.nr ? res->start + tr.req[next].at_ns : 0;
		if (!res->ended && (!due || tr.end_ns < due))
			due = tr.end_ns;
		if (!wait_cqe_until(b, t, due, &cqe))
			continue;
		do {
			t = now_ns();
			done = reap(b, cqe, t);
			if (done) {
				const struct treq *q = &tr.req[done->treq];
				uint64_t d = done->done_ns - done->submit_ns;
				double solo = trace_solo_ns(q->nr_recall, solo_ns);

				open--;
				samples_add(&res->comp, d);
				samples_add(&res->slow, (uint64_t)(1000.0 * d /
					    (solo > 1 ? solo : 1)));
				trace_offload(done->treq);
			}
		} while (io_uring_peek_cqe(&b->ring, &cqe) == 0);
	}
	res->done = t;
}

static double mib(uint64_t bytes)
{
	return bytes / 1048576.0;
}

static void report_trace(struct bench *b, const double *solo_ns,
			 struct replay *res)
{
	double secs = (res->end - res->start) / 1e9;
	double wmbps = secs > 0 ? res->ios[R_WRITE] * (double)o.bs / secs / 1e6 : 0;
	const char *model = o.model ? o.model : "custom";
	size_t i;

	if (o.json) {
		printf("{\n  \"device\": \"%s\", \"trace\": \"%s\", \"seconds\": %.3f, \"window_s\": %.3f, \"bs\": %u, \"seed\": %" PRIu64 ", \"errors\": %" PRIu64 ",\n",
		       o.dev, o.trace, (res->done - res->start) / 1e9, secs,
		       o.bs, o.seed, b->errors);
		print_json_depths();
		printf("  \"model\": {\"name\": \"%s\", \"bytes_per_token\": %u, \"block_tokens\": %u, \"block_bytes\": %" PRIu64 ", \"requests_per_block\": %u},\n",
		       model, o.bytes_per_token, o.block_tokens,
		       tr.block_bytes, tr.chunks);
		printf("  \"tier\": {\"mem_blocks\": %" PRIu64 ", \"ssd_slots\": %" PRIu64 "},\n",
		       o.mem_blocks, tr.nr_slots);
		printf("  \"window\": {\"from_ms\": %g, \"duration_ms\": ", o.from_ms);
		if (o.duration_ms < 0)
			printf("null");
		else
			printf("%g", o.duration_ms);
		printf(", \"speed\": %g},\n", o.speed);
		printf("  \"requests\": {\"replayed\": %zu, \"recalling\": %zu, \"warmup\": %zu},\n",
		       tr.nr, tr.recalling, tr.warmup);
		printf("  \"blocks\": {\"hit\": %" PRIu64 ", \"recall\": %" PRIu64 ", \"new\": %" PRIu64 ", \"mem_evictions\": %" PRIu64 ", \"ssd_evictions\": %" PRIu64 "},\n",
		       tr.st.blocks[KVT_HIT], tr.st.blocks[KVT_RECALL],
		       tr.st.blocks[KVT_NEW], tr.st.mem_evictions,
		       tr.st.ssd_evictions);
		print_json_cdf("recall_cdf_ms", &res->comp);
		printf("  \"recall_ms\": {\n");
		json_dist("all", &res->comp, 1e6, false);
		printf("  },\n  \"solo_ms\": {");
		for (i = 0; i < o.nr_sizes; i++)
			printf("%s\"blocks_%u\": %.4f", i ? ", " : "",
			       tr.solo_blocks[i], solo_ns[i] / 1e6);
		printf("},\n  \"slowdown\": {\n");
		json_dist("all", &res->slow, 1000, false);
		printf("  },\n");
		print_json_roles(b, res->ios, secs);
		printf(",\n  \"offload\": {\"requests\": %" PRIu64 ", \"done\": %" PRIu64 ", \"mbps\": %.2f, \"backlog\": {\"requests\": %" PRIu64 ", \"mib\": %.1f, \"in_flight\": %" PRIu64 "}}\n}\n",
		       res->owed, res->ios[R_WRITE], wmbps, res->backlog,
		       mib(res->backlog * o.bs), res->backlog_inflight);
		return;
	}
	printf("kvbench: %s, trace %s: %zu requests in the window, %zu with a recall (%zu before it warmed the tiers), %.1fs window at speed %g, bs %u, %" PRIu64 " errors\n",
	       o.dev, o.trace, tr.nr, tr.recalling, tr.warmup, secs, o.speed,
	       o.bs, b->errors);
	printf("  %s: %u bytes/token x %u tokens = %.2f MiB a block, %u requests; memory %" PRIu64 " blocks, SSD %" PRIu64 " slots\n",
	       model, o.bytes_per_token, o.block_tokens,
	       mib(tr.block_bytes), tr.chunks, o.mem_blocks, tr.nr_slots);
	printf("  blocks: %" PRIu64 " hit, %" PRIu64 " recalled, %" PRIu64 " new; evicted %" PRIu64 " from memory, %" PRIu64 " from the SSD\n",
	       tr.st.blocks[KVT_HIT], tr.st.blocks[KVT_RECALL],
	       tr.st.blocks[KVT_NEW], tr.st.mem_evictions, tr.st.ssd_evictions);
	print_ms_header("recall (ms)");
	print_ms_row("all", &res->comp, 1e6);
	print_ms_row("slowdown (x)", &res->slow, 1000);
	printf("  solo (ms):");
	for (i = 0; i < o.nr_sizes; i++)
		printf("%s %u block%s %.2f", i ? "," : "", tr.solo_blocks[i],
		       tr.solo_blocks[i] == 1 ? "" : "s", solo_ns[i] / 1e6);
	printf("%s\n", o.nr_sizes ? "" : " none (no recall)");
	print_roles(b, res->ios, secs, "throughput in the window:");
	printf("  offload writes: %" PRIu64 " requests owed, %" PRIu64 " done in the window (%.1f MB/s); backlog at its end %" PRIu64 " requests (%.1f MiB), %" PRIu64 " in flight\n",
	       res->owed, res->ios[R_WRITE], wmbps, res->backlog,
	       mib(res->backlog * o.bs), res->backlog_inflight);
}

/*
 * Submit a batch of the synthetic workloads, its size drawn from rng
 * among -s's, submitted at t: for the open-loop arrivals (stream -1,
 * the trace's generator) and for the closed-loop streams (their own).
 */
static void start_batch(struct bench *b, int stream, uint64_t *rng,
			uint64_t t)
{
	struct batch *bt = new_batch();

	bt->stream = stream;
	bt->size_idx = kv_rand64(rng) % o.nr_sizes;
	bt->size = o.sizes[bt->size_idx];
	submit_batch(b, bt, t);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "tag", required_argument, NULL, 'T' },
		{ "foreign", required_argument, NULL, 'F' },
		{ "prefetch", required_argument, NULL, 'P' },
		{ "write", required_argument, NULL, 'W' },
		{ "solo-runs", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'E' },
		{ "json", no_argument, NULL, 'J' },
		{ "kv", required_argument, NULL, 'K' },
		{ "streams", required_argument, NULL, 'N' },
		{ "think", required_argument, NULL, 'H' },
		{ "write-mode", required_argument, NULL, 'M' },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "bytes-per-token", required_argument, NULL, OPT_BPT },
		{ "block-tokens", required_argument, NULL, OPT_BLOCK_TOKENS },
		{ "mem-blocks", required_argument, NULL, OPT_MEM_BLOCKS },
		{ "speed", required_argument, NULL, OPT_SPEED },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "device", required_argument, NULL, 'd' },
		{ "time", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ "sizes", required_argument, NULL, 's' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct samples comp = { 0 }, slow = { 0 }, by_size[MAX_SIZES] = { 0 };
	double solo_ns[MAX_SIZES];
	struct stream streams[MAX_STREAMS];
	size_t i, open_batches = 0;
	uint64_t start, end, next_arrival, t;
	struct bench *b;
	int c;
	char *tok, *save, *kv_arg = NULL;
	/* Options of one mode only, to refuse them in the other. */
	const char *demand_opt = NULL, *trace_opt = NULL;
	bool model_set = false, write_set = false, sizes_set = false;
	bool think_set = false;
	struct kvt_trace trace = { 0 };
	struct replay res = { 0 };

	/* Its own messages, each one line before the usage. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:t:r:s:b:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(kvbench_help, stdout);
			return 0;
		case ':':
			fprintf(stderr, "kvbench: %s needs a value\n",
				argv[optind - 1]);
			usage(NULL);
			break;
		case '?':
			bad_option("kvbench", argv[optind - 1], optopt);
			usage(NULL);
			break;
		case 'd': o.dev = optarg; break;
		case 't': demand_opt = "-t/--time"; o.seconds = parse_double(optarg, "time", 0.1, 86400); break;
		case 'r': demand_opt = "-r/--rate"; o.rate = parse_double(optarg, "rate", 0, 100000); break;
		case 'b':
			o.bs = parse_num(optarg, "block size", 512, 4 << 20);
			if (o.bs % 512)
				usage("block size must be a multiple of 512");
			break;
		case 's':
			demand_opt = "-s/--sizes";
			sizes_set = true;
			o.nr_sizes = 0;
			check_list(optarg, "-s/--sizes lists sizes by commas, none empty");
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (o.nr_sizes == MAX_SIZES)
					usage("too many batch sizes");
				o.sizes[o.nr_sizes++] =
					parse_num(tok, "batch size", 1, 1024);
			}
			if (!o.nr_sizes)
				usage("no batch size");
			break;
		case 'T':
			o.tag = parse_name(optarg, tag_names, NR_TAG_MODES,
					   "--tag must be rt, be-hint, be or none");
			break;
		case 'F': o.qd[R_FOREIGN] = parse_num(optarg, "foreign depth", 0, 512); break;
		case 'P': o.qd[R_PREFETCH] = parse_num(optarg, "prefetch depth", 0, 512); break;
		case 'W':
			o.qd[R_WRITE] = parse_num(optarg, "write depth", 0, 512);
			write_set = true;
			break;
		case 'S': o.solo_runs = parse_num(optarg, "solo runs", 1, 1000); break;
		case 'E': o.seed = parse_num(optarg, "seed", 0, ~0UL); break;
		case 'J': o.json = true; break;
		case 'K': demand_opt = "--kv"; kv_arg = optarg; break;
		case 'N':
			demand_opt = "--streams";
			o.streams = parse_num(optarg, "streams", 0, MAX_STREAMS);
			break;
		case 'H':
			demand_opt = "--think";
			think_set = true;
			o.think_ms = parse_double(optarg, "think time", 0, 60000);
			break;
		case OPT_TRACE:
			o.trace = optarg;
			if (!*optarg)
				usage("--trace needs a file");
			break;
		case OPT_MODEL:
			trace_opt = "--model";
			model_set = true;
			o.model = optarg;
			break;
		case OPT_BPT:
			trace_opt = "--bytes-per-token";
			o.bytes_per_token = parse_num(optarg, "bytes per token",
						      1, 16 << 20);
			break;
		case OPT_BLOCK_TOKENS:
			trace_opt = "--block-tokens";
			o.block_tokens = parse_num(optarg, "tokens per block", 1,
						   1 << 20);
			break;
		case OPT_MEM_BLOCKS:
			trace_opt = "--mem-blocks";
			o.mem_blocks = parse_num(optarg, "memory blocks", 0,
						 1UL << 40);
			break;
		case OPT_SPEED:
			trace_opt = "--speed";
			o.speed = parse_double(optarg, "speed", 1e-6, 1e6);
			break;
		case OPT_FROM:
			trace_opt = "--from";
			o.from_ms = parse_double(optarg, "window start (ms)", 0,
						 1e12);
			break;
		case OPT_DURATION:
			trace_opt = "--duration";
			o.duration_ms = parse_double(optarg, "window length (ms)",
						     1e-3, 1e12);
			break;
		case 'M':
			o.write_mode = parse_name(optarg, write_mode_names,
						  NR_WRITE_MODES,
						  "--write-mode must be direct or buffered");
			break;
		default: usage(NULL);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "kvbench: unexpected argument '%s'\n",
			argv[optind]);
		usage(NULL);
	}
	if (!o.dev)
		usage("-d/--device DEV is required");
	if (o.trace) {
		if (demand_opt) {
			fprintf(stderr, "kvbench: %s does not go with --trace: the trace's requests are the demand\n",
				demand_opt);
			usage(NULL);
		}
		if (model_set && o.bytes_per_token)
			usage("--model and --bytes-per-token are alternatives");
		if (o.bytes_per_token)
			o.model = NULL;
		else
			o.bytes_per_token = model_bytes_per_token(o.model);
		/* The offload writes' depth. */
		if (!write_set)
			o.qd[R_WRITE] = 64;
		else if (!o.qd[R_WRITE])
			usage("with --trace, --write QD is the most offload writes outstanding (1..512)");
		/* A bad trace is refused before the device is opened. */
		trace_load(&trace);
	} else if (trace_opt) {
		fprintf(stderr, "kvbench: %s needs --trace\n", trace_opt);
		usage(NULL);
	} else {
		if (sizes_set && kv_arg)
			usage("-s/--sizes and --kv both give the batch sizes: use one");
		if (o.rate == 0 && !o.streams)
			usage("no demand: with -r/--rate 0, --streams N (1 or more) issues the batches");
		if (think_set && !o.streams)
			usage("--think is the streams' think time: it needs --streams");
	}
	/* After -b, which the KV model divides by. */
	if (kv_arg)
		parse_kv(kv_arg);
	rng_trace = o.seed * 0x9e3779b97f4a7c15ULL + 1;
	rng_io = o.seed * 0xbf58476d1ce4e5b9ULL + 7;

	b = calloc(1, sizeof(*b));
	if (!b)
		return 1;
	bench_setup(b);
	if (ioctl(b->fd, BLKGETSIZE64, &dev_bytes) < 0) {
		struct stat st;

		if (fstat(b->fd, &st) < 0)
			return 1;
		dev_bytes = st.st_size;
	}
	if (dev_bytes < 16ULL * o.bs)
		usage("device too small for the block size");

	if (o.trace) {
		trace_plan(&trace);
		kvt_trace_free(&trace);
		measure_solo(b, solo_ns);
		replay(b, solo_ns, &res);
		drain(b);
		report_trace(b, solo_ns, &res);
		return b->errors ? 1 : 0;
	}
	measure_solo(b, solo_ns);

	start = now_ns();
	end = start + (uint64_t)(o.seconds * 1e9);
	next_arrival = o.rate > 0 ?
		start + rnd_exp_ns(&rng_trace, 1 / o.rate) : ~0ULL;
	for (i = 0; i < o.streams; i++) {
		streams[i].rng = (o.seed + 1) * 0xd1b54a32d192ed03ULL + i * 0x94d049bb133111ebULL + 1;
		/* Spread the streams' first batches over one think time. */
		streams[i].next_ns = start + (o.think_ms > 0 ?
			(uint64_t)(kv_rand_unit(&streams[i].rng) * o.think_ms * 1e6) : 0);
	}
	refill(b, start);
	for (;;) {
		struct io_uring_cqe *cqe;
		uint64_t next;
		struct batch *done;

		t = now_ns();
		while (t >= next_arrival && next_arrival < end) {
			start_batch(b, -1, &rng_trace, next_arrival);
			open_batches++;
			next_arrival += rnd_exp_ns(&rng_trace, 1 / o.rate);
		}
		next = next_arrival;
		for (i = 0; i < o.streams; i++) {
			struct stream *st = &streams[i];

			if (st->next_ns <= t && st->next_ns < end) {
				start_batch(b, i, &st->rng, t);
				open_batches++;
				st->next_ns = ~0ULL;
			}
			if (st->next_ns < next)
				next = st->next_ns;
		}
		if (t >= end) {
			if (!open_batches)
				break;
		} else {
			refill(b, t);
		}
		if (!wait_cqe_until(b, t, next < end ? next : 0, &cqe))
			continue;
		do {
			t = now_ns();
			done = reap(b, cqe, t);
			if (done) {
				uint64_t d = done->done_ns - done->submit_ns;

				open_batches--;
				samples_add(&comp, d);
				samples_add(&by_size[done->size_idx], d);
				samples_add(&slow, (uint64_t)(1000.0 * d /
					    solo_ns[done->size_idx]));
				if (done->stream >= 0) {
					struct stream *st = &streams[done->stream];

					st->next_ns = t + (o.think_ms > 0 ?
						rnd_exp_ns(&st->rng, o.think_ms / 1e3) : 0);
				}
			}
		} while (io_uring_peek_cqe(&b->ring, &cqe) == 0);
	}
	t = now_ns();
	drain(b);

	if (o.json) {
		double secs = (t - start) / 1e9;

		printf("{\n  \"device\": \"%s\", \"seconds\": %.3f, \"rate\": %g, \"streams\": %u, \"think_ms\": %g, \"bs\": %u, \"seed\": %" PRIu64 ", \"errors\": %" PRIu64 ",\n",
		       o.dev, secs, o.rate, o.streams, o.think_ms, o.bs,
		       o.seed, b->errors);
		print_json_depths();
		printf("  \"sizes\": [");
		for (i = 0; i < o.nr_sizes; i++)
			printf("%s%u", i ? ", " : "", o.sizes[i]);
		printf("],\n");
		if (o.kv_bpt) {
			printf("  \"kv\": {\"bytes_per_token\": %u, \"tokens\": [",
			       o.kv_bpt);
			for (i = 0; i < o.nr_sizes; i++)
				printf("%s%u", i ? ", " : "", o.kv_tokens[i]);
			printf("]},\n");
		}
		print_json_cdf("batch_cdf_ms", &comp);
		printf("  \"batch_ms\": {\n");
		json_dist("all", &comp, 1e6, o.nr_sizes > 0);
		for (i = 0; i < o.nr_sizes; i++) {
			char name[32];

			snprintf(name, sizeof(name), "size_%u", o.sizes[i]);
			json_dist(name, &by_size[i], 1e6, i + 1 < o.nr_sizes);
		}
		printf("  },\n  \"solo_ms\": {");
		for (i = 0; i < o.nr_sizes; i++)
			printf("%s\"size_%u\": %.4f", i ? ", " : "", o.sizes[i],
			       solo_ns[i] / 1e6);
		printf("},\n  \"slowdown\": {\n");
		json_dist("all", &slow, 1000, false);
		printf("  },\n");
		print_json_roles(b, b->ios, secs);
		printf("\n}\n");
	} else {
		double secs = (t - start) / 1e9;

		printf("kvbench: %s, %.1fs, %g batches/s + %u streams (think %g ms), bs %u, %zu batches, %" PRIu64 " errors\n",
		       o.dev, secs, o.rate, o.streams, o.think_ms, o.bs,
		       comp.n, b->errors);
		print_ms_header("batch (ms)");
		print_ms_row("all", &comp, 1e6);
		for (i = 0; i < o.nr_sizes; i++) {
			char name[32];

			snprintf(name, sizeof(name), "size %u (solo %.2f)",
				 o.sizes[i], solo_ns[i] / 1e6);
			print_ms_row(name, &by_size[i], 1e6);
		}
		print_ms_row("slowdown (x)", &slow, 1000);
		print_roles(b, b->ios, secs, "throughput:");
	}
	return b->errors ? 1 : 0;
}
