/*
 * tls_client.h — the edge's side of replication: HTTPS requests to the hub
 * over mutual TLS with libcurl (Debian's libcurl is OpenSSL-backed and
 * reads PEM files).
 *
 * The client presents the edge certificate (cert_file/key_file), trusts only
 * the site CA (ca_file, which may bundle old and new CA during a rotation),
 * and verifies the hub's certificate and its name against the host of the
 * URL (CURLOPT_SSL_VERIFYPEER=1, CURLOPT_SSL_VERIFYHOST=2; no option turns
 * this off). One easy handle is kept per client so consecutive requests to
 * the same hub reuse one TLS connection (keep-alive).
 *
 * Threads: a edge_tls_client is used by one thread at a time.
 */
#ifndef EDGE_TLS_CLIENT_H
#define EDGE_TLS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define EDGE_TLS_CLIENT_CONNECT_TIMEOUT_MS 10000
#define EDGE_TLS_CLIENT_TIMEOUT_MS 60000
#define EDGE_TLS_CLIENT_MAX_RESPONSE (16u << 20)

typedef struct edge_tls_client_config {
	const char *ca_file;   /* site CA bundle (PEM) */
	const char *cert_file; /* this edge's certificate (PEM) */
	const char *key_file;  /* its key (PEM) */
	long connect_timeout_ms; /* 0 = EDGE_TLS_CLIENT_CONNECT_TIMEOUT_MS */
	long timeout_ms;         /* whole request; 0 = EDGE_TLS_CLIENT_TIMEOUT_MS */
	size_t max_response;     /* 0 = EDGE_TLS_CLIENT_MAX_RESPONSE */
	/* Optional "host:port:address" entries (CURLOPT_RESOLVE), NULL-ended:
	 * lets a test or a site without DNS reach the hub by the name in its
	 * certificate. */
	const char *const *resolve;
	/* Optional: polled during a request (at least about once a second,
	 * also while connecting or waiting for the answer); returning non-zero
	 * abandons the request with WT_EUNAVAIL. Lets a daemon stop quickly
	 * while a request to a slow or dead peer is in flight. */
	int (*cancel)(void *arg);
	void *cancel_arg;
} edge_tls_client_config;

/* What the last failed edge_tls_client_request() ran into (for metrics). */
enum {
	WT_TLS_FAIL_NONE = 0,
	WT_TLS_FAIL_CONNECT,   /* resolve or TCP connect */
	WT_TLS_FAIL_TLS,       /* handshake, certificate or name verification */
	WT_TLS_FAIL_TIMEOUT,
	WT_TLS_FAIL_CANCELLED, /* cfg.cancel said stop */
	WT_TLS_FAIL_OTHER,     /* send/receive error, response too large, ... */
};

typedef struct edge_tls_client edge_tls_client;

/* Create a client; the strings in cfg are copied. The files are checked
 * for readability here (libcurl reads them at connect time). Returns 0,
 * WT_EINVAL or WT_ENOMEM; *out is freed with edge_tls_client_free. */
int edge_tls_client_new(const edge_tls_client_config *cfg, edge_tls_client **out, wt_err *err);

/* Re-point the client at new certificate files (rotation). The next
 * request opens a fresh connection with them. Returns 0 or WT_EINVAL /
 * WT_ENOMEM; on error the old files stay in use. */
int edge_tls_client_set_files(edge_tls_client *c, const char *ca_file, const char *cert_file,
			    const char *key_file, wt_err *err);

/* One request. method "GET" or "POST" (others work too); body/len may be
 * NULL/0; headers: NULL or a NULL-terminated array of "Name: value" lines
 * (Content-Type goes here). On success (a response arrived, whatever its
 * status) returns 0 with *status set and the response body appended to
 * resp (if non-NULL; at most max_response bytes, else WT_ELIMIT).
 * Transport failures (refused, TLS handshake or certificate rejected,
 * timeout) return WT_EUNAVAIL with curl's reason in err. */
int edge_tls_client_request(edge_tls_client *c, const char *method, const char *url,
			  const char *const *headers, const void *body, size_t len, long *status,
			  wt_buf *resp, wt_err *err);

/* POST shortcut. */
int edge_tls_client_post(edge_tls_client *c, const char *url, const char *const *headers,
		       const void *body, size_t len, long *status, wt_buf *resp, wt_err *err);

/* WT_TLS_FAIL_* of the last request (WT_TLS_FAIL_NONE after a response). */
int edge_tls_client_last_failure(const edge_tls_client *c);

/* Number of new connections opened so far (to check reuse). */
long edge_tls_client_connects(const edge_tls_client *c);

void edge_tls_client_free(edge_tls_client *c);

#endif
