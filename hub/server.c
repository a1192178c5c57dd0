/*
 * server.c — worker threads sharing one listening socket, request routing,
 * and the small shared handlers (/healthz, /metrics, auth helper).
 */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "http_guard.h"
#include "http_server.h"
#include "log.h"
#include "http_ui.h"
#include "params.h"
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

static void count_status(hub_ctx *ctx, int status)
{
	if (status < 300)
		atomic_fetch_add(&ctx->metrics.responses_2xx, 1);
	else if (status < 500)
		atomic_fetch_add(&ctx->metrics.responses_4xx, 1);
	else
		atomic_fetch_add(&ctx->metrics.responses_5xx, 1);
}

void hub_req_count(hub_req *r, int status)
{
	count_status(r->ctx, status);
}

void hub_req_json(hub_req *r, int status, json_t *body)
{
	count_status(r->ctx, status);
	wt_http_send_json(r->req, status, body);
}

void hub_req_fail(hub_req *r, const wt_err *err)
{
	int code = err->code ? err->code : WT_EIO;

	count_status(r->ctx, wt_err_http_status(code));
	if (code == WT_EUNAVAIL || code == WT_EIO)
		atomic_fetch_add(&r->ctx->metrics.ch_errors_total, 1);
	if (code == WT_EAUTH)
		evhttp_add_header(evhttp_request_get_output_headers(r->req), "WWW-Authenticate", "Bearer");
	wt_http_send_error(r->req, code, err->msg);
}

int hub_req_auth(hub_req *r, hub_principal *p)
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
	count_status(r->ctx, 200);
	wt_http_send_bytes(r->req, 200, "text/plain; version=0.0.4", b.data, b.len);
	wt_buf_free(&b);
}

static void not_found(hub_req *r)
{
	wt_err err;
	wt_err_set(&err, WT_ENOTFOUND, "no endpoint %s %s", "at", r->path);
	hub_req_fail(r, &err);
}

void hub_req_method_not_allowed(hub_req *r, const char *allowed)
{
	wt_err err;
	count_status(r->ctx, 405);
	evhttp_add_header(evhttp_request_get_output_headers(r->req), "Allow", allowed);
	wt_err_set(&err, WT_EINVAL, "method not allowed on %s (allowed: %s)", r->path, allowed);
	wt_http_send_json(r->req, 405, json_pack("{s:s, s:s}", "error", "method_not_allowed",
						  "detail", err.msg));
}

/* /v1/projects/{p}/profiles/{view} */
static int match_query(const char *path, char *project, size_t pcap, char *view, size_t vcap)
{
	const char *rest = hub_path_project(path, project, pcap);

	if (!rest || strncmp(rest, "/profiles/", 10))
		return 0;
	snprintf(view, vcap, "%s", rest + 10);
	return strlen(rest + 10) < vcap;
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

static void route_request(struct evhttp_request *req, void *arg)
{
	worker *w = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	hub_req r = {w->ctx, w->ch, req, path ? path : "/"};
	char project[256], view[64];

	wt_http_guard_request(w->guard, req);
	atomic_fetch_add(&w->ctx->metrics.requests_total, 1);
	if (!strcmp(r.path, "/healthz")) {
		if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
			{ hub_req_method_not_allowed(&r, "GET"); return; }
		{ hub_handle_healthz(&r); return; }
	}
	if (!strcmp(r.path, "/metrics")) {
		if (cmd != EVHTTP_REQ_GET)
			{ hub_req_method_not_allowed(&r, "GET"); return; }
		{ hub_handle_metrics(&r); return; }
	}
	if (!strcmp(r.path, "/v1/profiles")) {
		if (cmd != EVHTTP_REQ_POST)
			{ hub_req_method_not_allowed(&r, "POST"); return; }
		{ hub_handle_upload(&r); return; }
	}
	if (!strcmp(r.path, "/v1/admin/projects")) {
		if (cmd != EVHTTP_REQ_POST && cmd != EVHTTP_REQ_GET)
			{ hub_req_method_not_allowed(&r, "GET, POST"); return; }
		{ hub_handle_admin_projects(&r); return; }
	}
	if (!strcmp(r.path, "/v1/admin/tokens")) {
		if (cmd != EVHTTP_REQ_POST && cmd != EVHTTP_REQ_GET)
			{ hub_req_method_not_allowed(&r, "GET, POST"); return; }
		{ hub_handle_admin_tokens(&r); return; }
	}
	if (!strncmp(r.path, "/v1/admin/tokens/", 17)) {
		if (cmd != EVHTTP_REQ_DELETE)
			{ hub_req_method_not_allowed(&r, "DELETE"); return; }
		{ hub_handle_admin_token_revoke(&r, r.path + 17); return; }
	}
	if (hub_edges_route(&r)) /* edge → project registrations (http_edges.c) */
		return;
	if (hub_control_route(&r)) /* policy, audit, deletion, worker (http_control.c) */
		return;
	if (hub_debuginfo_route(&r)) /* debug files (http_debuginfo.c) */
		return;
	if (hub_analysis_route(&r)) /* diff, timeline, insights, leaks, issues (http_issues.c) */
		return;
	if (hub_pyroscope_route(&r)) /* Pyroscope's QuerierService (pyroscope_api.c) */
		return;
	if (hub_rules_route(&r)) /* recording rules and their series (recording_rules.c) */
		return;
	/* Explorer UI (static, no token) and its picker endpoints (http_ui.h). */
	if (!strcmp(r.path, "/") || !strcmp(r.path, "/ui") || !strncmp(r.path, "/ui/", 4)) {
		if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
			{ hub_req_method_not_allowed(&r, "GET"); return; }
		{ hub_handle_ui(&r); return; }
	}
	if (hub_match_project_suffix(r.path, "/services", project, sizeof(project)) ||
	    hub_match_project_suffix(r.path, "/labels", project, sizeof(project))) {
		if (cmd != EVHTTP_REQ_GET)
			{ hub_req_method_not_allowed(&r, "GET"); return; }
		if (hub_match_project_suffix(r.path, "/services", project, sizeof(project)))
			hub_handle_services(&r, project);
		else
			hub_handle_labels(&r, project);
		return;
	}
	if (match_query(r.path, project, sizeof(project), view, sizeof(view)) && !strcmp(view, "series")) {
		if (cmd != EVHTTP_REQ_GET)
			{ hub_req_method_not_allowed(&r, "GET"); return; }
		{ hub_handle_series(&r, project); return; }
	}
	if (match_query(r.path, project, sizeof(project), view, sizeof(view))) {
		if (!strcmp(view, "flamegraph") || !strcmp(view, "table") || !strcmp(view, "callgraph")) {
			if (cmd != EVHTTP_REQ_GET)
				{ hub_req_method_not_allowed(&r, "GET"); return; }
			{ hub_handle_query(&r, project, view); return; }
		}
	}
	not_found(&r);
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

static int parse_listen(const char *s, struct sockaddr_in *sa)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	long port;
	char *end;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return WT_EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return WT_EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	if (!host[0] || !strcmp(host, "*") || !strcmp(host, "0.0.0.0"))
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return WT_EINVAL;
	return 0;
}

int hub_server_start(hub_ctx *ctx, hub_server **out, wt_err *err)
{
	hub_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa;
	int one = 1, i, rc = 0;

	if (!s)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	s->ctx = ctx;
	s->fd = -1;
	if (parse_listen(ctx->cfg.listen, &sa)) {
		rc = wt_err_set(err, WT_EINVAL, "hub.listen \"%s\" is not HOST:PORT (IPv4)", ctx->cfg.listen);
		goto fail;
	}
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->fd, 1024)) {
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
