/*
 * http_server.h — small helpers shared by the edge and hub HTTP servers
 * (libevent evhttp): JSON replies and JSON errors in docs/api.md's shape,
 * bearer tokens, query parameters, bounded request bodies, time parsing.
 */
#ifndef WT_HTTP_SERVER_H
#define WT_HTTP_SERVER_H

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Reply {"error": wt_err_name(code), "detail": detail} with the status that
 * wt_err_http_status(code) gives. */
void wt_http_send_error(struct evhttp_request *req, int code, const char *detail);
/* Reply with a JSON body. Takes ownership of (decrefs) body. */
void wt_http_send_json(struct evhttp_request *req, int status, json_t *body);
/* Reply with raw bytes and a content type. */
void wt_http_send_bytes(struct evhttp_request *req, int status, const char *ctype,
			const void *data, size_t len);

/* The reply observer of the calling thread: every wt_http_send_* on this
 * thread calls fn(req, status, arg) just before its reply goes out (the
 * edge counts its replies per route with it, edge/server.c, since most are
 * sent long after its router returned). fn NULL: none. Thread-local. */
typedef void (*wt_http_reply_observer)(struct evhttp_request *req, int status, void *arg);
void wt_http_set_reply_observer(wt_http_reply_observer fn, void *arg);

/* Copy the bearer token of the Authorization header into tok (NUL-terminated).
 * Returns 0, or WT_EAUTH when missing/malformed/too long. */
int wt_http_bearer(struct evhttp_request *req, char *tok, size_t toklen);

/* Parse the request URI's query string into *q (caller: evhttp_clear_headers).
 * Returns 0 or WT_EINVAL. */
int wt_http_query(struct evhttp_request *req, struct evkeyvalq *q);
const char *wt_http_param(const struct evkeyvalq *q, const char *key);

/* Copy the request body (at most max bytes, else WT_ELIMIT) into a malloc'd
 * buffer owned by the caller. */
int wt_http_body(struct evhttp_request *req, size_t max, uint8_t **out, size_t *len, wt_err *err);

/* Parse a time parameter: unix seconds ("1733155200"), unix seconds with a
 * fraction, or RFC 3339 ("2026-12-02T16:00:00Z", offsets allowed).
 * Returns 0 with *ns = unix nanoseconds, or WT_EINVAL. */
int wt_http_parse_time(const char *s, int64_t *ns);

#endif
