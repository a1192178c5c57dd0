/*
 * http_delete.c — audited deletion (docs/api.md "### Deletion"):
 *   DELETE /v1/projects/{p}/profiles?before=<RFC 3339>[&service=S]
 *       role DeleteTelemetry (or the hub admin token) → 202 {"deletion_id"}
 *   GET /v1/projects/{p}/deletions/{id}   progress (DeleteTelemetry or admin)
 *
 * Order of a deletion, each step only after the previous one succeeded:
 *  1. the audit event (action "profiles.delete", with the deletion_id);
 *  2. ALTER TABLE … DELETE on profile_samples_v1 (time_ns < before),
 *     function_rollup_v1 and rule_values_v1 (whole minutes ending at or
 *     before `before`), stack_agg_v1 and series_agg_v1 (every resolution's buckets
 *     starting before `before`, the kept part of a straddling bucket
 *     aggregated again from the raw rows: stackagg.c);
 *  3. the raw originals those uploads alone reference are deleted from the
 *     object store (failures recorded for the daily retention job);
 *  4. ALTER TABLE raw_objects_v1 DELETE for the matching index rows.
 * Each mutation's condition carries the deletion id as an always-true term
 * ('id' != '') so system.mutations can be matched to it for progress.
 * Nothing reaches backups; audit rows are never deleted.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "ch_format.h"
#include "deletion.h"
#include "http_server.h"
#include "hub.h"
#include "ch_rows.h"
#include "log.h"
#include "params.h"
#include "rng.h"
#include "schema.h"
#include "sha.h"
#include "stackagg.h"

static int mutate(hub_ch *ch, const char *table, const char *cond, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	hub_sql_alter(&sql, ch, table);
	wt_buf_printf(&sql, " DELETE WHERE %s", cond);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	if (rc)
		wt_err_prefix(err, "%s", table);
	wt_buf_free(&sql);
	return rc;
}

/* project = 'p' AND <time> AND ['service' =] AND 'id' != '' */
static int build_cond(wt_buf *b, const char *project, const char *service, const char *time_cond,
		      const char *id)
{
	wt_buf_reset(b);
	wt_buf_puts(b, "project = ");
	hub_sql_quote(b, project);
	wt_buf_printf(b, " AND %s", time_cond);
	if (service) {
		wt_buf_puts(b, " AND service = ");
		hub_sql_quote(b, service);
	}
	wt_buf_puts(b, " AND ");
	hub_sql_quote(b, id);
	wt_buf_puts(b, " != ''");
	return wt_buf_putc(b, '\0');
}

static void delete_profiles(hub_req *r, const char *project, const hub_principal *who)
{
	wt_err err = {0, ""};
	struct evkeyvalq q;
	const char *before_s, *service;
	int64_t before_ns;
	char id[33], tc[96], detail[600];
	uint8_t rnd[16];
	wt_buf cond = WT_BUF_INIT;
	hub_release_stats st = {0, 0, 0};
	int days;

	q.tqh_first = NULL;
	q.tqh_last = &q.tqh_first;
	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	before_s = wt_http_param(&q, "before");
	service = wt_http_param(&q, "service");
	if (!before_s || wt_http_parse_time(before_s, &before_ns) || before_ns <= 0) {
		wt_err_set(&err, WT_EINVAL, "before: required, an RFC 3339 time or unix seconds");
		goto fail;
	}
	if (service && !hub_service_valid(service)) {
		wt_err_set(&err, WT_EINVAL, "service: not a valid service name");
		goto fail;
	}
	if (hub_ch_health_check(&r->ctx->store, &err) || hub_project_retention(r->ch, project, &days, &err))
		goto fail;
	if (wt_random_bytes(rnd, sizeof(rnd))) {
		wt_err_set(&err, WT_EIO, "getrandom failed");
		goto fail;
	}
	hub_hex(rnd, sizeof(rnd), id);

	/* 1. audit first: without it, nothing is deleted */
	snprintf(detail, sizeof(detail), "before=%s before_ns=%lld service=%s", before_s, (long long)before_ns,
		 service ? service : "*");
	if (hub_audit_record(r->ch, project, who->token_id, "profiles.delete", detail, id, &err)) {
		wt_err_prefix(&err, "audit event not recorded, nothing deleted");
		goto fail;
	}
	/* 2. rows */
	snprintf(tc, sizeof(tc), "time_ns < %lld", (long long)before_ns);
	if (build_cond(&cond, project, service, tc, id) || mutate(r->ch, "profile_samples_v1", (char *)cond.data, &err))
		goto partial;
	snprintf(tc, sizeof(tc), "toUInt32(minute) + 60 <= %lld", (long long)(before_ns / 1000000000LL));
	if (build_cond(&cond, project, service, tc, id) || mutate(r->ch, "function_rollup_v1", (char *)cond.data, &err))
		goto partial;
	if (hub_agg_delete_before(r->ch, project, service, before_ns, id, &err))
		goto partial;
	/* recording-rule values (recording_rules.c), same minutes */
	if (build_cond(&cond, project, service, tc, id) || mutate(r->ch, "rule_values_v1", (char *)cond.data, &err))
		goto partial;
	/* 3. originals, then 4. their index rows */
	snprintf(tc, sizeof(tc), "time_ns < %lld", (long long)before_ns);
	if (build_cond(&cond, project, service, tc, id) ||
	    hub_objects_release(r->ctx, r->ch, (char *)cond.data, project, id, &st, &err) ||
	    mutate(r->ch, "raw_objects_v1", (char *)cond.data, &err))
		goto partial;
	wt_info("msg=\"deletion queued\" project=%s deletion_id=%s by=%s before_ns=%lld service=%s objects_deleted=%zu"
		" objects_failed=%zu", project, id, who->token_id, (long long)before_ns, service ? service : "*",
		st.deleted, st.failed);
	hub_req_json(r, 202, json_pack("{s:s, s:s, s:s, s:I, s:{s:I, s:I, s:I}}", "deletion_id", id,
				       "project", project, "before", before_s, "before_ns", (json_int_t)before_ns,
				       "objects", "deleted", (json_int_t)st.deleted, "kept_shared",
				       (json_int_t)st.kept, "failed", (json_int_t)st.failed));
	goto done;
partial:
	/* audited but not fully queued: the caller retries (the same request is safe to repeat) */
	wt_warn("msg=\"deletion incomplete\" project=%s deletion_id=%s error=\"%s\"", project, id, err.msg);
	wt_err_prefix(&err, "deletion %s incomplete (repeat the request)", id);
fail:
	hub_req_fail(r, &err);
done:
	wt_buf_free(&cond);
	evhttp_clear_headers(&q);
}

int hub_handle_delete_profiles(hub_req *r, wt_err *err)
{
	(void)err; /* delete_profiles answers its own errors */
	delete_profiles(r, r->project, &r->who);
	return 0;
}

/* ---- progress --------------------------------------------------------------------- */

static int mut_row(void *ctx, char **f, size_t n)
{
	json_t *list = ctx;

	if (n >= 5)
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:b, s:I}", "table", f[0], "mutation_id", f[1],
						      "create_time", f[2], "is_done", !strcmp(f[3], "1"),
						      "parts_to_do", (json_int_t)strtoll(f[4], NULL, 10)));
	return 0;
}

static int audit_row(void *ctx, char **f, size_t n)
{
	json_t *o = ctx;

	if (n >= 3) {
		json_object_set_new(o, "requested_ns", json_integer(strtoll(f[0], NULL, 10)));
		json_object_set_new(o, "actor", json_string(f[1]));
		json_object_set_new(o, "detail", json_string(f[2]));
	}
	return 1;
}

/* The route wrapper (server.c) has checked the token and the admin or
 * DeleteTelemetry role on project. */
int hub_handle_deletion(hub_req *r, wt_err *e)
{
	const char *project = r->project, *id = r->id;
	wt_err err = {0, ""};
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	json_t *o = NULL, *muts = NULL, *m;
	size_t i, pending = 0;
	int done = 1;

	(void)e; /* answers its own errors */
	if (strlen(id) != 32 || strspn(id, "0123456789abcdef") != 32) {
		wt_err_set(&err, WT_EINVAL, "deletion id: expected 32 hex characters");
		goto fail;
	}
	if (hub_ch_health_check(&r->ctx->store, &err))
		goto fail;
	o = json_pack("{s:s, s:s}", "deletion_id", id, "project", project);
	wt_buf_puts(&sql, "SELECT time_ns, actor, detail FROM audit_events_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " AND deletion_id = ");
	hub_sql_quote(&sql, id);
	wt_buf_puts(&sql, " LIMIT 1 FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 3, audit_row, o);
	if (!json_object_get(o, "requested_ns")) {
		wt_err_set(&err, WT_ENOTFOUND, "no deletion %s in project %s", id, project);
		goto fail;
	}
	muts = json_array();
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT table, mutation_id, toString(create_time), is_done, parts_to_do FROM system.mutations"
			  " WHERE database = currentDatabase() AND position(command, ");
	hub_sql_quote(&sql, id);
	wt_buf_puts(&sql, ") > 0 ORDER BY create_time, table FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	hub_tsv_each((char *)out.data, out.len, 5, mut_row, muts);
	json_array_foreach(muts, i, m)
		if (!json_is_true(json_object_get(m, "is_done")))
			done = 0;
	wt_buf_reset(&sql);
	wt_buf_reset(&out);
	wt_buf_puts(&sql, "SELECT count() FROM object_deletions_v1 FINAL WHERE done = 0 AND deletion_id = ");
	hub_sql_quote(&sql, id);
	wt_buf_puts(&sql, " FORMAT TabSeparated");
	if (hub_ch_query_buf(r->ch, &sql, &out, &err))
		goto fail;
	if (out.len && !wt_buf_putc(&out, '\0'))
		pending = strtoul((const char *)out.data, NULL, 10);
	json_object_set_new(o, "mutations", muts);
	muts = NULL;
	json_object_set_new(o, "objects_pending", json_integer((json_int_t)pending));
	json_object_set_new(o, "done", json_boolean(done && pending == 0));
	hub_req_json(r, 200, o);
	o = NULL;
	goto out;
fail:
	hub_req_fail(r, &err);
out:
	json_decref(o);
	json_decref(muts);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return 0;
}
