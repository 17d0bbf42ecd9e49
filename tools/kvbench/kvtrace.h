/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtrace: the reader of LLM-serving request traces for kvbench --trace,
 * in the JSONL format of the public production traces (Mooncake), NVIDIA
 * aiperf's trace replay and Dynamo's data generator: one request per
 * line,
 *
 *   {"timestamp": MS, "input_length": TOKENS, "output_length": TOKENS,
 *    "hash_ids": [ID, ...]}
 *
 * where timestamp is the arrival in milliseconds since the trace's start
 * (an integer or a real, never decreasing), and each hash id names one KV
 * block of the prompt; requests naming the same ids share that prefix.
 * Other members (session ids, text) are ignored. Every line must be such
 * an object: a malformed line, a missing or mistyped member or a negative
 * value is an error naming the file and the line, and no line is skipped.
 */
#ifndef _KVTRACE_H
#define _KVTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KVT_ERR_MAX	256

struct kvt_req {
	double		ts_ms;
	uint64_t	input_len;
	uint64_t	output_len;
	size_t		first_id;	/* into kvt_trace.ids */
	size_t		nr_ids;
	size_t		line;
};

struct kvt_trace {
	struct kvt_req	*req;
	size_t		nr, cap;
	uint64_t	*ids;		/* every request's hash ids, in order */
	size_t		nr_ids, ids_cap;
};

/*
 * Append the requests of @f (named @name in messages) to @tr. 0, or -1
 * with "NAME:LINE: what" in @err (KVT_ERR_MAX bytes).
 */
int kvt_trace_read(struct kvt_trace *tr, FILE *f, const char *name,
		   char *err);
void kvt_trace_free(struct kvt_trace *tr);

static inline const uint64_t *kvt_req_ids(const struct kvt_trace *tr,
					  const struct kvt_req *r)
{
	return tr->ids + r->first_id;
}

#endif /* _KVTRACE_H */
