/*
 * repl_apply.c — store one replication batch exactly once (the protocol
 * and the argument for exactness are in repl.h; docs/operations.md
 * "## Replication" has the operator's view).
 *
 * Per batch: check its headers and that the edge may write its projects
 * and seqs (edge_projects.c: a refused batch writes nothing, not even a
 * claim); claim its seqs (repl_claim.c); look up the ledger for them;
 * for every seq not yet applied decode the original (with the same options
 * the edge used), put it in the object store, and collect sample rows and
 * the edge's rollup rows into per-day buffers cut into bounded blocks; once
 * the claim is decided, write "started" ledger rows, insert the blocks, the
 * raw-object index rows, then the "applied" ledger rows. Only then is the
 * batch acknowledged. A seq found "started" was interrupted: what its
 * earlier attempt stored is counted first and only the rest is inserted.
 *
 * A batch whose rows fill a first INSERT block does the "once the claim
 * is decided" part right then and inserts every further block as it
 * fills (apply_run: "live"), so a large upload's rows are never all in
 * memory; each upload's rollup is built after its sample rows, when only
 * the profile is left to free, and freed once in rows.
 *
 * The object store puts (hash, write, fsync) run in a helper thread while
 * the next uploads are decoded; every put has finished, successfully,
 * before the first data row is inserted (after a batch went live, the
 * rest are stored in place, each before its upload's rows).
 */
#include "repl.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ch_format.h"
#include "edge_projects.h"
#include "failpoint.h"
#include "format.h"
#include "hub.h"
#include "ch_rows.h"
#include "log.h"
#include "proto/repl.pb-c.h"
#include "recording_rules.h"
#include "repl_claim.h"
#include "repl_decode.h"
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
/* Largest INSERT block: ClickHouse's default max_insert_block_size, so one
 * INSERT of at most this many rows is one block (one part per partition). */
#define MAX_BLOCK_ROWS 1048576

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
	hub_repl_header h; /* (repl_decode.h) */
	hub_repl_rollup own; /* the hub's rollup of the original (repl_rollup.h) */
	int has_own;
	struct hub_rules_pending *rules; /* recording-rule values (recording_rules.h) */
	int recovery;        /* ledger said "started": values may be stored */
	hub_repl_direct *direct; /* a direct upload (http_ingest.c): decoded already */
} up_state;

/* Per-batch cache of project retention. */
typedef struct proj_ret {
	char name[128];
	int days;
} proj_ret;

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

/* WT_FAILPOINT=repl_after_block:K dies right after the K-th data block
 * INSERT (sample and rollup blocks, counted from 1 per hub process). */
static void failpoint_block(void)
{
	static _Atomic long blocks;
	const char *fp = getenv("WT_FAILPOINT");
	long n = atomic_fetch_add(&blocks, 1) + 1;

	if (fp && !strncmp(fp, "repl_after_block:", 17) && atol(fp + 17) == n) {
		wt_error("msg=\"failpoint reached; exiting\" failpoint=%s", fp);
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

/* States of the batch's seqs in (edge, incarnation). The legacy
 * incarnation "" also reads repl_ledger_v1, written before incarnations. */
static int ledger_lookup(hub_ch *ch, const char *edge, const char *inc, up_state *ups, size_t n, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	ledger_ctx c = {ups, n};
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		ups[i].state = 0;
		if (ups[i].u->seq < lo)
			lo = ups[i].u->seq;
		if (ups[i].u->seq > hi)
			hi = ups[i].u->seq;
	}
	wt_buf_puts(&sql, "SELECT seq, max(state) FROM (SELECT seq, state FROM repl_ledger_v2 WHERE edge_id = ");
	hub_sql_quote(&sql, edge);
	wt_buf_puts(&sql, " AND incarnation = ");
	hub_sql_quote(&sql, inc);
	wt_buf_printf(&sql, " AND seq BETWEEN %" PRIu64 " AND %" PRIu64, lo, hi);
	if (!*inc) {
		wt_buf_puts(&sql, " UNION ALL SELECT seq, state FROM repl_ledger_v1 WHERE edge_id = ");
		hub_sql_quote(&sql, edge);
		wt_buf_printf(&sql, " AND seq BETWEEN %" PRIu64 " AND %" PRIu64, lo, hi);
	}
	wt_buf_puts(&sql, ") GROUP BY seq FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 2, ledger_row, &c);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int ledger_write(hub_ch *ch, const char *edge, const char *inc, up_state *ups, size_t n, int which,
			wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	size_t i, rows = 0;
	int rc = 0;

	wt_buf_puts(&sql, "INSERT INTO repl_ledger_v2 (edge_id, incarnation, seq, state, upload_id, project, service,"
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
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, inc);
		wt_buf_printf(&sql, ", %" PRIu64 ", %d, ", s->u->seq, st);
		hub_sql_quote(&sql, s->upload_id);
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, s->project ? s->project : "");
		wt_buf_puts(&sql, ", ");
		hub_sql_quote(&sql, s->service ? s->service : "");
		/* a direct upload keeps its time placement (for a retry to
		 * generate the same rows) and its reply (for a repeat) */
		wt_buf_printf(&sql, ", %" PRIu64 ", ",
			      (uint64_t)(s->direct ? s->direct->received_ns : wt_now_ns(CLOCK_REALTIME)));
		if (s->direct && st == LEDGER_APPLIED) {
			char *js = json_dumps(s->direct->reply, JSON_COMPACT);
			if (!js) {
				wt_buf_free(&sql);
				return wt_err_set(err, WT_ENOMEM, "out of memory");
			}
			hub_sql_quote(&sql, js);
			free(js);
		} else {
			hub_sql_quote(&sql, st == LEDGER_REJECTED ? s->detail : "");
		}
		wt_buf_puts(&sql, ")");
	}
	if (rows)
		rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

/* ---- recovery checks (only for seqs the ledger shows as started) ---------- */
/* A rollup piece: at most block_rows - 1 rows of one upload and day plus
 * their marker row, always inserted whole in one block. */
typedef struct piece_id {
	uint16_t day;
	uint32_t k; /* 0, 1, ... per (upload, day) */
} piece_id;

/* What an interrupted apply of one upload stored. */
typedef struct stored_t {
	hub_day_count *samples; /* sample rows per day */
	size_t nsamples;
	piece_id *pieces;       /* rollup pieces whose marker is there */
	size_t npieces;
	char marker[200];       /* "repl:<upload id>": piece 0; piece k: marker#k */
} stored_t;

static void stored_free(stored_t *st)
{
	free(st->samples);
	free(st->pieces);
	memset(st, 0, sizeof(*st));
}

static int sample_count_row(void *vctx, char **f, size_t n)
{
	stored_t *st = vctx;
	hub_day_count *nc;

	if (n < 2)
		return 0;
	if (!(nc = realloc(st->samples, (st->nsamples + 1) * sizeof(*nc))))
		return -1;
	st->samples = nc;
	nc[st->nsamples].day = (uint16_t)strtoul(f[0], NULL, 10);
	nc[st->nsamples].rows = (size_t)strtoull(f[1], NULL, 10);
	st->nsamples++;
	return 0;
}

static int marker_row(void *vctx, char **f, size_t n)
{
	stored_t *st = vctx;
	size_t ml = strlen(st->marker);
	piece_id *np;

	if (n < 2 || strncmp(f[1], st->marker, ml) || (f[1][ml] && f[1][ml] != '#'))
		return 0;
	if (!(np = realloc(st->pieces, (st->npieces + 1) * sizeof(*np))))
		return -1;
	st->pieces = np;
	np[st->npieces].day = (uint16_t)(strtoull(f[0], NULL, 10) / 86400);
	np[st->npieces].k = f[1][ml] ? (uint32_t)strtoul(f[1] + ml + 1, NULL, 10) : 0;
	st->npieces++;
	return 0;
}

/* Count what upload s has in ClickHouse: sample rows per day (the rows of
 * an (upload, day) are generated in the same order on every attempt and
 * blocks commit in order, so the stored ones are a prefix) and the rollup
 * pieces present (each one block: wholly there or absent). */
static int stored_query(hub_ch *ch, const up_state *s, stored_t *st, wt_err *err)
{
	wt_buf q = WT_BUF_INIT, out = WT_BUF_INIT;
	char pfx[210];
	int rc;

	memset(st, 0, sizeof(*st));
	snprintf(st->marker, sizeof(st->marker), "repl:%s", s->upload_id);
	wt_buf_puts(&q, "SELECT toUInt16(date), count() FROM profile_samples_v1 WHERE project = ");
	hub_sql_quote(&q, s->project);
	wt_buf_puts(&q, " AND service = ");
	hub_sql_quote(&q, s->service);
	wt_buf_puts(&q, " AND upload_id = ");
	hub_sql_quote(&q, s->upload_id);
	wt_buf_puts(&q, " GROUP BY date FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &q, &out, err);
	if (!rc && hub_tsv_each((char *)out.data, out.len, 2, sample_count_row, st) < 0)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	wt_buf_reset(&q);
	wt_buf_reset(&out);
	snprintf(pfx, sizeof(pfx), "%s#", st->marker);
	wt_buf_puts(&q, "SELECT DISTINCT toUInt32(minute), function FROM function_rollup_v1 WHERE project = ");
	hub_sql_quote(&q, s->project);
	wt_buf_puts(&q, " AND service = ");
	hub_sql_quote(&q, s->service);
	wt_buf_puts(&q, " AND sample_type = '" MARKER_TYPE "' AND (function = ");
	hub_sql_quote(&q, st->marker);
	wt_buf_printf(&q, " OR substring(function, 1, %zu) = ", strlen(pfx));
	hub_sql_quote(&q, pfx);
	wt_buf_puts(&q, ") FORMAT TabSeparated");
	if (!rc)
		rc = hub_ch_query_buf(ch, &q, &out, err);
	if (!rc && hub_tsv_each((char *)out.data, out.len, 2, marker_row, st) < 0)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	wt_buf_free(&q);
	wt_buf_free(&out);
	return rc;
}

static int piece_stored(const stored_t *st, uint16_t day, uint32_t k)
{
	size_t i;
	for (i = 0; i < st->npieces; i++)
		if (st->pieces[i].day == day && st->pieces[i].k == k)
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
	int64_t t0 = wt_now_ns(CLOCK_REALTIME);
	int rc = hub_objstore_put_upload(p->ctx->os, s->project, s->upload_id, s->u->original.data,
					 s->u->original.len, s->key, sizeof(s->key), err);
	p->ns += wt_now_ns(CLOCK_REALTIME) - t0;
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

/* ---- rollup pieces ---------------------------------------------------------- */
typedef struct rpiece {
	uint16_t day;
	uint32_t k;
	size_t nrows; /* data rows, marker not counted */
	int skip;     /* stored by an interrupted apply */
	wt_buf rows;  /* RowBinary: the marker, then the rows */
} rpiece;

typedef struct rpieces {
	rpiece *p;
	size_t n, cap;
	size_t block_rows; /* marker + rows of a piece never exceed it */
} rpieces;

/* The batch being applied, for what its rows need once they go in as
 * they are made ("live"): a batch goes live when its first block of rows
 * is full (an upload of more rows than one INSERT block), so that an
 * upload's rows are never all held at once. Going live is what the end
 * of the batch does otherwise: every original queued so far is stored,
 * the claim is decided and the ledger checked unchanged, the "started"
 * rows are written. From then on each full block of a day's sample rows
 * and each full rollup piece is inserted at once and dropped; originals of
 * later uploads are stored in place, before their rows. */
typedef struct apply_run {
	hub_ctx *ctx;
	hub_ch *ch;
	pb_batch *b;
	const char *inc;
	hub_repl_direct *direct;
	up_state *ups;
	const int *tentative; /* ledger states seen before preparing */
	hub_repl_claim *claim;
	putter *put;
	hub_daysink *samples;
	hub_repl_result *res;
	int live;
} apply_run;

static int batch_start(apply_run *a, wt_err *err);
static int incarnation_check(hub_ch *ch, const char *edge, const char *inc, hub_repl_result *res, wt_err *err);
static int insert_block(hub_ch *ch, hub_repl_claim *claim, const char *sql, const void *data, size_t len,
			wt_err *err);

static void rpieces_free(rpieces *ps)
{
	size_t i;
	for (i = 0; i < ps->n; i++)
		wt_buf_free(&ps->p[i].rows);
	free(ps->p);
	ps->p = NULL;
	ps->n = ps->cap = 0;
}

/* A new piece k of (s, day) starting with its marker row (minute = the
 * first row's, so the marker's day is the piece's). NULL on OOM. */
static rpiece *piece_new(rpieces *ps, const up_state *s, const stored_t *st, uint16_t day, uint32_t k,
			 uint32_t usec)
{
	rpiece *p;
	char fn[220];

	if (ps->n == ps->cap) {
		size_t nc = ps->cap ? ps->cap * 2 : 16;
		rpiece *np = realloc(ps->p, nc * sizeof(*np));
		if (!np)
			return NULL;
		ps->p = np;
		ps->cap = nc;
	}
	p = &ps->p[ps->n++];
	memset(p, 0, sizeof(*p));
	p->day = day;
	p->k = k;
	p->skip = st && piece_stored(st, day, k);
	if (k)
		snprintf(fn, sizeof(fn), "repl:%s#%u", s->upload_id, k);
	else
		snprintf(fn, sizeof(fn), "repl:%s", s->upload_id);
	if (!p->skip) {
		hub_rb_u32(&p->rows, usec);
		hub_rb_cstr(&p->rows, s->project);
		hub_rb_cstr(&p->rows, s->service);
		hub_rb_cstr(&p->rows, MARKER_TYPE);
		hub_rb_cstr(&p->rows, "");
		hub_rb_cstr(&p->rows, fn);
		hub_rb_i64(&p->rows, 1);
		hub_rb_i64(&p->rows, 0);
		hub_rb_u16(&p->rows, (uint16_t)s->retention_days);
	}
	return p;
}

/* A full piece of a live batch goes in at once; its rows are dropped. */
static int piece_insert_now(apply_run *a, rpiece *p, wt_err *err)
{
	int rc;

	if (p->skip)
		return 0;
	if (p->rows.oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
	if ((rc = batch_start(a, err)) ||
	    (rc = insert_block(a->ch, a->claim, ROLLUP_INSERT_SQL, p->rows.data, p->rows.len, err)))
		return rc;
	wt_buf_free(&p->rows);
	p->skip = 1; /* stored */
	return 0;
}

/* The rollup rows of upload s (the hub's own from the original, else the
 * edge's), cut into pieces per day in their order (the same on every
 * attempt: the hub's rows come from the same bytes); pieces st says are
 * stored are kept only as placeholders. A full piece goes in at once
 * (apply_run). */
static int add_rollup_rows(apply_run *a, const up_state *s, const stored_t *st, rpieces *ps, size_t *nrows,
			   wt_err *err)
{
	struct {
		uint16_t day;
		size_t piece; /* index in ps of the day's open piece */
	} open[MAX_DAYS];
	size_t nopen = 0, i, d;
	/* the hub's own rows when it decoded the original; the edge's only
	 * for an upload sent without one (raw dropped by the edge's quota) */
	size_t nrows_in = s->has_own ? s->own.n : s->u->n_rollup;
	int rc;

	for (i = 0; i < nrows_in; i++) {
		wt_rollup_row r;
		if (s->has_own) {
			r = s->own.r.rows[i];
		} else {
			const pb_rollup_row *e = s->u->rollup[i];
			r.type = e->type;
			r.unit = e->unit;
			r.function = e->function;
			r.minute = e->minute;
			r.self = e->self;
			r.total = e->total;
		}
		int64_t sec = r.minute * 60;
		uint32_t usec = sec < 0 ? 0 : sec > UINT32_MAX ? UINT32_MAX : (uint32_t)sec;
		uint16_t day = (uint16_t)(usec / 86400);
		rpiece *p;

		for (d = 0; d < nopen; d++)
			if (open[d].day == day)
				break;
		if (d == nopen) {
			if (nopen == MAX_DAYS)
				return wt_err_set(err, WT_ELIMIT, "replication batch: upload seq %" PRIu64
						  ": rollup rows of more than %d days", s->u->seq, MAX_DAYS);
			if (!(p = piece_new(ps, s, st, day, 0, usec)))
				goto oom;
			open[nopen].day = day;
			open[nopen++].piece = (size_t)(p - ps->p);
		}
		if (!r.self && !r.total)
			continue;
		p = &ps->p[open[d].piece];
		if (p->nrows + 1 >= ps->block_rows) {
			uint32_t k = p->k + 1;
			if ((rc = piece_insert_now(a, p, err)))
				return rc;
			if (!(p = piece_new(ps, s, st, day, k, usec)))
				goto oom;
			open[d].piece = (size_t)(p - ps->p);
		}
		p->nrows++;
		if (p->skip)
			continue;
		hub_rb_u32(&p->rows, usec);
		hub_rb_cstr(&p->rows, s->project);
		hub_rb_cstr(&p->rows, s->service);
		hub_rb_cstr(&p->rows, r.type ? r.type : "");
		hub_rb_cstr(&p->rows, r.unit ? r.unit : "");
		hub_rb_cstr(&p->rows, r.function ? r.function : "");
		hub_rb_i64(&p->rows, r.self);
		hub_rb_i64(&p->rows, r.total);
		hub_rb_u16(&p->rows, (uint16_t)s->retention_days);
		(*nrows)++;
		if (p->rows.oom)
			goto oom;
	}
	return 0;
oom:
	return wt_err_set(err, WT_ENOMEM, "replication batch: upload seq %" PRIu64 ": out of memory for rollup rows",
			  s->u->seq);
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

/* Profiles of this many stacks or more are sealed once decoded (their
 * interning indexes freed: about 175 MB at 3.2 M stacks), as
 * http_ingest.c does for a direct upload. */
#define APPLY_SEAL_STACKS 1000000

/* Decode an upload's original exactly as the edge did, store it, and
 * append its sample rows to sink (leaving out what st says is stored;
 * full blocks of a live batch go in at once), then build its rollup
 * (s->own) and free the profile (a direct upload's too: d->p becomes
 * NULL). A header that breaks the upload's label rule, or a decode
 * failure, marks the upload rejected (nothing of it is stored, the ledger
 * keeps why) rather than failing the batch. */
static int apply_original(hub_ctx *ctx, hub_ch *ch, up_state *s, size_t idx, const stored_t *st, hub_daysink *sink,
			  putter *put, hub_repl_result *res, wt_err *err)
{
	const pb_upload *u = s->u;
	const hub_repl_header *h = &s->h;
	wt_limits lim;
	wt_format det = WT_FMT_AUTO;
	wt_profile *p = NULL;
	hub_ch_rows_req rq;
	hub_ch_rows_stats is;
	wt_err derr = {0, ""}, rerr = {0, ""};
	int rc = 0, exists = 0;

	wt_limits_default(&lim);
	lim.max_body = ctx->cfg.max_body;
	/* the upload contract's label rule, which edges from before it did not
	 * apply: refused per upload, like a decode failure (a direct upload
	 * was checked by the contract when it came in) */
	if (!s->direct && hub_repl_header_check(h, &derr)) {
		s->rejected = 1;
		snprintf(s->detail, sizeof(s->detail), "header: %s", derr.msg);
		wt_warn("msg=\"replicated upload rejected\" upload=%s error=\"%s\"", s->upload_id, derr.msg);
		return 0;
	}
	if (s->direct) {
		p = s->direct->p; /* the caller's: freed here once its rows are made */
	} else if (hub_repl_decode_upload(u, h, &lim, &p, &det, &derr)) {
		s->rejected = 1;
		snprintf(s->detail, sizeof(s->detail), "decode: %s", derr.msg);
		wt_warn("msg=\"replicated upload rejected\" upload=%s error=\"%s\"", s->upload_id, derr.msg);
		return 0;
	}
	s->time_ns = p->time_ns;
	if (!s->direct && p->nstacks >= APPLY_SEAL_STACKS)
		wt_profile_seal(p);
	if ((rc = putter_add(put, idx, err)))
		goto out;
	memset(&rq, 0, sizeof(rq));
	rq.project = s->project;
	rq.service = s->service;
	rq.upload_id = s->upload_id;
	rq.retention_days = s->retention_days;
	rq.labels = h->lp;
	rq.nlabels = h->nlp;
	rq.batch_rows = ctx->cfg.ch_insert_batch_rows;
	rq.stacks = ctx->stacks;
	rq.cache_generation = atomic_load(&ctx->store.transitions);
	rq.sink = sink;
	rq.skip = st ? st->samples : NULL;
	rq.nskip = st ? st->nsamples : 0;
	if ((rc = hub_ch_rows_profile(ch, &rq, p, u->received_ns, &is, err)))
		goto out;
	res->sample_rows += is.sample_rows;
	s->recovery = st != NULL;
	if (hub_rules_eval(ch, s->project, s->service, s->upload_id, h->lp, h->nlp, p, u->received_ns, &s->rules, &rerr))
		wt_warn("msg=\"recording rules not applied\" upload=%s error=\"%s\"", s->upload_id, rerr.msg);
	/* the rollup is the hub's own, from the original (repl_rollup.h);
	 * built after the rows so the two are never held together */
	if ((rc = hub_repl_rollup_build(p, u->received_ns, &s->own, err)))
		goto out;
	s->has_own = 1;
	/* an edge sends a large upload's original without its rows
	 * (edge/repl_client.c): nothing to cross-check then */
	if (u->n_rollup && hub_repl_rollup_diff(&s->own, u->rollup, u->n_rollup))
		wt_warn("msg=\"the edge's rollup differs from its original; storing the hub's\" upload=%s"
			" rows_differing=%zu", s->upload_id, hub_repl_rollup_diff(&s->own, u->rollup, u->n_rollup));
	if (st && (rc = raw_index_exists(ch, s, &exists, err)))
		goto out;
	s->raw_index = !exists;
	s->format = s->direct ? s->direct->format : wt_format_name(det);
out:
	wt_profile_free(p);
	if (s->direct)
		s->direct->p = NULL;
	return rc;
}

/* ---- inserts: bounded blocks, each under a live claim ------------------------- */
static int insert_block(hub_ch *ch, hub_repl_claim *claim, const char *sql, const void *data, size_t len,
			wt_err *err)
{
	int rc;

	if ((rc = hub_repl_claim_keep(ch, claim, err)) || (rc = hub_ch_insert(ch, sql, data, len, err)) ||
	    (rc = hub_failpoint_insert(err)))
		return rc;
	failpoint_block();
	hub_failpoint_slow(claim->edge);
	return 0;
}

/* Insert the complete blocks of one day and drop them (a live batch). */
static int insert_day_blocks(apply_run *a, hub_dayrows *dr, wt_err *err)
{
	size_t b, off, len;
	int rc;

	if (dr->rows.oom || dr->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
	for (b = 0; b < dr->ncuts; b++) {
		hub_dayrows_block(dr, b, &off, &len);
		if (len && (rc = insert_block(a->ch, a->claim, hub_samples_insert_sql, dr->rows.data + off, len, err)))
			return rc;
	}
	hub_dayrows_drop_blocks(dr);
	return 0;
}

/* What the batch needs before its first data row (apply_run): every
 * original queued so far stored, the claim decided (when it was not at
 * once) with the ledger as it was when preparing began, the incarnation
 * checked, the "started" rows written. Then the complete sample blocks
 * made so far go in. Once only; a no-op afterwards. */
static int batch_start(apply_run *a, wt_err *err)
{
	pb_batch *b = a->b;
	int64_t t0 = wt_now_ns(CLOCK_REALTIME), t1;
	size_t i;
	int rc;

	if (a->live)
		return 0;
	/* every original is stored before any data row refers to it; later
	 * ones are stored in place (putter_add once the putter is finished) */
	if ((rc = putter_finish(a->put, err)))
		return rc;
	if (a->direct) /* tests: a deletion runs here (test_tenancy.py) */
		hub_failpoint_wait("ingest_after_object_put");
	t1 = wt_now_ns(CLOCK_REALTIME);
	a->res->objstore_wait_ns += t1 - t0;
	if (!a->claim->won) {
		/* decided only now: what was prepared holds only if the ledger
		 * did not move meanwhile (it can only by an apply that held the
		 * seqs before us and has finished: ask the edge to resend) */
		if ((rc = hub_repl_claim_decide(a->ch, a->claim, err)) ||
		    (rc = ledger_lookup(a->ch, b->edge_id, a->inc, a->ups, b->n_uploads, err)))
			return rc;
		for (i = 0; i < b->n_uploads; i++)
			if (a->ups[i].state != a->tentative[i]) {
				a->claim->retry_after_s = 1;
				return wt_err_set(err, WT_EUNAVAIL, "seq %" PRIu64 " of edge %s was applied by another"
						  " request meanwhile; retry", a->ups[i].u->seq, b->edge_id);
			}
	}
	if ((!a->direct && (rc = incarnation_check(a->ch, b->edge_id, a->inc, a->res, err))) ||
	    (rc = ledger_write(a->ch, b->edge_id, a->inc, a->ups, b->n_uploads, LEDGER_STARTED, err)))
		return rc;
	a->res->ledger_ns += wt_now_ns(CLOCK_REALTIME) - t1;
	a->live = 1;
	for (i = 0; i < a->samples->n; i++)
		if ((rc = insert_day_blocks(a, &a->samples->d[i], err)))
			return rc;
	return 0;
}

/* hub_daysink.on_block: the batch's first full block makes it live; a
 * live batch inserts each block as it fills. */
static int on_sample_block(void *arg, hub_dayrows *dr, wt_err *err)
{
	apply_run *a = arg;
	int rc;

	if ((rc = batch_start(a, err)))
		return rc;
	return insert_day_blocks(a, dr, err);
}

static int insert_sample_blocks(hub_ch *ch, hub_repl_claim *claim, hub_daysink *sink, wt_err *err)
{
	size_t i, b, off, len;
	int rc;

	for (i = 0; i < sink->n; i++) {
		hub_dayrows *dr = &sink->d[i];
		if (dr->rows.oom || dr->oom)
			return wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
		for (b = 0; b <= dr->ncuts; b++) {
			hub_dayrows_block(dr, b, &off, &len);
			if (len && (rc = insert_block(ch, claim, hub_samples_insert_sql, dr->rows.data + off, len, err)))
				return rc;
		}
	}
	return 0;
}

static int piece_cmp(const void *a, const void *b)
{
	const rpiece *x = *(const rpiece *const *)a, *y = *(const rpiece *const *)b;
	if (x->day != y->day)
		return x->day < y->day ? -1 : 1;
	return x < y ? -1 : x > y; /* creation order within a day */
}

/* Whole pieces of one day per INSERT, at most block_rows rows each. */
static int insert_rollup_pieces(hub_ch *ch, hub_repl_claim *claim, rpieces *ps, wt_err *err)
{
	rpiece **order = calloc(ps->n ? ps->n : 1, sizeof(*order));
	wt_buf blk = WT_BUF_INIT;
	size_t i, n = 0, rows = 0;
	int day = -1, rc = 0;

	if (!order)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (i = 0; i < ps->n; i++)
		if (!ps->p[i].skip)
			order[n++] = &ps->p[i];
	qsort(order, n, sizeof(*order), piece_cmp);
	for (i = 0; i <= n && !rc; i++) {
		rpiece *p = i < n ? order[i] : NULL;
		if (blk.len && (!p || p->day != day || rows + p->nrows + 1 > ps->block_rows)) {
			rc = blk.oom ? wt_err_set(err, WT_ENOMEM, "out of memory encoding rows")
				     : insert_block(ch, claim, ROLLUP_INSERT_SQL, blk.data, blk.len, err);
			wt_buf_reset(&blk);
			rows = 0;
		}
		if (!p || rc)
			continue;
		if (p->rows.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory encoding rows");
			continue;
		}
		wt_buf_append(&blk, p->rows.data, p->rows.len);
		rows += p->nrows + 1;
		day = p->day;
	}
	wt_buf_free(&blk);
	free(order);
	return rc;
}

/* ---- incarnations ---------------------------------------------------------------- */
/* The incarnation each edge was last applied under by this process: the
 * ledger is asked which incarnation it knows only when that changes. */
#define INC_CACHE 1024
static struct {
	char edge[128], inc[72];
} inc_cache[INC_CACHE];
static size_t inc_cache_n;
static pthread_mutex_t inc_mu = PTHREAD_MUTEX_INITIALIZER;

static int inc_cached(const char *edge, const char *inc)
{
	size_t i;
	int hit = 0;

	pthread_mutex_lock(&inc_mu);
	for (i = 0; i < inc_cache_n; i++)
		if (!strcmp(inc_cache[i].edge, edge)) {
			hit = !strcmp(inc_cache[i].inc, inc);
			break;
		}
	pthread_mutex_unlock(&inc_mu);
	return hit;
}

static void inc_remember(const char *edge, const char *inc)
{
	size_t i;

	pthread_mutex_lock(&inc_mu);
	for (i = 0; i < inc_cache_n; i++)
		if (!strcmp(inc_cache[i].edge, edge))
			break;
	if (i == inc_cache_n && inc_cache_n < INC_CACHE)
		inc_cache_n++;
	if (i < INC_CACHE) {
		snprintf(inc_cache[i].edge, sizeof(inc_cache[i].edge), "%s", edge);
		snprintf(inc_cache[i].inc, sizeof(inc_cache[i].inc), "%s", inc);
	}
	pthread_mutex_unlock(&inc_mu);
}

static int newest_inc_row(void *vctx, char **f, size_t n)
{
	hub_repl_result *res = vctx;

	if (n < 3 || res->other_known)
		return 0;
	res->other_known = 1;
	snprintf(res->other_incarnation, sizeof(res->other_incarnation), "%s", f[0]);
	res->other_last_seq = strtoull(f[1], NULL, 10);
	return 0;
}

/* Before this batch's ledger rows: the incarnation the ledger last saw
 * edge under, when it is not inc (res->other_*). */
static int incarnation_check(hub_ch *ch, const char *edge, const char *inc, hub_repl_result *res, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	if (inc_cached(edge, inc))
		return 0;
	wt_buf_puts(&sql, "SELECT incarnation, maxIf(seq, state = 2) AS s, max(time_ns) AS t FROM (SELECT incarnation,"
			  " seq, state, time_ns FROM repl_ledger_v2 WHERE edge_id = ");
	hub_sql_quote(&sql, edge);
	wt_buf_puts(&sql, " UNION ALL SELECT '' AS incarnation, seq, state, time_ns FROM repl_ledger_v1 WHERE edge_id = ");
	hub_sql_quote(&sql, edge);
	wt_buf_puts(&sql, ") GROUP BY incarnation ORDER BY t DESC LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 3, newest_inc_row, res);
	if (res->other_known && !strcmp(res->other_incarnation, inc))
		res->other_known = 0; /* the newest is this one: nothing to say */
	if (res->other_known)
		wt_warn("msg=\"edge replicates under a new incarnation (data dir reset, or two edges with one id);"
			" its seqs start clean\" edge=%s incarnation=%s previous_incarnation=%s previous_last_seq=%" PRIu64,
			edge, *inc ? inc : "(legacy)", *res->other_incarnation ? res->other_incarnation : "(legacy)",
			res->other_last_seq);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int incarnation_valid(const char *inc)
{
	size_t n = strlen(inc);
	return n < 72 && strspn(inc, "0123456789abcdef") == n;
}

/* ---- the batch ------------------------------------------------------------------- */
/* hub_edge_batch_admit's view of the uploads' projects */
static const char *edge_project_of(const void *arg, size_t i)
{
	return ((const up_state *)arg)[i].project;
}

static int apply_batch(hub_ctx *ctx, hub_ch *ch, pb_batch *b, hub_repl_direct *direct, hub_repl_result *res,
		       wt_err *err);

int hub_repl_apply(hub_ctx *ctx, hub_ch *ch, const char *peer_id, const uint8_t *buf, size_t len,
		   hub_repl_result *res, wt_err *err)
{
	pb_batch *b;
	int rc;

	memset(res, 0, sizeof(*res));
	b = watchtower__repl__batch__unpack(NULL, len, buf);
	if (!b)
		return wt_err_set(err, WT_EINVAL, "replication batch: not a valid protobuf Batch (%zu bytes)", len);
	if (!b->edge_id || strcmp(b->edge_id, peer_id))
		rc = wt_err_set(err, WT_EFORBIDDEN,
				"replication batch: edge id \"%.64s\" does not match the client certificate \"%.64s\"",
				b->edge_id ? b->edge_id : "", peer_id);
	else
		rc = apply_batch(ctx, ch, b, NULL, res, err);
	watchtower__repl__batch__free_unpacked(b, NULL);
	return rc;
}

/* Apply batch b: from an edge (direct NULL; its id checked against the
 * certificate) or the single upload of a direct one. */
static int apply_batch(hub_ctx *ctx, hub_ch *ch, pb_batch *b, hub_repl_direct *direct, hub_repl_result *res,
		       wt_err *err)
{
	up_state *ups = NULL;
	proj_ret *rets = NULL;
	int *tentative = NULL;
	size_t nrets = 0, i, nraw = 0;
	hub_daysink samples = {0};
	rpieces rollups = {0};
	wt_buf rawsql = WT_BUF_INIT;
	json_t **hdrs = NULL;
	hub_repl_claim claim;
	const char *inc;
	putter put;
	apply_run run;
	int put_on = 0, any_started = 0;
	int64_t t0, t1;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	memset(&claim, 0, sizeof(claim));
	inc = b->incarnation ? b->incarnation : "";
	if (!incarnation_valid(inc)) {
		rc = wt_err_set(err, WT_EINVAL, "replication batch: incarnation \"%.80s\" is not lowercase hex"
				" (at most 71 characters)", inc);
		goto out;
	}
	snprintf(res->incarnation, sizeof(res->incarnation), "%s", inc);
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
	if ((rc = hub_ch_health_check(&ctx->store, err)))
		goto out;

	ups = calloc(b->n_uploads, sizeof(*ups));
	hdrs = calloc(b->n_uploads, sizeof(*hdrs));
	rets = calloc(b->n_uploads, sizeof(*rets));
	tentative = calloc(b->n_uploads, sizeof(*tentative));
	if (!ups || !hdrs || !rets || !tentative) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	/* Headers first: a malformed batch is refused before anything is written. */
	for (i = 0; i < b->n_uploads; i++) {
		up_state *s = &ups[i];

		s->u = b->uploads[i];
		s->direct = direct;
		if (direct)
			snprintf(s->upload_id, sizeof(s->upload_id), "%s", direct->upload_id);
		else if (*inc)
			snprintf(s->upload_id, sizeof(s->upload_id), "%s-%s-%" PRIu64, b->edge_id, inc, s->u->seq);
		else
			snprintf(s->upload_id, sizeof(s->upload_id), "%s-%" PRIu64, b->edge_id, s->u->seq);
		if (hub_repl_header_init(s->u, &hdrs[i], &s->h) || !hub_project_name_valid(s->h.project)) {
			rc = wt_err_set(err, WT_EINVAL, "replication batch: upload seq %" PRIu64
					": header lacks a valid project/service", s->u->seq);
			goto out;
		}
		s->project = strdup(s->h.project);
		s->service = strdup(s->h.service);
		s->time_ns = s->u->received_ns;
		if (!s->project || !s->service) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
	}
	/* the edge's registered projects and its seq bound (edge_projects.h),
	 * before anything else looks at a project, so an edge cannot probe
	 * which projects exist */
	if (!direct &&
	    (rc = hub_edge_batch_admit(ch, b->edge_id, inc, b->last_seq, b->n_uploads, edge_project_of, ups, err)))
		goto out;
	/* Then claim the seqs — only for a batch the edge may write, so a refusal
	 * is a 403 whatever the load and leaves no row behind: the settle wait
	 * (hub_repl_claim_decide) overlaps the ledger lookup and decoding. */
	t0 = wt_now_ns(CLOCK_REALTIME);
	hub_repl_claim_flush(ch);
	if ((rc = hub_repl_claim_insert(ch, &claim, b->edge_id, inc, b->uploads[0]->seq,
					b->uploads[b->n_uploads - 1]->seq, ctx->cfg.repl_claim_ttl_s,
					ctx->cfg.repl_claim_settle_ms, hub_config_insert_budget_ms(&ctx->cfg), err)))
		goto out;
	res->ledger_ns += wt_now_ns(CLOCK_REALTIME) - t0;
	for (i = 0; i < b->n_uploads; i++) {
		up_state *s = &ups[i];
		size_t r;

		for (r = 0; r < nrets; r++)
			if (!strcmp(rets[r].name, s->project))
				break;
		if (r == nrets) {
			snprintf(rets[r].name, sizeof(rets[r].name), "%s", s->project);
			if (direct) /* looked up by the caller */
				rets[r].days = direct->retention_days;
			else if ((rc = hub_project_retention(ch, s->project, &rets[r].days, err)))
				goto out; /* unknown project: retry once it exists */
			nrets++;
		}
		s->retention_days = rets[r].days;
	}

	/* Read the ledger. The claim is decided (which waits
	 * replication.claim_settle_ms after writing it) before anything
	 * depends on being the only apply: at once when a seq was interrupted
	 * (recovery reads what is stored), else after decoding, which the wait
	 * then overlaps. */
	t0 = wt_now_ns(CLOCK_REALTIME);
	if ((rc = ledger_lookup(ch, b->edge_id, inc, ups, b->n_uploads, err)))
		goto out;
	for (i = 0; i < b->n_uploads; i++)
		any_started |= ups[i].state == LEDGER_STARTED;
	if (any_started && ((rc = hub_repl_claim_decide(ch, &claim, err)) ||
			    (rc = ledger_lookup(ch, b->edge_id, inc, ups, b->n_uploads, err))))
		goto out;
	for (i = 0; i < b->n_uploads; i++)
		tentative[i] = ups[i].state;
	t1 = wt_now_ns(CLOCK_REALTIME);
	res->ledger_ns += t1 - t0;

	wt_buf_puts(&rawsql, "INSERT INTO raw_objects_v1 (date, time_ns, project, service, upload_id,"
			     " object_key, format, size, deleted) VALUES ");
	samples.block_rows = ctx->cfg.ch_insert_batch_rows < MAX_BLOCK_ROWS ? ctx->cfg.ch_insert_batch_rows
									     : MAX_BLOCK_ROWS;
	rollups.block_rows = samples.block_rows < 2 ? 2 : samples.block_rows;
	putter_start(&put, ctx, ups, b->n_uploads);
	put_on = 1;
	memset(&run, 0, sizeof(run));
	run.ctx = ctx;
	run.ch = ch;
	run.b = b;
	run.inc = inc;
	run.direct = direct;
	run.ups = ups;
	run.tentative = tentative;
	run.claim = &claim;
	run.put = &put;
	run.samples = &samples;
	run.res = res;
	samples.on_block = on_sample_block;
	samples.arg = &run;
	for (i = 0; i < b->n_uploads; i++) {
		up_state *s = &ups[i];
		stored_t st;
		int recovery = s->state == LEDGER_STARTED;

		if (s->state >= LEDGER_APPLIED) {
			res->duplicates++;
			continue;
		}
		/* preparing (decoding; in recovery, queries per upload) may take
		 * longer than the lease: renew it as the INSERTs do, else every
		 * resend of a big batch would lose its claim before its INSERTs */
		if ((rc = hub_repl_claim_keep(ch, &claim, err)))
			goto out;
		hub_failpoint_slow(b->edge_id);
		memset(&st, 0, sizeof(st));
		if (recovery) {
			size_t k, nrows = 0;
			if ((rc = stored_query(ch, s, &st, err)))
				goto out;
			for (k = 0; k < st.nsamples; k++)
				nrows += st.samples[k].rows;
			res->recovered++;
			wt_info("msg=\"recovering interrupted replicated upload\" upload=%s sample_rows_done=%zu"
				" sample_days=%zu rollup_pieces_done=%zu", s->upload_id, nrows, st.nsamples, st.npieces);
		}
		if (s->u->original.len &&
		    (rc = apply_original(ctx, ch, s, i, recovery ? &st : NULL, &samples, &put, res, err))) {
			stored_free(&st);
			goto out;
		}
		/* a rejected original: no rollup of it is trusted */
		rc = s->rejected ? 0 : add_rollup_rows(&run, s, recovery ? &st : NULL, &rollups, &res->rollup_rows, err);
		stored_free(&st);
		hub_repl_rollup_free(&s->own); /* in rows now */
		if (rc)
			goto out;
		if (s->rejected)
			res->rejected++;
		else
			res->applied++;
	}
	t0 = wt_now_ns(CLOCK_REALTIME);
	res->prepare_ns += t0 - t1;
	/* what a batch that did not go live while preparing does now */
	if ((rc = batch_start(&run, err)))
		goto out;
	res->objstore_ns = put.ns;
	t0 = wt_now_ns(CLOCK_REALTIME);
	for (i = 0; i < b->n_uploads; i++)
		if (ups[i].raw_index)
			raw_index_row(&rawsql, &nraw, &ups[i], ups[i].key, ups[i].format, ups[i].u->original.len);
	t1 = wt_now_ns(CLOCK_REALTIME);
	res->ledger_ns += t1 - t0;
	if ((rc = insert_sample_blocks(ch, &claim, &samples, err)))
		goto out;
	failpoint("repl_after_samples");
	if ((rc = insert_rollup_pieces(ch, &claim, &rollups, err)))
		goto out;
	failpoint("repl_after_rollups");
	if (nraw && ((rc = hub_repl_claim_keep(ch, &claim, err)) || (rc = hub_ch_query_buf(ch, &rawsql, NULL, err))))
		goto out;
	t0 = wt_now_ns(CLOCK_REALTIME);
	res->insert_ns += t0 - t1;
	for (i = 0; i < b->n_uploads; i++) {
		wt_err rerr = {0, ""};
		if (ups[i].rules && hub_rules_store(ch, ups[i].rules, ups[i].recovery, &rerr))
			wt_warn("msg=\"recording rule values not stored\" upload=%s error=\"%s\"", ups[i].upload_id,
				rerr.msg);
	}
	if ((rc = hub_repl_claim_keep(ch, &claim, err)))
		goto out;
	if (direct && ups[0].state < LEDGER_APPLIED &&
	    json_object_set_new(direct->reply, "object_key", json_string(ups[0].key))) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	rc = ledger_write(ch, b->edge_id, inc, ups, b->n_uploads, LEDGER_APPLIED, err);
	res->ledger_ns += wt_now_ns(CLOCK_REALTIME) - t0;
	if (!rc) {
		if (!direct)
			inc_remember(b->edge_id, inc);
		for (i = 0; i < b->n_uploads; i++)
			hub_rules_count(ups[i].rules);
	}
out:
	if (put_on)
		putter_free(&put);
	hub_repl_claim_release(ch, &claim);
	if (rc && claim.retry_after_s)
		res->retry_after_s = claim.retry_after_s;
	else if (rc == WT_EIO || rc == WT_EUNAVAIL)
		atomic_fetch_add(&ctx->metrics.ch_errors_total, 1);
	if (ups)
		for (i = 0; i < b->n_uploads; i++) {
			free(ups[i].project);
			free(ups[i].service);
			hub_repl_rollup_free(&ups[i].own);
			hub_rules_pending_free(ups[i].rules);
			json_decref(hdrs ? hdrs[i] : NULL);
		}
	free(ups);
	free(hdrs);
	free(rets);
	free(tentative);
	hub_daysink_free(&samples);
	rpieces_free(&rollups);
	wt_buf_free(&rawsql);
	return rc;
}

/* ---- direct uploads (repl.h) ------------------------------------------------------- */
typedef struct direct_row {
	int state;
	int64_t received_ns;
	char *reply;
} direct_row;

static int direct_ledger_row(void *vctx, char **f, size_t n)
{
	direct_row *d = vctx;
	size_t len, i;

	if (n < 3)
		return 0;
	d->state = atoi(f[0]);
	d->received_ns = strtoll(f[1], NULL, 10);
	len = strlen(f[2]) / 2;
	if (d->state >= LEDGER_APPLIED && len) {
		if (!(d->reply = malloc(len + 1)))
			return -1;
		for (i = 0; i < len; i++) {
			unsigned v = 0;
			sscanf(f[2] + 2 * i, "%2x", &v);
			d->reply[i] = (char)v;
		}
		d->reply[len] = 0;
	}
	return 0;
}

int hub_repl_direct_lookup(hub_ch *ch, const char *upload_id, int *state, int64_t *received_ns, char **reply,
			   wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	direct_row d = {0, 0, NULL};
	int rc;

	wt_buf_puts(&sql, "SELECT max(state), minIf(time_ns, state = 1), hex(anyIf(detail, state = 2))"
			  " FROM repl_ledger_v2 WHERE edge_id = '" HUB_REPL_DIRECT_EDGE "' AND incarnation = ");
	hub_sql_quote(&sql, upload_id);
	wt_buf_puts(&sql, " AND seq = 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc && hub_tsv_each((char *)out.data, out.len, 3, direct_ledger_row, &d) < 0)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	*state = rc ? 0 : d.state;
	*received_ns = d.received_ns;
	if (reply && !rc)
		*reply = d.reply;
	else
		free(d.reply);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

int hub_repl_direct_apply(hub_ctx *ctx, hub_ch *ch, hub_repl_direct *d, hub_repl_result *res, wt_err *err)
{
	Watchtower__Repl__Batch b = WATCHTOWER__REPL__BATCH__INIT;
	Watchtower__Repl__Upload u = WATCHTOWER__REPL__UPLOAD__INIT;
	Watchtower__Repl__UploadHeader h = WATCHTOWER__REPL__UPLOAD_HEADER__INIT;
	Watchtower__Repl__Label lab[HUB_REPL_MAX_LABELS], *labp[HUB_REPL_MAX_LABELS];
	pb_upload *ups[1] = {&u};
	size_t i;

	h.project = (char *)d->project;
	h.service = (char *)d->service;
	h.format = (char *)d->format;
	for (i = 0; i < d->nlabels && i < HUB_REPL_MAX_LABELS; i++) {
		watchtower__repl__label__init(&lab[i]);
		lab[i].key = (char *)d->labels[i].key;
		lab[i].value = (char *)d->labels[i].value;
		labp[i] = &lab[i];
	}
	h.n_labels = i;
	h.labels = labp;
	u.seq = 1;
	u.original.data = (uint8_t *)d->body;
	u.original.len = d->len;
	u.received_ns = d->received_ns;
	u.header = &h;
	b.edge_id = (char *)HUB_REPL_DIRECT_EDGE;
	b.incarnation = (char *)d->upload_id;
	b.first_seq = b.last_seq = 1;
	b.n_uploads = 1;
	b.uploads = ups;
	return apply_batch(ctx, ch, &b, d, res, err);
}
