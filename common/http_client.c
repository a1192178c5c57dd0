/*
 * http_client.c — bounded response sink and one-request setup over a
 * caller's libcurl handle (see http_client.h).
 */
#include "http_client.h"

#include <string.h>
#include <strings.h>

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

int wt_http_perform(CURL *h, const char *method, const char *url, const char *const *headers,
		    const void *body, size_t len, wt_buf *resp, size_t max_response, wt_http_result *r)
{
	struct curl_slist *hl = NULL, *n;
	wt_http_sink s = {resp, max_response, 0, 0, 0, NULL, 0};
	int rc = 0;

	memset(r, 0, sizeof(*r));
	for (const char *const *hd = headers; hd && *hd; hd++) {
		if (!(n = curl_slist_append(hl, *hd)))
			goto oom;
		hl = n;
	}
	if (!(n = curl_slist_append(hl, "Expect:")))
		goto oom;
	hl = n;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wt_http_sink_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
	if (!strcasecmp(method, "GET") && !len) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		if (strcasecmp(method, "POST"))
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	r->cc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
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
	curl_slist_free_all(hl);
	return rc;
oom:
	curl_slist_free_all(hl);
	r->oom = 1;
	return WT_ENOMEM;
}
