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

typedef struct sink {
	wt_buf buf;
	int too_big;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	sink *s = arg;
	size_t len = size * n;

	if (s->buf.len + len > CLI_HTTP_MAX_RESPONSE) {
		s->too_big = 1;
		return 0; /* aborts the transfer */
	}
	if (wt_buf_append(&s->buf, p, len))
		return 0;
	return len;
}

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
	CURL *c = NULL;
	struct curl_slist *hdrs = NULL;
	char line[1024];
	char cerr[CURL_ERROR_SIZE] = "";
	sink s = {WT_BUF_INIT, 0};
	CURLcode cc;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (!(c = curl_easy_init())) {
		snprintf(err, errlen, "%s: cannot initialise libcurl", url);
		goto out;
	}
	if (token) {
		if (snprintf(line, sizeof(line), "Authorization: Bearer %s", token) >= (int)sizeof(line)) {
			snprintf(err, errlen, "token too long");
			goto out;
		}
		hdrs = curl_slist_append(hdrs, line);
	}
	if (content_type) {
		snprintf(line, sizeof(line), "Content-Type: %s", content_type);
		hdrs = curl_slist_append(hdrs, line);
	}
	/* No "Expect: 100-continue" round trip for uploads. */
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)CLI_HTTP_CONNECT_TIMEOUT);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s());
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "wtctl");
	if (body || strcmp(method, "GET")) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
	}
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		if (s.too_big)
			snprintf(err, errlen, "%s %s: response larger than %u bytes", method, url,
				 CLI_HTTP_MAX_RESPONSE);
		else
			snprintf(err, errlen, "%s %s: %s", method, url, cerr[0] ? cerr : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	wt_buf_putc(&s.buf, '\0');
	if (s.buf.oom) {
		snprintf(err, errlen, "%s %s: out of memory reading the response", method, url);
		goto out;
	}
	r->body = (char *)wt_buf_steal(&s.buf, &r->len);
	r->len--;
	rc = 0;
out:
	wt_buf_free(&s.buf);
	curl_slist_free_all(hdrs);
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
