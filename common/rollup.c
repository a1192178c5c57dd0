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

/* The string id wt_profile_frame_key() returns for frame i when it is a
 * function's name (or system name) as interned; 0 when the key is made up
 * (an address, a symref). */
static uint32_t frame_name_sid(const wt_profile *p, uint32_t i)
{
	const wt_frame *f = &p->frames[i];
	const wt_function *fn;

	if (f->function == WT_NO_FUNCTION)
		return 0;
	fn = &p->functions[f->function];
	return fn->name ? fn->name : fn->system_name;
}

typedef struct rpriv {
	pool pl;
} rpriv;

/* Accumulator cell: (minute, name) → self/total for every type. A cell
 * and its ntypes × {self, total} sums are one record of cell_size(nt)
 * bytes (one cache line for two types): the hot loop touches one place. */
typedef struct cell {
	int64_t minute;
	uint32_t name;
	uint32_t next; /* the name's previous cell (another minute), UINT32_MAX = none */
} cell;

static size_t cell_size(size_t nt)
{
	return sizeof(cell) + nt * 2 * sizeof(int64_t);
}

#define CELL(base, sz, i) ((cell *)((char *)(base) + (size_t)(i) * (sz)))
#define CELL_ACC(c) ((int64_t *)((c) + 1))

/* Per name: the last sample that listed it + 1, and its newest cell. */
typedef struct name_state {
	uint32_t mark, head;
} name_state;

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
static int type_cmp(const void *a, const void *b, void *ctx)
{
	const char **s = ctx;

	return strcmp(s[*(const size_t *)a], s[*(const size_t *)b]);
}

typedef struct cell_sort {
	const cell *cells;
	size_t size;          /* cell_size() */
	const uint32_t *rank; /* name id → position in name order */
} cell_sort;

static int cell_cmp(const void *a, const void *b, void *ctx)
{
	const cell_sort *cs = ctx;
	const cell *x = CELL(cs->cells, cs->size, *(const uint32_t *)a);
	const cell *y = CELL(cs->cells, cs->size, *(const uint32_t *)b);

	if (x->minute != y->minute)
		return x->minute < y->minute ? -1 : 1;
	return cs->rank[x->name] < cs->rank[y->name] ? -1 : cs->rank[x->name] > cs->rank[y->name];
}

/* LSD radix sort of (key, idx) pairs by key, 8 bits a pass, skipping the
 * passes whose byte is the same in every key. The counts of all eight
 * bytes are taken in one read of the keys, and the passes alternate
 * between the arrays and the scratch (one copy back at the end when the
 * result is in the scratch). tk/ti: scratch of n. */
static void radix_sort(uint64_t *key, uint32_t *idx, uint64_t *tk, uint32_t *ti, size_t n)
{
	size_t cnt[8][256], i, b;
	uint64_t *sk = key, *dk = tk;
	uint32_t *si = idx, *di = ti;

	if (!n)
		return;
	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < n; i++) {
		uint64_t k = key[i];

		for (b = 0; b < 8; b++)
			cnt[b][(k >> (8 * b)) & 0xff]++;
	}
	for (b = 0; b < 8; b++) {
		size_t *c = cnt[b], sum = 0, sh = 8 * b;

		if (c[(key[0] >> sh) & 0xff] == n)
			continue;
		for (i = 0; i < 256; i++) {
			size_t x = c[i];
			c[i] = sum;
			sum += x;
		}
		for (i = 0; i < n; i++) {
			size_t d = c[(sk[i] >> sh) & 0xff]++;
			dk[d] = sk[i];
			di[d] = si[i];
		}
		{
			uint64_t *t = sk;
			uint32_t *u = si;

			sk = dk;
			dk = t;
			si = di;
			di = u;
		}
	}
	if (sk != key) {
		memcpy(key, sk, n * sizeof(*key));
		memcpy(idx, si, n * sizeof(*idx));
	}
}

/* order[] = cell indexes by (minute, name rank), when the minutes span
 * less than 2^32 (they do for any real profile): 0; else (or out of
 * memory) -1 and order[] is left for qsort. */
static int sort_cells(const cell_sort *cs, size_t n, uint32_t *order)
{
	uint64_t *key, *tk;
	uint32_t *ti;
	int64_t lo, hi;
	size_t i;
	int rc = -1;

	if (!n)
		return 0;
	lo = hi = cs->cells->minute;
	for (i = 1; i < n; i++) {
		int64_t m = CELL(cs->cells, cs->size, i)->minute;

		if (m < lo)
			lo = m;
		if (m > hi)
			hi = m;
	}
	if ((uint64_t)hi - (uint64_t)lo > UINT32_MAX)
		return -1;
	key = malloc(n * sizeof(*key));
	tk = malloc(n * sizeof(*tk));
	ti = malloc(n * sizeof(*ti));
	if (key && tk && ti) {
		for (i = 0; i < n; i++) {
			const cell *c = CELL(cs->cells, cs->size, i);

			key[i] = ((uint64_t)c->minute - (uint64_t)lo) << 32 | cs->rank[c->name];
			order[i] = (uint32_t)i;
		}
		radix_sort(key, order, tk, ti, n);
		rc = 0;
	}
	free(key);
	free(tk);
	free(ti);
	return rc;
}

/* Up to 8 bytes of s as a big-endian number, zero after the string's
 * end: numbers compare as the bytes do under strcmp. */
static uint64_t load8(const char *s)
{
	uint64_t k = 0;
	int b;

	for (b = 0; b < 8 && s[b]; b++)
		k |= (uint64_t)(uint8_t)s[b] << (56 - 8 * b);
	return k;
}

typedef struct name_sort {
	const char **s;
	size_t d;
} name_sort;

static int name_cmp_from(const void *a, const void *b, void *ctx)
{
	const name_sort *ns = ctx;

	return strcmp(ns->s[*(const uint32_t *)a] + ns->d, ns->s[*(const uint32_t *)b] + ns->d);
}

/* Sort name ids by their strings (strcmp order), given that all of them
 * agree on their first d bytes: 8 bytes at a time, as numbers (radix
 * sorted, or insertion sorted when few), then each run of equal numbers
 * that does not end its strings one level deeper. Long shared prefixes
 * ("github.com/...") cost a pass per 8 bytes instead of a strcmp from the
 * start per comparison. Past 256 shared bytes the rest is strcmp'd, which
 * bounds the recursion. key/tk/ti: scratch of n. */
static void sort_names(uint32_t *ids, size_t n, const char **s, size_t d, uint64_t *key, uint64_t *tk,
		       uint32_t *ti)
{
	size_t i, j;

	if (n < 2)
		return;
	if (d >= 256) {
		name_sort ns = {s, d};

		qsort_r(ids, n, sizeof(*ids), name_cmp_from, &ns);
		return;
	}
	for (i = 0; i < n; i++)
		key[i] = load8(s[ids[i]] + d);
	if (n < 32) {
		for (i = 1; i < n; i++)
			for (j = i; j > 0 && key[j - 1] > key[j]; j--) {
				uint64_t k = key[j];
				uint32_t t = ids[j];

				key[j] = key[j - 1];
				ids[j] = ids[j - 1];
				key[j - 1] = k;
				ids[j - 1] = t;
			}
	} else {
		radix_sort(key, ids, tk, ti, n);
	}
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && key[j] == key[i]; j++)
			;
		/* a run's strings go on past these 8 bytes when none ended in them */
		if (j - i > 1 && (key[i] & 0xff))
			sort_names(ids + i, j - i, s, d + 8, key + i, tk, ti);
	}
}

static int64_t sample_minute(const wt_profile *p, size_t i, int64_t fallback_ns)
{
	const wt_sample *s = &p->samples[i];
	int64_t t = s->time_ns ? s->time_ns : p->time_ns ? p->time_ns : fallback_ns;

	return floor_div(t, NS_PER_MINUTE);
}

/* 1 when every sample falls in the same minute. */
static int one_minute(const wt_profile *p, int64_t fallback_ns)
{
	int64_t m0 = sample_minute(p, 0, fallback_ns);
	/* the minute of every sample without a time of its own */
	int64_t untimed = floor_div(p->time_ns ? p->time_ns : fallback_ns, NS_PER_MINUTE);
	size_t i;

	for (i = 1; i < p->nsamples; i++)
		if ((p->samples[i].time_ns ? sample_minute(p, i, fallback_ns) : untimed) != m0)
			return 0;
	return 1;
}

/* wt_rollup_build's accumulation when one_minute(): one cell per name
 * (cell i = name i), sums as in the general loop, then the cells no
 * sample reached are dropped. *cells (cell_size records) and *ncells are
 * the caller's to free; -1 when out of memory. */
static int accumulate_one_minute(const wt_profile *p, int64_t fallback_ns, const uint32_t *frame_name,
				 size_t nnames, cell **cells_out, size_t *ncells)
{
	size_t nt = p->ntypes, csz = cell_size(nt), i, j, k, n, m = 0;
	int64_t minute = sample_minute(p, 0, fallback_ns);
	cell *cells;

	if (nnames > UINT32_MAX || !(cells = calloc(nnames ? nnames : 1, csz)))
		return -1;
	for (i = 0; i < nnames; i++) {
		cell *ce = CELL(cells, csz, i);

		ce->minute = minute;
		ce->name = (uint32_t)i;
	}
	for (i = 0; i < p->nsamples; i++) {
		const int64_t *v = wt_profile_values(p, i);
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);
		int any = 0;

		for (j = 0; j < nt; j++)
			any |= v[j] != 0;
		if (!any || !n)
			continue;
		for (k = 0; k <= n; k++) {
			/* k == 0: the leaf (self); then every distinct name (total) */
			cell *ce = CELL(cells, csz, frame_name[fr[k ? k - 1 : 0]]);
			int64_t *cv;
			size_t c;

			if (k) {
				if (ce->next == i + 1)
					continue;
				ce->next = (uint32_t)(i + 1);
			} else if (!ce->next) {
				ce->next = UINT32_MAX; /* reached (no sample has that mark) */
			}
			cv = CELL_ACC(ce) + (k ? 1 : 0);
			for (c = 0; c < nt; c++)
				cv[2 * c] = sat_add(cv[2 * c], v[c]);
		}
	}
	/* keep the cells a sample reached, in name order */
	for (i = 0; i < nnames; i++) {
		cell *ce = CELL(cells, csz, i);

		if (!ce->next)
			continue;
		ce->next = UINT32_MAX;
		if (m != i)
			memcpy(CELL(cells, csz, m), ce, csz);
		m++;
	}
	*cells_out = cells;
	*ncells = m;
	return 0;
}

int wt_rollup_build(const wt_profile *p, int64_t fallback_ns, wt_rollup *out, wt_err *err)
{
	rpriv *rp = NULL;
	names nm;
	uint32_t *frame_name = NULL; /* frame id → name id */
	uint32_t *str_name = NULL;   /* string id → name id, UINT32_MAX = not yet */
	name_state *ns = NULL;       /* name id → mark, newest cell */
	cell *cells = NULL;          /* cell records, cell_size(nt) bytes each */
	size_t ncells = 0, cells_cap = 0, nt = p->ntypes, csz = cell_size(p->ntypes), i, j, nrows = 0;
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
	/* frames of one function (at different lines) print its name string:
	 * those are named once per string id, not hashed once per frame */
	if (!(str_name = malloc((p->nstrings ? p->nstrings : 1) * sizeof(*str_name))))
		goto oom;
	memset(str_name, 0xff, (p->nstrings ? p->nstrings : 1) * sizeof(*str_name));
	for (i = 0; i < p->nframes; i++) {
		uint32_t sid = frame_name_sid(p, (uint32_t)i);

		if (sid && str_name[sid] != UINT32_MAX) {
			frame_name[i] = str_name[sid];
			continue;
		}
		if (names_intern(&nm, &rp->pl, wt_profile_frame_key(p, (uint32_t)i, nbuf, sizeof(nbuf)),
				 &frame_name[i]))
			goto oom;
		if (sid)
			str_name[sid] = frame_name[i];
	}
	free(str_name);
	str_name = NULL;

	wt_hindex_free(&nm.idx);

	/* 2. accumulate per (minute, name): a sample's leaf name gets self,
	 * each distinct name of its stack total (once, even when recursing) */
	if (one_minute(p, fallback_ns)) {
		/* every sample in one minute (always so for pprof, which has no
		 * per-sample times): cell i is name i, and its `next` is the
		 * name's mark while accumulating, so a frame costs one random
		 * access instead of two. The rows (at most one per name and
		 * type) are allocated first: the largest block goes where the
		 * freed memory has room for it, before the cells split that */
		if (nm.n && nt > SIZE_MAX / sizeof(*out->rows) / nm.n)
			goto oom;
		if (nm.n && !(out->rows = malloc(nm.n * nt * sizeof(*out->rows))))
			goto oom;
		if (accumulate_one_minute(p, fallback_ns, frame_name, nm.n, &cells, &ncells))
			goto oom;
		goto accumulated;
	}
	if (!(ns = malloc((nm.n + 1) * sizeof(*ns))))
		goto oom;
	for (i = 0; i <= nm.n; i++) {
		ns[i].mark = 0;
		ns[i].head = UINT32_MAX;
	}
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
			name_state *st = &ns[nid];
			cell *ce = NULL;
			int64_t *cv;
			size_t c;

			if (k) {
				if (st->mark == i + 1)
					continue;
				st->mark = (uint32_t)(i + 1);
			}
			for (ci = st->head; ci != UINT32_MAX; ci = ce->next) {
				ce = CELL(cells, csz, ci);
				if (ce->minute == minute)
					break;
			}
			if (ci == UINT32_MAX) {
				if (ncells == cells_cap) {
					/* first: one cell per name (one minute), then doubling */
					size_t ncap = cells_cap ? cells_cap * 2 : nm.n + 1024;
					cell *nc;

					if (ncap > UINT32_MAX || ncap > SIZE_MAX / csz ||
					    !(nc = realloc(cells, ncap * csz)))
						goto oom;
					cells = nc;
					cells_cap = ncap;
				}
				ci = (uint32_t)ncells++;
				ce = CELL(cells, csz, ci);
				ce->minute = minute;
				ce->name = nid;
				ce->next = st->head;
				memset(CELL_ACC(ce), 0, nt * 2 * sizeof(int64_t));
				st->head = ci;
			}
			cv = CELL_ACC(ce) + (k ? 1 : 0); /* self, or total */
			for (c = 0; c < nt; c++)
				cv[2 * c] = sat_add(cv[2 * c], v[c]);
		}
	}
accumulated:
	/* what the rows do not need goes before they are made */
	free(frame_name);
	free(ns);
	frame_name = NULL;
	ns = NULL;

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
	{
		uint64_t *key = malloc((nm.n ? nm.n : 1) * sizeof(*key));
		uint64_t *tk = malloc((nm.n ? nm.n : 1) * sizeof(*tk));
		uint32_t *ti = malloc((nm.n ? nm.n : 1) * sizeof(*ti));

		if (key && tk && ti)
			sort_names(rank, nm.n, nm.s, 0, key, tk, ti);
		free(key);
		free(tk);
		free(ti);
		if (!key || !tk || !ti)
			goto oom;
	}
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
		cs.size = csz;
		cs.rank = rank;
		if (sort_cells(&cs, ncells, order))
			qsort_r(order, ncells, sizeof(*order), cell_cmp, &cs);
	}
	if (ncells && !out->rows && !(out->rows = malloc(ncells * nt * sizeof(*out->rows))))
		goto oom;
	for (j = 0; j < nt; j++) {
		size_t t = tord[j];

		for (i = 0; i < ncells; i++) {
			const cell *ce = CELL(cells, csz, order[i]);
			const int64_t *cv = CELL_ACC(ce) + t * 2;
			wt_rollup_row *r;

			if (!cv[0] && !cv[1])
				continue;
			r = &out->rows[nrows++];
			r->type = tname[t];
			r->unit = tunit[t];
			r->function = nm.s[ce->name];
			r->minute = ce->minute;
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
	free(str_name);
	free(ns);
	free(cells);
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
