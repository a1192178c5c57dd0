/*
 * http_debuginfo.c — debug files of a project (symbols.h):
 *   GET    /v1/projects/{p}/debuginfo              list (role read)
 *   GET    /v1/projects/{p}/debuginfo/{build id}   one entry or 404 (read
 *                                                  or upload); wtctl asks first
 *   PUT    /v1/projects/{p}/debuginfo/{build id}?name=FILE   the ELF file as
 *          the body (role upload); the hub checks it is ELF and carries that
 *          build id; 200 "exists" when the project has it already, else 201
 *   DELETE /v1/projects/{p}/debuginfo/{build id}   (role upload)
 */
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "elfid.h"
#include "http_server.h"
#include "hub.h"
#include "log.h"
#include "params.h"

static json_t *entry_json(const hub_debug_file *d)
{
	return json_pack("{s:s, s:s, s:I, s:s, s:I, s:s}", "build_id", d->build_id, "file_name", d->file_name,
			 "size", (json_int_t)d->size, "uploaded_by", d->uploaded_by, "uploaded_ns",
			 (json_int_t)d->uploaded_ns, "source", d->source);
}

static void list(hub_req *r, const char *project, const char *bid)
{
	hub_debug_file *v = NULL;
	wt_err err = {0, ""};
	json_t *arr;
	size_t n = 0;

	if (hub_debug_files_list(r->ch, project, bid, &v, &n, &err)) {
		hub_req_fail(r, &err);
		return;
	}
	if (bid) {
		if (!n) {
			wt_err_set(&err, WT_ENOTFOUND, "debug file %s: not on the hub (project %s)", bid, project);
			hub_req_fail(r, &err);
		} else {
			hub_req_json(r, 200, entry_json(&v[0]));
		}
		free(v);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, entry_json(&v[i]));
	free(v);
	hub_req_json(r, 200, json_pack("{s:s, s:o}", "project", project, "files", arr));
}

static void put(hub_req *r, const char *project, const char *bid, const hub_principal *who)
{
	wt_err err = {0, ""};
	struct evkeyvalq q = {NULL, NULL};
	char got[WT_BUILD_ID_MAX + 1];
	const char *name;
	hub_debug_file *v = NULL;
	uint8_t *body = NULL;
	size_t len = 0, n = 0;

	q.tqh_last = &q.tqh_first;
	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	name = wt_http_param(&q, "name");
	if (!name || !*name || strlen(name) >= HUB_DEBUG_NAME_MAX || strchr(name, '/')) {
		wt_err_set(&err, WT_EINVAL, "name: give the file's base name (1..%d bytes, no '/')",
			   HUB_DEBUG_NAME_MAX - 1);
		goto fail;
	}
	if (hub_debug_files_list(r->ch, project, bid, &v, &n, &err))
		goto fail;
	if (n) {
		json_t *o = entry_json(&v[0]);
		json_object_set_new(o, "status", json_string("exists"));
		hub_req_json(r, 200, o);
		goto done;
	}
	if (wt_http_body(r->req, r->ctx->cfg.sym_max_file_bytes, &body, &len, &err))
		goto fail;
	if (wt_elf_build_id(body, len, name, got, sizeof(got), &err))
		goto fail;
	if (strcmp(got, bid)) {
		wt_err_set(&err, WT_EINVAL, "%s: its build id is %s, the URL names %s", name, got, bid);
		goto fail;
	}
	if (hub_ch_health_check(&r->ctx->store, &err) ||
	    hub_debug_file_store(r->ctx->syms, r->ch, project, bid, name, body, len, who->token_id, "upload", &err))
		goto fail;
	{
		char detail[400];
		snprintf(detail, sizeof(detail), "debug file %s build_id=%s size=%zu", name, bid, len);
		if (hub_audit_record(r->ch, project, who->token_id, "debuginfo.upload", detail, NULL, &err))
			wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, err.msg);
	}
	hub_req_json(r, 201, json_pack("{s:s, s:s, s:I, s:s, s:b}", "status", "uploaded", "build_id", bid,
				       "size", (json_int_t)len, "file_name", name, "has_symbols",
				       wt_elf_has_symbols(body, len)));
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	evhttp_clear_headers(&q);
	free(v);
	free(body);
}

static void del(hub_req *r, const char *project, const char *bid, const hub_principal *who)
{
	hub_debug_file *v = NULL;
	wt_err err = {0, ""};
	size_t n = 0;

	if (hub_debug_files_list(r->ch, project, bid, &v, &n, &err))
		goto fail;
	if (!n) {
		wt_err_set(&err, WT_ENOTFOUND, "debug file %s: not on the hub (project %s)", bid, project);
		goto fail;
	}
	if (hub_debug_file_delete(r->ctx->syms, r->ch, project, bid, who->token_id, &err))
		goto fail;
	if (hub_audit_record(r->ch, project, who->token_id, "debuginfo.delete", bid, NULL, &err))
		wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, err.msg);
	hub_req_json(r, 200, json_pack("{s:s, s:s}", "status", "deleted", "build_id", bid));
	free(v);
	return;
fail:
	free(v);
	hub_req_fail(r, &err);
}

/* Route handlers (server.c's table checks token, project and role). */
int hub_handle_debuginfo_list(hub_req *r, wt_err *err)
{
	(void)err;
	list(r, r->project, NULL);
	return 0;
}

int hub_handle_debuginfo(hub_req *r, wt_err *err)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(r->req);

	if (!hub_build_id_valid(r->id))
		return wt_err_set(err, WT_EINVAL, "build id \"%.*s\": want 2..%d lower-case hex digits", 100, r->id,
				  WT_BUILD_ID_MAX);
	if (cmd == EVHTTP_REQ_GET)
		list(r, r->project, r->id);
	else if (cmd == EVHTTP_REQ_PUT)
		put(r, r->project, r->id, &r->who);
	else
		del(r, r->project, r->id, &r->who);
	return 0;
}
