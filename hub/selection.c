/*
 * selection.c — SQL and loaders for one selection of samples (see
 * selection.h). Same WHERE semantics as http_query.c: host, thread,
 * container, span_id and trace_id are columns, other labels are looked up
 * in the Nested label arrays.
 */
#include "selection.h"

#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "clock.h"
#include "hub.h"
#include "log.h"
#include "stackagg.h"
#include "stacklru.h"
#include "u64map.h"
#include "label_selector.h"

#define MAX_FRAMES 4096
/* stacks looked up in the cache per lock */
#define CACHE_BATCH 512
/* misses fetched by an IN list of ids up to this many; more by a subquery */
#define MISS_LIST_MAX 4000

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};
#define NCOL (sizeof(column_labels) / sizeof(column_labels[0]))

/* " AND <label> = 'v'" per label filter (profile_samples_v1 and
 * label_sets_v1 have the same label columns) */
static void label_conds(wt_buf *w, const hub_params *hp)
{
	size_t i, j;

	for (i = 0; i < hp->nlabels; i++) {
		const char *k = hp->labels[i].key;
		for (j = 0; j < NCOL; j++)
			if (!strcmp(k, column_labels[j]))
				break;
		if (j < NCOL) {
			wt_buf_printf(w, " AND %s = ", column_labels[j]);
		} else {
			wt_buf_puts(w, " AND labels.value[indexOf(labels.key, ");
			hub_sql_quote(w, k);
			wt_buf_puts(w, ")] = ");
		}
		hub_sql_quote(w, hp->labels[i].value);
	}
}

/* " WHERE project = … [AND service = …] [AND sample_type = …]": what raw
 * rows and stack_agg_v1 rows are selected by alike */
static void where_head(wt_buf *w, const hub_sel *s, const char *type)
{
	wt_buf_puts(w, " WHERE project = ");
	hub_sql_quote(w, s->project);
	if (s->hp.service) {
		wt_buf_puts(w, " AND service = ");
		hub_sql_quote(w, s->hp.service);
	}
	if (type) {
		wt_buf_puts(w, " AND sample_type = ");
		hub_sql_quote(w, type);
	}
}

/* " WHERE …" over raw rows of [from, until) */
static void where_range(wt_buf *w, const hub_sel *s, const char *type, int64_t from, int64_t until)
{
	const hub_params *hp = &s->hp;

	where_head(w, s, type);
	hub_sql_date_cond(w, ">=", from);
	hub_sql_date_cond(w, "<=", until);
	wt_buf_printf(w, " AND time_ns >= %lld AND time_ns < %lld", (long long)from, (long long)until);
	label_conds(w, hp);
	hub_lsel_where(w, s->lsel); /* raw rows only: hub_sel_agg_ok */
}

void hub_sel_where(wt_buf *w, const hub_sel *s, const char *type)
{
	where_range(w, s, type, s->from, s->until);
}

int hub_sel_path_param(const struct evkeyvalq *q, struct hub_ctx *ctx, hub_sel *s, wt_err *err)
{
	const char *p = evhttp_find_header(q, "path");

	s->ctx = ctx;
	if (!p || !strcmp(p, "auto"))
		return 0;
	if (!strcmp(p, "raw")) {
		s->ctx = NULL;
		return 0;
	}
	return wt_err_set(err, WT_EINVAL, "path: expected auto or raw");
}

int hub_sel_agg_ok(const hub_sel *s)
{
	size_t i;

	if (!s->ctx || !s->ctx->cfg.query_aggregates)
		return 0;
	/* Prometheus-style matchers (label_selector.h: regex, !=) need the
	 * rows' own labels */
	if (s->lsel)
		return 0;
	for (i = 0; i < s->hp.nlabels; i++)
		if (!strcmp(s->hp.labels[i].key, "span_id") || !strcmp(s->hp.labels[i].key, "trace_id"))
			return 0;
	return 1;
}

/* " WHERE …" over stack_agg_v1 rows of resolution g->res in [g->from_ns,
 * g->until_ns) (aligned to it); ls: the label filters' label-set ids as a
 * SQL list ("" = none match), NULL = resolve them in a subquery. sets:
 * without label filters, the rows of every label set (labelset_id != 0)
 * instead of their sum (labelset_id 0). */
static void where_agg_sets(wt_buf *w, const hub_sel *s, const char *type, const hub_agg_seg *g, const char *ls,
			   int sets)
{
	const hub_params *hp = &s->hp;

	where_head(w, s, type);
	wt_buf_printf(w, " AND res = %lld", (long long)g->res);
	hub_sql_date_cond(w, ">=", g->from_ns);
	hub_sql_date_cond(w, "<=", g->until_ns - 1);
	wt_buf_printf(w, " AND bucket >= %lld AND bucket < %lld", (long long)(g->from_ns / 1000000000LL),
		      (long long)(g->until_ns / 1000000000LL));
	if (!hp->nlabels) {
		wt_buf_puts(w, sets ? " AND labelset_id != 0" : " AND labelset_id = 0");
		return;
	}
	if (ls) {
		/* a literal list lets ClickHouse use the primary key */
		if (ls[0])
			wt_buf_printf(w, " AND labelset_id IN (%s)", ls);
		else
			wt_buf_puts(w, " AND 0");
		return;
	}
	wt_buf_puts(w, " AND labelset_id GLOBAL IN (SELECT labelset_id FROM label_sets_v1 WHERE project = ");
	hub_sql_quote(w, s->project);
	label_conds(w, &s->hp);
	wt_buf_puts(w, ")");
}

static void where_agg(wt_buf *w, const hub_sel *s, const char *type, const hub_agg_seg *g, const char *ls)
{
	where_agg_sets(w, s, type, g, ls, 0);
}

/* label-set ids inlined up to this many; more by a subquery */
#define LABELSET_LIST_MAX 1000

/* The label filters' label-set ids as a comma-separated list into out
 * (NUL-terminated; "" when none match); 1 when there are more than
 * LABELSET_LIST_MAX (out unused: the caller uses a subquery). */
static int labelset_list(hub_ch *ch, const hub_sel *s, wt_buf *out, wt_err *err, int *rc)
{
	wt_buf sql = WT_BUF_INIT;
	size_t i, n = 0;

	wt_buf_puts(&sql, "SELECT DISTINCT labelset_id FROM label_sets_v1 WHERE project = ");
	hub_sql_quote(&sql, s->project);
	label_conds(&sql, &s->hp);
	wt_buf_printf(&sql, " LIMIT %d FORMAT TabSeparated", LABELSET_LIST_MAX + 1);
	*rc = hub_ch_query_buf(ch, &sql, out, err);
	wt_buf_free(&sql);
	if (*rc)
		return 0;
	for (i = 0; i < out->len; i++)
		if (out->data[i] == '\n') {
			n++;
			out->data[i] = i + 1 < out->len ? ',' : '\0';
		}
	if (!out->len || out->data[out->len - 1] != '\0')
		wt_buf_putc(out, '\0');
	if (out->oom)
		*rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	return n > LABELSET_LIST_MAX;
}

/* Rows arriving later than this behind the clock are rare (edge backlogs):
 * aggregate buckets ending before now minus this may be read whole and
 * their complement subtracted (hub_agg_segments_signed) */
#define STABLE_LAG_NS (300 * 1000000000LL)

/* A flat read (rows summed by stack id in the hub) of a minute-resolution
 * piece at least this many minutes long is summed by ClickHouse first:
 * such a piece holds a row per stack, label set and minute, many times
 * its distinct stacks, and sending them all costs more than the GROUP BY.
 * An hour or day piece has few rows per stack and is sent as it is. */
#define FLAT_GROUP_MINUTES 8

/* The label filters' label sets for the aggregate pieces of segs[0..n)
 * (labelset_list), resolved once when any piece reads the aggregates and
 * the selection has label filters: *list the inline list for where_agg
 * (NUL-terminated, in ls), or NULL for its subquery (also without
 * filters). Returns the number of aggregate pieces; on a ClickHouse error
 * *rc is set. */
static size_t agg_labelsets(hub_ch *ch, const hub_sel *s, const hub_agg_seg *segs, size_t n, wt_buf *ls,
			    const char **list, wt_err *err, int *rc)
{
	size_t i, nagg = 0;
	int sub = 0;

	*rc = 0;
	*list = NULL;
	for (i = 0; i < n; i++)
		nagg += segs[i].res != 0;
	if (nagg && s->hp.nlabels) {
		sub = labelset_list(ch, s, ls, err, rc);
		if (!*rc && !sub && ls->data)
			*list = (const char *)ls->data;
	}
	return nagg;
}

/* The selection's pieces as one UNION ALL of SELECTs, each giving [keys, ]
 * v = the signed sum of value and u = any(unit), grouped by `keys` (NULL:
 * no key, no GROUP BY); value is `value` in raw rows and stack_agg_v1
 * alike. flat (keys "stack_id" only): the aggregate pieces are not grouped
 * but read row by row (stack_id, ±value, u = ''), each after one row
 * (0, 0, unit) of the same piece (LIMIT 1); the caller sums equal stack ids (a stack
 * has one row per piece once SummingMergeTree merged its parts, a few more
 * before: reading them is cheaper than a GROUP BY in ClickHouse). Returns
 * the number of pieces, 0 when none (or on a ClickHouse error resolving
 * label sets: *rc set). */
static size_t union_sql(hub_ch *ch, wt_buf *w, const hub_sel *s, const char *type, const char *keys,
			int64_t cover, int flat, wt_err *err, int *rc)
{
	hub_agg_seg segs[HUB_AGG_MAX_SIGNED];
	wt_buf ls = WT_BUF_INIT;
	const char *ls_list;
	size_t n, i;

	n = hub_agg_segments_signed(s->from, s->until, cover, wt_now_ns(CLOCK_REALTIME) - STABLE_LAG_NS, segs);
	agg_labelsets(ch, s, segs, n, &ls, &ls_list, err, rc);
	if (*rc) {
		n = 0;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (i)
			wt_buf_puts(w, " UNION ALL ");
		if (flat && segs[i].res) {
			int group = segs[i].res == hub_agg_res_s[0] &&
				    segs[i].until_ns - segs[i].from_ns >= FLAT_GROUP_MINUTES * 60 * 1000000000LL;

			wt_buf_puts(w, "SELECT toUInt64(0) AS stack_id, toInt64(0) AS v, unit AS u FROM stack_agg_v1");
			where_agg(w, s, type, &segs[i], ls_list);
			wt_buf_puts(w, " LIMIT 1 UNION ALL ");
			wt_buf_printf(w, "SELECT stack_id, %s%s AS v, '' AS u FROM stack_agg_v1",
				      segs[i].sign < 0 ? "-" : "", group ? "sum(value)" : "value");
			where_agg(w, s, type, &segs[i], ls_list);
			if (group)
				wt_buf_puts(w, " GROUP BY stack_id");
			continue;
		}
		wt_buf_printf(w, "SELECT %s%s%ssum(value) AS v, any(unit) AS u FROM %s", keys ? keys : "",
			      keys ? ", " : "", segs[i].sign < 0 ? "-" : "",
			      segs[i].res ? "stack_agg_v1" : "profile_samples_v1");
		if (segs[i].res)
			where_agg(w, s, type, &segs[i], ls_list);
		else
			where_range(w, s, type, segs[i].from_ns, segs[i].until_ns);
		if (keys)
			wt_buf_printf(w, " GROUP BY %s", keys);
	}
out:
	wt_buf_free(&ls);
	return n;
}

static int64_t agg_cover_ns(const hub_sel *s, hub_ch *ch);

size_t hub_sel_labelset_sql(hub_ch *ch, hub_sel *s, const char *type, wt_buf *agg, wt_buf *raw, wt_err *err,
			    int *rc)
{
	hub_agg_seg segs[HUB_AGG_MAX_SEGS];
	wt_buf ls = WT_BUF_INIT;
	const char *ls_list;
	size_t n, i, nagg = 0, nraw = 0;

	*rc = 0;
	s->agg_used = 0;
	if (!hub_sel_agg_ok(s) || s->until <= s->from)
		return 0;
	n = hub_agg_segments(s->from, s->until, agg_cover_ns(s, ch), 0, segs);
	if (!agg_labelsets(ch, s, segs, n, &ls, &ls_list, err, rc) || *rc)
		goto out;
	wt_buf_puts(raw, " AND (");
	for (i = 0; i < n; i++) {
		const hub_agg_seg *g = &segs[i];

		if (!g->res) {
			wt_buf_printf(raw, "%s(time_ns >= %lld AND time_ns < %lld", nraw++ ? " OR " : "",
				      (long long)g->from_ns, (long long)g->until_ns);
			hub_sql_date_cond(raw, ">=", g->from_ns);
			hub_sql_date_cond(raw, "<=", g->until_ns - 1);
			wt_buf_puts(raw, ")");
			continue;
		}
		if (nagg++)
			wt_buf_puts(agg, " UNION ALL ");
		wt_buf_puts(agg, "SELECT labelset_id FROM series_agg_v1");
		where_agg_sets(agg, s, type, g, ls_list, 1);
	}
	wt_buf_puts(raw, nraw ? ")" : "0)");
	s->agg_used = 1;
out:
	wt_buf_free(&ls);
	return nagg;
}

size_t hub_sel_timeline_sql(hub_ch *ch, hub_sel *s, const char *col, int64_t width_ns, wt_buf *w, wt_err *err,
			    int *rc)
{
	hub_agg_seg segs[HUB_AGG_MAX_SEGS];
	wt_buf ls = WT_BUF_INIT;
	const char *ls_list;
	size_t n, i;
	int sets = strcmp(col, "service") != 0;

	*rc = 0;
	s->agg_used = 0;
	if (!s->type[0] || !hub_sel_agg_ok(s) || width_ns <= 0 || width_ns % (hub_agg_res_s[0] * 1000000000LL) ||
	    (strcmp(col, "service") && strcmp(col, "host") && strcmp(col, "thread") && strcmp(col, "container")))
		return 0;
	n = hub_agg_segments(s->from, s->until, agg_cover_ns(s, ch), width_ns, segs);
	if (!agg_labelsets(ch, s, segs, n, &ls, &ls_list, err, rc) || *rc) {
		n = 0; /* raw rows only: the caller's plain query (or the error) */
		goto out;
	}
	for (i = 0; i < n; i++) {
		const hub_agg_seg *g = &segs[i];

		if (i)
			wt_buf_puts(w, " UNION ALL ");
		if (!g->res) {
			wt_buf_printf(w, "SELECT toString(%s) AS lv, toInt64(intDiv(time_ns, %lld)) AS b,"
				      " toInt64(sum(value)) AS v, any(toString(unit)) AS u FROM profile_samples_v1",
				      col, (long long)width_ns);
			where_range(w, s, s->type, g->from_ns, g->until_ns);
			wt_buf_puts(w, " GROUP BY lv, b");
		} else if (!sets) {
			/* series_agg_v1: per label set and bucket, no stack */
			wt_buf_printf(w, "SELECT toString(service) AS lv, toInt64(intDiv(toUInt64(bucket) * 1000000000,"
				      " %lld)) AS b, toInt64(sum(value)) AS v, any(toString(unit)) AS u FROM series_agg_v1",
				      (long long)width_ns);
			where_agg_sets(w, s, s->type, g, ls_list, 1);
			wt_buf_puts(w, " GROUP BY lv, b");
		} else {
			/* per label set, then its label value (label_sets_v1),
			 * the join on the initiator as the subquery's */
			wt_buf_printf(w, "SELECT lv, b, v, u FROM (SELECT labelset_id, toInt64(intDiv(toUInt64(bucket) *"
				      " 1000000000, %lld)) AS b, toInt64(sum(value)) AS v, any(toString(unit)) AS u FROM"
				      " series_agg_v1", (long long)width_ns);
			where_agg_sets(w, s, s->type, g, ls_list, 1);
			wt_buf_printf(w, " GROUP BY labelset_id, b) ANY LEFT JOIN (SELECT labelset_id, toString(%s) AS lv"
				      " FROM label_sets_v1 WHERE project = ", col);
			hub_sql_quote(w, s->project);
			wt_buf_puts(w, ") USING labelset_id");
		}
	}
	s->agg_used = 1;
out:
	wt_buf_free(&ls);
	return n;
}

static int first_field(void *ctx, char **f, size_t n)
{
	char *dst = ctx;
	if (n >= 1 && !dst[0])
		snprintf(dst, HUB_TYPE_MAX, "%s", f[0]);
	return 0;
}

int hub_sel_resolve(hub_ch *ch, hub_sel *s, int64_t now_ns, int default_range_s, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc = 0;

	s->until = s->hp.has_until ? s->hp.until_ns : now_ns;
	s->from = s->hp.has_from ? s->hp.from_ns : s->until - (int64_t)default_range_s * 1000000000LL;
	if (s->from < 0)
		s->from = 0;
	s->type[0] = '\0';
	if (s->hp.type) {
		snprintf(s->type, sizeof(s->type), "%s", s->hp.type);
		return 0;
	}
	wt_buf_puts(&sql, "SELECT sample_type FROM profile_samples_v1");
	hub_sel_where(&sql, s, NULL);
	wt_buf_puts(&sql, " GROUP BY sample_type ORDER BY sample_type = 'cpu' DESC, min(time_ns), sample_type"
		    " LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, first_field, s->type);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

/* Rewrite the stack names[offs[0..*n)] into out with every symbolizable
 * frame replaced by its inline chain (offs[] then index into out; at most
 * MAX_FRAMES frames, the rest dropped like over-deep stacks). */
static int symbolize(hub_ch *ch, const hub_sel *s, const wt_buf *names, size_t *offs, uint64_t *n,
		     wt_buf *out, wt_err *err)
{
	size_t in[MAX_FRAMES], m = 0, i;
	int rc;

	memcpy(in, offs, (size_t)*n * sizeof(*offs));
	wt_buf_reset(out);
	for (i = 0; i < *n && m < MAX_FRAMES; i++) {
		const char *f = (const char *)names->data + in[i];
		size_t len = strlen(f), before = out->len, k = 0;

		if ((rc = hub_symbols_expand(s->syms, ch, s->project, f, len, out, &k, err)))
			return rc;
		if (!k) {
			wt_buf_append(out, f, len + 1);
			k = 1;
		}
		if (out->oom)
			break;
		for (size_t j = 0, p = before; j < k && m < MAX_FRAMES; j++) {
			offs[m++] = p;
			p += strlen((const char *)out->data + p) + 1;
		}
	}
	if (out->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
	*n = m;
	return 0;
}

/* Time from which the aggregates are complete (ns). */
static int64_t agg_cover_ns(const hub_sel *s, hub_ch *ch)
{
	int64_t day = hub_agg_from_day(s->ctx, ch);

	return day > 100000 ? INT64_MAX : day * 86400LL * 1000000000LL;
}

/* One row of the aggregate query: a stack's value and where its frame ids
 * (of the query's dictionary generation, root first) are in the id arena. */
typedef struct agg_row {
	uint64_t sid;
	int64_t v;
	uint32_t off;     /* in uint32 ids (the arena stays under 16 GiB: off_ok) */
	uint16_t nframes; /* <= MAX_FRAMES */
	uint8_t have;
} agg_row;

/* Can ids at uint32 offset `at` of the arena be addressed by agg_row.off? */
static int off_ok(size_t at)
{
	return at / sizeof(uint32_t) < UINT32_MAX;
}

/* (stack id, value) as ClickHouse sent them, before summing */
typedef struct sid_val {
	uint64_t sid;
	int64_t v;
} sid_val;

#define SUM_SMALL 32

static void sids_insertion(sid_val *a, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		sid_val x = a[i];
		for (j = i; j > 0 && a[j - 1].sid > x.sid; j--)
			a[j] = a[j - 1];
		a[j] = x;
	}
}

/* One MSD radix pass over the bits in which src[0..n)'s stack ids differ,
 * 11 at a time (8 for small ranges), from src into dst; end[k] is then
 * the end of bucket k in dst. The number of buckets, 0 when every id is
 * the same (nothing moved). */
static size_t sids_scatter(const sid_val *src, sid_val *dst, size_t n, size_t end[2048])
{
	uint64_t diff = 0;
	unsigned hb, bits, shift;
	size_t i, sum, nb;

	for (i = 1; i < n; i++)
		diff |= src[i].sid ^ src[0].sid;
	if (!diff)
		return 0;
	hb = 64 - (unsigned)__builtin_clzll(diff);
	bits = n > 65536 ? 11 : 8;
	if (bits > hb)
		bits = hb;
	shift = hb - bits;
	nb = (size_t)1 << bits;
	memset(end, 0, nb * sizeof(*end));
	for (i = 0; i < n; i++)
		end[(src[i].sid >> shift) & (nb - 1)]++;
	for (i = sum = 0; i < nb; i++) {
		size_t c = end[i];
		end[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++)
		dst[end[(src[i].sid >> shift) & (nb - 1)]++] = src[i];
	return nb;
}

static void sids_sort_to(sid_val *src, sid_val *dst, size_t n);

/* Sort a[0..n) by stack id in place, s[0..n) scratch. The first pass
 * spreads the rows into buckets small enough for the cache, so the rest
 * runs there instead of one cache miss per row as a hash map from stack
 * id to sum takes; the passes alternate between a and s, each bucket
 * ending where its caller wants it. */
static void sids_sort(sid_val *a, sid_val *s, size_t n)
{
	size_t end[2048], nb, i, j;

	if (n <= SUM_SMALL) {
		sids_insertion(a, n);
		return;
	}
	if (!(nb = sids_scatter(a, s, n, end)))
		return;
	for (i = j = 0; i < nb; j = end[i++])
		sids_sort_to(s + j, a + j, end[i] - j);
}

/* Sort src[0..n) by stack id into dst[0..n) (src is then scratch). */
static void sids_sort_to(sid_val *src, sid_val *dst, size_t n)
{
	size_t end[2048], nb, i, j;

	if (n <= SUM_SMALL || !(nb = sids_scatter(src, dst, n, end))) {
		memcpy(dst, src, n * sizeof(*dst));
		sids_insertion(dst, n);
		return;
	}
	for (i = j = 0; i < nb; j = end[i++])
		sids_sort(dst + j, src + j, end[i] - j);
}

/* Rows of stack ids summed from a[0..n) (reordered; s: n scratch rows),
 * in stack id order, zero sums dropped (the raw path's HAVING). *out is
 * malloc'd, the caller's; 0 or WT_ENOMEM. */
static int sids_sum(sid_val *a, sid_val *s, size_t n, agg_row **out, size_t *nout)
{
	agg_row *rows;
	size_t i, j, k = 0;

	sids_sort(a, s, n);
	for (i = 0; i < n; i = j) {
		int64_t v = 0;

		for (j = i; j < n && a[j].sid == a[i].sid; j++)
			v += a[j].v;
		if (v) {
			a[k].sid = a[i].sid;
			a[k++].v = v;
		}
	}
	if (!(rows = malloc((k ? k : 1) * sizeof(*rows))))
		return WT_ENOMEM;
	for (i = 0; i < k; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		rows[i].sid = a[i].sid;
		rows[i].v = a[i].v;
	}
	*out = rows;
	*nout = k;
	return 0;
}

/* Frames of the rows still missing, from profile_stacks_v1 (interned into
 * the cache's dictionary d, ids into the arena). Many misses: the stack ids
 * of the selection's pieces again, grouped (the flat pieces under a
 * subquery that reads only stack_id lose their WHERE columns through a
 * Distributed table in ClickHouse 18.16: "Not found column"). */
static int fetch_missing(hub_ch *ch, const hub_sel *s, hub_stacklru *c, hub_framedict *d, agg_row *rows,
			 size_t nrows, wt_u64map *idx, size_t nmiss, wt_buf *arena, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, names = WT_BUF_INIT;
	hub_rb_reader rd;
	size_t i, k = 0;
	int rc = 0;

	wt_buf_puts(&sql, "SELECT stack_id, frames FROM profile_stacks_v1 WHERE project = ");
	hub_sql_quote(&sql, s->project);
	if (nmiss <= MISS_LIST_MAX) {
		wt_buf_puts(&sql, " AND stack_id IN (");
		for (i = 0; i < nrows; i++)
			if (!rows[i].have)
				wt_buf_printf(&sql, "%s%llu", k++ ? "," : "", (unsigned long long)rows[i].sid);
		wt_buf_puts(&sql, ")");
	} else {
		wt_buf_puts(&sql, " AND stack_id GLOBAL IN (SELECT stack_id FROM (");
		if (!union_sql(ch, &sql, s, s->type, "stack_id", agg_cover_ns(s, ch), 0, err, &rc)) {
			if (!rc)
				rc = wt_err_set(err, WT_EINVAL, "no pieces for the missing stacks");
			goto out;
		}
		wt_buf_puts(&sql, "))");
	}
	wt_buf_puts(&sql, " FORMAT RowBinary");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_rb_reader_init(&rd, res.data, res.len);
	while (!hub_rb_eof(&rd)) {
		uint64_t sid, nf, j;
		const char *str;
		size_t sl, slot, at;
		agg_row *r = NULL;

		if (hub_rb_read_u64(&rd, &sid) || hub_rb_read_varuint(&rd, &nf)) {
			rc = wt_err_set(err, WT_EIO, "clickhouse: truncated RowBinary result");
			goto out;
		}
		wt_buf_reset(&names);
		for (j = 0; j < nf; j++) {
			if (hub_rb_read_str(&rd, &str, &sl)) {
				rc = wt_err_set(err, WT_EIO, "clickhouse: truncated RowBinary result");
				goto out;
			}
			/* over-deep stacks keep their first MAX_FRAMES frames */
			if (j < MAX_FRAMES) {
				wt_buf_append(&names, str, sl);
				wt_buf_putc(&names, '\0');
			}
		}
		if (nf > MAX_FRAMES)
			nf = MAX_FRAMES;
		if (names.oom || wt_u64map_slot(idx, sid, &slot)) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if (idx->vals[slot] != WT_U64MAP_EMPTY)
			r = &rows[idx->vals[slot]];
		if (!r || r->have)
			continue; /* not in the selection (subquery path) or a duplicate row */
		at = arena->len;
		if ((rc = hub_stacklru_put(c, d, hub_stacklru_key(s->project, sid), (const char *)names.data,
					   names.len, (size_t)nf, arena))) {
			rc = wt_err_set(err, rc, "out of memory");
			goto out;
		}
		if (!off_ok(arena->len)) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory: too many frames");
			goto out;
		}
		r->off = (uint32_t)(at / sizeof(uint32_t));
		r->nframes = (uint16_t)((arena->len - at) / sizeof(uint32_t));
		r->have = 1;
	}
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&names);
	return rc;
}

/* Per distinct frame id of the rows: its names in the flame builder (one,
 * or the inline chain the symbolizer expands it to), symbolized and
 * interned once per query. dense: frame id → index into span[] (+1; 0 =
 * not seen); span[k] = {start, count} into bids. */
typedef struct frame_map {
	uint32_t *dense;
	size_t ndense;
	uint32_t (*span)[2];
	uint32_t *bids;
	size_t nbids, cap_bids;
	size_t nd; /* distinct frame ids */
} frame_map;

static void frame_map_free(frame_map *m)
{
	free(m->dense);
	free(m->span);
	free(m->bids);
}

/* m->dense and m->nd: the distinct frame ids of the rows, numbered from 1
 * in the order met (rows in arena order: sequential reads). */
static int frame_map_index(const agg_row *rows, size_t nrows, const uint32_t *ids, frame_map *m, wt_err *err)
{
	uint32_t maxid = 0;
	size_t i, j;

	for (i = 0; i < nrows; i++)
		for (j = 0; j < rows[i].nframes; j++)
			if (ids[rows[i].off + j] > maxid)
				maxid = ids[rows[i].off + j];
	m->ndense = (size_t)maxid + 1;
	m->nd = 0;
	if (!(m->dense = calloc(m->ndense, sizeof(*m->dense))))
		return wt_err_set(err, WT_ENOMEM, "out of memory building the view");
	for (i = 0; i < nrows; i++)
		for (j = 0; j < rows[i].nframes; j++) {
			uint32_t id = ids[rows[i].off + j];
			if (!m->dense[id])
				m->dense[id] = (uint32_t)++m->nd;
		}
	return 0;
}

static int frame_map_build(hub_ch *ch, const hub_sel *s, hub_stacklru *c, hub_framedict *d, size_t nrows,
			   wt_flame *f, frame_map *m, wt_err *err)
{
	wt_buf names = WT_BUF_INIT, sym = WT_BUF_INIT, symoff = WT_BUF_INIT;
	uint32_t *distinct = NULL, *plain_ids = NULL;
	const char **plain = NULL;
	size_t *offs = NULL, nd = m->nd, nplain = 0, i, j, q;
	int rc = 0;

	distinct = malloc((nd ? nd : 1) * sizeof(*distinct));
	offs = malloc((nd ? nd : 1) * sizeof(*offs));
	plain = malloc((nd ? nd : 1) * sizeof(*plain));
	plain_ids = malloc((nd ? nd : 1) * sizeof(*plain_ids));
	m->span = malloc((nd ? nd : 1) * sizeof(*m->span));
	if (!distinct || !offs || !plain || !plain_ids || !m->span) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
		goto out;
	}
	for (i = 0; i < m->ndense; i++)
		if (m->dense[i])
			distinct[m->dense[i] - 1] = (uint32_t)i;
	/* every distinct frame is at least one name and one node, every
	 * stack at least one leaf node: room for that at once */
	if (wt_flame_reserve(f, wt_flame_nnames(f) + nd, nd + nrows + 1)) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
		goto out;
	}
	if ((rc = hub_stacklru_names(c, d, distinct, nd, &names, offs))) {
		rc = wt_err_set(err, rc, "frame dictionary: %s", rc == WT_ENOMEM ? "out of memory" : "unknown id");
		goto out;
	}
	/* 1: symbolize; span[i] = where frame i's names go in bids: one
	 * name for a frame shown as stored (plain[]), its inline chain
	 * (names in sym, their offsets in symoff) for a symbolized one */
	for (i = 0; i < nd; i++) {
		const char *fr = (const char *)names.data + offs[i];
		size_t k = 0, before = sym.len;

		if (s->syms && (rc = hub_symbols_expand(s->syms, ch, s->project, fr, strlen(fr), &sym, &k, err)))
			goto out;
		if (sym.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
			goto out;
		}
		if (m->nbids + (k ? k : 1) >= UINT32_MAX) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory: too many frames");
			goto out;
		}
		m->span[i][0] = (uint32_t)m->nbids;
		m->span[i][1] = (uint32_t)(k ? k : 1);
		m->nbids += k ? k : 1;
		if (!k) {
			plain[nplain++] = fr;
			continue;
		}
		for (j = 0, q = before; j < k; j++) {
			if (wt_buf_append(&symoff, &q, sizeof(q))) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
				goto out;
			}
			q += strlen((const char *)sym.data + q) + 1;
		}
	}
	if (!(m->bids = malloc((m->nbids ? m->nbids : 1) * sizeof(*m->bids)))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
		goto out;
	}
	m->cap_bids = m->nbids;
	/* 2: the frames shown as stored are distinct dictionary entries:
	 * interned without a lookup each on a new builder; 3: the inline
	 * chains' names, which may equal them or each other, one by one */
	if (wt_flame_intern_new(f, plain, nplain, plain_ids)) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
		goto out;
	}
	for (i = j = q = 0; i < nd; i++) {
		uint32_t at = m->span[i][0], k;

		if (m->span[i][1] == 1 && (j < nplain && plain[j] == (const char *)names.data + offs[i])) {
			m->bids[at] = plain_ids[j++];
			continue;
		}
		for (k = 0; k < m->span[i][1]; k++, q++) {
			const char *nm = (const char *)sym.data + ((const size_t *)symoff.data)[q];
			if (wt_flame_intern(f, nm, &m->bids[at + k])) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
				goto out;
			}
		}
	}
out:
	free(distinct);
	free(offs);
	free(plain);
	free(plain_ids);
	wt_buf_free(&names);
	wt_buf_free(&sym);
	wt_buf_free(&symoff);
	return rc;
}

/* this thread's CPU time (the phase figures of the debug log) */
static int64_t cpu_ns(void)
{
	return wt_now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* The aggregate path of hub_sel_load_flame: (stack_id, value) pairs from
 * the pieces of the range, frame ids from the cache or profile_stacks_v1,
 * each distinct frame symbolized and interned once. */
static int load_flame_agg(hub_ch *ch, hub_sel *s, wt_flame *f, char **unit, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, uq = WT_BUF_INIT, res = WT_BUF_INIT, arena = WT_BUF_INIT;
	wt_u64map idx = {0};
	agg_row *rows = NULL;
	size_t nrows = 0, nmiss = 0, i, slot;
	uint32_t *soff = NULL, *slen = NULL, unknown_id = UINT32_MAX;
	int64_t *svals = NULL;
	wt_buf sbids = WT_BUF_INIT;
	hub_stacklru *c = s->ctx->frames, *own = NULL;
	hub_framedict *d = NULL;
	frame_map fm;
	hub_rb_reader rd;
	int rc = 0;
	int64_t ph0 = 0, ph1 = 0, ph2 = 0, ph3 = 0, ph4 = 0, ph5 = 0, ph6 = 0; /* phase clocks (debug log) */
	int64_t phs = 0;
	sid_val *pv = NULL, *scratch = NULL;
	size_t nin = 0;

	memset(&fm, 0, sizeof(fm));
	s->agg_used = 1;
	if (!c && !(c = own = hub_stacklru_new(0))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if (!(d = hub_stacklru_acquire(c))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if (!union_sql(ch, &uq, s, s->type, "stack_id", agg_cover_ns(s, ch), 1, err, &rc))
		goto out;
	if (wt_buf_putc(&uq, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	/* rows of equal stack ids are summed here, zero sums dropped */
	wt_buf_printf(&sql, "%s FORMAT RowBinary", (const char *)uq.data);
	ph0 = wt_now_ns(CLOCK_REALTIME);
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	ph0 = wt_now_ns(CLOCK_REALTIME) - ph0; /* ClickHouse, wall clock */
	ph1 = cpu_ns();
	/* The rows, as (stack id, value) pairs written over the result they
	 * are read from (a row is at least 17 bytes: stack id, value, unit
	 * length; a pair 16, so the writes stay behind the reads) */
	pv = (sid_val *)res.data;
	hub_rb_reader_init(&rd, res.data, res.len);
	for (nin = 0; !hub_rb_eof(&rd); nin++) {
		const char *u;
		size_t ul;
		sid_val x;

		if (rd.end - rd.p >= 17 && rd.p[16] == 0) { /* a flat row: no unit */
			memcpy(&x.sid, rd.p, 8);
			memcpy(&x.v, rd.p + 8, 8);
			rd.p += 17;
		} else if (hub_rb_read_u64(&rd, &x.sid) || hub_rb_read_i64(&rd, &x.v) ||
			   hub_rb_read_str(&rd, &u, &ul)) {
			rc = wt_err_set(err, WT_EIO, "clickhouse: truncated RowBinary result at byte %zu",
					(size_t)(rd.p - res.data));
			goto out;
		} else if (!*unit && ul && !(*unit = strndup(u, ul))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		memcpy(&pv[nin], &x, sizeof(x));
	}
	/* Rows of equal stack ids (other parts or pieces of the stack) are
	 * summed here, stacks summing to zero dropped (the raw path's
	 * HAVING), in stack id order: the view does not depend on the order
	 * ClickHouse sent the rows in (node ids, which break ties where a
	 * flame graph is cut at max_nodes, follow the order stacks are added
	 * in). Sorted, then summed: a hash map from stack id to sum costs a
	 * cache miss per row once the stacks outgrow the cache (a week of a
	 * million stacks: seven rows each). */
	if (!(scratch = malloc((nin ? nin : 1) * sizeof(*scratch))) ||
	    (rc = sids_sum(pv, scratch, nin, &rows, &nrows))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	free(scratch);
	scratch = NULL;
	pv = NULL;
	wt_buf_free(&res);
	phs = cpu_ns();
	if (!nrows) { /* no stack: no unit either, as on the raw path */
		free(*unit);
		*unit = NULL;
	}
	/* frame ids of the cached stacks, a batch per lock */
	for (i = 0; i < nrows; i += CACHE_BATCH) {
		uint64_t keys[CACHE_BATCH];
		size_t offs[CACHE_BATCH], nfs[CACHE_BATCH], j, m = nrows - i < CACHE_BATCH ? nrows - i : CACHE_BATCH;

		for (j = 0; j < m; j++)
			keys[j] = hub_stacklru_key(s->project, rows[i + j].sid);
		if (hub_stacklru_get_many(c, d, keys, m, &arena, offs, nfs)) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
			goto out;
		}
		for (j = 0; j < m; j++) {
			agg_row *r = &rows[i + j];
			if (nfs[j] == SIZE_MAX) {
				nmiss++;
				continue;
			}
			if (!off_ok(arena.len)) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory: too many frames");
				goto out;
			}
			r->off = (uint32_t)offs[j];
			r->nframes = (uint16_t)(nfs[j] < MAX_FRAMES ? nfs[j] : MAX_FRAMES);
			r->have = 1;
		}
	}
	ph2 = cpu_ns();
	/* stack id → row, to place the misses (the rows' ids are distinct) */
	for (i = 0; nmiss && i < nrows; i++) {
		if (wt_u64map_slot(&idx, rows[i].sid, &slot)) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		idx.keys[slot] = rows[i].sid;
		idx.vals[slot] = (uint32_t)i;
		idx.n++;
	}
	if (nmiss && (rc = fetch_missing(ch, s, c, d, rows, nrows, &idx, nmiss, &arena, err)))
		goto out;
	if (arena.oom) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
		goto out;
	}
	ph3 = cpu_ns();
	/* The rows stay in stack id order, as their frames lie in the arena:
	 * sorting them by frames (so that neighbours share call-path prefixes
	 * the flame builder walks without lookups) cost as much as the
	 * lookups it saved (perf, 100 k stacks: the sort's comparisons miss
	 * the cache as much as the lookups do). */
	if ((rc = frame_map_index(rows, nrows, (const uint32_t *)arena.data, &fm, err)))
		goto out;
	ph4 = cpu_ns();
	if ((rc = frame_map_build(ch, s, c, d, nrows, f, &fm, err)))
		goto out;
	ph5 = cpu_ns();
	/* every stack as builder name ids, one after another; then the
	 * builder takes them all at once (wt_flame_add_stacks: the tree by
	 * distinct call-path prefix, no lookup per frame) */
	if (!(soff = malloc((nrows ? nrows : 1) * sizeof(*soff))) ||
	    !(slen = malloc((nrows ? nrows : 1) * sizeof(*slen))) ||
	    !(svals = malloc((nrows ? nrows : 1) * sizeof(*svals))) || wt_buf_reserve(&sbids, arena.len)) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < nrows; i++) {
		const agg_row *r = &rows[i];
		const uint32_t *ids = (const uint32_t *)arena.data + r->off;
		size_t n = 0, j, q, at = sbids.len / sizeof(uint32_t);
		uint32_t *bids;

		if (!off_ok(sbids.len + MAX_FRAMES * sizeof(uint32_t)) ||
		    wt_buf_reserve(&sbids, MAX_FRAMES * sizeof(uint32_t))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory: too many frames");
			goto out;
		}
		bids = (uint32_t *)(sbids.data + sbids.len);
		for (j = 0; r->have && j < r->nframes && n < MAX_FRAMES; j++) {
			const uint32_t *sp = fm.span[fm.dense[ids[j]] - 1];
			for (q = 0; q < sp[1] && n < MAX_FRAMES; q++)
				bids[n++] = fm.bids[sp[0] + q];
		}
		if (n == 0) {
			s->unknown_stacks = 1;
			if (unknown_id == UINT32_MAX && wt_flame_intern(f, "[unknown stack]", &unknown_id)) {
				rc = wt_err_set(err, WT_ENOMEM, "out of memory");
				goto out;
			}
			bids[n++] = unknown_id;
		}
		sbids.len += n * sizeof(uint32_t);
		soff[i] = (uint32_t)at;
		slen[i] = (uint32_t)n;
		svals[i] = r->v;
	}
	ph6 = cpu_ns();
	if ((rc = wt_flame_add_stacks(f, (const uint32_t *)sbids.data, soff, slen, svals, nrows))) {
		rc = wt_err_set(err, rc, "building the view failed");
		goto out;
	}
	/* WT_LOG_LEVEL=debug: where an aggregate query's time goes (ClickHouse:
	 * wall clock; the hub's phases: this thread's CPU time, so the figures
	 * hold on a loaded machine) */
	wt_debug("msg=\"flame from aggregates\" rows_in=%zu stacks=%zu misses=%zu clickhouse_ms=%.1f sum_ms=%.1f"
		 " cache_ms=%.1f fetch_ms=%.1f index_ms=%.1f frames_ms=%.1f stacks_ms=%.1f build_ms=%.1f", nin, nrows,
		 nmiss, ph0 / 1e6, (phs - ph1) / 1e6, (ph2 - phs) / 1e6, (ph3 - ph2) / 1e6, (ph4 - ph3) / 1e6, (ph5 - ph4) / 1e6,
		 (ph6 - ph5) / 1e6, (cpu_ns() - ph6) / 1e6);
out:
	if (d)
		hub_stacklru_release(c, d);
	hub_stacklru_free(own);
	frame_map_free(&fm);
	free(scratch);
	free(rows);
	free(soff);
	free(slen);
	free(svals);
	wt_buf_free(&sbids);
	wt_u64map_free(&idx);
	wt_buf_free(&sql);
	wt_buf_free(&uq);
	wt_buf_free(&res);
	wt_buf_free(&arena);
	return rc;
}

int hub_sel_load_flame(hub_ch *ch, hub_sel *s, wt_flame *f, char **unit, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, names = WT_BUF_INIT, sym = WT_BUF_INIT;
	hub_rb_reader rd;
	size_t *offs = NULL;
	const char **frames = NULL;
	int rc = 0;

	*unit = NULL;
	s->agg_used = 0;
	if (!s->type[0])
		return 0;
	if (hub_sel_agg_ok(s))
		return load_flame_agg(ch, s, f, unit, err);
	offs = malloc(MAX_FRAMES * sizeof(*offs));
	frames = malloc(MAX_FRAMES * sizeof(*frames));
	if (!offs || !frames) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_puts(&sql, "SELECT s.stack_id, s.v, st.frames, s.unit FROM (SELECT stack_id, sum(value) AS v,"
		    " any(unit) AS unit FROM profile_samples_v1");
	hub_sel_where(&sql, s, s->type);
	wt_buf_puts(&sql, " GROUP BY stack_id HAVING v != 0) AS s ANY LEFT JOIN (SELECT stack_id, frames"
		    " FROM profile_stacks_v1 WHERE project = ");
	hub_sql_quote(&sql, s->project);
	wt_buf_puts(&sql, ") AS st USING stack_id FORMAT RowBinary");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_rb_reader_init(&rd, res.data, res.len);
	while (!hub_rb_eof(&rd)) {
		uint64_t sid, nframes, i;
		int64_t v;
		const char *str, *u;
		size_t sl, ul;

		if (hub_rb_read_u64(&rd, &sid) || hub_rb_read_i64(&rd, &v) ||
		    hub_rb_read_varuint(&rd, &nframes))
			goto bad;
		wt_buf_reset(&names);
		for (i = 0; i < nframes; i++) {
			if (hub_rb_read_str(&rd, &str, &sl))
				goto bad;
			if (i < MAX_FRAMES) {
				offs[i] = names.len;
				wt_buf_append(&names, str, sl);
				wt_buf_putc(&names, '\0');
			}
		}
		if (hub_rb_read_str(&rd, &u, &ul))
			goto bad;
		if (names.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory building the view");
			goto out;
		}
		if (nframes > MAX_FRAMES)
			nframes = MAX_FRAMES;
		if (s->syms) {
			if ((rc = symbolize(ch, s, &names, offs, &nframes, &sym, err)))
				goto out;
			for (i = 0; i < nframes; i++)
				frames[i] = (const char *)sym.data + offs[i];
		} else {
			for (i = 0; i < nframes; i++)
				frames[i] = (const char *)names.data + offs[i];
		}
		if (nframes == 0) {
			frames[0] = "[unknown stack]";
			nframes = 1;
		}
		if (!*unit && !(*unit = strndup(u, ul))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = wt_flame_add(f, frames, (size_t)nframes, v))) {
			rc = wt_err_set(err, rc, "building the view failed");
			goto out;
		}
	}
	goto out;
bad:
	rc = wt_err_set(err, WT_EIO, "clickhouse: truncated RowBinary result at byte %zu",
			(size_t)(rd.p - res.data));
out:
	free(offs);
	free(frames);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&names);
	wt_buf_free(&sym);
	return rc;
}

static int int_field(void *ctx, char **f, size_t n)
{
	int64_t *dst = ctx;
	if (n >= 1)
		*dst = strtoll(f[0], NULL, 10);
	return 0;
}

/* YYYYMMDD of the day of unix s (a toYYYYMMDD partition name) */
static void day_partition(int64_t sec, char out[16])
{
	time_t t = (time_t)(sec < 0 ? 0 : sec);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 16, "%Y%m%d", &tm);
}

/* one "host:port" of the cluster's servers into the address list of
 * remote(): a name of letters, digits, '.', '-', '_' (an IPv6 address in
 * brackets); anything else and the list is refused (no cache) */
static int server_cb(void *ctx, char **f, size_t n)
{
	wt_buf *addrs = ctx;
	const char *h;
	int v6;

	if (n < 2 || !f[0][0] || strspn(f[1], "0123456789") != strlen(f[1]) || !f[1][0])
		return -1;
	h = f[0];
	if (strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:") != strlen(h))
		return -1;
	v6 = strchr(h, ':') != NULL;
	wt_buf_printf(addrs, "%s%s%s%s:%s", addrs->len ? "," : "", v6 ? "[" : "", h, v6 ? "]" : "", f[1]);
	return 0;
}

/* The FROM of the parts the fingerprint reads: this server's system.parts;
 * in cluster mode every server's (each listed as its own shard of
 * remote(), so every replica answers: a replica that lags behind changes
 * the fingerprint again when it catches up, and a view read from it is not
 * kept past that). remote() connects as the cluster's Distributed tables
 * do (the default user, docs/operations.md "View cache"). */
static int parts_from(hub_ch *ch, wt_buf *from, wt_err *err)
{
	const char *c = hub_ch_cluster(ch);
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, addrs = WT_BUF_INIT;
	int rc = 0;

	if (!c)
		return wt_buf_puts(from, "system.parts WHERE database = currentDatabase()") ? WT_ENOMEM : 0;
	wt_buf_puts(&sql, "SELECT host_name, toString(port) FROM system.clusters WHERE cluster = ");
	hub_sql_quote(&sql, c);
	wt_buf_puts(&sql, " ORDER BY shard_num, replica_num FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	if (hub_tsv_each((char *)res.data, res.len, 2, server_cb, &addrs) || !addrs.len) {
		rc = wt_err_set(err, WT_EINVAL, "cluster %s: no servers, or a server name remote() cannot take", c);
		goto out;
	}
	if (wt_buf_putc(&addrs, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_puts(from, "remote(");
	hub_sql_quote(from, (const char *)addrs.data);
	wt_buf_puts(from, ", system, parts) WHERE database = ");
	hub_sql_quote(from, hub_ch_database(ch));
	if (from->oom)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&addrs);
	return rc;
}

int hub_sel_cache_key(hub_ch *ch, hub_sel *s, const char *view, const struct evkeyvalq *q, int64_t now_ns,
		      wt_buf *key, uint64_t *fp, wt_err *err, int *rc)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, from = WT_BUF_INIT;
	const struct evkeyval *kv;
	const char *loc = hub_ch_cluster(ch) ? "_local" : "";
	char d0[16], d1[16];
	unsigned long long sum = 0, n = 0;
	uint64_t symhash = 0;
	int ok = 0;

	*rc = 0;
	*fp = 0;
	if (!s->ctx || !s->ctx->views || !s->type[0] || !hub_sel_agg_ok(s) ||
	    s->until > now_ns - STABLE_LAG_NS)
		return 0;
	if ((*rc = hub_symbols_index_hash(s->syms, ch, s->project, &symhash, err)))
		return 0;
	wt_buf_printf(key, "%s\n%s\n%s\n%lld\n%lld\n%lld\n%llx\n%d\n", view, s->project, s->type,
		      (long long)s->from, (long long)s->until, (long long)hub_agg_from_day(s->ctx, ch),
		      (unsigned long long)symhash, s->syms != NULL);
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next)
		if (strcmp(kv->key, "cache")) {
			hub_sql_quote(key, kv->key);
			wt_buf_putc(key, '=');
			hub_sql_quote(key, kv->value ? kv->value : "");
			wt_buf_putc(key, '\n');
		}
	if (wt_buf_putc(key, '\0')) {
		*rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	/* a day either side of the range: margins cost nothing */
	day_partition(s->from / 1000000000LL - 86400, d0);
	day_partition(s->until / 1000000000LL + 86400, d1);
	if ((*rc = parts_from(ch, &from, err)))
		goto out;
	if (wt_buf_putc(&from, '\0')) {
		*rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_printf(&sql, "SELECT sum(cityHash64(table, name)), count() FROM %s AND active AND (table IN"
		      " ('stack_agg_v1%s', 'profile_samples_v1%s') AND partition >= '%s' AND partition <= '%s'",
		      (const char *)from.data, loc, loc, d0, d1);
	if (s->hp.nlabels)
		wt_buf_printf(&sql, " OR table = 'label_sets_v1%s'", loc);
	wt_buf_puts(&sql, ") FORMAT TabSeparated");
	if ((*rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	if (wt_buf_putc(&res, '\0')) {
		*rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if (sscanf((const char *)res.data, "%llu\t%llu", &sum, &n) != 2) {
		*rc = wt_err_set(err, WT_EIO, "clickhouse: unexpected system.parts answer");
		goto out;
	}
	*fp = (uint64_t)sum ^ ((uint64_t)n * 0x9e3779b97f4a7c15ULL);
	ok = 1;
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&from);
	return ok;
}

int hub_sel_total(hub_ch *ch, hub_sel *s, const char *type, int64_t *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	*out = 0;
	if (hub_sel_agg_ok(s)) {
		wt_buf_puts(&sql, "SELECT sum(v) FROM (");
		if (!union_sql(ch, &sql, s, type, NULL, agg_cover_ns(s, ch), 0, err, &rc)) {
			if (rc)
				goto out;
			wt_buf_puts(&sql, "SELECT toInt64(0) AS v");
		}
		wt_buf_puts(&sql, ") FORMAT TabSeparated");
	} else {
		wt_buf_puts(&sql, "SELECT sum(value) FROM profile_samples_v1");
		hub_sel_where(&sql, s, type);
		wt_buf_puts(&sql, " FORMAT TabSeparated");
	}
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, int_field, out);
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

const char *hub_count_type_of(const char *type)
{
	static const char *const pairs[][2] = {
		{"cpu", "samples"}, {"wall", "samples"},
		{"inuse_space", "inuse_objects"}, {"alloc_space", "alloc_objects"},
		{"mutex_delay", "mutex_contentions"}, {"block_delay", "block_contentions"},
	};
	size_t i;

	for (i = 0; type && i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!strcmp(type, pairs[i][0]))
			return pairs[i][1];
	return NULL;
}

int hub_unit_is_count(const char *unit)
{
	static const char *const counts[] = {"samples", "count", "objects", "goroutines", "events",
					     "contentions", "lock_samples", ""};
	size_t i;

	for (i = 0; unit && i < sizeof(counts) / sizeof(counts[0]); i++)
		if (!strcmp(unit, counts[i]))
			return 1;
	return 0;
}

static const int64_t nice_widths_ns[] = {
	1000000LL, 2000000LL, 5000000LL, 10000000LL, 20000000LL, 50000000LL, 100000000LL,
	200000000LL, 500000000LL, 1000000000LL, 2000000000LL, 5000000000LL, 10000000000LL,
	15000000000LL, 30000000000LL, 60000000000LL, 120000000000LL, 300000000000LL,
	600000000000LL, 900000000000LL, 1800000000000LL, 3600000000000LL, 7200000000000LL,
	10800000000000LL, 21600000000000LL, 43200000000000LL, 86400000000000LL,
};

int64_t hub_nice_width(int64_t from, int64_t until, long n)
{
	const int64_t day = 86400000000000LL;
	size_t i;
	int64_t w;

	if (until <= from)
		until = from + 1;
	if (n < 1)
		n = 1;
	for (i = 0; i < sizeof(nice_widths_ns) / sizeof(nice_widths_ns[0]); i++) {
		w = nice_widths_ns[i];
		if ((until - 1) / w - from / w + 1 <= n)
			return w;
	}
	w = ((until - from) / day / n + 1) * day;
	while ((until - 1) / w - from / w + 1 > n)
		w += day;
	return w;
}

/* Is k one of the selection parameters (what a prefix may override)? */
static int is_sel_key(const char *k)
{
	return !strcmp(k, "service") || !strcmp(k, "type") || !strcmp(k, "from") ||
	       !strcmp(k, "until") || !strcmp(k, "span_id") || !strcmp(k, "trace_id") ||
	       !strncmp(k, "label.", 6);
}

int hub_sel_params_prefixed(const struct evkeyvalq *q, const char *prefix, struct evkeyvalq *tmp,
			    hub_params *out, wt_err *err)
{
	const struct evkeyval *kv;
	size_t pl = strlen(prefix);
	int rc;

	tmp->tqh_first = NULL;
	tmp->tqh_last = &tmp->tqh_first;
	/* target values first, then prefixed ones replace or add */
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next)
		if (is_sel_key(kv->key) && evhttp_add_header(tmp, kv->key, kv->value ? kv->value : ""))
			return wt_err_set(err, WT_EINVAL, "%s: value not usable", kv->key);
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		const char *k = kv->key;
		if (strncmp(k, prefix, pl) || !is_sel_key(k + pl))
			continue;
		evhttp_remove_header(tmp, k + pl);
		if (evhttp_add_header(tmp, k + pl, kv->value ? kv->value : ""))
			return wt_err_set(err, WT_EINVAL, "%s: value not usable", k);
	}
	rc = hub_params_parse(tmp, out, err);
	if (rc) {
		/* name the prefixed parameter: "from: …" → "base_from: …" */
		char msg[sizeof(err->msg)];
		snprintf(msg, sizeof(msg), "%s%s", prefix, err->msg);
		snprintf(err->msg, sizeof(err->msg), "%s", msg);
	}
	return rc;
}
