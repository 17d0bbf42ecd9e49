// SPDX-License-Identifier: GPL-2.0
/*
 * kvtrace: read an LLM-serving request trace (JSONL, see kvtrace.h) with
 * json-c. Each line is parsed on its own, in strict mode, and checked
 * member by member, so that the error names the line and what is wrong
 * with it rather than leaving a request out.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "kvtrace.h"

struct ctx {
	const char	*name;
	size_t		line;
	char		*err;
};

static int fail(struct ctx *c, const char *fmt, ...)
{
	int n = snprintf(c->err, KVT_ERR_MAX, "%s:%zu: ", c->name, c->line);
	va_list ap;

	va_start(ap, fmt);
	if (n >= 0 && n < KVT_ERR_MAX)
		vsnprintf(c->err + n, KVT_ERR_MAX - n, fmt, ap);
	va_end(ap);
	return -1;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 256;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* The member @key of @obj, which must be present. */
static struct json_object *member(struct ctx *c, struct json_object *obj,
				  const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !v) {
		fail(c, "\"%s\" is missing", key);
		return NULL;
	}
	return v;
}

/* A non-negative integer member (token counts). */
static int get_count(struct ctx *c, struct json_object *obj, const char *key,
		     uint64_t *out)
{
	struct json_object *v = member(c, obj, key);

	if (!v)
		return -1;
	if (!json_object_is_type(v, json_type_int))
		return fail(c, "\"%s\" must be an integer, not %s", key,
			    json_object_to_json_string(v));
	if (json_object_get_int64(v) < 0)
		return fail(c, "\"%s\" must not be negative (%" PRId64 ")",
			    key, json_object_get_int64(v));
	*out = json_object_get_uint64(v);
	return 0;
}

static int parse_line(struct kvt_trace *tr, struct ctx *c,
		      struct json_tokener *tok, const char *s, size_t len)
{
	struct json_object *obj, *v, *ids;
	struct kvt_req *r;
	size_t i, n;
	double ts;
	int ret = -1;

	while (len && isspace((unsigned char)s[len - 1]))
		len--;
	if (!len)
		return fail(c, "empty line (one JSON object per line)");
	json_tokener_reset(tok);
	obj = json_tokener_parse_ex(tok, s, (int)len);
	if (!obj) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		if (e == json_tokener_continue)
			return fail(c, "not JSON: the object is not closed on this line");
		return fail(c, "not JSON: %s at column %zu",
			    json_tokener_error_desc(e),
			    json_tokener_get_parse_end(tok) + 1);
	}
	/* Strict mode has refused anything after the object but spaces. */
	if (!json_object_is_type(obj, json_type_object)) {
		fail(c, "not a JSON object");
		goto out;
	}
	if (grow((void **)&tr->req, &tr->cap, tr->nr + 1, sizeof(*tr->req))) {
		fail(c, "out of memory");
		goto out;
	}
	r = &tr->req[tr->nr];
	memset(r, 0, sizeof(*r));
	r->line = c->line;

	v = member(c, obj, "timestamp");
	if (!v)
		goto out;
	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double)) {
		fail(c, "\"timestamp\" must be a number, not %s",
		     json_object_to_json_string(v));
		goto out;
	}
	ts = json_object_get_double(v);
	if (!isfinite(ts) || ts < 0) {
		fail(c, "\"timestamp\" must be a finite number >= 0 (%s)",
		     json_object_to_json_string(v));
		goto out;
	}
	if (tr->nr && ts < tr->req[tr->nr - 1].ts_ms) {
		fail(c, "\"timestamp\" %g goes backwards (line %zu has %g)",
		     ts, tr->req[tr->nr - 1].line, tr->req[tr->nr - 1].ts_ms);
		goto out;
	}
	r->ts_ms = ts;
	if (get_count(c, obj, "input_length", &r->input_len) ||
	    get_count(c, obj, "output_length", &r->output_len))
		goto out;

	ids = member(c, obj, "hash_ids");
	if (!ids)
		goto out;
	if (!json_object_is_type(ids, json_type_array)) {
		fail(c, "\"hash_ids\" must be an array of block ids, not %s",
		     json_object_to_json_string(ids));
		goto out;
	}
	n = json_object_array_length(ids);
	if (grow((void **)&tr->ids, &tr->ids_cap, tr->nr_ids + n,
		 sizeof(*tr->ids))) {
		fail(c, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(ids, i);
		if (!json_object_is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 0) {
			fail(c, "\"hash_ids\"[%zu] must be an integer >= 0, not %s",
			     i, json_object_to_json_string(v));
			goto out;
		}
		tr->ids[tr->nr_ids + i] = json_object_get_uint64(v);
	}
	r->first_id = tr->nr_ids;
	r->nr_ids = n;
	tr->nr_ids += n;
	tr->nr++;
	ret = 0;
out:
	json_object_put(obj);
	return ret;
}

int kvt_trace_read(struct kvt_trace *tr, FILE *f, const char *name,
		   char *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct ctx c = { .name = name, .err = err };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!tok) {
		snprintf(err, KVT_ERR_MAX, "%s: out of memory", name);
		return -1;
	}
	/* No trailing commas, single quotes or other leniencies. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	while ((len = getline(&line, &cap, f)) >= 0) {
		c.line++;
		if (memchr(line, '\0', len)) {
			ret = fail(&c, "NUL byte in the line");
			break;
		}
		ret = parse_line(tr, &c, tok, line, len);
		if (ret)
			break;
	}
	if (!ret && ferror(f)) {
		snprintf(err, KVT_ERR_MAX, "%s: read error", name);
		ret = -1;
	}
	free(line);
	json_tokener_free(tok);
	return ret;
}

void kvt_trace_free(struct kvt_trace *tr)
{
	free(tr->req);
	free(tr->ids);
	memset(tr, 0, sizeof(*tr));
}
