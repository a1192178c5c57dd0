/*
 * http_client.c — bounded response sink and the one request function over
 * a caller's libcurl handle, with retries (see http_client.h).
 */
#include "http_client.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "clock.h"

size_t wt_http_sink_write(char *p, size_t size, size_t n, void *arg)
{
	wt_http_sink *s = arg;
	size_t len = size * n;

	if (!s->out && s->keep) {
		if (s->keep->len < s->keep_max)
			wt_buf_append(s->keep, p, len < s->keep_max - s->keep->len ? len : s->keep_max - s->keep->len);
		return len;
	}
	if (s->got + len > s->max) {
		s->over = 1;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	s->got += len;
	if (s->out && wt_buf_append(s->out, p, len)) {
		s->oom = 1;
		return 0;
	}
	return len;
}

/* One attempt of q. */
static int perform_once(CURL *h, const wt_http_req *q, struct curl_slist *hl, wt_http_result *r)
{
	wt_http_sink s = {q->resp, q->max_response, q->resp ? q->resp->len : 0, 0, 0, q->keep, q->keep_max};
	int has_body = q->body || q->len || !strcasecmp(q->method, "POST") || !strcasecmp(q->method, "PUT");
	int rc = 0;

	memset(r, 0, sizeof(*r));
	curl_easy_setopt(h, CURLOPT_URL, q->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wt_http_sink_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	if (q->timeout_ms > 0)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, q->timeout_ms);
	if (q->connect_timeout_ms > 0)
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, q->connect_timeout_ms);
	if (has_body) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body ? (const char *)q->body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
		if (strcasecmp(q->method, "POST"))
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	} else {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		if (strcasecmp(q->method, "GET"))
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, q->method);
	}
	r->cc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	r->over = s.over;
	r->oom = s.oom;
	if (s.over)
		rc = WT_ELIMIT;
	else if (s.oom)
		rc = WT_ENOMEM;
	else if (r->cc != CURLE_OK)
		rc = WT_EUNAVAIL;
	else
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	return rc;
}

int wt_http_request(CURL *h, const wt_http_req *q, wt_http_result *r)
{
	struct curl_slist *hl = NULL, *n;
	size_t resp0 = q->resp ? q->resp->len : 0, keep0 = q->keep ? q->keep->len : 0;
	unsigned attempt;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	for (const char *const *hd = q->headers; hd && *hd; hd++) {
		if (!(n = curl_slist_append(hl, *hd)))
			goto oom;
		hl = n;
	}
	if (!(n = curl_slist_append(hl, "Expect:")))
		goto oom;
	hl = n;
	for (attempt = 0;; attempt++) {
		if (q->resp)
			q->resp->len = resp0;
		if (q->keep)
			q->keep->len = keep0;
		rc = perform_once(h, q, hl, r);
		if (rc == WT_ELIMIT || rc == WT_ENOMEM || (!rc && r->status >= 200 && r->status < 300))
			break;
		if (!q->retry || !q->retry(q->retry_ctx, q, attempt, rc, r) || attempt >= q->retries)
			break;
		if (q->backoff)
			wt_sleep_ms(wt_backoff_ms(q->backoff, attempt));
	}
	curl_slist_free_all(hl);
	return rc;
oom:
	curl_slist_free_all(hl);
	r->oom = 1;
	return WT_ENOMEM;
}

int wt_http_perform(CURL *h, const char *method, const char *url, const char *const *headers,
		    const void *body, size_t len, wt_buf *resp, size_t max_response, wt_http_result *r)
{
	wt_http_req q = {.method = method, .url = url, .headers = headers, .body = body, .len = len,
			 .resp = resp, .max_response = max_response};

	/* the answer alone is bounded, not what resp held before */
	if (resp)
		q.max_response = max_response > SIZE_MAX - resp->len ? SIZE_MAX : max_response + resp->len;
	return wt_http_request(h, &q, r);
}
