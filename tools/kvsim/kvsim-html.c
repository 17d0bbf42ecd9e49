// SPDX-License-Identifier: GPL-2.0
/*
 * kvsim --html: see kvsim-html.h. The results go into the page as one
 * JSON object; everything the page shows is computed from it, except the
 * completion times, tails and "ahead" sums, which come from kvsim-run.c
 * so that the page and the text report cannot disagree on them.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "kvsim-html.h"

/* Where the data goes in kvsim-page.html. */
#define KVSIM_PAGE_MARK	"/*@KVSIM_DATA@*/null"

/* A JSON string that is also safe inside an HTML <script> element. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_time(FILE *f, u64 ns)
{
	if (ns == KVS_NO_TIME)
		fputs("null", f);
	else
		fprintf(f, "%llu", (unsigned long long)ns);
}

static void json_run(FILE *f, const struct kvsim_result *r,
		     const struct kvsim_run *run)
{
	const struct kvsim_trace *t = r->t;
	u32 i, b;

	fprintf(f, "{\"name\":");
	json_str(f, kvs_sched_names[run->sched]);
	fprintf(f, ",\"end\":%llu,\"work\":%llu,\n\"rq\":[",
		(unsigned long long)run->sim.end,
		(unsigned long long)run->work);
	/* [batch, tier, die, arrival, dispatch, start, complete, op, dseq] */
	for (i = 0; i < t->nr; i++) {
		const struct kvs_req *q = &run->rqs[i];

		fprintf(f, "%s[%llu,%u,%d,", i ? ",\n" : "",
			(unsigned long long)q->key, q->tier, q->sdie);
		json_time(f, q->arrival);
		fputc(',', f);
		json_time(f, q->dispatch);
		fputc(',', f);
		json_time(f, q->start);
		fputc(',', f);
		json_time(f, q->complete);
		fprintf(f, ",\"%s\",%u]", !q->write ? "R" : q->sync ? "WS" : "W",
			q->dseq);
	}
	fprintf(f, "],\n\"done\":[");
	for (b = 0; b < t->nr_batches; b++) {
		fprintf(f, "%s", b ? "," : "");
		json_time(f, run->b[b].done);
	}
	fprintf(f, "],\"tail\":[");
	for (b = 0; b < t->nr_batches; b++)
		fprintf(f, "%s%d", b ? "," : "",
			run->b[b].done == KVS_NO_TIME ? -1 :
			(int)run->b[b].tail);
	fprintf(f, "],\"ahead\":[");
	for (b = 0; b < t->nr_batches; b++)
		fprintf(f, "%s%llu", b ? "," : "",
			(unsigned long long)run->b[b].ahead);
	fprintf(f, "]}");
}

static void json_result(FILE *f, const struct kvsim_result *r)
{
	const struct kvsim_trace *t = r->t;
	char tun[512];
	size_t off = 0;
	u32 b, k;
	int i;

	off += snprintf(tun, sizeof(tun), "module defaults");
	for (i = 0; i < KVB_NR_TUNABLES && off < sizeof(tun); i++)
		if (r->tun[i] != kvb_tunables[i].def)
			off += snprintf(tun + off, sizeof(tun) - off, "%s%s=%u",
					strchr(tun, '=') ? ", " : " except ",
					kvb_tunables[i].name, r->tun[i]);

	fprintf(f, "{\"name\":");
	json_str(f, t->name);
	fprintf(f, ",\"title\":");
	json_str(f, t->title[0] ? t->title : t->name);
	fprintf(f, ",\"note\":");
	json_str(f, t->note);
	fprintf(f, ",\"tunables\":");
	json_str(f, tun);
	fprintf(f, ",\n\"dies\":%u,\"qdepth\":%u,\"chunk\":%llu,"
		"\"tick\":%llu,\"ticks\":%u,\"end\":%llu,\"work\":%llu,\n",
		r->cfg.dies, r->cfg.qdepth, (unsigned long long)r->cfg.chunk,
		(unsigned long long)r->tick, r->ticks,
		(unsigned long long)r->end,
		(unsigned long long)r->trace_work);
	fprintf(f, "\"tiers\":[");
	for (i = 0; i < KVB_NR_TIERS; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_str(f, kvb_tier_names[i]);
	}
	/* [name, tier, requests, first arrival, work] */
	fprintf(f, "],\n\"batches\":[");
	for (b = 0; b < t->nr_batches; b++) {
		fprintf(f, "%s[", b ? "," : "");
		json_str(f, t->bname[b]);
		fprintf(f, ",%u,%u,%llu,%llu]", r->binfo[b].tier,
			r->binfo[b].nr,
			(unsigned long long)r->binfo[b].first,
			(unsigned long long)r->binfo[b].work);
	}
	fprintf(f, "],\n\"scheds\":[");
	for (k = 0; k < r->nr_runs; k++) {
		fprintf(f, "%s", k ? ",\n" : "");
		json_run(f, r, &r->run[k]);
	}
	fprintf(f, "]}");
}

int kvsim_write_html(const char *path, const struct kvsim_result *r,
		     char *err, size_t errlen)
{
	const char *mark = strstr(kvsim_page, KVSIM_PAGE_MARK);
	FILE *f;
	int bad;

	if (!mark) {
		snprintf(err, errlen, "internal error: no data mark in the "
			 "page template");
		return -1;
	}
	f = fopen(path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	fwrite(kvsim_page, 1, mark - kvsim_page, f);
	json_result(f, r);
	fputs(mark + strlen(KVSIM_PAGE_MARK), f);
	bad = ferror(f);
	if (fclose(f) || bad) {
		snprintf(err, errlen, "%s: write error", path);
		unlink(path);
		return -1;
	}
	return 0;
}
