// SPDX-License-Identifier: GPL-2.0
/*
 * kvb_seqio - write a run of blocks in a chosen order with one block per
 * io_uring submission, or verify such a run. It exists because fio cannot
 * issue strictly descending sequential writes, which are what exercises an
 * elevator's front merges: each bio ends where a queued request starts.
 *
 *   kvb_seqio write  -d DEV -o OFFSET -n BLOCKS [-b BS] [-q DEPTH] [-r] [-s SEED]
 *   kvb_seqio verify -d DEV -o OFFSET -n BLOCKS [-b BS] [-q DEPTH] [-s SEED]
 *
 * Every 8-byte word of block i holds a value derived from SEED, the block's
 * byte offset and the word index, so a block that lands in the wrong place,
 * is lost or is torn is reported by verify. All I/O is O_DIRECT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct opts {
	const char *dev;
	uint64_t offset;
	uint64_t blocks;
	unsigned int bs;
	unsigned int depth;
	bool reverse;
	bool write;
	uint64_t seed;
};

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvb_seqio: %s\n", msg);
	fprintf(stderr,
		"usage: kvb_seqio write|verify -d DEV -o OFFSET -n BLOCKS [-b BS] [-q DEPTH] [-r] [-s SEED]\n");
	exit(2);
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	/* Digits from the first byte: strtoull() skips blanks and takes a sign. */
	if (errno || end == s || *end || s[0] < '0' || s[0] > '9') {
		fprintf(stderr, "kvb_seqio: bad %s '%s'\n", what, s);
		usage(NULL);
	}
	return v;
}

static uint64_t word_value(uint64_t seed, uint64_t off, uint64_t w)
{
	uint64_t x = seed ^ (off * 0x9e3779b97f4a7c15ULL) ^ (w + 1);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

static void fill(uint64_t *buf, const struct opts *o, uint64_t off)
{
	uint64_t w;

	for (w = 0; w < o->bs / 8; w++)
		buf[w] = word_value(o->seed, off, w);
}

static bool check(const uint64_t *buf, const struct opts *o, uint64_t off)
{
	uint64_t w;

	for (w = 0; w < o->bs / 8; w++) {
		if (buf[w] != word_value(o->seed, off, w)) {
			fprintf(stderr,
				"kvb_seqio: mismatch at byte %" PRIu64 " word %" PRIu64 "\n",
				off, w);
			return false;
		}
	}
	return true;
}

int main(int argc, char **argv)
{
	struct opts o = { .bs = 4096, .depth = 32, .seed = 1 };
	struct io_uring ring;
	uint64_t next = 0, done = 0, bad = 0, v;
	unsigned int inflight = 0, i;
	uint64_t *slots_off;
	char *bufs;
	int fd, c, ret;

	if (argc < 2)
		usage(NULL);
	if (!strcmp(argv[1], "write"))
		o.write = true;
	else if (strcmp(argv[1], "verify"))
		usage("the first argument must be write or verify");
	optind = 2;
	while ((c = getopt(argc, argv, "d:o:n:b:q:rs:")) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'o': o.offset = parse_u64(optarg, "offset"); break;
		case 'n': o.blocks = parse_u64(optarg, "block count"); break;
		case 'b':
			v = parse_u64(optarg, "block size");
			if (v > 1 << 20)
				usage("block size must be at most 1 MiB");
			o.bs = v;
			break;
		case 'q':
			v = parse_u64(optarg, "depth");
			if (v > 1024)
				usage("depth must be 1..1024");
			o.depth = v;
			break;
		case 'r': o.reverse = true; break;
		case 's': o.seed = parse_u64(optarg, "seed"); break;
		default: usage(NULL);
		}
	}
	if (optind != argc)
		usage("unexpected argument");
	if (!o.dev || !o.blocks)
		usage("-d and -n are required");
	if (o.bs < 512 || o.bs % 512 || o.offset % 512)
		usage("block size and offset must be multiples of 512");
	if (o.depth < 1 || o.depth > 1024)
		usage("depth must be 1..1024");

	fd = open(o.dev, (o.write ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		perror(o.dev);
		return 1;
	}
	ret = io_uring_queue_init(o.depth, &ring, 0);
	if (ret < 0) {
		fprintf(stderr, "kvb_seqio: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	if (posix_memalign((void **)&bufs, 4096, (size_t)o.bs * o.depth))
		return 1;
	slots_off = calloc(o.depth, sizeof(*slots_off));
	if (!slots_off)
		return 1;

	while (done < o.blocks) {
		struct io_uring_cqe *cqe;

		/* One block per submission: each becomes its own bio. */
		while (inflight < o.depth && next < o.blocks) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			uint64_t blk = o.reverse ? o.blocks - 1 - next : next;
			uint64_t off = o.offset + blk * o.bs;
			unsigned int slot;
			char *buf;

			for (slot = 0; slot < o.depth; slot++)
				if (!slots_off[slot])
					break;
			buf = bufs + (size_t)slot * o.bs;
			slots_off[slot] = off + 1;
			if (o.write) {
				fill((uint64_t *)buf, &o, off);
				io_uring_prep_write(sqe, fd, buf, o.bs, off);
			} else {
				io_uring_prep_read(sqe, fd, buf, o.bs, off);
			}
			io_uring_sqe_set_data64(sqe, slot);
			ret = io_uring_submit(&ring);
			if (ret != 1) {
				fprintf(stderr, "kvb_seqio: submit: %s\n", strerror(-ret));
				return 1;
			}
			inflight++;
			next++;
		}
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret < 0) {
			fprintf(stderr, "kvb_seqio: wait: %s\n", strerror(-ret));
			return 1;
		}
		i = io_uring_cqe_get_data64(cqe);
		if (cqe->res != (int)o.bs) {
			fprintf(stderr, "kvb_seqio: I/O at %" PRIu64 " returned %d\n",
				slots_off[i] - 1, cqe->res);
			bad++;
		} else if (!o.write &&
			   !check((uint64_t *)(bufs + (size_t)i * o.bs), &o,
				  slots_off[i] - 1)) {
			bad++;
		}
		slots_off[i] = 0;
		io_uring_cqe_seen(&ring, cqe);
		inflight--;
		done++;
	}

	io_uring_queue_exit(&ring);
	close(fd);
	printf("kvb_seqio: %s %" PRIu64 " blocks of %u bytes%s: %" PRIu64 " bad\n",
	       o.write ? "wrote" : "verified", o.blocks, o.bs,
	       o.reverse ? " (descending)" : "", bad);
	return bad ? 1 : 0;
}
