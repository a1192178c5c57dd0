/*
 * http_client.h — the one HTTP helper of wtctl (libcurl easy interface):
 * send a request with an optional bearer token and body, collect the
 * response in memory (bounded by CLI_HTTP_MAX_RESPONSE).
 *
 * Ownership: cli_http_request fills *r; the caller releases it with
 * cli_http_resp_free().
 */
#ifndef WT_CLI_HTTP_CLIENT_H
#define WT_CLI_HTTP_CLIENT_H

#include <stddef.h>

typedef struct cli_http_resp {
	long status;  /* HTTP status; 0 when no response arrived */
	char *body;   /* NUL-terminated (the NUL is not counted in len) */
	size_t len;
} cli_http_resp;

/* method "GET"/"POST"/...; token may be NULL; body may be NULL (len 0).
 * Returns 0 when a response arrived (whatever its status), -1 on transport
 * failure with a message in err naming the URL. */
int cli_http_request(const char *method, const char *url, const char *token,
		     const char *content_type, const void *body, size_t len,
		     cli_http_resp *r, char *err, size_t errlen);
/* The same with one more request header (a whole "Name: value" line, or
 * NULL for none). */
int cli_http_request_hdr(const char *method, const char *url, const char *token,
			 const char *content_type, const char *header, const void *body, size_t len,
			 cli_http_resp *r, char *err, size_t errlen);
void cli_http_resp_free(cli_http_resp *r);

/* Write "wtctl: WHAT: HTTP <status>: <error>: <detail>" to stderr, taking
 * error/detail from a JSON error body when there is one, else the raw body. */
void cli_http_report_error(const char *what, const cli_http_resp *r);

#endif
