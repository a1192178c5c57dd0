/*
 * rollup.c — per-minute function rollups (see rollup.h).
 *
 * Cost: O(frames) to name every frame once, then O(samples × stack
 * depth) to add values (a sample's distinct names found with a per-name
 * stamp; cells of one name chained by minute, no hash map). Memory is
 * sized for millions of distinct stacks: 8-byte-slot name index freed once
 * the frames are named, scratch arrays freed before the rows are made. Frames that print the same
 * name (same function at different lines) are one function here.
 *
 * Sums saturate at the int64 limits rather than wrap.
 * Samples with an empty stack have no function and add to no row; rows whose
 * self and total are both 0 are not emitted.
 */
#include "rollup.h"
#include "symref.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "hindex.h"

#define NS_PER_MINUTE 60000000000LL

/* A string pool owned by the rollup: names are copied once. */
typedef struct pool {
	char **blocks;
	size_t nblocks;
	char *cur;
	size_t left;
} pool;

static const char *pool_dup(pool *pl, const char *s, size_t n)
{
	char *r;

	if (n + 1 > pl->left) {
		size_t sz = n + 1 > 65536 ? n + 1 : 65536;
		char **nb = realloc(pl->blocks, (pl->nblocks + 1) * sizeof(*nb));

		if (!nb)
			return NULL;
		pl->blocks = nb;
		if (!(pl->cur = malloc(sz)))
			return NULL;
		pl->blocks[pl->nblocks++] = pl->cur;
		pl->left = sz;
	}
	r = pl->cur;
	memcpy(r, s, n);
	r[n] = 0;
	pl->cur += n + 1;
	pl->left -= n + 1;
	return r;
}

static void pool_free(pool *pl)
{
	size_t i;

	for (i = 0; i < pl->nblocks; i++)
		free(pl->blocks[i]);
	free(pl->blocks);
}

/* Names: distinct frame names, interned by content (an 8-byte-slot
 * index, freed once every frame is named). */
typedef struct names {
	const char **s;
	size_t n, cap;
	wt_hindex idx;
} names;

static int name_eq(const void *ctx, uint32_t id, const void *key)
{
	return !strcmp(((const names *)ctx)->s[id], key);
}

static int names_intern(names *nm, pool *pl, const char *s, uint32_t *id)
{
	size_t len = strlen(s), slot;
	uint64_t h = XXH3_64bits(s, len);
	int r = wt_hindex_lookup(&nm->idx, h, s, name_eq, nm, id, &slot);

	if (r)
		return r == 1 ? 0 : WT_ENOMEM;
	if (nm->n == nm->cap) {
		size_t ncap = nm->cap ? nm->cap * 2 : 256;
		const char **ns = realloc(nm->s, ncap * sizeof(*ns));

		if (!ns)
			return WT_ENOMEM;
		nm->s = ns;
		nm->cap = ncap;
	}
	if (!(nm->s[nm->n] = pool_dup(pl, s, len)))
		return WT_ENOMEM;
	wt_hindex_put(&nm->idx, slot, h, (uint32_t)nm->n);
	*id = (uint32_t)nm->n++;
	return 0;
}

typedef struct rpriv {
	pool pl;
} rpriv;

/* Accumulator cell: (minute, name) → self/total for every type. */
typedef struct cell {
	int64_t minute;
	uint32_t name;
} cell;

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* qsort_r comparators (no globals: rollups may be built on many threads). */
static int name_cmp(const void *a, const void *b, void *ctx)
{
	const char **s = ctx;

	return strcmp(s[*(const uint32_t *)a], s[*(const uint32_t *)b]);
}

static int type_cmp(const void *a, const void *b, void *ctx)
{
	const char **s = ctx;

	return strcmp(s[*(const size_t *)a], s[*(const size_t *)b]);
}

typedef struct cell_sort {
	const cell *cells;
	const uint32_t *rank; /* name id → position in name order */
} cell_sort;

static int cell_cmp(const void *a, const void *b, void *ctx)
{
	const cell_sort *cs = ctx;
	const cell *x = &cs->cells[*(const uint32_t *)a], *y = &cs->cells[*(const uint32_t *)b];

	if (x->minute != y->minute)
		return x->minute < y->minute ? -1 : 1;
	return cs->rank[x->name] < cs->rank[y->name] ? -1 : cs->rank[x->name] > cs->rank[y->name];
}

int wt_rollup_build(const wt_profile *p, int64_t fallback_ns, wt_rollup *out, wt_err *err)
{
	rpriv *rp = NULL;
	names nm;
	uint32_t *frame_name = NULL; /* frame id → name id */
	uint32_t *mark = NULL;       /* name id → last sample that listed it + 1 */
	cell *cells = NULL;
	int64_t *acc = NULL;         /* cells × ntypes × {self,total} */
	size_t ncells = 0, cells_cap = 0, nt = p->ntypes, i, j, nrows = 0;
	uint32_t *cell_head = NULL;  /* name id → its newest cell; chained by minute */
	uint32_t *cell_next = NULL;
	const char **tname = NULL, **tunit = NULL;
	size_t *tord = NULL;
	uint32_t *rank = NULL, *order = NULL;
	char nbuf[512]; /* frame names; symref keys with a build id are longer */
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&nm, 0, sizeof(nm));
	if (!(rp = calloc(1, sizeof(*rp))))
		goto oom;
	if (!p->nsamples || !nt)
		goto done;

	/* 1. name every frame (at most one name per frame: sized once) */
	if (!(frame_name = malloc((p->nframes ? p->nframes : 1) * sizeof(*frame_name))) ||
	    wt_hindex_reserve(&nm.idx, p->nframes) ||
	    !(nm.s = malloc((p->nframes ? p->nframes : 1) * sizeof(*nm.s))))
		goto oom;
	nm.cap = p->nframes ? p->nframes : 1;
	for (i = 0; i < p->nframes; i++)
		if (names_intern(&nm, &rp->pl, wt_profile_frame_key(p, (uint32_t)i, nbuf, sizeof(nbuf)),
				 &frame_name[i]))
			goto oom;

	wt_hindex_free(&nm.idx);

	/* 2. accumulate per (minute, name): a sample's leaf name gets self,
	 * each distinct name of its stack total (once, even when recursing) */
	if (!(mark = calloc(nm.n + 1, sizeof(*mark))) || !(cell_head = malloc((nm.n + 1) * sizeof(*cell_head))))
		goto oom;
	for (i = 0; i <= nm.n; i++)
		cell_head[i] = UINT32_MAX;
	for (i = 0; i < p->nsamples; i++) {
		const wt_sample *s = &p->samples[i];
		const int64_t *v = wt_profile_values(p, i);
		int64_t t = s->time_ns ? s->time_ns : p->time_ns ? p->time_ns : fallback_ns;
		int64_t minute = floor_div(t, NS_PER_MINUTE);
		size_t n, k;
		const uint32_t *fr = wt_profile_stack(p, s->stack, &n);
		int any = 0;

		for (j = 0; j < nt; j++)
			any |= v[j] != 0;
		if (!any || !n)
			continue;
		for (k = 0; k <= n; k++) {
			/* k == 0: the leaf (self); then every distinct name (total) */
			uint32_t nid = frame_name[fr[k ? k - 1 : 0]], ci;
			size_t c;

			if (k) {
				if (mark[nid] == i + 1)
					continue;
				mark[nid] = (uint32_t)(i + 1);
			}
			for (ci = cell_head[nid]; ci != UINT32_MAX && cells[ci].minute != minute; ci = cell_next[ci])
				;
			if (ci == UINT32_MAX) {
				if (ncells == cells_cap) {
					/* first: one cell per name (one minute), then doubling */
					size_t ncap = cells_cap ? cells_cap * 2 : nm.n + 1024;
					cell *nc = realloc(cells, ncap * sizeof(*nc));
					int64_t *na;
					uint32_t *nn;

					if (!nc)
						goto oom;
					cells = nc;
					if (!(na = realloc(acc, ncap * nt * 2 * sizeof(*na))))
						goto oom;
					acc = na;
					if (!(nn = realloc(cell_next, ncap * sizeof(*nn))))
						goto oom;
					cell_next = nn;
					cells_cap = ncap;
				}
				ci = (uint32_t)ncells++;
				cells[ci].minute = minute;
				cells[ci].name = nid;
				memset(acc + (size_t)ci * nt * 2, 0, nt * 2 * sizeof(*acc));
				cell_next[ci] = cell_head[nid];
				cell_head[nid] = ci;
			}
			for (c = 0; c < nt; c++) {
				int64_t *cv = acc + ((size_t)ci * nt + c) * 2;

				if (!k)
					cv[0] = sat_add(cv[0], v[c]); /* self */
				else
					cv[1] = sat_add(cv[1], v[c]); /* total */
			}
		}
	}
	/* what the rows do not need goes before they are made */
	free(frame_name);
	free(mark);
	free(cell_head);
	free(cell_next);
	frame_name = mark = cell_head = cell_next = NULL;

	/* 4. rows */
	if (!(tname = calloc(nt, sizeof(*tname))) || !(tunit = calloc(nt, sizeof(*tunit))))
		goto oom;
	for (j = 0; j < nt; j++) {
		const char *tn = wt_profile_str(p, p->types[j].canonical);

		if (!*tn)
			tn = wt_profile_str(p, p->types[j].type);
		if (!(tname[j] = pool_dup(&rp->pl, tn, strlen(tn))))
			goto oom;
		tn = wt_profile_str(p, p->types[j].unit);
		if (!(tunit[j] = pool_dup(&rp->pl, tn, strlen(tn))))
			goto oom;
	}
	/* Emit rows already in (type, minute, function) order: names are
	 * ranked once, so sorting compares integers, not strings. */
	if (!(tord = malloc(nt * sizeof(*tord))) ||
	    !(rank = malloc((nm.n ? nm.n : 1) * sizeof(*rank))) ||
	    !(order = malloc((ncells ? ncells : 1) * sizeof(*order))))
		goto oom;
	for (j = 0; j < nt; j++)
		tord[j] = j;
	qsort_r(tord, nt, sizeof(*tord), type_cmp, (void *)tname);
	for (i = 0; i < nm.n; i++)
		rank[i] = (uint32_t)i;
	qsort_r(rank, nm.n, sizeof(*rank), name_cmp, (void *)nm.s);
	for (i = 0; i < ncells; i++)
		order[i] = (uint32_t)i;
	{
		/* invert: rank[] held ids in name order; turn it into id → rank */
		uint32_t *inv = malloc((nm.n ? nm.n : 1) * sizeof(*inv));
		cell_sort cs;

		if (!inv)
			goto oom;
		for (i = 0; i < nm.n; i++)
			inv[rank[i]] = (uint32_t)i;
		free(rank);
		rank = inv;
		cs.cells = cells;
		cs.rank = rank;
		qsort_r(order, ncells, sizeof(*order), cell_cmp, &cs);
	}
	if (ncells && !(out->rows = malloc(ncells * nt * sizeof(*out->rows))))
		goto oom;
	for (j = 0; j < nt; j++) {
		size_t t = tord[j];

		for (i = 0; i < ncells; i++) {
			uint32_t ci = order[i];
			const int64_t *cv = acc + ((size_t)ci * nt + t) * 2;
			wt_rollup_row *r;

			if (!cv[0] && !cv[1])
				continue;
			r = &out->rows[nrows++];
			r->type = tname[t];
			r->unit = tunit[t];
			r->function = nm.s[cells[ci].name];
			r->minute = cells[ci].minute;
			r->self = cv[0];
			r->total = cv[1];
		}
	}
	out->n = nrows;
done:
	out->priv = rp;
	rp = NULL;
	goto cleanup;
oom:
	rc = wt_err_set(err, WT_ENOMEM, "rollup: out of memory");
	free(out->rows);
	out->rows = NULL;
	out->n = 0;
cleanup:
	if (rp) {
		pool_free(&rp->pl);
		free(rp);
	}
	free(frame_name);
	free(mark);
	free(cells);
	free(acc);
	free(cell_head);
	free(cell_next);
	free(tname);
	free(tunit);
	free(tord);
	free(rank);
	free(order);
	free(nm.s);
	wt_hindex_free(&nm.idx);
	return rc;
}

void wt_rollup_free(wt_rollup *r)
{
	rpriv *rp;

	if (!r)
		return;
	rp = r->priv;
	if (rp) {
		pool_free(&rp->pl);
		free(rp);
	}
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
