/*
 * tls_server.h — the hub's mutual-TLS HTTP/1.1 listener (replication port,
 * default :8443), built on mbedtls in worker threads.
 *
 * Why threads and not libevent: Debian's libevent 2.1 ships bufferevents
 * for OpenSSL only, none for mbedtls. Wrapping mbedtls in a
 * bufferevent filter is possible but makes every handshake step, renegotiation
 * and partial record an event-loop state; the replication port serves a
 * handful of edges, each holding one keep-alive connection and sending
 * batches one at a time, so a small pool of blocking workers — one
 * connection per worker at a time — is simpler, and is fast enough (see
 * the numbers in docs/operations.md "PKI and certificates"). The cost: at
 * most `workers` connections are served at once; further ones wait in the
 * listen backlog until a worker frees up (idle connections are closed after
 * idle_timeout_ms). Size `workers` ≥ number of edges.
 *
 * Security: the client certificate is REQUIRED (MBEDTLS_SSL_VERIFY_REQUIRED,
 * set explicitly — mbedtls' server default is no verification) and verified
 * against the site CA bundle; TLS 1.2 is the minimum; client certificates
 * must allow clientAuth (mbedtls checks extendedKeyUsage). The peer's
 * identity (certificate CN, else first DNS SAN; see wt_pki_crt_id) is handed
 * to the handler as req->peer_id; a certificate without a valid identity is
 * refused after the handshake. There is no code path without verification.
 *
 * HTTP: request line, headers (names lower-cased; parsed by http1_parse.c), a body sized by
 * Content-Length (at most max_body bytes, else 413; chunked bodies get 411),
 * "Expect: 100-continue", keep-alive (HTTP/1.1 default; "Connection: close"
 * honoured) and pipelined requests. Malformed requests get 400 and the
 * connection is closed.
 *
 * Threads and ownership: the handler runs on a worker thread, concurrently
 * with other workers; ctx is shared by all of them (the handler locks what
 * it shares). The request and everything it points to live until the
 * handler returns.
 */
#ifndef HUB_TLS_SERVER_H
#define HUB_TLS_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "http1_parse.h"
#include "pki.h"

/* Defaults for zero-valued config fields. */
#define HUB_TLS_WORKERS 8
#define HUB_TLS_HANDSHAKE_TIMEOUT_MS 10000
#define HUB_TLS_IO_TIMEOUT_MS 30000       /* one read/write inside a request */
#define HUB_TLS_IDLE_TIMEOUT_MS 60000     /* keep-alive: wait for the next request */
#define HUB_TLS_MAX_BODY (64u << 20)
#define HUB_TLS_MAX_WORKERS 256

typedef struct hub_tls_request {
	const char *method;      /* "POST" */
	const char *path;        /* "/v1/replicate" (no query) */
	const char *query;       /* after '?', "" when none */
	const hub_http1_header *headers;
	size_t nheaders;
	const uint8_t *body;     /* NUL-terminated for convenience; not counted */
	size_t body_len;
	const char *peer_id;     /* verified client identity (never NULL/empty) */
	const char *const *peer_dns; /* the certificate's DNS SANs */
	size_t npeer_dns;
	const char *remote_addr; /* "127.0.0.1:51234" */
} hub_tls_request;

/* First header named name (case-insensitive), or NULL. */
const char *hub_tls_request_header(const hub_tls_request *req, const char *name);

/* Filled in by the handler. Starts as status 200, content_type
 * "application/octet-stream", empty body. */
typedef struct hub_tls_response {
	int status;
	char content_type[128];
	wt_buf body;        /* append the body here; freed by the server */
	wt_buf headers;     /* optional extra "Name: value\r\n" lines */
	int close;          /* set to close the connection after this response */
} hub_tls_response;

/* Return 0 to send *resp; a negative WT_E* code sends an error status for
 * that code (wt_err_http_status) unless the handler already set a status
 * other than 200. */
typedef int (*hub_tls_handler)(void *ctx, const hub_tls_request *req, hub_tls_response *resp);

typedef struct hub_tls_server_config {
	const char *host;      /* bind address ("127.0.0.1", "::", "0.0.0.0"); NULL = "::" */
	uint16_t port;         /* 0 = pick a free port (see hub_tls_server_port) */
	const char *ca_file;   /* site CA bundle (PEM, one or more CAs) */
	const char *cert_file; /* server certificate (PEM, may include chain) */
	const char *key_file;  /* its key (PEM) */
	int workers;           /* 0 = HUB_TLS_WORKERS */
	int handshake_timeout_ms, io_timeout_ms, idle_timeout_ms; /* 0 = defaults */
	size_t max_body;       /* 0 = HUB_TLS_MAX_BODY */
	hub_tls_handler handler;
	void *ctx;
} hub_tls_server_config;

typedef struct hub_tls_server hub_tls_server;

/* Load the certificates, bind, listen and start the workers. The strings
 * in cfg are copied. On success *out is a running server (stop it with
 * hub_tls_server_stop). Returns 0, WT_EINVAL (bad config or certificate
 * files), WT_EIO (bind/listen) or WT_ENOMEM, message in err. */
int hub_tls_server_start(const hub_tls_server_config *cfg, hub_tls_server **out, wt_err *err);

/* The bound port (useful after port 0). */
uint16_t hub_tls_server_port(const hub_tls_server *s);

/* Re-read ca_file, cert_file and key_file (certificate rotation, e.g. on
 * SIGHUP; safe to call from any thread but not from a signal handler).
 * The files are validated first: on error nothing changes and the error is
 * returned. On success each worker switches to the new material before its
 * next connection; connections in progress keep the old one. */
int hub_tls_server_reload(hub_tls_server *s, wt_err *err);

/* Stop accepting, close idle and in-progress connections at the next I/O
 * wait (a handler already running finishes first), join the workers and
 * free s. NULL is a no-op. */
void hub_tls_server_stop(hub_tls_server *s);

/* Counters (monotonic, for /metrics). */
typedef struct hub_tls_server_stats {
	uint64_t connections;     /* accepted TCP connections */
	uint64_t handshakes_ok;
	uint64_t handshakes_failed; /* includes rejected client certificates */
	uint64_t requests;
} hub_tls_server_stats;

void hub_tls_server_get_stats(hub_tls_server *s, hub_tls_server_stats *out);

#endif
