/*
 * http_client.h — the one libcurl wrapper of the tree: a response sink
 * bounded in bytes and one request function (method, URL, header lines,
 * body, timeouts, bounded answer, retries on the common/backoff.h rule)
 * that performs over a caller's handle and says what went wrong. The
 * clients keep their own handles and connection options (TLS, basic auth,
 * SigV4): the edge's mutual-TLS replication client (edge/tls_client.c),
 * wtctl (cli/http_client.c), the hub's debuginfod fetcher
 * (hub/debuginfod.c), ClickHouse client (hub/ch_client.c: retries) and S3
 * client (hub/objstore_s3.c: SigV4 stays there, as a handle option) all
 * perform through wt_http_request.
 *
 * Ownership: the caller owns the handle and the response buffers;
 * wt_http_request frees the header list it builds.
 */
#ifndef WT_HTTP_CLIENT_H
#define WT_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stddef.h>

#include "backoff.h"
#include "buf.h"
#include "err.h"

/* Where a response body goes: appended to out, the transfer aborted once
 * got (start it at out->len to bound the whole buffer) would pass max
 * (over) or an append failed (oom). Without out: with keep, its first
 * keep_max bytes go to keep (an error answer's text; no bound), else the
 * body is counted against max and dropped. */
typedef struct wt_http_sink {
	wt_buf *out;
	size_t max, got;
	int over, oom;
	wt_buf *keep;
	size_t keep_max;
} wt_http_sink;

/* CURLOPT_WRITEFUNCTION for a wt_http_sink (CURLOPT_WRITEDATA). */
size_t wt_http_sink_write(char *p, size_t size, size_t n, void *arg);

/* What wt_http_perform did. */
typedef struct wt_http_result {
	long status;  /* HTTP status (0 when no answer) */
	CURLcode cc;  /* the transfer's code */
	int over;     /* the body exceeded max_response */
	int oom;      /* no memory for the body or the header list */
} wt_http_result;

/* Set URL, method, headers (NULL-terminated "Name: value" lines; an
 * "Expect:" line is added so bodies go without a 100-continue round trip),
 * body (GET without a body: none) and the bounded sink on h, perform, and
 * clear the per-request options again (h can be reused: keep-alive).
 * Returns 0 when an HTTP answer came (any status: *r says which), else
 * WT_ELIMIT (over), WT_ENOMEM, WT_EUNAVAIL (transport; r->cc). No message
 * is written: the callers keep their own wording. */
int wt_http_perform(CURL *h, const char *method, const char *url, const char *const *headers,
		    const void *body, size_t len, wt_buf *resp, size_t max_response, wt_http_result *r);

typedef struct wt_http_req wt_http_req;

/* Whether to try again after attempt (from 0) answered rc and *r (an HTTP
 * error status or a transport failure; the answer's text is in q->resp
 * past its starting length, or in q->keep). Nonzero: retry. */
typedef int (*wt_http_retry_fn)(void *ctx, const wt_http_req *q, unsigned attempt, int rc,
				const wt_http_result *r);

/* One request. Zeroed fields mean "none"/"leave the handle's setting". */
struct wt_http_req {
	const char *method;          /* GET, POST, PUT, DELETE, ...: GET/DELETE without a body send none */
	const char *url;
	const char *const *headers;  /* NULL-terminated "Name: value" lines */
	const void *body;
	size_t len;
	wt_buf *resp;                /* the answer is appended here, */
	size_t max_response;         /* bounded: resp->len may not pass this (whole buffer) */
	wt_buf *keep;                /* without resp: the answer's first keep_max bytes */
	size_t keep_max;
	long timeout_ms, connect_timeout_ms; /* > 0: set on the handle (they stay set) */
	/* retries: retry(ctx, ...) is told of every attempt that failed (an
	 * answer that is not 2xx, or a transport failure; also the last, so
	 * it can say why) and decides; up to retries more attempts, waiting
	 * wt_backoff_ms(backoff, attempt) between them; resp and keep are
	 * rolled back to where they started before each new attempt */
	unsigned retries;
	const wt_backoff *backoff;
	wt_http_retry_fn retry;
	void *retry_ctx;
};

/* Perform q on h (as wt_http_perform, which is this with q's first eight
 * fields), retrying as q says. Returns 0 when an HTTP answer came (any
 * status: r->status), else WT_ELIMIT (the answer passed max_response: not
 * retried), WT_ENOMEM, WT_EUNAVAIL (transport; r->cc), for the last
 * attempt. */
int wt_http_request(CURL *h, const wt_http_req *q, wt_http_result *r);

#endif
