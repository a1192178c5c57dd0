/*
 * http_leaks.c — GET /v1/projects/{p}/profiles/leaks: functions whose
 * in-use memory grows steadily over [from, until).
 *
 * In-use profiles (Go heap, inuse_space / inuse_objects) are snapshots:
 * each upload says how much memory each stack holds at its time. The range
 * is cut into `buckets` nice-width buckets (default 100, at most 1000);
 * for each bucket that holds snapshots the value of a function is its self
 * value summed over the bucket's snapshots divided by their number (the
 * mean snapshot; 0 when the function is absent), so a bucket with one
 * snapshot holds exactly that snapshot's value. ClickHouse does the sums
 * (per leaf function and bucket) and counts snapshots (distinct upload ids
 * per bucket).
 *
 * Per function, a least-squares line v = a + b·t (t in seconds) is fitted
 * through its points (stats.h). A candidate has at least `min_points`
 * points (default 4, at least 3), a positive slope whose one-sided 95%
 * lower confidence bound (b − t₀.₉₅,ₙ₋₂·SE(b)) is above 0, and a fitted
 * growth over the range of at least `min_growth` (value units, default 0)
 * and at least `min_rel_growth` times the function's highest point
 * (default 0.01). The relative floor keeps a large constant buffer that
 * picked up a few bytes of runtime bookkeeping once (the Go runtime charges
 * its own small allocations, e.g. timer heaps, to the function that
 * triggered them) from being reported next to real leaks.
 * Candidates are sorted by slope, largest first, with their series as the
 * evidence.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "ch_format.h"
#include "clock.h"
#include "http_server.h"
#include "json_str.h"
#include "selection.h"
#include "stats.h"

#define DEFAULT_BUCKETS 100
#define MAX_BUCKETS 1000
#define DEFAULT_LIMIT 20

typedef struct cand {
	char *function;
	hub_linfit fit;
	double *v;        /* per snapshot bucket (nb entries) */
	double growth;
} cand;

typedef struct lk_ctx {
	/* buckets holding snapshots: index (b − b0) → position in the series */
	int64_t b0;
	long nb_all;
	int *pos;         /* nb_all entries, −1 when no snapshot */
	double *nsnap;    /* per position */
	double *t;        /* per position: seconds since from */
	size_t npos;
	/* current function */
	char *fn;
	double *cur;
	/* results */
	cand *c;
	size_t nc, capc;
	long min_points;
	double min_growth;
	double min_rel_growth;
	char unit[64];
	int rc;
} lk_ctx;

static int snap_row(void *ctx, char **f, size_t n)
{
	lk_ctx *x = ctx;
	int64_t b;

	if (n < 2)
		return 0;
	b = strtoll(f[0], NULL, 10) - x->b0;
	if (b < 0 || b >= x->nb_all)
		return 0;
	x->pos[b] = (int)x->npos;
	x->nsnap[x->npos] = (double)strtoll(f[1], NULL, 10);
	x->npos++;
	return 0;
}

static int finish_fn(lk_ctx *x)
{
	hub_linfit fit;
	size_t i;
	double growth, peak = 0;

	if (!x->fn)
		return 0;
	for (i = 0; i < x->npos; i++) {
		x->cur[i] /= x->nsnap[i] > 0 ? x->nsnap[i] : 1;
		if (x->cur[i] > peak)
			peak = x->cur[i];
	}
	if ((long)x->npos < x->min_points || hub_linfit_compute(x->t, x->cur, x->npos, &fit) ||
	    !(fit.slope > 0) || !(fit.lower95 > 0))
		goto skip;
	growth = fit.slope * (x->t[x->npos - 1] - x->t[0]);
	if (growth < x->min_growth || growth < x->min_rel_growth * peak)
		goto skip;
	if (x->nc == x->capc) {
		size_t nc = x->capc ? x->capc * 2 : 16;
		cand *c = realloc(x->c, nc * sizeof(*c));
		if (!c)
			return WT_ENOMEM;
		x->c = c;
		x->capc = nc;
	}
	x->c[x->nc].function = x->fn;
	x->c[x->nc].fit = fit;
	x->c[x->nc].v = x->cur;
	x->c[x->nc].growth = growth;
	x->nc++;
	x->fn = NULL;
	x->cur = NULL;
	return 0;
skip:
	free(x->fn);
	free(x->cur);
	x->fn = NULL;
	x->cur = NULL;
	return 0;
}

/* fields: function, bucket, sum, unit (ordered by function, bucket) */
static int fn_row(void *ctx, char **f, size_t n)
{
	lk_ctx *x = ctx;
	int64_t b;

	if (n < 4)
		return 0;
	if (x->fn && strcmp(x->fn, f[0]) && (x->rc = finish_fn(x)))
		return 1;
	if (!x->fn) {
		x->fn = strdup(f[0]);
		x->cur = calloc(x->npos + 1, sizeof(double));
		if (!x->fn || !x->cur) {
			x->rc = WT_ENOMEM;
			return 1;
		}
	}
	if (!x->unit[0])
		snprintf(x->unit, sizeof(x->unit), "%s", f[3]);
	b = strtoll(f[1], NULL, 10) - x->b0;
	if (b < 0 || b >= x->nb_all || x->pos[b] < 0)
		return 0;
	x->cur[x->pos[b]] += (double)strtoll(f[2], NULL, 10);
	return 0;
}

static int cmp_cand(const void *a, const void *b)
{
	const cand *x = a, *y = b;
	if (x->fit.slope != y->fit.slope)
		return x->fit.slope < y->fit.slope ? 1 : -1;
	return strcmp(x->function, y->function);
}

/* arena destructor: what the row callbacks grew with malloc/realloc */
static void lk_free(void *p)
{
	lk_ctx *x = p;

	for (size_t i = 0; i < x->nc; i++) {
		free(x->c[i].function);
		free(x->c[i].v);
	}
	free(x->c);
	free(x->fn);
	free(x->cur);
}

int hub_handle_leaks(hub_req *r, wt_err *err)
{
	hub_ctx *ctx = r->ctx;
	wt_arena *a = &r->arena;
	int64_t t0 = wt_now_ns(CLOCK_REALTIME), width;
	long nbuckets, limit;
	hub_sel *sel = wt_arena_calloc(a, 1, sizeof(*sel));
	lk_ctx *x = wt_arena_calloc(a, 1, sizeof(*x));
	wt_buf *sql = wt_arena_buf(a), *res = wt_arena_buf(a);
	json_t *out, *cands;
	size_t i, k;
	double nsnap_total = 0;
	int rc;

	if (!sel || !x || !sql || !res || wt_arena_defer(a, lk_free, x))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	sel->project = r->project;
	if ((rc = hub_params_parse(&r->q, &sel->hp, err)) ||
	    (rc = hub_param_uint(&r->q, "buckets", DEFAULT_BUCKETS, 3, MAX_BUCKETS, &nbuckets, err)) ||
	    (rc = hub_param_uint(&r->q, "limit", DEFAULT_LIMIT, 1, 1000, &limit, err)) ||
	    (rc = hub_param_uint(&r->q, "min_points", 4, 3, MAX_BUCKETS, &x->min_points, err)) ||
	    (rc = hub_param_double(&r->q, "min_growth", 0, 0, 1e18, &x->min_growth, err)) ||
	    (rc = hub_param_double(&r->q, "min_rel_growth", 0.01, 0, 1e6, &x->min_rel_growth, err)))
		return rc;
	if (!sel->hp.type)
		sel->hp.type = "inuse_space";
	if ((rc = hub_ch_health_check(&ctx->store, err)) ||
	    (rc = hub_sel_resolve(r->ch, sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	width = hub_nice_width(sel->from, sel->until, nbuckets);
	x->b0 = sel->from / width;
	x->nb_all = (long)((sel->until > sel->from ? sel->until - 1 : sel->from) / width - x->b0 + 1);
	x->pos = wt_arena_alloc(a, (size_t)x->nb_all * sizeof(int));
	x->nsnap = wt_arena_calloc(a, (size_t)x->nb_all + 1, sizeof(double));
	x->t = wt_arena_calloc(a, (size_t)x->nb_all + 1, sizeof(double));
	cands = hub_req_own_json(r, json_array());
	if (!cands || !x->pos || !x->nsnap || !x->t)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (k = 0; k < (size_t)x->nb_all; k++)
		x->pos[k] = -1;
	/* snapshots per bucket */
	wt_buf_printf(sql, "SELECT intDiv(time_ns, %lld) AS b, uniqExact(upload_id) FROM profile_samples_v1",
		      (long long)width);
	hub_sel_where(sql, sel, sel->type);
	wt_buf_puts(sql, " GROUP BY b ORDER BY b FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
		return rc;
	hub_tsv_each((char *)res->data, res->len, 2, snap_row, x);
	for (k = 0; k < (size_t)x->nb_all; k++)
		if (x->pos[k] >= 0) {
			x->t[x->pos[k]] = (double)((x->b0 + (int64_t)k) * width - sel->from) / 1e9;
			nsnap_total += x->nsnap[x->pos[k]];
		}
	/* self value per leaf function and bucket */
	if (x->npos) {
		wt_buf_reset(sql);
		wt_buf_reset(res);
		wt_buf_printf(sql, "SELECT fn, b, sum(v), any(u) FROM (SELECT arrayElement(st.frames, -1) AS fn,"
			      " s.b AS b, s.v AS v, s.u AS u FROM (SELECT stack_id, intDiv(time_ns, %lld) AS b,"
			      " sum(value) AS v, any(unit) AS u FROM profile_samples_v1", (long long)width);
		hub_sel_where(sql, sel, sel->type);
		wt_buf_puts(sql, " GROUP BY stack_id, b) AS s ANY LEFT JOIN (SELECT stack_id, frames"
			    " FROM profile_stacks_v1 WHERE project = ");
		hub_sql_quote(sql, r->project);
		wt_buf_puts(sql, ") AS st USING stack_id) GROUP BY fn, b ORDER BY fn, b FORMAT TabSeparated");
		if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
			return rc;
		hub_tsv_each((char *)res->data, res->len, 4, fn_row, x);
		if (!x->rc)
			x->rc = finish_fn(x);
		if (x->rc)
			return wt_err_set(err, x->rc, "out of memory computing leak candidates");
	}
	if (x->nc)
		qsort(x->c, x->nc, sizeof(*x->c), cmp_cand);
	for (i = 0; i < x->nc && i < (size_t)limit; i++) {
		const cand *c = &x->c[i];
		json_t *ser = json_array();
		for (k = 0; ser && k < (size_t)x->nb_all; k++)
			if (x->pos[k] >= 0)
				json_array_append_new(ser, json_pack("{s:I, s:o}",
					"t", (json_int_t)((x->b0 + (int64_t)k) * width),
					"v", hub_json_num(c->v[x->pos[k]])));
		json_array_append_new(cands, json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o}",
			"function", wt_json_string(c->function), "slope_per_s", hub_json_num(c->fit.slope),
			"slope_lower95_per_s", hub_json_num(c->fit.lower95), "t", hub_json_num(c->fit.t),
			"r2", hub_json_num(c->fit.r2), "points", (json_int_t)c->fit.n,
			"growth", hub_json_num(c->growth), "series", ser ? ser : json_array()));
	}
	out = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:O}", "type", sel->type, "unit", x->unit,
			"from", (json_int_t)sel->from, "until", (json_int_t)sel->until,
			"bucket_ns", (json_int_t)width, "snapshots", (json_int_t)nsnap_total,
			"points", (json_int_t)x->npos, "candidates", cands);
	if (out && sel->hp.service)
		json_object_set_new(out, "service", json_string(sel->hp.service));
	return hub_req_query_json(r, t0, out, err);
}
