/*
 * http_ingest.c — POST /v1/profiles on the hub (direct upload for sites
 * without an edge). The parameters (format, service, type, from, until,
 * label.K=V), their rules, the decode options and time placement are the
 * upload contract of common/upload.c, shared with the edge and with
 * replication apply; body raw or gzip. The reply is 2xx
 * only after the original is in the object store and the rows are in
 * ClickHouse; bad input gets a 4xx naming what was wrong and stores nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "format.h"
#include "http_server.h"
#include "failpoint.h"
#include "hub.h"
#include "ch_rows.h"
#include "log.h"
#include "params.h"
#include "recording_rules.h"
#include "rng.h"
#include "sha.h"
#include "upload.h"

#define DEFAULT_RETENTION_DAYS 30

static int retention_row(void *ctx, char **f, size_t n)
{
	int *days = ctx;
	if (n >= 1)
		*days = atoi(f[0]);
	return 0;
}

/* The project's retention_days; WT_ENOTFOUND when the project is unknown. */
int hub_project_retention(hub_ch *ch, const char *project, int *days, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	*days = -1;
	wt_buf_puts(&sql, "SELECT retention_days FROM projects_v1 FINAL WHERE name = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 1, retention_row, days);
	if (!rc && *days < 0)
		rc = wt_err_set(err, WT_ENOTFOUND, "project \"%s\" does not exist", project);
	if (!rc && (*days <= 0 || *days > 65535))
		*days = DEFAULT_RETENTION_DAYS;
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int put_raw_index(hub_ch *ch, const char *project, const char *service, const char *upload_id,
			 const char *key, const char *format, size_t size, int64_t tns, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	wt_buf_printf(&sql, "INSERT INTO raw_objects_v1 (date, time_ns, project, service, upload_id,"
		      " object_key, format, size, deleted) VALUES (toDate(%u), %lld, ",
		      (unsigned)hub_date_of_ns(tns), (long long)tns);
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, service);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, upload_id);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, key);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, format);
	wt_buf_printf(&sql, ", %zu, 0)", size);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

/* The route wrapper (server.c) has checked the token (r->who) and parsed
 * the query (r->q); the upload role is checked here, on the project the
 * upload goes to. */
int hub_handle_upload(hub_req *r, wt_err *e)
{
	hub_ctx *ctx = r->ctx;
	const hub_principal *who = &r->who;
	const struct evkeyval *kv;
	wt_upload up;
	hub_label_param lp[WT_UPLOAD_MAX_LABELS];
	wt_err err = {0, ""}, rerr = {0, ""};
	const char *project;
	wt_format detected = WT_FMT_AUTO;
	wt_limits lim;
	wt_decode_opts opts;
	wt_profile *p = NULL;
	uint8_t *body = NULL;
	size_t len = 0, t;
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	char upload_id[33], key[HUB_OBJSTORE_KEY_MAX];
	uint8_t rnd[16];
	hub_ch_rows_req rq;
	hub_ch_rows_stats st;
	json_t *types, *reply;
	int days;

	(void)e; /* answers its own errors (and counts them as rejected uploads) */
	wt_upload_init(&up);
	for (kv = r->q.tqh_first; kv; kv = kv->next.tqe_next)
		if (wt_upload_param(&up, 0, kv->key, kv->value, &err))
			goto fail;
	if (wt_upload_finish(&up, &err))
		goto fail;
	for (t = 0; t < up.nlabels; t++) {
		lp[t].key = up.labels[t].key;
		lp[t].value = up.labels[t].value;
	}
	project = who->super ? wt_http_param(&r->q, "project") : who->project;
	if (!project || !hub_project_name_valid(project)) {
		wt_err_set(&err, WT_EINVAL, "project: the admin token must name a valid project");
		goto fail;
	}
	if (hub_auth_allows(who, project, HUB_ROLE_UPLOAD, &err))
		goto fail;
	if (wt_http_body(r->req, ctx->cfg.max_body, &body, &len, &err))
		goto fail;
	if (len == 0) {
		wt_err_set(&err, WT_EINVAL, "body: empty");
		goto fail;
	}

	wt_limits_default(&lim);
	lim.max_body = ctx->cfg.max_body;
	wt_upload_decode_opts(&up.dec, &lim, now, &opts);
	if (wt_format_decode(body, len, up.dec.fmt, &opts, &p, &detected, &err))
		goto fail;
	wt_upload_place_times(&up.dec, p, now);

	if (hub_ch_health_check(&ctx->store, &err) || hub_project_retention(r->ch, project, &days, &err))
		goto fail;

	/* Original first: a reply that says "stored" must be able to name it. */
	wt_random_bytes(rnd, sizeof(rnd));
	hub_hex(rnd, sizeof(rnd), upload_id);
	if (hub_objstore_put_upload(ctx->os, project, upload_id, body, len, key, sizeof(key), &err)) {
		atomic_fetch_add(&ctx->metrics.objstore_errors_total, 1);
		if (err.code != WT_EUNAVAIL)
			err.code = WT_EIO;
		goto fail;
	}
	atomic_fetch_add(&ctx->metrics.objstore_puts_total, 1);
	hub_failpoint_wait("ingest_after_object_put"); /* tests: a deletion runs here */
	memset(&rq, 0, sizeof(rq));
	rq.project = project;
	rq.service = up.service;
	rq.upload_id = upload_id;
	rq.retention_days = days;
	rq.labels = lp;
	rq.nlabels = up.nlabels;
	rq.batch_rows = ctx->cfg.ch_insert_batch_rows;
	rq.stacks = ctx->stacks;
	rq.cache_generation = atomic_load(&ctx->store.transitions);
	if (hub_ch_rows_profile(r->ch, &rq, p, now, &st, &err))
		goto fail;
	if (put_raw_index(r->ch, project, up.service, upload_id, key, wt_format_name(detected), len,
			  p->time_ns, &err))
		goto fail;
	/* Recording rules (recording_rules.c). The samples are stored: a
	 * failure here is logged and counted, not answered with an error the
	 * client would retry (and so store the samples twice). */
	if (hub_rules_apply(r->ch, project, up.service, upload_id, lp, up.nlabels, p, now, &rerr))
		wt_warn("msg=\"recording rules not applied\" project=%s upload=%s error=\"%s\"", project, upload_id,
			rerr.msg);

	atomic_fetch_add(&ctx->metrics.uploads_total, 1);
	atomic_fetch_add(&ctx->metrics.upload_bytes_total, (long)len);
	atomic_fetch_add(&ctx->metrics.upload_rows_total, (long)st.sample_rows);
	atomic_fetch_add(&ctx->metrics.ch_insert_ns_total, (long)st.insert_ns);
	types = json_array();
	for (t = 0; t < p->ntypes; t++)
		json_array_append_new(types, json_string(wt_profile_str(p, p->types[t].canonical)));
	reply = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:s}", "upload_id", upload_id,
			  "project", project, "service", up.service, "format", wt_format_name(detected),
			  "types", types, "samples", (json_int_t)p->nsamples,
			  "rows", (json_int_t)st.sample_rows, "stacks", (json_int_t)p->nstacks,
			  "object_key", key);
	if (reply && p->nwarnings) { /* what the parser worked around (a cut last record, ...) */
		json_t *w = json_array();
		for (t = 0; t < p->nwarnings; t++)
			json_array_append_new(w, json_string(p->warnings[t]));
		json_object_set_new(reply, "warnings", w);
	}
	hub_req_json(r, 200, reply);
	goto done;
fail:
	hub_req_fail(r, &err);
	atomic_fetch_add(&ctx->metrics.uploads_rejected_total, 1);
done:
	wt_profile_free(p);
	free(body);
	wt_upload_free(&up);
	return 0;
}
