/*
 * summary.c — function self/total figures for `wtctl profile summary`
 * (see summary.h). Frames are mapped to function names once; stack values
 * are accumulated per stack first, so the per-frame walk is over unique
 * stacks only.
 */
#include "summary.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "buf.h"
#include "hindex.h"

/* Table name → row index (common/hindex.h); names live in a wt_buf as
 * offsets (the buffer moves while growing). */
typedef struct name_table {
	wt_hindex idx;
	size_t *name_off; /* per row: offset into names */
	size_t n, rows_cap;
	wt_buf names;
} name_table;

static uint64_t hash_str(const char *s)
{
	return XXH3_64bits(s, strlen(s));
}

static int name_eq(const void *ctx, uint32_t v, const void *key)
{
	const name_table *t = ctx;

	return !strcmp((const char *)t->names.data + t->name_off[v], key);
}

/* Index of name, inserting it when new. -1 on out-of-memory. */
static long table_get(name_table *t, const char *name)
{
	uint64_t h = hash_str(name);
	uint32_t v;
	size_t slot;
	int r = wt_hindex_lookup(&t->idx, h, name, name_eq, t, &v, &slot);

	if (r)
		return r < 0 ? -1 : (long)v;
	if (t->n == t->rows_cap) {
		size_t nc = t->rows_cap ? t->rows_cap * 2 : 256;
		size_t *no = realloc(t->name_off, nc * sizeof(*no));
		if (!no)
			return -1;
		t->name_off = no;
		t->rows_cap = nc;
	}
	t->name_off[t->n] = t->names.len;
	if (wt_buf_append(&t->names, name, strlen(name) + 1))
		return -1;
	wt_hindex_put(&t->idx, slot, h, (uint32_t)t->n);
	return (long)t->n++;
}

static int cmp_self(const void *a, const void *b)
{
	const cli_summary_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->function, y->function);
}

static int cmp_total(const void *a, const void *b)
{
	const cli_summary_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return strcmp(x->function, y->function);
}

int cli_summary_build(const wt_profile *p, size_t type_idx, cli_summary *s, wt_err *err)
{
	name_table t = {0};
	int64_t *stack_val = NULL;
	long *frame_fn = NULL;
	size_t *seen = NULL; /* per function: stack id + 1 that last counted it */
	char namebuf[256];
	int rc = WT_ENOMEM;

	memset(s, 0, sizeof(*s));
	stack_val = calloc(p->nstacks ? p->nstacks : 1, sizeof(*stack_val));
	frame_fn = malloc((p->nframes ? p->nframes : 1) * sizeof(*frame_fn));
	if (!stack_val || !frame_fn)
		goto out;
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t v = wt_profile_values(p, i)[type_idx];
		stack_val[p->samples[i].stack] += v;
		s->total += v;
	}
	for (size_t f = 0; f < p->nframes; f++) {
		const char *name = wt_profile_frame_name(p, (uint32_t)f, namebuf, sizeof(namebuf));
		if ((frame_fn[f] = table_get(&t, name)) < 0)
			goto out;
	}
	s->rows = calloc(t.n ? t.n : 1, sizeof(*s->rows));
	seen = calloc(t.n ? t.n : 1, sizeof(*seen));
	if (!s->rows || !seen)
		goto out;
	for (size_t st = 0; st < p->nstacks; st++) {
		size_t n;
		const uint32_t *fr;
		int64_t v = stack_val[st];

		if (!v)
			continue;
		s->nstacks_used++;
		fr = wt_profile_stack(p, (uint32_t)st, &n);
		for (size_t k = 0; k < n; k++) {
			long fn = frame_fn[fr[k]];
			if (k == 0)
				s->rows[fn].self += v;
			if (seen[fn] != st + 1) {
				seen[fn] = st + 1;
				s->rows[fn].total += v;
			}
		}
	}
	/* Hand the name storage to the summary. */
	s->names = (char *)wt_buf_steal(&t.names, &(size_t){0});
	for (size_t i = 0; i < t.n; i++)
		s->rows[i].function = s->names + t.name_off[i];
	s->n = t.n;
	qsort(s->rows, s->n, sizeof(*s->rows), cmp_self);
	rc = 0;
out:
	if (rc) {
		wt_err_set(err, rc, "summary: out of memory");
		cli_summary_free(s);
	}
	free(stack_val);
	free(frame_fn);
	free(seen);
	wt_hindex_free(&t.idx);
	free(t.name_off);
	wt_buf_free(&t.names);
	return rc;
}

void cli_summary_free(cli_summary *s)
{
	free(s->rows);
	free(s->names);
	memset(s, 0, sizeof(*s));
}

void cli_summary_sort_by_total(cli_summary *s)
{
	qsort(s->rows, s->n, sizeof(*s->rows), cmp_total);
}

int cli_summary_pick_type(const wt_profile *p, const char *name)
{
	if (!p->ntypes)
		return -1;
	if (name)
		return wt_profile_find_type(p, name);
	if (p->default_type) {
		int i = wt_profile_find_type(p, wt_profile_str(p, p->default_type));
		if (i >= 0)
			return i;
	}
	return (int)p->ntypes - 1;
}

int64_t cli_summary_sample_count(const wt_profile *p)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(wt_profile_str(p, p->types[i].canonical), "samples"))
			return wt_profile_total(p, i);
	if (p->source_samples >= 0)
		return p->source_samples;
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(wt_profile_str(p, p->types[i].unit), "samples"))
			return wt_profile_total(p, i);
	return (int64_t)p->nsamples;
}

void cli_summary_time_range(const wt_profile *p, int64_t *start, int64_t *end)
{
	int64_t lo = 0, hi = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t t = p->samples[i].time_ns;
		if (!t)
			continue;
		if (!lo || t < lo)
			lo = t;
		if (t > hi)
			hi = t;
	}
	*start = p->time_ns ? p->time_ns : lo;
	*end = hi;
	if (*start && p->duration_ns && *start + p->duration_ns > *end)
		*end = *start + p->duration_ns;
}
