/*
 * retention.c — the retention job (docs/operations.md "## Retention,
 * archive and deletion").
 *
 * A row of day D (samples: `date`; rollups: toDate(minute)) expires once
 * D <= today - R, R = the project's retention_days (today = now_s in UTC
 * days), i.e. it is kept for R whole days after its own.
 *  - ClickHouse without TTL (18.16): whole-day partitions in which every
 *    project's rows have expired are dropped (ALTER TABLE … DROP PARTITION);
 *    expired rows of projects sharing a partition with live rows go by
 *    ALTER TABLE … DELETE WHERE project = … AND day <= cutoff.
 *  - With TTL (>= 19.6) the tables' TTL does the project part.
 *  - Per-type retention (profile_type_retention_v1), on every version: a
 *    row lowers R for one (project, sample_type); a value >= R changes
 *    nothing (it never raises retention). Applied by ALTER … DELETE, only
 *    when matching rows exist (so a daily run does not queue empty
 *    mutations).
 *  - Raw originals older than R days are removed from the object store
 *    (unless another remaining upload shares the same bytes), then their
 *    raw_objects_v1 rows; per-type retention does not apply to originals
 *    (one original holds every type).
 *  - Object deletes that failed earlier are retried.
 * Audit rows (audit_events_v1) are never touched.
 */
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "deletion.h"
#include "hub.h"
#include "log.h"
#include "schema.h"
#include "worker.h"

#define MAX_PROJECTS 10000
#define MAX_TYPE_RULES 10000
#define MAX_PARTS 100000
#define NTABS 5 /* entries of tabs[] below */

typedef struct proj {
	char name[HUB_PROJECT_MAX + 1];
	long days;
	int expired_somewhere[NTABS]; /* per table: has expired rows in a kept partition */
} proj;

typedef struct tret {
	char project[HUB_PROJECT_MAX + 1];
	char type[128];
	long days;
} tret;

typedef struct state {
	proj *p;
	size_t np;
	tret *t;
	size_t nt;
	long today;
} state;

static const struct {
	const char *table;
	const char *day; /* expression giving the row's day */
	const char *part; /* partition expression */
	int ttl;          /* has a TTL where the server supports it */
} tabs[NTABS] = {
	{"profile_samples_v1", "date", "toYYYYMMDD(date)", 1},
	{"function_rollup_v1", "toDate(minute)", "toYYYYMMDD(minute)", 1},
	/* every resolution of the stack aggregates (stackagg.h): a bucket lies
	 * within its row's day, so it expires with that day's raw rows */
	{"stack_agg_v1", "date", "toYYYYMMDD(date)", 1},
	{"series_agg_v1", "date", "toYYYYMMDD(date)", 1},
	/* recording-rule values (recording_rules.c) have no TTL column */
	{"rule_values_v1", "date", "toYYYYMMDD(date)", 0},
};

static int proj_row(void *arg, char **f, size_t n)
{
	state *s = arg;

	if (n < 2 || s->np == MAX_PROJECTS || strlen(f[0]) > HUB_PROJECT_MAX)
		return 0;
	snprintf(s->p[s->np].name, sizeof(s->p[0].name), "%s", f[0]);
	s->p[s->np].days = strtol(f[1], NULL, 10);
	if (s->p[s->np].days <= 0)
		s->p[s->np].days = 30;
	s->np++;
	return 0;
}

static int tret_row(void *arg, char **f, size_t n)
{
	state *s = arg;

	if (n < 3 || s->nt == MAX_TYPE_RULES || strlen(f[0]) > HUB_PROJECT_MAX)
		return 0;
	snprintf(s->t[s->nt].project, sizeof(s->t[0].project), "%s", f[0]);
	snprintf(s->t[s->nt].type, sizeof(s->t[0].type), "%s", f[1]);
	s->t[s->nt].days = strtol(f[2], NULL, 10);
	s->nt++;
	return 0;
}

static proj *find_proj(state *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->np; i++)
		if (!strcmp(s->p[i].name, name))
			return &s->p[i];
	return NULL;
}

static int run_sql(hub_ch *ch, wt_buf *sql, json_t *log, wt_err *err)
{
	int rc = hub_ch_query_buf(ch, sql, NULL, err);

	if (!rc && log && sql->data)
		json_array_append_new(log, json_string((const char *)sql->data));
	return rc;
}

static long count_of(hub_ch *ch, wt_buf *sql, wt_err *err, int *rc)
{
	wt_buf out = WT_BUF_INIT;
	long n = 0;

	*rc = hub_ch_query_buf(ch, sql, &out, err);
	if (!*rc && out.len && wt_buf_putc(&out, '\0') == 0)
		n = strtol((const char *)out.data, NULL, 10);
	wt_buf_free(&out);
	return n;
}

/* Partition pass of one table (no-TTL servers). */
typedef struct part_ctx {
	state *s;
	int tab;
	/* partitions seen: id, day, droppable */
	struct { char id[16]; int droppable; } *parts;
	size_t nparts;
} part_ctx;

static int part_row(void *arg, char **f, size_t n)
{
	part_ctx *pc = arg;
	proj *p;
	long day;
	size_t i;
	int expired;

	if (n < 3)
		return 0;
	day = strtol(f[2], NULL, 10);
	p = find_proj(pc->s, f[1]);
	expired = p && day <= pc->s->today - p->days;
	if (expired)
		p->expired_somewhere[pc->tab] = 1;
	for (i = 0; i < pc->nparts; i++)
		if (!strcmp(pc->parts[i].id, f[0]))
			break;
	if (i == pc->nparts) {
		if (pc->nparts == MAX_PARTS)
			return 0;
		snprintf(pc->parts[i].id, sizeof(pc->parts[i].id), "%s", f[0]);
		pc->parts[i].droppable = 1;
		pc->nparts++;
	}
	if (!expired)
		pc->parts[i].droppable = 0;
	return 0;
}

static int table_pass(hub_ch *ch, state *s, int tab, json_t *dropped, json_t *mutations, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	part_ctx pc = {s, tab, NULL, 0};
	long minr = -1;
	size_t i;
	int rc = 0;

	for (i = 0; i < s->np; i++)
		if (minr < 0 || s->p[i].days < minr)
			minr = s->p[i].days;
	if (minr < 0)
		return 0;
	pc.parts = calloc(MAX_PARTS, sizeof(*pc.parts));
	if (!pc.parts)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	/* only days that can have expired for some project; WHERE on the day
	 * keeps whole partitions (one day each) */
	wt_buf_printf(&sql, "SELECT %s AS part, project, toUInt16(max(%s)) FROM %s WHERE %s <= toDate(%ld)"
		      " GROUP BY part, project FORMAT TabSeparated", tabs[tab].part, tabs[tab].day, tabs[tab].table,
		      tabs[tab].day, s->today - minr);
	if ((rc = hub_ch_query_buf(ch, &sql, &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 3, part_row, &pc);
	for (i = 0; i < pc.nparts; i++) {
		if (!pc.parts[i].droppable)
			continue;
		wt_buf_reset(&sql);
		hub_sql_alter(&sql, ch, tabs[tab].table);
		wt_buf_printf(&sql, " DROP PARTITION %s", pc.parts[i].id);
		if ((rc = run_sql(ch, &sql, NULL, err)))
			goto out;
		json_array_append_new(dropped, json_sprintf("%s:%s", tabs[tab].table, pc.parts[i].id));
	}
	for (i = 0; i < s->np; i++) {
		proj *p = &s->p[i];
		int crc;
		if (!p->expired_somewhere[tab])
			continue;
		/* rows left after the drops? (a dropped partition held all of them) */
		wt_buf_reset(&sql);
		wt_buf_printf(&sql, "SELECT count() FROM %s WHERE project = ", tabs[tab].table);
		hub_sql_quote(&sql, p->name);
		wt_buf_printf(&sql, " AND %s <= toDate(%ld) FORMAT TabSeparated", tabs[tab].day, s->today - p->days);
		if (count_of(ch, &sql, err, &crc) <= 0) {
			if ((rc = crc))
				goto out;
			continue;
		}
		wt_buf_reset(&sql);
		hub_sql_alter(&sql, ch, tabs[tab].table);
		wt_buf_puts(&sql, " DELETE WHERE project = ");
		hub_sql_quote(&sql, p->name);
		wt_buf_printf(&sql, " AND %s <= toDate(%ld)", tabs[tab].day, s->today - p->days);
		if ((rc = run_sql(ch, &sql, mutations, err)))
			goto out;
	}
out:
	free(pc.parts);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int type_pass(hub_ch *ch, state *s, json_t *mutations, json_t *ignored, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	size_t i;
	int tab, rc = 0;

	for (i = 0; i < s->nt; i++) {
		tret *t = &s->t[i];
		proj *p = find_proj(s, t->project);
		if (!p)
			continue;
		if (t->days >= p->days) {
			/* never raises the project's retention */
			json_array_append_new(ignored, json_sprintf("%s/%s: %ld >= project %ld", t->project, t->type,
								    t->days, p->days));
			continue;
		}
		for (tab = 0; tab < NTABS; tab++) {
			int crc;
			wt_buf_reset(&sql);
			wt_buf_printf(&sql, "SELECT count() FROM %s WHERE project = ", tabs[tab].table);
			hub_sql_quote(&sql, t->project);
			wt_buf_puts(&sql, " AND sample_type = ");
			hub_sql_quote(&sql, t->type);
			wt_buf_printf(&sql, " AND %s <= toDate(%ld) FORMAT TabSeparated", tabs[tab].day, s->today - t->days);
			if (count_of(ch, &sql, err, &crc) <= 0) {
				if ((rc = crc))
					goto out;
				continue;
			}
			wt_buf_reset(&sql);
			hub_sql_alter(&sql, ch, tabs[tab].table);
		wt_buf_puts(&sql, " DELETE WHERE project = ");
			hub_sql_quote(&sql, t->project);
			wt_buf_puts(&sql, " AND sample_type = ");
			hub_sql_quote(&sql, t->type);
			wt_buf_printf(&sql, " AND %s <= toDate(%ld)", tabs[tab].day, s->today - t->days);
			if ((rc = run_sql(ch, &sql, mutations, err)))
				goto out;
		}
	}
out:
	wt_buf_free(&sql);
	return rc;
}

/* Originals of every project older than its retention. */
static int raw_pass(hub_ctx *ctx, hub_ch *ch, state *s, json_t *summary, json_t *mutations, wt_err *err)
{
	wt_buf cond = WT_BUF_INIT, sql = WT_BUF_INIT;
	hub_release_stats st = {0, 0, 0};
	size_t i;
	int rc = 0, crc;

	if (!s->np)
		return 0;
	wt_buf_puts(&cond, "(");
	for (i = 0; i < s->np; i++) {
		wt_buf_puts(&cond, i ? " OR (project = " : "(project = ");
		hub_sql_quote(&cond, s->p[i].name);
		wt_buf_printf(&cond, " AND date <= toDate(%ld))", s->today - s->p[i].days);
	}
	wt_buf_puts(&cond, ")");
	if (wt_buf_putc(&cond, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	wt_buf_printf(&sql, "SELECT count() FROM raw_objects_v1 WHERE %s FORMAT TabSeparated", (const char *)cond.data);
	if (count_of(ch, &sql, err, &crc) <= 0) {
		rc = crc;
		goto out;
	}
	if ((rc = hub_objects_release(ctx, ch, (const char *)cond.data, NULL, "retention", &st, err)))
		goto out;
	wt_buf_reset(&sql);
	hub_sql_alter(&sql, ch, "raw_objects_v1");
	wt_buf_printf(&sql, " DELETE WHERE %s", (const char *)cond.data);
	if ((rc = run_sql(ch, &sql, mutations, err)))
		goto out;
out:
	json_object_set_new(summary, "raw_originals", json_pack("{s:I, s:I, s:I}", "deleted", (json_int_t)st.deleted,
								"kept_shared", (json_int_t)st.kept,
								"failed", (json_int_t)st.failed));
	wt_buf_free(&cond);
	wt_buf_free(&sql);
	return rc;
}

int hub_retention_run(hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err)
{
	wt_buf out = WT_BUF_INIT;
	state s = {NULL, 0, NULL, 0, (long)(now_s / 86400)};
	hub_ch_features f;
	json_t *dropped = json_array(), *mutations = json_array(), *ignored = json_array();
	int rc, tab;

	hub_ch_health_features(&ctx->store, &f);
	s.p = calloc(MAX_PROJECTS, sizeof(*s.p));
	s.t = calloc(MAX_TYPE_RULES, sizeof(*s.t));
	if (!s.p || !s.t || !dropped || !mutations || !ignored) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hub_ch_query(ch, "SELECT name, retention_days FROM projects_v1 FINAL FORMAT TabSeparated", &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 2, proj_row, &s);
	wt_buf_reset(&out);
	if ((rc = hub_ch_query(ch, "SELECT project, sample_type, retention_days FROM profile_type_retention_v1 FINAL"
				   " FORMAT TabSeparated", &out, err)))
		goto out;
	hub_tsv_each((char *)out.data, out.len, 3, tret_row, &s);

	json_object_set_new(summary, "path", json_string(f.ttl ? "ttl" : "worker"));
	json_object_set_new(summary, "today_day", json_integer(s.today));
	for (tab = 0; tab < NTABS; tab++)
		if ((!f.ttl || !tabs[tab].ttl) && (rc = table_pass(ch, &s, tab, dropped, mutations, err)))
			goto out;
	if ((rc = type_pass(ch, &s, mutations, ignored, err)) ||
	    (rc = raw_pass(ctx, ch, &s, summary, mutations, err)) ||
	    (rc = hub_deletion_retry(ctx, ch, summary, err)))
		goto out;
	if (json_array_size(dropped) || json_array_size(mutations))
		wt_info("msg=\"retention applied\" partitions_dropped=%zu mutations=%zu",
			json_array_size(dropped), json_array_size(mutations));
out:
	json_object_set_new(summary, "partitions_dropped", dropped);
	json_object_set_new(summary, "mutations", mutations);
	json_object_set_new(summary, "type_rules_ignored", ignored);
	free(s.p);
	free(s.t);
	wt_buf_free(&out);
	return rc;
}
