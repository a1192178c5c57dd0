/*
 * http1_parse.h — the HTTP/1.1 request-head parser of the hub's mutual-TLS
 * replication listener (tls_server.c), on its own so the fuzz target
 * tests/fuzz/fuzz_tls_http.c exercises exactly the code the server runs.
 * No I/O, no allocation: it parses a buffer in place.
 */
#ifndef HUB_HTTP1_PARSE_H
#define HUB_HTTP1_PARSE_H

#include <stddef.h>

#define HUB_HTTP1_MAX_HEADER_BYTES (16u << 10) /* request line + headers */
#define HUB_HTTP1_MAX_HEADERS 64

typedef struct hub_http1_header {
	const char *name;  /* lower-case */
	const char *value; /* leading/trailing blanks trimmed */
} hub_http1_header;

/* A parsed request head (request line and headers), pointing into the
 * buffer hub_http1_parse_head parsed. */
typedef struct hub_http1_head {
	char *method, *path, *query;
	int http11;
	hub_http1_header hdr[HUB_HTTP1_MAX_HEADERS];
	size_t nhdr;
	size_t content_length;
	int keep_alive, expect_continue;
} hub_http1_head;

/* The request-head parser:
 * buf[0..len) is the input up to and including its first CRLFCRLF (len >= 4);
 * it is modified in place (NULs, lower-cased header names). Returns 0, or the
 * HTTP status to answer (400, 411, 413, 431) with *why set to a static text. */
int hub_http1_parse_head(char *buf, size_t len, size_t max_body, hub_http1_head *h, const char **why);

/* First of the n headers named name (case-insensitive), or NULL. */
const char *hub_http1_find_header(const hub_http1_header *hdr, size_t n, const char *name);

#endif
