// SPDX-License-Identifier: GPL-2.0
/*
 * tcg-insns: a QEMU TCG plugin counting the guest instructions executed,
 * per translated block, for tools/kvab -p.
 *
 * A TCG guest has no profiler that works: perf's samples land only where
 * a vCPU halts, and tracing costs as much as the functions it times. What
 * TCG can say exactly is which guest instructions ran. This plugin counts
 * every execution of every translated block; a report maps the blocks'
 * addresses to the guest's kallsyms and divides by the requests served,
 * giving instructions per request by function: a cost the host's load
 * does not change.
 *
 * Usage: -plugin build/tools/tcg-insns.so,out=PATH
 *
 * While QEMU runs, creating PATH.trigger writes a snapshot, PATH.N for
 * N = 0, 1, ... in order, and removes the trigger: a guest that can write
 * beside PATH (kvvm's build share) asks for one and waits for the trigger
 * to go. A snapshot holds one line per block that ran, "VADDR NINSNS
 * COUNT" (hex address, decimal counts), totals since QEMU started; a
 * block translated again (after a flush) appears once per translation.
 *
 * Written against the plugin API of QEMU 7.2 (Debian 12), version 1, whose
 * header Debian does not ship: the few calls used are declared here.
 * Counting is per vCPU, by callback, so that two vCPUs running one block
 * at once both count.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the QEMU 7.2 plugin API, as far as used --------------------------- */

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
};

typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
					    void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
					       struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
					   qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
					  qemu_plugin_vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags,
					  void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
int qemu_plugin_n_max_vcpus(void);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ---- the counts -------------------------------------------------------- */

/*
 * One per translation. Never freed: a snapshot may read any of them, and
 * QEMU keeps calling back into the translated code until it exits.
 */
struct block {
	uint64_t	vaddr;
	uint64_t	ninsns;
	uint64_t	count[];	/* per vCPU */
};

/* Blocks are kept in chunks, found by index, so none ever moves. */
#define CHUNK_BLOCKS	65536
#define MAX_CHUNKS	4096

static struct block *chunks[MAX_CHUNKS];
static size_t nblocks;
static unsigned int nvcpus;
static size_t block_size;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char out[4096];

static struct block *block_at(size_t i)
{
	return (struct block *)((char *)chunks[i / CHUNK_BLOCKS] +
				(i % CHUNK_BLOCKS) * block_size);
}

static void tb_exec(unsigned int vcpu, void *userdata)
{
	struct block *b = userdata;

	/* Each vCPU writes only its own slot. */
	if (vcpu < nvcpus)
		b->count[vcpu]++;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = NULL;
	size_t c;

	(void)id;
	pthread_mutex_lock(&lock);
	c = nblocks / CHUNK_BLOCKS;
	if (c < MAX_CHUNKS && !chunks[c])
		chunks[c] = calloc(CHUNK_BLOCKS, block_size);
	if (c < MAX_CHUNKS && chunks[c]) {
		b = block_at(nblocks);
		b->vaddr = qemu_plugin_tb_vaddr(tb);
		b->ninsns = qemu_plugin_tb_n_insns(tb);
		nblocks++;
	}
	pthread_mutex_unlock(&lock);
	/* Out of memory or blocks: this one goes uncounted. */
	if (b)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec,
						     QEMU_PLUGIN_CB_NO_REGS, b);
}

static int snapshot(const char *path)
{
	size_t i, n;
	FILE *f;

	f = fopen(path, "w");
	if (!f)
		return -errno;
	pthread_mutex_lock(&lock);
	n = nblocks;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n; i++) {
		struct block *b = block_at(i);
		uint64_t sum = 0;
		unsigned int v;

		for (v = 0; v < nvcpus; v++)
			sum += __atomic_load_n(&b->count[v], __ATOMIC_RELAXED);
		if (sum)
			fprintf(f, "%llx %llu %llu\n",
				(unsigned long long)b->vaddr,
				(unsigned long long)b->ninsns,
				(unsigned long long)sum);
	}
	return fclose(f) ? -errno : 0;
}

static void *watch(void *arg)
{
	char trigger[4200], path[4200];
	unsigned int seq = 0;

	(void)arg;
	snprintf(trigger, sizeof(trigger), "%s.trigger", out);
	for (;;) {
		usleep(50000);
		if (access(trigger, F_OK))
			continue;
		snprintf(path, sizeof(path), "%s.%u", out, seq++);
		if (snapshot(path))
			fprintf(stderr, "tcg-insns: cannot write %s\n", path);
		unlink(trigger);
	}
	return NULL;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc,
			char **argv)
{
	pthread_t thread;
	int max;

	(void)info;
	if (argc != 1 || strncmp(argv[0], "out=", 4) || !argv[0][4] ||
	    strlen(argv[0] + 4) >= sizeof(out)) {
		fprintf(stderr, "tcg-insns: usage: -plugin tcg-insns.so,out=PATH\n");
		return -1;
	}
	strcpy(out, argv[0] + 4);
	max = qemu_plugin_n_max_vcpus();
	nvcpus = max > 0 ? (unsigned int)max : 1;
	block_size = sizeof(struct block) + nvcpus * sizeof(uint64_t);
	if (pthread_create(&thread, NULL, watch, NULL))
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
