/*
 * rollup.c — per-minute function rollups (see rollup.h).
 *
 * Cost: O(frames) to name every frame once, O(stack frames) per distinct
 * stack to find its leaf and its distinct function names, then O(samples ×
 * distinct names in the stack) to add values. Frames that print the same
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

#include "u64map.h"

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

/* Names: distinct frame names, interned by content. */
typedef struct names {
	const char **s;
	size_t n, cap;
	wt_u64map idx; /* xxh3 of name → first name id with that hash; collisions chain */
	uint32_t *next; /* chain of ids sharing a hash */
} names;

static int names_intern(names *nm, pool *pl, const char *s, uint32_t *id)
{
	size_t len = strlen(s), slot;
	uint64_t h = XXH3_64bits(s, len);
	uint32_t i;

	if (wt_u64map_slot(&nm->idx, h, &slot))
		return WT_ENOMEM;
	if (nm->idx.vals[slot] != UINT32_MAX) {
		for (i = nm->idx.vals[slot]; i != UINT32_MAX; i = nm->next[i])
			if (!strcmp(nm->s[i], s)) {
				*id = i;
				return 0;
			}
	}
	if (nm->n == nm->cap) {
		size_t ncap = nm->cap ? nm->cap * 2 : 256;
		const char **ns = realloc(nm->s, ncap * sizeof(*ns));
		uint32_t *nx;

		if (!ns)
			return WT_ENOMEM;
		nm->s = ns;
		if (!(nx = realloc(nm->next, ncap * sizeof(*nx))))
			return WT_ENOMEM;
		nm->next = nx;
		nm->cap = ncap;
	}
	if (!(nm->s[nm->n] = pool_dup(pl, s, len)))
		return WT_ENOMEM;
	nm->next[nm->n] = nm->idx.vals[slot]; /* UINT32_MAX when new hash */
	if (nm->idx.vals[slot] == UINT32_MAX)
		nm->idx.n++;
	nm->idx.keys[slot] = h;
	nm->idx.vals[slot] = (uint32_t)nm->n;
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
	uint32_t *stack_off = NULL;  /* stack → offset into uniq[] */
	uint32_t *uniq = NULL;       /* per stack: leaf name, then distinct names */
	uint32_t *mark = NULL;       /* name id → last stack that listed it + 1 */
	cell *cells = NULL;
	int64_t *acc = NULL;         /* cells × ntypes × {self,total} */
	size_t ncells = 0, cells_cap = 0, nt = p->ntypes, i, j, nrows = 0;
	wt_u64map cellmap;              /* (minute, name) hash → first cell; chained */
	uint32_t *cell_next = NULL;
	const char **tname = NULL, **tunit = NULL;
	size_t *tord = NULL;
	uint32_t *rank = NULL, *order = NULL;
	char nbuf[512]; /* frame names; symref keys with a build id are longer */
	int rc = 0;

	memset(out, 0, sizeof(*out));
	memset(&nm, 0, sizeof(nm));
	memset(&cellmap, 0, sizeof(cellmap));
	if (!(rp = calloc(1, sizeof(*rp))))
		goto oom;
	if (!p->nsamples || !nt)
		goto done;

	/* 1. name every frame */
	if (!(frame_name = malloc((p->nframes ? p->nframes : 1) * sizeof(*frame_name))))
		goto oom;
	for (i = 0; i < p->nframes; i++)
		if (names_intern(&nm, &rp->pl, wt_profile_frame_key(p, (uint32_t)i, nbuf, sizeof(nbuf)),
				 &frame_name[i]))
			goto oom;

	/* 2. per stack: leaf name and the distinct names (total counted once) */
	if (!(stack_off = malloc((p->nstacks + 1) * sizeof(*stack_off))) ||
	    !(uniq = malloc((p->stack_frames_len + p->nstacks + 1) * sizeof(*uniq))) ||
	    !(mark = calloc(nm.n + 1, sizeof(*mark))))
		goto oom;
	{
		size_t u = 0;

		for (i = 0; i < p->nstacks; i++) {
			size_t n;
			const uint32_t *fr = wt_profile_stack(p, (uint32_t)i, &n);

			stack_off[i] = (uint32_t)u;
			if (!n)
				continue;
			uniq[u++] = frame_name[fr[0]];
			for (j = 0; j < n; j++) {
				uint32_t nid = frame_name[fr[j]];

				if (mark[nid] == i + 1)
					continue;
				mark[nid] = (uint32_t)(i + 1);
				uniq[u++] = nid;
			}
		}
		stack_off[p->nstacks] = (uint32_t)u;
	}

	/* 3. accumulate per (minute, name) */
	for (i = 0; i < p->nsamples; i++) {
		const wt_sample *s = &p->samples[i];
		const int64_t *v = wt_profile_values(p, i);
		int64_t t = s->time_ns ? s->time_ns : p->time_ns ? p->time_ns : fallback_ns;
		int64_t minute = floor_div(t, NS_PER_MINUTE);
		uint32_t a = stack_off[s->stack], b = stack_off[s->stack + 1], k;
		int any = 0;

		for (j = 0; j < nt; j++)
			any |= v[j] != 0;
		if (!any || a == b)
			continue;
		for (k = a; k < b; k++) {
			/* uniq[a] is the leaf (self); uniq[a+1..b) the distinct names (total) */
			uint32_t nid = uniq[k];
			uint64_t key = (uint64_t)minute * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)nid << 1);
			size_t slot, c;
			uint32_t ci;

			if (wt_u64map_slot(&cellmap, key, &slot))
				goto oom;
			ci = cellmap.vals[slot];
			while (ci != UINT32_MAX && !(cells[ci].minute == minute && cells[ci].name == nid))
				ci = cell_next[ci];
			if (ci == UINT32_MAX) {
				if (ncells == cells_cap) {
					size_t ncap = cells_cap ? cells_cap * 2 : 1024;
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
				if (cellmap.vals[slot] == UINT32_MAX) {
					cellmap.n++;
					cell_next[ci] = UINT32_MAX;
				} else {
					cell_next[ci] = cellmap.vals[slot];
				}
				cellmap.keys[slot] = key;
				cellmap.vals[slot] = ci;
			}
			for (c = 0; c < nt; c++) {
				int64_t *cv = acc + ((size_t)ci * nt + c) * 2;

				if (k == a)
					cv[0] = sat_add(cv[0], v[c]); /* self */
				else
					cv[1] = sat_add(cv[1], v[c]); /* total */
			}
		}
	}

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
	free(stack_off);
	free(uniq);
	free(mark);
	free(cells);
	free(acc);
	free(cell_next);
	free(tname);
	free(tunit);
	free(tord);
	free(rank);
	free(order);
	free(nm.s);
	free(nm.next);
	wt_u64map_free(&nm.idx);
	wt_u64map_free(&cellmap);
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
