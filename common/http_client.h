/*
 * http_client.h — the libcurl pieces every HTTP client of the tree shares:
 * a response sink bounded in bytes and the method/body/headers setup of one
 * request, plus one call that performs it and says what went wrong. The
 * clients keep their own handles and options: the edge's mutual-TLS
 * replication client (edge/tls_client.c), wtctl (cli/http_client.c) and
 * the hub's debuginfod fetcher (hub/debuginfod.c) perform through here;
 * the hub's ClickHouse and S3 clients (ch_client.c, objstore_s3.c), which
 * sign or retry on their own, use the sink.
 *
 * Ownership: the caller owns the handle and the response buffer;
 * wt_http_perform frees the header list it builds.
 */
#ifndef WT_HTTP_CLIENT_H
#define WT_HTTP_CLIENT_H

#include <curl/curl.h>
#include <stddef.h>

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

#endif
