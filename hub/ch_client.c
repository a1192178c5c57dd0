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

static int do_request(hub_ch *ch, int kind, const char *sql, const void *data, size_t len,
		      wt_buf *out, wt_err *err)
{
	const hub_ch_conf *c = ch->conf;
	CURL *h = ch->curl;
	wt_buf url = WT_BUF_INIT;
	int attempt, rc = 0;
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

	for (attempt = 0;; attempt++) {
		wt_buf err_body = WT_BUF_INIT; /* body of a non-2xx answer, first KiB */
		wt_http_sink s = {out, c->max_result_bytes, out_len0, 0, 0, &err_body, 1024};
		CURLcode cc;
		long status = 0;
		int transient = 0, nothing_sent = 0;

		if (out)
			out->len = out_len0;
		curl_easy_reset(h);
		curl_easy_setopt(h, CURLOPT_URL, (const char *)url.data);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(kind == REQ_PING ? c->connect_timeout_ms : c->timeout_ms));
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wt_http_sink_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
		curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
		if (c->user && *c->user) {
			curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
			curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
			curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
		}
		if (kind == REQ_INSERT) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, data);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		} else if (kind != REQ_PING) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, sql);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(sql));
		}
		/* An error answer lands in out too; it is moved out below. */
		cc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
		if (s.over) {
			wt_buf_free(&err_body);
			rc = wt_err_set(err, WT_ELIMIT, "clickhouse: result larger than %zu bytes", c->max_result_bytes);
			goto out;
		}
		if (cc == CURLE_OK && status >= 200 && status < 300) {
			wt_buf_free(&err_body);
			rc = 0;
			goto out;
		}
		if (cc == CURLE_OK) {
			char line[400];
			const wt_buf *eb = out ? out : &err_body;
			wt_buf tmp = WT_BUF_INIT;
			if (out) {
				/* error text landed in out after out_len0 */
				wt_buf_append(&tmp, out->data + out_len0, out->len - out_len0);
				out->len = out_len0;
				eb = &tmp;
			}
			first_line(eb, line, sizeof(line));
			wt_buf_free(&tmp);
			wt_buf_free(&err_body);
			/* 503 / "too many simultaneous queries" are transient. */
			transient = status == 503 || strstr(line, "Code: 202") != NULL;
			rc = wt_err_set(err, transient ? WT_EUNAVAIL : WT_EIO,
					"clickhouse: HTTP %ld: %s", status, line);
		} else {
			wt_buf_free(&err_body);
			nothing_sent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
			transient = 1;
			rc = wt_err_set(err, WT_EUNAVAIL, "clickhouse unreachable at %s: %s", c->url,
					curl_easy_strerror(cc));
			if (down_hook && (nothing_sent || cc == CURLE_OPERATION_TIMEDOUT))
				down_hook();
		}
		if (!transient || attempt >= retries)
			break;
		if (kind == REQ_INSERT && !nothing_sent && !hub_ch_cluster(ch))
			break;
		wt_sleep_ms(wt_backoff_ms(&(wt_backoff){c->backoff_ms, 0, 0}, (unsigned)attempt));
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
	return do_request(ch, REQ_INSERT, insert_sql, data, len, NULL, err);
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
