/*
 * repl_apply.c — store one replication batch exactly once (the protocol
 * and the argument for exactness are in repl.h; docs/operations.md
 * "## Replication" has the operator's view).
 *
 * Per batch: look up the ledger for the batch's seqs; write "started" rows
 * for new seqs; for every seq not yet applied decode the original (with the
 * same options the edge used), put it in the object store, and collect
 * sample rows and the edge's rollup rows into per-day buffers; insert each
 * day's rows with one INSERT; insert the raw-object index rows; then the
 * "applied" ledger rows. Only then is the batch acknowledged.
 *
 * The object store puts (hash, write, fsync) run in a helper thread while
 * the next uploads are decoded; every put has finished, successfully,
 * before the first data row is inserted.
 */
#include "repl.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ch_format.h"
#include "compress.h"
#include "edge_projects.h"
#include "format.h"
#include "hub.h"
#include "ingest.h"
#include "log.h"
#include "proto/repl.pb-c.h"
#include "repl_decode.h"
#include "recording_rules.h"
#include "repl_rollup.h"

typedef Watchtower__Repl__Batch pb_batch;
typedef Watchtower__Repl__Upload pb_upload;
typedef Watchtower__Repl__RollupRow pb_rollup_row;

#define ROLLUP_INSERT_SQL \
	"INSERT INTO function_rollup_v1 (minute, project, service, sample_type, unit, function," \
	" self, total, retention_days) FORMAT RowBinary"
/* Marker rows: one per (upload, day) in the same INSERT as that day's
 * rollup rows. self = 1 so SummingMergeTree never drops them (it drops rows
 * whose summed columns are all zero); their sample_type keeps them out of
 * every query, which always selects a real type. */
#define MARKER_TYPE "_repl_marker"
#define LEDGER_STARTED 1
#define LEDGER_APPLIED 2
#define LEDGER_REJECTED 3
#define MAX_DAYS 64 /* distinct days one upload may touch before we refuse it */

/* What we know of one upload of the batch while applying it. */
typedef struct up_state {
	const pb_upload *u;
	int state;           /* highest ledger state seen (0 = none) */
	char upload_id[160];
	char *project, *service; /* from the header (owned) */
	int retention_days;
	int rejected;
	char detail[300];
	int64_t time_ns;
	int raw_index;       /* write its raw_objects_v1 row once stored */
	const char *format;  /* detected format (static string) */
	char key[HUB_OBJSTORE_KEY_MAX]; /* object store key, set by the put */
	hub_repl_rollup own; /* the hub's rollup of the original (repl_rollup.h) */
	int has_own;
	struct hub_rules_pending *rules; /* recording-rule values (recording_rules.h) */
	int recovery;        /* ledger said "started": values may be stored */
} up_state;

/* Per-batch cache of project retention. */
typedef struct proj_ret {
	char name[128];
	int days;
} proj_ret;

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Crash injection for the recovery tests: WT_FAILPOINT=<name> makes the
 * hub die right there, as a kill -9 would, between two inserts. */
static void failpoint(const char *name)
{
	const char *fp = getenv("WT_FAILPOINT");

	if (fp && !strcmp(fp, name)) {
		wt_error("msg=\"failpoint reached; exiting\" failpoint=%s", name);
		_exit(137);
	}
}

/* ---- ledger -------------------------------------------------------------- */
typedef struct ledger_ctx {
	up_state *ups;
	size_t n;
} ledger_ctx;

static int ledger_row(void *vctx, char **f, size_t n)
{
	ledger_ctx *c = vctx;
	uint64_t seq;
	size_t i;

	if (n < 2)
		return 0;
	seq = strtoull(f[0], NULL, 10);
	for (i = 0; i < c->n; i++)
		if (c->ups[i].u->seq == seq) {
			int st = atoi(f[1]);
			if (st > c->ups[i].state)
				c->ups[i].state = st;
		}
	return 0;
}

static int ledger_lookup(hub_ch *ch, const char *edge, const pb_batch *b, up_state *ups, size_t n,
			 wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	ledger_ctx c = {ups, n};
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		if (ups[i].u->seq < lo)
			lo = ups[i].u->seq;
		if (ups[i].u->seq > hi)
			hi = ups[i].u->seq;
	}
	(void)b;
	wt_buf_puts(&sql, "SELECT seq, max(state) FROM repl_ledger_v1 WHERE edge_id = ");
	hub_sql_quote(&sql, edge);
	wt_buf_printf(&sql, " AND seq BETWEEN %" PRIu64 " AND %" PRIu64 " GROUP BY seq FORMAT TabSeparated",
		      lo, hi);
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 2, ledger_row, &c);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int ledger_write(hub_ch *ch, const char *edge, up_state *ups, size_t n, int which,
			wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	size_t i, rows = 0;
	int rc = 0;

	wt_buf_puts(&sql, "INSERT INTO repl_ledger_v1 (edge_id, seq, state, upload_id, project, service,"
			  " time_ns, detail) VALUES ");
	for (i = 0; i < n; i++) {
		up_state *s = &ups[i];
		int st;
		if (which == LEDGER_STARTED) {
			if (s->state >= LEDGER_STARTED)
				continue; /* already started (recovery) or done */
			st = LEDGER_STARTED;
		} else {
			if (s->state >= LEDGER_APPLIED)
				continue;
			st = s->rejected ? LEDGER_REJECTED : LEDGER_APPLIED;
		}
		if (rows++)
			wt_buf_puts(&sql, ", ");
		wt_buf_puts(&sql, "(");
		hub_sql_quote(&sql, edge);
		wt_buf_printf(&sql, ", %" PRIu64 ", %d, ", s->u->seq, st);
		hub_sql_quote(&sql, s->upload_id);
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, s->project ? s->project : "");
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, s->service ? s->service : "");
		wt_buf_printf(&sql, ", %" PRIu64 ", ", (uint64_t)hub_now_ns());
		hub_sql_quote(&sql, st == LEDGER_REJECTED ? s->detail : "");
		wt_buf_puts(&sql, ")");
	}
	if (rows)
		rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

/* ---- recovery checks (only for seqs the ledger shows as started) ---------- */
typedef struct days_ctx {
	uint16_t days[MAX_DAYS];
	size_t n;
	int by_minute; /* values are unix seconds of a minute, not day numbers */
} days_ctx;

static int day_row(void *vctx, char **f, size_t n)
{
	days_ctx *c = vctx;
	uint64_t v;

	if (n < 1 || c->n >= MAX_DAYS)
		return 0;
	v = strtoull(f[0], NULL, 10);
	c->days[c->n++] = (uint16_t)(c->by_minute ? v / 86400 : v);
	return 0;
}

static int query_days(hub_ch *ch, const char *table_sql, const up_state *s, days_ctx *d, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, table_sql);
	hub_sql_quote(&sql, s->project);
	wt_buf_puts(&sql, " AND service = ");
	hub_sql_quote(&sql, s->service);
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 1, day_row, d);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

/* Days whose sample rows / rollup rows of upload s are already stored. */
static int stored_days(hub_ch *ch, const up_state *s, days_ctx *samples, days_ctx *rollup, wt_err *err)
{
	wt_buf q = WT_BUF_INIT;
	int rc;

	memset(samples, 0, sizeof(*samples));
	memset(rollup, 0, sizeof(*rollup));
	rollup->by_minute = 1;
	wt_buf_puts(&q, "SELECT DISTINCT toUInt16(date) FROM profile_samples_v1 WHERE upload_id = ");
	hub_sql_quote(&q, s->upload_id);
	wt_buf_puts(&q, " AND project = ");
	wt_buf_putc(&q, 0);
	rc = q.oom ? WT_ENOMEM : query_days(ch, (const char *)q.data, s, samples, err);
	wt_buf_reset(&q);
	wt_buf_puts(&q, "SELECT DISTINCT toUInt32(minute) FROM function_rollup_v1 WHERE sample_type = '"
			MARKER_TYPE "' AND function = ");
	{
		char fn[200];
		snprintf(fn, sizeof(fn), "repl:%s", s->upload_id);
		hub_sql_quote(&q, fn);
	}
	wt_buf_puts(&q, " AND project = ");
	wt_buf_putc(&q, 0);
	if (!rc)
		rc = q.oom ? WT_ENOMEM : query_days(ch, (const char *)q.data, s, rollup, err);
	wt_buf_free(&q);
	return rc;
}

static int day_in(const days_ctx *d, uint16_t day)
{
	size_t i;
	for (i = 0; i < d->n; i++)
		if (d->days[i] == day)
			return 1;
	return 0;
}

static int raw_index_exists(hub_ch *ch, const up_state *s, int *exists, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "SELECT count() FROM raw_objects_v1 WHERE project = ");
	hub_sql_quote(&sql, s->project);
	wt_buf_puts(&sql, " AND upload_id = ");
	hub_sql_quote(&sql, s->upload_id);
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	*exists = !rc && out.len && atoll((const char *)out.data) > 0;
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

/* ---- object store puts, overlapped with decoding ---------------------------- */
typedef struct putter {
	hub_ctx *ctx;
	up_state *ups;
	size_t *queue, nq, head; /* indices into ups, capacity = uploads */
	int closed, started, rc;
	wt_err err;
	int64_t ns;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} putter;

static int put_one(putter *p, up_state *s, wt_err *err)
{
	int64_t t0 = hub_now_ns();
	int rc = hub_objstore_put_upload(p->ctx->os, s->project, s->upload_id, s->u->original.data,
					 s->u->original.len, s->key, sizeof(s->key), err);
	p->ns += hub_now_ns() - t0;
	if (rc)
		atomic_fetch_add(&p->ctx->metrics.objstore_errors_total, 1);
	return rc;
}

static void *putter_main(void *arg)
{
	putter *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->head == p->nq && !p->closed)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->head == p->nq)
			break;
		up_state *s = &p->ups[p->queue[p->head++]];
		int failed = p->rc != 0;
		pthread_mutex_unlock(&p->mu);
		wt_err e = {0, ""};
		int rc = failed ? 0 : put_one(p, s, &e); /* after a failure the batch fails anyway */
		pthread_mutex_lock(&p->mu);
		if (rc && !p->rc) {
			p->rc = rc;
			p->err = e;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Without the thread (it could not start) puts happen in place. */
static void putter_start(putter *p, hub_ctx *ctx, up_state *ups, size_t n)
{
	memset(p, 0, sizeof(*p));
	p->ctx = ctx;
	p->ups = ups;
	p->queue = calloc(n ? n : 1, sizeof(*p->queue));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (p->queue && pthread_create(&p->th, NULL, putter_main, p) == 0)
		p->started = 1;
}

static int putter_add(putter *p, size_t i, wt_err *err)
{
	if (!p->started) {
		int rc = put_one(p, &p->ups[i], err);
		return rc ? WT_EUNAVAIL : 0;
	}
	pthread_mutex_lock(&p->mu);
	p->queue[p->nq++] = i;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* Wait for every queued put; WT_EUNAVAIL (first failure in err) if any
 * failed. Safe to call twice. */
static int putter_finish(putter *p, wt_err *err)
{
	if (p->started) {
		pthread_mutex_lock(&p->mu);
		p->closed = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->th, NULL);
		p->started = 0;
	}
	if (p->rc && err)
		*err = p->err;
	return p->rc ? WT_EUNAVAIL : 0;
}

static void putter_free(putter *p)
{
	putter_finish(p, NULL);
	free(p->queue);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
}

/* ---- rows ---------------------------------------------------------------------- */
static int add_rollup_rows(const up_state *s, const days_ctx *skip, hub_daysink *sink, size_t *nrows)
{
	uint16_t marked[MAX_DAYS];
	size_t nmarked = 0, i, k;
	/* the hub's own rows when it decoded the original; the edge's only
	 * for an upload sent without one (raw dropped by the edge's quota) */
	pb_rollup_row *const *rows = s->has_own ? s->own.ptrs : s->u->rollup;
	size_t nrows_in = s->has_own ? s->own.n : s->u->n_rollup;

	for (i = 0; i < nrows_in; i++) {
		const pb_rollup_row *r = rows[i];
		int64_t sec = r->minute * 60;
		uint32_t usec = sec < 0 ? 0 : sec > UINT32_MAX ? UINT32_MAX : (uint32_t)sec;
		uint16_t day = (uint16_t)(usec / 86400);
		hub_dayrows *dr;

		if (day_in(skip, day))
			continue;
		if (!(dr = hub_daysink_get(sink, day)))
			return WT_ENOMEM;
		for (k = 0; k < nmarked; k++)
			if (marked[k] == day)
				break;
		if (k == nmarked) {
			char fn[200];
			if (nmarked == MAX_DAYS)
				return WT_ELIMIT;
			marked[nmarked++] = day;
			snprintf(fn, sizeof(fn), "repl:%s", s->upload_id);
			hub_rb_u32(&dr->rows, usec);
			hub_rb_cstr(&dr->rows, s->project);
			hub_rb_cstr(&dr->rows, s->service);
			hub_rb_cstr(&dr->rows, MARKER_TYPE);
			hub_rb_cstr(&dr->rows, "");
			hub_rb_cstr(&dr->rows, fn);
			hub_rb_i64(&dr->rows, 1);
			hub_rb_i64(&dr->rows, 0);
			hub_rb_u16(&dr->rows, (uint16_t)s->retention_days);
			dr->nrows++;
		}
		if (!r->self && !r->total)
			continue;
		hub_rb_u32(&dr->rows, usec);
		hub_rb_cstr(&dr->rows, s->project);
		hub_rb_cstr(&dr->rows, s->service);
		hub_rb_cstr(&dr->rows, r->type ? r->type : "");
		hub_rb_cstr(&dr->rows, r->unit ? r->unit : "");
		hub_rb_cstr(&dr->rows, r->function ? r->function : "");
		hub_rb_i64(&dr->rows, r->self);
		hub_rb_i64(&dr->rows, r->total);
		hub_rb_u16(&dr->rows, (uint16_t)s->retention_days);
		dr->nrows++;
		(*nrows)++;
		if (dr->rows.oom)
			return WT_ENOMEM;
	}
	return 0;
}

static void raw_index_row(wt_buf *sql, size_t *nrows, const up_state *s, const char *key,
			  const char *format, size_t size)
{
	if ((*nrows)++)
		wt_buf_puts(sql, ", ");
	wt_buf_printf(sql, "(toDate(%u), %" PRIu64 ", ", (unsigned)hub_date_of_ns(s->time_ns),
		      (uint64_t)s->time_ns);
	hub_sql_quote(sql, s->project);
	wt_buf_puts(sql, ", ");
	hub_sql_quote(sql, s->service);
	wt_buf_puts(sql, ", ");
	hub_sql_quote(sql, s->upload_id);
	wt_buf_puts(sql, ", ");
	hub_sql_quote(sql, key);
	wt_buf_puts(sql, ", ");
	hub_sql_quote(sql, format);
	wt_buf_printf(sql, ", %zu, 0)", size);
}

/* wt_format_decode, except that an OTLP request the edge split by service
 * (header "otlp_service") yields only that service's profile: the edge
 * stores the whole request once per service it contains. */
/* Decode an upload's original exactly as the edge did, store it, and
 * append its sample rows to sink. A decode failure marks the upload
 * rejected (its rollup is still stored) rather than failing the batch. */
static int apply_original(hub_ctx *ctx, hub_ch *ch, up_state *s, size_t idx, json_t *hdr, const days_ctx *skip,
			  int recovery, hub_daysink *sink, putter *put, hub_repl_result *res, wt_err *err)
{
	const pb_upload *u = s->u;
	wt_limits lim;
	wt_format det = WT_FMT_AUTO;
	wt_profile *p = NULL;
	hub_ingest_req rq;
	hub_ingest_stats st;
	hub_label_param lp[64];
	json_t *labels = json_object_get(hdr, "labels"), *v;
	const char *k;
	size_t nlp = 0;
	wt_err derr = {0, ""}, rerr = {0, ""};
	int rc = 0, exists = 0;

	wt_limits_default(&lim);
	lim.max_body = ctx->cfg.max_body;
	if (hub_repl_decode_upload(u, hdr, &lim, &p, &det, &derr)) {
		s->rejected = 1;
		snprintf(s->detail, sizeof(s->detail), "decode: %s", derr.msg);
		wt_warn("msg=\"replicated upload rejected\" upload=%s error=\"%s\"", s->upload_id, derr.msg);
		return 0;
	}
	s->time_ns = p->time_ns;
	if ((rc = hub_repl_rollup_build(p, u->received_ns, &s->own, err)))
		goto out;
	s->has_own = 1;
	if (hub_repl_rollup_diff(&s->own, u->rollup, u->n_rollup))
		wt_warn("msg=\"the edge's rollup differs from its original; storing the hub's\" upload=%s"
			" rows_differing=%zu", s->upload_id, hub_repl_rollup_diff(&s->own, u->rollup, u->n_rollup));
	if (json_is_object(labels)) {
		json_object_foreach(labels, k, v) {
			if (nlp < sizeof(lp) / sizeof(lp[0]) && json_is_string(v)) {
				lp[nlp].key = k;
				lp[nlp].value = json_string_value(v);
				nlp++;
			}
		}
	}
	if ((rc = putter_add(put, idx, err)))
		goto out;
	memset(&rq, 0, sizeof(rq));
	rq.project = s->project;
	rq.service = s->service;
	rq.upload_id = s->upload_id;
	rq.retention_days = s->retention_days;
	rq.labels = lp;
	rq.nlabels = nlp;
	rq.batch_rows = ctx->cfg.ch_insert_batch_rows;
	rq.stacks = ctx->stacks;
	rq.cache_generation = atomic_load(&ctx->store.transitions);
	rq.sink = sink;
	rq.skip_days = skip->days;
	rq.nskip_days = skip->n;
	if ((rc = hub_ingest_profile(ch, &rq, p, u->received_ns, &st, err)))
		goto out;
	res->sample_rows += st.sample_rows;
	s->recovery = recovery;
	if (hub_rules_eval(ch, s->project, s->service, s->upload_id, lp, nlp, p, u->received_ns, &s->rules, &rerr))
		wt_warn("msg=\"recording rules not applied\" upload=%s error=\"%s\"", s->upload_id, rerr.msg);
	if (recovery && (rc = raw_index_exists(ch, s, &exists, err)))
		goto out;
	s->raw_index = !exists;
	s->format = wt_format_name(det);
out:
	wt_profile_free(p);
	return rc;
}

static int insert_days(hub_ch *ch, const char *sql, hub_daysink *sink, wt_err *err)
{
	size_t i;
	int rc;

	for (i = 0; i < sink->n; i++) {
		if (!sink->d[i].rows.len)
			continue;
		if (sink->d[i].rows.oom)
			return wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
		if ((rc = hub_ch_insert(ch, sql, sink->d[i].rows.data, sink->d[i].rows.len, err)))
			return rc;
	}
	return 0;
}

int hub_repl_apply(hub_ctx *ctx, hub_ch *ch, const char *peer_id, const uint8_t *buf, size_t len,
		   hub_repl_result *res, wt_err *err)
{
	pb_batch *b = NULL;
	up_state *ups = NULL;
	proj_ret *rets = NULL;
	size_t nrets = 0, i, nraw = 0;
	hub_daysink samples = {0}, rollups = {0};
	wt_buf rawsql = WT_BUF_INIT;
	json_t **hdrs = NULL;
	putter put;
	int put_on = 0;
	int64_t t0, t1;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	b = watchtower__repl__batch__unpack(NULL, len, buf);
	if (!b)
		return wt_err_set(err, WT_EINVAL, "replication batch: not a valid protobuf Batch (%zu bytes)", len);
	if (!b->edge_id || strcmp(b->edge_id, peer_id)) {
		rc = wt_err_set(err, WT_EFORBIDDEN,
				"replication batch: edge id \"%.64s\" does not match the client certificate \"%.64s\"",
				b->edge_id ? b->edge_id : "", peer_id);
		goto out;
	}
	for (i = 0; i < b->n_uploads; i++) {
		uint64_t seq = b->uploads[i]->seq;
		if (seq < b->first_seq || seq > b->last_seq || (i && seq <= b->uploads[i - 1]->seq)) {
			rc = wt_err_set(err, WT_EINVAL, "replication batch: upload[%zu].seq %" PRIu64
					" out of order or outside [%" PRIu64 ", %" PRIu64 "]", i, seq,
					b->first_seq, b->last_seq);
			goto out;
		}
	}
	res->last_seq = b->last_seq;
	if (!b->n_uploads)
		goto out;
	if ((rc = hub_store_check(&ctx->store, err)))
		goto out;
	/* the edge's registered projects and its seq bound (edge_projects.h);
	 * before anything else looks at a project, so an edge cannot probe
	 * which projects exist */
	if ((rc = hub_edge_batch_admit(ch, b, err)))
		goto out;

	ups = calloc(b->n_uploads, sizeof(*ups));
	hdrs = calloc(b->n_uploads, sizeof(*hdrs));
	rets = calloc(b->n_uploads, sizeof(*rets));
	if (!ups || !hdrs || !rets) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	/* Headers first: a malformed batch is refused before anything is written. */
	for (i = 0; i < b->n_uploads; i++) {
		up_state *s = &ups[i];
		json_error_t je;
		const char *proj, *svc;
		size_t r;

		s->u = b->uploads[i];
		snprintf(s->upload_id, sizeof(s->upload_id), "%s-%" PRIu64, b->edge_id, s->u->seq);
		hdrs[i] = json_loadb((const char *)s->u->header_json.data, s->u->header_json.len, 0, &je);
		proj = hdrs[i] ? jstr(hdrs[i], "project") : NULL;
		svc = hdrs[i] ? jstr(hdrs[i], "service") : NULL;
		if (!proj || !svc || !hub_project_name_valid(proj)) {
			rc = wt_err_set(err, WT_EINVAL, "replication batch: upload seq %" PRIu64
					": header lacks a valid project/service", s->u->seq);
			goto out;
		}
		s->project = strdup(proj);
		s->service = strdup(svc);
		s->time_ns = s->u->received_ns;
		if (!s->project || !s->service) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		for (r = 0; r < nrets; r++)
			if (!strcmp(rets[r].name, proj))
				break;
		if (r == nrets) {
			snprintf(rets[r].name, sizeof(rets[r].name), "%s", proj);
			if ((rc = hub_project_retention(ch, proj, &rets[r].days, err)))
				goto out; /* unknown project: retry once it exists */
			nrets++;
		}
		s->retention_days = rets[r].days;
	}

	t0 = hub_now_ns();
	if ((rc = ledger_lookup(ch, b->edge_id, b, ups, b->n_uploads, err)) ||
	    (rc = ledger_write(ch, b->edge_id, ups, b->n_uploads, LEDGER_STARTED, err)))
		goto out;
	t1 = hub_now_ns();
	res->ledger_ns += t1 - t0;

	wt_buf_puts(&rawsql, "INSERT INTO raw_objects_v1 (date, time_ns, project, service, upload_id,"
			     " object_key, format, size, deleted) VALUES ");
	putter_start(&put, ctx, ups, b->n_uploads);
	put_on = 1;
	for (i = 0; i < b->n_uploads; i++) {
		up_state *s = &ups[i];
		days_ctx skip_s = {{0}, 0, 0}, skip_r = {{0}, 0, 1};
		int recovery = s->state == LEDGER_STARTED;

		if (s->state >= LEDGER_APPLIED) {
			res->duplicates++;
			continue;
		}
		if (recovery) {
			if ((rc = stored_days(ch, s, &skip_s, &skip_r, err)))
				goto out;
			res->recovered++;
			wt_info("msg=\"recovering interrupted replicated upload\" upload=%s sample_days_done=%zu"
				" rollup_days_done=%zu", s->upload_id, skip_s.n, skip_r.n);
		}
		if (s->u->original.len &&
		    (rc = apply_original(ctx, ch, s, i, hdrs[i], &skip_s, recovery, &samples, &put, res, err)))
			goto out;
		/* a rejected original: no rollup of it is trusted */
		if (!s->rejected && (rc = add_rollup_rows(s, &skip_r, &rollups, &res->rollup_rows))) {
			rc = wt_err_set(err, rc, "replication batch: upload seq %" PRIu64
					": rollup rows (%s)", s->u->seq, rc == WT_ELIMIT ? "too many days" : "out of memory");
			goto out;
		}
		if (s->rejected)
			res->rejected++;
		else
			res->applied++;
	}
	/* every original is stored before any data row refers to it */
	t0 = hub_now_ns();
	res->prepare_ns += t0 - t1;
	if ((rc = putter_finish(&put, err)))
		goto out;
	res->objstore_ns = put.ns;
	res->objstore_wait_ns = hub_now_ns() - t0;
	for (i = 0; i < b->n_uploads; i++)
		if (ups[i].raw_index)
			raw_index_row(&rawsql, &nraw, &ups[i], ups[i].key, ups[i].format, ups[i].u->original.len);
	t0 = hub_now_ns();
	if ((rc = insert_days(ch, hub_samples_insert_sql, &samples, err)))
		goto out;
	failpoint("repl_after_samples");
	if ((rc = insert_days(ch, ROLLUP_INSERT_SQL, &rollups, err)))
		goto out;
	failpoint("repl_after_rollups");
	if (nraw && (rc = hub_ch_query_buf(ch, &rawsql, NULL, err)))
		goto out;
	for (i = 0; i < b->n_uploads; i++) {
		wt_err rerr = {0, ""};
		if (ups[i].rules && hub_rules_store(ch, ups[i].rules, ups[i].recovery, &rerr))
			wt_warn("msg=\"recording rule values not stored\" upload=%s error=\"%s\"", ups[i].upload_id,
				rerr.msg);
	}
	t1 = hub_now_ns();
	res->insert_ns += t1 - t0;
	rc = ledger_write(ch, b->edge_id, ups, b->n_uploads, LEDGER_APPLIED, err);
	for (i = 0; !rc && i < b->n_uploads; i++)
		hub_rules_count(ups[i].rules);
	res->ledger_ns += hub_now_ns() - t1;
out:
	if (put_on)
		putter_free(&put);
	if (rc == WT_EIO || rc == WT_EUNAVAIL)
		atomic_fetch_add(&ctx->metrics.ch_errors_total, 1);
	if (ups)
		for (i = 0; i < b->n_uploads; i++) {
			free(ups[i].project);
			free(ups[i].service);
			hub_rules_pending_free(ups[i].rules);
			hub_repl_rollup_free(&ups[i].own);
			json_decref(hdrs ? hdrs[i] : NULL);
		}
	free(ups);
	free(hdrs);
	free(rets);
	hub_daysink_free(&samples);
	hub_daysink_free(&rollups);
	wt_buf_free(&rawsql);
	watchtower__repl__batch__free_unpacked(b, NULL);
	return rc;
}
