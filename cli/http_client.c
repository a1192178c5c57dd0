/*
 * http_client.c — libcurl wrapper for wtctl (see http_client.h).
 */
#include "http_client.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "common/http_client.h" /* the shared libcurl request (this file's header is cli/http_client.h) */

static long timeout_s(void)
{
	const char *v = getenv("WT_HTTP_TIMEOUT");
	uint64_t t;

	if (v && !cli_parse_u64(v, &t) && t > 0 && t < 86400)
		return (long)t;
	return CLI_HTTP_TIMEOUT;
}

int cli_http_request(const char *method, const char *url, const char *token,
		     const char *content_type, const void *body, size_t len,
		     cli_http_resp *r, char *err, size_t errlen)
{
	return cli_http_request_hdr(method, url, token, content_type, NULL, body, len, r, err, errlen);
}

int cli_http_request_hdr(const char *method, const char *url, const char *token,
			 const char *content_type, const char *header, const void *body, size_t len,
			 cli_http_resp *r, char *err, size_t errlen)
{
	CURL *c = NULL;
	char auth[1024], ctype[1024];
	const char *hdrs[4] = {NULL, NULL, NULL, NULL};
	size_t nh = 0;
	char cerr[CURL_ERROR_SIZE] = "";
	wt_buf body_out = WT_BUF_INIT;
	wt_http_result res;
	int rc = -1, prc;

	memset(r, 0, sizeof(*r));
	if (!(c = curl_easy_init())) {
		snprintf(err, errlen, "%s: cannot initialise libcurl", url);
		goto out;
	}
	if (token) {
		if (snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token) >= (int)sizeof(auth)) {
			snprintf(err, errlen, "token too long");
			goto out;
		}
		hdrs[nh++] = auth;
	}
	if (content_type) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s", content_type);
		hdrs[nh++] = ctype;
	}
	if (header)
		hdrs[nh++] = header;
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)CLI_HTTP_CONNECT_TIMEOUT);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s());
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "wtctl");
	prc = wt_http_perform(c, method, url, hdrs, body, len, &body_out, CLI_HTTP_MAX_RESPONSE, &res);
	if (res.over) {
		snprintf(err, errlen, "%s %s: response larger than %u bytes", method, url, CLI_HTTP_MAX_RESPONSE);
		goto out;
	}
	if (prc == WT_EUNAVAIL) {
		snprintf(err, errlen, "%s %s: %s", method, url, cerr[0] ? cerr : curl_easy_strerror(res.cc));
		goto out;
	}
	r->status = res.status;
	wt_buf_putc(&body_out, '\0');
	if (prc || body_out.oom) {
		snprintf(err, errlen, "%s %s: out of memory reading the response", method, url);
		goto out;
	}
	r->body = (char *)wt_buf_steal(&body_out, &r->len);
	r->len--;
	rc = 0;
out:
	wt_buf_free(&body_out);
	if (c)
		curl_easy_cleanup(c);
	return rc;
}

void cli_http_resp_free(cli_http_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

void cli_http_report_error(const char *what, const cli_http_resp *r)
{
	json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	const char *e = NULL, *d = NULL;

	if (j && json_is_object(j)) {
		e = json_string_value(json_object_get(j, "error"));
		d = json_string_value(json_object_get(j, "detail"));
	}
	if (e || d)
		fprintf(stderr, "wtctl: %s: HTTP %ld: %s%s%s\n", what, r->status, e ? e : "",
			(e && d) ? ": " : "", d ? d : "");
	else
		fprintf(stderr, "wtctl: %s: HTTP %ld: %.*s\n", what, r->status,
			(int)(r->len > 2000 ? 2000 : r->len), r->body ? r->body : "");
	json_decref(j);
}
