/*
 * stackagg.c — range decomposition over the stack aggregates, their shared
 * SQL (materialized views in schema.c, the backfill job, deletion repair),
 * the coverage state and the backfill job (see stackagg.h).
 */
#include "stackagg.h"
#include "clock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"
#include "schema.h"

const int64_t hub_agg_res_s[HUB_AGG_NRES] = {60, 3600, 86400};

#define NS 1000000000LL
#define DAY_NS (86400 * NS)

typedef struct seg_out {
	hub_agg_seg *s;
	size_t n;
	int64_t levels[HUB_AGG_NRES]; /* ns, coarsest first */
	size_t nlevels;
} seg_out;

static void emit(seg_out *o, int64_t res, int64_t a, int64_t b)
{
	if (a >= b)
		return;
	/* adjacent raw pieces merge */
	if (res == 0 && o->n && o->s[o->n - 1].res == 0 && o->s[o->n - 1].until_ns == a) {
		o->s[o->n - 1].until_ns = b;
		return;
	}
	o->s[o->n].res = res;
	o->s[o->n].from_ns = a;
	o->s[o->n].until_ns = b;
	o->s[o->n].sign = 1;
	o->n++;
}

static int64_t floor_to(int64_t x, int64_t r)
{
	int64_t q = x / r;
	if (x % r < 0)
		q--;
	return q * r;
}

static void rec(seg_out *o, int64_t a, int64_t b, size_t li)
{
	int64_t r, A, B;

	if (a >= b)
		return;
	if (li == o->nlevels) {
		emit(o, 0, a, b);
		return;
	}
	r = o->levels[li];
	A = floor_to(a, r);
	if (A < a)
		A += r;
	B = floor_to(b, r);
	if (A < B) {
		rec(o, a, A, li + 1);
		emit(o, r / NS, A, B);
		rec(o, B, b, li + 1);
	} else {
		rec(o, a, b, li + 1);
	}
}

size_t hub_agg_segments(int64_t from_ns, int64_t until_ns, int64_t cover_ns, int64_t step_ns,
			hub_agg_seg *out)
{
	seg_out o;
	int i;

	memset(&o, 0, sizeof(o));
	o.s = out;
	for (i = HUB_AGG_NRES - 1; i >= 0; i--) {
		int64_t r = hub_agg_res_s[i] * NS;
		if (step_ns > 0 && step_ns % r)
			continue;
		o.levels[o.nlevels++] = r;
	}
	if (from_ns >= until_ns)
		return 0;
	if (cover_ns > from_ns) {
		emit(&o, 0, from_ns, cover_ns < until_ns ? cover_ns : until_ns);
		from_ns = cover_ns;
	}
	rec(&o, from_ns, until_ns, 0);
	return o.n;
}

/* ---- signed pieces --------------------------------------------------------------- */

typedef struct sseg_out {
	hub_agg_seg *s;
	size_t n;
	int64_t levels[HUB_AGG_NRES]; /* ns, coarsest first */
	int64_t lo, hi;               /* buckets within [lo, hi) */
} sseg_out;

static void semit(sseg_out *o, int64_t res, int64_t a, int64_t b, int sign)
{
	hub_agg_seg *last = o->n ? &o->s[o->n - 1] : NULL;

	if (a >= b)
		return;
	if (res == 0 && last && last->res == 0 && last->sign == sign && last->until_ns == a) {
		last->until_ns = b;
		return;
	}
	if (o->n == HUB_AGG_MAX_SIGNED)
		return; /* not reached: at most 2^level calls per level (see the bound) */
	o->s[o->n].res = res;
	o->s[o->n].from_ns = a;
	o->s[o->n].until_ns = b;
	o->s[o->n].sign = sign;
	o->n++;
}

static void srec(sseg_out *o, int64_t a, int64_t b, size_t li, int sign)
{
	int64_t r, af, ac, bf, bc, p0, p1;

	if (a >= b)
		return;
	if (li == HUB_AGG_NRES) {
		semit(o, 0, a, b, sign);
		return;
	}
	r = o->levels[li];
	af = floor_to(a, r);
	ac = af < a ? af + r : af;
	bf = floor_to(b, r);
	bc = bf < b ? bf + r : bf;
	if (li + 1 == HUB_AGG_NRES) {
		/* the finest level: raw rows are only ever added, never
		 * subtracted (the raw and aggregate rows of one INSERT land in
		 * two tables, a query racing it may see one without the other;
		 * a piece that could go negative then would), so a complement
		 * (sign -1) is its whole buckets, minus, plus the raw rows of
		 * those buckets outside it */
		if (sign < 0 && af >= o->lo && bc <= o->hi) {
			semit(o, r / NS, af, bc, -1);
			semit(o, 0, af, a, 1);
			semit(o, 0, b, bc, 1);
		} else if (ac <= bf) {
			semit(o, 0, a, ac, sign);
			semit(o, r / NS, ac, bf, sign);
			semit(o, 0, bf, b, sign);
		} else {
			semit(o, 0, a, b, sign);
		}
		return;
	}
	if (ac > bf) {
		/* inside one bucket: the bucket minus both ends, or finer */
		if (af >= o->lo && bc <= o->hi && (a - af) + (bc - b) < b - a) {
			semit(o, r / NS, af, bc, sign);
			srec(o, af, a, li + 1, -sign);
			srec(o, b, bc, li + 1, -sign);
		} else {
			srec(o, a, b, li + 1, sign);
		}
		return;
	}
	p0 = ac;
	p1 = bf;
	if (a < ac && af >= o->lo && a - af < ac - a)
		p0 = af; /* the whole first bucket minus [af, a) */
	if (bf < b && bc <= o->hi && bc - b < b - bf)
		p1 = bc; /* the whole last bucket minus [b, bc) */
	if (p0 < a)
		srec(o, p0, a, li + 1, -sign);
	else
		srec(o, a, ac, li + 1, sign);
	semit(o, r / NS, p0, p1, sign);
	if (p1 > b)
		srec(o, b, p1, li + 1, -sign);
	else
		srec(o, bf, b, li + 1, sign);
}

size_t hub_agg_segments_signed(int64_t from_ns, int64_t until_ns, int64_t cover_ns, int64_t stable_ns,
			       hub_agg_seg *out)
{
	sseg_out o;
	int i;

	memset(&o, 0, sizeof(o));
	o.s = out;
	for (i = 0; i < HUB_AGG_NRES; i++)
		o.levels[i] = hub_agg_res_s[HUB_AGG_NRES - 1 - i] * NS;
	if (from_ns >= until_ns)
		return 0;
	if (cover_ns > from_ns) {
		semit(&o, 0, from_ns, cover_ns < until_ns ? cover_ns : until_ns, 1);
		from_ns = cover_ns;
	}
	o.lo = cover_ns;
	o.hi = until_ns > stable_ns ? until_ns : stable_ns;
	srec(&o, from_ns, until_ns, 0, 1);
	return o.n;
}

/* The aggregating SELECT of both aggregate tables; with_stack: stack_agg_v1's
 * (per stack, and each row also under labelset 0, the sum over every label
 * set), else series_agg_v1's (per label set only). */
static int agg_select(wt_buf *b, const char *src, const char *where, const char *res_list, int with_stack)
{
	wt_buf_printf(b,
		"SELECT date, arrayJoin(%s) AS res, toUInt32(intDiv(time_ns, res * 1000000000) * res) AS bucket,"
		" project, service, sample_type, unit, %s AS labelset_id,%s sum(value) AS value, retention_days"
		" FROM %s",
		res_list, with_stack ? "arrayJoin([toUInt64(0), " HUB_AGG_LABELSET_EXPR "])" : HUB_AGG_LABELSET_EXPR,
		with_stack ? " stack_id," : "", src);
	if (where)
		wt_buf_printf(b, " WHERE %s", where);
	return wt_buf_printf(b, " GROUP BY date, res, bucket, project, service, sample_type, unit, labelset_id,%s"
			     " retention_days", with_stack ? " stack_id," : "");
}

int hub_agg_select_sql(wt_buf *b, const char *src, const char *where, const char *res_list)
{
	return agg_select(b, src, where, res_list, 1);
}

int hub_series_select_sql(wt_buf *b, const char *src, const char *where, const char *res_list)
{
	return agg_select(b, src, where, res_list, 0);
}

/* The aggregate tables and how each is filled from raw rows */
static const struct {
	const char *table, *columns;
	int (*select)(wt_buf *b, const char *src, const char *where, const char *res_list);
} agg_tables[] = {
	{"stack_agg_v1", HUB_AGG_COLUMNS, hub_agg_select_sql},
	{"series_agg_v1", HUB_SERIES_COLUMNS, hub_series_select_sql},
};
#define NAGG_TABLES (sizeof(agg_tables) / sizeof(agg_tables[0]))

int hub_labelsets_select_sql(wt_buf *b, const char *src, const char *where)
{
	wt_buf_printf(b, "SELECT project, " HUB_AGG_LABELSET_EXPR " AS labelset_id, host, thread, container,"
		      " labels.key, labels.value FROM %s", src);
	if (where)
		wt_buf_printf(b, " WHERE %s", where);
	return wt_buf_puts(b, " GROUP BY project, labelset_id, host, thread, container, labels.key, labels.value");
}

/* ---- coverage state ------------------------------------------------------------- */

static _Atomic int64_t cached_day = -1;
static _Atomic int64_t cached_at_ns;

static int read_from_day(hub_ch *ch, int64_t *day, wt_err *err)
{
	wt_buf out = WT_BUF_INIT;
	int rc = hub_ch_query(ch, "SELECT value FROM agg_state_v1 FINAL WHERE key = 'agg_from_day'"
				  " ORDER BY updated_ns DESC LIMIT 1 FORMAT TabSeparated", &out, err);

	*day = 0; /* no row: a fresh schema, complete from the start */
	if (!rc && out.len && !wt_buf_putc(&out, '\0'))
		*day = strtoll((const char *)out.data, NULL, 10);
	wt_buf_free(&out);
	return rc;
}

int64_t hub_agg_from_day(struct hub_ctx *ctx, hub_ch *ch)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME), day;
	wt_err err = {0, ""};

	(void)ctx;
	day = atomic_load(&cached_day);
	if (day >= 0 && now - atomic_load(&cached_at_ns) < NS)
		return day;
	if (read_from_day(ch, &day, &err)) {
		wt_warn("msg=\"aggregate coverage unknown; raw path\" error=\"%s\"", err.msg);
		return INT32_MAX;
	}
	atomic_store(&cached_day, day);
	atomic_store(&cached_at_ns, now);
	return day;
}

static int write_from_day(hub_ch *ch, int64_t day, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	wt_buf_printf(&sql, "INSERT INTO agg_state_v1 (key, value, updated_ns) VALUES ('agg_from_day', %lld, %lld)",
		      (long long)day, (long long)wt_now_ns(CLOCK_REALTIME));
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	if (!rc) {
		atomic_store(&cached_day, day);
		atomic_store(&cached_at_ns, wt_now_ns(CLOCK_REALTIME));
	}
	return rc;
}

/* ---- deletion ------------------------------------------------------------------- */

/* One aggregate table's part of hub_agg_delete_before. */
static int delete_before_one(hub_ch *ch, size_t t, const char *project, const char *service, int64_t before_ns,
			     const char *id, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, where = WT_BUF_INIT;
	int64_t before_s = before_ns / NS;
	int i, rc;

	/* every bucket that starts before `before` (it holds deleted samples) */
	hub_sql_alter(&sql, ch, agg_tables[t].table);
	wt_buf_puts(&sql, " DELETE WHERE project = ");
	hub_sql_quote(&sql, project);
	if (service) {
		wt_buf_puts(&sql, " AND service = ");
		hub_sql_quote(&sql, service);
	}
	wt_buf_printf(&sql, " AND toInt64(bucket) * 1000000000 < %lld AND ", (long long)before_ns);
	hub_sql_quote(&sql, id);
	wt_buf_puts(&sql, " != ''");
	if ((rc = hub_ch_query_buf(ch, &sql, NULL, err)))
		goto out;
	/* the kept part of each straddling bucket, again from the raw rows (a
	 * mutation only touches parts that existed when it was queued) */
	for (i = 0; i < HUB_AGG_NRES; i++) {
		int64_t r = hub_agg_res_s[i], b0 = before_s / r * r;
		char list[32];

		if (b0 * NS >= before_ns)
			continue; /* aligned: nothing straddles */
		wt_buf_reset(&where);
		wt_buf_reset(&sql);
		wt_buf_puts(&where, "project = ");
		hub_sql_quote(&where, project);
		if (service) {
			wt_buf_puts(&where, " AND service = ");
			hub_sql_quote(&where, service);
		}
		wt_buf_printf(&where, " AND date >= toDate(toDateTime(%lld)) AND date <= toDate(toDateTime(%lld))"
			      " AND time_ns >= %lld AND time_ns < %lld", (long long)b0, (long long)(b0 + r - 1),
			      (long long)before_ns, (long long)((b0 + r) * NS));
		if (wt_buf_putc(&where, '\0')) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		snprintf(list, sizeof(list), "[%lld]", (long long)r);
		wt_buf_printf(&sql, "INSERT INTO %s (%s) ", agg_tables[t].table, agg_tables[t].columns);
		agg_tables[t].select(&sql, "profile_samples_v1", (const char *)where.data, list);
		if ((rc = hub_ch_query_buf(ch, &sql, NULL, err)))
			goto out;
	}
out:
	if (rc)
		wt_err_prefix(err, "%s", agg_tables[t].table);
	wt_buf_free(&sql);
	wt_buf_free(&where);
	return rc;
}

int hub_agg_delete_before(hub_ch *ch, const char *project, const char *service, int64_t before_ns,
			  const char *id, wt_err *err)
{
	int rc = 0;

	for (size_t t = 0; t < NAGG_TABLES && !rc; t++)
		rc = delete_before_one(ch, t, project, service, before_ns, id, err);
	return rc;
}

/* ---- backfill ------------------------------------------------------------------- */

static int64_t int_result(hub_ch *ch, wt_buf *sql, wt_err *err, int *rc)
{
	wt_buf out = WT_BUF_INIT;
	int64_t v = -1;

	*rc = hub_ch_query_buf(ch, sql, &out, err);
	if (!*rc && out.len && !wt_buf_putc(&out, '\0'))
		v = strtoll((const char *)out.data, NULL, 10);
	wt_buf_free(&out);
	return v;
}

/* Rebuild day d: drop its aggregate rows (every aggregate table), aggregate
 * its raw rows again. */
static int rebuild_day(hub_ch *ch, int64_t d, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	char where[64];
	int rc;

	snprintf(where, sizeof(where), "date = toDate(%lld)", (long long)d);
	for (size_t t = 0; t < NAGG_TABLES; t++) {
		wt_buf_reset(&sql);
		hub_sql_alter(&sql, ch, agg_tables[t].table);
		wt_buf_printf(&sql, " DELETE WHERE %s", where);
		if ((rc = hub_ch_query_buf(ch, &sql, NULL, err)))
			goto out;
		for (int i = 0; i < HUB_AGG_NRES; i++) {
			char list[32];
			snprintf(list, sizeof(list), "[%lld]", (long long)hub_agg_res_s[i]);
			wt_buf_reset(&sql);
			wt_buf_printf(&sql, "INSERT INTO %s (%s) ", agg_tables[t].table, agg_tables[t].columns);
			agg_tables[t].select(&sql, "profile_samples_v1", where, list);
			if ((rc = hub_ch_query_buf(ch, &sql, NULL, err)))
				goto out;
		}
	}
	wt_buf_reset(&sql);
	wt_buf_puts(&sql, "INSERT INTO label_sets_v1 (" HUB_LABELSETS_COLUMNS ") ");
	hub_labelsets_select_sql(&sql, "profile_samples_v1", where);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
out:
	wt_buf_free(&sql);
	return rc;
}

#define BACKFILL_BUDGET_NS (300 * NS)

int hub_agg_backfill_run(struct hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int64_t day, t0 = wt_now_ns(CLOCK_REALTIME), next;
	json_t *days = json_array();
	int rc = 0;

	(void)ctx;
	(void)now_s;
	if (!days)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = read_from_day(ch, &day, err)))
		goto out;
	while (day > 0 && wt_now_ns(CLOCK_REALTIME) - t0 < BACKFILL_BUDGET_NS) {
		/* the newest raw day not yet aggregated */
		wt_buf_reset(&sql);
		wt_buf_printf(&sql, "SELECT count() = 0 ? -1 : toInt64(toUInt16(max(date))) FROM profile_samples_v1"
			      " WHERE date < toDate(%lld) FORMAT TabSeparated", (long long)day);
		next = int_result(ch, &sql, err, &rc);
		if (rc)
			goto out;
		if (next < 0)
			next = 0; /* nothing older: complete */
		else if ((rc = rebuild_day(ch, next, err)))
			goto out;
		else
			json_array_append_new(days, json_integer(next));
		if ((rc = write_from_day(ch, next, err)))
			goto out;
		wt_info("msg=\"aggregates backfilled\" day=%lld", (long long)next);
		day = next;
	}
out:
	json_object_set_new(summary, "days_rebuilt", days);
	json_object_set_new(summary, "agg_from_day", json_integer(day));
	wt_buf_free(&sql);
	return rc;
}
