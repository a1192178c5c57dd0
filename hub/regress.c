/*
 * regress.c — the regression detector and its worker thread (see
 * regress.h for the method and the idempotency argument).
 *
 * One run = three ClickHouse reads and at most one insert:
 *   1. totals per (project, service, type) in both windows (rollup self
 *      sums: the self values of a profile add up to its total);
 *   2. the latest row of every issue key (argMax by version);
 *   3. per function self in both windows, for the candidates ClickHouse
 *      chooses (see "candidates" below; rows of one symbolized native
 *      function added up first);
 * then every changed issue row is written with version = window end.
 *
 * Memory: the hub holds at most about 2 × regress_max_candidates function
 * rows (plus the issue keys of step 2), whatever the number of distinct
 * functions in the windows: the group totals, shares and ordering are
 * computed by ClickHouse.
 */
#include "regress.h"
#include "clock.h"

#include <libconfig.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"
#include "selection.h"
#include "stats.h"

#define NS 1000000000LL

struct hub_regress {
	hub_ctx *ctx;
	hub_regress_config cfg;
	hub_ch *ch;             /* the thread's client */
	pthread_mutex_t run_mu; /* serialises runs of this process */
	pthread_mutex_t mu;     /* guards stop */
	pthread_cond_t cv;
	int stop;
	pthread_t thr;
	int started;
};

/* ---- config ------------------------------------------------------------ */

static int cfg_int(const config_t *cf, const char *key, int def, int lo, int hi, int *out, wt_err *err)
{
	int v;

	if (!config_lookup_int(cf, key, &v))
		v = def;
	if (v < lo || v > hi)
		return wt_err_set(err, WT_EINVAL, "config: %s = %d out of range [%d, %d]", key, v, lo, hi);
	*out = v;
	return 0;
}

static int cfg_double(const config_t *cf, const char *key, double def, double lo, double hi, double *out,
		      wt_err *err)
{
	double v;
	int iv;

	if (config_lookup_float(cf, key, &v))
		;
	else if (config_lookup_int(cf, key, &iv))
		v = iv;
	else
		v = def;
	if (!(v >= lo && v <= hi))
		return wt_err_set(err, WT_EINVAL, "config: %s = %g out of range [%g, %g]", key, v, lo, hi);
	*out = v;
	return 0;
}

int hub_regress_config_load(const char *path, hub_regress_config *c, wt_err *err)
{
	config_t cf;
	int rc = 0;
	long long period = 10000000LL;

	memset(c, 0, sizeof(*c));
	config_init(&cf);
	if (!config_read_file(&cf, path)) {
		rc = wt_err_set(err, WT_EINVAL, "config %s:%d: %s", path, config_error_line(&cf),
				config_error_text(&cf));
		goto out;
	}
	if ((rc = cfg_int(&cf, "analysis.regress_interval_s", 60, 0, 86400, &c->interval_s, err)) ||
	    (rc = cfg_int(&cf, "analysis.recent_window_s", 900, 1, 30 * 86400, &c->recent_s, err)) ||
	    (rc = cfg_int(&cf, "analysis.baseline_window_s", 86400, 1, 366 * 86400, &c->baseline_s, err)) ||
	    (rc = cfg_double(&cf, "analysis.min_effect", 0.02, 0, 1, &c->min_effect, err)) ||
	    (rc = cfg_double(&cf, "analysis.alpha", 0.001, 1e-12, 0.5, &c->alpha, err)) ||
	    (rc = cfg_int(&cf, "analysis.regress_max_candidates", 10000, 1, 1000000, &c->max_candidates, err)))
		goto out;
	{
		int iv;
		if (config_lookup_int64(&cf, "analysis.period_ns", &period))
			;
		else if (config_lookup_int(&cf, "analysis.period_ns", &iv))
			period = iv;
		if (period < 1000 || period > 60 * NS) {
			rc = wt_err_set(err, WT_EINVAL, "config: analysis.period_ns = %lld out of range [1000, %lld]",
					period, 60 * NS);
			goto out;
		}
		c->period_ns = period;
	}
out:
	config_destroy(&cf);
	return rc;
}

/* ---- issue id ------------------------------------------------------------ */

void hub_issue_id(const char *project, const char *service, const char *type, const char *function,
		  int64_t window_end_ns, char out[33])
{
	const char *parts[4] = {project, service, type, function};
	char num[24];
	XXH128_hash_t h = {0, 0};
	size_t i;

	/* chained: each field (with its NUL, so fields cannot run together) is
	 * hashed with the previous hash as seed; no allocation, no failure */
	for (i = 0; i < 4; i++)
		h = XXH3_128bits_withSeed(parts[i], strlen(parts[i]) + 1, h.low64 ^ h.high64);
	snprintf(num, sizeof(num), "%lld", (long long)window_end_ns);
	h = XXH3_128bits_withSeed(num, strlen(num), h.low64 ^ h.high64);
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

/* ---- run ----------------------------------------------------------------- */

typedef struct group_tot {
	char *project, *service, *type;
	double rs, bs; /* recent / baseline totals */
} group_tot;

typedef struct latest {
	char *project, *service, *type, *function, *unit;
	char issue_id[33];
	int open;
	int64_t opened_ns, version;
	int seen;
} latest;

typedef struct fn_sum {
	char *project, *service, *type, *function, *unit;
	double rs, bs; /* recent / baseline self */
} fn_sum;

typedef struct run {
	hub_regress *g;
	hub_ch *ch;       /* the run's client (also for the symbolizer's index) */
	wt_err *err;
	const hub_regress_config *c;
	int64_t end, r0, b0;
	double zcrit;
	group_tot *gt;
	size_t ngt, capgt;
	latest *lt;
	size_t nlt, caplt;
	fn_sum *fs;       /* step 3's rows, one per (group, function) after merging */
	size_t nfs, capfs;
	wt_buf name;      /* scratch: a symbolized function name */
	wt_buf ins;       /* VALUES rows */
	size_t nins;
	hub_regress_result *res;
	int rc;
} run;

static int cmp3(const char *p1, const char *s1, const char *t1, const char *p2, const char *s2, const char *t2)
{
	int c = strcmp(p1, p2);
	if (!c)
		c = strcmp(s1, s2);
	if (!c)
		c = strcmp(t1, t2);
	return c;
}

static group_tot *find_group(run *x, const char *p, const char *s, const char *t)
{
	size_t lo = 0, hi = x->ngt;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = cmp3(x->gt[mid].project, x->gt[mid].service, x->gt[mid].type, p, s, t);
		if (!c)
			return &x->gt[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_latest(const latest *a, const char *p, const char *s, const char *t, const char *f)
{
	int c = cmp3(a->project, a->service, a->type, p, s, t);
	return c ? c : strcmp(a->function, f);
}

static latest *find_latest(run *x, const char *p, const char *s, const char *t, const char *f)
{
	size_t lo = 0, hi = x->nlt;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = cmp_latest(&x->lt[mid], p, s, t, f);
		if (!c)
			return &x->lt[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* fields: project, service, type, recent, baseline (sorted by the first three) */
static int tot_row(void *ctx, char **f, size_t n)
{
	run *x = ctx;
	group_tot *g;

	if (n < 5)
		return 0;
	if (x->ngt == x->capgt) {
		size_t nc = x->capgt ? x->capgt * 2 : 64;
		group_tot *ng = realloc(x->gt, nc * sizeof(*ng));
		if (!ng)
			goto oom;
		x->gt = ng;
		x->capgt = nc;
	}
	g = &x->gt[x->ngt];
	g->project = strdup(f[0]);
	g->service = strdup(f[1]);
	g->type = strdup(f[2]);
	g->rs = strtod(f[3], NULL);
	g->bs = strtod(f[4], NULL);
	x->ngt++;
	if (!g->project || !g->service || !g->type)
		goto oom;
	return 0;
oom:
	x->rc = WT_ENOMEM;
	return 1;
}

/* fields: project, service, type, function, issue_id, state, opened_ns, version, unit */
static int latest_row(void *ctx, char **f, size_t n)
{
	run *x = ctx;
	latest *l;

	if (n < 9)
		return 0;
	if (x->nlt == x->caplt) {
		size_t nc = x->caplt ? x->caplt * 2 : 64;
		latest *nl = realloc(x->lt, nc * sizeof(*nl));
		if (!nl)
			goto oom;
		x->lt = nl;
		x->caplt = nc;
	}
	l = &x->lt[x->nlt];
	memset(l, 0, sizeof(*l));
	l->project = strdup(f[0]);
	l->service = strdup(f[1]);
	l->type = strdup(f[2]);
	l->function = strdup(f[3]);
	l->unit = strdup(f[8]);
	snprintf(l->issue_id, sizeof(l->issue_id), "%s", f[4]);
	l->open = !strcmp(f[5], "open");
	l->opened_ns = strtoll(f[6], NULL, 10);
	l->version = strtoll(f[7], NULL, 10);
	x->nlt++;
	if (!l->project || !l->service || !l->type || !l->function || !l->unit)
		goto oom;
	return 0;
oom:
	x->rc = WT_ENOMEM;
	return 1;
}

/* Counts-per-value scale of group g (see regress.h). */
static void scales(run *x, const group_tot *g, const char *unit, double *sr, double *sb)
{
	const char *pair = hub_count_type_of(g->type);
	group_tot *pg = pair ? find_group(x, g->project, g->service, pair) : NULL;

	*sr = *sb = 1;
	if (hub_unit_is_count(unit))
		return;
	if (pg && pg->rs > 0 && pg->bs > 0) {
		*sr = g->rs / pg->rs;
		*sb = g->bs / pg->bs;
	} else if (!strcmp(unit, "nanoseconds")) {
		*sr = *sb = (double)x->c->period_ns;
	}
}

static void put_row(run *x, const char *id, const char *p, const char *s, const char *t, const char *unit,
		    const char *f, int open, int64_t opened, double bself, double rself, const group_tot *g,
		    double z)
{
	wt_buf *b = &x->ins;
	double bsh = g && g->bs > 0 ? bself / g->bs : 0, rsh = g && g->rs > 0 ? rself / g->rs : 0;

	if (x->nins++)
		wt_buf_putc(b, ',');
	wt_buf_putc(b, '(');
	hub_sql_quote(b, p);
	wt_buf_putc(b, ',');
	hub_sql_quote(b, id);
	wt_buf_putc(b, ',');
	hub_sql_quote(b, s);
	wt_buf_putc(b, ',');
	hub_sql_quote(b, t);
	wt_buf_putc(b, ',');
	hub_sql_quote(b, unit);
	wt_buf_putc(b, ',');
	hub_sql_quote(b, f);
	wt_buf_printf(b, ",'%s',%lld,%lld,%lld,%lld,%lld,%lld,%.17g,%.17g,%.0f,%.0f,%.0f,%.0f,%.17g,%.17g,%lld)",
		      open ? "open" : "resolved", (long long)opened, (long long)x->end,
		      (long long)(open ? 0 : x->end), (long long)x->b0, (long long)x->r0, (long long)x->end,
		      bsh, rsh, bself, rself, g ? g->bs : 0, g ? g->rs : 0, z, hub_p_two_sided(z),
		      (long long)x->end);
}

/* fields: project, service, type, function, unit, recent self, baseline
 * self. Collected (not evaluated at once) because several rollup rows can
 * be one function: unsymbolized native frames are stored per address
 * ("prog+0x11e4 [bid:…]") and name the same function once the project has
 * its debug file. */
static int fn_collect(void *ctx, char **f, size_t n)
{
	run *x = ctx;
	fn_sum *e;
	int named, rc;

	if (n < 7)
		return 0;
	if (!strcmp(f[2], "samples"))
		return 0; /* companion count type: its cpu/wall twin carries the issue */
	if ((rc = hub_symbols_function(x->g->ctx ? x->g->ctx->syms : NULL, x->ch, f[0], f[3], strlen(f[3]),
				       &x->name, &named, x->err))) {
		x->rc = rc;
		return 1;
	}
	if (named)
		x->res->symbolized++;
	if (x->nfs == x->capfs) {
		size_t nc = x->capfs ? x->capfs * 2 : 256;
		fn_sum *nf = realloc(x->fs, nc * sizeof(*nf));
		if (!nf)
			goto oom;
		x->fs = nf;
		x->capfs = nc;
	}
	e = &x->fs[x->nfs++];
	e->project = strdup(f[0]);
	e->service = strdup(f[1]);
	e->type = strdup(f[2]);
	e->function = strdup((const char *)x->name.data);
	e->unit = strdup(f[4]);
	e->rs = strtod(f[5], NULL);
	e->bs = strtod(f[6], NULL);
	if (!e->project || !e->service || !e->type || !e->function || !e->unit)
		goto oom;
	return 0;
oom:
	x->rc = wt_err_set(x->err, WT_ENOMEM, "regression run: out of memory");
	return 1;
}

static int fn_sum_cmp(const void *a, const void *b)
{
	const fn_sum *u = a, *v = b;
	int c = cmp3(u->project, u->service, u->type, v->project, v->service, v->type);
	return c ? c : strcmp(u->function, v->function);
}

/* One function's sums over both windows: update, open or resolve its issue. */
static int fn_eval(run *x, const fn_sum *e)
{
	const char *p = e->project, *s = e->service, *t = e->type, *fn = e->function, *unit = e->unit;
	group_tot *g;
	latest *l;
	double rs = e->rs, bs = e->bs, sr, sb, z, bsh, rsh;
	int sig;

	g = find_group(x, p, s, t);
	if (!g)
		return 0;
	x->res->functions++;
	l = find_latest(x, p, s, t, fn);
	if (l) {
		l->seen = 1;
		if (l->version > x->end)
			return 0; /* a later window was already evaluated */
	}
	if (!(g->rs > 0) || !(g->bs > 0))
		return 0; /* no baseline or no recent data: no evidence either way */
	scales(x, g, unit, &sr, &sb);
	z = hub_z_two_prop(bs / sb, g->bs / sb, rs / sr, g->rs / sr);
	bsh = bs / g->bs;
	rsh = rs / g->rs;
	sig = rsh - bsh >= x->c->min_effect && z >= x->zcrit;
	if (sig && l && l->open) {
		put_row(x, l->issue_id, p, s, t, unit, fn, 1, l->opened_ns, bs, rs, g, z);
		x->res->updated++;
	} else if (sig) {
		char id[33];
		hub_issue_id(p, s, t, fn, x->end, id);
		put_row(x, id, p, s, t, unit, fn, 1, x->end, bs, rs, g, z);
		x->res->opened++;
	} else if (l && l->open) {
		put_row(x, l->issue_id, p, s, t, unit, fn, 0, l->opened_ns, bs, rs, g, z);
		x->res->resolved++;
	}
	if (x->ins.oom) {
		x->rc = WT_ENOMEM;
		return 1;
	}
	return 0;
}

static void window_cond(wt_buf *b, const run *x, const char *project)
{
	wt_buf_printf(b, " FROM function_rollup_v1 WHERE minute >= toDateTime(%lld) AND minute < toDateTime(%lld)"
		      " AND sample_type != '_repl_marker'", (long long)(x->b0 / NS), (long long)(x->end / NS));
	if (project) {
		wt_buf_puts(b, " AND project = ");
		hub_sql_quote(b, project);
	}
}

/* ---- candidates ------------------------------------------------------------
 *
 * Only a function whose share grew by at least min_effect can open or keep
 * an issue, and only one with an open issue can be resolved while seen, so
 * step 3 reads (at most regress_max_candidates rows each):
 *   a. plain function names with share growth ≥ min_effect, or the key of
 *      an open issue (those first), largest growth first;
 *   b. native frames (names with "+0x" or " [bid:", see common/symref.h):
 *      their rows are added up per function after symbolization, so none
 *      can be filtered alone; all rows of a group are read when the sum of
 *      its rows' positive share growths reaches min_effect (no function
 *      made of some of them can grow more) or it has an open issue,
 *      largest growth first.
 * The filter is widened by REGRESS_EFF_SLACK so that rounding in
 * ClickHouse never hides a function the exact test in fn_eval() passes. */

#define REGRESS_EFF_SLACK 1e-9
#define NATIVE_COND "(position(function, '+0x') > 0 OR position(function, ' [bid:') > 0)"

/* (p, s, t, function, u, rs, bs, tr, tb, eff): per function sums with rs >
 * 0 joined with their group's totals; native or plain names only */
static void fn_sub(wt_buf *b, const run *x, const char *project, int native)
{
	long long r0 = (long long)(x->r0 / NS);

	wt_buf_printf(b, "(SELECT project, service, sample_type, function, u, rs, bs, tr, tb,"
		      " rs / tr - bs / tb AS eff FROM (SELECT project, service, sample_type, function,"
		      " any(unit) AS u, sumIf(self, minute >= toDateTime(%lld)) AS rs,"
		      " sumIf(self, minute < toDateTime(%lld)) AS bs", r0, r0);
	window_cond(b, x, project);
	wt_buf_printf(b, " AND sample_type != 'samples' AND %s" NATIVE_COND, native ? "" : "NOT ");
	wt_buf_printf(b, " GROUP BY project, service, sample_type, function HAVING rs > 0) ANY INNER JOIN"
		      " (SELECT project, service, sample_type, sumIf(self, minute >= toDateTime(%lld)) AS tr,"
		      " sumIf(self, minute < toDateTime(%lld)) AS tb", r0, r0);
	window_cond(b, x, project);
	wt_buf_puts(b, " GROUP BY project, service, sample_type) USING (project, service, sample_type))");
}

/* the keys (p, s, t, function) of open issues, as a subquery */
static void open_keys(wt_buf *b, const char *project, int with_function)
{
	wt_buf_printf(b, "(SELECT project, service, sample_type%s FROM issues_v1", with_function ? ", function" : "");
	if (project) {
		wt_buf_puts(b, " WHERE project = ");
		hub_sql_quote(b, project);
	}
	wt_buf_puts(b, " GROUP BY project, service, sample_type, function HAVING argMax(state, version) = 'open')");
}

static void candidates_sql(wt_buf *b, const run *x, const char *project, int native)
{
	double eff = x->c->min_effect - REGRESS_EFF_SLACK;

	wt_buf_puts(b, "SELECT project, service, sample_type, function, u, rs, bs FROM ");
	fn_sub(b, x, project, native);
	if (!native) {
		wt_buf_puts(b, " WHERE (project, service, sample_type, function) IN ");
		open_keys(b, project, 1);
		wt_buf_printf(b, " OR eff >= %.17g ORDER BY (project, service, sample_type, function) IN ", eff);
		open_keys(b, project, 1);
		wt_buf_puts(b, " DESC, eff DESC");
	} else {
		wt_buf_puts(b, " WHERE (project, service, sample_type) IN (SELECT project, service, sample_type FROM ");
		fn_sub(b, x, project, 1);
		wt_buf_printf(b, " GROUP BY project, service, sample_type HAVING sumIf(eff, eff > 0) >= %.17g)"
			      " OR (project, service, sample_type) IN ", eff);
		open_keys(b, project, 0);
		wt_buf_puts(b, " ORDER BY eff DESC");
	}
	wt_buf_printf(b, " LIMIT %d FORMAT TabSeparated", x->c->max_candidates);
}

int hub_regress_run(hub_regress *g, hub_ch *ch, int64_t at_ns, const char *project,
		    hub_regress_result *res, wt_err *err)
{
	const hub_regress_config *c = &g->cfg;
	int64_t step = (c->interval_s > 0 ? c->interval_s : 60) * NS;
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	run x;
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&x, 0, sizeof(x));
	x.g = g;
	x.ch = ch;
	x.err = err;
	x.c = c;
	x.res = res;
	x.end = at_ns / step * step;
	x.r0 = x.end - (int64_t)c->recent_s * NS;
	x.b0 = x.r0 - (int64_t)c->baseline_s * NS;
	if (x.b0 < 0)
		x.b0 = 0;
	x.zcrit = hub_normal_isf(c->alpha);
	res->window_end_ns = x.end;
	res->recent_from_ns = x.r0;
	res->baseline_from_ns = x.b0;

	pthread_mutex_lock(&g->run_mu);
	/* 1. totals per group */
	wt_buf_printf(&sql, "SELECT project, service, sample_type, sumIf(self, minute >= toDateTime(%lld)),"
		      " sumIf(self, minute < toDateTime(%lld))", (long long)(x.r0 / NS), (long long)(x.r0 / NS));
	window_cond(&sql, &x, project);
	wt_buf_puts(&sql, " GROUP BY project, service, sample_type ORDER BY project, service, sample_type"
		    " FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto done;
	hub_tsv_each((char *)out.data, out.len, 5, tot_row, &x);
	if ((rc = x.rc))
		goto oom;
	res->groups = (long)x.ngt;
	/* 2. the latest row of every issue key */
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT project, service, sample_type, function, argMax(issue_id, version),"
		    " argMax(state, version), argMax(opened_ns, version), max(version), argMax(unit, version)"
		    " FROM issues_v1");
	if (project) {
		wt_buf_puts(&sql, " WHERE project = ");
		hub_sql_quote(&sql, project);
	}
	wt_buf_puts(&sql, " GROUP BY project, service, sample_type, function"
		    " ORDER BY project, service, sample_type, function FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto done;
	hub_tsv_each((char *)out.data, out.len, 9, latest_row, &x);
	if ((rc = x.rc))
		goto oom;
	/* 3. per function, the candidates (plain names, then native frames) */
	for (int native = 0; native < 2; native++) {
		wt_buf_reset(&sql);
		wt_buf_reset(&out);
		candidates_sql(&sql, &x, project, native);
		if (sql.oom)
			goto oom;
		if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
			goto done;
		hub_tsv_each((char *)out.data, out.len, 7, fn_collect, &x);
		if ((rc = x.rc))
			goto done; /* x.err says what */
	}
	wt_buf_free(&out); /* the rows are in x.fs */
	if (x.nfs)
		qsort(x.fs, x.nfs, sizeof(*x.fs), fn_sum_cmp);
	for (i = 0; i < x.nfs;) {
		size_t j = i + 1;
		while (j < x.nfs && !fn_sum_cmp(&x.fs[i], &x.fs[j])) {
			x.fs[i].rs += x.fs[j].rs;
			x.fs[i].bs += x.fs[j].bs;
			j++;
		}
		if (fn_eval(&x, &x.fs[i]))
			break;
		i = j;
	}
	if ((rc = x.rc))
		goto oom;
	/* open issues whose function left the recent window: resolved when
	 * their group still has recent data */
	for (i = 0; i < x.nlt; i++) {
		latest *l = &x.lt[i];
		group_tot *gt;
		if (!l->open || l->seen || l->version > x.end)
			continue;
		gt = find_group(&x, l->project, l->service, l->type);
		if (!gt || !(gt->rs > 0))
			continue;
		put_row(&x, l->issue_id, l->project, l->service, l->type, l->unit, l->function, 0, l->opened_ns,
			0, 0, gt, 0);
		res->resolved++;
	}
	if (x.ins.oom)
		goto oom;
	if (x.nins) {
		wt_buf_reset(&sql);
		wt_buf_puts(&sql, "INSERT INTO issues_v1 (project, issue_id, service, sample_type, unit, function,"
			    " state, opened_ns, last_seen_ns, resolved_ns, baseline_from_ns, recent_from_ns,"
			    " window_end_ns, baseline_share, recent_share, baseline_self, recent_self,"
			    " baseline_total, recent_total, z, p_value, version) VALUES ");
		wt_buf_append(&sql, x.ins.data, x.ins.len);
		if ((rc = hub_ch_query_buf(ch, &sql, NULL, err)))
			goto done;
	}
	goto done;
oom:
	rc = wt_err_set(err, WT_ENOMEM, "regression run: out of memory");
done:
	pthread_mutex_unlock(&g->run_mu);
	for (i = 0; i < x.ngt; i++) {
		free(x.gt[i].project);
		free(x.gt[i].service);
		free(x.gt[i].type);
	}
	free(x.gt);
	for (i = 0; i < x.nlt; i++) {
		free(x.lt[i].project);
		free(x.lt[i].service);
		free(x.lt[i].type);
		free(x.lt[i].function);
		free(x.lt[i].unit);
	}
	free(x.lt);
	for (i = 0; i < x.nfs; i++) {
		free(x.fs[i].project);
		free(x.fs[i].service);
		free(x.fs[i].type);
		free(x.fs[i].function);
		free(x.fs[i].unit);
	}
	free(x.fs);
	wt_buf_free(&x.name);
	wt_buf_free(&x.ins);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

/* ---- worker -------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	hub_regress *g = arg;
	struct timespec ts;

	pthread_mutex_lock(&g->mu);
	while (!g->stop) {
		ts = wt_deadline(CLOCK_REALTIME, (int64_t)g->cfg.interval_s * 1000);
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
		if (g->stop)
			break;
		pthread_mutex_unlock(&g->mu);
		if (atomic_load(&g->ctx->store.ready)) {
			hub_regress_result res;
			wt_err err = {0, ""};
			if (hub_regress_run(g, g->ch, wt_now_ns(CLOCK_REALTIME), NULL, &res, &err))
				wt_error("msg=\"regression run failed\" error=\"%s\"", err.msg);
			else if (res.opened || res.resolved)
				wt_info("msg=\"regression run\" groups=%ld functions=%ld opened=%ld updated=%ld"
					" resolved=%ld", res.groups, res.functions, res.opened, res.updated,
					res.resolved);
		}
		pthread_mutex_lock(&g->mu);
	}
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

int hub_regress_start(hub_ctx *ctx, const hub_regress_config *c, hub_regress **out, wt_err *err)
{
	hub_regress *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	g->ctx = ctx;
	g->cfg = *c;
	pthread_mutex_init(&g->run_mu, NULL);
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	if (c->interval_s > 0) {
		g->ch = hub_ch_new(&ctx->chconf);
		if (!g->ch || pthread_create(&g->thr, NULL, worker_main, g)) {
			hub_regress_stop(g);
			return wt_err_set(err, WT_ENOMEM, "cannot start the regression worker");
		}
		g->started = 1;
	}
	*out = g;
	return 0;
}

void hub_regress_stop(hub_regress *g)
{
	if (!g)
		return;
	if (g->started) {
		pthread_mutex_lock(&g->mu);
		g->stop = 1;
		pthread_cond_signal(&g->cv);
		pthread_mutex_unlock(&g->mu);
		pthread_join(g->thr, NULL);
	}
	hub_ch_free(g->ch);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	pthread_mutex_destroy(&g->run_mu);
	free(g);
}
