/*
 * http_issues.c — regression issues (regress.h):
 *   GET   /v1/projects/{p}/issues[?state=&service=&limit=]   (role read)
 *   PATCH /v1/projects/{p}/issues/{id}  {"state":"acknowledged"|"muted"|"open"}  (role admin)
 *   POST  /v1/admin/analysis/run[?project=&at=]  run the detector now, synchronously (admin)
 *
 * An issue's state is "resolved" when the detector resolved it, else the
 * user's state from issue_states_v1 (acknowledged, muted) or "open". User
 * state changes are audited (audit_events_v1, action issue.<state>).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "audit.h"
#include "ch_format.h"
#include "clock.h"
#include "http_server.h"
#include "json_str.h"
#include "params.h"
#include "regress.h"

#define DEFAULT_LIMIT 1000
#define MAX_PATCH_BODY 4096

typedef struct list_ctx {
	json_t *arr;
	const char *want;  /* effective state filter, "all" or "active" */
	long limit;
	int oom;
} list_ctx;

static json_t *opt_ns(const char *s)
{
	long long v = strtoll(s, NULL, 10);
	return v ? json_integer(v) : json_null();
}

/* fields (see SELECT in list_issues) */
static int issue_row(void *ctx, char **f, size_t n)
{
	list_ctx *x = ctx;
	const char *state, *user;
	json_t *o, *us;
	double bsh, rsh;

	if (n < 23)
		return 0;
	user = f[20];
	if (!strcmp(f[5], "resolved"))
		state = "resolved";
	else if (!strcmp(user, "acknowledged") || !strcmp(user, "muted"))
		state = user;
	else
		state = "open";
	if (strcmp(x->want, "all") && !(strcmp(x->want, "active") ? !strcmp(x->want, state)
							      : strcmp(state, "resolved") != 0))
		return 0;
	if ((long)json_array_size(x->arr) >= x->limit)
		return 0;
	bsh = strtod(f[12], NULL);
	rsh = strtod(f[13], NULL);
	us = user[0] ? json_pack("{s:s, s:s, s:I}", "state", user, "by", f[21],
				 "at", (json_int_t)strtoll(f[22], NULL, 10))
		     : json_null();
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:s, s:I, s:I, s:o,"
		      " s:{s:I, s:I, s:o, s:I, s:I}, s:{s:I, s:I, s:o, s:I, s:I}, s:o, s:o, s:o, s:o}",
		"id", f[0], "service", f[1], "type", f[2], "unit", f[3], "function", wt_json_string(f[4]), "state", state,
		"detection_state", f[5], "opened", (json_int_t)strtoll(f[6], NULL, 10),
		"last_seen", (json_int_t)strtoll(f[7], NULL, 10), "resolved", opt_ns(f[8]),
		"baseline", "from", (json_int_t)strtoll(f[9], NULL, 10), "until", (json_int_t)strtoll(f[10], NULL, 10),
		"share", hub_json_num(bsh), "self", (json_int_t)strtoll(f[14], NULL, 10),
		"total", (json_int_t)strtoll(f[16], NULL, 10),
		"recent", "from", (json_int_t)strtoll(f[10], NULL, 10), "until", (json_int_t)strtoll(f[11], NULL, 10),
		"share", hub_json_num(rsh), "self", (json_int_t)strtoll(f[15], NULL, 10),
		"total", (json_int_t)strtoll(f[17], NULL, 10),
		"change", hub_json_num(rsh - bsh), "z", hub_json_num(strtod(f[18], NULL)),
		"p_value", hub_json_num(strtod(f[19], NULL)), "user_state", us ? us : json_null());
	if (!o || json_array_append_new(x->arr, o)) {
		x->oom = 1;
		return 1;
	}
	return 0;
}

static int list_issues(hub_ch *ch, const char *project, const char *id, const char *service,
		       list_ctx *x, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "SELECT issue_id, service, sample_type, unit, function, state, opened_ns, last_seen_ns,"
		    " resolved_ns, baseline_from_ns, recent_from_ns, window_end_ns, baseline_share, recent_share,"
		    " baseline_self, recent_self, baseline_total, recent_total, z, p_value, user_state, actor,"
		    " state_ns FROM (SELECT * FROM issues_v1 FINAL WHERE project = ");
	hub_sql_quote(&sql, project);
	if (id) {
		wt_buf_puts(&sql, " AND issue_id = ");
		hub_sql_quote(&sql, id);
	}
	if (service) {
		wt_buf_puts(&sql, " AND service = ");
		hub_sql_quote(&sql, service);
	}
	wt_buf_puts(&sql, ") ANY LEFT JOIN (SELECT issue_id, user_state, actor, updated_ns AS state_ns"
		    " FROM issue_states_v1 FINAL WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, ") USING issue_id ORDER BY state = 'open' DESC, window_end_ns DESC, z DESC, issue_id"
		    " FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc) {
		hub_tsv_each((char *)out.data, out.len, 23, issue_row, x);
		if (x->oom)
			rc = wt_err_set(err, WT_ENOMEM, "out of memory listing issues");
	}
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

int hub_handle_issues(hub_req *r, wt_err *err)
{
	list_ctx x = {NULL, "active", DEFAULT_LIMIT, 0};
	const char *state = evhttp_find_header(&r->q, "state"), *service = evhttp_find_header(&r->q, "service");
	int rc;

	if (state) {
		static const char *const ok[] = {"open", "acknowledged", "muted", "resolved", "active", "all"};
		size_t i;
		for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			if (!strcmp(state, ok[i]))
				break;
		if (i == sizeof(ok) / sizeof(ok[0]))
			return wt_err_set(err, WT_EINVAL, "state: expected open, acknowledged, muted, resolved, active or all");
		x.want = state;
	}
	if (service && !hub_service_valid(service))
		return wt_err_set(err, WT_EINVAL, "service: must be 1-%d printable bytes", HUB_SERVICE_MAX);
	if ((rc = hub_param_uint(&r->q, "limit", DEFAULT_LIMIT, 1, 100000, &x.limit, err)) ||
	    (rc = hub_ch_health_check(&r->ctx->store, err)))
		return rc;
	if (!(x.arr = hub_req_own_json(r, json_array())))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = list_issues(r->ch, r->project, NULL, service, &x, err)))
		return rc;
	hub_req_json(r, 200, json_pack("{s:s, s:s, s:O}", "project", r->project, "state", x.want, "issues", x.arr));
	return 0;
}

static int id_valid(const char *id)
{
	size_t i;

	for (i = 0; id[i]; i++)
		if (!isxdigit((unsigned char)id[i]) || isupper((unsigned char)id[i]))
			return 0;
	return i == 32;
}

int hub_handle_issue_patch(hub_req *r, wt_err *err)
{
	const char *project = r->project, *id = r->id, *state;
	list_ctx x = {NULL, "all", 1, 0};
	uint8_t *body = NULL;
	size_t len = 0;
	json_t *js;
	wt_buf *sql = wt_arena_buf(&r->arena);
	char action[64];
	int rc;

	if (!sql)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if (!id_valid(id))
		return wt_err_set(err, WT_ENOTFOUND, "issue: \"%.40s\" is not an issue id (32 hex characters)", id);
	rc = wt_http_body(r->req, MAX_PATCH_BODY, &body, &len, err);
	if (body && wt_arena_defer(&r->arena, free, body) && !rc)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	if (rc)
		return rc;
	js = hub_req_own_json(r, json_loadb((const char *)body, len, 0, NULL));
	state = js ? json_string_value(json_object_get(js, "state")) : NULL;
	if (!state || (strcmp(state, "acknowledged") && strcmp(state, "muted") && strcmp(state, "open")))
		return wt_err_set(err, WT_EINVAL, "state: body must be JSON {\"state\": \"acknowledged\"|\"muted\"|\"open\"}");
	if ((rc = hub_ch_health_check(&r->ctx->store, err)))
		return rc;
	if (!(x.arr = hub_req_own_json(r, json_array())))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = list_issues(r->ch, project, id, NULL, &x, err)))
		return rc;
	if (!json_array_size(x.arr))
		return wt_err_set(err, WT_ENOTFOUND, "issue: no issue %s in project %s", id, project);
	/* audit first: the record says who changed what even if the write fails */
	snprintf(action, sizeof(action), "issue.%s", !strcmp(state, "open") ? "reopen" : state);
	if ((rc = hub_audit_record(r->ch, project, r->who.token_id, action, id, NULL, err)))
		return rc;
	wt_buf_printf(sql, "INSERT INTO issue_states_v1 (project, issue_id, user_state, actor, updated_ns)"
		      " VALUES (");
	hub_sql_quote(sql, project);
	wt_buf_putc(sql, ',');
	hub_sql_quote(sql, id);
	wt_buf_putc(sql, ',');
	hub_sql_quote(sql, state);
	wt_buf_putc(sql, ',');
	hub_sql_quote(sql, r->who.token_id);
	wt_buf_printf(sql, ",%lld)", (long long)wt_now_ns(CLOCK_REALTIME));
	if ((rc = hub_ch_query_buf(r->ch, sql, NULL, err)))
		return rc;
	json_array_clear(x.arr);
	if ((rc = list_issues(r->ch, project, id, NULL, &x, err)))
		return rc;
	hub_req_json(r, 200, json_incref(json_array_get(x.arr, 0)));
	return 0;
}

int hub_handle_analysis_run(hub_req *r, wt_err *err)
{
	const hub_principal *who = &r->who;
	hub_regress_result res;
	const char *project = evhttp_find_header(&r->q, "project"), *at_s = evhttp_find_header(&r->q, "at");
	int64_t at = wt_now_ns(CLOCK_REALTIME);
	int rc;

	if (project && !hub_project_name_valid(project))
		return wt_err_set(err, WT_EINVAL, "project: \"%.64s\" is not a valid project name", project);
	if (!who->super && !project)
		return wt_err_set(err, WT_EFORBIDDEN, "only the hub admin token may run the detector for every project;"
				  " a project admin token must name project=");
	if (!who->super && (rc = hub_auth_allows(who, project, HUB_ROLE_ADMIN, err)))
		return rc;
	if (at_s && (wt_http_parse_time(at_s, &at) || at <= 0))
		return wt_err_set(err, WT_EINVAL, "at: \"%.64s\" is neither unix seconds nor RFC 3339", at_s);
	if (!r->ctx->regress)
		return wt_err_set(err, WT_EUNAVAIL, "the regression detector is not running");
	if ((rc = hub_ch_health_check(&r->ctx->store, err)) ||
	    (rc = hub_regress_run(r->ctx->regress, r->ch, at, project, &res, err)))
		return rc;
	hub_req_json(r, 200, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
		"window_end", (json_int_t)res.window_end_ns, "recent_from", (json_int_t)res.recent_from_ns,
		"baseline_from", (json_int_t)res.baseline_from_ns, "groups", (json_int_t)res.groups,
		"functions", (json_int_t)res.functions, "opened", (json_int_t)res.opened,
		"updated", (json_int_t)res.updated, "resolved", (json_int_t)res.resolved,
		"symbolized", (json_int_t)res.symbolized));
	return 0;
}
