/*
 * ch_client.c — libcurl client for the ClickHouse HTTP interface: bounded
 * result buffers, timeouts, retries with backoff (see ch_client.h).
 */
#include "ch_client.h"
#include "backoff.h"
#include "clock.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_client.h"
#include "log.h"

struct hub_ch {
	const hub_ch_conf *conf;
	CURL *curl;
};

static void (*down_hook)(void);

void hub_ch_set_down_hook(void (*fn)(void))
{
	down_hook = fn;
}

hub_ch *hub_ch_new(const hub_ch_conf *conf)
{
	hub_ch *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->conf = conf;
	ch->curl = curl_easy_init();
	if (!ch->curl) {
		free(ch);
		return NULL;
	}
	return ch;
}

void hub_ch_free(hub_ch *ch)
{
	if (!ch)
		return;
	curl_easy_cleanup(ch->curl);
	free(ch);
}

/* First line of a ClickHouse error body, for messages. */
static void first_line(const wt_buf *b, char *dst, size_t cap)
{
	size_t n = b->len < cap - 1 ? b->len : cap - 1;
	size_t i;

	for (i = 0; i < n && b->data[i] != '\n'; i++)
		dst[i] = (char)b->data[i];
	dst[i] = '\0';
}

enum { REQ_QUERY, REQ_QUERY_NODB, REQ_INSERT, REQ_PING };

/* What one failed attempt of do_request means. */
typedef struct attempt_ctx {
	hub_ch *ch;
	int kind;
	size_t out_len0;
	wt_err *err;
	int rc; /* the last failed attempt's, *err says why */
} attempt_ctx;

/* wt_http_retry_fn: set *err for a failed attempt (an error answer moved
 * out of the result buffer) and say whether it is worth another: 503 or
 * "too many simultaneous queries" (Code: 202), or ClickHouse unreachable;
 * an INSERT that may have reached a single server is not repeated. */
static int attempt_failed(void *arg, const wt_http_req *q, unsigned attempt, int prc, const wt_http_result *r)
{
	attempt_ctx *a = arg;
	const hub_ch_conf *c = a->ch->conf;
	int transient, nothing_sent = 0;

	(void)attempt;
	if (!prc) {
		char line[400];
		const wt_buf *eb = q->keep;
		wt_buf tmp = WT_BUF_INIT;

		if (q->resp) {
			/* error text landed in out after out_len0 */
			wt_buf_append(&tmp, q->resp->data + a->out_len0, q->resp->len - a->out_len0);
			q->resp->len = a->out_len0;
			eb = &tmp;
		}
		first_line(eb, line, sizeof(line));
		wt_buf_free(&tmp);
		transient = r->status == 503 || strstr(line, "Code: 202") != NULL;
		a->rc = wt_err_set(a->err, transient ? WT_EUNAVAIL : WT_EIO, "clickhouse: HTTP %ld: %s", r->status,
				   line);
	} else {
		nothing_sent = r->cc == CURLE_COULDNT_CONNECT || r->cc == CURLE_COULDNT_RESOLVE_HOST;
		transient = 1;
		a->rc = wt_err_set(a->err, WT_EUNAVAIL, "clickhouse unreachable at %s: %s", c->url,
				   curl_easy_strerror(r->cc));
		if (down_hook && (nothing_sent || r->cc == CURLE_OPERATION_TIMEDOUT))
			down_hook();
	}
	if (a->kind == REQ_INSERT && !nothing_sent && !hub_ch_cluster(a->ch))
		return 0;
	return transient;
}

static int do_request(hub_ch *ch, int kind, const char *sql, const void *data, size_t len,
		      wt_buf *out, wt_err *err)
{
	const hub_ch_conf *c = ch->conf;
	CURL *h = ch->curl;
	wt_buf url = WT_BUF_INIT;
	int rc = 0;
	int retries = kind == REQ_PING ? 0 : c->retries;
	size_t out_len0 = out ? out->len : 0;

	wt_buf_puts(&url, c->url);
	if (kind == REQ_PING) {
		wt_buf_puts(&url, "/ping");
	} else {
		wt_buf_puts(&url, "/?");
		if (kind != REQ_QUERY_NODB && c->database && *c->database) {
			char *db = curl_easy_escape(h, c->database, 0);
			wt_buf_printf(&url, "database=%s&", db ? db : "");
			curl_free(db);
		}
		if (kind == REQ_INSERT) {
			char *q = curl_easy_escape(h, sql, 0);
			wt_buf_printf(&url, "query=%s&", q ? q : "");
			curl_free(q);
		}
		if (c->cluster && *c->cluster)
			wt_buf_puts(&url, "insert_distributed_sync=1&load_balancing=in_order&prefer_localhost_replica=0&");
		/* Binary results must not be gzip'd or wrapped; sends progress
		 * never (keeps answers small). */
		wt_buf_puts(&url, "send_progress_in_http_headers=0");
	}
	if (wt_buf_putc(&url, '\0')) {
		rc = wt_err_set(err, WT_ENOMEM, "clickhouse: out of memory");
		goto out;
	}

	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	if (c->user && *c->user) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
	}
	{
		wt_buf err_body = WT_BUF_INIT; /* body of a non-2xx answer without out, first KiB */
		wt_backoff bo = {c->backoff_ms, 0, 0};
		attempt_ctx ac = {ch, kind, out_len0, err, WT_EIO};
		wt_http_req q = {
			.method = kind == REQ_PING ? "GET" : "POST",
			.url = (const char *)url.data,
			.body = kind == REQ_INSERT ? data : kind == REQ_PING ? NULL : sql,
			.len = kind == REQ_INSERT ? len : kind == REQ_PING ? 0 : strlen(sql),
			.resp = out,
			.max_response = c->max_result_bytes,
			.keep = out ? NULL : &err_body,
			.keep_max = 1024,
			.timeout_ms = kind == REQ_PING ? c->connect_timeout_ms : c->timeout_ms,
			.connect_timeout_ms = c->connect_timeout_ms,
			.retries = (unsigned)retries,
			.backoff = &bo,
			.retry = attempt_failed,
			.retry_ctx = &ac,
		};
		wt_http_result r;

		rc = wt_http_request(h, &q, &r);
		if (rc == WT_ELIMIT) {
			rc = wt_err_set(err, WT_ELIMIT, "clickhouse: result larger than %zu bytes", c->max_result_bytes);
		} else if (rc == WT_ENOMEM) {
			rc = wt_err_set(err, WT_ENOMEM, "clickhouse: out of memory");
		} else if (rc || r.status < 200 || r.status >= 300) {
			rc = ac.rc; /* attempt_failed said why */
		}
		wt_buf_free(&err_body);
	}
out:
	wt_buf_free(&url);
	return rc;
}

int hub_ch_query(hub_ch *ch, const char *sql, wt_buf *out, wt_err *err)
{
	return do_request(ch, REQ_QUERY, sql, NULL, 0, out, err);
}

int hub_ch_query_buf(hub_ch *ch, wt_buf *sql, wt_buf *out, wt_err *err)
{
	if (sql->oom || wt_buf_putc(sql, '\0'))
		return wt_err_set(err, WT_ENOMEM, "clickhouse: out of memory building a query");
	sql->len--; /* keep the NUL out of the logical length */
	return do_request(ch, REQ_QUERY, (const char *)sql->data, NULL, 0, out, err);
}

int hub_ch_query_nodb(hub_ch *ch, const char *sql, wt_buf *out, wt_err *err)
{
	return do_request(ch, REQ_QUERY_NODB, sql, NULL, 0, out, err);
}

int hub_ch_insert(hub_ch *ch, const char *insert_sql, const void *data, size_t len, wt_err *err)
{
	int64_t t0 = wt_now_ns(CLOCK_MONOTONIC);
	int rc = do_request(ch, REQ_INSERT, insert_sql, data, len, NULL, err);

	/* where an upload's ClickHouse time goes, per table (debug level) */
	wt_debug("msg=\"clickhouse insert\" bytes=%zu ms=%.1f rc=%d sql=\"%.60s\"", len,
		 (double)(wt_now_ns(CLOCK_MONOTONIC) - t0) / 1e6, rc, insert_sql);
	return rc;
}

const char *hub_ch_cluster(const hub_ch *ch)
{
	return ch->conf->cluster && *ch->conf->cluster ? ch->conf->cluster : NULL;
}

const char *hub_ch_database(const hub_ch *ch)
{
	return ch->conf->database ? ch->conf->database : "";
}

int hub_ch_ping(hub_ch *ch, wt_err *err)
{
	wt_buf b = WT_BUF_INIT;
	int rc = do_request(ch, REQ_PING, NULL, NULL, 0, &b, err);
	wt_buf_free(&b);
	return rc;
}
