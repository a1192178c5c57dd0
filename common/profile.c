/*
 * profile.c — the wt_profile model (see profile.h): growable tables plus one
 * open-addressing hash index per interned table, so that adding an existing
 * string/function/frame/stack/labelset/sample is a lookup, not a copy.
 *
 * Every growth path checks the limits in p->lim first: an input can make us
 * allocate at most what its limits allow.
 */
#include "profile.h"
#include "hindex.h"
#include "sample_types.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* One hash index (common/hindex.h) per interned table. */
typedef struct profile_priv {
	wt_hindex strings, mappings, functions, frames, stacks, labelsets, samples;
	/* samples without labels or time (every pprof sample without labels):
	 * plain[stack] = sample id + 1, 0 = none, instead of the samples index */
	uint32_t *plain;
	size_t plain_cap;
	int sealed; /* wt_profile_seal: the indexes are gone, nothing may be added */
} profile_priv;

/* Grow *arr (element size sz) to hold at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t nc;
	void *na;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 16;
	while (nc < need)
		nc *= 2;
	if (nc > SIZE_MAX / sz)
		return WT_ENOMEM;
	na = realloc(*arr, nc * sz);
	if (!na)
		return WT_ENOMEM;
	*arr = na;
	*cap = nc;
	return 0;
}

#define PRIV(p) ((profile_priv *)(p)->priv)

void wt_limits_default(wt_limits *l)
{
	l->max_body = 64u << 20;
	l->max_decompressed = 512u << 20;
	l->max_samples = 5000000;
	l->max_stack_depth = 2048;
	l->max_strings = 4000000;
	l->max_string_len = 64u << 10;
	l->max_labels = 64;
	l->max_types = 32;
}

wt_profile *wt_profile_new(const wt_limits *lim)
{
	wt_profile *p = calloc(1, sizeof(*p));
	uint32_t id;

	if (!p)
		return NULL;
	if (lim)
		p->lim = *lim;
	else
		wt_limits_default(&p->lim);
	p->priv = calloc(1, sizeof(profile_priv));
	if (!p->priv)
		goto fail;
	/* string 0 is "", labelset 0 is the empty set */
	if (wt_profile_intern(p, "", 0, &id, NULL))
		goto fail;
	if (grow((void **)&p->labelsets, &p->labelset_cap, 1, sizeof(wt_span)))
		goto fail;
	p->labelsets[0].off = p->labelsets[0].len = 0;
	p->nlabelsets = 1;
	p->source_samples = -1;
	return p;
fail:
	wt_profile_free(p);
	return NULL;
}

/* the interning indexes (what wt_profile_seal gives back) */
static void free_indexes(profile_priv *pv)
{
	wt_hindex_free(&pv->strings);
	wt_hindex_free(&pv->mappings);
	wt_hindex_free(&pv->functions);
	wt_hindex_free(&pv->frames);
	wt_hindex_free(&pv->stacks);
	wt_hindex_free(&pv->labelsets);
	wt_hindex_free(&pv->samples);
	free(pv->plain);
	pv->plain = NULL;
	pv->plain_cap = 0;
}

void wt_profile_free(wt_profile *p)
{
	profile_priv *pv;

	if (!p)
		return;
	pv = PRIV(p);
	if (pv) {
		free_indexes(pv);
		free(pv);
	}
	free(p->str_data);
	free(p->str_off);
	free(p->str_len);
	free(p->types);
	free(p->mappings);
	free(p->functions);
	free(p->frames);
	free(p->stacks);
	free(p->stack_frames);
	free(p->labelsets);
	free(p->labels);
	free(p->samples);
	free(p->values);
	for (size_t i = 0; i < p->nwarnings; i++)
		free(p->warnings[i]);
	free(p);
}

void wt_profile_seal(wt_profile *p)
{
	profile_priv *pv = p ? PRIV(p) : NULL;

	if (!pv)
		return;
	free_indexes(pv);
	pv->sealed = 1;
}

/* str_off and str_len share str_cap: grow both to hold need entries. */
static int grow_str_index(wt_profile *p, size_t need)
{
	size_t cap0 = p->str_cap;
	uint32_t *nl;

	if (need <= cap0 && p->str_len)
		return 0;
	if (grow((void **)&p->str_off, &p->str_cap, need, sizeof(uint32_t)))
		return WT_ENOMEM;
	if (!(nl = realloc(p->str_len, p->str_cap * sizeof(uint32_t)))) {
		p->str_cap = cap0; /* str_off is merely larger than that */
		return WT_ENOMEM;
	}
	p->str_len = nl;
	return 0;
}

/* pv->plain for at least n stacks (the new part zeroed). 0 or WT_ENOMEM. */
static int plain_grow(profile_priv *pv, size_t n)
{
	size_t nc = pv->plain_cap ? pv->plain_cap : 64;
	uint32_t *np;

	while (nc < n)
		nc *= 2;
	if (nc <= pv->plain_cap)
		return 0;
	if (!(np = realloc(pv->plain, nc * sizeof(*np))))
		return WT_ENOMEM;
	memset(np + pv->plain_cap, 0, (nc - pv->plain_cap) * sizeof(*np));
	pv->plain = np;
	pv->plain_cap = nc;
	return 0;
}

int wt_profile_reserve(wt_profile *p, const wt_profile_sizes *n)
{
	profile_priv *pv = PRIV(p);
	size_t ns = n->strings < p->lim.max_strings ? n->strings : p->lim.max_strings;
	size_t nsa = n->samples < p->lim.max_samples ? n->samples : p->lim.max_samples;
	size_t nst = n->stacks < p->lim.max_samples ? n->stacks : p->lim.max_samples;
	size_t nfn = n->functions < p->lim.max_strings ? n->functions : p->lim.max_strings;
	size_t nfr = n->frames < p->lim.max_strings ? n->frames : p->lim.max_strings;
	size_t nsf = n->stack_frames < p->lim.max_decompressed ? n->stack_frames : p->lim.max_decompressed;

	if ((ns && (wt_hindex_reserve(&pv->strings, ns) || grow_str_index(p, ns))) ||
	    (nfn && (wt_hindex_reserve(&pv->functions, nfn) ||
		     grow((void **)&p->functions, &p->function_cap, nfn, sizeof(wt_function)))) ||
	    (nfr && (wt_hindex_reserve(&pv->frames, nfr) ||
		     grow((void **)&p->frames, &p->frame_cap, nfr, sizeof(wt_frame)))) ||
	    (nst && (wt_hindex_reserve(&pv->stacks, nst) || plain_grow(pv, nst) ||
		     grow((void **)&p->stacks, &p->stack_cap, nst, sizeof(wt_span)))) ||
	    (nsa && (wt_hindex_reserve(&pv->samples, nsa) ||
		     grow((void **)&p->samples, &p->sample_cap, nsa, sizeof(wt_sample)))) ||
	    (nsf && grow((void **)&p->stack_frames, &p->stack_frames_cap, nsf, sizeof(uint32_t))))
		return WT_ENOMEM;
	return 0;
}

/* ---- strings ------------------------------------------------------------- */

typedef struct { const char *s; size_t len; } str_key;

static int str_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const str_key *k = key;
	return p->str_len[id] == k->len && !memcmp(p->str_data + p->str_off[id], k->s, k->len);
}

int wt_profile_intern(wt_profile *p, const char *s, size_t len, uint32_t *id, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	str_key k = {s, len};
	uint64_t h;
	size_t slot;
	int r;

	if (len > p->lim.max_string_len)
		return wt_err_set(err, WT_ELIMIT, "string of %zu bytes exceeds limit %zu",
				  len, p->lim.max_string_len);
	if (len && memchr(s, 0, len))
		return wt_err_set(err, WT_EINVAL, "string contains a NUL byte");
	h = XXH3_64bits(s, len);
	r = wt_hindex_lookup(&PRIV(p)->strings, h, &k, str_eq, p, id, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->nstrings >= p->lim.max_strings)
		return wt_err_set(err, WT_ELIMIT, "more than %zu distinct strings", p->lim.max_strings);
	if (p->str_data_len + len + 1 > UINT32_MAX)
		return wt_err_set(err, WT_ELIMIT, "string table exceeds 4 GiB");
	if (grow((void **)&p->str_data, &p->str_data_cap, p->str_data_len + len + 1, 1) ||
	    grow_str_index(p, p->nstrings + 1))
		goto oom;
	memcpy(p->str_data + p->str_data_len, s, len);
	p->str_data[p->str_data_len + len] = 0;
	p->str_off[p->nstrings] = (uint32_t)p->str_data_len;
	p->str_len[p->nstrings] = (uint32_t)len;
	p->str_data_len += len + 1;
	*id = (uint32_t)p->nstrings++;
	wt_hindex_put(&PRIV(p)->strings, slot, h, *id);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory interning a string");
}

int wt_profile_intern_cstr(wt_profile *p, const char *s, uint32_t *id, wt_err *err)
{
	return wt_profile_intern(p, s ? s : "", s ? strlen(s) : 0, id, err);
}

const char *wt_profile_str(const wt_profile *p, uint32_t id)
{
	if (id >= p->nstrings)
		return "";
	return p->str_data + p->str_off[id];
}

/* ---- sample types --------------------------------------------------------- */
int wt_profile_add_type(wt_profile *p, const char *type, const char *unit,
			const char *hint, size_t *idx, wt_err *err)
{
	wt_sample_type t;
	wt_sample_type *nt;
	int r;

	if (p->nsamples)
		return wt_err_set(err, WT_EINVAL, "sample type added after samples");
	if (p->ntypes >= p->lim.max_types)
		return wt_err_set(err, WT_ELIMIT, "more than %zu sample types", p->lim.max_types);
	if ((r = wt_profile_intern_cstr(p, type, &t.type, err)) ||
	    (r = wt_profile_intern_cstr(p, unit, &t.unit, err)) ||
	    (r = wt_profile_intern_cstr(p, wt_sample_type_canonical(type, unit, hint),
					&t.canonical, err)))
		return r;
	nt = realloc(p->types, (p->ntypes + 1) * sizeof(*nt));
	if (!nt)
		return wt_err_set(err, WT_ENOMEM, "out of memory adding a sample type");
	p->types = nt;
	p->types[p->ntypes] = t;
	if (idx)
		*idx = p->ntypes;
	p->ntypes++;
	return 0;
}

int wt_profile_find_type(const wt_profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(wt_profile_str(p, p->types[i].canonical), name))
			return (int)i;
	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(wt_profile_str(p, p->types[i].type), name))
			return (int)i;
	return -1;
}

/* ---- mappings, functions, frames -------------------------------------------
 * Plain structs compared field by field (no padding bytes are hashed). */
static uint64_t hash_u64s(const uint64_t *v, size_t n)
{
	return XXH3_64bits(v, n * sizeof(uint64_t));
}

static int mapping_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const wt_mapping *a = &p->mappings[id], *b = key;
	return a->start == b->start && a->limit == b->limit && a->offset == b->offset &&
	       a->filename == b->filename && a->build_id == b->build_id;
}

int wt_profile_add_mapping(wt_profile *p, const wt_mapping *m, uint32_t *idx, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	uint64_t v[5] = {m->start, m->limit, m->offset, m->filename, m->build_id};
	uint64_t h = hash_u64s(v, 5);
	size_t slot;
	int r;

	if (m->filename >= p->nstrings || m->build_id >= p->nstrings)
		return wt_err_set(err, WT_EINVAL, "mapping refers to an unknown string");
	r = wt_hindex_lookup(&PRIV(p)->mappings, h, m, mapping_eq, p, idx, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->nmappings >= UINT32_MAX - 1 ||
	    grow((void **)&p->mappings, &p->mapping_cap, p->nmappings + 1, sizeof(*m)))
		goto oom;
	p->mappings[p->nmappings] = *m;
	*idx = (uint32_t)p->nmappings++;
	wt_hindex_put(&PRIV(p)->mappings, slot, h, *idx);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a mapping");
}

static int function_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const wt_function *a = &p->functions[id], *b = key;
	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->build_id == b->build_id &&
	       a->start_line == b->start_line;
}

int wt_profile_add_function(wt_profile *p, const wt_function *f, uint32_t *idx, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	uint64_t v[5] = {f->name, f->system_name, f->filename, f->build_id, (uint64_t)f->start_line};
	uint64_t h = hash_u64s(v, 5);
	size_t slot;
	int r;

	if (f->name >= p->nstrings || f->system_name >= p->nstrings ||
	    f->filename >= p->nstrings || f->build_id >= p->nstrings)
		return wt_err_set(err, WT_EINVAL, "function refers to an unknown string");
	r = wt_hindex_lookup(&PRIV(p)->functions, h, f, function_eq, p, idx, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->nfunctions >= UINT32_MAX - 1 ||
	    grow((void **)&p->functions, &p->function_cap, p->nfunctions + 1, sizeof(*f)))
		goto oom;
	p->functions[p->nfunctions] = *f;
	*idx = (uint32_t)p->nfunctions++;
	wt_hindex_put(&PRIV(p)->functions, slot, h, *idx);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a function");
}

int wt_profile_add_function_named(wt_profile *p, const char *name, size_t name_len,
				  const char *file, uint32_t *idx, wt_err *err)
{
	wt_function f = {0, 0, 0, 0, 0};
	int r;

	if ((r = wt_profile_intern(p, name, name_len, &f.name, err)))
		return r;
	if (file && (r = wt_profile_intern_cstr(p, file, &f.filename, err)))
		return r;
	return wt_profile_add_function(p, &f, idx, err);
}

static int frame_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const wt_frame *a = &p->frames[id], *b = key;
	return a->function == b->function && a->mapping == b->mapping && a->line == b->line &&
	       a->address == b->address;
}

int wt_profile_add_frame(wt_profile *p, const wt_frame *f, uint32_t *idx, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	uint64_t v[4] = {f->function, f->mapping, (uint64_t)f->line, f->address};
	uint64_t h = hash_u64s(v, 4);
	size_t slot;
	int r;

	if (f->function != WT_NO_FUNCTION && f->function >= p->nfunctions)
		return wt_err_set(err, WT_EINVAL, "frame refers to unknown function %u", f->function);
	if (f->mapping != WT_NO_MAPPING && f->mapping >= p->nmappings)
		return wt_err_set(err, WT_EINVAL, "frame refers to unknown mapping %u", f->mapping);
	r = wt_hindex_lookup(&PRIV(p)->frames, h, f, frame_eq, p, idx, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->nframes >= UINT32_MAX - 1 ||
	    grow((void **)&p->frames, &p->frame_cap, p->nframes + 1, sizeof(*f)))
		goto oom;
	p->frames[p->nframes] = *f;
	*idx = (uint32_t)p->nframes++;
	wt_hindex_put(&PRIV(p)->frames, slot, h, *idx);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a frame");
}

/* ---- stacks ---------------------------------------------------------------- */
typedef struct { const uint32_t *f; size_t n; } stack_key;

static int stack_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const stack_key *k = key;
	/* n == 0: stack_frames may still be NULL (only empty stacks so far) */
	return p->stacks[id].len == k->n &&
	       (k->n == 0 || !memcmp(p->stack_frames + p->stacks[id].off, k->f,
				     k->n * sizeof(uint32_t)));
}

int wt_profile_add_stack(wt_profile *p, const uint32_t *frames, size_t n, uint32_t *idx, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	stack_key k = {frames, n};
	uint64_t h;
	size_t slot, i;
	int r;

	if (n > p->lim.max_stack_depth)
		return wt_err_set(err, WT_ELIMIT, "stack of %zu frames exceeds limit %zu",
				  n, p->lim.max_stack_depth);
	for (i = 0; i < n; i++)
		if (frames[i] >= p->nframes)
			return wt_err_set(err, WT_EINVAL, "stack refers to unknown frame %u", frames[i]);
	h = XXH3_64bits(frames, n * sizeof(uint32_t));
	r = wt_hindex_lookup(&PRIV(p)->stacks, h, &k, stack_eq, p, idx, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->stack_frames_len + n > UINT32_MAX)
		return wt_err_set(err, WT_ELIMIT, "too many stack frames in one profile");
	if (grow((void **)&p->stacks, &p->stack_cap, p->nstacks + 1, sizeof(wt_span)) ||
	    grow((void **)&p->stack_frames, &p->stack_frames_cap, p->stack_frames_len + n,
		 sizeof(uint32_t)))
		goto oom;
	if (n)
		memcpy(p->stack_frames + p->stack_frames_len, frames, n * sizeof(uint32_t));
	p->stacks[p->nstacks].off = (uint32_t)p->stack_frames_len;
	p->stacks[p->nstacks].len = (uint32_t)n;
	p->stack_frames_len += n;
	*idx = (uint32_t)p->nstacks++;
	wt_hindex_put(&PRIV(p)->stacks, slot, h, *idx);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a stack");
}

/* ---- labelsets ------------------------------------------------------------ */
typedef struct { const wt_label *l; size_t n; } labels_key;

static int label_cmp(const void *a, const void *b)
{
	const wt_label *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return 0;
}

static int labels_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const labels_key *k = key;
	const wt_label *a = p->labels + p->labelsets[id].off;
	size_t i;

	if (p->labelsets[id].len != k->n)
		return 0;
	for (i = 0; i < k->n; i++)
		if (a[i].key != k->l[i].key || a[i].str != k->l[i].str ||
		    a[i].num != k->l[i].num || a[i].num_unit != k->l[i].num_unit)
			return 0;
	return 1;
}

int wt_profile_add_labelset(wt_profile *p, const wt_label *labels, size_t n, uint32_t *idx, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	wt_label tmp[256];
	labels_key k;
	uint64_t h = 0;
	size_t slot, i, m = 0;
	int r;

	if (n == 0) {
		*idx = 0;
		return 0;
	}
	if (n > p->lim.max_labels || n > sizeof(tmp) / sizeof(tmp[0]))
		return wt_err_set(err, WT_ELIMIT, "%zu labels on one sample exceed limit %zu",
				  n, p->lim.max_labels);
	for (i = 0; i < n; i++) {
		if (labels[i].key >= p->nstrings || labels[i].str >= p->nstrings ||
		    labels[i].num_unit >= p->nstrings)
			return wt_err_set(err, WT_EINVAL, "label refers to an unknown string");
		tmp[i] = labels[i];
	}
	/* stable sort by key, then keep the last of each key */
	for (i = 1; i < n; i++) { /* insertion sort: n is small and it is stable */
		wt_label t = tmp[i];
		size_t j = i;
		while (j > 0 && label_cmp(&tmp[j - 1], &t) > 0) {
			tmp[j] = tmp[j - 1];
			j--;
		}
		tmp[j] = t;
	}
	for (i = 0; i < n; i++) {
		if (i + 1 < n && tmp[i + 1].key == tmp[i].key)
			continue;
		tmp[m++] = tmp[i];
	}
	for (i = 0; i < m; i++) {
		uint64_t v[4] = {tmp[i].key, tmp[i].str, (uint64_t)tmp[i].num, tmp[i].num_unit};
		h = XXH3_64bits_withSeed(v, sizeof(v), h);
	}
	k.l = tmp;
	k.n = m;
	r = wt_hindex_lookup(&PRIV(p)->labelsets, h, &k, labels_eq, p, idx, &slot);
	if (r < 0)
		goto oom;
	if (r == 1)
		return 0;
	if (p->labels_len + m > UINT32_MAX ||
	    grow((void **)&p->labelsets, &p->labelset_cap, p->nlabelsets + 1, sizeof(wt_span)) ||
	    grow((void **)&p->labels, &p->labels_cap, p->labels_len + m, sizeof(wt_label)))
		goto oom;
	memcpy(p->labels + p->labels_len, tmp, m * sizeof(wt_label));
	p->labelsets[p->nlabelsets].off = (uint32_t)p->labels_len;
	p->labelsets[p->nlabelsets].len = (uint32_t)m;
	p->labels_len += m;
	*idx = (uint32_t)p->nlabelsets++;
	wt_hindex_put(&PRIV(p)->labelsets, slot, h, *idx);
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a label set");
}

/* ---- samples ----------------------------------------------------------------- */
typedef struct { uint32_t stack, labelset; int64_t time_ns; } sample_key;

static int sample_eq(const void *ctx, uint32_t id, const void *key)
{
	const wt_profile *p = ctx;
	const sample_key *k = key;
	const wt_sample *s = &p->samples[id];
	return s->stack == k->stack && s->labelset == k->labelset && s->time_ns == k->time_ns;
}


int wt_profile_add_sample(wt_profile *p, uint32_t stack, uint32_t labelset,
			  int64_t time_ns, const int64_t *values, wt_err *err)
{
	if (PRIV(p)->sealed)
		return wt_err_set(err, WT_EINVAL, "profile: sealed (read only)");
	profile_priv *pv = PRIV(p);
	sample_key k = {stack, labelset, time_ns};
	int plain = !labelset && !time_ns;
	uint64_t h = 0;
	uint32_t id = 0;
	size_t slot = 0, i;
	int64_t *dst;
	int r;

	if (!p->ntypes)
		return wt_err_set(err, WT_EINVAL, "sample added before any sample type");
	if (stack >= p->nstacks)
		return wt_err_set(err, WT_EINVAL, "sample refers to unknown stack %u", stack);
	if (labelset >= p->nlabelsets)
		return wt_err_set(err, WT_EINVAL, "sample refers to unknown label set %u", labelset);
	if (plain) {
		if (stack >= pv->plain_cap && plain_grow(pv, p->nstacks))
			goto oom;
		r = pv->plain[stack] != 0;
		id = pv->plain[stack] - 1;
	} else {
		uint64_t v[3] = {stack, labelset, (uint64_t)time_ns};

		h = hash_u64s(v, 3);
		r = wt_hindex_lookup(&pv->samples, h, &k, sample_eq, p, &id, &slot);
		if (r < 0)
			goto oom;
	}
	if (r == 0) {
		size_t cap_before = p->sample_cap;
		if (p->nsamples >= p->lim.max_samples)
			return wt_err_set(err, WT_ELIMIT, "more than %zu distinct samples",
					  p->lim.max_samples);
		if (grow((void **)&p->samples, &p->sample_cap, p->nsamples + 1, sizeof(wt_sample)))
			goto oom;
		if (p->sample_cap != cap_before || !p->values) {
			int64_t *nv;
			if (p->sample_cap > SIZE_MAX / sizeof(int64_t) / p->ntypes)
				goto oom;
			nv = realloc(p->values, p->sample_cap * p->ntypes * sizeof(int64_t));
			if (!nv)
				goto oom;
			p->values = nv;
		}
		id = (uint32_t)p->nsamples++;
		p->samples[id].stack = stack;
		p->samples[id].labelset = labelset;
		p->samples[id].time_ns = time_ns;
		memset(p->values + (size_t)id * p->ntypes, 0, p->ntypes * sizeof(int64_t));
		if (plain)
			pv->plain[stack] = id + 1;
		else
			wt_hindex_put(&pv->samples, slot, h, id);
	}
	dst = p->values + (size_t)id * p->ntypes;
	for (i = 0; i < p->ntypes; i++) {
		if (__builtin_add_overflow(dst[i], values[i], &dst[i]))
			return wt_err_set(err, WT_EINVAL, "sample value overflows 64 bits");
	}
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "out of memory adding a sample");
}

/* ---- readers -------------------------------------------------------------------- */
const char *wt_profile_frame_name(const wt_profile *p, uint32_t frame, char *buf, size_t buflen)
{
	const wt_frame *f;

	if (frame >= p->nframes) {
		snprintf(buf, buflen, "?");
		return buf;
	}
	f = &p->frames[frame];
	if (f->function != WT_NO_FUNCTION) {
		const wt_function *fn = &p->functions[f->function];
		if (fn->name)
			return wt_profile_str(p, fn->name);
		if (fn->system_name)
			return wt_profile_str(p, fn->system_name);
	}
	if (f->mapping != WT_NO_MAPPING && p->mappings[f->mapping].filename) {
		const char *file = wt_profile_str(p, p->mappings[f->mapping].filename);
		const char *base = strrchr(file, '/');
		snprintf(buf, buflen, "%s+0x%" PRIx64, base ? base + 1 : file, f->address);
	} else {
		snprintf(buf, buflen, "0x%" PRIx64, f->address);
	}
	return buf;
}

const char *wt_profile_label_str(const wt_profile *p, uint32_t ls, const char *key)
{
	const wt_label *l;
	size_t n, i;

	if (ls >= p->nlabelsets)
		return NULL;
	l = wt_profile_labelset(p, ls, &n);
	for (i = 0; i < n; i++)
		if (l[i].str && !strcmp(wt_profile_str(p, l[i].key), key))
			return wt_profile_str(p, l[i].str);
	return NULL;
}

void wt_profile_warn(wt_profile *p, const char *fmt, ...)
{
	va_list ap;
	char *w;

	if (p->nwarnings == WT_PROFILE_MAX_WARNINGS || !(w = malloc(WT_PROFILE_WARNING_MAX))) {
		p->nwarnings_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(w, WT_PROFILE_WARNING_MAX, fmt, ap);
	va_end(ap);
	p->warnings[p->nwarnings++] = w;
}

int64_t wt_profile_total(const wt_profile *p, size_t type_idx)
{
	int64_t t = 0;
	size_t i;

	if (type_idx >= p->ntypes)
		return 0;
	for (i = 0; i < p->nsamples; i++)
		t += p->values[i * p->ntypes + type_idx];
	return t;
}
