// SPDX-License-Identifier: GPL-2.0
/*
 * kvb_uring_mix - submit discards and writes to a block device together,
 * in one io_uring submission, and wait for all of them.
 *
 *   kvb_uring_mix -d DEV [-p BYTE] OP:OFFSET:LENGTH...
 *
 * OP is d (a discard, the block device's BLOCK_URING_CMD_DISCARD, Linux
 * 6.12 and later) or w (an O_DIRECT write of LENGTH bytes of BYTE,
 * default 0x5a); OFFSET and LENGTH are in bytes. One io_uring_enter()
 * submits every operation, so the block layer builds their requests
 * under one plug and hands them to the elevator in one insert: a write
 * between two discards keeps the second discard's bio from merging into
 * the first's request in the plug, so the two requests meet at insert.
 * Prints each operation with its result; exits 0 if all succeeded, 1 if
 * one failed, 2 on bad arguments or setup errors, 4 if the kernel has no
 * io_uring discard command (-EOPNOTSUPP: the caller skips).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <liburing.h>
#include <linux/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BLOCK_URING_CMD_DISCARD
#define BLOCK_URING_CMD_DISCARD	_IO(0x12, 0)
#endif

#define MAX_OPS	64

struct op {
	char kind;
	uint64_t off;
	uint64_t len;
	int res;
};

static void usage(const char *msg)
{
	if (msg)
		fprintf(stderr, "kvb_uring_mix: %s\n", msg);
	fprintf(stderr,
		"usage: kvb_uring_mix -d DEV [-p BYTE] OP:OFFSET:LENGTH... (OP d or w)\n");
	exit(2);
}

static uint64_t parse_u64(const char *s, char **end, const char *what)
{
	uint64_t v;

	if (*s < '0' || *s > '9')
		usage(what);
	errno = 0;
	v = strtoull(s, end, 0);
	if (errno)
		usage(what);
	return v;
}

static void parse_op(const char *arg, struct op *op)
{
	char *end;

	if ((arg[0] != 'd' && arg[0] != 'w') || arg[1] != ':')
		usage("an operation is d:OFFSET:LENGTH or w:OFFSET:LENGTH");
	op->kind = arg[0];
	op->off = parse_u64(arg + 2, &end, "bad OFFSET");
	if (*end != ':')
		usage("an operation is d:OFFSET:LENGTH or w:OFFSET:LENGTH");
	op->len = parse_u64(end + 1, &end, "bad LENGTH");
	if (*end || !op->len || op->len % 4096 || op->off % 4096)
		usage("OFFSET and LENGTH must be multiples of 4096, LENGTH > 0");
	if (op->kind == 'w' && op->len > (1 << 20))
		usage("a write is at most 1 MiB");
}

int main(int argc, char **argv)
{
	struct op ops[MAX_OPS];
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	const char *dev = NULL;
	unsigned int nops = 0, i;
	int byte = 0x5a, opt, fd, ret, rc = 0;
	char *end;
	void *buf;

	while ((opt = getopt(argc, argv, "d:p:")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'p':
			if (parse_u64(optarg, &end, "bad BYTE") > 255 || *end)
				usage("BYTE is 0 to 255");
			byte = (int)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(NULL);
		}
	}
	if (!dev)
		usage("no device (-d)");
	if (optind == argc)
		usage("no operation");
	if (argc - optind > MAX_OPS)
		usage("at most 64 operations");
	for (i = optind; i < (unsigned int)argc; i++)
		parse_op(argv[i], &ops[nops++]);

	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "kvb_uring_mix: %s: %s\n", dev, strerror(errno));
		return 2;
	}
	if (posix_memalign(&buf, 4096, 1 << 20)) {
		fprintf(stderr, "kvb_uring_mix: out of memory\n");
		return 2;
	}
	memset(buf, byte, 1 << 20);
	ret = io_uring_queue_init(MAX_OPS, &ring, 0);
	if (ret) {
		fprintf(stderr, "kvb_uring_mix: io_uring: %s\n", strerror(-ret));
		return 2;
	}

	for (i = 0; i < nops; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		if (ops[i].kind == 'w') {
			io_uring_prep_write(sqe, fd, buf, ops[i].len,
					    ops[i].off);
		} else {
			/* off is cmd_op and the pad after it: both set. */
			io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0,
					 0);
			sqe->cmd_op = BLOCK_URING_CMD_DISCARD;
			sqe->addr = ops[i].off;
			sqe->addr3 = ops[i].len;
		}
		io_uring_sqe_set_data64(sqe, i);
	}
	/* One io_uring_enter(): one plug around every operation's bios. */
	ret = io_uring_submit(&ring);
	if (ret != (int)nops) {
		fprintf(stderr, "kvb_uring_mix: submitted %d of %u: %s\n", ret,
			nops, ret < 0 ? strerror(-ret) : "short");
		return 2;
	}
	for (i = 0; i < nops; i++) {
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret) {
			fprintf(stderr, "kvb_uring_mix: wait: %s\n",
				strerror(-ret));
			return 2;
		}
		ops[io_uring_cqe_get_data64(cqe)].res = cqe->res;
		io_uring_cqe_seen(&ring, cqe);
	}
	for (i = 0; i < nops; i++) {
		printf("%c %" PRIu64 " %" PRIu64 " %d\n", ops[i].kind,
		       ops[i].off, ops[i].len, ops[i].res);
		if (ops[i].kind == 'd' && ops[i].res == -EOPNOTSUPP &&
		    rc != 1)
			rc = 4;
		else if (ops[i].kind == 'w' ? ops[i].res != (int)ops[i].len :
			 ops[i].res != 0)
			rc = 1;
	}
	io_uring_queue_exit(&ring);
	close(fd);
	return rc;
}
