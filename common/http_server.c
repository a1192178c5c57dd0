/*
 * http_server.c — helpers shared by the edge and hub evhttp servers: JSON
 * replies and errors in the {"error","detail"} shape of docs/api.md, bearer tokens,
 * query strings, bounded request bodies and time parameters.
 */
#include "http_server.h"
#include "json_str.h"

#include <ctype.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

static __thread wt_http_reply_observer observer;
static __thread void *observer_arg;

void wt_http_set_reply_observer(wt_http_reply_observer fn, void *arg)
{
	observer = fn;
	observer_arg = arg;
}

void wt_http_send_bytes(struct evhttp_request *req, int status, const char *ctype,
			const void *data, size_t len)
{
	struct evbuffer *out = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	int ok = out && (!len || evbuffer_add(out, data, len) == 0);

	if (observer)
		observer(req, ok ? status : 500, observer_arg);
	evhttp_remove_header(h, "Content-Type");
	evhttp_add_header(h, "Content-Type", ctype ? ctype : "application/octet-stream");
	if (ok)
		evhttp_send_reply(req, status, NULL, out);
	else
		evhttp_send_reply(req, 500, "Internal Server Error", NULL);
	if (out)
		evbuffer_free(out);
}

void wt_http_send_json(struct evhttp_request *req, int status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;

	if (body)
		json_decref(body);
	if (!s) {
		static const char oom[] = "{\"error\":\"out_of_memory\",\"detail\":\"encoding the reply failed\"}";
		wt_http_send_bytes(req, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	wt_http_send_bytes(req, status, "application/json", s, strlen(s));
	free(s);
}

void wt_http_send_error(struct evhttp_request *req, int code, const char *detail)
{
	json_t *o = json_object();

	if (o) {
		json_object_set_new(o, "error", json_string(wt_err_name(code)));
		/* a detail quoting input bytes may not be UTF-8 */
		json_object_set_new(o, "detail", wt_json_string(detail ? detail : ""));
	}
	if (code == WT_EAUTH)
		evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
	wt_http_send_json(req, wt_err_http_status(code), o);
}

int wt_http_bearer(struct evhttp_request *req, char *tok, size_t toklen)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
	size_t n;

	if (!h || toklen == 0)
		return WT_EAUTH;
	while (*h == ' ')
		h++;
	if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t'))
		return WT_EAUTH;
	h += 6;
	while (*h == ' ' || *h == '\t')
		h++;
	n = strlen(h);
	while (n && (h[n - 1] == ' ' || h[n - 1] == '\t' || h[n - 1] == '\r'))
		n--;
	if (n == 0 || n >= toklen)
		return WT_EAUTH;
	memcpy(tok, h, n);
	tok[n] = '\0';
	return 0;
}

int wt_http_query(struct evhttp_request *req, struct evkeyvalq *q)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;

	TAILQ_INIT(q);
	if (!qs || !*qs)
		return 0;
	/* evhttp_parse_query_str decodes '+' as space only with the flag-based
	 * variant; plain decoding keeps '+' as written, which is what Pyroscope's
	 * name= parameter expects. */
	if (evhttp_parse_query_str(qs, q) != 0) {
		evhttp_clear_headers(q);
		TAILQ_INIT(q);
		return WT_EINVAL;
	}
	/* libevent decodes values only; clients encode keys too
	 * ("label.k8s%2Fpod=web-1" from urlencode), so decode keys the same
	 * way. The decoded key is never longer: it replaces the key in place. */
	for (struct evkeyval *kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		size_t n;
		char *d;
		if (!strchr(kv->key, '%'))
			continue;
		d = evhttp_uridecode(kv->key, 0, &n);
		if (!d || memchr(d, '\0', n)) {
			free(d);
			evhttp_clear_headers(q);
			TAILQ_INIT(q);
			return WT_EINVAL;
		}
		memcpy(kv->key, d, n + 1);
		free(d);
	}
	return 0;
}

const char *wt_http_param(const struct evkeyvalq *q, const char *key)
{
	return evhttp_find_header(q, key);
}

int wt_http_body(struct evhttp_request *req, size_t max, uint8_t **out, size_t *len, wt_err *err)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t n = in ? evbuffer_get_length(in) : 0;
	uint8_t *p;

	*out = NULL;
	*len = 0;
	if (n > max)
		return wt_err_set(err, WT_ELIMIT, "request body of %zu bytes exceeds the limit of %zu bytes", n, max);
	p = malloc(n ? n : 1);
	if (!p)
		return wt_err_set(err, WT_ENOMEM, "out of memory reading a %zu-byte body", n);
	if (n && evbuffer_copyout(in, p, n) != (ev_ssize_t)n) {
		free(p);
		return wt_err_set(err, WT_EIO, "reading the request body failed");
	}
	*out = p;
	*len = n;
	return 0;
}

/* days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant) */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, int n, int *v)
{
	int r = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		r = r * 10 + (s[i] - '0');
	}
	*v = r;
	return 0;
}

/* fraction ".123456789" → nanoseconds; advances *s */
static int parse_frac(const char **s, int64_t *ns)
{
	const char *p = *s;
	int64_t v = 0, scale = 100000000;
	int nd = 0;

	*ns = 0;
	if (*p != '.')
		return 0;
	p++;
	while (isdigit((unsigned char)*p)) {
		if (nd < 9) {
			v += (*p - '0') * scale;
			scale /= 10;
		}
		nd++;
		p++;
	}
	if (nd == 0)
		return -1;
	*ns = v;
	*s = p;
	return 0;
}

int wt_http_parse_time(const char *s, int64_t *ns)
{
	if (!s || !*s)
		return WT_EINVAL;
	/* unix seconds, optionally with a fraction */
	const char *p = s;
	int neg = 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (isdigit((unsigned char)*p)) {
		const char *q = p;
		while (isdigit((unsigned char)*q))
			q++;
		if (*q == '\0' || *q == '.') {
			int64_t sec = 0, frac = 0;
			for (const char *r = p; r < q; r++) {
				if (sec > (INT64_MAX / 1000000000 - 9) / 10)
					return WT_EINVAL;
				sec = sec * 10 + (*r - '0');
			}
			if (parse_frac(&q, &frac) != 0 || *q != '\0')
				return WT_EINVAL;
			int64_t v = sec * 1000000000 + frac;
			*ns = neg ? -v : v;
			return 0;
		}
	}
	if (neg)
		return WT_EINVAL;
	/* RFC 3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM) */
	int Y, M, D, h, m, sec;
	size_t n = strlen(s);
	if (n < 20 || digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) || s[7] != '-' ||
	    digits(s + 8, 2, &D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) || s[16] != ':' ||
	    digits(s + 17, 2, &sec))
		return WT_EINVAL;
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return WT_EINVAL;
	p = s + 19;
	int64_t frac = 0;
	if (parse_frac(&p, &frac) != 0)
		return WT_EINVAL;
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		int sign = *p == '-' ? -1 : 1;
		if (digits(p + 1, 2, &oh) || p[3] != ':' || digits(p + 4, 2, &om) || oh > 23 || om > 59)
			return WT_EINVAL;
		off = sign * (int64_t)(oh * 3600 + om * 60);
		p += 6;
	} else {
		return WT_EINVAL;
	}
	if (*p != '\0')
		return WT_EINVAL;
	int64_t t = days_from_civil(Y, (unsigned)M, (unsigned)D) * 86400 + h * 3600 + m * 60 + sec - off;
	*ns = t * 1000000000 + frac;
	return 0;
}
