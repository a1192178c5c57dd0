/*
 * server.c — worker threads sharing one listening socket, request routing,
 * and the small shared handlers (/healthz, /metrics, auth helper).
 */
#include "server.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "connect.h"
#include "http_guard.h"
#include "http_route.h"
#include "http_server.h"
#include "log.h"
#include "http_ui.h"
#include "listen_addr.h"
#include "params.h"
#include "prom.h"
#include "recording_rules.h"
#include "repl.h"

typedef struct worker {
	hub_ctx *ctx;
	int idx;
	struct event_base *base;
	struct evhttp *http;
	hub_ch *ch;
	struct wt_http_guard *guard; /* admits requests on their head */
	pthread_t thr;
	int started;
} worker;

struct hub_server {
	hub_ctx *ctx;
	int fd;
	int n;
	worker *w;
};

static void routes_metrics_render(wt_buf *b);

static void count_status(hub_req *r, int status)
{
	hub_ctx *ctx = r->ctx;

	r->status = status;
	if (status < 300)
		atomic_fetch_add(&ctx->metrics.responses_2xx, 1);
	else if (status < 500)
		atomic_fetch_add(&ctx->metrics.responses_4xx, 1);
	else
		atomic_fetch_add(&ctx->metrics.responses_5xx, 1);
}

void hub_req_count(hub_req *r, int status)
{
	count_status(r, status);
}

void hub_req_json(hub_req *r, int status, json_t *body)
{
	count_status(r, status);
	wt_http_send_json(r->req, status, body);
}

int hub_req_query_json(hub_req *r, int64_t t0, json_t *out, wt_err *err)
{
	if (!out)
		return wt_err_set(err, WT_ENOMEM, "out of memory rendering the reply");
	atomic_fetch_add(&r->ctx->metrics.queries_total, 1);
	atomic_fetch_add(&r->ctx->metrics.query_ns_total, (long)(wt_now_ns(CLOCK_REALTIME) - t0));
	hub_req_json(r, 200, out);
	return 0;
}

void hub_req_query_text(hub_req *r, int64_t t0, const char *text, size_t len)
{
	atomic_fetch_add(&r->ctx->metrics.queries_total, 1);
	atomic_fetch_add(&r->ctx->metrics.query_ns_total, (long)(wt_now_ns(CLOCK_REALTIME) - t0));
	count_status(r, 200);
	wt_http_send_bytes(r->req, 200, "application/json", text, len);
}

static void json_dtor(void *p)
{
	json_decref(p);
}

json_t *hub_req_own_json(hub_req *r, json_t *j)
{
	if (!j || wt_arena_defer(&r->arena, json_dtor, j))
		return NULL;
	return j;
}

void hub_req_fail(hub_req *r, const wt_err *err)
{
	int code = err->code ? err->code : WT_EIO;

	count_status(r, wt_err_http_status(code));
	if (code == WT_EUNAVAIL || code == WT_EIO)
		atomic_fetch_add(&r->ctx->metrics.ch_errors_total, 1);
	wt_http_send_error(r->req, code, err->msg);
}

/* Basic auth's password: "Basic base64(user:token)" → token. */
static int basic_password(const char *a, char *tok, size_t cap)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char dec[512];
	const char *colon, *q;
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;

	for (; *a && *a != '='; a++) {
		if (!(q = strchr(tbl, *a)))
			return -1;
		acc = acc << 6 | (uint32_t)(q - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= sizeof(dec))
				return -1;
			dec[o++] = (char)(acc >> bits);
		}
	}
	dec[o] = '\0';
	if (!(colon = strchr(dec, ':')) || !colon[1] || strlen(colon + 1) >= cap)
		return -1;
	snprintf(tok, cap, "%s", colon + 1);
	return 0;
}

/* The Connect routes' credentials (Pyroscope's clients and Grafana's data
 * source): the token from "Authorization: Bearer T" or basic auth with T
 * as the password; the project from X-Scope-OrgID (the tenant id), else
 * the token's own. Fills r->who and r->project (in r->arena). */
static int connect_auth(hub_req *r, wt_err *err)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(r->req);
	const char *a = evhttp_find_header(h, "Authorization"), *org = evhttp_find_header(h, "X-Scope-OrgID");
	char tok[256];
	int rc;

	if (a && !strncasecmp(a, "Bearer ", 7)) {
		if (wt_http_bearer(r->req, tok, sizeof(tok)))
			return wt_err_set(err, WT_EAUTH, "malformed Authorization: Bearer header");
	} else if (a && !strncasecmp(a, "Basic ", 6)) {
		if (basic_password(a + 6, tok, sizeof(tok)))
			return wt_err_set(err, WT_EAUTH, "malformed Authorization: Basic header (the token is the password)");
	} else {
		return wt_err_set(err, WT_EAUTH, "missing Authorization: Bearer <read token> (or basic auth with the token as password)");
	}
	if ((rc = hub_auth_lookup(r->ctx->auth, r->ch, tok, &r->who, err)))
		return rc;
	if (org && *org) {
		if (strlen(org) > HUB_PROJECT_MAX || !hub_project_name_valid(org))
			return wt_err_set(err, WT_ENOTFOUND, "X-Scope-OrgID: \"%.64s\" is not a valid project name", org);
		r->project = wt_arena_strdup(&r->arena, org);
	} else if (r->who.super) {
		return wt_err_set(err, WT_EINVAL, "X-Scope-OrgID: the admin token needs the project as tenant id");
	} else {
		r->project = wt_arena_strdup(&r->arena, r->who.project);
	}
	if (!r->project)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	return 0;
}

/* Authenticate the request's bearer token; on failure the error reply has
 * been sent and a negative code is returned. */
static int hub_req_auth(hub_req *r, hub_principal *p)
{
	char tok[256];
	wt_err err = {0, ""};
	int rc;

	if (wt_http_bearer(r->req, tok, sizeof(tok))) {
		wt_err_set(&err, WT_EAUTH, "missing or malformed Authorization: Bearer header");
		hub_req_fail(r, &err);
		return WT_EAUTH;
	}
	rc = hub_auth_lookup(r->ctx->auth, r->ch, tok, p, &err);
	if (rc == WT_EUNAVAIL || rc == WT_EIO) {
		/* Cannot tell whether the token is good while ClickHouse is away. */
		hub_req_fail(r, &err);
		return rc;
	}
	if (rc) {
		hub_req_fail(r, &err);
		return rc;
	}
	return 0;
}

void hub_handle_healthz(hub_req *r)
{
	json_t *ch = hub_ch_health_status_json(&r->ctx->store);
	int up = atomic_load(&r->ctx->store.ready);
	json_t *o = json_pack("{s:s, s:o, s:s}", "status", up ? "ok" : "degraded",
			      "clickhouse", ch ? ch : json_null(),
			      "object_store", r->ctx->os->name);

	/* 503 while degraded so load balancers route around this hub. */
	hub_req_json(r, up ? 200 : 503, o);
}

void hub_handle_metrics(hub_req *r)
{
	wt_buf b = WT_BUF_INIT;

	hub_metrics_render(&r->ctx->metrics, atomic_load(&r->ctx->store.ready),
			   atomic_load(&r->ctx->store.transitions), &b);
	hub_repl_metrics_render(&b);
	hub_rules_metrics_render(&b);
	hub_viewcache_metrics_render(r->ctx->views, &b);
	routes_metrics_render(&b);
	count_status(r, 200);
	wt_http_send_bytes(r->req, 200, "text/plain; version=0.0.4", b.data, b.len);
	wt_buf_free(&b);
}

void hub_req_method_not_allowed(hub_req *r, const char *allowed)
{
	wt_err err;
	count_status(r, 405);
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", allowed);
	wt_err_set(&err, WT_EINVAL, "method not allowed on %s (allowed: %s)", r->path, allowed);
	wt_http_send_json(r->req, 405, json_pack("{s:s, s:s}", "error", "method_not_allowed",
						  "detail", err.msg));
}

/* A body over WT_HTTP_GUARD_SMALL_BODY is read only for a valid token (any
 * role; the handler checks the role); smaller requests go to their handler
 * as before. Runs on the worker's thread, so the token lookup may use the
 * worker's ClickHouse client (cached, hub.token_cache_ttl_ms). */
static int guard_decide(void *arg, const wt_http_head *h, wt_err *err)
{
	worker *w = arg;
	const char *a = h->authorization;
	hub_principal p;
	char tok[256];
	size_t n;

	if (h->body_max <= WT_HTTP_GUARD_SMALL_BODY)
		return 0;
	if (strncasecmp(a, "Bearer", 6) || (a[6] != ' ' && a[6] != '\t'))
		return wt_err_set(err, WT_EAUTH, "a request body over %u bytes needs Authorization: Bearer "
				  "<token> (checked before the body is read)", WT_HTTP_GUARD_SMALL_BODY);
	for (a += 6; *a == ' ' || *a == '\t'; a++)
		;
	n = strlen(a);
	if (n == 0 || n >= sizeof(tok))
		return wt_err_set(err, WT_EAUTH, "missing or malformed Authorization: Bearer header");
	memcpy(tok, a, n + 1);
	return hub_auth_lookup(w->ctx->auth, w->ch, tok, &p, err);
}

/* ---- the route table (docs/api.md lists the endpoints) ------------------ */

/* Adapters for the open endpoints' handlers (they reply themselves). */
static int h_healthz(hub_req *r, wt_err *e) { (void)e; hub_handle_healthz(r); return 0; }
static int h_metrics(hub_req *r, wt_err *e) { (void)e; hub_handle_metrics(r); return 0; }
static int h_ui(hub_req *r, wt_err *e) { (void)e; hub_handle_ui(r); return 0; }

#define GET EVHTTP_REQ_GET
#define HEAD EVHTTP_REQ_HEAD
#define POST EVHTTP_REQ_POST
#define PUT EVHTTP_REQ_PUT
#define DELETE EVHTTP_REQ_DELETE
#define PATCH EVHTTP_REQ_PATCH
#define H(fn) ((void (*)(void))(fn))
#define DEBUGINFO (HUB_AUTH_BADNAME_400 | HUB_AUTH_NOQUERY)

/* First match wins. Rows with a role: the wrapper checks the token, the
 * role on {project} and parses the query string before the handler runs.
 * HUB_AUTH_TOKEN rows: the wrapper checks the token; the role is checked
 * by the handler because the project it applies to is not in the path
 * (the token's own, a query parameter or the JSON body), or the endpoint
 * is the hub admin token's only. HUB_AUTH_OPEN: open endpoints only.
 * HUB_AUTH_CONNECT rows take the token and project as Pyroscope's
 * clients send them (connect_auth) and answer errors in Connect's shape.
 * Paths not here are 404. */
static const wt_route hub_routes[] = {
	{GET | HEAD, "/healthz", HUB_AUTH_OPEN, H(h_healthz), NULL},
	{GET, "/metrics", HUB_AUTH_OPEN, H(h_metrics), NULL},
	/* the project is the token's own (?project= for the hub admin token),
	 * not in the path: the wrapper checks the token, the handler the
	 * upload role on that project */
	{POST, "/v1/profiles", HUB_AUTH_TOKEN | HUB_AUTH_UPLOAD, H(hub_handle_upload), NULL},
	/* admin endpoints: the hub admin token, or a project admin token on
	 * the project named in the query (?project=) or the body */
	{GET | POST, "/v1/admin/projects", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_admin_projects), NULL},
	{GET | POST, "/v1/admin/tokens", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_admin_tokens), NULL},
	{DELETE, "/v1/admin/tokens/*", HUB_AUTH_TOKEN, H(hub_handle_admin_token_revoke), NULL},
	/* edge registrations: GET's project is ?project= (none: the hub admin
	 * token), POST's is in the body; DELETE's is in the path */
	{GET, "/v1/admin/edges", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_edges_get), NULL},
	{GET, "/v1/admin/edges/", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_edges_get), NULL},
	{POST, "/v1/admin/edges/{id}/projects", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_edge_allow), NULL},
	{POST, "/v1/admin/edges/{id}/projects/", HUB_AUTH_TOKEN | HUB_AUTH_NOQUERY, H(hub_handle_edge_allow), NULL},
	{DELETE, "/v1/admin/edges/{id}/projects/{project}", HUB_ROLE_ADMIN | HUB_AUTH_BADNAME_400 | HUB_AUTH_NOQUERY,
	 H(hub_handle_edge_disallow), NULL},
	/* the hub admin token; analysis/run also a project admin token on ?project= */
	{POST, "/v1/admin/worker/run", HUB_AUTH_TOKEN, H(hub_handle_worker_run), NULL},
	{POST, "/v1/admin/analysis/run", HUB_AUTH_TOKEN, H(hub_handle_analysis_run), NULL},
	{GET | PUT, "/v1/projects/{project}/policy", HUB_ROLE_ADMIN | HUB_AUTH_BADNAME_400 | HUB_AUTH_NOQUERY, H(hub_handle_policy), NULL},
	{DELETE, "/v1/projects/{project}/profiles", HUB_ROLE_DELETE | HUB_AUTH_BADNAME_400, H(hub_handle_delete_profiles), NULL},
	{GET, "/v1/projects/{project}/audit", HUB_ROLE_ADMIN | HUB_ROLE_DELETE | HUB_AUTH_BADNAME_400, H(hub_handle_audit), NULL},
	{GET, "/v1/projects/{project}/deletions/{id}", HUB_ROLE_ADMIN | HUB_ROLE_DELETE | HUB_AUTH_BADNAME_400 | HUB_AUTH_NOQUERY,
	 H(hub_handle_deletion), NULL},
	{GET, "/v1/projects/{project}/profiles/diff", HUB_ROLE_READ, H(hub_handle_diff), NULL},
	{GET, "/v1/projects/{project}/profiles/timeline", HUB_ROLE_READ, H(hub_handle_timeline), NULL},
	{GET, "/v1/projects/{project}/profiles/insights", HUB_ROLE_READ, H(hub_handle_insights), NULL},
	{GET, "/v1/projects/{project}/profiles/leaks", HUB_ROLE_READ, H(hub_handle_leaks), NULL},
	{GET, "/v1/projects/{project}/issues", HUB_ROLE_READ, H(hub_handle_issues), NULL},
	{PATCH, "/v1/projects/{project}/issues/{id}", HUB_ROLE_ADMIN, H(hub_handle_issue_patch), NULL},
	{GET, "/v1/projects/{project}/debuginfo", HUB_ROLE_READ | DEBUGINFO, H(hub_handle_debuginfo_list), NULL},
	{GET, "/v1/projects/{project}/debuginfo/{id}", HUB_ROLE_READ | HUB_ROLE_UPLOAD | DEBUGINFO,
	 H(hub_handle_debuginfo), NULL},
	{PUT | DELETE, "/v1/projects/{project}/debuginfo/{id}", HUB_ROLE_UPLOAD | DEBUGINFO, H(hub_handle_debuginfo), NULL},
	{GET, "/v1/projects/{project}/recording-rules", HUB_ROLE_READ | HUB_AUTH_NOQUERY, H(hub_handle_rules), NULL},
	{PUT, "/v1/projects/{project}/recording-rules", HUB_ROLE_ADMIN | HUB_AUTH_NOQUERY, H(hub_handle_rules), NULL},
	{GET, "/v1/projects/{project}/recording-rules/{id}/series", HUB_ROLE_READ, H(hub_handle_rule_series), NULL},
	{GET | HEAD, "/", HUB_AUTH_OPEN, H(h_ui), NULL},
	{GET | HEAD, "/ui", HUB_AUTH_OPEN, H(h_ui), NULL},
	{GET | HEAD, "/ui/*", HUB_AUTH_OPEN, H(h_ui), NULL},
	{GET, "/v1/projects/{project}/services", HUB_ROLE_READ, H(hub_handle_services), NULL},
	{GET, "/v1/projects/{project}/labels", HUB_ROLE_READ, H(hub_handle_labels), NULL},
	{GET, "/v1/projects/{project}/profiles/series", HUB_ROLE_READ, H(hub_handle_series), NULL},
	{GET, "/v1/projects/{project}/profiles/flamegraph", HUB_ROLE_READ, H(hub_handle_flamegraph), NULL},
	{GET, "/v1/projects/{project}/profiles/table", HUB_ROLE_READ, H(hub_handle_table), NULL},
	{GET, "/v1/projects/{project}/profiles/callgraph", HUB_ROLE_READ, H(hub_handle_callgraph), NULL},
	/* Pyroscope's QuerierService, under hub.pyroscope_prefix (route_path):
	 * Connect's credentials and tenant header, Connect's error shape. */
	{POST, PYRO_SERVICE "{id}", HUB_ROLE_READ | HUB_AUTH_CONNECT, H(hub_handle_pyroscope),
	 PYRO_SERVICE "{method}"},
};
#define NROUTES (sizeof(hub_routes) / sizeof(hub_routes[0]))

/* Per-route counters (all workers): replies by status class, handler time. */
static _Atomic long route_replies[NROUTES][3];
static _Atomic long route_ns[NROUTES];

static void routes_metrics_render(wt_buf *b)
{
	static const char *cls[3] = {"2xx", "4xx", "5xx"};
	char allow[64];

	wt_prom_family(b, "wt_hub_route_responses_total", "counter", "HTTP responses by route and status class.");
	for (size_t i = 0; i < NROUTES; i++) {
		const char *route = hub_routes[i].name ? hub_routes[i].name : hub_routes[i].pattern;

		wt_route_allow_str(hub_routes[i].methods, allow, sizeof(allow));
		for (int c = 0; c < 3; c++) {
			long n = atomic_load(&route_replies[i][c]);
			const char *kv[] = {"method", allow, "route", route, "class", cls[c], NULL};

			if (n)
				wt_prom_labels_i64(b, "wt_hub_route_responses_total", kv, n);
		}
	}
	wt_prom_family(b, "wt_hub_route_seconds_total", "counter", "Time spent handling requests, by route.");
	for (size_t i = 0; i < NROUTES; i++) {
		long ns = atomic_load(&route_ns[i]);
		const char *kv[] = {"method", allow, "route",
				    hub_routes[i].name ? hub_routes[i].name : hub_routes[i].pattern, NULL};

		wt_route_allow_str(hub_routes[i].methods, allow, sizeof(allow));
		if (ns)
			wt_prom_labels_f(b, "wt_hub_route_seconds_total", kv, 6, (double)ns / 1e9);
	}
}

/* 0 when the token has one of the roles in auth on r->project; else the
 * last refusal (roles tried in HUB_ROLE_* order). */
static int allowed(hub_req *r, int auth, wt_err *err)
{
	int rc = WT_EFORBIDDEN;

	for (int role = HUB_ROLE_UPLOAD; role <= HUB_ROLE_DELETE; role <<= 1) {
		if (!(auth & role))
			continue;
		if (!hub_auth_allows(&r->who, r->project, role, err))
			return 0;
		rc = err->code ? err->code : WT_EFORBIDDEN;
	}
	return rc;
}

/* Request memory a handler may take from r->arena. */
#define HUB_REQ_ARENA_MAX ((size_t)256 << 20)

/* The one wrapper every table route goes through: token and role (on the
 * head the guard has already admitted), query parameters, the handler,
 * its error reply in docs/api.md's shape, per-route counters, and the
 * request's memory released at the end. */
static void dispatch(hub_req *r, const wt_route_match *m)
{
	const wt_route *rt = m->route;
	wt_err err = {0, ""};
	int64_t t0 = wt_now_ns(CLOCK_REALTIME);
	int rc = 0;

	r->project = wt_route_param(m, "project");
	r->id = wt_route_param(m, "id");
	r->rest = m->rest;
	if (!r->id && m->rest)
		r->id = m->rest;
	TAILQ_INIT(&r->q);
	wt_arena_init(&r->arena, HUB_REQ_ARENA_MAX);
	if (rt->auth & HUB_AUTH_CONNECT) {
		if (!(rc = connect_auth(r, &err)))
			rc = allowed(r, rt->auth, &err);
	} else if (rt->auth != HUB_AUTH_OPEN) {
		if (hub_req_auth(r, &r->who)) {
			if (rt->auth & HUB_AUTH_UPLOAD)
				atomic_fetch_add(&r->ctx->metrics.uploads_rejected_total, 1);
			goto done; /* replied */
		}
		if (r->project && !hub_project_name_valid(r->project))
			rc = (rt->auth & HUB_AUTH_BADNAME_400)
				     ? wt_err_set(&err, WT_EINVAL, "project: not a valid project name")
				     : wt_err_set(&err, WT_ENOTFOUND, "project: \"%.64s\" is not a valid project name",
						  r->project);
		else if (r->project && (rt->auth & HUB_AUTH_ROLES) && (rc = allowed(r, rt->auth, &err)))
			;
		else if (!(rt->auth & HUB_AUTH_NOQUERY) && wt_http_query(r->req, &r->q))
			rc = wt_err_set(&err, WT_EINVAL, "query string is malformed");
	}
	if (rc && (rt->auth & HUB_AUTH_UPLOAD))
		atomic_fetch_add(&r->ctx->metrics.uploads_rejected_total, 1);
	if (!rc)
		rc = ((hub_handler)rt->fn)(r, &err);
	if (rc && !r->status) {
		if (!err.code)
			err.code = rc;
		if (rt->auth & HUB_AUTH_CONNECT)
			hub_connect_fail(r, &err);
		else
			hub_req_fail(r, &err);
	} else if (rc) {
		wt_warn("route %s: error after the reply was sent: %s", rt->pattern, err.msg);
	}
done:
	if (r->status)
		atomic_fetch_add(&route_replies[m->index][r->status < 300 ? 0 : r->status < 500 ? 1 : 2], 1);
	atomic_fetch_add(&route_ns[m->index], (long)(wt_now_ns(CLOCK_REALTIME) - t0));
	evhttp_clear_headers(&r->q);
	wt_arena_clear(&r->arena);
}

/* The path the route table sees: Pyroscope's service lives only under
 * hub.pyroscope_prefix when one is set, so the prefix is taken off there
 * and the bare service path is not found (NULL). */
static const char *route_path(const hub_ctx *ctx, const char *path)
{
	const char *prefix = ctx->cfg.pyroscope_prefix;
	size_t plen = prefix ? strlen(prefix) : 0, slen = strlen(PYRO_SERVICE);

	if (!plen)
		return path;
	if (!strncmp(path, prefix, plen) && !strncmp(path + plen, PYRO_SERVICE, slen))
		return path + plen;
	if (!strncmp(path, PYRO_SERVICE, slen))
		return NULL;
	return path;
}

static void route_request(struct evhttp_request *req, void *arg)
{
	worker *w = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	unsigned cmd = (unsigned)evhttp_request_get_command(req);
	hub_req r = {.ctx = w->ctx, .ch = w->ch, .req = req, .path = path ? path : "/"};
	wt_route_match m;
	const char *mpath;
	int found;
	wt_err err;

	wt_http_guard_request(w->guard, req);
	atomic_fetch_add(&w->ctx->metrics.requests_total, 1);
	mpath = route_path(w->ctx, r.path);
	found = mpath ? wt_route_find(hub_routes, NROUTES, cmd, mpath, &m) : WT_ROUTE_NO_PATH;
	if (found == WT_ROUTE_FOUND) {
		dispatch(&r, &m);
		return;
	}
	if (found == WT_ROUTE_NO_METHOD) {
		char allow[64];
		wt_route_allow_str(m.allowed, allow, sizeof(allow));
		hub_req_method_not_allowed(&r, allow);
		return;
	}
	wt_err_set(&err, WT_ENOTFOUND, "no endpoint %s %s", "at", r.path);
	hub_req_fail(&r, &err);
}

/* After a request with a large body (an upload, a debug file) the heap
 * pages its decoding used go back to the kernel: glibc keeps each worker
 * thread's arena at its high-water mark otherwise. */
#define HUB_TRIM_AFTER_BYTES ((size_t)1 << 20)

#define HUB_TRIM_AGAIN_S 10

static _Atomic int64_t trim_again_ms; /* 0 = nothing pending */

void hub_memory_trim(void)
{
	malloc_trim(0);
	atomic_store(&trim_again_ms, wt_now_ms(CLOCK_MONOTONIC) + HUB_TRIM_AGAIN_S * 1000);
}

void hub_memory_trim_tick(void)
{
	int64_t t = atomic_load(&trim_again_ms);
	if (t && wt_now_ms(CLOCK_MONOTONIC) >= t && atomic_compare_exchange_strong(&trim_again_ms, &t, 0))
		malloc_trim(0);
}

static void route(struct evhttp_request *req, void *arg)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t body = in ? evbuffer_get_length(in) : 0;

	route_request(req, arg);
	if (body >= HUB_TRIM_AFTER_BYTES)
		hub_memory_trim();
}

static void *worker_main(void *arg)
{
	worker *w = arg;

	event_base_dispatch(w->base);
	return NULL;
}

int hub_server_start(hub_ctx *ctx, hub_server **out, wt_err *err)
{
	hub_server *s = calloc(1, sizeof(*s));
	struct sockaddr_storage sa;
	socklen_t salen;
	wt_listen_addr la;
	int one = 1, i, rc = 0;

	if (!s)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	s->ctx = ctx;
	s->fd = -1;
	if ((rc = wt_listen_parse(ctx->cfg.listen, "hub.listen", 1, &la, err)) ||
	    (rc = wt_listen_sockaddr(&la, &sa, &salen, err)))
		goto fail;
	s->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, (struct sockaddr *)&sa, salen) || listen(s->fd, 1024)) {
		rc = wt_err_set(err, WT_EIO, "cannot listen on %s: %s", ctx->cfg.listen, strerror(errno));
		goto fail;
	}
	wt_budget_init(&ctx->inflight, ctx->cfg.max_inflight);
	atomic_store(&ctx->nconns, 0);
	if (ctx->cfg.max_inflight < ctx->cfg.max_body || ctx->cfg.max_inflight < ctx->cfg.sym_max_file_bytes) {
		rc = wt_err_set(err, WT_EINVAL, "hub.max_inflight (%zu) must be at least hub.max_body and "
				"symbols.max_file_bytes", ctx->cfg.max_inflight);
		goto fail;
	}
	s->n = ctx->cfg.workers;
	s->w = calloc((size_t)s->n, sizeof(worker));
	if (!s->w) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i < s->n; i++) {
		worker *w = &s->w[i];
		w->ctx = ctx;
		w->idx = i;
		w->base = event_base_new();
		w->http = w->base ? evhttp_new(w->base) : NULL;
		w->ch = hub_ch_new(&ctx->chconf);
		if (!w->http || !w->ch) {
			rc = wt_err_set(err, WT_ENOMEM, "worker %d: out of memory", i);
			goto fail;
		}
		/* every handler bounds its own body; debug files may exceed max_body */
		evhttp_set_max_body_size(w->http, (ev_ssize_t)(ctx->cfg.max_body > ctx->cfg.sym_max_file_bytes
							       ? ctx->cfg.max_body : ctx->cfg.sym_max_file_bytes));
		evhttp_set_timeout(w->http, 120);
		evhttp_set_allowed_methods(w->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
					   EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH);
		evhttp_set_gencb(w->http, route, w);
		{
			size_t maxb = ctx->cfg.max_body > ctx->cfg.sym_max_file_bytes ? ctx->cfg.max_body
										       : ctx->cfg.sym_max_file_bytes;
			wt_http_guard_cfg gc = {
				.decide = guard_decide, .arg = w, .budget = &ctx->inflight, .max_body = maxb,
				.nconns = &ctx->nconns, .max_connections = ctx->cfg.max_connections,
				.max_connections_key = "hub.max_connections", .budget_key = "hub.max_inflight",
			};
			if (!(w->guard = wt_http_guard_new(&gc))) {
				rc = wt_err_set(err, WT_ENOMEM, "worker %d: out of memory", i);
				goto fail;
			}
			wt_http_guard_attach(w->guard, w->http);
		}
		if (!evhttp_accept_socket_with_handle(w->http, s->fd)) {
			rc = wt_err_set(err, WT_EIO, "worker %d: cannot accept on %s", i, ctx->cfg.listen);
			goto fail;
		}
	}
	for (i = 0; i < s->n; i++) {
		if (pthread_create(&s->w[i].thr, NULL, worker_main, &s->w[i])) {
			rc = wt_err_set(err, WT_ENOMEM, "cannot start worker thread %d", i);
			goto fail;
		}
		s->w[i].started = 1;
	}
	wt_info("msg=\"listening\" addr=%s workers=%d", ctx->cfg.listen, s->n);
	*out = s;
	return 0;
fail:
	hub_server_stop(s);
	return rc;
}

void hub_server_stop(hub_server *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; s->w && i < s->n; i++)
		if (s->w[i].started)
			event_base_loopbreak(s->w[i].base);
	for (i = 0; s->w && i < s->n; i++) {
		worker *w = &s->w[i];
		if (w->started)
			pthread_join(w->thr, NULL);
		if (w->http)
			evhttp_free(w->http);
		wt_http_guard_free(w->guard); /* after its evhttp */
		if (w->base)
			event_base_free(w->base);
		hub_ch_free(w->ch);
	}
	free(s->w);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}
