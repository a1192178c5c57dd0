/*
 * server.h — the edge's HTTP server (libevent evhttp): routing, the task
 * object that carries a request from the event loop to a worker thread (and
 * through the group commit) and back, metrics, health and shutdown.
 *
 * Threads: the event loop thread owns every evhttp_request. A worker fills
 * task->reply (or task->err) and calls edge_task_finish(), which activates
 * the task's event; the reply is sent on the loop thread.
 */
#ifndef EDGE_SERVER_H
#define EDGE_SERVER_H

#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "budget.h"
#include "config.h"
#include "err.h"
#include "format.h"
#include "pool.h"
#include "buffer.h"

#define EDGE_NFORMATS 8
#define EDGE_NERRCODES 10

typedef struct edge_metrics {
	_Atomic uint64_t uploads[EDGE_NFORMATS]; /* by detected wt_format */
	_Atomic uint64_t upload_bytes;
	_Atomic uint64_t upload_samples;
	_Atomic uint64_t rejects[EDGE_NERRCODES]; /* by -WT_E* code */
	_Atomic uint64_t queries;
	_Atomic uint64_t busy;                   /* 503: worker queue full or in-flight budget spent */
	_Atomic uint64_t conns_refused;          /* closed at accept: edge.max_connections */
} edge_metrics;

struct edge_repl;

typedef struct edge_server {
	const edge_config *cfg;
	edge_buffer *store;
	struct edge_repl *repl; /* NULL when replication is off; set by main */
	struct edge_otlp *otlp; /* OTLP receivers (otlp_recv.c); NULL when off */
	struct edge_ebpf *ebpf; /* eBPF sampler (ebpf_sampler.c); set by main, may be NULL */
	edge_pool *pool;
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *sock;
	struct wt_signals *signals; /* main's signalfd (common/signals.h) */
	struct event *sig_ev, *drain_timer;
	struct event *trim_timer; /* malloc_trim again after a large request (server.c) */
	int pending;         /* tasks in flight (loop thread only) */
	_Atomic int nconns;  /* open client connections, HTTP + OTLP */
	struct wt_http_guard *guard; /* admits HTTP requests on their headers (server.c) */
	wt_budget inflight;  /* request bodies held (limits.max_inflight_mb) */
	int shutting_down;
	int64_t started_ns;
	edge_metrics m;
	/* the routed request whose reply the next wt_http_send_* on the loop
	 * thread is (server.c: its router, then task_reply_cb), for the
	 * per-route counters; route_req NULL = none */
	struct evhttp_request *route_req;
	int route_idx;
	int64_t route_t0;
} edge_server;

typedef struct edge_task edge_task;
struct edge_task {
	edge_server *srv;
	struct evhttp_request *req;
	struct event *ev;
	void (*work)(edge_task *t);     /* runs on a worker */
	void (*cleanup)(edge_task *t);  /* frees priv; loop thread */
	void *priv;
	int is_upload;
	/* reply */
	int status;
	json_t *reply;                  /* JSON body (owned) */
	char *reply_text;               /* or preformatted JSON text (owned) */
	wt_err err;                     /* err.code != 0 → error reply */
	int fmt;                        /* detected format for metrics, -1 = n/a */
	uint64_t bytes, samples;
	edge_commit commit;
	int route;                      /* edge_routes row of req (-1: none), for the per-route counters */
	int64_t route_t0;               /* when the router took req (CLOCK_MONOTONIC ns) */
};

/* Create a task for req; NULL on OOM. */
edge_task *edge_task_new(edge_server *srv, struct evhttp_request *req);
/* Queue t->work on the pool; on failure reply 503 and free t. */
void edge_task_start(edge_task *t);
/* Worker/committer side: the reply is ready. Thread-safe. */
void edge_task_finish(edge_task *t);

/* Give free heap memory back to the kernel when request_bytes (the body
 * just finished with) was large; costs a walk over the malloc arenas. */
struct edge_server;
void edge_memory_trim(struct edge_server *srv, uint64_t request_bytes);

/* Count a rejected request and send the JSON error (loop thread). */
void edge_reject(edge_server *srv, struct evhttp_request *req, int code, const char *detail);

/* The project whose upload token the request's Authorization header
 * carries, or NULL after rejecting it (401) — the edge's HTTP upload
 * endpoints (http_ingest.c, otlp_recv.c). Loop thread. */
const edge_project_cfg *edge_upload_auth(edge_server *srv, struct evhttp_request *req);

int edge_server_init(edge_server *srv, const edge_config *cfg, edge_buffer *store, struct wt_signals *signals,
		     wt_err *err);
/* Run the loop until SIGTERM/SIGINT and the in-flight tasks are done. */
int edge_server_run(edge_server *srv);
void edge_server_free(edge_server *srv);

/* Handlers (http_ingest.c, query.c). */
void edge_ingest_handle(edge_server *srv, struct evhttp_request *req, int pyroscope);
void edge_query_handle(edge_server *srv, struct evhttp_request *req, const char *project, const char *view);

/* Build the commit of one profile decoded outside /v1/profiles (OTLP):
 * raw record (raw/rawlen), rollup and stacks, as an upload of service to
 * project. Worker thread; the caller frees c's buffers. See http_ingest.c. */
struct wt_profile;
int edge_ingest_prepare(edge_server *srv, edge_commit *c, const char *project, const char *service,
			int64_t received_ns, const char *endpoint, const uint8_t *raw, size_t rawlen,
			struct wt_profile *p, wt_err *err);
/* The same with the raw original's format named (eBPF: WT_FMT_PPROF). */
int edge_ingest_prepare_fmt(edge_server *srv, edge_commit *c, const char *project, const char *service,
			    int64_t received_ns, const char *endpoint, wt_format fmt, const uint8_t *raw,
			    size_t rawlen, struct wt_profile *p, wt_err *err);

#endif
