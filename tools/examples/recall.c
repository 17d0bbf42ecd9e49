// SPDX-License-Identifier: GPL-2.0
/*
 * recall - the smallest KV-cache recall an engine would issue: one batch of
 * reads submitted together through io_uring, every read carrying the same
 * tag (kvbatch/kvbatch.h: the tier's I/O priority class, the batch id as
 * the ioprio hint), and the time until the last one completes.
 *
 *   recall [-t demand|group|prefetch] DEV BATCH_ID NREADS [BLOCK_SIZE]
 *   recall --help
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kvbatch/kvbatch.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define USAGE "usage: recall [-t demand|group|prefetch] DEV BATCH_ID(8..1023) NREADS(1..256) [BLOCK_SIZE]\n"

static void usage(const char *msg, const char *arg)
{
	if (msg)
		fprintf(stderr, "recall: %s: '%s'\n", msg, arg);
	fputs(USAGE, stderr);
	exit(2);
}

/* @s as a plain decimal in lo..hi, else the usage. */
static unsigned int parse_arg(const char *s, unsigned long lo,
			      unsigned long hi, const char *what)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		usage(what, s);
	v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi)
		usage(what, s);
	return v;
}

static const char *const tier_names[] = {
	[KVBATCH_DEMAND] = "demand",
	[KVBATCH_GROUP] = "group",
	[KVBATCH_PREFETCH] = "prefetch",
};

int main(int argc, char **argv)
{
	enum kvbatch_tier tier = KVBATCH_DEMAND;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	unsigned int n, bs = 65536, id, i;
	double start;
	char *buf;
	int fd, tag, a = 1;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (strcmp(argv[i], "--help") && strcmp(argv[i], "-h"))
			continue;
		fputs(USAGE "\n"
		      "Read NREADS blocks of BLOCK_SIZE bytes (4096..1048576, a multiple\n"
		      "of 4096; default 65536) from DEV in one io_uring submission,\n"
		      "every read tagged as batch BATCH_ID of the tier (default demand,\n"
		      "which needs CAP_SYS_NICE or CAP_SYS_ADMIN; group needs no\n"
		      "privilege), and print the time until the last one completed.\n",
		      stdout);
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "-t") || !strcmp(argv[1], "--tier"))) {
		if (argc < 3)
			usage("no tier after", argv[1]);
		for (tier = 0; tier < 3; tier++)
			if (!strcmp(argv[2], tier_names[tier]))
				break;
		if (tier == 3)
			usage("TIER is demand, group or prefetch", argv[2]);
		a = 3;
	}
	/* No other option: a word that looks like one is a mistake. */
	for (i = a; i < (unsigned int)argc; i++)
		if (argv[i][0] == '-' && argv[i][1] &&
		    (argv[i][1] < '0' || argv[i][1] > '9'))
			usage("no such option", argv[i]);
	if (argc - a < 3 || argc - a > 4)
		usage(NULL, NULL);
	id = parse_arg(argv[a + 1], KVBATCH_ID_MIN, KVBATCH_ID_MAX,
		       "BATCH_ID is 8..1023");
	n = parse_arg(argv[a + 2], 1, 256, "NREADS is 1..256");
	if (argc - a == 4)
		bs = parse_arg(argv[a + 3], 4096, 1 << 20,
			       "BLOCK_SIZE is 4096..1048576, a multiple of 4096");
	if (bs % 4096)
		usage("BLOCK_SIZE is 4096..1048576, a multiple of 4096",
		      argv[a + 3]);
	tag = kvbatch_tag(tier, id);
	fd = open(argv[a], O_RDONLY | O_DIRECT);
	if (fd < 0 || io_uring_queue_init(n, &ring, 0) < 0 ||
	    posix_memalign((void **)&buf, 4096, (size_t)n * bs)) {
		perror("recall");
		return 1;
	}

	/* One recall batch: n reads, one tag, submitted together. */
	start = now_ms();
	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, fd, buf + (size_t)i * bs, bs,
				   (off_t)i * bs);
		KVBATCH_SQE_SET(sqe, tag);
	}
	io_uring_submit(&ring);

	for (i = 0; i < n; i++) {
		if (io_uring_wait_cqe(&ring, &cqe) < 0)
			return 1;
		if (cqe->res == -EPERM) {
			fprintf(stderr, "recall: the %s tier's I/O priority class needs CAP_SYS_NICE or CAP_SYS_ADMIN\n",
				tier_names[tier]);
			return 1;
		}
		if (cqe->res != (int)bs) {
			fprintf(stderr, "recall: read failed: %s\n",
				cqe->res < 0 ? strerror(-cqe->res) : "short");
			return 1;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	printf("recall: %u reads of %u bytes, %s batch %u, tag 0x%x, last completed after %.2f ms\n",
	       n, bs, tier_names[tier], id, tag, now_ms() - start);
	return 0;
}
