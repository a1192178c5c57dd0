/*
 * http_query.c — GET /v1/projects/{p}/profiles/{flamegraph|table|callgraph}.
 *
 * ClickHouse does the heavy part: it sums values by stack over the
 * selection (project, service, type, time range, label filters) and joins
 * the frame names; the hub builds the view (common/flame.c) from at most
 * one row per distinct stack, read as RowBinary into a bounded buffer.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "flame.h"
#include "http_server.h"
#include "hub.h"
#include "params.h"

#define DEFAULT_TABLE_LIMIT 10000
#define MAX_FRAMES 4096

static const char *const column_labels[] = {"host", "thread", "container", "span_id", "trace_id"};

static void date_str(int64_t ns, char out[11])
{
	time_t sec = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}

/* WHERE clause of the selection (type may be NULL: all types). */
static void build_where(wt_buf *w, const char *project, const hub_params *hp, const char *type,
			int64_t from, int64_t until)
{
	char d0[11], d1[11];
	size_t i, j;

	date_str(from, d0);
	date_str(until, d1);
	wt_buf_puts(w, " WHERE project = ");
	hub_sql_quote(w, project);
	if (hp->service) {
		wt_buf_puts(w, " AND service = ");
		hub_sql_quote(w, hp->service);
	}
	if (type) {
		wt_buf_puts(w, " AND sample_type = ");
		hub_sql_quote(w, type);
	}
	wt_buf_printf(w, " AND date >= '%s' AND date <= '%s' AND time_ns >= %lld AND time_ns < %lld",
		      d0, d1, (long long)from, (long long)until);
	for (i = 0; i < hp->nlabels; i++) {
		const char *k = hp->labels[i].key;
		for (j = 0; j < sizeof(column_labels) / sizeof(column_labels[0]); j++)
			if (!strcmp(k, column_labels[j]))
				break;
		if (j < sizeof(column_labels) / sizeof(column_labels[0])) {
			wt_buf_printf(w, " AND %s = ", column_labels[j]);
		} else {
			wt_buf_puts(w, " AND labels.value[indexOf(labels.key, ");
			hub_sql_quote(w, k);
			wt_buf_puts(w, ")] = ");
		}
		hub_sql_quote(w, hp->labels[i].value);
	}
}

static int first_field(void *ctx, char **f, size_t n)
{
	char *dst = ctx;
	if (n >= 1 && !dst[0])
		snprintf(dst, 128, "%s", f[0]);
	return 0;
}

/* SPEC: cpu when the selection has it, else the service's first type
 * (the type of the earliest sample; ties by name). "" when empty. */
static int default_type(hub_ch *ch, const char *project, const hub_params *hp, int64_t from,
			int64_t until, char out[128], wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	out[0] = '\0';
	wt_buf_puts(&sql, "SELECT sample_type FROM profile_samples_v1");
	build_where(&sql, project, hp, NULL, from, until);
	wt_buf_puts(&sql, " GROUP BY sample_type ORDER BY sample_type = 'cpu' DESC, min(time_ns), sample_type"
		    " LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, first_field, out);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

/* Fill f from the aggregated selection; *unit gets the unit (caller frees). */
static int load_flame(hub_ch *ch, const char *project, const hub_params *hp, const char *type,
		      int64_t from, int64_t until, wt_flame *f, char **unit, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT, names = WT_BUF_INIT;
	hub_rb_reader rd;
	size_t offs[MAX_FRAMES];
	const char *frames[MAX_FRAMES];
	int rc;

	*unit = NULL;
	wt_buf_puts(&sql, "SELECT s.stack_id, s.v, st.frames, s.unit FROM (SELECT stack_id, sum(value) AS v,"
		    " any(unit) AS unit FROM profile_samples_v1");
	build_where(&sql, project, hp, type, from, until);
	/* No GROUP BY on the right side: ANY JOIN already takes one row per
	 * stack_id among not-yet-merged duplicates, and grouping arrays costs
	 * ~8x more than reading them (bench/hub_query.sh). */
	wt_buf_puts(&sql, " GROUP BY stack_id HAVING v != 0) AS s ANY LEFT JOIN (SELECT stack_id, frames"
		    " FROM profile_stacks_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, ") AS st USING stack_id FORMAT RowBinary");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_rb_reader_init(&rd, res.data, res.len);
	while (!hub_rb_eof(&rd)) {
		uint64_t sid, nframes, i;
		int64_t v;
		const char *s, *u;
		size_t sl, ul;

		if (hub_rb_read_u64(&rd, &sid) || hub_rb_read_i64(&rd, &v) ||
		    hub_rb_read_varuint(&rd, &nframes))
			goto bad;
		wt_buf_reset(&names);
		for (i = 0; i < nframes; i++) {
			if (hub_rb_read_str(&rd, &s, &sl))
				goto bad;
			if (i < MAX_FRAMES) {
				offs[i] = names.len;
				wt_buf_append(&names, s, sl);
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
		for (i = 0; i < nframes; i++)
			frames[i] = (const char *)names.data + offs[i];
		if (nframes == 0) {
			/* stack row missing (should not happen): keep the value visible */
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
	wt_buf_free(&sql);
	wt_buf_free(&res);
	wt_buf_free(&names);
	return rc;
}

void hub_handle_query(hub_req *r, const char *project, const char *view)
{
	hub_ctx *ctx = r->ctx;
	hub_principal who;
	struct evkeyvalq q;
	hub_params hp;
	wt_err err = {0, ""};
	int64_t t0 = hub_now_ns(), from, until;
	long max_nodes, limit;
	char type[128];
	char *unit = NULL;
	wt_flame *f = NULL;
	json_t *out = NULL;

	q.tqh_first = NULL;
	q.tqh_last = &q.tqh_first;
	if (hub_req_auth(r, &who))
		goto done;
	if (!hub_project_name_valid(project)) {
		wt_err_set(&err, WT_ENOTFOUND, "project: \"%.64s\" is not a valid project name", project);
		goto fail;
	}
	if (hub_auth_allows(&who, project, HUB_ROLE_READ, &err))
		goto fail;
	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	if (hub_params_parse(&q, &hp, &err) ||
	    hub_param_uint(&q, "max_nodes", (long)ctx->cfg.max_nodes, 1, 1000000, &max_nodes, &err) ||
	    hub_param_uint(&q, "limit", DEFAULT_TABLE_LIMIT, 1, 1000000, &limit, &err))
		goto fail;
	until = hp.has_until ? hp.until_ns : t0;
	from = hp.has_from ? hp.from_ns : until - (int64_t)ctx->cfg.default_range_s * 1000000000LL;
	if (from < 0)
		from = 0;
	if (hub_store_check(&ctx->store, &err))
		goto fail;
	if (hp.type)
		snprintf(type, sizeof(type), "%s", hp.type);
	else if (default_type(r->ch, project, &hp, from, until, type, &err))
		goto fail;
	f = wt_flame_new();
	if (!f) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (type[0] && load_flame(r->ch, project, &hp, type, from, until, f, &unit, &err))
		goto fail;
	if (!strcmp(view, "flamegraph"))
		out = wt_flame_tree_json(f, unit ? unit : "", (size_t)max_nodes);
	else if (!strcmp(view, "table"))
		out = wt_flame_table_json(f, unit ? unit : "", (size_t)limit);
	else
		out = wt_flame_callgraph_json(f, unit ? unit : "", (size_t)max_nodes);
	if (!out) {
		wt_err_set(&err, WT_ENOMEM, "out of memory rendering the view");
		goto fail;
	}
	json_object_set_new(out, "type", json_string(type[0] ? type : (hp.type ? hp.type : "cpu")));
	if (hp.service)
		json_object_set_new(out, "service", json_string(hp.service));
	json_object_set_new(out, "from", json_integer(from));
	json_object_set_new(out, "until", json_integer(until));
	atomic_fetch_add(&ctx->metrics.queries_total, 1);
	atomic_fetch_add(&ctx->metrics.query_ns_total, (long)(hub_now_ns() - t0));
	hub_req_json(r, 200, out);
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	free(unit);
	wt_flame_free(f);
	evhttp_clear_headers(&q);
}
