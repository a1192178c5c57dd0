/*
 * http_ingest.c — POST /v1/profiles on the hub (direct upload for sites
 * without an edge). The parameters (format, service, type, from, until,
 * label.K=V), their rules, the decode options and time placement are the
 * upload contract of common/upload.c, shared with the edge and with
 * replication apply; body raw or gzip. The reply is 2xx
 * only after the original is in the object store and the rows are in
 * ClickHouse; bad input gets a 4xx naming what was wrong and stores nothing.
 *
 * All or nothing for the client: the upload id is derived from the
 * client's Idempotency-Key (else from the project, query string and body),
 * and the rows are stored by replication's apply (hub_repl_direct_apply,
 * repl_apply.c: claim, ledger, recovery of an interrupted attempt), so a
 * retry after a 5xx stores exactly what is missing and a repeat of a stored
 * upload stores nothing and gets the first reply again.
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
#include "repl.h"
#include "rng.h"
#include "recording_rules.h"
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

#define IDEMPOTENCY_KEY_MAX 128
#define DIRECT_SEAL_STACKS 1000000

/* The upload id (32 hex) of this request: from its Idempotency-Key header
 * (1..128 of [A-Za-z0-9._:-]) or, without one, from what it uploads. */
static int direct_upload_id(hub_req *r, const char *project, const uint8_t *body, size_t len, char id[33],
			    wt_err *err)
{
	const char *key = evhttp_find_header(evhttp_request_get_input_headers(r->req), "Idempotency-Key");
	const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(r->req));
	char bsha[HUB_SHA256_HEX_LEN + 1], sha[HUB_SHA256_HEX_LEN + 1];
	wt_buf b = WT_BUF_INIT;
	size_t n;

	if (key) {
		n = strlen(key);
		if (!n || n > IDEMPOTENCY_KEY_MAX ||
		    strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") != n)
			return wt_err_set(err, WT_EINVAL, "Idempotency-Key: 1..%d characters of [A-Za-z0-9._:-]",
					  IDEMPOTENCY_KEY_MAX);
	}
	wt_buf_puts(&b, "direct");
	wt_buf_append(&b, "", 1);
	wt_buf_puts(&b, project);
	wt_buf_append(&b, "", 1);
	if (key) {
		wt_buf_puts(&b, "key");
		wt_buf_append(&b, "", 1);
		wt_buf_puts(&b, key);
	} else {
		hub_sha256_hex(body, len, bsha);
		wt_buf_puts(&b, "content");
		wt_buf_append(&b, "", 1);
		wt_buf_puts(&b, query ? query : "");
		wt_buf_append(&b, "", 1);
		wt_buf_puts(&b, bsha);
	}
	if (b.oom) {
		wt_buf_free(&b);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	hub_sha256_hex(b.data, b.len, sha);
	memcpy(id, sha, 32);
	id[32] = 0;
	wt_buf_free(&b);
	return 0;
}

/* Decode the body with the request's options, times placed at now. */
static int direct_decode(hub_ctx *ctx, wt_upload *up, const uint8_t *body, size_t len, int64_t now, wt_profile **p,
			 wt_format *detected, wt_err *err)
{
	wt_limits lim;
	wt_decode_opts opts;

	wt_limits_default(&lim);
	lim.max_body = ctx->cfg.max_body;
	wt_upload_decode_opts(&up->dec, &lim, now, &opts);
	if (wt_format_decode(body, len, up->dec.fmt, &opts, p, detected, err))
		return err->code ? err->code : WT_EINVAL;
	wt_upload_place_times(&up->dec, *p, now);
	/* read only from here: a profile of a million stacks or more gives
	 * its interning indexes back (about 250 MB at 3.2 M); below that it
	 * keeps them — sealing a smaller one left 30-50 MB held after the
	 * request (docs/operations.md "Memory of large uploads") */
	if ((*p)->nstacks >= DIRECT_SEAL_STACKS)
		wt_profile_seal(*p);
	return 0;
}

/* Answer a repeat of a stored upload with the first reply. */
static void reply_duplicate(hub_req *r, const char *stored)
{
	json_error_t je;
	json_t *js = stored ? json_loads(stored, 0, &je) : NULL;

	if (!js)
		js = json_object();
	json_object_set_new(js, "duplicate", json_true());
	hub_req_json(r, 200, js);
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
	wt_err err = {0, ""};
	const char *project;
	wt_format detected = WT_FMT_AUTO;
	wt_profile *p = NULL;
	uint8_t *body = NULL;
	size_t len = 0, t, i, rows = 0;
	int64_t now = wt_now_ns(CLOCK_REALTIME), first_ns = 0;
	char upload_id[33], *stored = NULL;
	hub_repl_direct d;
	hub_repl_result res;
	json_t *types, *reply = NULL;
	int days, state = 0, rc;

	(void)e; /* answers its own errors (and counts them as rejected uploads) */
	wt_upload_init(&up);
	memset(&res, 0, sizeof(res));
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
	if (direct_upload_id(r, project, body, len, upload_id, &err) ||
	    direct_decode(ctx, &up, body, len, now, &p, &detected, &err))
		goto fail;

	if (hub_ch_health_check(&ctx->store, &err) || hub_project_retention(r->ch, project, &days, &err) ||
	    hub_repl_direct_lookup(r->ch, upload_id, &state, &first_ns, &stored, &err))
		goto fail;
	if (state >= 2) { /* stored already: a repeat */
		reply_duplicate(r, stored);
		goto done;
	}
	if (state == 1 && first_ns > 0 && first_ns != now) {
		/* an interrupted attempt: its rows are placed at its time */
		wt_profile_free(p);
		p = NULL;
		now = first_ns;
		if (direct_decode(ctx, &up, body, len, now, &p, &detected, &err))
			goto fail;
	}
	for (i = 0; i < p->nsamples; i++) {
		const int64_t *v = wt_profile_values(p, i);
		for (t = 0; t < p->ntypes; t++)
			rows += v[t] != 0;
	}
	types = json_array();
	for (t = 0; t < p->ntypes; t++)
		json_array_append_new(types, json_string(wt_profile_str(p, p->types[t].canonical)));
	reply = json_pack("{s:s, s:s, s:s, s:s, s:o, s:I, s:I, s:I}", "upload_id", upload_id,
			  "project", project, "service", up.service, "format", wt_format_name(detected),
			  "types", types, "samples", (json_int_t)p->nsamples,
			  "rows", (json_int_t)rows, "stacks", (json_int_t)p->nstacks);
	if (!reply) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (p->nwarnings) { /* what the parser worked around (a cut last record, ...) */
		json_t *w = json_array();
		for (t = 0; t < p->nwarnings; t++)
			json_array_append_new(w, json_string(p->warnings[t]));
		json_object_set_new(reply, "warnings", w);
	}

	memset(&d, 0, sizeof(d));
	d.project = project;
	d.service = up.service;
	d.labels = lp;
	d.nlabels = up.nlabels;
	d.upload_id = upload_id;
	d.body = body;
	d.len = len;
	d.p = p; /* the apply frees it once in rows (d.p = NULL then) */
	p = NULL;
	d.format = wt_format_name(detected);
	d.received_ns = now;
	d.reply = reply;
	d.retention_days = days;
	rc = hub_repl_direct_apply(ctx, r->ch, &d, &res, &err);
	wt_profile_free(d.p);
	if (rc) {
		if (res.retry_after_s) /* another request is storing this upload now */
			evhttp_add_header(evhttp_request_get_output_headers(r->req), "Retry-After", "1");
		goto fail;
	}
	if (res.duplicates) { /* a concurrent request stored it meanwhile */
		free(stored);
		stored = NULL;
		if (hub_repl_direct_lookup(r->ch, upload_id, &state, &first_ns, &stored, &err))
			goto fail;
		reply_duplicate(r, stored);
		goto done;
	}
	atomic_fetch_add(&ctx->metrics.objstore_puts_total, 1);
	atomic_fetch_add(&ctx->metrics.uploads_total, 1);
	atomic_fetch_add(&ctx->metrics.upload_bytes_total, (long)len);
	atomic_fetch_add(&ctx->metrics.upload_rows_total, (long)res.sample_rows);
	atomic_fetch_add(&ctx->metrics.ch_insert_ns_total, (long)res.insert_ns);
	hub_req_json(r, 200, json_incref(reply));
	goto done;
fail:
	hub_req_fail(r, &err);
	atomic_fetch_add(&ctx->metrics.uploads_rejected_total, 1);
done:
	json_decref(reply);
	free(stored);
	wt_profile_free(p);
	free(body);
	wt_upload_free(&up);
	return 0;
}
