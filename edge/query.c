/*
 * query.c — local queries from the edge's own buffer (a subset of the
 * hub's query API, docs/api.md "### Local queries"):
 * GET /v1/projects/{p}/profiles/table, /profiles/flamegraph and
 * /services. They run on a worker thread and render with common/flame.h.
 *
 * Two ways to the same sums (keys.h):
 *  - the stack index (edge.query_aggregates, default): the `stackidx`
 *    minutes of the range give (labels hash, stack hash, value) triples,
 *    24 bytes each, summed per distinct (labels, stack); then one `stacks`
 *    row per distinct labels hash says whether its labels match the
 *    filters, and one per distinct stack hash gives the frames, added to
 *    the flame graph once with the stack's matching sum. The payloads
 *    read grow with distinct stacks, not with samples or minutes.
 *  - the rows: every `stacks` row of the range, labels matched and frames
 *    added row by row. Used for the minutes before
 *    edge_buffer_stackidx_since() (data written before the index existed)
 *    and for everything with edge.query_aggregates = false.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <endian.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <string.h>

#include "buf.h"
#include "flame.h"
#include "http_server.h"
#include "keys.h"
#include "log.h"
#include "server.h"
#include "u64map.h"

#define MAX_FILTERS 32
#define DEFAULT_MAX_NODES 20000
#define MAX_LABELS_PER_STACK 256

typedef struct query {
	char project[256];
	char view[16];
	char *service, *type;
	int64_t from_ns, until_ns; /* until 0 = open */
	char *filt[2 * MAX_FILTERS];
	size_t nfilt;
	size_t limit, max_nodes;
} query;

typedef struct series {
	char *svc, *type, *unit;
} series;

static void query_free(edge_task *t)
{
	query *q = t->priv;
	if (!q)
		return;
	free(q->service);
	free(q->type);
	for (size_t i = 0; i < 2 * q->nfilt; i++)
		free(q->filt[i]);
	free(q);
	t->priv = NULL;
}

static void series_free(series *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].svc);
		free(s[i].type);
		free(s[i].unit);
	}
	free(s);
}

/* Every (service, type, unit) of the project, in key order. */
static int list_series(edge_buffer *st, const char *proj, series **out, size_t *n)
{
	wt_buf pfx = WT_BUF_INIT;
	series *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc = 0;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_META));

	wt_buf_puts(&pfx, EDGE_META_TYPES);
	wt_buf_append(&pfx, proj, strlen(proj) + 1);
	for (rocksdb_iter_seek(it, (const char *)pfx.data, pfx.len); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		const char *p, *s, *ty;
		const uint8_t *rest;
		size_t restlen;
		if (kl < pfx.len || memcmp(k, pfx.data, pfx.len) != 0)
			break;
		size_t tl = strlen(EDGE_META_TYPES);
		if (edge_key_split((const uint8_t *)k + tl, kl - tl, &p, &s, &ty, &rest, &restlen) != 0)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			series *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = WT_ENOMEM;
				break;
			}
			v = nv;
		}
		v[cnt].svc = strdup(s);
		v[cnt].type = strdup(ty);
		v[cnt].unit = strndup(val, vl);
		cnt++;
		if (!v[cnt - 1].svc || !v[cnt - 1].type || !v[cnt - 1].unit) {
			rc = WT_ENOMEM;
			break;
		}
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	wt_buf_free(&pfx);
	if (rc) {
		series_free(v, cnt);
		return rc;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static void services_view(edge_task *t, query *q)
{
	series *s = NULL;
	size_t n = 0;
	if (list_series(t->srv->store, q->project, &s, &n) != 0) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory listing services");
		return;
	}
	json_t *arr = json_array(), *cur = NULL;
	const char *last = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!last || strcmp(last, s[i].svc)) {
			cur = json_array();
			json_array_append_new(arr, json_pack("{s:s,s:o}", "name", s[i].svc, "types", cur));
			last = s[i].svc;
		}
		json_array_append_new(cur, json_pack("{s:s,s:s}", "type", s[i].type, "unit", s[i].unit));
	}
	t->reply = json_pack("{s:s,s:o}", "project", q->project, "services", arr);
	series_free(s, n);
}

static int labels_match(const query *q, const char **labels, size_t nl)
{
	for (size_t f = 0; f < q->nfilt; f++) {
		int ok = 0;
		for (size_t i = 0; i < nl && !ok; i++)
			if (!strcmp(labels[2 * i], q->filt[2 * f]) && !strcmp(labels[2 * i + 1], q->filt[2 * f + 1]))
				ok = 1;
		if (!ok)
			return 0;
	}
	return 1;
}

static int64_t minute_floor(int64_t ns)
{
	int64_t m = ns / 60000000000LL;
	if (ns < 0 && ns % 60000000000LL)
		m--;
	return m < 0 ? 0 : m;
}

/* lo, hi: the keys of series (svc, type) at a and b (minutes, or days in
 * the stack dictionary), the bounds of a scan of [a, b). 0 or WT_ENOMEM;
 * the caller frees both either way. */
static int series_bounds(const query *q, const char *svc, const char *type, uint64_t a, uint64_t b, wt_buf *lo,
			 wt_buf *hi)
{
	uint8_t m[8];

	edge_key_series(lo, q->project, svc, type);
	edge_key_series(hi, q->project, svc, type);
	edge_be64_put(m, a);
	wt_buf_append(lo, m, 8);
	edge_be64_put(m, b);
	wt_buf_append(hi, m, 8);
	return lo->oom || hi->oom ? WT_ENOMEM : 0;
}

/* WT_EIO (logged) if the iteration over what failed, else rc */
static int iter_status(rocksdb_iterator_t *it, const char *what, int rc)
{
	char *e = NULL;

	rocksdb_iter_get_error(it, &e);
	if (e) {
		wt_error("query: iterating %s failed: %s", what, e);
		free(e);
		rc = WT_EIO;
	}
	return rc;
}

/* Add every stacks row of series (svc, type) in minutes [mlo, mhi) to f. */
static int scan_series(edge_task *t, query *q, const char *svc, const char *type, uint64_t mlo, uint64_t mhi,
		       wt_flame *f, const char **frames, size_t maxframes, uint64_t *rows)
{
	edge_buffer *st = t->srv->store;
	wt_buf lo = WT_BUF_INIT, hi = WT_BUF_INIT;
	int rc = 0;
	const char *labels[2 * MAX_LABELS_PER_STACK];

	if ((rc = series_bounds(q, svc, type, mlo, mhi, &lo, &hi)))
		goto out;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi.data, hi.len);
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKS));
	for (rocksdb_iter_seek(it, (const char *)lo.data, lo.len); rocksdb_iter_valid(it) && rc == 0;
	     rocksdb_iter_next(it)) {
		size_t vl, nl, nf;
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vl);
		if (vl < 8)
			continue;
		if (edge_stack_payload_parse(v + 8, vl - 8, labels, MAX_LABELS_PER_STACK, &nl, frames, maxframes, &nf) != 0) {
			wt_warn("query: skipping a malformed stacks record");
			continue;
		}
		if (!labels_match(q, labels, nl))
			continue;
		if (wt_flame_add(f, frames, nf, edge_le64_get(v)) != 0)
			rc = WT_ENOMEM;
		(*rows)++;
	}
	rc = iter_status(it, "stacks", rc);
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
out:
	wt_buf_free(&lo);
	wt_buf_free(&hi);
	return rc;
}

/* ---- the stack index path --------------------------------------------------
 * (labels hash, stack hash) → summed value and one minute it was seen in:
 * an open-addressing table over both hashes (exact keys). */
typedef struct pair_ent {
	uint64_t lh, sh; /* the key */
	int64_t value;
	uint64_t minute;
	uint64_t seen_lh; /* per stack: a labels hash it was seen with */
	int used;
} pair_ent;

typedef struct pair_map {
	pair_ent *e;
	size_t cap, n; /* cap a power of two, n <= cap / 2 */
} pair_map;

static int64_t sat_add64(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* The sums of step 1 of index_series: (labels hash, stack hash) → value
 * and the last minute seen + 1 (0: an empty slot), 32 bytes an entry
 * (half a cache line: the table of a large range's distinct pairs stays
 * small), cap a power of two, n <= cap / 2. */
typedef struct sum_ent {
	uint64_t lh, sh;
	int64_t value;
	uint64_t minute1;
} sum_ent;

typedef struct sum_map {
	sum_ent *e;
	size_t cap, n;
} sum_map;

static inline size_t sum_home(uint64_t lh, uint64_t sh, size_t cap)
{
	return wt_u64map_mix(lh ^ wt_u64map_mix(sh)) & (cap - 1);
}

/* Add value to (lh, sh) seen in minute. 0 or WT_ENOMEM. */
static int sum_add(sum_map *m, uint64_t lh, uint64_t sh, int64_t value, uint64_t minute)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 4096;
		sum_ent *ne = calloc(nc, sizeof(*ne));

		if (!ne)
			return WT_ENOMEM;
		for (size_t j = 0; j < m->cap; j++) {
			if (!m->e[j].minute1)
				continue;
			for (i = sum_home(m->e[j].lh, m->e[j].sh, nc); ne[i].minute1; i = (i + 1) & (nc - 1))
				;
			ne[i] = m->e[j];
		}
		free(m->e);
		m->e = ne;
		m->cap = nc;
	}
	for (i = sum_home(lh, sh, m->cap); m->e[i].minute1; i = (i + 1) & (m->cap - 1))
		if (m->e[i].lh == lh && m->e[i].sh == sh) {
			m->e[i].value = sat_add64(m->e[i].value, value);
			m->e[i].minute1 = minute + 1;
			return 0;
		}
	m->e[i].lh = lh;
	m->e[i].sh = sh;
	m->e[i].value = value;
	m->e[i].minute1 = minute + 1;
	m->n++;
	return 0;
}


static pair_ent *pair_slot(pair_map *m, uint64_t lh, uint64_t sh)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 1024;
		pair_ent *ne = calloc(nc, sizeof(*ne));
		if (!ne)
			return NULL;
		for (size_t j = 0; j < m->cap; j++) {
			if (!m->e[j].used)
				continue;
			for (i = wt_u64map_mix(m->e[j].lh ^ wt_u64map_mix(m->e[j].sh)) & (nc - 1); ne[i].used;
			     i = (i + 1) & (nc - 1))
				;
			ne[i] = m->e[j];
		}
		free(m->e);
		m->e = ne;
		m->cap = nc;
	}
	for (i = wt_u64map_mix(lh ^ wt_u64map_mix(sh)) & (m->cap - 1); m->e[i].used; i = (i + 1) & (m->cap - 1))
		if (m->e[i].lh == lh && m->e[i].sh == sh)
			return &m->e[i];
	m->e[i].used = 1;
	m->e[i].lh = lh;
	m->e[i].sh = sh;
	m->n++;
	return &m->e[i];
}

/* The entry of (lh, sh), or NULL (never grows the map). */
static const pair_ent *pair_find(const pair_map *m, uint64_t lh, uint64_t sh)
{
	size_t i;

	if (!m->cap)
		return NULL;
	for (i = wt_u64map_mix(lh ^ wt_u64map_mix(sh)) & (m->cap - 1); m->e[i].used; i = (i + 1) & (m->cap - 1))
		if (m->e[i].lh == lh && m->e[i].sh == sh)
			return &m->e[i];
	return NULL;
}

/* The stacks row (series, minute, lh, sh): its value bytes (caller frees
 * with rocksdb_free) or NULL when absent. */
static char *stacks_row(edge_task *t, query *q, const char *svc, const char *type, uint64_t minute, uint64_t lh,
			uint64_t sh, rocksdb_readoptions_t *ro, size_t *vl)
{
	edge_buffer *st = t->srv->store;
	wt_buf k = WT_BUF_INIT;
	char *e = NULL, *v = NULL;

	if (edge_key_stack(&k, q->project, svc, type, (int64_t)minute, lh, sh) == 0 && !k.oom)
		v = rocksdb_get_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKS), (const char *)k.data,
				   k.len, vl, &e);
	if (e) {
		wt_error("query: reading a stacks row failed: %s", e);
		free(e);
	}
	wt_buf_free(&k);
	return v;
}

/* The stackdict row of (series, day of minute, sh) (keys.h), or NULL. */
static char *stackdict_row(edge_task *t, query *q, const char *svc, const char *type, uint64_t minute, uint64_t sh,
			   rocksdb_readoptions_t *ro, size_t *vl)
{
	edge_buffer *st = t->srv->store;
	wt_buf k = WT_BUF_INIT;
	char *e = NULL, *v = NULL;

	if (edge_key_stackdict(&k, q->project, svc, type, (int64_t)(minute / EDGE_MINUTES_PER_DAY), sh) == 0 && !k.oom)
		v = rocksdb_get_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKDICT), (const char *)k.data,
				   k.len, vl, &e);
	if (e) {
		wt_error("query: reading a stackdict row failed: %s", e);
		free(e);
	}
	wt_buf_free(&k);
	return v;
}

/* Stacks needed at or above which stackdict is scanned, not looked up */
#define DICT_SCAN_MIN 256

/* Add the stacks of map m (sh → value, minute + 1 seen in) whose frames
 * are in the stackdict rows of their day, scanning each such day once;
 * those are marked used = 2 (done), the others are left to the caller. */
static int dict_scan(edge_task *t, query *q, const char *svc, const char *type, pair_map *m, wt_flame *f,
		     const char **frames, size_t maxframes)
{
	edge_buffer *st = t->srv->store;
	const char *labels[2];
	int rc = 0;

	for (size_t i = 0; i < m->cap && rc == 0; i++) {
		uint64_t day;
		wt_buf lo = WT_BUF_INIT, hi = WT_BUF_INIT;
		rocksdb_readoptions_t *ro;
		rocksdb_iterator_t *it;

		if (m->e[i].used != 1)
			continue;
		/* a day not scanned yet: scan it */
		day = (m->e[i].minute - 1) / EDGE_MINUTES_PER_DAY;
		if (series_bounds(q, svc, type, day, day + 1, &lo, &hi)) {
			wt_buf_free(&lo);
			wt_buf_free(&hi);
			return WT_ENOMEM;
		}
		ro = rocksdb_readoptions_create();
		rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi.data, hi.len);
		it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKDICT));
		for (rocksdb_iter_seek(it, (const char *)lo.data, lo.len); rocksdb_iter_valid(it) && rc == 0;
		     rocksdb_iter_next(it)) {
			size_t kl, vl, nl, nf;
			const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
			const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vl);
			pair_ent *se;

			if (kl != lo.len + 8)
				continue;
			se = (pair_ent *)pair_find(m, 0, edge_be64_get(k + kl - 8));
			if (!se || se->used != 1 || (se->minute - 1) / EDGE_MINUTES_PER_DAY != day)
				continue;
			if (edge_stack_payload_parse(v, vl, labels, 1, &nl, frames, maxframes, &nf) != 0)
				continue; /* left to the lookup of its stacks row */
			if (wt_flame_add(f, frames, nf, se->value) != 0)
				rc = WT_ENOMEM;
			se->used = 2;
		}
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
		wt_buf_free(&lo);
		wt_buf_free(&hi);
		/* stacks of this day not in its stackdict stay 1: skip them in
		 * later rounds by marking them 3, then put them back */
		for (size_t j = i; j < m->cap; j++)
			if (m->e[j].used == 1 && (m->e[j].minute - 1) / EDGE_MINUTES_PER_DAY == day)
				m->e[j].used = 3;
	}
	for (size_t j = 0; j < m->cap; j++)
		if (m->e[j].used == 3)
			m->e[j].used = 1;
	return rc;
}

/* Add the stacks of series (svc, type) in minutes [mlo, mhi) to f from the
 * stack index (see the top of this file). Sums equal scan_series' over the
 * same minutes. */
static int index_series(edge_task *t, query *q, const char *svc, const char *type, uint64_t mlo, uint64_t mhi,
			wt_flame *f, const char **frames, size_t maxframes, uint64_t *rows)
{
	edge_buffer *st = t->srv->store;
	wt_buf lo = WT_BUF_INIT, hi = WT_BUF_INIT;
	int rc = 0;
	const char *labels[2 * MAX_LABELS_PER_STACK];
	sum_map pairs = {0};
	pair_map lmatch = {0}, stacks = {0};
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it = NULL;

	if ((rc = series_bounds(q, svc, type, mlo, mhi, &lo, &hi)))
		goto out;
	/* 1. sum the entries per (labels, stack) */
	rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi.data, hi.len);
	it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKIDX));
	for (rocksdb_iter_seek(it, (const char *)lo.data, lo.len); rocksdb_iter_valid(it) && rc == 0;
	     rocksdb_iter_next(it)) {
		size_t kl, vl;
		const uint8_t *k = (const uint8_t *)rocksdb_iter_key(it, &kl);
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vl);
		uint64_t minute;

		if (kl != lo.len || vl % EDGE_STACKIDX_ENTRY) {
			wt_warn("query: skipping a malformed stackidx record");
			continue;
		}
		minute = edge_be64_get(k + kl - 8);
		for (size_t off = 0; off < vl && rc == 0; off += EDGE_STACKIDX_ENTRY)
			rc = sum_add(&pairs, le64(v + off), le64(v + off + 8), (int64_t)le64(v + off + 16), minute);
	}
	rc = iter_status(it, "stackidx", rc);
	rocksdb_readoptions_set_iterate_upper_bound(ro, NULL, 0);
	/* 2. which labels hashes match the filters: one stacks row each
	 * (lmatch: lh → value 1 match / 0 not; sh unused) */
	for (size_t i = 0; i < pairs.cap && rc == 0; i++) {
		const sum_ent *pe = &pairs.e[i];
		pair_ent *lm;
		size_t vl, nl, nf;
		char *v;

		if (!pe->minute1)
			continue;
		if (!(lm = pair_slot(&lmatch, pe->lh, 0))) {
			rc = WT_ENOMEM;
			break;
		}
		if (lm->minute)
			continue; /* decided */
		lm->minute = 1;
		lm->value = 1;
		if (!q->nfilt)
			continue;
		lm->value = 0;
		if (!(v = stacks_row(t, q, svc, type, pe->minute1 - 1, pe->lh, pe->sh, ro, &vl)))
			continue;
		if (vl >= 8 && edge_stack_payload_parse((const uint8_t *)v + 8, vl - 8, labels, MAX_LABELS_PER_STACK,
							&nl, frames, maxframes, &nf) == 0)
			lm->value = labels_match(q, labels, nl);
		rocksdb_free(v);
	}
	/* 3. the matching sums per stack hash (minute and lh: a row to read) */
	for (size_t i = 0; i < pairs.cap && rc == 0; i++) {
		const sum_ent *pe = &pairs.e[i];
		pair_ent *se;
		const pair_ent *lm;

		if (!pe->minute1 || !(lm = pair_find(&lmatch, pe->lh, 0)) || !lm->value)
			continue;
		if (!(se = pair_slot(&stacks, 0, pe->sh))) {
			rc = WT_ENOMEM;
			break;
		}
		if (!se->minute) {
			se->minute = pe->minute1; /* minute + 1: 0 is "not yet" */
			se->seen_lh = pe->lh;
			se->value = 0;
		}
		se->value = sat_add64(se->value, pe->value);
		(*rows)++;
	}
	/* 4. the frames of each distinct stack: its stackdict row (one per
	 * stack and day, compact), else the stacks row it was seen in. Many
	 * stacks: read the days' stackdict rows in order (a scan of a table
	 * that grows with distinct stacks) rather than one lookup each. */
	if (stacks.n >= DICT_SCAN_MIN && rc == 0)
		rc = dict_scan(t, q, svc, type, &stacks, f, frames, maxframes);
	for (size_t i = 0; i < stacks.cap && rc == 0; i++) {
		pair_ent *se = &stacks.e[i];
		size_t vl, nl, nf, skip = 0; /* stacks rows start with their LE64 value */
		char *v;

		if (se->used != 1)
			continue;
		if (!(v = stackdict_row(t, q, svc, type, se->minute - 1, se->sh, ro, &vl))) {
			skip = 8;
			v = stacks_row(t, q, svc, type, se->minute - 1, se->seen_lh, se->sh, ro, &vl);
		}
		if (!v) {
			/* its stacks row is missing (a crash between the two halves
			 * of a split group's merges, buffer.c): the value is known,
			 * not the frames */
			wt_warn("query: a stack index entry without its stacks row; skipped");
			continue;
		}
		if (vl < skip || edge_stack_payload_parse((const uint8_t *)v + skip, vl - skip, labels,
							  MAX_LABELS_PER_STACK, &nl, frames, maxframes, &nf) != 0)
			wt_warn("query: skipping a malformed stacks record");
		else if (wt_flame_add(f, frames, nf, se->value) != 0)
			rc = WT_ENOMEM;
		rocksdb_free(v);
	}
out:
	if (it)
		rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	free(pairs.e);
	free(lmatch.e);
	free(stacks.e);
	wt_buf_free(&lo);
	wt_buf_free(&hi);
	return rc;
}

/* Minutes [from, until] of q for series (svc, type): the stack index from
 * edge_buffer_stackidx_since() on (when edge.query_aggregates), the rows
 * before it. */
static int add_series(edge_task *t, query *q, const char *svc, const char *type, wt_flame *f, const char **frames,
		      size_t maxframes, uint64_t *rows)
{
	uint64_t mlo = (uint64_t)minute_floor(q->from_ns);
	uint64_t mhi = q->until_ns ? (uint64_t)minute_floor(q->until_ns) + 1 : UINT64_MAX;
	int64_t since = edge_buffer_stackidx_since(t->srv->store);
	uint64_t split = !t->srv->cfg->query_aggregates || since < 0 ? mhi : (uint64_t)since;
	int rc = 0;

	if (split < mlo)
		split = mlo;
	if (split > mhi)
		split = mhi;
	if (mlo < split)
		rc = scan_series(t, q, svc, type, mlo, split, f, frames, maxframes, rows);
	if (!rc && split < mhi)
		rc = index_series(t, q, svc, type, split, mhi, f, frames, maxframes, rows);
	return rc;
}

/* t->reply_text: the flame graph of f as wt_flame_tree_json and the
 * members profile_view adds to the table would give. 0 or WT_ENOMEM. */
static int flame_text(edge_task *t, query *q, const wt_flame *f, const char *unit, const char *type)
{
	wt_buf extra = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&extra, ",\"project\":");
	wt_buf_json_str(&extra, q->project);
	if (q->service) {
		wt_buf_puts(&extra, ",\"service\":");
		wt_buf_json_str(&extra, q->service);
	}
	wt_buf_puts(&extra, ",\"type\":");
	if (type)
		wt_buf_json_str(&extra, type);
	else
		wt_buf_puts(&extra, "null");
	wt_buf_puts(&extra, ",\"source\":\"edge\"");
	wt_buf_putc(&extra, 0);
	rc = extra.oom ? WT_ENOMEM : wt_flame_tree_text(f, unit ? unit : "", q->max_nodes, (const char *)extra.data, &out);
	if (!rc && !wt_buf_putc(&out, 0))
		t->reply_text = (char *)wt_buf_steal(&out, NULL);
	else
		rc = WT_ENOMEM;
	wt_buf_free(&extra);
	wt_buf_free(&out);
	return rc;
}

static void profile_view(edge_task *t, query *q)
{
	series *s = NULL;
	size_t n = 0, maxframes = t->srv->cfg->max_stack_depth + 1;
	const char *type = q->type, *unit = NULL;
	const char **frames = NULL;
	wt_flame *f = NULL;
	uint64_t rows = 0;
	int rc;

	if (list_series(t->srv->store, q->project, &s, &n) != 0) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory listing series");
		return;
	}
	if (!type) {
		/* cpu when the selection has it, else the service's first type (docs/api.md) */
		for (size_t i = 0; i < n; i++)
			if ((!q->service || !strcmp(s[i].svc, q->service)) && !strcmp(s[i].type, "cpu"))
				type = "cpu";
		for (size_t i = 0; i < n && !type; i++)
			if (!q->service || !strcmp(s[i].svc, q->service))
				type = s[i].type;
	}
	f = wt_flame_new();
	frames = calloc(maxframes, sizeof(*frames));
	if (!f || !frames) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_flame_skip_edges(f); /* no call graph view here */
	for (size_t i = 0; i < n && type; i++) {
		if ((q->service && strcmp(s[i].svc, q->service)) || strcmp(s[i].type, type))
			continue;
		if (!unit)
			unit = s[i].unit;
		if ((rc = add_series(t, q, s[i].svc, s[i].type, f, frames, maxframes, &rows))) {
			wt_err_set(&t->err, rc, rc == WT_ENOMEM ? "out of memory building the view" : "reading the buffer failed");
			goto out;
		}
	}
	if (strcmp(q->view, "table")) {
		/* the flame graph as text, straight from the tree (a jansson
		 * object per node cost most of the query): the same bytes */
		if (flame_text(t, q, f, unit, type))
			wt_err_set(&t->err, WT_ENOMEM, "out of memory rendering the view");
		goto out;
	}
	t->reply = wt_flame_table_json(f, unit ? unit : "", q->limit);
	if (!t->reply) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory rendering the view");
		goto out;
	}
	json_object_set_new(t->reply, "project", json_string(q->project));
	if (q->service)
		json_object_set_new(t->reply, "service", json_string(q->service));
	json_object_set_new(t->reply, "type", type ? json_string(type) : json_null());
	json_object_set_new(t->reply, "source", json_string("edge"));
out:
	free(frames);
	wt_flame_free(f);
	series_free(s, n);
}

static void query_work(edge_task *t)
{
	query *q = t->priv;
	atomic_fetch_add(&t->srv->m.queries, 1);
	if (!strcmp(q->view, "services"))
		services_view(t, q);
	else
		profile_view(t, q);
	edge_task_finish(t);
}

static int parse_size(const char *v, size_t dflt, size_t *out)
{
	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	char *end;
	long long n = strtoll(v, &end, 10);
	if (*end || n < 0 || n > 100000000)
		return -1;
	*out = (size_t)n;
	return 0;
}

void edge_query_handle(edge_server *srv, struct evhttp_request *req, const char *project, const char *view)
{
	char tok[512];
	struct evkeyvalq qs;
	const edge_project_cfg *p;
	query *q = NULL;
	edge_task *t;
	wt_err err = {0};
	int rc = 0;

	TAILQ_INIT(&qs);
	if (wt_http_bearer(req, tok, sizeof(tok)) != 0) {
		edge_reject(srv, req, WT_EAUTH, "missing or malformed Authorization: Bearer <read token>");
		return;
	}
	if (!(p = edge_config_auth(srv->cfg, tok, EDGE_ROLE_READ))) {
		edge_reject(srv, req, WT_EAUTH, "the token is not a read token of any project on this edge");
		return;
	}
	if (strcmp(p->name, project) != 0) {
		edge_reject(srv, req, WT_EFORBIDDEN, "the read token belongs to another project");
		return;
	}
	if (wt_http_query(req, &qs) != 0) {
		edge_reject(srv, req, WT_EINVAL, "the query string is malformed");
		return;
	}
	if (!(q = calloc(1, sizeof(*q)))) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(q->project, sizeof(q->project), "%s", project);
	snprintf(q->view, sizeof(q->view), "%s", view);
	const char *v;
	if ((v = wt_http_param(&qs, "service")) && *v)
		q->service = strdup(v);
	if ((v = wt_http_param(&qs, "type")) && *v)
		q->type = strdup(v);
	if ((v = wt_http_param(&qs, "from")) && *v && wt_http_parse_time(v, &q->from_ns) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "from=\"%s\" is not unix seconds or RFC 3339", v);
		goto fail;
	}
	if ((v = wt_http_param(&qs, "until")) && *v && wt_http_parse_time(v, &q->until_ns) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "until=\"%s\" is not unix seconds or RFC 3339", v);
		goto fail;
	}
	if (q->until_ns && q->until_ns < q->from_ns) {
		rc = wt_err_set(&err, WT_EINVAL, "until is before from");
		goto fail;
	}
	if (parse_size(wt_http_param(&qs, "limit"), 0, &q->limit) != 0 ||
	    parse_size(wt_http_param(&qs, "max_nodes"), DEFAULT_MAX_NODES, &q->max_nodes) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "limit / max_nodes must be non-negative integers");
		goto fail;
	}
	const struct evkeyval *kv;
	TAILQ_FOREACH(kv, &qs, next) {
		if (strncmp(kv->key, "label.", 6) != 0)
			continue;
		if (q->nfilt >= MAX_FILTERS) {
			rc = wt_err_set(&err, WT_EINVAL, "more than %d label filters", MAX_FILTERS);
			goto fail;
		}
		q->filt[2 * q->nfilt] = strdup(kv->key + 6);
		q->filt[2 * q->nfilt + 1] = strdup(kv->value);
		q->nfilt++;
		if (!q->filt[2 * q->nfilt - 2] || !q->filt[2 * q->nfilt - 1]) {
			rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
			goto fail;
		}
	}
	evhttp_clear_headers(&qs);
	if (!(t = edge_task_new(srv, req))) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	t->priv = q;
	t->cleanup = query_free;
	t->work = query_work;
	edge_task_start(t);
	return;
fail:
	evhttp_clear_headers(&qs);
	if (q) {
		edge_task tmp = {.priv = q};
		query_free(&tmp);
	}
	edge_reject(srv, req, rc, err.msg);
}
