/*
 * server.c — wt-edge's evhttp server: routing, task hand-off between the
 * event loop and workers, /healthz, /metrics and graceful shutdown.
 */
#include "server.h"
#include "clock.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "config_client.h"
#include "ebpf.h"
#include "http_guard.h"
#include "http_route.h"
#include "http_server.h"
#include "log.h"
#include "prom.h"
#include "otlp_recv.h"
#include "repl_client.h"
#include "signals.h"

/* Multipart framing around a max_body profile part. */
#define MULTIPART_SLACK (1u << 20)
#define MAX_HEADERS (64u << 10)
#define HTTP_TIMEOUT_S 60
/* After an upload of at least this many bytes, free heap pages go back to
 * the kernel (decoding a large upload grows every worker's arena by
 * hundreds of MB that glibc would otherwise keep). */
#define EDGE_TRIM_AFTER_BYTES ((uint64_t)1 << 20)

/* Again this long after a large request: RocksDB frees the memtable that
 * took the upload only after its flush, which ends later. */
#define EDGE_TRIM_AGAIN_S 10

static void trim_cb(evutil_socket_t fd, short what, void *arg)
{
	malloc_trim(0);
}

void edge_memory_trim(edge_server *srv, uint64_t request_bytes)
{
	struct timeval later = {EDGE_TRIM_AGAIN_S, 0};

	if (request_bytes < EDGE_TRIM_AFTER_BYTES)
		return;
	malloc_trim(0);
	if (srv->trim_timer)
		event_add(srv->trim_timer, &later); /* re-arming pushes it back: one trim per quiet spell */
}

void edge_reject(edge_server *srv, struct evhttp_request *req, int code, const char *detail)
{
	int i = -code;
	if (i > 0 && i < EDGE_NERRCODES)
		atomic_fetch_add(&srv->m.rejects[i], 1);
	wt_http_send_error(req, code, detail);
}

const edge_project_cfg *edge_upload_auth(edge_server *srv, struct evhttp_request *req)
{
	char tok[512];
	const edge_project_cfg *proj;

	if (wt_http_bearer(req, tok, sizeof(tok)) != 0) {
		edge_reject(srv, req, WT_EAUTH, "missing or malformed Authorization: Bearer <upload token>");
		return NULL;
	}
	if (!(proj = edge_config_auth(srv->cfg, tok, EDGE_ROLE_UPLOAD)))
		edge_reject(srv, req, WT_EAUTH, "the token is not an upload token of any project on this edge");
	return proj;
}

static void routes_metrics_render(wt_buf *b);

static void task_reply_cb(evutil_socket_t fd, short what, void *arg)
{
	edge_task *t = arg;
	edge_server *srv = t->srv;

	/* the reply below is the routed request's: count it under its route */
	srv->route_req = t->route >= 0 ? t->req : NULL;
	srv->route_idx = t->route;
	srv->route_t0 = t->route_t0;

	if (t->err.code) {
		if (t->is_upload)
			wt_info("upload rejected error=%s detail=\"%s\"", wt_err_name(t->err.code), t->err.msg);
		edge_reject(srv, t->req, t->err.code, t->err.msg);
		if (t->reply)
			json_decref(t->reply);
	} else if (t->reply_text) {
		wt_http_send_bytes(t->req, t->status ? t->status : 200, "application/json", t->reply_text,
				   strlen(t->reply_text));
		if (t->reply)
			json_decref(t->reply);
	} else {
		wt_http_send_json(t->req, t->status ? t->status : 200, t->reply);
	}
	if (t->is_upload && !t->err.code) {
		if (t->fmt >= 0 && t->fmt < EDGE_NFORMATS)
			atomic_fetch_add(&srv->m.uploads[t->fmt], 1);
		atomic_fetch_add(&srv->m.upload_bytes, t->bytes);
		atomic_fetch_add(&srv->m.upload_samples, t->samples);
	}
	srv->route_req = NULL;
	free(t->reply_text);
	if (t->cleanup)
		t->cleanup(t);
	free(t->commit.raw);
	free(t->commit.rolluplog);
	edge_commit_ops_free(&t->commit);
	event_free(t->ev);
	{
		uint64_t big = t->bytes;
		free(t);
		srv->pending--;
		edge_memory_trim(srv, big);
	}
}

edge_task *edge_task_new(edge_server *srv, struct evhttp_request *req)
{
	edge_task *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->srv = srv;
	t->req = req;
	t->fmt = -1;
	t->route = srv->route_req && srv->route_req == req ? srv->route_idx : -1;
	t->route_t0 = srv->route_t0;
	t->ev = event_new(srv->base, -1, 0, task_reply_cb, t);
	if (!t->ev) {
		free(t);
		return NULL;
	}
	srv->pending++;
	return t;
}

void edge_task_finish(edge_task *t)
{
	event_active(t->ev, 0, 1);
}

static void task_run(void *arg)
{
	edge_task *t = arg;
	t->work(t);
}

void edge_task_start(edge_task *t)
{
	/* bound queued work: each queued upload holds its body in memory */
	size_t max_queued = (size_t)t->srv->cfg->workers * 64;
	if (edge_pool_submit(t->srv->pool, task_run, t, max_queued) != 0) {
		atomic_fetch_add(&t->srv->m.busy, 1);
		wt_err_set(&t->err, WT_EUNAVAIL, "the edge is busy (worker queue full); retry later");
		edge_task_finish(t);
	}
}

/* ---- /healthz, /metrics --------------------------------------------------- */

static void handle_healthz(edge_server *srv, struct evhttp_request *req)
{
	json_t *o = json_object();
	edge_buffer_stats st;
	edge_buffer_stats_get(srv->store, &st);
	json_object_set_new(o, "status", json_string(srv->shutting_down ? "stopping" : "ok"));
	json_object_set_new(o, "id", json_string(srv->cfg->id));
	json_object_set_new(o, "last_seq", json_integer((json_int_t)st.last_seq));
	json_object_set_new(o, "uptime_s", json_integer((wt_now_ns(CLOCK_REALTIME) - srv->started_ns) / 1000000000));
	wt_http_send_json(req, srv->shutting_down ? 503 : 200, o);
}

static void handle_metrics(edge_server *srv, struct evhttp_request *req)
{
	wt_buf b = WT_BUF_INIT;
	edge_buffer_stats st;
	edge_buffer_stats_get(srv->store, &st);

	wt_prom_family(&b, "wt_edge_uploads_total", "counter",
		       "Uploads accepted (durably stored), by detected format.");
	for (int f = 0; f < EDGE_NFORMATS; f++)
		wt_prom_u64(&b, "wt_edge_uploads_total", "format", wt_format_name((wt_format)f),
			    (uint64_t)atomic_load(&srv->m.uploads[f]));
	wt_prom_counter(&b, "wt_edge_upload_bytes_total", "Bytes of accepted uploads as received.",
			(uint64_t)atomic_load(&srv->m.upload_bytes));
	wt_prom_counter(&b, "wt_edge_upload_samples_total", "Distinct samples in accepted uploads.",
			(uint64_t)atomic_load(&srv->m.upload_samples));
	wt_prom_family(&b, "wt_edge_rejects_total", "counter", "Rejected requests by reason.");
	for (int i = 1; i < EDGE_NERRCODES; i++)
		wt_prom_u64(&b, "wt_edge_rejects_total", "reason", wt_err_name(-i),
			    (uint64_t)atomic_load(&srv->m.rejects[i]));
	wt_prom_counter(&b, "wt_edge_busy_total", "Requests answered 503 because the worker queue was full.",
			(uint64_t)atomic_load(&srv->m.busy));
	wt_prom_gauge(&b, "wt_edge_inflight_bytes",
		      "Request bytes held by uploads in flight (bounded by limits.max_inflight_mb).",
		      (int64_t)atomic_load(&srv->inflight.used));
	wt_prom_counter(&b, "wt_edge_inflight_refused_total", "Requests refused because the in-flight budget was full.",
			(uint64_t)atomic_load(&srv->inflight.refused));
	wt_prom_counter(&b, "wt_edge_connections_refused_total", "Connections closed at accept (edge.max_connections).",
			(uint64_t)atomic_load(&srv->m.conns_refused));
	wt_prom_gauge(&b, "wt_edge_connections", "Open client connections (HTTP and OTLP).", (int64_t)srv->nconns);
	wt_prom_counter(&b, "wt_edge_queries_total", "Local queries served.", (uint64_t)atomic_load(&srv->m.queries));
	wt_prom_gauge(&b, "wt_edge_buffer_bytes", "On-disk size of the RocksDB buffer (SST + memtables).",
		      (int64_t)st.disk_bytes);
	wt_prom_gauge(&b, "wt_edge_buffer_raw_bytes", "Bytes of raw originals in the buffer.", (int64_t)st.raw_bytes);
	wt_prom_gauge(&b, "wt_edge_last_seq", "Sequence number of the last committed upload.", (int64_t)st.last_seq);
	wt_prom_gauge(&b, "wt_edge_unreplicated_uploads", "Committed uploads the hub has not acknowledged.",
		      (int64_t)st.unreplicated);
	double age = st.oldest_unreplicated_ns ? (double)(wt_now_ns(CLOCK_REALTIME) - st.oldest_unreplicated_ns) / 1e9 : 0;
	wt_prom_gauge_f(&b, "wt_edge_oldest_unreplicated_age_seconds", "Age of the oldest upload not yet replicated.",
			3, age < 0 ? 0 : age);
	wt_prom_counter(&b, "wt_edge_raw_dropped_total", "Raw originals dropped because the disk quota was reached.",
			(uint64_t)st.raw_dropped);
	wt_prom_counter(&b, "wt_edge_raw_dropped_bytes_total", "Bytes of raw originals dropped by the disk quota.",
			(uint64_t)st.raw_dropped_bytes);
	wt_prom_gauge(&b, "wt_edge_over_quota", "1 when the disk quota is exceeded and nothing droppable is left.",
		      (int64_t)st.over_quota);
	wt_prom_gauge(&b, "wt_edge_disk_full",
		      "1 while edge.data_dir has less than retention.min_free_mb free (uploads and sampler batches "
		      "refused).", (int64_t)st.disk_full);
	wt_prom_gauge(&b, "wt_edge_disk_free_bytes", "Free bytes in edge.data_dir at the last commit.",
		      (int64_t)st.disk_free);
	wt_prom_counter(&b, "wt_edge_disk_full_refused_total",
			"Uploads and sampler batches refused because the disk was full (nothing of them stored).",
			(uint64_t)st.disk_full_refused);
	wt_prom_counter(&b, "wt_edge_commit_groups_total", "Synced group commits.", (uint64_t)st.commit_groups);
	wt_prom_counter(&b, "wt_edge_commit_uploads_total", "Uploads written by group commits.",
			(uint64_t)st.commit_items);
	routes_metrics_render(&b);
	edge_repl_metrics(srv->repl, srv->store, &st, &b);
	edge_ebpf_metrics(srv->ebpf, &b);
	edge_config_client_metrics(NULL, &b);
	wt_prom_counter(&b, "wt_edge_commit_errors_total", "Group commits that failed (uploads answered 500).",
			(uint64_t)st.commit_errors);
	if (b.oom) {
		wt_buf_free(&b);
		wt_http_send_error(req, WT_ENOMEM, "out of memory rendering metrics");
		return;
	}
	wt_http_send_bytes(req, 200, "text/plain; version=0.0.4", b.data, b.len);
	wt_buf_free(&b);
}

/* ---- admission on the request head (common/http_guard.c) ------------------------ */

/* An upload must carry an upload token before its body is read; other
 * endpoints take no body beyond WT_HTTP_GUARD_SMALL_BODY. */
static int guard_decide(void *arg, const wt_http_head *h, wt_err *err)
{
	edge_server *srv = arg;
	const char *a = h->authorization;
	char tok[512];
	size_t n;

	if (strcmp(h->method, "POST") || (strcmp(h->path, "/v1/profiles") && strcmp(h->path, "/ingest") &&
					  strcmp(h->path, "/v1development/profiles"))) {
		if (h->body_max > WT_HTTP_GUARD_SMALL_BODY)
			return wt_err_set(err, WT_ELIMIT, "%s %.200s takes no request body over %u bytes",
					  h->method, h->path, WT_HTTP_GUARD_SMALL_BODY);
		return 0;
	}
	if (strncasecmp(a, "Bearer", 6) || (a[6] != ' ' && a[6] != '\t')) {
		atomic_fetch_add(&srv->m.rejects[-WT_EAUTH], 1);
		return wt_err_set(err, WT_EAUTH, "missing or malformed Authorization: Bearer <upload token>");
	}
	for (a += 6; *a == ' ' || *a == '\t'; a++)
		;
	n = strlen(a);
	if (n == 0 || n >= sizeof(tok)) {
		atomic_fetch_add(&srv->m.rejects[-WT_EAUTH], 1);
		return wt_err_set(err, WT_EAUTH, "missing or malformed Authorization: Bearer <upload token>");
	}
	memcpy(tok, a, n + 1);
	if (!edge_config_auth(srv->cfg, tok, EDGE_ROLE_UPLOAD)) {
		atomic_fetch_add(&srv->m.rejects[-WT_EAUTH], 1);
		return wt_err_set(err, WT_EAUTH, "the token is not an upload token of any project on this edge");
	}
	return 0;
}

/* ---- routing ---------------------------------------------------------------- */

/* A route handler of the edge; m holds the path's captures. */
typedef void (*edge_handler)(edge_server *srv, struct evhttp_request *req, const char *project);

static void r_healthz(edge_server *srv, struct evhttp_request *req, const char *project)
{
	(void)project;
	handle_healthz(srv, req);
}

static void r_metrics(edge_server *srv, struct evhttp_request *req, const char *project)
{
	(void)project;
	handle_metrics(srv, req);
}

static void r_upload(edge_server *srv, struct evhttp_request *req, const char *project)
{
	(void)project;
	edge_ingest_handle(srv, req, 0);
}

static void r_upload_pyroscope(edge_server *srv, struct evhttp_request *req, const char *project)
{
	(void)project;
	edge_ingest_handle(srv, req, 1);
}

static void r_services(edge_server *srv, struct evhttp_request *req, const char *project)
{
	edge_query_handle(srv, req, project, "services");
}

static void r_table(edge_server *srv, struct evhttp_request *req, const char *project)
{
	edge_query_handle(srv, req, project, "table");
}

static void r_flamegraph(edge_server *srv, struct evhttp_request *req, const char *project)
{
	edge_query_handle(srv, req, project, "flamegraph");
}

#define H(fn) ((void (*)(void))(fn))
#define GET (EVHTTP_REQ_GET | EVHTTP_REQ_HEAD)

/* The edge's endpoints (docs/api.md "Edge"). Tokens are checked by the
 * handlers (upload and read tokens of edge.projects) and, for large
 * bodies, by guard_decide on the request head. */
static const wt_route edge_routes[] = {
	{GET, "/healthz", 0, H(r_healthz), NULL},
	{GET, "/metrics", 0, H(r_metrics), NULL},
	{EVHTTP_REQ_POST, "/v1/profiles", 0, H(r_upload), NULL},
	{EVHTTP_REQ_POST, "/ingest", 0, H(r_upload_pyroscope), NULL},
	{GET, "/v1/projects/{project}/services", 0, H(r_services), NULL},
	{GET, "/v1/projects/{project}/profiles/table", 0, H(r_table), NULL},
	{GET, "/v1/projects/{project}/profiles/flamegraph", 0, H(r_flamegraph), NULL},
};

#define NROUTES (sizeof(edge_routes) / sizeof(edge_routes[0]))

/* Per-route counters: replies by status class and the time from the
 * router taking the request to its reply going out (a worker's replies
 * included). Loop thread only; /metrics reads them there too. */
static uint64_t route_replies[NROUTES][3];
static uint64_t route_ns[NROUTES];

/* wt_http_send_* observer (common/http_server.h) on the loop thread: the
 * reply of the routed request in flight is counted once under its route. */
static void route_reply_seen(struct evhttp_request *req, int status, void *arg)
{
	edge_server *srv = arg;
	int i = srv->route_idx;

	if (!srv->route_req || req != srv->route_req || i < 0 || (size_t)i >= NROUTES)
		return;
	route_replies[i][status < 300 ? 0 : status < 500 ? 1 : 2]++;
	route_ns[i] += (uint64_t)(wt_now_ns(CLOCK_MONOTONIC) - srv->route_t0);
	srv->route_req = NULL;
}

static void routes_metrics_render(wt_buf *b)
{
	static const char *const cls[3] = {"2xx", "4xx", "5xx"};
	char allow[64];

	wt_prom_family(b, "wt_edge_route_responses_total", "counter",
		       "HTTP responses by route and status class, counted when sent.");
	for (size_t i = 0; i < NROUTES; i++) {
		wt_route_allow_str(edge_routes[i].methods, allow, sizeof(allow));
		for (int c = 0; c < 3; c++) {
			const char *kv[] = {"method", allow, "route", edge_routes[i].pattern, "class", cls[c], NULL};
			if (route_replies[i][c])
				wt_prom_labels_u64(b, "wt_edge_route_responses_total", kv, route_replies[i][c]);
		}
	}
	wt_prom_family(b, "wt_edge_route_seconds_total", "counter",
		       "Time from taking a request to sending its reply, by route.");
	for (size_t i = 0; i < NROUTES; i++) {
		const char *kv[] = {"method", allow, "route", edge_routes[i].pattern, NULL};
		wt_route_allow_str(edge_routes[i].methods, allow, sizeof(allow));
		if (route_ns[i])
			wt_prom_labels_f(b, "wt_edge_route_seconds_total", kv, 6, (double)route_ns[i] / 1e9);
	}
}

/* The one entry of every request: shutdown, route lookup, errors in
 * docs/api.md's shape, {project} percent-decoded for the handler. */
static void router(struct evhttp_request *req, void *arg)
{
	edge_server *srv = arg;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	unsigned cmd = (unsigned)evhttp_request_get_command(req);
	wt_route_match m;
	const char *proj;
	char *dec = NULL;
	int found;

	wt_http_guard_request(srv->guard, req);
	if (!path) {
		edge_reject(srv, req, WT_EINVAL, "request URI has no path");
		return;
	}
	if (srv->shutting_down) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
		wt_http_send_error(req, WT_EUNAVAIL, "the edge is shutting down");
		return;
	}
	found = wt_route_find(edge_routes, sizeof(edge_routes) / sizeof(edge_routes[0]), cmd, path, &m);
	if (found == WT_ROUTE_NO_METHOD && (m.allowed & EVHTTP_REQ_POST)) {
		wt_http_send_error(req, WT_EINVAL, "use POST to upload profiles");
		return;
	}
	if (found != WT_ROUTE_FOUND) {
		wt_http_send_error(req, WT_ENOTFOUND, "no such endpoint on the edge");
		return;
	}
	/* from here on the reply is the route's, sent now or by a task
	 * (edge_task_new carries the route along) */
	srv->route_req = req;
	srv->route_idx = (int)m.index;
	srv->route_t0 = wt_now_ns(CLOCK_MONOTONIC);
	proj = wt_route_param(&m, "project");
	if (proj && !(dec = evhttp_uridecode(proj, 0, NULL)))
		wt_http_send_error(req, WT_ENOTFOUND, "no such endpoint on the edge");
	else
		((edge_handler)m.route->fn)(srv, req, dec);
	srv->route_req = NULL;
	free(dec);
}

/* ---- lifecycle ------------------------------------------------------------------ */

static void drain_cb(evutil_socket_t fd, short what, void *arg)
{
	edge_server *srv = arg;
	if (srv->pending == 0)
		event_base_loopbreak(srv->base);
}

static void shut_down(edge_server *srv, int sig)
{
	struct timeval tv = {0, 20000};
	if (srv->shutting_down)
		return;
	srv->shutting_down = 1;
	wt_info("signal %d: stop accepting, finishing %d in-flight requests", (int)sig, srv->pending);
	if (srv->sock) {
		evhttp_del_accept_socket(srv->http, srv->sock);
		srv->sock = NULL;
	}
	edge_otlp_stop_accepting(srv);
	srv->drain_timer = event_new(srv->base, -1, EV_PERSIST, drain_cb, srv);
	if (srv->drain_timer)
		event_add(srv->drain_timer, &tv);
	else
		event_base_loopbreak(srv->base);
}

/* The signalfd is readable: SIGTERM/SIGINT drain and stop, SIGHUP reloads
 * the eBPF sampler's configuration (common/signals.h). */
static void signals_cb(evutil_socket_t fd, short what, void *arg)
{
	edge_server *srv = arg;
	int sig;

	while ((sig = wt_signals_wait(srv->signals, 0))) {
		if (sig == SIGHUP) {
			wt_info("signal %d: reloading the ebpf section", sig);
			edge_ebpf_reload(srv->ebpf);
		} else {
			shut_down(srv, sig);
		}
	}
}

int edge_server_init(edge_server *srv, const edge_config *cfg, edge_buffer *store, struct wt_signals *signals,
		     wt_err *err)
{
	static int threads_ready;
	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->store = store;
	srv->started_ns = wt_now_ns(CLOCK_REALTIME);
	wt_budget_init(&srv->inflight, cfg->max_inflight);
	if (!threads_ready) {
		if (evthread_use_pthreads() != 0)
			return wt_err_set(err, WT_EIO, "libevent: pthreads support unavailable");
		threads_ready = 1;
	}
	srv->base = event_base_new();
	if (!srv->base)
		return wt_err_set(err, WT_EIO, "libevent: cannot create the event base");
	srv->http = evhttp_new(srv->base);
	if (!srv->http)
		return wt_err_set(err, WT_EIO, "libevent: cannot create the HTTP server");
	evhttp_set_max_body_size(srv->http, (ev_ssize_t)(cfg->max_body + MULTIPART_SLACK));
	evhttp_set_max_headers_size(srv->http, MAX_HEADERS);
	evhttp_set_timeout(srv->http, HTTP_TIMEOUT_S);
	evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(srv->http, router, srv);
	{
		wt_http_guard_cfg gc = {
			.decide = guard_decide, .arg = srv, .budget = &srv->inflight,
			.max_body = cfg->max_body + MULTIPART_SLACK, .nconns = &srv->nconns,
			.max_connections = cfg->max_connections,
			.max_connections_key = "edge.max_connections", .budget_key = "limits.max_inflight_mb",
		};
		if (!(srv->guard = wt_http_guard_new(&gc)))
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		wt_http_guard_attach(srv->guard, srv->http);
	}
	srv->sock = evhttp_bind_socket_with_handle(srv->http, cfg->listen_host, (ev_uint16_t)cfg->listen_port);
	if (!srv->sock)
		return wt_err_set(err, WT_EIO, "cannot listen on %s:%d", cfg->listen_host, cfg->listen_port);
	srv->trim_timer = event_new(srv->base, -1, 0, trim_cb, srv);
	srv->pool = edge_pool_new(cfg->workers);
	if (!srv->pool)
		return wt_err_set(err, WT_ENOMEM, "cannot start %d worker threads", cfg->workers);
	srv->signals = signals;
	srv->sig_ev = event_new(srv->base, signals->fd, EV_READ | EV_PERSIST, signals_cb, srv);
	if (!srv->sig_ev || event_add(srv->sig_ev, NULL))
		return wt_err_set(err, WT_EIO, "cannot watch the signal fd");
	if (edge_otlp_init(srv, err) != 0)
		return err->code ? err->code : WT_EIO;
	wt_info("listening addr=%s:%d id=%s workers=%d", cfg->listen_host, cfg->listen_port, cfg->id, cfg->workers);
	return 0;
}

int edge_server_run(edge_server *srv)
{
	wt_http_set_reply_observer(route_reply_seen, srv); /* this thread runs the loop */
	return event_base_dispatch(srv->base) < 0 ? WT_EIO : 0;
}

void edge_server_free(edge_server *srv)
{
	/* workers first: they may still reference tasks whose events belong to base */
	if (srv->pool)
		edge_pool_free(srv->pool);
	edge_otlp_free(srv);
	if (srv->http)
		evhttp_free(srv->http);
	wt_http_guard_free(srv->guard); /* after every evhttp it guards */
	if (srv->drain_timer)
		event_free(srv->drain_timer);
	if (srv->trim_timer)
		event_free(srv->trim_timer);
	if (srv->sig_ev)
		event_free(srv->sig_ev);
	if (srv->base)
		event_base_free(srv->base);
	memset(srv, 0, sizeof(*srv));
}
