/*
 * http1_parse.c — HTTP/1.1 request heads for the hub's mutual-TLS listener
 * (http1_parse.h): request line, header fields (names lower-cased, values
 * trimmed), Content-Length, Connection, Expect. Strict: no folded lines,
 * no NULs, no Transfer-Encoding (411), one Content-Length value.
 */
#include "http1_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Parse "METHOD SP target SP HTTP/1.x CRLF (name: value CRLF)* CRLF" in
 * buf[0..len) (len includes the final CRLFCRLF). Returns 0, or an HTTP
 * status with *why set. */
int hub_http1_parse_head(char *buf, size_t len, size_t max_body, hub_http1_head *h, const char **why)
{
	char *p = buf, *end = buf + len - 2; /* last line's CRLF is the terminator */
	char *line_end, *sp1, *sp2, *q;
	int have_cl = 0;

	memset(h, 0, sizeof(*h));
	line_end = memchr(p, '\r', (size_t)(end - p));
	if (!line_end || line_end[1] != '\n')
		return *why = "malformed request line", 400;
	*line_end = 0;
	if (memchr(p, 0, (size_t)(line_end - p)))
		return *why = "NUL in request line", 400;
	sp1 = strchr(p, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || strchr(sp2 + 1, ' '))
		return *why = "malformed request line", 400;
	*sp1 = *sp2 = 0;
	h->method = p;
	if (!*h->method)
		return *why = "empty method", 400;
	for (q = h->method; *q; q++)
		if (!is_tchar(*q))
			return *why = "bad method", 400;
	h->path = sp1 + 1;
	if (h->path[0] != '/')
		return *why = "request target must start with /", 400;
	/* Every pointer in *h points into buf (see rebase_head). */
	q = strchr(h->path, '?');
	h->query = h->path + strlen(h->path);
	if (q) {
		*q = 0;
		h->query = q + 1;
	}
	if (!strcmp(sp2 + 1, "HTTP/1.1"))
		h->http11 = 1;
	else if (strcmp(sp2 + 1, "HTTP/1.0"))
		return *why = "unsupported HTTP version", 400;
	h->keep_alive = h->http11;
	p = line_end + 2;
	while (p < end) {
		char *colon, *v, *ve;

		line_end = memchr(p, '\r', (size_t)(end - p));
		if (!line_end || line_end[1] != '\n')
			return *why = "malformed header line", 400;
		*line_end = 0;
		if (*p == ' ' || *p == '\t')
			return *why = "folded header lines are not allowed", 400;
		colon = memchr(p, ':', (size_t)(line_end - p));
		if (!colon || colon == p)
			return *why = "malformed header line", 400;
		if (memchr(p, 0, (size_t)(line_end - p)))
			return *why = "NUL in header", 400;
		*colon = 0;
		for (q = p; *q; q++) {
			if (!is_tchar(*q))
				return *why = "bad header name", 400;
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q + 32);
		}
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		ve = line_end;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			*--ve = 0;
		if (h->nhdr == HUB_HTTP1_MAX_HEADERS)
			return *why = "too many header fields", 431;
		h->hdr[h->nhdr].name = p;
		h->hdr[h->nhdr].value = v;
		h->nhdr++;
		if (!strcmp(p, "content-length")) {
			char *e;
			unsigned long long n;
			if (*v < '0' || *v > '9')
				return *why = "bad Content-Length", 400;
			errno = 0;
			n = strtoull(v, &e, 10);
			if (errno || *e)
				return *why = "bad Content-Length", 400;
			if (have_cl && n != h->content_length)
				return *why = "conflicting Content-Length headers", 400;
			if (n > max_body)
				return *why = "request body too large", 413;
			have_cl = 1;
			h->content_length = (size_t)n;
		} else if (!strcmp(p, "transfer-encoding")) {
			return *why = "Transfer-Encoding is not supported; send Content-Length", 411;
		} else if (!strcmp(p, "connection")) {
			if (!strcasecmp(v, "close"))
				h->keep_alive = 0;
			else if (!strcasecmp(v, "keep-alive"))
				h->keep_alive = 1;
		} else if (!strcmp(p, "expect")) {
			if (strcasecmp(v, "100-continue"))
				return *why = "unsupported Expect", 400;
			h->expect_continue = 1;
		}
		p = line_end + 2;
	}
	return 0;
}

const char *hub_http1_find_header(const hub_http1_header *hdr, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(hdr[i].name, name))
			return hdr[i].value;
	return NULL;
}
