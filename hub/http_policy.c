/*
 * http_policy.c — GET/PUT /v1/projects/{p}/policy (role admin of the
 * project, or the hub admin token). PUT validates the whole document,
 * stores it as the next revision and records an audit event naming what
 * changed; edges see it on their next config pull (long-polls wake at once).
 */
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "http_server.h"
#include "hub.h"
#include "ch_rows.h"
#include "log.h"
#include "policy.h"

#define AUDIT_DETAIL_MAX 1500

static json_t *rec_json(const char *project, const hub_policy_rec *rec)
{
	json_t *o = json_pack("{s:s, s:I, s:O}", "project", project, "revision", (json_int_t)rec->revision,
			      "policy", rec->doc);

	if (o && rec->revision) {
		json_object_set_new(o, "updated_by", json_string(rec->updated_by));
		json_object_set_new(o, "updated_ns", json_integer(rec->updated_ns));
	}
	return o;
}

static void policy_put(hub_req *r, const char *project, const hub_principal *who)
{
	wt_err err = {0, ""};
	uint8_t *body = NULL;
	size_t len = 0;
	json_t *doc = NULL;
	json_error_t je;
	hub_policy_rec old = {0};
	uint64_t rev;
	wt_buf detail = WT_BUF_INIT;
	int days;

	if (wt_http_body(r->req, HUB_POLICY_MAX_BYTES, &body, &len, &err))
		goto fail;
	doc = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc) {
		wt_err_set(&err, WT_EINVAL, "body: not JSON (%s at line %d column %d)", je.text, je.line, je.column);
		goto fail;
	}
	if (hub_policy_validate(doc, &err))
		goto fail;
	if (hub_ch_health_check(&r->ctx->store, &err) || hub_project_retention(r->ch, project, &days, &err) ||
	    hub_policy_load(r->ch, project, &old, &err))
		goto fail;
	wt_buf_printf(&detail, "revision %llu -> %llu: ", (unsigned long long)old.revision,
		      (unsigned long long)old.revision + 1);
	hub_policy_diff(old.doc, doc, &detail, AUDIT_DETAIL_MAX);
	wt_buf_putc(&detail, '\0');
	if (detail.oom) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (hub_policy_store(r->ch, project, doc, who->token_id, old.revision, &rev, &err))
		goto fail;
	if (hub_audit_record(r->ch, project, who->token_id, "policy.update", (const char *)detail.data, NULL, &err))
		wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, err.msg);
	wt_info("msg=\"policy updated\" project=%s revision=%llu by=%s", project, (unsigned long long)rev,
		who->token_id);
	hub_policy_rec_free(&old);
	old.doc = doc;
	doc = NULL;
	old.revision = rev;
	snprintf(old.updated_by, sizeof(old.updated_by), "%s", who->token_id);
	old.updated_ns = wt_now_ns(CLOCK_REALTIME);
	hub_req_json(r, 200, rec_json(project, &old));
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	hub_policy_rec_free(&old);
	json_decref(doc);
	wt_buf_free(&detail);
	free(body);
}

static void rec_free(void *p)
{
	hub_policy_rec_free(p);
}

int hub_handle_policy(hub_req *r, wt_err *err)
{
	hub_policy_rec *rec;
	int days, rc;

	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_PUT) {
		policy_put(r, r->project, &r->who);
		return 0;
	}
	rec = wt_arena_calloc(&r->arena, 1, sizeof(*rec));
	if (!rec || wt_arena_defer(&r->arena, rec_free, rec))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = hub_ch_health_check(&r->ctx->store, err)) ||
	    (rc = hub_project_retention(r->ch, r->project, &days, err)) ||
	    (rc = hub_policy_load(r->ch, r->project, rec, err)))
		return rc;
	hub_req_json(r, 200, rec_json(r->project, rec));
	return 0;
}
