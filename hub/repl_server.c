/*
 * repl_server.c — the hub's replication listener: mutual TLS on
 * replication.listen (hub/tls_server.c, worker threads), one endpoint
 * `POST /v1/replicate` taking a zstd-compressed protobuf Batch from an edge
 * whose certificate names it, applied by hub_repl_apply() (repl_apply.c).
 *
 * Each TLS worker thread lazily gets its own ClickHouse client (a libcurl
 * handle is not shareable), freed when the thread ends. Per-edge progress
 * (last acknowledged seq, lag) is kept here for /metrics.
 */
#include "repl.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "edge_config.h"
#include "hub.h"
#include "listen_addr.h"
#include "log.h"
#include "prom.h"
#include "server.h"
#include "tls_server.h"

#define MAX_BATCH_DECOMPRESSED (1024u << 20) /* 1 GiB of protobuf per batch */
#define MAX_EDGES 1024

typedef struct edge_prog {
	char id[128];
	char incarnation[72];  /* of its latest applied batch */
	uint64_t inc_last_seq; /* highest seq applied in that incarnation */
	uint64_t last_seq;
	int64_t last_ok_ns;       /* when its last batch was applied */
	int64_t newest_received_ns; /* received_ns of the newest upload applied */
	uint64_t batches, applied, duplicates, rejected, recovered, errors, busy;
} edge_prog;

typedef struct hub_repl_server {
	hub_ctx *ctx;
	hub_tls_server *tls;
} hub_repl_server;


/* After a large batch the heap pages its decoding used go back to the
 * kernel (glibc keeps each thread's arena at its high-water mark), as
 * hub/server.c does after a large request. */
#define REPL_TRIM_AFTER_BYTES ((size_t)1 << 20)

static void trim_after(size_t body_len, size_t plain_len)
{
	if (body_len >= REPL_TRIM_AFTER_BYTES || plain_len >= REPL_TRIM_AFTER_BYTES)
		hub_memory_trim();
}

static pthread_mutex_t prog_mu = PTHREAD_MUTEX_INITIALIZER;
static edge_prog progs[MAX_EDGES];
static size_t nprogs;
static pthread_key_t ch_key;
static pthread_once_t ch_once = PTHREAD_ONCE_INIT;

static void ch_free_cb(void *p)
{
	hub_ch_free(p);
}

static void ch_key_init(void)
{
	pthread_key_create(&ch_key, ch_free_cb);
}

static hub_ch *thread_ch(hub_ctx *ctx)
{
	hub_ch *ch;

	pthread_once(&ch_once, ch_key_init);
	ch = pthread_getspecific(ch_key);
	if (!ch && (ch = hub_ch_new(&ctx->chconf)))
		pthread_setspecific(ch_key, ch);
	return ch;
}

/* Progress entry of an edge (created on first use); call with prog_mu held. */
static edge_prog *prog_of(const char *id)
{
	size_t i;

	for (i = 0; i < nprogs; i++)
		if (!strcmp(progs[i].id, id))
			return &progs[i];
	if (nprogs == MAX_EDGES)
		return NULL;
	memset(&progs[nprogs], 0, sizeof(progs[0]));
	snprintf(progs[nprogs].id, sizeof(progs[0].id), "%s", id);
	return &progs[nprogs++];
}

/* Send o (owned; NULL = out of memory) as the JSON body with status. */
static int reply_json(hub_tls_response *resp, int status, json_t *o)
{
	char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;

	resp->status = txt ? status : 500;
	snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
	wt_buf_puts(&resp->body, txt ? txt : "{\"error\":\"out_of_memory\",\"detail\":\"encoding the reply failed\"}");
	free(txt);
	json_decref(o);
	return 0;
}

static int reply_error(hub_tls_response *resp, int code, const char *msg)
{
	return reply_json(resp, wt_err_http_status(code),
			  json_pack("{s:s,s:s}", "error", wt_err_name(code), "detail", msg));
}

static int handle(void *vctx, const hub_tls_request *req, hub_tls_response *resp)
{
	hub_repl_server *srv = vctx;
	hub_ctx *ctx = srv->ctx;
	const char *hdr_edge, *enc;
	uint8_t *plain = NULL;
	size_t plen = 0;
	hub_repl_result res;
	wt_err err = {0, ""};
	hub_ch *ch;
	edge_prog *pg;
	int64_t t_start = wt_now_ns(CLOCK_REALTIME);
	int rc;

	memset(&res, 0, sizeof(res));

	if (!strcmp(req->path, "/healthz")) {
		return reply_json(resp, 200, json_pack("{s:s,s:s}", "status", "ok", "peer", req->peer_id));
	}
	if (!strncmp(req->path, "/v1/edges/", 10)) { /* remote config (edge_config.c) */
		if (!(ch = thread_ch(ctx)))
			return reply_error(resp, WT_ENOMEM, "out of memory");
		return hub_edge_config_handle(ctx, ch, req, resp);
	}
	if (strcmp(req->path, "/v1/replicate"))
		return reply_error(resp, WT_ENOTFOUND, "no such endpoint on the replication port");
	if (strcmp(req->method, "POST"))
		return reply_error(resp, WT_EINVAL, "method: use POST");
	hdr_edge = hub_tls_request_header(req, "x-wt-edge-id");
	if (hdr_edge && strcmp(hdr_edge, req->peer_id)) {
		wt_err_set(&err, WT_EFORBIDDEN, "X-WT-Edge-Id \"%.64s\" does not match the client certificate \"%.64s\"",
			   hdr_edge, req->peer_id);
		rc = err.code;
		goto fail;
	}
	enc = hub_tls_request_header(req, "content-encoding");
	if (enc && !strcmp(enc, "zstd")) {
		if ((rc = wt_zstd_decompress(req->body, req->body_len, MAX_BATCH_DECOMPRESSED, &plain, &plen, &err)))
			goto fail;
	} else if (enc && strcmp(enc, "identity")) {
		rc = wt_err_set(&err, WT_EFORMAT, "Content-Encoding \"%.32s\" is not supported (use zstd)", enc);
		goto fail;
	}
	if (!(ch = thread_ch(ctx))) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	rc = hub_repl_apply(ctx, ch, req->peer_id, plain ? plain : req->body, plain ? plen : req->body_len,
			    &res, &err);
	if (rc)
		goto fail;
	pthread_mutex_lock(&prog_mu);
	if ((pg = prog_of(req->peer_id))) {
		if (strcmp(pg->incarnation, res.incarnation)) {
			snprintf(pg->incarnation, sizeof(pg->incarnation), "%s", res.incarnation);
			pg->inc_last_seq = 0;
		}
		if (res.last_seq > pg->inc_last_seq)
			pg->inc_last_seq = res.last_seq;
		if (res.last_seq > pg->last_seq)
			pg->last_seq = res.last_seq;
		pg->last_ok_ns = wt_now_ns(CLOCK_REALTIME);
		pg->batches++;
		pg->applied += res.applied;
		pg->duplicates += res.duplicates;
		pg->rejected += res.rejected;
		pg->recovered += res.recovered;
	}
	pthread_mutex_unlock(&prog_mu);
	if (res.applied || res.duplicates || res.rejected)
		wt_info("msg=\"batch applied\" edge=%s last_seq=%" PRIu64 " applied=%u duplicates=%u rejected=%u"
			" recovered=%u sample_rows=%zu rollup_rows=%zu bytes=%zu ms=%.1f ledger_ms=%.1f prepare_ms=%.1f"
			" objstore_ms=%.1f objstore_wait_ms=%.1f insert_ms=%.1f", req->peer_id, res.last_seq, res.applied, res.duplicates,
			res.rejected, res.recovered, res.sample_rows, res.rollup_rows, plain ? plen : req->body_len,
			(double)(wt_now_ns(CLOCK_REALTIME) - t_start) / 1e6, (double)res.ledger_ns / 1e6, (double)res.prepare_ns / 1e6,
			(double)res.objstore_ns / 1e6, (double)res.objstore_wait_ns / 1e6, (double)res.insert_ns / 1e6);
	{
		json_t *o = json_pack("{s:I,s:i,s:i,s:i,s:s}", "last_seq", (json_int_t)res.last_seq,
				      "applied", (int)res.applied, "duplicates", (int)res.duplicates,
				      "rejected", (int)res.rejected, "incarnation", res.incarnation);
		if (o && res.other_known) {
			json_object_set_new(o, "other_incarnation", json_string(res.other_incarnation));
			json_object_set_new(o, "other_last_seq", json_integer((json_int_t)res.other_last_seq));
		}
		reply_json(resp, 200, o);
	}
	free(plain);
	trim_after(req->body_len, plen);
	return 0;
fail:
	pthread_mutex_lock(&prog_mu);
	if ((pg = prog_of(req->peer_id))) {
		if (rc == WT_EUNAVAIL && res.retry_after_s > 0)
			pg->busy++;
		else
			pg->errors++;
	}
	pthread_mutex_unlock(&prog_mu);
	free(plain);
	trim_after(req->body_len, plen);
	if (rc == WT_EUNAVAIL && res.retry_after_s > 0) {
		/* being applied (here or by another hub): not an error, the
		 * edge asks again after Retry-After */
		wt_info("msg=\"batch deferred: being applied\" edge=%s retry_after_s=%d detail=\"%s\"", req->peer_id,
			res.retry_after_s, err.msg);
		wt_buf_printf(&resp->headers, "Retry-After: %d\r\n", res.retry_after_s);
		return reply_json(resp, 503, json_pack("{s:s,s:s,s:i}", "error", "busy", "detail", err.msg,
						       "retry_after_s", res.retry_after_s));
	}
	wt_warn("msg=\"batch refused\" edge=%s status=%d error=\"%s\"", req->peer_id, wt_err_http_status(rc),
		err.msg);
	return reply_error(resp, rc, err.msg);
}

int hub_repl_server_start(hub_ctx *ctx, hub_repl_server **out, wt_err *err)
{
	hub_repl_server *s;
	hub_tls_server_config c;
	wt_listen_addr la;
	int rc;

	*out = NULL;
	if (!ctx->cfg.repl_listen || !*ctx->cfg.repl_listen)
		return 0;
	if (!ctx->cfg.repl_ca || !*ctx->cfg.repl_ca || !ctx->cfg.repl_cert || !*ctx->cfg.repl_cert ||
	    !ctx->cfg.repl_key || !*ctx->cfg.repl_key)
		return wt_err_set(err, WT_EINVAL, "replication.listen is set but replication.ca/cert/key are not");
	if ((rc = wt_listen_parse(ctx->cfg.repl_listen, "replication.listen", 1, &la, err)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	s->ctx = ctx;
	memset(&c, 0, sizeof(c));
	c.host = la.host;
	c.port = la.port;
	c.ca_file = ctx->cfg.repl_ca;
	c.cert_file = ctx->cfg.repl_cert;
	c.key_file = ctx->cfg.repl_key;
	c.max_body = 256u << 20;
	c.handler = handle;
	c.ctx = s;
	if ((rc = hub_tls_server_start(&c, &s->tls, err))) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void hub_repl_server_stop(hub_repl_server *s)
{
	if (!s)
		return;
	hub_tls_server_stop(s->tls);
	free(s);
}

int hub_repl_server_reload(hub_repl_server *s, wt_err *err)
{
	return s ? hub_tls_server_reload(s->tls, err) : 0;
}

/* Prometheus text of replication progress (server.c's /metrics calls it). */
int hub_repl_metrics_render(wt_buf *out)
{
	size_t i;
	int64_t now = wt_now_ns(CLOCK_REALTIME);

	static const struct {
		const char *name, *help;
		size_t off;
	} ctr[] = {
		{"wt_hub_repl_batches_total", "Replication batches applied, per edge.", offsetof(edge_prog, batches)},
		{"wt_hub_repl_uploads_applied_total", "Replicated uploads stored.", offsetof(edge_prog, applied)},
		{"wt_hub_repl_duplicates_skipped_total", "Retried uploads that were already applied.",
		 offsetof(edge_prog, duplicates)},
		{"wt_hub_repl_rejected_total", "Replicated uploads the hub could not decode.", offsetof(edge_prog, rejected)},
		{"wt_hub_repl_recovered_total", "Uploads completed after an interrupted apply.",
		 offsetof(edge_prog, recovered)},
		{"wt_hub_repl_errors_total", "Batches refused (the edge retries).", offsetof(edge_prog, errors)},
		{"wt_hub_repl_busy_total", "Batches deferred (503 Retry-After) because another request was applying their seqs.",
		 offsetof(edge_prog, busy)},
	};

	pthread_mutex_lock(&prog_mu);
	for (size_t c = 0; c < sizeof(ctr) / sizeof(ctr[0]); c++) {
		wt_prom_family(out, ctr[c].name, "counter", ctr[c].help);
		for (i = 0; i < nprogs; i++)
			wt_prom_u64(out, ctr[c].name, "edge", progs[i].id,
				    *(const uint64_t *)((const char *)&progs[i] + ctr[c].off));
	}
	wt_prom_family(out, "wt_hub_repl_incarnation_last_seq", "gauge",
		       "Highest seq applied in the edge's current incarnation (its data dir; seqs restart in a new one).");
	for (i = 0; i < nprogs; i++)
		if (progs[i].batches) {
			const char *kv[] = {"edge", progs[i].id, "incarnation", progs[i].incarnation, NULL};
			wt_prom_labels_i64(out, "wt_hub_repl_incarnation_last_seq", kv, (int64_t)progs[i].inc_last_seq);
		}
	wt_prom_family(out, "wt_hub_repl_last_seq", "gauge", "Highest sequence acknowledged to the edge.");
	for (i = 0; i < nprogs; i++)
		wt_prom_u64(out, "wt_hub_repl_last_seq", "edge", progs[i].id, progs[i].last_seq);
	wt_prom_family(out, "wt_hub_repl_seconds_since_last_batch", "gauge",
		       "Seconds since the edge's last applied batch.");
	for (i = 0; i < nprogs; i++)
		wt_prom_f(out, "wt_hub_repl_seconds_since_last_batch", "edge", progs[i].id, 3,
			  progs[i].last_ok_ns ? (double)(now - progs[i].last_ok_ns) / 1e9 : -1.0);
	pthread_mutex_unlock(&prog_mu);
	return out->oom ? WT_ENOMEM : 0;
}
