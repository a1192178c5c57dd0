/*
 * http_ingest.c — POST /v1/profiles and the Pyroscope-compatible POST /ingest.
 *
 * Loop thread: authenticate, parse parameters (the upload contract,
 * common/upload.c, shared with the hub), copy the body, hand a task to
 * a worker. Worker: split multipart, wt_format_decode, build the raw record
 * (zstd), the per-minute function rollup, the per-minute stacks for local
 * queries and the rollup delta for replication, then submit everything as
 * one edge_commit to the store's group commit. The reply (2xx only after
 * the synced write) goes back on the loop thread.
 */
#include <event2/http.h>
#include <pthread.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#include <zstd.h>

#include "buf.h"
#include "clock.h"
#include "compress.h"
#include "format.h"
#include "hindex.h"
#include "http_server.h"
#include "keys.h"
#include "log.h"
#include "profile.h"
#include "symref.h"
#include "pyroscope.h"
#include "u64map.h"
#include "rollup.h"
#include "sample_types.h"
#include "server.h"
#include "upload.h"

#define NS_PER_MIN 60000000000LL
#define MAX_UPLOAD_LABELS WT_UPLOAD_MAX_LABELS
#define MAX_NAME_LEN 256
#define MULTIPART_SLACK (1u << 20)

typedef struct ingest {
	char project[MAX_NAME_LEN];
	wt_upload u; /* parameters (common/upload.h) */
	int64_t received_ns;
	uint8_t *body;
	size_t len;
	int multipart, pyroscope;
	char boundary[80];
	const char *endpoint;     /* OTLP: the receiving endpoint (not owned) */
	const char *otlp_service; /* OTLP: which service of the raw request this is */
} ingest;

static void ingest_free(edge_task *t)
{
	ingest *in = t->priv;
	if (!in)
		return;
	wt_upload_free(&in->u);
	free(in->body);
	free(in);
	t->priv = NULL;
}

/* ---- building the commit (worker) ---------------------------------------- */

/* (type, label set, stack, minute) → summed value: the entries in a dense
 * array, found through a hash index over it (common/hindex.h). */
typedef struct agg_ent {
	uint32_t type, ls, stack;
	int64_t minute, value;
} agg_ent;

typedef struct agg {
	agg_ent *e;
	size_t cap, n;
	wt_hindex idx;
} agg;

static int agg_eq(const void *ctx, uint32_t id, const void *key)
{
	const agg_ent *x = &((const agg *)ctx)->e[id], *k = key;
	return x->type == k->type && x->ls == k->ls && x->stack == k->stack && x->minute == k->minute;
}

static int agg_add(agg *a, uint32_t type, uint32_t ls, uint32_t stack, int64_t minute, int64_t v)
{
	agg_ent k = {type, ls, stack, minute, v};
	uint64_t key[3] = {(uint64_t)type << 32 | ls, stack, (uint64_t)minute};
	uint64_t h = XXH3_64bits(key, sizeof(key));
	uint32_t id;
	size_t slot;
	int r = wt_hindex_lookup(&a->idx, h, &k, agg_eq, a, &id, &slot);

	if (r < 0)
		return r;
	if (r) {
		agg_ent *x = &a->e[id];
		if (__builtin_add_overflow(x->value, v, &x->value))
			x->value = v > 0 ? INT64_MAX : INT64_MIN;
		return 0;
	}
	if (a->n == a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 1024;
		agg_ent *ne = realloc(a->e, nc * sizeof(*ne));
		if (!ne)
			return WT_ENOMEM;
		a->e = ne;
		a->cap = nc;
	}
	a->e[a->n] = k;
	wt_hindex_put(&a->idx, slot, h, (uint32_t)a->n++);
	return 0;
}

static void agg_free(agg *a)
{
	free(a->e);
	wt_hindex_free(&a->idx);
}

typedef struct cache {
	uint32_t *off, *len;
	uint64_t *hash;
	uint8_t *done;
	wt_buf data;
} cache;

static int cache_init(cache *c, size_t n)
{
	memset(c, 0, sizeof(*c));
	n = n ? n : 1;
	c->off = calloc(n, sizeof(*c->off));
	c->len = calloc(n, sizeof(*c->len));
	c->hash = calloc(n, sizeof(*c->hash));
	c->done = calloc(n, 1);
	return c->off && c->len && c->hash && c->done ? 0 : WT_ENOMEM;
}

static void cache_free(cache *c)
{
	free(c->off);
	free(c->len);
	free(c->hash);
	free(c->done);
	wt_buf_free(&c->data);
}

/* Append the frames of stack s, root first, NUL-terminated names, to b.
 * Not cached: one stack usually has one (type, minute) entry, and a cache
 * of every payload doubled the memory of an upload with millions of
 * distinct stacks. */
static void stack_payload(const wt_profile *p, wt_buf *b, uint32_t s)
{
	size_t n;
	const uint32_t *fr = wt_profile_stack(p, s, &n);
	char buf[512];
	for (size_t i = n; i-- > 0;) {
		const char *name = wt_profile_frame_key(p, fr[i], buf, sizeof(buf));
		wt_buf_append(b, name, strlen(name) + 1);
	}
}

typedef struct lkv {
	const char *k, *v;
} lkv;

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const lkv *)a)->k, ((const lkv *)b)->k);
}

/* LE32 n, then key\0value\0 pairs sorted by key; sample labels override
 * upload labels of the same key. */
static void labels_payload(const wt_profile *p, const ingest *in, cache *c, uint32_t ls)
{
	if (c->done[ls])
		return;
	lkv pairs[MAX_UPLOAD_LABELS + 128];
	char numbuf[128][24];
	size_t np = 0, nl = 0, start = c->data.len;
	const wt_label *l = wt_profile_labelset(p, ls, &nl);
	for (size_t i = 0; i < nl && np < 128; i++) {
		pairs[np].k = wt_profile_str(p, l[i].key);
		if (l[i].str) {
			pairs[np].v = wt_profile_str(p, l[i].str);
		} else {
			snprintf(numbuf[np], sizeof(numbuf[np]), "%lld", (long long)l[i].num);
			pairs[np].v = numbuf[np];
		}
		np++;
	}
	size_t nsample = np;
	for (size_t i = 0; i < in->u.nlabels; i++) {
		int dup = 0;
		for (size_t j = 0; j < nsample; j++)
			if (!strcmp(pairs[j].k, in->u.labels[i].key))
				dup = 1;
		if (!dup) {
			pairs[np].k = in->u.labels[i].key;
			pairs[np].v = in->u.labels[i].value;
			np++;
		}
	}
	qsort(pairs, np, sizeof(pairs[0]), kv_cmp);
	uint8_t h[4] = {(uint8_t)np, (uint8_t)(np >> 8), 0, 0};
	wt_buf_append(&c->data, h, 4);
	for (size_t i = 0; i < np; i++) {
		wt_buf_append(&c->data, pairs[i].k, strlen(pairs[i].k) + 1);
		wt_buf_append(&c->data, pairs[i].v, strlen(pairs[i].v) + 1);
	}
	c->off[ls] = (uint32_t)start;
	c->len[ls] = (uint32_t)(c->data.len - start);
	c->hash[ls] = XXH3_64bits(c->data.data + start, c->data.len - start);
	c->done[ls] = 1;
}

static int64_t sample_time(const wt_profile *p, size_t i, int64_t fallback)
{
	int64_t t = p->samples[i].time_ns;
	if (!t)
		t = p->time_ns;
	if (!t)
		t = fallback;
	return t;
}

static int64_t minute_of(int64_t ns)
{
	int64_t m = ns / NS_PER_MIN;
	if (ns < 0 && ns % NS_PER_MIN)
		m--;
	return m;
}

/* The stackidx entries of one upload (keys.h), gathered per (type,
 * minute) — an upload usually spans one or two minutes — into a few open
 * buffers; one merge per buffer when it is full, evicted or at the end
 * (merges append, so a (type, minute) may take several). */
#define IDX_OPEN 8
#define IDX_FLUSH (256u << 10)

typedef struct idx_run {
	uint32_t type;
	int64_t minute;
	wt_buf b;
	int used;
} idx_run;

static int idx_flush(edge_task *t, ingest *in, const wt_profile *p, idx_run *r)
{
	wt_buf key = WT_BUF_INIT;
	int rc = 0;

	if (r->used && r->b.len) {
		edge_key_stackidx(&key, in->project, in->u.service, wt_profile_str(p, p->types[r->type].canonical),
				  r->minute);
		rc = key.oom || r->b.oom ? WT_ENOMEM
					 : edge_commit_op(&t->commit, EDGE_CF_STACKIDX, EDGE_OP_MERGE, key.data, key.len,
							  r->b.data, r->b.len);
	}
	wt_buf_free(&key);
	wt_buf_reset(&r->b);
	return rc;
}

static int idx_add(edge_task *t, ingest *in, const wt_profile *p, idx_run *runs, uint32_t type, int64_t minute,
		   uint64_t lh, uint64_t sh, int64_t value)
{
	idx_run *r = NULL;
	uint8_t ent[EDGE_STACKIDX_ENTRY];
	int rc = 0;

	for (size_t i = 0; i < IDX_OPEN && !r; i++)
		if (runs[i].used && runs[i].type == type && runs[i].minute == minute)
			r = &runs[i];
	for (size_t i = 0; i < IDX_OPEN && !r; i++)
		if (!runs[i].used)
			r = &runs[i];
	if (!r) { /* all open: hand the first one over and reuse it */
		r = &runs[0];
		if ((rc = idx_flush(t, in, p, r)))
			return rc;
	}
	r->used = 1;
	r->type = type;
	r->minute = minute;
	edge_le64_put(ent, (int64_t)lh);
	edge_le64_put(ent + 8, (int64_t)sh);
	edge_le64_put(ent + 16, value);
	if (wt_buf_append(&r->b, ent, sizeof(ent)))
		return WT_ENOMEM;
	return r->b.len >= IDX_FLUSH ? idx_flush(t, in, p, r) : 0;
}

/* stackdict rows this process has written (keys.h): hashes of (project,
 * service, type, day, stack hash), so that a stack's frames are merged into
 * stackdict once per day, not once per upload (every merge operand is read
 * back until compaction folds them). Forgotten wholesale when full or when
 * the edge restarts: the row is then merged again (the first value is
 * kept). A 64-bit collision, or a row deleted while still remembered,
 * leaves a stack without its stackdict row; the query then reads its
 * stacks row instead (edge/query.c). */
#define DICT_SEEN_MAX (1u << 18)
static pthread_mutex_t dict_seen_mu = PTHREAD_MUTEX_INITIALIZER;
static wt_u64map dict_seen;

/* The series part of dict_add's hash (project, service, type name). */
static uint64_t dict_series_hash(const ingest *in, const char *tname)
{
	return XXH3_64bits_withSeed(tname, strlen(tname),
				    XXH3_64bits_withSeed(in->u.service, strlen(in->u.service),
							 XXH3_64bits(in->project, strlen(in->project))));
}

static int dict_add(edge_task *t, ingest *in, const wt_profile *p, uint32_t type, uint64_t series_hash,
		    int64_t minute, uint64_t sh, const uint8_t *frames, size_t flen)
{
	int64_t day = (minute < 0 ? 0 : minute) / EDGE_MINUTES_PER_DAY;
	const char *tname = wt_profile_str(p, p->types[type].canonical);
	uint64_t k[2] = {(uint64_t)day, sh};
	uint64_t h = XXH3_64bits_withSeed(k, sizeof(k), series_hash);
	wt_buf key = WT_BUF_INIT, val = WT_BUF_INIT;
	static const uint8_t nolabels[4] = {0, 0, 0, 0};
	size_t slot;
	int rc, seen = 0;

	pthread_mutex_lock(&dict_seen_mu);
	if (dict_seen.n >= DICT_SEEN_MAX)
		wt_u64map_clear(&dict_seen);
	if (wt_u64map_slot(&dict_seen, h, &slot) == 0) {
		seen = dict_seen.vals[slot] != WT_U64MAP_EMPTY;
		if (!seen) {
			dict_seen.keys[slot] = h;
			dict_seen.vals[slot] = 1;
			dict_seen.n++;
		}
	}
	pthread_mutex_unlock(&dict_seen_mu);
	if (seen)
		return 0;
	edge_key_stackdict(&key, in->project, in->u.service, tname, day, sh);
	wt_buf_append(&val, nolabels, 4);
	wt_buf_append(&val, frames, flen);
	rc = key.oom || val.oom ? WT_ENOMEM
				: edge_commit_op(&t->commit, EDGE_CF_STACKDICT, EDGE_OP_MERGE, key.data, key.len, val.data,
						 val.len);
	wt_buf_free(&key);
	wt_buf_free(&val);
	return rc;
}

static int build_stacks(edge_task *t, ingest *in, const wt_profile *p)
{
	idx_run runs[IDX_OPEN];
	uint64_t series_hash[64]; /* per type (at most limits' 32 types) */
	agg a = {0};
	cache lc;
	int rc = 0;
	wt_buf key = WT_BUF_INIT, val = WT_BUF_INIT;

	memset(&lc, 0, sizeof(lc));
	memset(runs, 0, sizeof(runs));
	for (size_t ty = 0; ty < p->ntypes && ty < 64; ty++)
		series_hash[ty] = dict_series_hash(in, wt_profile_str(p, p->types[ty].canonical));
	if ((rc = cache_init(&lc, p->nlabelsets)))
		goto out;
	for (size_t i = 0; i < p->nsamples && rc == 0; i++) {
		const int64_t *v = wt_profile_values(p, i);
		int64_t m = minute_of(sample_time(p, i, in->received_ns));
		for (size_t ty = 0; ty < p->ntypes && rc == 0; ty++)
			if (v[ty])
				rc = agg_add(&a, (uint32_t)ty, p->samples[i].labelset, p->samples[i].stack, m, v[ty]);
	}
	for (size_t j = 0; j < a.n && rc == 0; j++) {
		agg_ent *e = &a.e[j];
		labels_payload(p, in, &lc, e->ls);
		wt_buf_reset(&key);
		wt_buf_reset(&val);
		uint8_t v8[8];
		edge_le64_put(v8, e->value);
		wt_buf_append(&val, v8, 8);
		wt_buf_append(&val, lc.data.data + lc.off[e->ls], lc.len[e->ls]);
		size_t sp = val.len;
		stack_payload(p, &val, e->stack);
		uint64_t sh = val.oom ? 0 : XXH3_64bits(val.data + sp, val.len - sp);
		edge_key_stack(&key, in->project, in->u.service,
			       wt_profile_str(p, p->types[e->type].canonical), e->minute, lc.hash[e->ls], sh);
		if (key.oom || val.oom || lc.data.oom)
			rc = WT_ENOMEM;
		else
			rc = edge_commit_op(&t->commit, EDGE_CF_STACKS, EDGE_OP_MERGE, key.data, key.len, val.data, val.len);
		if (!rc)
			rc = idx_add(t, in, p, runs, e->type, e->minute, lc.hash[e->ls], sh, e->value);
		if (!rc)
			rc = dict_add(t, in, p, e->type,
				      e->type < 64 ? series_hash[e->type]
						   : dict_series_hash(in, wt_profile_str(p, p->types[e->type].canonical)),
				      e->minute, sh, val.data + sp, val.len - sp);
	}
	for (size_t i = 0; i < IDX_OPEN; i++) {
		if (!rc)
			rc = idx_flush(t, in, p, &runs[i]);
		wt_buf_free(&runs[i].b);
	}
out:
	if (rc)
		wt_err_set(&t->err, rc, "out of memory building stacks");
	agg_free(&a);
	cache_free(&lc);
	wt_buf_free(&key);
	wt_buf_free(&val);
	return rc;
}

static json_t *labels_json(const ingest *in)
{
	json_t *o = json_object();
	for (size_t i = 0; i < in->u.nlabels; i++)
		json_object_set_new(o, in->u.labels[i].key, json_string(in->u.labels[i].value));
	return o;
}

/* ---- the rollup delta, streamed ---------------------------------------------
 * The rolluplog value is LE64 received_ns, then zstd of the JSON
 * {project, service, received_ns, labels, rows: [[type, unit, function,
 * minute, self, total], ...]} (read back by edge/repl_client.c). It is
 * written row by row into a zstd stream, never as a JSON tree nor as the
 * whole text: a profile with millions of functions costs its compressed
 * size plus one chunk (DELTA_CHUNK), not a jansson node per value. */
#define DELTA_CHUNK (256u << 10)

typedef struct delta_w {
	ZSTD_CCtx *z;
	wt_buf txt; /* text not yet compressed (< DELTA_CHUNK after each row) */
	wt_buf out; /* LE64 received_ns, then the compressed stream */
	int rc;
} delta_w;

/* Valid UTF-8 (no overlongs, no surrogates): what jansson accepts as a
 * string; a row whose function is not is written as null (the reader skips
 * it), as json_pack did. */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0, l;
	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if (!(l = wt_utf8_seq(s + i, n - i)))
			return 0;
		i += l;
	}
	return 1;
}

/* A JSON string literal of s (valid UTF-8), or null. */
static void delta_str(wt_buf *b, const char *s)
{
	size_t n = strlen(s), i, run = 0;
	if (!utf8_valid((const unsigned char *)s, n)) {
		wt_buf_puts(b, "null");
		return;
	}
	wt_buf_putc(b, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		wt_buf_append(b, s + run, i - run);
		if (c == '"' || c == '\\') {
			wt_buf_putc(b, '\\');
			wt_buf_putc(b, (char)c);
		} else {
			wt_buf_printf(b, "\\u%04x", c);
		}
		run = i + 1;
	}
	wt_buf_append(b, s + run, n - run);
	wt_buf_putc(b, '"');
}

/* Compress what is in w->txt (end: finish the frame). */
static void delta_flush(delta_w *w, int end)
{
	ZSTD_inBuffer zin = {w->txt.data, w->txt.len, 0};
	size_t left;

	if (w->rc)
		return;
	if (w->txt.oom) {
		w->rc = WT_ENOMEM;
		return;
	}
	do {
		if (wt_buf_reserve(&w->out, ZSTD_CStreamOutSize())) {
			w->rc = WT_ENOMEM;
			return;
		}
		ZSTD_outBuffer zout = {w->out.data + w->out.len, w->out.cap - w->out.len, 0};
		left = ZSTD_compressStream2(w->z, &zout, &zin, end ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left)) {
			w->rc = WT_ENOMEM;
			return;
		}
		w->out.len += zout.pos;
	} while (end ? left != 0 : zin.pos < zin.size);
	wt_buf_reset(&w->txt);
}

static void delta_labels(wt_buf *b, const ingest *in)
{
	wt_buf_putc(b, '{');
	for (size_t i = 0; i < in->u.nlabels; i++) {
		if (i)
			wt_buf_putc(b, ',');
		delta_str(b, in->u.labels[i].key);
		wt_buf_putc(b, ':');
		delta_str(b, in->u.labels[i].value);
	}
	wt_buf_putc(b, '}');
}

static int build_rollup(edge_task *t, ingest *in, const wt_profile *p)
{
	wt_rollup r = {0};
	wt_buf key = WT_BUF_INIT;
	delta_w w = {.txt = WT_BUF_INIT, .out = WT_BUF_INIT};
	int rc = wt_rollup_build(p, in->received_ns, &r, &t->err);
	uint8_t ns8[8];

	if (rc)
		return rc;
	w.z = ZSTD_createCCtx();
	if (!w.z || ZSTD_isError(ZSTD_CCtx_setParameter(w.z, ZSTD_c_compressionLevel, 3))) {
		rc = wt_err_set(&t->err, WT_ENOMEM, "out of memory encoding the rollup delta");
		goto out;
	}
	edge_le64_put(ns8, in->received_ns);
	wt_buf_append(&w.out, ns8, 8);
	wt_buf_puts(&w.txt, "{\"project\":");
	delta_str(&w.txt, in->project);
	wt_buf_puts(&w.txt, ",\"service\":");
	delta_str(&w.txt, in->u.service);
	wt_buf_printf(&w.txt, ",\"received_ns\":%lld,\"labels\":", (long long)in->received_ns);
	delta_labels(&w.txt, in);
	wt_buf_puts(&w.txt, ",\"rows\":[");
	for (size_t i = 0; i < r.n && rc == 0; i++) {
		const wt_rollup_row *row = &r.rows[i];
		uint8_t v[16];
		wt_buf_reset(&key);
		edge_key_rollup(&key, in->project, in->u.service, row->type, row->minute, row->function);
		edge_le64_put(v, row->self);
		edge_le64_put(v + 8, row->total);
		if (key.oom)
			rc = WT_ENOMEM;
		else
			rc = edge_commit_op(&t->commit, EDGE_CF_ROLLUP, EDGE_OP_MERGE, key.data, key.len, v, 16);
		wt_buf_puts(&w.txt, i ? ",[" : "[");
		delta_str(&w.txt, row->type);
		wt_buf_putc(&w.txt, ',');
		delta_str(&w.txt, row->unit ? row->unit : "");
		wt_buf_putc(&w.txt, ',');
		delta_str(&w.txt, row->function);
		wt_buf_printf(&w.txt, ",%lld,%lld,%lld]", (long long)row->minute, (long long)row->self,
			      (long long)row->total);
		if (w.txt.len >= DELTA_CHUNK)
			delta_flush(&w, 0);
		if (!rc)
			rc = w.rc;
	}
	wt_buf_puts(&w.txt, "]}");
	/* series index for the services listing and retention */
	for (size_t ty = 0; ty < p->ntypes && rc == 0; ty++) {
		const char *canon = wt_profile_str(p, p->types[ty].canonical);
		const char *unit = wt_profile_str(p, p->types[ty].unit);
		wt_buf_reset(&key);
		wt_buf_puts(&key, EDGE_META_TYPES);
		edge_key_series(&key, in->project, in->u.service, canon);
		rc = key.oom ? WT_ENOMEM
			     : edge_commit_op(&t->commit, EDGE_CF_META, EDGE_OP_PUT, key.data, key.len, unit, strlen(unit));
	}
	if (rc) {
		wt_err_set(&t->err, rc, "out of memory building the rollup");
		goto out;
	}
	delta_flush(&w, 1);
	if ((rc = w.rc) || w.out.oom) {
		rc = wt_err_set(&t->err, WT_ENOMEM, "out of memory encoding the rollup delta");
		goto out;
	}
	t->commit.rolluplog = wt_buf_steal(&w.out, &t->commit.rolluplog_len);
out:
	ZSTD_freeCCtx(w.z);
	wt_buf_free(&w.txt);
	wt_buf_free(&w.out);
	wt_buf_free(&key);
	wt_rollup_free(&r);
	return rc;
}

static int build_raw(edge_task *t, ingest *in, const uint8_t *data, size_t len, wt_format det,
		     const uint8_t *stc, size_t stclen)
{
	json_t *h = json_pack("{s:i,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:o,s:s,s:I}", "v", 1, "project", in->project,
			      "service", in->u.service, "format", wt_format_name(det), "endpoint",
			      in->endpoint ? in->endpoint : in->pyroscope ? "/ingest" : "/v1/profiles", "from_ns", (json_int_t)in->u.dec.from_ns,
			      "until_ns", (json_int_t)in->u.dec.until_ns, "received_ns", (json_int_t)in->received_ns,
			      "labels", labels_json(in), "edge", t->srv->cfg->id, "bytes", (json_int_t)len);
	if (!h)
		return wt_err_set(&t->err, WT_ENOMEM, "out of memory building the raw header");
	/* every field the hub needs to decode as the edge did (UploadHeader in
	 * proto/repl.proto; edge/repl_client.c copies them into it) */
	if (in->u.dec.type)
		json_object_set_new(h, "type", json_string(in->u.dec.type));
	if (in->u.dec.hint)
		json_object_set_new(h, "hint", json_string(in->u.dec.hint));
	if (in->u.requested_format)
		json_object_set_new(h, "requested_format", json_string(in->u.requested_format));
	if (in->u.spy_name)
		json_object_set_new(h, "spy_name", json_string(in->u.spy_name));
	if (in->u.dec.units)
		json_object_set_new(h, "units", json_string(in->u.dec.units));
	if (in->u.aggregation)
		json_object_set_new(h, "aggregation", json_string(in->u.aggregation));
	if (in->u.dec.sample_rate)
		json_object_set_new(h, "sample_rate", json_integer(in->u.dec.sample_rate));
	if (in->otlp_service)
		json_object_set_new(h, "otlp_service", json_string(in->otlp_service));
	if (stc)
		json_object_set_new(h, "sample_type_config", json_stringn((const char *)stc, stclen));
	char *txt = json_dumps(h, JSON_COMPACT);
	json_decref(h);
	if (!txt)
		return wt_err_set(&t->err, WT_ENOMEM, "out of memory encoding the raw header");
	int rc = edge_raw_encode(in->received_ns, txt, data, len, &t->commit.raw, &t->commit.raw_len, &t->err);
	free(txt);
	return rc;
}

static void commit_done(edge_commit *c)
{
	edge_task *t = c->arg;
	if (c->rc) {
		edge_commit_error(t->srv->store, c->rc, &t->err);
		if (t->reply) {
			json_decref(t->reply);
			t->reply = NULL;
		}
	} else if (t->reply) {
		json_object_set_new(t->reply, "seq", json_integer((json_int_t)c->seq));
	}
	edge_task_finish(t);
}

static void ingest_work(edge_task *t)
{
	ingest *in = t->priv;
	const edge_config *cfg = t->srv->cfg;
	const uint8_t *data = in->body, *stc = NULL;
	size_t len = in->len, stclen = 0;
	wt_profile *p = NULL;
	wt_format det = WT_FMT_AUTO;
	int rc;

	if (in->multipart) {
		edge_mp_part parts[EDGE_MP_MAX_PARTS];
		size_t np = 0;
		if ((rc = edge_mp_parse(in->body, in->len, in->boundary, parts, &np, &t->err)))
			goto fail;
		/* Pyroscope SDKs name the part "profile"; the Java agent sends its
		 * JFR recording as "jfr" (its "labels" part is not used yet). */
		const edge_mp_part *pp = edge_mp_find(parts, np, "profile");
		if (!pp)
			pp = edge_mp_find(parts, np, "jfr");
		if (!pp) {
			rc = wt_err_set(&t->err, WT_EINVAL, "multipart: no part named \"profile\" or \"jfr\" among %zu parts", np);
			goto fail;
		}
		data = pp->data;
		len = pp->len;
		if (len > cfg->max_body) {
			rc = wt_err_set(&t->err, WT_ELIMIT, "multipart: profile part of %zu bytes exceeds the limit of %zu bytes",
					len, cfg->max_body);
			goto fail;
		}
		const edge_mp_part *sp = edge_mp_find(parts, np, "sample_type_config");
		if (sp) {
			stc = sp->data;
			stclen = sp->len;
			json_error_t je;
			json_t *j = json_loadb((const char *)stc, stclen, 0, &je);
			if (!j || !json_is_object(j)) {
				json_decref(j);
				rc = wt_err_set(&t->err, WT_EINVAL, "multipart: sample_type_config is not a JSON object (line %d: %s)",
						je.line, je.text);
				goto fail;
			}
			json_decref(j);
		}
	}
	if (len == 0) {
		rc = wt_err_set(&t->err, WT_EINVAL, "the profile body is empty");
		goto fail;
	}

	wt_limits lim;
	wt_decode_opts o;
	wt_limits_default(&lim);
	lim.max_body = cfg->max_body;
	lim.max_decompressed = cfg->max_decompressed;
	lim.max_samples = cfg->max_samples;
	lim.max_stack_depth = cfg->max_stack_depth;
	wt_upload_decode_opts(&in->u.dec, &lim, in->received_ns, &o);
	rc = wt_format_decode(data, len, in->u.dec.fmt, &o, &p, &det, &t->err);
	if (rc) {
		if (!t->err.code)
			wt_err_set(&t->err, rc, "decoding the %s upload failed", wt_format_name(in->u.dec.fmt));
		goto fail;
	}
	wt_upload_place_times(&in->u.dec, p, in->received_ns);
	wt_profile_seal(p); /* read only from here: its interning indexes go */
	t->fmt = (int)det;
	t->bytes = in->len;
	t->samples = p->nsamples;

	/* a large upload's stacks/rollup merges are compressed as they are
	 * built (edge_commit_spill, buffer.h) */
	if (cfg->rollup_mode != EDGE_ROLLUP_RMW && (rc = edge_commit_spill(&t->commit)))
		rc = wt_err_set(&t->err, rc, "out of memory");
	if (rc || (rc = build_raw(t, in, data, len, det, stc, stclen)) || (rc = build_rollup(t, in, p)) ||
	    (rc = build_stacks(t, in, p)))
		goto fail;

	json_t *types = json_array();
	for (size_t i = 0; i < p->ntypes; i++)
		json_array_append_new(types, json_string(wt_profile_str(p, p->types[i].canonical)));
	t->reply = json_pack("{s:s,s:s,s:s,s:I,s:o,s:I,s:I}", "project", in->project, "service", in->u.service,
			     "format", wt_format_name(det), "samples", (json_int_t)p->nsamples, "types", types,
			     "from_ns", (json_int_t)p->time_ns, "until_ns", (json_int_t)(p->time_ns + p->duration_ns));
	if (t->reply && p->nwarnings) { /* what the parser worked around (a cut last record, ...) */
		json_t *w = json_array();
		for (size_t i = 0; i < p->nwarnings; i++)
			json_array_append_new(w, json_string(p->warnings[i]));
		json_object_set_new(t->reply, "warnings", w);
	}
	wt_profile_free(p);
	p = NULL;
	/* the body is in the raw record now; free it before waiting for the commit */
	free(in->body);
	in->body = NULL;
	t->commit.done = commit_done;
	t->commit.arg = t;
	edge_buffer_submit(t->srv->store, &t->commit);
	return;
fail:
	if (!t->err.code)
		wt_err_set(&t->err, rc ? rc : WT_EINVAL, "upload failed");
	wt_profile_free(p);
	edge_task_finish(t);
}

/* Build the commit of one profile decoded outside /v1/profiles (OTLP, see
 * edge/otlp.c) exactly as an upload: raw record (raw/rawlen, the whole
 * request; its header names otlp_service), rollup and stacks. p->time_ns 0
 * becomes received_ns. On error *c may hold partial buffers: the caller
 * frees c->raw, c->rolluplog and c->ops in any case. Worker thread. */
int edge_ingest_prepare(edge_server *srv, edge_commit *c, const char *project, const char *service,
			int64_t received_ns, const char *endpoint, const uint8_t *raw, size_t rawlen,
			wt_profile *p, wt_err *err)
{
	return edge_ingest_prepare_fmt(srv, c, project, service, received_ns, endpoint, WT_FMT_OTLP, raw, rawlen,
				       p, err);
}

/* The same for a raw original of format fmt (the eBPF sampler stores its
 * profiles as pprof, endpoint "ebpf"); only OTLP originals name the service
 * in the header (otlp_service). */
int edge_ingest_prepare_fmt(edge_server *srv, edge_commit *c, const char *project, const char *service,
			    int64_t received_ns, const char *endpoint, wt_format fmt, const uint8_t *raw,
			    size_t rawlen, wt_profile *p, wt_err *err)
{
	edge_task t;
	ingest in;
	int rc;

	memset(&t, 0, sizeof(t));
	memset(&in, 0, sizeof(in));
	t.srv = srv;
	snprintf(in.project, sizeof(in.project), "%s", project);
	wt_upload_init(&in.u);
	in.u.service = (char *)service; /* borrowed: in.u is not freed */
	in.received_ns = received_ns;
	in.endpoint = endpoint;
	in.otlp_service = fmt == WT_FMT_OTLP ? service : NULL;
	in.u.dec.fmt = fmt;
	if (!p->time_ns)
		p->time_ns = received_ns;
	if (p->duration_ns > 0) {
		in.u.dec.from_ns = p->time_ns;
		in.u.dec.until_ns = p->time_ns + p->duration_ns;
	}
	rc = build_raw(&t, &in, raw, rawlen, fmt, NULL, 0);
	if (!rc)
		rc = build_rollup(&t, &in, p);
	if (!rc)
		rc = build_stacks(&t, &in, p);
	*c = t.commit;
	if (rc)
		*err = t.err;
	return rc;
}

/* ---- request parsing (loop thread) ------------------------------------------ */

static int parse_v1(ingest *in, const struct evkeyvalq *q, wt_err *err)
{
	const struct evkeyval *kv;
	int rc;

	TAILQ_FOREACH(kv, q, next) {
		if ((rc = wt_upload_param(&in->u, 0, kv->key, kv->value, err)))
			return rc;
	}
	return wt_upload_finish(&in->u, err);
}

static int parse_pyroscope(ingest *in, struct evhttp_request *req, const struct evkeyvalq *q, wt_err *err)
{
	const char *name = wt_http_param(q, "name");
	const char *ctype = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	const struct evkeyval *kv;
	edge_pyro_name pn;
	int rc;

	in->pyroscope = 1;
	if (!name)
		return wt_err_set(err, WT_EINVAL, "name is required (app.cpu{k=v,...})");
	if ((rc = edge_pyro_parse_name(name, &pn, err)))
		return rc;
	if ((rc = wt_upload_set_service(&in->u, pn.service, err)))
		return wt_err_prefix(err, "pyroscope: application name");
	for (size_t i = 0; i < pn.nlabels; i++)
		if ((rc = wt_upload_add_label(&in->u, pn.labels[2 * i], pn.labels[2 * i + 1], err)))
			return rc;
	/* "format" defaults to folded here: always applied */
	if ((rc = wt_upload_param(&in->u, 1, "format", wt_http_param(q, "format"), err)))
		return rc;
	TAILQ_FOREACH(kv, q, next) {
		if (strcmp(kv->key, "format") && (rc = wt_upload_param(&in->u, 1, kv->key, kv->value, err)))
			return rc;
	}
	if (pn.type) {
		/* for folded input the suffix names the sample type */
		if (in->u.dec.fmt == WT_FMT_FOLDED && (rc = wt_upload_set_type(&in->u, pn.type, err)))
			return rc;
		if ((rc = wt_upload_set_hint(&in->u, edge_pyro_type_hint(pn.type), err)))
			return rc;
	}
	if ((rc = wt_upload_finish(&in->u, err)))
		return rc;
	if (ctype && !strncasecmp(ctype, "multipart/", 10)) {
		if (edge_mp_boundary(ctype, in->boundary, sizeof(in->boundary)) != 0)
			return wt_err_set(err, WT_EINVAL, "Content-Type \"%s\": multipart/form-data without a valid boundary", ctype);
		in->multipart = 1;
	}
	return 0;
}

void edge_ingest_handle(edge_server *srv, struct evhttp_request *req, int pyroscope)
{
	struct evkeyvalq q;
	wt_err err = {0};
	const edge_project_cfg *proj;
	ingest *in = NULL;
	edge_task *t = NULL;
	int rc;

	TAILQ_INIT(&q);
	if (!(proj = edge_upload_auth(srv, req)))
		return;
	if (wt_http_query(req, &q) != 0) {
		edge_reject(srv, req, WT_EINVAL, "the query string is malformed");
		return;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(in->project, sizeof(in->project), "%s", proj->name);
	wt_upload_init(&in->u);
	in->received_ns = wt_now_ns(CLOCK_REALTIME);
	rc = pyroscope ? parse_pyroscope(in, req, &q, &err) : parse_v1(in, &q, &err);
	if (rc)
		goto fail;
	if ((rc = wt_http_body(req, srv->cfg->max_body + (in->multipart ? MULTIPART_SLACK : 0), &in->body, &in->len, &err)))
		goto fail;
	if (in->len == 0) {
		rc = wt_err_set(&err, WT_EINVAL, "the request body is empty");
		goto fail;
	}
	t = edge_task_new(srv, req);
	if (!t) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	t->priv = in;
	t->cleanup = ingest_free;
	t->work = ingest_work;
	t->is_upload = 1;
	evhttp_clear_headers(&q);
	edge_task_start(t);
	return;
fail:
	evhttp_clear_headers(&q);
	if (in) {
		edge_task tmp = {.priv = in};
		ingest_free(&tmp);
	}
	wt_info("upload rejected error=%s detail=\"%s\"", wt_err_name(rc), err.msg);
	edge_reject(srv, req, rc, err.msg);
}
