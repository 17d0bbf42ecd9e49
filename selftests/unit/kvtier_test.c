// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of kvbench --trace's model (tools/kvbench/kvtier.c) and its
 * trace reader (tools/kvbench/kvtrace.c): small hand-made traces whose
 * recalls, writes, hits and evictions are worked out by hand in the
 * comments, and the reader's errors, each naming its line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvtier.h"
#include "kvtrace.h"
#include "tap.h"

/*
 * One request through the model, as a string that reads like the
 * comments: "H 1 2 R 4@3 W 8@7" (hits, recalls and new blocks, the
 * latter two with their SSD slots), in the order the request names them
 * within each class.
 */
#define MAX_REQ_IDS	64

static void run_req(struct kvt_tier *t, const uint64_t *ids, size_t n,
		    char *out, size_t len)
{
	static const char tag[KVT_NR_CLASSES] = { 'H', 'R', 'W' };
	uint64_t slot[MAX_REQ_IDS];
	int cls[MAX_REQ_IDS], c;
	size_t used = 0, i;

	if (n > MAX_REQ_IDS)
		n = MAX_REQ_IDS;
	for (i = 0; i < n; i++)
		cls[i] = kvt_tier_access(t, ids[i], &slot[i]);
	out[0] = '\0';
	for (c = 0; c < KVT_NR_CLASSES; c++) {
		bool first = true;

		for (i = 0; i < n && used < len; i++) {
			if (cls[i] != c)
				continue;
			if (first)
				used += snprintf(out + used, len - used, "%s%c",
						 used ? " " : "", tag[c]);
			first = false;
			if (used >= len)
				break;
			if (c == KVT_HIT)
				used += snprintf(out + used, len - used, " %llu",
						 (unsigned long long)ids[i]);
			else
				used += snprintf(out + used, len - used,
						 " %llu@%llu",
						 (unsigned long long)ids[i],
						 (unsigned long long)slot[i]);
		}
	}
}

static bool read_str(struct kvt_trace *tr, const char *text, char *err)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	if (!f)
		return false;
	ret = kvt_trace_read(tr, f, "t.jsonl", err);
	fclose(f);
	return ret == 0;
}

/*
 * Five requests, memory of 4 blocks, a large SSD (no slot is reused).
 * Slots are handed out in write order: block k (1..8) gets slot k-1.
 *
 *   R1 [1 2 3]    all new                      mem 1 2 3
 *   R2 [1 2 4]    hit 1 2, new 4               mem 3 1 2 4
 *   R3 [5 6]      new 5 6, evicting 3 then 1   mem 2 4 5 6
 *   R4 [1 2 7]    recall 1 (evicts 2), recall 2 (evicts 4), new 7
 *                 (evicts 5)                   mem 6 1 2 7
 *   R5 [1 2 4 8]  hit 1 2, recall 4 (evicts 6), new 8 (evicts 7)
 *                                              mem 1 2 4 8
 */
static const char shared_prefix_trace[] =
	"{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 10, \"hash_ids\": [1, 2, 3]}\n"
	"{\"timestamp\": 5, \"input_length\": 1600, \"output_length\": 20, \"hash_ids\": [1, 2, 4]}\n"
	"{\"timestamp\": 9.5, \"input_length\": 1000, \"output_length\": 30, \"hash_ids\": [5, 6], \"session_id\": \"x\"}\n"
	"{\"timestamp\": 9.5, \"input_length\": 1400, \"output_length\": 40, \"hash_ids\": [1, 2, 7]}\r\n"
	"{\"timestamp\": 20, \"input_length\": 2000, \"output_length\": 50, \"hash_ids\": [1, 2, 4, 8]}\n";

static bool test_shared_prefixes(void)
{
	static const char *const want[] = {
		"W 1@0 2@1 3@2",
		"H 1 2 W 4@3",
		"W 5@4 6@5",
		"R 1@0 2@1 W 7@6",
		"H 1 2 R 4@3 W 8@7",
	};
	struct kvt_trace tr = { 0 };
	struct kvt_tier *t = kvt_tier_new(4, 100);
	const struct kvt_stats *st;
	char err[KVT_ERR_MAX], got[256];
	size_t i;

	EXPECT(t, "kvt_tier_new");
	if (!t || !read_str(&tr, shared_prefix_trace, err)) {
		EXPECT(false, "reading the trace: %s", err);
		kvt_tier_free(t);
		return false;
	}
	EXPECT(tr.nr == 5, "%zu requests, want 5", tr.nr);
	EXPECT(tr.nr == 5 && tr.req[2].ts_ms == 9.5 &&
	       tr.req[3].line == 4 && tr.req[4].input_len == 2000 &&
	       tr.req[4].output_len == 50 && tr.req[4].nr_ids == 4,
	       "request fields");
	for (i = 0; i < tr.nr && i < 5; i++) {
		run_req(t, kvt_req_ids(&tr, &tr.req[i]), tr.req[i].nr_ids,
			got, sizeof(got));
		EXPECT(!strcmp(got, want[i]), "R%zu: \"%s\", want \"%s\"",
		       i + 1, got, want[i]);
	}
	st = kvt_tier_stats(t);
	EXPECT(st->blocks[KVT_HIT] == 4 && st->blocks[KVT_RECALL] == 3 &&
	       st->blocks[KVT_NEW] == 8,
	       "hit %llu recall %llu new %llu, want 4 3 8",
	       (unsigned long long)st->blocks[KVT_HIT],
	       (unsigned long long)st->blocks[KVT_RECALL],
	       (unsigned long long)st->blocks[KVT_NEW]);
	EXPECT(st->mem_evictions == 7 && st->ssd_evictions == 0,
	       "evictions: memory %llu (want 7), SSD %llu (want 0)",
	       (unsigned long long)st->mem_evictions,
	       (unsigned long long)st->ssd_evictions);
	for (i = 1; i <= 8; i++)
		EXPECT(kvt_tier_in_mem(t, i) == (i == 1 || i == 2 || i == 4 ||
						 i == 8),
		       "block %zu in memory: %d", i, kvt_tier_in_mem(t, i));
	kvt_trace_free(&tr);
	kvt_tier_free(t);
	return true;
}

/*
 * No memory tier and an SSD of 3 slots: the log wraps onto the oldest
 * write, and a block that lost its slot is new again.
 *
 *   [1 2 3]  new, slots 0 1 2
 *   [1 4]    recall 1 from slot 0; 4 is new and takes slot 0, the oldest
 *            write, so 1 leaves the SSD
 *   [1 2]    1 is new again (slot 1, taken from 2); then 2 is new again
 *            (slot 2, taken from 3)
 */
static bool test_ssd_wraps(void)
{
	static const uint64_t r1[] = { 1, 2, 3 }, r2[] = { 1, 4 },
		r3[] = { 1, 2 };
	struct kvt_tier *t = kvt_tier_new(0, 3);
	const struct kvt_stats *st;
	uint64_t slot;
	char got[128];

	if (!t)
		return false;
	run_req(t, r1, 3, got, sizeof(got));
	EXPECT(!strcmp(got, "W 1@0 2@1 3@2"), "R1: %s", got);
	run_req(t, r2, 2, got, sizeof(got));
	EXPECT(!strcmp(got, "R 1@0 W 4@0"), "R2: %s", got);
	run_req(t, r3, 2, got, sizeof(got));
	EXPECT(!strcmp(got, "W 1@1 2@2"), "R3: %s", got);
	EXPECT(!kvt_tier_on_ssd(t, 3, NULL), "block 3 still on the SSD");
	EXPECT(kvt_tier_on_ssd(t, 4, &slot) && slot == 0, "block 4's slot");
	EXPECT(!kvt_tier_in_mem(t, 1), "block 1 in memory with no memory");
	st = kvt_tier_stats(t);
	EXPECT(st->ssd_evictions == 3, "SSD evictions %llu, want 3",
	       (unsigned long long)st->ssd_evictions);
	EXPECT(st->mem_evictions == 7, "memory evictions %llu, want 7",
	       (unsigned long long)st->mem_evictions);
	kvt_tier_free(t);
	return true;
}

/*
 * A block whose slot is reused while it is in memory stays a hit; once
 * memory drops it too, it is new. Memory 3, SSD 2.
 *
 *   [1] [2]  new, slots 0 1
 *   [3]      new, slot 0 (1 leaves the SSD, stays in memory)
 *   [1]      hit, no I/O
 *   [4]      new, slot 1 (2 leaves the SSD); memory drops 2, the least
 *            recently used (1 was just used)
 *   [5]      new, slot 0 (3 leaves the SSD); memory drops 3
 *   [6]      new, slot 1 (4 leaves the SSD); memory drops 1, which is
 *            now in no tier
 *   [1]      new again, slot 0 (5 leaves the SSD)
 */
static bool test_lost_block(void)
{
	static const uint64_t seq[] = { 1, 2, 3, 1, 4, 5, 6, 1 };
	static const char *const want[] = {
		"W 1@0", "W 2@1", "W 3@0", "H 1", "W 4@1", "W 5@0", "W 6@1",
		"W 1@0",
	};
	struct kvt_tier *t = kvt_tier_new(3, 2);
	char got[64];
	size_t i;

	if (!t)
		return false;
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		run_req(t, &seq[i], 1, got, sizeof(got));
		EXPECT(!strcmp(got, want[i]), "step %zu: \"%s\", want \"%s\"",
		       i + 1, got, want[i]);
	}
	EXPECT(!kvt_tier_new(4, 0), "a model with no SSD slot is refused");
	kvt_tier_free(t);
	return true;
}

/* Many distinct ids: the hash table grows and still finds every one. */
static bool test_many_blocks(void)
{
	struct kvt_tier *t = kvt_tier_new(100000, 100000);
	uint64_t i, slot;
	bool ok = true;

	if (!t)
		return false;
	for (i = 0; i < 50000 && ok; i++)
		ok = kvt_tier_access(t, i * 7919, &slot) == KVT_NEW &&
		     slot == i;
	EXPECT(ok, "first pass: id %llu", (unsigned long long)(i - 1) * 7919);
	for (i = 0; i < 50000 && ok; i++)
		ok = kvt_tier_access(t, i * 7919, &slot) == KVT_HIT;
	EXPECT(ok, "second pass: id %llu", (unsigned long long)(i - 1) * 7919);
	kvt_tier_free(t);
	return true;
}

/* Each bad trace: the error names t.jsonl, the line, and what is wrong. */
static bool test_reader_errors(void)
{
	static const char ok1[] =
		"{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n";
	static const struct {
		const char *text;	/* after one good line */
		const char *err;
	} cases[] = {
		{ "not json\n", "t.jsonl:2: not JSON" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1}\n",
		  "t.jsonl:2: \"hash_ids\" is missing" },
		{ "{\"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"timestamp\" is missing" },
		{ "{\"timestamp\": 2, \"input_length\": \"12\", \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"input_length\" must be an integer" },
		{ "{\"timestamp\": 2, \"input_length\": 12.5, \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"input_length\" must be an integer" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": -3, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"output_length\" must not be negative" },
		{ "{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"timestamp\" must be a finite number >= 0" },
		{ "{\"timestamp\": \"2\", \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"timestamp\" must be a number" },
		{ "{\"timestamp\": 0.5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n",
		  "t.jsonl:2: \"timestamp\" 0.5 goes backwards (line 1 has 1)" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": 7}\n",
		  "t.jsonl:2: \"hash_ids\" must be an array" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3, -4]}\n",
		  "t.jsonl:2: \"hash_ids\"[1] must be an integer >= 0" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3, \"a\"]}\n",
		  "t.jsonl:2: \"hash_ids\"[1] must be an integer >= 0" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []} x\n",
		  "t.jsonl:2: not JSON: unexpected character at column 73" },
		{ "{\"timestamp\": 2, \"input_length\": 1,\n",
		  "t.jsonl:2: not JSON: the object is not closed" },
		{ "{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1,],}\n",
		  "t.jsonl:2: not JSON" },
		{ "[1, 2]\n", "t.jsonl:2: not a JSON object" },
		{ "\n", "t.jsonl:2: empty line" },
	};
	char text[512], err[KVT_ERR_MAX];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kvt_trace tr = { 0 };

		snprintf(text, sizeof(text), "%s%s", ok1, cases[i].text);
		err[0] = '\0';
		EXPECT(!read_str(&tr, text, err), "case %zu accepted", i);
		EXPECT(!strncmp(err, cases[i].err, strlen(cases[i].err)),
		       "case %zu: \"%s\", want \"%s...\"", i, err,
		       cases[i].err);
		kvt_trace_free(&tr);
	}
	return true;
}

TAP_MAIN(
	{ test_shared_prefixes, "kvtier: shared prefixes: hits, recalls, new blocks, LRU evictions" },
	{ test_ssd_wraps, "kvtier: the SSD log wraps onto the oldest write" },
	{ test_lost_block, "kvtier: a block out of both tiers is new again" },
	{ test_many_blocks, "kvtier: 50000 blocks, the table grows" },
	{ test_reader_errors, "kvtrace: each bad line is an error naming its line" },
)
