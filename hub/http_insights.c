/*
 * http_insights.c — GET /v1/projects/{p}/profiles/insights: CPU burst,
 * saturation and starvation cards per (service, host) over [from, until)
 * (detection rules in insights.h).
 *
 * ClickHouse sums the `cpu` values per (service, host, 100 ms bucket of
 * time_ns); the hub turns each (service, host) into a dense series from
 * its first to its last busy bucket and runs the detector. Values in
 * nanoseconds are CPU time as they are; values in a count unit (`samples`:
 * folded uploads, perf without periods) are samples and are converted with
 * `period_ns` (default 10 ms = 100 Hz) per sample. Sample times matter
 * here: profiles that keep per-sample timestamps (perf script, JFR, eBPF,
 * OTLP) give real insights; a pprof or folded upload puts all its samples
 * at one instant.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "ch_format.h"
#include "clock.h"
#include "http_server.h"
#include "insights.h"
#include "selection.h"

#define DEFAULT_PERIOD_NS 10000000L
#define MAX_RANGE_S 86400L

typedef struct group {
	char service[HUB_SERVICE_MAX + 1];
	char host[HUB_LABEL_VALUE_MAX + 1];
	int64_t *b, *v;
	size_t n, cap;
} group;

typedef struct ins_ctx {
	group g;
	const hub_insight_opts *o;
	long period_ns;
	json_t *cards;
	size_t ngroups;
	int rc;
} ins_ctx;

static void card_detail(const hub_insight_card *c, char *out, size_t cap)
{
	double secs = (double)(c->until_ns - c->from_ns) / 1e9;

	if (c->kind == HUB_INSIGHT_BURST)
		snprintf(out, cap, "CPU above 75%% of one core for %.1f s (mean %.0f%%, peak 1 s %.0f%%)",
			 secs, c->value * 100, c->peak * 100);
	else if (c->kind == HUB_INSIGHT_SATURATION)
		snprintf(out, cap, "a full core or more (>= 100%%) for %.1f s (mean %.0f%%, peak 1 s %.0f%%)",
			 secs, c->value * 100, c->peak * 100);
	else
		snprintf(out, cap, "no samples for %.0f ms between busy periods", secs * 1000);
}

static int flush_group(ins_ctx *x)
{
	group *g = &x->g;
	hub_insight_card *cards = NULL;
	size_t nc = 0, i, len;
	int64_t *dense;
	int rc;

	if (!g->n)
		return 0;
	x->ngroups++;
	len = (size_t)(g->b[g->n - 1] - g->b[0] + 1);
	dense = calloc(len, sizeof(*dense));
	if (!dense)
		return WT_ENOMEM;
	for (i = 0; i < g->n; i++)
		dense[g->b[i] - g->b[0]] += g->v[i];
	rc = hub_insights_find(dense, len, g->b[0], x->o, &cards, &nc);
	for (i = 0; !rc && i < nc; i++) {
		char detail[200];
		card_detail(&cards[i], detail, sizeof(detail));
		if (json_array_append_new(x->cards, json_pack("{s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:o}",
			"kind", hub_insight_kind_name(cards[i].kind), "service", g->service, "host", g->host,
			"from", (json_int_t)cards[i].from_ns, "until", (json_int_t)cards[i].until_ns,
			"detail", detail, "value", hub_json_num(cards[i].value),
			"peak", hub_json_num(cards[i].peak))))
			rc = WT_ENOMEM;
	}
	free(cards);
	free(dense);
	g->n = 0;
	return rc;
}

/* fields: service, host, bucket, sum, unit (ordered by service, host, bucket) */
static int ins_row(void *ctx, char **f, size_t n)
{
	ins_ctx *x = ctx;
	group *g = &x->g;
	int64_t v;

	if (n < 5)
		return 0;
	if (g->n && (strcmp(g->service, f[0]) || strcmp(g->host, f[1])))
		if ((x->rc = flush_group(x)))
			return 1;
	if (!g->n) {
		snprintf(g->service, sizeof(g->service), "%s", f[0]);
		snprintf(g->host, sizeof(g->host), "%s", f[1]);
	}
	if (g->n == g->cap) {
		size_t nc = g->cap ? g->cap * 2 : 1024;
		int64_t *nb = realloc(g->b, nc * sizeof(*nb)), *nv;
		if (!nb) {
			x->rc = WT_ENOMEM;
			return 1;
		}
		g->b = nb;
		nv = realloc(g->v, nc * sizeof(*nv));
		if (!nv) {
			x->rc = WT_ENOMEM;
			return 1;
		}
		g->v = nv;
		g->cap = nc;
	}
	v = strtoll(f[3], NULL, 10);
	if (hub_unit_is_count(f[4]))
		v *= x->period_ns;
	g->b[g->n] = strtoll(f[2], NULL, 10);
	g->v[g->n] = v;
	g->n++;
	return 0;
}

/* arena destructor: the growable group arrays and an unsent card list */
static void ins_free(void *p)
{
	ins_ctx *x = p;

	json_decref(x->cards);
	free(x->g.b);
	free(x->g.v);
}

int hub_handle_insights(hub_req *r, wt_err *err)
{
	hub_ctx *ctx = r->ctx;
	int64_t t0 = wt_now_ns(CLOCK_REALTIME);
	hub_sel *sel = wt_arena_calloc(&r->arena, 1, sizeof(*sel));
	hub_insight_opts *o = wt_arena_calloc(&r->arena, 1, sizeof(*o));
	ins_ctx *x = wt_arena_calloc(&r->arena, 1, sizeof(*x));
	wt_buf *sql = wt_arena_buf(&r->arena), *res = wt_arena_buf(&r->arena);
	const char *host;
	json_t *out;
	int rc;

	if (!sel || !o || !x || !sql || !res || wt_arena_defer(&r->arena, ins_free, x))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	hub_insight_opts_default(o);
	x->o = o;
	sel->project = r->project;
	if ((rc = hub_params_parse(&r->q, &sel->hp, err)) ||
	    (rc = hub_param_uint(&r->q, "period_ns", DEFAULT_PERIOD_NS, 1000, 60000000000L, &x->period_ns, err)))
		return rc;
	host = evhttp_find_header(&r->q, "host");
	if (host) {
		if (sel->hp.nlabels == HUB_MAX_LABEL_PARAMS || strlen(host) > HUB_LABEL_VALUE_MAX)
			return wt_err_set(err, WT_EINVAL, "host: too long or too many filters");
		sel->hp.labels[sel->hp.nlabels].key = "host";
		sel->hp.labels[sel->hp.nlabels].value = host;
		sel->hp.nlabels++;
	}
	if (sel->hp.type && strcmp(sel->hp.type, "cpu"))
		return wt_err_set(err, WT_EINVAL, "type: insights are computed from cpu samples only");
	sel->hp.type = "cpu";
	if ((rc = hub_ch_health_check(&ctx->store, err)) ||
	    (rc = hub_sel_resolve(r->ch, sel, t0, ctx->cfg.default_range_s, err)))
		return rc;
	if (sel->until - sel->from > MAX_RANGE_S * 1000000000LL)
		return wt_err_set(err, WT_EINVAL, "from: insights cover at most %ld s; narrow from/until", MAX_RANGE_S);
	if (!(x->cards = json_array()))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	wt_buf_printf(sql, "SELECT service, host, intDiv(time_ns, %lld) AS b, sum(value), any(unit)"
		      " FROM profile_samples_v1", (long long)o->bucket_ns);
	hub_sel_where(sql, sel, "cpu");
	wt_buf_puts(sql, " GROUP BY service, host, b ORDER BY service, host, b FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(r->ch, sql, res, err)))
		return rc;
	hub_tsv_each((char *)res->data, res->len, 5, ins_row, x);
	if (!x->rc)
		x->rc = flush_group(x);
	if (x->rc)
		return wt_err_set(err, x->rc, "out of memory computing insights");
	out = json_pack("{s:s, s:I, s:I, s:I, s:I, s:O}", "type", "cpu", "from", (json_int_t)sel->from,
			"until", (json_int_t)sel->until, "bucket_ns", (json_int_t)o->bucket_ns,
			"series", (json_int_t)x->ngroups, "cards", x->cards);
	if (out && sel->hp.service)
		json_object_set_new(out, "service", json_string(sel->hp.service));
	return hub_req_query_json(r, t0, out, err);
}
