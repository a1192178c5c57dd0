/*
 * hub.h — the hub process context shared by all HTTP workers, and the
 * per-request handler signature. Workers (server.c) each own an event base,
 * an evhttp and a ClickHouse client; everything in hub_ctx is read-only
 * after start or internally synchronised.
 */
#ifndef HUB_HUB_H
#define HUB_HUB_H

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdatomic.h>

#include "arena.h"
#include "auth.h"
#include "budget.h"
#include "ch_client.h"
#include "config.h"
#include "metrics.h"
#include "objstore.h"
#include "stackcache.h"
#include "viewcache.h"
#include "stacklru.h"
#include "ch_health.h"
#include "symbols.h"

typedef struct hub_ctx {
	hub_config cfg;
	hub_ch_conf chconf;
	hub_ch_health store;
	hub_objstore *os;
	hub_auth *auth;
	hub_stackcache *stacks;
	hub_stacklru *frames;        /* stack frames for the aggregate query path */
	hub_viewcache *views;        /* rendered views (viewcache.h); NULL = off */
	hub_metrics metrics;
	struct hub_regress *regress; /* regression detector (regress.h); NULL when not started */
	hub_symbols *syms;           /* debug files and the query-time symbolizer */
	wt_budget inflight;          /* request bodies held (hub.max_inflight; server.c) */
	_Atomic int nconns;          /* open HTTP connections over all workers */
} hub_ctx;

/* What a handler gets: the shared context and this worker's ClickHouse
 * client (blocking calls are fine: each worker serves its own connections).
 * The route wrapper (server.c, docs/architecture.md "Request path") fills
 * the rest before a table handler runs and releases it afterwards. */
typedef struct hub_req {
	hub_ctx *ctx;
	hub_ch *ch;
	struct evhttp_request *req;
	const char *path;
	const char *project;     /* the route's {project}, validated; NULL when none */
	const char *id;          /* the route's {id}, else its rest wildcard; NULL when neither */
	const char *rest;        /* what the route's rest wildcard matched; NULL when none */
	hub_principal who;       /* the token's principal on routes that need one */
	struct evkeyvalq q;      /* query parameters (routes that need a token) */
	wt_arena arena;          /* request memory, cleared when the reply is sent */
	int status;              /* status of the reply sent; 0 until then */
} hub_req;

/* A route handler: send the reply (hub_req_json, hub_req_query_json, ...)
 * and return 0, or return a negative WT_E* code with *err set and send
 * nothing: the wrapper replies with docs/api.md's {"error","detail"}. */
typedef int (*hub_handler)(hub_req *r, wt_err *err);

/* wt_route.auth of the hub's route table: 0 = the wrapper checks no token
 * (open endpoints: /healthz, /metrics, the explorer's files); otherwise
 * a bearer token is required and, when the route has a {project}, one of
 * the HUB_ROLE_* bits set must be allowed on it. HUB_AUTH_TOKEN alone:
 * any valid token (the handler decides). HUB_AUTH_BADNAME_400: an invalid
 * {project} is 400 (the control endpoints' answer) instead of 404.
 * HUB_AUTH_NOQUERY: the wrapper leaves the query string alone (endpoints
 * that take none answer a malformed one as they always did). */
#define HUB_AUTH_OPEN 0
#define HUB_AUTH_TOKEN 0x100
#define HUB_AUTH_BADNAME_400 0x200
#define HUB_AUTH_NOQUERY 0x400
/* HUB_AUTH_CONNECT: the Connect protocol's routes (Pyroscope's query API):
 * the token may also come as basic auth's password and the project from
 * the X-Scope-OrgID header (else the token's own); errors are answered in
 * Connect's {"code","message"} shape (connect.h). */
#define HUB_AUTH_CONNECT 0x800
/* HUB_AUTH_UPLOAD: POST /v1/profiles: what the wrapper refuses (token,
 * query string) also counts in wt_hub_uploads_rejected_total, as the
 * handler's own refusals do. */
#define HUB_AUTH_UPLOAD 0x1000
#define HUB_AUTH_ROLES (HUB_ROLE_UPLOAD | HUB_ROLE_READ | HUB_ROLE_ADMIN | HUB_ROLE_DELETE)

/* Handlers (http_*.c). */
int hub_handle_upload(hub_req *r, wt_err *err);
/* GET /v1/projects/{project}/profiles/{flamegraph|table|callgraph} (http_query.c) */
int hub_handle_flamegraph(hub_req *r, wt_err *err);
int hub_handle_table(hub_req *r, wt_err *err);
int hub_handle_callgraph(hub_req *r, wt_err *err);
int hub_handle_admin_projects(hub_req *r, wt_err *err);
int hub_handle_admin_tokens(hub_req *r, wt_err *err);
int hub_handle_admin_token_revoke(hub_req *r, wt_err *err);
void hub_handle_healthz(hub_req *r);
void hub_handle_metrics(hub_req *r);
/* Debug files (http_debuginfo.c): /v1/projects/{p}/debuginfo (list) and
 * /v1/projects/{p}/debuginfo/{build id} (GET, PUT, DELETE). */
int hub_handle_debuginfo_list(hub_req *r, wt_err *err);
int hub_handle_debuginfo(hub_req *r, wt_err *err);

/* Edge → project registrations under /v1/admin/edges (http_edges.c). */
int hub_handle_edges_get(hub_req *r, wt_err *err);
int hub_handle_edge_allow(hub_req *r, wt_err *err);
int hub_handle_edge_disallow(hub_req *r, wt_err *err);

/* Control plane (http_policy.c, http_audit.c, http_delete.c,
 * http_worker.c; routes in server.c's table). */
int hub_handle_policy(hub_req *r, wt_err *err);
int hub_handle_audit(hub_req *r, wt_err *err);
int hub_handle_delete_profiles(hub_req *r, wt_err *err);
int hub_handle_deletion(hub_req *r, wt_err *err);
int hub_handle_worker_run(hub_req *r, wt_err *err);

/* Analysis (docs/api.md "### Analysis"): profiles/{diff,timeline,insights,leaks}, issues,
 * POST /v1/admin/analysis/run (routes in server.c's table). */
int hub_handle_issues(hub_req *r, wt_err *err);
int hub_handle_issue_patch(hub_req *r, wt_err *err);
int hub_handle_diff(hub_req *r, wt_err *err);
int hub_handle_timeline(hub_req *r, wt_err *err);
int hub_handle_insights(hub_req *r, wt_err *err);
int hub_handle_leaks(hub_req *r, wt_err *err);
int hub_handle_analysis_run(hub_req *r, wt_err *err);

/* Pyroscope's query API (pyroscope_api.c): POST
 * [hub.pyroscope_prefix]/querier.v1.QuerierService/{id = Method}, a
 * HUB_AUTH_CONNECT row of server.c's table. */
#define PYRO_SERVICE "/querier.v1.QuerierService/"
int hub_handle_pyroscope(hub_req *r, wt_err *err);

/* Count a reply of status sent by other means than the helpers here. */
void hub_req_count(hub_req *r, int status);
/* Send err as the JSON error reply and count it. */
void hub_req_fail(hub_req *r, const wt_err *err);
/* 405 with an Allow header and a JSON error naming the allowed methods. */
void hub_req_method_not_allowed(hub_req *r, const char *allowed);
/* Send a JSON reply (takes ownership of body) and count it. */
void hub_req_json(hub_req *r, int status, json_t *body);
/* The 200 reply of a query endpoint: counts the query and its time since
 * t0 (wt_now_ns(CLOCK_REALTIME), common/clock.h) in the hub's metrics and sends out (owned). out NULL:
 * WT_ENOMEM with *err set, nothing sent. */
int hub_req_query_json(hub_req *r, int64_t t0, json_t *out, wt_err *err);
/* The same for a reply already rendered as JSON text (text[0..len),
 * borrowed): the view cache's stored views. */
void hub_req_query_text(hub_req *r, int64_t t0, const char *text, size_t len);
/* Give j to r's arena (json_decref when the request ends). Returns j; NULL
 * when j is NULL or the arena is out of memory (j is then released). */
json_t *hub_req_own_json(hub_req *r, json_t *j);

#endif
