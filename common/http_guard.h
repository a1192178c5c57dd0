/*
 * http_guard.h — admission of HTTP/1.1 requests on their headers, before
 * libevent's evhttp reads (and keeps) the body.
 *
 * evhttp 2.1 reads a whole request body into memory before any callback
 * runs, so a client without a token could make a daemon hold max_body bytes
 * per connection. The guard sits between the socket and evhttp (a
 * bufferevent filter per connection, installed with evhttp_set_bevcb): it
 * holds back each request's head until it is complete, asks the daemon's
 * decision function about it (token, path, size), and only then lets the
 * head and body through. A refused request is answered by the guard itself
 * ({"error","detail"} JSON, Connection: close) and everything the client
 * still sends on that connection is read and dropped.
 *
 * Admitted bodies reserve their size (Content-Length, or max_body when
 * chunked) in a shared wt_budget; over it the guard answers 503 with
 * Retry-After. The reservation is given back when the request's response
 * has been sent (wt_http_guard_request links the two) or the connection
 * closes. Open connections are counted in a shared counter; past
 * max_connections a new connection is answered 503 and closed.
 *
 * Threads: a guard serves the event base of its evhttp servers (several
 * evhttp on one base may share one guard); budget and connection counter
 * may be shared by guards on other threads.
 */
#ifndef WT_HTTP_GUARD_H
#define WT_HTTP_GUARD_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdatomic.h>
#include <stdint.h>

#include "budget.h"
#include "err.h"

/* Bodies up to this many bytes are "small": the decision function may let
 * them through without a token (the handler then answers as before). */
#define WT_HTTP_GUARD_SMALL_BODY (64u << 10)

typedef struct wt_http_head {
	char method[16];
	char path[1024];          /* request target up to '?' (not decoded) */
	char authorization[600];  /* header value, "" when absent (truncated) */
	int64_t content_length;   /* -1 when absent */
	int chunked;              /* Transfer-Encoding: chunked */
	uint64_t body_max;        /* bytes the body may take: Content-Length, or max_body when chunked */
} wt_http_head;

/* Decide on a complete request head (loop thread): return 0 to admit it, or
 * a WT_E* code with the reason in *err; the guard answers with
 * wt_err_http_status(code). */
typedef int (*wt_http_guard_fn)(void *arg, const wt_http_head *h, wt_err *err);

typedef struct wt_http_guard_cfg {
	wt_http_guard_fn decide;
	void *arg;
	wt_budget *budget;          /* bodies reserve here; NULL = no budget */
	uint64_t max_body;          /* reserved for a chunked body */
	_Atomic int *nconns;        /* open connections, shared; required */
	int max_connections;        /* 0 = unlimited */
	const char *max_connections_key; /* config key named in the 503 message */
	const char *budget_key;          /* config key named in the budget 503 */
} wt_http_guard_cfg;

typedef struct wt_http_guard wt_http_guard;

/* A guard with cfg (copied; the pointers in it must outlive the guard).
 * NULL on OOM. Free it after every evhttp it is attached to. */
wt_http_guard *wt_http_guard_new(const wt_http_guard_cfg *cfg);
/* Put every future connection of http behind g (evhttp_set_bevcb). */
void wt_http_guard_attach(wt_http_guard *g, struct evhttp *http);
/* Call first thing in the request callback: the body reservation of req's
 * connection is given back when req's response has been sent. */
void wt_http_guard_request(wt_http_guard *g, struct evhttp_request *req);
void wt_http_guard_free(wt_http_guard *g);

/* Parse one request head (the bytes up to and including the empty line)
 * into *h. Returns 0 or WT_EINVAL. Exposed for unit tests. */
int wt_http_guard_parse_head(const char *p, size_t n, uint64_t max_body, wt_http_head *h);

#endif
