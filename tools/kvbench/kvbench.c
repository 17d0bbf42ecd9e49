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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/fs.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* tools/include, found from this file's directory. */
#include "../include/kv-ioprio.h"
#include "../include/kv-rand.h"

#define MAX_SIZES	16
#define MAX_DEPTH	16384

enum role { R_DEMAND, R_FOREIGN, R_PREFETCH, R_WRITE, NR_ROLES };
static const char *const role_names[NR_ROLES] = {
	"demand", "foreign", "prefetch", "write",
};

enum tag_mode { TAG_BE_HINT, TAG_RT, TAG_BE, TAG_NONE };
enum write_mode { WRITE_DIRECT, WRITE_BUFFERED };

#define MAX_STREAMS	1024
#define CDF_POINTS	200	/* batch completion CDF: 0.5% steps */

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
};

struct batch {
	uint64_t submit_ns;
	uint64_t done_ns;
	unsigned int size;
	unsigned int left;
	unsigned int size_idx;
	int stream;		/* closed-loop stream, or -1 */
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
	char *buf;
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
	.seconds = 10, .rate = 20, .bs = 65536, .tag = TAG_BE_HINT,
	.solo_runs = 5, .seed = 1,
	.sizes = { 4, 8, 16, 32 }, .nr_sizes = 4,
};

/*
 * Two random streams: one for the demand trace (arrival times, batch
 * sizes), one for offsets. The trace must not depend on how many
 * background requests completed, so every scheduler sees the same one.
 */
static uint64_t rng_trace, rng_io;
static uint64_t dev_bytes;

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvbench: %s\n", msg);
	fprintf(stderr,
		"usage: kvbench -d DEV [-t SECONDS] [-r BATCHES_PER_S] [-s SIZE,SIZE,...]\n"
		"               [--kv TOKENS,...:BYTES_PER_TOKEN] [--streams N] [--think MS]\n"
		"               [-b BLOCK_SIZE] [--tag be-hint|rt|be|none]\n"
		"               [--foreign QD] [--prefetch QD] [--write QD]\n"
		"               [--write-mode direct|buffered] [--solo-runs N] [--seed N] [--json]\n");
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

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		fprintf(stderr, "kvbench: bad %s '%s' (%lu..%lu)\n", what, s,
			lo, hi);
		usage(NULL);
	}
	return v;
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
	struct req *r;

	if (!b->nr_free) {
		fprintf(stderr, "kvbench: more than %d requests outstanding\n",
			MAX_DEPTH);
		exit(1);
	}
	r = b->free[--b->nr_free];
	if (!r->buf) {
		if (posix_memalign((void **)&r->buf, 4096, o.bs)) {
			perror("posix_memalign");
			exit(1);
		}
		memset(r->buf, 0x5a, o.bs);
	}
	return r;
}

/* Regions: demand and background reads use the first 3/4, writes the rest. */
static uint64_t read_offset(void)
{
	uint64_t blocks = dev_bytes / 4 * 3 / o.bs;

	return (rnd() % blocks) * o.bs;
}

static void prep(struct bench *b, enum role role, struct batch *batch,
		 uint16_t ioprio, uint64_t t)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	struct req *r = get_req(b);
	uint64_t off;

	if (!sqe) {
		io_uring_submit(&b->ring);
		sqe = io_uring_get_sqe(&b->ring);
	}
	r->role = role;
	r->stage = STAGE_IO;
	r->batch = batch;
	r->submit_ns = t;
	r->busy = true;
	if (role == R_WRITE) {
		uint64_t base = dev_bytes / 4 * 3;
		uint64_t span = dev_bytes - base;

		off = base + b->write_pos % (span / o.bs * o.bs);
		b->write_pos += o.bs;
		io_uring_prep_write(sqe, o.write_mode == WRITE_BUFFERED ?
				    b->wfd : b->fd, r->buf, o.bs, off);
	} else {
		off = read_offset();
		io_uring_prep_read(sqe, b->fd, r->buf, o.bs, off);
	}
	r->off = off;
	sqe->ioprio = ioprio;
	io_uring_sqe_set_data(sqe, r);
	b->inflight[role]++;
}

static uint16_t demand_prio(struct bench *b)
{
	/* A distinct hint per batch, so each is its own batch stream. */
	unsigned int hint = 1 + (b->next_hint++ % KV_IOPRIO_HINT_MAX);

	switch (o.tag) {
	case TAG_RT:
		return KV_IOPRIO(KV_IOPRIO_CLASS_RT, hint, 0);
	case TAG_BE:
		return KV_IOPRIO(KV_IOPRIO_CLASS_BE, 0, 0);
	case TAG_NONE:
		return 0;
	default:
		return KV_IOPRIO(KV_IOPRIO_CLASS_BE, hint, 0);
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

static void submit_batch(struct bench *b, struct batch *batch, uint64_t t)
{
	uint16_t prio = demand_prio(b);
	unsigned int i;

	batch->submit_ns = t;
	batch->left = batch->size;
	for (i = 0; i < batch->size; i++)
		prep(b, R_DEMAND, batch, prio, t);
	io_uring_submit(&b->ring);
}

static void refill(struct bench *b, uint64_t t)
{
	int role;
	bool any = false;

	for (role = R_FOREIGN; role < NR_ROLES; role++)
		while (b->inflight[role] < o.qd[role]) {
			prep(b, role, NULL, role_prio(role), t);
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
	ret = io_uring_queue_init(MAX_DEPTH, &b->ring, 0);
	if (ret < 0) {
		fprintf(stderr, "kvbench: io_uring: %s\n", strerror(-ret));
		exit(1);
	}
	/* Buffers are allocated on first use: memory follows the peak depth. */
	for (i = MAX_DEPTH; i-- > 0; )
		b->free[b->nr_free++] = &b->reqs[i];
}

/* Median completion of solo batches of each size on the idle device. */
static void measure_solo(struct bench *b, double *solo_ns)
{
	unsigned int s, k;

	for (s = 0; s < o.nr_sizes; s++) {
		struct samples sm = { 0 };

		for (k = 0; k < o.solo_runs; k++) {
			struct batch batch = { .size = o.sizes[s] };
			struct io_uring_cqe *cqe;

			submit_batch(b, &batch, now_ns());
			while (batch.left) {
				if (io_uring_wait_cqe(&b->ring, &cqe) < 0)
					exit(1);
				reap(b, cqe, now_ns());
			}
			samples_add(&sm, batch.done_ns - batch.submit_ns);
		}
		solo_ns[s] = (double)pct(&sm, 50);
		free(sm.v);
	}
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct samples comp = { 0 }, slow = { 0 }, by_size[MAX_SIZES] = { 0 };
	double solo_ns[MAX_SIZES];
	struct stream streams[MAX_STREAMS];
	size_t i, open_batches = 0;
	uint64_t start, end, next_arrival, t;
	struct bench *b;
	int c, role;
	char *tok, *save, *kv_arg = NULL;

	while ((c = getopt_long(argc, argv, "d:t:r:s:b:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 't': o.seconds = parse_double(optarg, "time", 0.1, 86400); break;
		case 'r': o.rate = parse_double(optarg, "rate", 0, 100000); break;
		case 'b':
			o.bs = parse_num(optarg, "block size", 512, 4 << 20);
			if (o.bs % 512)
				usage("block size must be a multiple of 512");
			break;
		case 's':
			o.nr_sizes = 0;
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
			if (!strcmp(optarg, "be-hint"))
				o.tag = TAG_BE_HINT;
			else if (!strcmp(optarg, "rt"))
				o.tag = TAG_RT;
			else if (!strcmp(optarg, "be"))
				o.tag = TAG_BE;
			else if (!strcmp(optarg, "none"))
				o.tag = TAG_NONE;
			else
				usage("--tag must be be-hint, rt, be or none");
			break;
		case 'F': o.qd[R_FOREIGN] = parse_num(optarg, "foreign depth", 0, 512); break;
		case 'P': o.qd[R_PREFETCH] = parse_num(optarg, "prefetch depth", 0, 512); break;
		case 'W': o.qd[R_WRITE] = parse_num(optarg, "write depth", 0, 512); break;
		case 'S': o.solo_runs = parse_num(optarg, "solo runs", 1, 1000); break;
		case 'E': o.seed = parse_num(optarg, "seed", 0, ~0UL); break;
		case 'J': o.json = true; break;
		case 'K': kv_arg = optarg; break;
		case 'N': o.streams = parse_num(optarg, "streams", 0, MAX_STREAMS); break;
		case 'H': o.think_ms = parse_double(optarg, "think time", 0, 60000); break;
		case 'M':
			if (!strcmp(optarg, "direct"))
				o.write_mode = WRITE_DIRECT;
			else if (!strcmp(optarg, "buffered"))
				o.write_mode = WRITE_BUFFERED;
			else
				usage("--write-mode must be direct or buffered");
			break;
		default: usage(NULL);
		}
	}
	if (optind != argc)
		usage("unexpected argument");
	if (!o.dev)
		usage("-d DEV is required");
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
		struct __kernel_timespec ts;
		uint64_t wait, next;
		struct batch *done;

		t = now_ns();
		while (t >= next_arrival && next_arrival < end) {
			struct batch *bt = new_batch();

			bt->stream = -1;
			bt->size_idx = kv_rand64(&rng_trace) % o.nr_sizes;
			bt->size = o.sizes[bt->size_idx];
			submit_batch(b, bt, next_arrival);
			open_batches++;
			next_arrival += rnd_exp_ns(&rng_trace, 1 / o.rate);
		}
		next = next_arrival;
		for (i = 0; i < o.streams; i++) {
			struct stream *st = &streams[i];

			if (st->next_ns <= t && st->next_ns < end) {
				struct batch *bt = new_batch();

				bt->stream = i;
				bt->size_idx = kv_rand64(&st->rng) % o.nr_sizes;
				bt->size = o.sizes[bt->size_idx];
				submit_batch(b, bt, t);
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
		wait = next < end && next > t ? next - t : 1000000;
		ts.tv_sec = wait / 1000000000ULL;
		ts.tv_nsec = wait % 1000000000ULL;
		if (io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts) < 0)
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
	/* Drain the background requests still outstanding. */
	while (b->inflight[R_FOREIGN] + b->inflight[R_PREFETCH] +
	       b->inflight[R_WRITE]) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&b->ring, &cqe) < 0)
			break;
		reap(b, cqe, now_ns());
	}

	if (o.json) {
		double secs = (t - start) / 1e9;

		printf("{\n  \"device\": \"%s\", \"seconds\": %.3f, \"rate\": %g, \"streams\": %u, \"think_ms\": %g, \"bs\": %u, \"seed\": %" PRIu64 ", \"errors\": %" PRIu64 ",\n",
		       o.dev, secs, o.rate, o.streams, o.think_ms, o.bs,
		       o.seed, b->errors);
		printf("  \"write_mode\": \"%s\", \"depth\": {\"foreign\": %u, \"prefetch\": %u, \"write\": %u},\n",
		       o.write_mode == WRITE_BUFFERED ? "buffered" : "direct",
		       o.qd[R_FOREIGN], o.qd[R_PREFETCH], o.qd[R_WRITE]);
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
		/* Quantiles of batch completion, for CDF plots. */
		printf("  \"batch_cdf_ms\": [");
		for (i = 0; i <= CDF_POINTS; i++)
			printf("%s%.4f", i ? ", " : "",
			       pct(&comp, 100.0 * i / CDF_POINTS) / 1e6);
		printf("],\n");
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
		printf("  },\n  \"request_ms\": {\n");
		for (role = 0; role < NR_ROLES; role++)
			json_dist(role_names[role], &b->lat[role], 1e6,
				  role + 1 < NR_ROLES);
		printf("  },\n  \"iops\": {");
		for (role = 0; role < NR_ROLES; role++)
			printf("%s\"%s\": %.1f", role ? ", " : "",
			       role_names[role], b->ios[role] / secs);
		printf("},\n  \"mbps\": {");
		for (role = 0; role < NR_ROLES; role++)
			printf("%s\"%s\": %.2f", role ? ", " : "",
			       role_names[role],
			       b->ios[role] * (double)o.bs / secs / 1e6);
		printf("}\n}\n");
	} else {
		double secs = (t - start) / 1e9;

		printf("kvbench: %s, %.1fs, %g batches/s + %u streams (think %g ms), bs %u, %zu batches, %" PRIu64 " errors\n",
		       o.dev, secs, o.rate, o.streams, o.think_ms, o.bs,
		       comp.n, b->errors);
		printf("  %-20s %7s %9s %9s %9s %9s %9s %9s\n", "batch (ms)", "n",
		       "mean", "p50", "p90", "p99", "p99.9", "max");
		print_ms_row("all", &comp, 1e6);
		for (i = 0; i < o.nr_sizes; i++) {
			char name[32];

			snprintf(name, sizeof(name), "size %u (solo %.2f)",
				 o.sizes[i], solo_ns[i] / 1e6);
			print_ms_row(name, &by_size[i], 1e6);
		}
		print_ms_row("slowdown (x)", &slow, 1000);
		printf("  %-20s %7s %9s %9s %9s %9s %9s %9s\n", "request (ms)",
		       "n", "mean", "p50", "p90", "p99", "p99.9", "max");
		for (role = 0; role < NR_ROLES; role++)
			print_ms_row(role_names[role], &b->lat[role], 1e6);
		printf("  throughput:");
		for (role = 0; role < NR_ROLES; role++)
			printf(" %s %.0f IOPS %.1f MB/s%s", role_names[role],
			       b->ios[role] / secs,
			       b->ios[role] * (double)o.bs / secs / 1e6,
			       role + 1 < NR_ROLES ? "," : "\n");
	}
	return b->errors ? 1 : 0;
}
