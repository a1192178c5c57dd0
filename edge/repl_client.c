/*
 * repl_client.c — edge→hub replication: building batches from the buffer
 * (raw + rolluplog after the cursor), the sender thread with backoff, the
 * prefetch thread that builds the next batch meanwhile, the durable
 * cursor/ledger, and the wt_edge_repl_* metrics. See
 * repl_client.h; the wire contract is in docs/operations.md.
 */
#include "repl_client.h"
#include "backoff.h"
#include "clock.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <time.h>

#include "compress.h"
#include "keys.h"
#include "log.h"
#include "prom.h"
#include "proto/repl.pb-c.h"
#include "tls_client.h"

/* Our own storage holds at most limits.max_body_mb (<= 4096) per original. */
#define MAX_STORED_DECOMPRESSED ((size_t)4096 << 20)
/* Protobuf framing per row / upload, for the batch size estimate. */
#define ROW_OVERHEAD 40
#define REPL_TRIM_AFTER_BYTES ((size_t)1 << 20)
/* A rolluplog whose JSON text is over this many bytes, about 150 000
 * rows, is not decoded when the original goes along (edge_repl_batch_build). */
#define ROWS_OMIT_BYTES ((size_t)8 << 20)
#define UPLOAD_OVERHEAD 48
/* While the hub stays unreachable, repeat the warning this often. */
#define FAIL_LOG_PERIOD_NS (60LL * 1000000000LL)
#define RAW_MAGIC "WTR1"
#define RAW_HDR 16

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- batch building --------------------------------------------------------- */

typedef struct up {
	Watchtower__Repl__Upload m;
	Watchtower__Repl__UploadHeader h;
	Watchtower__Repl__Label *labels;
	Watchtower__Repl__Label **labelp;
	Watchtower__Repl__RollupRow *rows;
	Watchtower__Repl__RollupRow **rowp;
	json_t *log;   /* decoded rolluplog; row strings point into it */
	json_t *hdr;   /* the raw record's JSON header; h's strings point into it */
	uint8_t *orig; /* decompressed original */
	size_t est;    /* estimated serialised size */
} up;

static void up_free(up *u)
{
	json_decref(u->log);
	json_decref(u->hdr);
	free(u->labels);
	free(u->labelp);
	free(u->rows);
	free(u->rowp);
	free(u->orig);
	memset(u, 0, sizeof(*u));
}

static char *hstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? (char *)json_string_value(v) : (char *)"";
}

static int64_t hint64(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* Fill the typed header u->h from a JSON header (the raw record's, as
 * edge/http_ingest.c writes it, or the one made from the rolluplog) and attach
 * it to the upload. Strings point into hdr, which u then owns. */
static int header_from_json(up *u, json_t *hdr, wt_err *err)
{
	json_t *labels = json_object_get(hdr, "labels"), *v;
	const char *k;
	size_t n = json_is_object(labels) ? json_object_size(labels) : 0, i = 0;

	json_decref(u->hdr);
	free(u->labels);
	free(u->labelp);
	u->hdr = hdr;
	u->labels = calloc(n ? n : 1, sizeof(*u->labels));
	u->labelp = calloc(n ? n : 1, sizeof(*u->labelp));
	if (!u->labels || !u->labelp)
		return wt_err_set(err, WT_ENOMEM, "replication: out of memory for %zu labels", n);
	watchtower__repl__upload_header__init(&u->h);
	u->h.project = hstr(hdr, "project");
	u->h.service = hstr(hdr, "service");
	u->h.format = hstr(hdr, "format");
	u->h.type = hstr(hdr, "type");
	u->h.hint = hstr(hdr, "hint");
	u->h.units = hstr(hdr, "units");
	u->h.sample_rate = hint64(hdr, "sample_rate");
	u->h.from_ns = hint64(hdr, "from_ns");
	u->h.until_ns = hint64(hdr, "until_ns");
	u->h.otlp_service = hstr(hdr, "otlp_service");
	u->h.raw_dropped = json_is_true(json_object_get(hdr, "raw_dropped"));
	u->h.endpoint = hstr(hdr, "endpoint");
	u->h.requested_format = hstr(hdr, "requested_format");
	u->h.spy_name = hstr(hdr, "spy_name");
	u->h.aggregation = hstr(hdr, "aggregation");
	k = hstr(hdr, "sample_type_config");
	u->h.sample_type_config.data = (uint8_t *)k;
	u->h.sample_type_config.len = strlen(k);
	if (n) {
		json_object_foreach(labels, k, v) {
			if (!json_is_string(v) || i == n)
				continue;
			watchtower__repl__label__init(&u->labels[i]);
			u->labels[i].key = (char *)k;
			u->labels[i].value = (char *)json_string_value(v);
			u->labelp[i] = &u->labels[i];
			u->est += strlen(k) + strlen(u->labels[i].value) + 8;
			i++;
		}
	}
	u->h.n_labels = i;
	u->h.labels = u->labelp;
	/* u->m.header is set when the batch is packed: ups[] may still move */
	u->est += strlen(u->h.project) + strlen(u->h.service) + 64;
	return 0;
}

/* rolluplog value: LE64 received_ns, zstd(JSON {project, service,
 * received_ns, labels, rows: [[type, unit, function, minute, self, total]]}).
 * A value that does not decode leaves u->log NULL (sent without rows). */
static int decode_rolluplog(up *u, uint64_t seq, const uint8_t *v, size_t vl, wt_err *err)
{
	uint8_t *txt = NULL;
	size_t tl = 0;
	json_error_t je;
	wt_err zerr = {0};
	int rc = 0;

	if (vl < 8) {
		wt_error("replication: rolluplog of seq %llu is %zu bytes (corrupt)", (unsigned long long)seq, vl);
		return 0;
	}
	u->m.received_ns = edge_le64_get(v);
	rc = wt_zstd_decompress(v + 8, vl - 8, MAX_STORED_DECOMPRESSED, &txt, &tl, &zerr);
	if (rc == WT_ENOMEM)
		return wt_err_set(err, rc, "replication: out of memory decoding the rolluplog of seq %llu",
				  (unsigned long long)seq);
	if (rc) {
		wt_error("replication: rolluplog of seq %llu does not decompress: %s", (unsigned long long)seq, zerr.msg);
		return 0;
	}
	u->log = json_loadb((const char *)txt, tl, 0, &je);
	free(txt);
	json_t *rows = u->log ? json_object_get(u->log, "rows") : NULL;
	if (!u->log || !json_is_object(u->log) || !json_is_array(rows)) {
		wt_error("replication: rolluplog of seq %llu is not the expected JSON (line %d: %s)",
			 (unsigned long long)seq, je.line, u->log ? "no rows array" : je.text);
		json_decref(u->log);
		u->log = NULL;
		return 0;
	}
	size_t n = json_array_size(rows);
	u->rows = calloc(n ? n : 1, sizeof(*u->rows));
	u->rowp = calloc(n ? n : 1, sizeof(*u->rowp));
	if (!u->rows || !u->rowp)
		return wt_err_set(err, WT_ENOMEM, "replication: out of memory for %zu rollup rows of seq %llu", n,
				  (unsigned long long)seq);
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_array_get(rows, i);
		Watchtower__Repl__RollupRow *pr = &u->rows[u->m.n_rollup];
		if (!json_is_array(r) || json_array_size(r) != 6 || !json_is_string(json_array_get(r, 0)) ||
		    !json_is_string(json_array_get(r, 1)) || !json_is_string(json_array_get(r, 2)) ||
		    !json_is_integer(json_array_get(r, 3)) || !json_is_integer(json_array_get(r, 4)) ||
		    !json_is_integer(json_array_get(r, 5))) {
			wt_error("replication: rolluplog of seq %llu: row %zu is malformed; skipped",
				 (unsigned long long)seq, i);
			continue;
		}
		watchtower__repl__rollup_row__init(pr);
		pr->type = (char *)json_string_value(json_array_get(r, 0));
		pr->unit = (char *)json_string_value(json_array_get(r, 1));
		pr->function = (char *)json_string_value(json_array_get(r, 2));
		pr->minute = json_integer_value(json_array_get(r, 3));
		pr->self = json_integer_value(json_array_get(r, 4));
		pr->total = json_integer_value(json_array_get(r, 5));
		u->rowp[u->m.n_rollup++] = pr;
		u->est += ROW_OVERHEAD + strlen(pr->type) + strlen(pr->unit) + strlen(pr->function);
	}
	u->m.rollup = u->rowp;
	return 0;
}

/* Whether the zstd stream z decompresses to more than limit bytes: counted
 * through a small window, nothing kept. A stream that does not decode says
 * no (decode_rolluplog then reports it). */
static int rolluplog_over(const uint8_t *z, size_t zl, size_t limit)
{
	ZSTD_DStream *d = ZSTD_createDStream();
	uint8_t win[64 << 10];
	ZSTD_inBuffer in = {z, zl, 0};
	size_t total = 0, r = 1;
	int over = 0;

	if (!d)
		return 0;
	while (!over && r != 0) {
		ZSTD_outBuffer out = {win, sizeof(win), 0};
		r = ZSTD_decompressStream(d, &out, &in);
		if (ZSTD_isError(r))
			break;
		total += out.pos;
		over = total > limit;
		if (!out.pos && in.pos == in.size)
			break; /* cut short: no progress left */
	}
	ZSTD_freeDStream(d);
	return over;
}

/* raw value: "WTR1" LE64 received_ns LE32 hdrlen header zstd(original).
 * Returns 1 when the record was used, 0 when it is malformed. */
static int decode_raw(up *u, uint64_t seq, const uint8_t *v, size_t vl, wt_err *err, int *oom)
{
	wt_err zerr = {0};
	size_t ol = 0;
	uint32_t hl;

	if (vl < RAW_HDR || memcmp(v, RAW_MAGIC, 4) != 0 || (hl = le32(v + 12)) > vl - RAW_HDR) {
		wt_error("replication: raw record of seq %llu is malformed (%zu bytes); sending its rollup only",
			 (unsigned long long)seq, vl);
		return 0;
	}
	int rc = wt_zstd_decompress(v + RAW_HDR + hl, vl - RAW_HDR - hl, MAX_STORED_DECOMPRESSED, &u->orig, &ol, &zerr);
	if (rc == WT_ENOMEM) {
		*oom = 1;
		wt_err_set(err, rc, "replication: out of memory decompressing the original of seq %llu",
			   (unsigned long long)seq);
		return 0;
	}
	if (rc) {
		wt_error("replication: original of seq %llu does not decompress (%s); sending its rollup only",
			 (unsigned long long)seq, zerr.msg);
		return 0;
	}
	json_error_t je;
	json_t *h = json_loadb((const char *)v + RAW_HDR, hl, 0, &je);
	if (!json_is_object(h)) {
		json_decref(h);
		free(u->orig);
		u->orig = NULL;
		wt_error("replication: raw record of seq %llu has an unreadable header (line %d: %s); sending its "
			 "rollup only", (unsigned long long)seq, je.line, je.text);
		return 0;
	}
	if (header_from_json(u, h, err)) {
		*oom = 1;
		return 0;
	}
	u->m.original.data = u->orig;
	u->m.original.len = ol;
	if (!u->m.received_ns)
		u->m.received_ns = edge_le64_get(v + 4);
	u->est += ol;
	return 1;
}

/* The raw original is gone (disk quota) or unusable: the hub still needs
 * project, service and labels to apply the rollup, so the header is made
 * from the rolluplog, marked "raw_dropped":true; original stays empty. */
static int synth_header(up *u, const char *edge_id, wt_err *err)
{
	json_t *h = json_object();
	if (!h)
		return wt_err_set(err, WT_ENOMEM, "replication: out of memory");
	json_object_set_new(h, "v", json_integer(1));
	if (u->log) {
		json_t *p = json_object_get(u->log, "project"), *s = json_object_get(u->log, "service");
		json_t *l = json_object_get(u->log, "labels");
		if (p)
			json_object_set(h, "project", p);
		if (s)
			json_object_set(h, "service", s);
		if (l)
			json_object_set(h, "labels", l);
	}
	json_object_set_new(h, "received_ns", json_integer((json_int_t)u->m.received_ns));
	json_object_set_new(h, "edge", json_string(edge_id));
	json_object_set_new(h, "raw_dropped", json_true());
	free(u->orig);
	u->orig = NULL;
	u->m.original.data = NULL;
	u->m.original.len = 0;
	return header_from_json(u, h, err);
}

static int iter_error(rocksdb_iterator_t *it, const char *what, wt_err *err)
{
	char *e = NULL;
	rocksdb_iter_get_error(it, &e);
	if (!e)
		return 0;
	int rc = wt_err_set(err, WT_EIO, "replication: reading %s: %s", what, e);
	free(e);
	return rc;
}

int edge_repl_batch_build(edge_buffer *s, const char *edge_id, uint64_t after, size_t max_uploads,
			  size_t max_bytes, edge_repl_batch *b, wt_err *err)
{
	rocksdb_t *db = edge_buffer_db(s);
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	const rocksdb_snapshot_t *snap = rocksdb_create_snapshot(db);
	rocksdb_iterator_t *lit, *rit;
	up *ups = NULL;
	size_t n = 0, cap = 0, est = 0;
	uint64_t expect = after + 1;
	uint8_t k[8];
	int rc = 0;

	memset(b, 0, sizeof(*b));
	/* one snapshot: retention may delete raw records meanwhile */
	rocksdb_readoptions_set_snapshot(ro, snap);
	lit = rocksdb_create_iterator_cf(db, ro, edge_buffer_cf(s, EDGE_CF_ROLLUPLOG));
	rit = rocksdb_create_iterator_cf(db, ro, edge_buffer_cf(s, EDGE_CF_RAW));
	edge_be64_put(k, expect);
	for (rocksdb_iter_seek(lit, (const char *)k, 8); rocksdb_iter_valid(lit) && n < max_uploads;
	     rocksdb_iter_next(lit)) {
		size_t kl, vl;
		const uint8_t *key = (const uint8_t *)rocksdb_iter_key(lit, &kl);
		const uint8_t *val = (const uint8_t *)rocksdb_iter_value(lit, &vl);
		if (kl != 8) {
			wt_error("replication: rolluplog key of %zu bytes (expected 8); stopping the batch there", kl);
			break;
		}
		uint64_t seq = edge_be64_get(key);
		if (seq != expect) {
			/* Never happens with the store's commit (seqs are only
			 * assigned to written uploads); a batch never spans a hole. */
			if (n)
				break;
			wt_error("replication: seqs %llu..%llu are not in the buffer; sending from %llu",
				 (unsigned long long)expect, (unsigned long long)seq - 1, (unsigned long long)seq);
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			up *nu = realloc(ups, nc * sizeof(*ups));
			if (!nu) {
				rc = wt_err_set(err, WT_ENOMEM, "replication: out of memory");
				break;
			}
			ups = nu;
			cap = nc;
		}
		up *u = &ups[n];
		memset(u, 0, sizeof(*u));
		watchtower__repl__upload__init(&u->m);
		u->m.seq = seq;
		u->est = UPLOAD_OVERHEAD;
		const uint8_t *rv = NULL;
		size_t rvl = 0;
		rocksdb_iter_seek(rit, (const char *)key, 8);
		if (rocksdb_iter_valid(rit)) {
			size_t rkl;
			const char *rk = rocksdb_iter_key(rit, &rkl);
			if (rkl == 8 && !memcmp(rk, key, 8))
				rv = (const uint8_t *)rocksdb_iter_value(rit, &rvl);
		}
		/* With its original, a large upload goes without its rollup rows:
		 * the hub builds its own rollup from the original and uses the
		 * edge's rows only to cross-check them (hub/repl_apply.c), and
		 * millions of rows would cost the edge a JSON tree, the rows and
		 * their encoding on top of the original. */
		int omit = rv && vl > 8 && rolluplog_over(val + 8, vl - 8, ROWS_OMIT_BYTES);
		if (omit && vl >= 8) {
			u->m.received_ns = edge_le64_get(val);
		} else if ((rc = decode_rolluplog(u, seq, val, vl, err))) {
			up_free(u);
			break;
		}
		int used = 0, oom = 0;
		if (rv)
			used = decode_raw(u, seq, rv, rvl, err, &oom);
		if (oom) {
			rc = WT_ENOMEM;
			up_free(u);
			break;
		}
		if (!used && omit && (rc = decode_rolluplog(u, seq, val, vl, err))) {
			up_free(u);
			break;
		}
		if (!u->log && !(used && omit))
			b->corrupt++;
		if (used && omit)
			b->rows_omitted++;
		if (!used) {
			if ((rc = synth_header(u, edge_id, err))) {
				up_free(u);
				break;
			}
			b->raw_missing++;
		}
		if (n && est + u->est > max_bytes) {
			if (!used)
				b->raw_missing--;
			if (!u->log && !(used && omit))
				b->corrupt--;
			if (used && omit)
				b->rows_omitted--;
			up_free(u);
			break;
		}
		est += u->est;
		b->nrows += u->m.n_rollup;
		b->original_bytes += u->m.original.len;
		if (!n)
			b->first_seq = seq;
		b->last_seq = seq;
		expect = seq + 1;
		n++;
	}
	if (!rc)
		rc = iter_error(lit, "rolluplog", err);
	if (!rc)
		rc = iter_error(rit, "raw", err);
	if (!rc && n) {
		Watchtower__Repl__Batch m;
		Watchtower__Repl__Upload **pp = calloc(n, sizeof(*pp));
		if (!pp) {
			rc = wt_err_set(err, WT_ENOMEM, "replication: out of memory");
		} else {
			for (size_t i = 0; i < n; i++) {
				pp[i] = &ups[i].m;
				ups[i].m.header = ups[i].hdr ? &ups[i].h : NULL;
			}
			watchtower__repl__batch__init(&m);
			m.edge_id = (char *)edge_id;
			m.incarnation = (char *)edge_buffer_incarnation(s);
			m.first_seq = b->first_seq;
			m.last_seq = b->last_seq;
			m.n_uploads = n;
			m.uploads = pp;
			b->pb_len = watchtower__repl__batch__get_packed_size(&m);
			b->pb = malloc(b->pb_len ? b->pb_len : 1);
			if (!b->pb)
				rc = wt_err_set(err, WT_ENOMEM, "replication: out of memory for a %zu-byte batch", b->pb_len);
			else
				watchtower__repl__batch__pack(&m, b->pb);
			b->nuploads = n;
			free(pp);
		}
	}
	for (size_t i = 0; i < n; i++)
		up_free(&ups[i]);
	free(ups);
	rocksdb_iter_destroy(lit);
	rocksdb_iter_destroy(rit);
	rocksdb_readoptions_destroy(ro);
	rocksdb_release_snapshot(db, snap);
	if (rc)
		edge_repl_batch_free(b);
	return rc;
}

void edge_repl_batch_free(edge_repl_batch *b)
{
	int large = b->pb_len >= REPL_TRIM_AFTER_BYTES;
	free(b->pb);
	memset(b, 0, sizeof(*b));
	/* building a large batch decompressed its originals: give the pages
	 * back (glibc keeps this thread's arena at its high-water mark) */
	if (large)
		malloc_trim(0);
}

/* ---- ack and cursor ------------------------------------------------------------ */

static int get_count(json_t *o, const char *key, int required, uint64_t *out, wt_err *err)
{
	json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v)
		return required ? wt_err_set(err, WT_EINVAL, "hub answer: \"%s\" is missing", key) : 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return wt_err_set(err, WT_EINVAL, "hub answer: \"%s\" is not a non-negative integer", key);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int edge_repl_ack_parse(const uint8_t *body, size_t len, edge_repl_ack *ack, wt_err *err)
{
	json_error_t je;
	json_t *o = json_loadb((const char *)body, len, 0, &je);
	int rc;

	memset(ack, 0, sizeof(*ack));
	if (!o || !json_is_object(o)) {
		json_decref(o);
		return wt_err_set(err, WT_EINVAL, "hub answer is not a JSON object (%zu bytes; line %d: %s)", len,
				  je.line, o ? "not an object" : je.text);
	}
	if (!(rc = get_count(o, "last_seq", 1, &ack->last_seq, err)) &&
	    !(rc = get_count(o, "applied", 0, &ack->applied, err)) &&
	    !(rc = get_count(o, "duplicates", 0, &ack->duplicates, err)) &&
	    !(rc = get_count(o, "rejected", 0, &ack->rejected, err)) &&
	    !(rc = get_count(o, "other_last_seq", 0, &ack->other_last_seq, err))) {
		json_t *oi = json_object_get(o, "other_incarnation");
		if (oi && !json_is_string(oi))
			rc = wt_err_set(err, WT_EINVAL, "hub answer: \"other_incarnation\" is not a string");
		else if (oi)
			snprintf(ack->other_incarnation, sizeof(ack->other_incarnation), "%s", json_string_value(oi));
		ack->other_known = oi != NULL;
	}
	json_decref(o);
	return rc;
}

uint64_t edge_repl_cursor_load(edge_buffer *s)
{
	char *e = NULL;
	size_t vl = 0;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *v = rocksdb_get_cf(edge_buffer_db(s), ro, edge_buffer_cf(s, EDGE_CF_META), EDGE_META_REPL_CURSOR,
				 strlen(EDGE_META_REPL_CURSOR), &vl, &e);
	uint64_t r = 0;
	if (e) {
		wt_error("replication: reading the cursor failed: %s", e);
		free(e);
	}
	if (v && vl == 8)
		r = edge_be64_get((const uint8_t *)v);
	free(v);
	rocksdb_readoptions_destroy(ro);
	return r;
}

int edge_repl_cursor_save(edge_buffer *s, uint64_t seq, int64_t acked_ns, wt_err *err)
{
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
	rocksdb_column_family_handle_t *meta = edge_buffer_cf(s, EDGE_CF_META);
	const size_t pl = strlen(EDGE_META_REPL_LEDGER);
	char lk[64];
	uint8_t v[8], t[8];
	char *e = NULL;
	int rc = 0;

	edge_be64_put(v, seq);
	edge_le64_put(t, acked_ns);
	memcpy(lk, EDGE_META_REPL_LEDGER, pl);
	edge_be64_put((uint8_t *)lk + pl, seq);
	rocksdb_writebatch_put_cf(wb, meta, EDGE_META_REPL_CURSOR, strlen(EDGE_META_REPL_CURSOR), (const char *)v, 8);
	rocksdb_writebatch_put_cf(wb, meta, lk, pl + 8, (const char *)t, 8);
	rocksdb_writeoptions_set_sync(wo, 1);
	rocksdb_write(edge_buffer_db(s), wo, wb, &e);
	if (e) {
		rc = wt_err_set(err, WT_EIO, "replication: writing the cursor (seq %llu) failed: %s",
				(unsigned long long)seq, e);
		free(e);
	}
	rocksdb_writebatch_destroy(wb);
	rocksdb_writeoptions_destroy(wo);
	return rc;
}

/* ---- the sender thread ------------------------------------------------------------ */

enum {
	R_CONNECT, R_TLS, R_TIMEOUT, R_TRANSPORT, R_HTTP_4XX, R_HTTP_5XX, R_HTTP_OTHER, R_BAD_RESPONSE,
	R_ACK, R_BUILD, R_CURSOR_WRITE, R_COUNT
};
static const char *const reason_names[R_COUNT] = {
	"connect", "tls", "timeout", "transport", "http_4xx", "http_5xx", "http_other", "bad_response",
	"ack", "build", "cursor_write",
};

struct edge_repl {
	const edge_config *cfg;
	edge_buffer *store;
	edge_tls_client *tls;
	char **urls;   /* POST address per hub (hub.urls + EDGE_REPL_PATH) */
	size_t nurls;
	size_t cur;    /* the hub batches go to; moves on when it fails */
	size_t tried;  /* hubs that failed in a row (a full round = back off) */
	char edge_hdr[320];
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	int stop, woken;
	_Atomic int cancel;

	/* prefetch: a second thread builds (reads, packs, compresses) the batch
	 * after the one in flight, so the edge's work overlaps the hub's */
	pthread_t pf_th;
	pthread_cond_t pf_cv;     /* with mu: state changes of the prefetch */
	int pf_started, pf_state; /* PF_* */
	uint64_t pf_after;        /* the batch wanted starts after this seq */
	edge_repl_batch pf_b;
	uint8_t *pf_z;
	size_t pf_zl;
	int pf_rc;

	/* thread state */
	uint64_t cursor;
	uint64_t fails;
	int64_t fail_since, fail_logged;

	/* metrics */
	_Atomic uint64_t batches, uploads, bytes_sent, bytes_uncompressed, raw_missing;
	_Atomic uint64_t applied, duplicates, rejected, retries, failovers, other_incarnation, busy;
	int64_t busy_ms; /* thread state: wait asked by the last SEND_BUSY */
	_Atomic uint64_t errors[R_COUNT];
	_Atomic int64_t last_success_ns;
	_Atomic int failing;
};

static int cancel_cb(void *arg)
{
	edge_repl *r = arg;
	return atomic_load(&r->cancel);
}

static void on_commit(void *arg)
{
	edge_repl *r = arg;
	pthread_mutex_lock(&r->mu);
	r->woken = 1;
	pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Sleep ms unless stopping (or, with wake_ok, a commit arrives). */
static void nap(edge_repl *r, int64_t ms, int wake_ok)
{
	struct timespec ts;
	ts = wt_deadline(CLOCK_MONOTONIC, ms);
	pthread_mutex_lock(&r->mu);
	while (!r->stop && !(wake_ok && r->woken))
		if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&r->mu);
}

static int stopping(edge_repl *r)
{
	pthread_mutex_lock(&r->mu);
	int s = r->stop;
	pthread_mutex_unlock(&r->mu);
	return s;
}

/* Exponential backoff with full jitter (common/backoff.h): uniform in
 * [initial, min(max, initial * 2^attempt)]; cap_now = wait the cap. */
static int64_t backoff_ms(edge_repl *r, unsigned attempt, int cap_now)
{
	wt_backoff b = {r->cfg->repl_backoff_initial_ms, r->cfg->repl_backoff_max_ms, 1};

	return cap_now ? b.max_ms : wt_backoff_ms(&b, attempt);
}

static void note_failure(edge_repl *r, int reason, const char *what)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	atomic_fetch_add(&r->errors[reason], 1);
	atomic_store(&r->failing, 1);
	if (!r->fails++) {
		r->fail_since = now;
		r->fail_logged = now;
		wt_warn("replication: %s; retrying with backoff (uploads keep being accepted) reason=%s cursor=%llu",
			what, reason_names[reason], (unsigned long long)r->cursor);
	} else if (now - r->fail_logged >= FAIL_LOG_PERIOD_NS) {
		r->fail_logged = now;
		wt_warn("replication: still failing: %s reason=%s failures=%llu since_s=%lld cursor=%llu", what,
			reason_names[reason], (unsigned long long)r->fails, (long long)((now - r->fail_since) / 1000000000),
			(unsigned long long)r->cursor);
	}
}

static void note_success(edge_repl *r)
{
	if (r->fails)
		wt_info("replication: the hub answers again after %llu failed attempts in %lld s cursor=%llu",
			(unsigned long long)r->fails, (long long)((wt_now_ns(CLOCK_REALTIME) - r->fail_since) / 1000000000),
			(unsigned long long)r->cursor);
	r->fails = 0;
	atomic_store(&r->failing, 0);
	atomic_store(&r->last_success_ns, wt_now_ns(CLOCK_REALTIME));
}

/* SEND_FAILOVER: the hub could not be reached or answered 5xx/timeout;
 * another hub of the list may take the batch at once. */
enum { SEND_OK, SEND_RETRY, SEND_RETRY_CAP, SEND_FAILOVER, SEND_BUSY };

/* "retry_after_s" of a 409/503 JSON answer (the hub's Retry-After), in ms;
 * 0 when absent. Capped at 10 minutes. */
static int64_t retry_after_ms(const wt_buf *resp)
{
	json_t *o = json_loadb((const char *)resp->data, resp->len, 0, NULL);
	json_t *v = o ? json_object_get(o, "retry_after_s") : NULL;
	int64_t ms = 0;

	if (json_is_integer(v) && json_integer_value(v) > 0)
		ms = json_integer_value(v) > 600 ? 600000 : (int64_t)json_integer_value(v) * 1000;
	json_decref(o);
	return ms;
}

/* The start of an answer body, fit for one log line. */
static void snippet(char *dst, size_t n, const wt_buf *resp)
{
	size_t i = 0;
	for (; i + 1 < n && i < resp->len && i < 300; i++) {
		char c = (char)resp->data[i];
		dst[i] = c == '"' || c == '\\' || (unsigned char)c < 0x20 ? ' ' : c;
	}
	dst[i] = '\0';
}

/* One attempt at b (compressed z). Advances the cursor on success. */
static int send_batch(edge_repl *r, const edge_repl_batch *b, const uint8_t *z, size_t zl)
{
	const char *headers[] = {"Content-Type: " EDGE_REPL_CONTENT_TYPE, "Content-Encoding: zstd", r->edge_hdr,
				 "Accept: application/json", NULL};
	wt_buf resp = WT_BUF_INIT;
	wt_err err = {0};
	edge_repl_ack ack;
	long status = 0;
	char what[WT_ERR_MSG_MAX + 600], body[304];
	int rc, out = SEND_RETRY;
	const char *url = r->urls[r->cur];

	rc = edge_tls_client_post(r->tls, url, headers, z, zl, &status, &resp, &err);
	if (rc) {
		int kind = edge_tls_client_last_failure(r->tls);
		if (kind == WT_TLS_FAIL_CANCELLED)
			goto done; /* stopping */
		snprintf(what, sizeof(what), "POST %s failed: %s", url, err.msg);
		note_failure(r, kind == WT_TLS_FAIL_CONNECT ? R_CONNECT : kind == WT_TLS_FAIL_TLS ? R_TLS
				: kind == WT_TLS_FAIL_TIMEOUT ? R_TIMEOUT : R_TRANSPORT, what);
		out = SEND_FAILOVER;
		goto done;
	}
	snippet(body, sizeof(body), &resp);
	if ((status == 503 || status == 409) && (r->busy_ms = retry_after_ms(&resp)) > 0) {
		/* the batch is being applied right now (by this hub or another
		 * sharing the ledger): ask again when the hub says */
		atomic_fetch_add(&r->busy, 1);
		wt_info("replication: the hub is applying batch seq %llu..%llu already; asking again in %lld ms (%s)",
			(unsigned long long)b->first_seq, (unsigned long long)b->last_seq, (long long)r->busy_ms, body);
		out = SEND_BUSY;
		goto done;
	}
	if (status != 200) {
		snprintf(what, sizeof(what), "POST %s answered %ld: %s", url, status, body);
		if (status >= 400 && status < 500 && status != 408 && status != 429) {
			/* a bug or a configuration problem (e.g. 403: edge id and
			 * certificate disagree): never skip data, say it loudly */
			atomic_fetch_add(&r->errors[R_HTTP_4XX], 1);
			atomic_store(&r->failing, 1);
			if (!r->fails++)
				r->fail_since = wt_now_ns(CLOCK_REALTIME);
			wt_error("replication: the hub refused batch seq %llu..%llu (%zu uploads, %zu bytes): %s; "
				 "retrying every %d ms until fixed edge_id=%s",
				 (unsigned long long)b->first_seq, (unsigned long long)b->last_seq, b->nuploads, zl, what,
				 r->cfg->repl_backoff_max_ms, r->cfg->id);
			out = SEND_RETRY_CAP;
		} else {
			note_failure(r, status >= 500 || status == 408 || status == 429 ? R_HTTP_5XX : R_HTTP_OTHER, what);
			if (status >= 500)
				out = SEND_FAILOVER;
		}
		goto done;
	}
	if ((rc = edge_repl_ack_parse(resp.data, resp.len, &ack, &err))) {
		snprintf(what, sizeof(what), "POST %s: %s; answer: %s", url, err.msg, body);
		note_failure(r, R_BAD_RESPONSE, what);
		goto done;
	}
	if (ack.last_seq < b->first_seq) {
		atomic_fetch_add(&r->errors[R_ACK], 1);
		atomic_store(&r->failing, 1);
		if (!r->fails++)
			r->fail_since = wt_now_ns(CLOCK_REALTIME);
		wt_error("replication: the hub acknowledged last_seq=%llu for batch seq %llu..%llu: it did not apply "
			 "the batch; retrying every %d ms edge_id=%s",
			 (unsigned long long)ack.last_seq, (unsigned long long)b->first_seq,
			 (unsigned long long)b->last_seq, r->cfg->repl_backoff_max_ms, r->cfg->id);
		out = SEND_RETRY_CAP;
		goto done;
	}
	uint64_t to = ack.last_seq;
	if (to > b->last_seq)
		to = b->last_seq; /* never beyond what this batch carried */
	if (ack.other_known) {
		/* The hub last saw this edge id under another data dir: this one
		 * was wiped or recreated (its seqs start over and are applied as
		 * new), or two edges share one certificate. */
		atomic_fetch_add(&r->other_incarnation, 1);
		wt_warn("replication: the hub knows this edge under incarnation \"%s\" (last seq %llu); this data dir is "
			"incarnation \"%s\": its uploads are applied as new. Expected once after a data_dir was reset; "
			"repeated, two edges share the id %s", ack.other_incarnation, (unsigned long long)ack.other_last_seq,
			edge_buffer_incarnation(r->store), r->cfg->id);
	}
	if (edge_repl_cursor_save(r->store, to, wt_now_ns(CLOCK_REALTIME), &err)) {
		/* the hub has it: a restart will resend, the hub skips duplicates */
		atomic_fetch_add(&r->errors[R_CURSOR_WRITE], 1);
		wt_error("%s", err.msg);
	}
	atomic_fetch_add(&r->uploads, to - r->cursor);
	r->cursor = to;
	atomic_fetch_add(&r->batches, 1);
	atomic_fetch_add(&r->bytes_sent, zl);
	atomic_fetch_add(&r->bytes_uncompressed, b->pb_len);
	atomic_fetch_add(&r->applied, ack.applied);
	atomic_fetch_add(&r->duplicates, ack.duplicates);
	atomic_fetch_add(&r->rejected, ack.rejected);
	if (to == b->last_seq)
		atomic_fetch_add(&r->raw_missing, b->raw_missing);
	if (ack.rejected)
		wt_warn("replication: the hub rejected %llu uploads of batch seq %llu..%llu (see the hub's log)",
			(unsigned long long)ack.rejected, (unsigned long long)b->first_seq,
			(unsigned long long)b->last_seq);
	wt_debug("replication: batch acked first_seq=%llu last_seq=%llu uploads=%zu bytes=%zu raw_bytes=%zu "
		 "applied=%llu duplicates=%llu",
		 (unsigned long long)b->first_seq, (unsigned long long)to, b->nuploads, zl, b->pb_len,
		 (unsigned long long)ack.applied, (unsigned long long)ack.duplicates);
	note_success(r);
	out = SEND_OK;
done:
	wt_buf_free(&resp);
	return out;
}

/* Build the batch after `after` and compress it; the protobuf is freed
 * once compressed (only its length is kept, for the metrics). */
static int build_compressed(edge_repl *r, uint64_t after, edge_repl_batch *b, uint8_t **z, size_t *zl, wt_err *err)
{
	int rc = edge_repl_batch_build(r->store, r->cfg->id, after, r->cfg->repl_batch_max_uploads,
				       r->cfg->repl_batch_max_bytes, b, err);
	*z = NULL;
	*zl = 0;
	if (!rc && b->nuploads)
		rc = wt_zstd_compress(b->pb, b->pb_len, r->cfg->repl_zstd_level, z, zl, err);
	if (rc) {
		edge_repl_batch_free(b);
		return rc;
	}
	free(b->pb);
	b->pb = NULL;
	return 0;
}

enum { PF_IDLE, PF_WANTED, PF_BUILDING, PF_READY };

static void *prefetch_main(void *arg)
{
	edge_repl *r = arg;
	edge_repl_batch b;
	uint8_t *z;
	size_t zl;
	wt_err err;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		while (!r->stop && r->pf_state != PF_WANTED)
			pthread_cond_wait(&r->pf_cv, &r->mu);
		if (r->stop)
			break;
		uint64_t after = r->pf_after;
		r->pf_state = PF_BUILDING;
		pthread_mutex_unlock(&r->mu);
		memset(&err, 0, sizeof(err));
		int rc = build_compressed(r, after, &b, &z, &zl, &err);
		pthread_mutex_lock(&r->mu);
		r->pf_b = b;
		r->pf_z = z;
		r->pf_zl = zl;
		r->pf_rc = rc;
		r->pf_state = PF_READY;
		pthread_cond_broadcast(&r->pf_cv);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* Ask for the batch after `after` to be built in the background (no-op
 * while one is wanted, being built or waiting to be taken). */
static void prefetch_request(edge_repl *r, uint64_t after)
{
	if (!r->pf_started)
		return;
	pthread_mutex_lock(&r->mu);
	if (r->pf_state == PF_IDLE) {
		r->pf_after = after;
		r->pf_state = PF_WANTED;
		pthread_cond_broadcast(&r->pf_cv);
	}
	pthread_mutex_unlock(&r->mu);
}

/* Take the prefetched batch if it starts right after `after` and is not
 * empty (returns 1); anything else is discarded (returns 0) and the caller
 * builds in place — an empty or failed prefetch may be stale. Waits for a
 * build in progress. */
static int prefetch_take(edge_repl *r, uint64_t after, edge_repl_batch *b, uint8_t **z, size_t *zl)
{
	int took = 0;

	if (!r->pf_started)
		return 0;
	pthread_mutex_lock(&r->mu);
	if (r->pf_state == PF_WANTED && r->pf_after != after)
		r->pf_state = PF_IDLE;
	while (!r->stop && (r->pf_state == PF_WANTED || r->pf_state == PF_BUILDING))
		pthread_cond_wait(&r->pf_cv, &r->mu);
	if (r->pf_state == PF_READY) {
		if (r->pf_after == after && !r->pf_rc && r->pf_b.nuploads) {
			*b = r->pf_b;
			*z = r->pf_z;
			*zl = r->pf_zl;
			took = 1;
		} else {
			edge_repl_batch_free(&r->pf_b);
			free(r->pf_z);
		}
		memset(&r->pf_b, 0, sizeof(r->pf_b));
		r->pf_z = NULL;
		r->pf_zl = 0;
		r->pf_state = PF_IDLE;
	}
	pthread_mutex_unlock(&r->mu);
	return took;
}

static void *repl_main(void *arg)
{
	edge_repl *r = arg;
	edge_repl_batch b = {0};
	uint8_t *z = NULL;
	size_t zl = 0;
	unsigned attempt = 0;
	wt_err err;

	r->cursor = edge_repl_cursor_load(r->store);
	wt_info("replication: started hub=%s hubs=%zu edge_id=%s cursor=%llu", r->urls[0], r->nurls, r->cfg->id,
		(unsigned long long)r->cursor);
	while (!stopping(r)) {
		if (!b.nuploads) {
			pthread_mutex_lock(&r->mu);
			r->woken = 0;
			pthread_mutex_unlock(&r->mu);
			memset(&err, 0, sizeof(err));
			int rc = 0;
			if (!prefetch_take(r, r->cursor, &b, &z, &zl)) {
				if (stopping(r))
					break;
				rc = build_compressed(r, r->cursor, &b, &z, &zl, &err);
			}
			if (rc) {
				note_failure(r, R_BUILD, err.msg);
				nap(r, backoff_ms(r, attempt++, 0), 0);
				continue;
			}
			if (!b.nuploads) {
				nap(r, r->cfg->repl_interval_ms, 1);
				continue;
			}
			if (b.raw_missing)
				wt_warn("replication: batch seq %llu..%llu carries %zu uploads without their raw original "
					"(dropped by the disk quota); their rollups are sent",
					(unsigned long long)b.first_seq, (unsigned long long)b.last_seq, b.raw_missing);
		}
		/* the next batch is read and compressed while this one is sent;
		 * it is used only if the hub acknowledges all of this one. Not
		 * while the hub fails: a batch built then would be stale (small)
		 * by the time it answers again. */
		if (!r->fails)
			prefetch_request(r, b.last_seq);
		int out = send_batch(r, &b, z, zl);
		if (out == SEND_OK) {
			edge_repl_batch_free(&b);
			free(z);
			z = NULL;
			attempt = 0;
			r->tried = 0;
			continue;
		}
		if (stopping(r))
			break;
		if (out == SEND_BUSY) {
			/* not a failure: another hub would answer the same */
			nap(r, r->busy_ms, 0);
			continue;
		}
		if (out == SEND_FAILOVER && r->nurls > 1) {
			/* next hub at once; back off only after a whole round failed.
			 * A batch the failed hub may have applied is safe to resend:
			 * every hub consults the same ledger (repl.h). */
			size_t from = r->cur;
			r->cur = (r->cur + 1) % r->nurls;
			atomic_fetch_add(&r->failovers, 1);
			wt_warn("replication: failing over from %s to %s edge_id=%s cursor=%llu", r->urls[from],
				r->urls[r->cur], r->cfg->id, (unsigned long long)r->cursor);
			if (++r->tried < r->nurls)
				continue;
			r->tried = 0;
		}
		atomic_fetch_add(&r->retries, 1);
		nap(r, backoff_ms(r, attempt, out == SEND_RETRY_CAP), 0);
		if (attempt < 64)
			attempt++;
	}
	edge_repl_batch_free(&b);
	free(z);
	wt_info("replication: stopped cursor=%llu", (unsigned long long)r->cursor);
	return NULL;
}

static void repl_free(edge_repl *r)
{
	edge_tls_client_free(r->tls);
	for (size_t i = 0; i < r->nurls; i++)
		free(r->urls[i]);
	free(r->urls);
	edge_repl_batch_free(&r->pf_b);
	free(r->pf_z);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
	pthread_cond_destroy(&r->pf_cv);
	free(r);
}

/* Wake and join the sender (when started) and the prefetch thread. */
static void stop_threads(edge_repl *r, int sender)
{
	pthread_mutex_lock(&r->mu);
	r->stop = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_cond_broadcast(&r->pf_cv);
	pthread_mutex_unlock(&r->mu);
	if (sender)
		pthread_join(r->th, NULL);
	if (r->pf_started)
		pthread_join(r->pf_th, NULL);
	r->pf_started = 0;
}

int edge_repl_start(const edge_config *cfg, edge_buffer *store, edge_repl **out, wt_err *err)
{
	edge_tls_client_config tc = {0};
	pthread_condattr_t ca;
	edge_repl *r;
	int rc;

	*out = NULL;
	if (!cfg->hub_url || !*cfg->hub_url) {
		wt_info("replication: off (hub.url is empty)");
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	r->cfg = cfg;
	r->store = store;
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&r->pf_cv, NULL);
	/* hub.urls, or hub.url alone when the config was not built by the loader */
	char *const *hubs = cfg->n_hub_urls ? cfg->hub_urls : &cfg->hub_url;
	size_t nhubs = cfg->n_hub_urls ? cfg->n_hub_urls : 1;
	r->urls = calloc(nhubs, sizeof(*r->urls));
	if (!r->urls) {
		repl_free(r);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < nhubs; i++) {
		const char *hu = hubs[i];
		size_t ul = strlen(hu);
		while (ul && hu[ul - 1] == '/')
			ul--;
		r->urls[i] = malloc(ul + sizeof(EDGE_REPL_PATH));
		if (!r->urls[i]) {
			repl_free(r);
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		}
		r->nurls++;
		memcpy(r->urls[i], hu, ul);
		memcpy(r->urls[i] + ul, EDGE_REPL_PATH, sizeof(EDGE_REPL_PATH));
	}
	snprintf(r->edge_hdr, sizeof(r->edge_hdr), "X-WT-Edge-Id: %s", cfg->id);
	tc.ca_file = cfg->hub_ca;
	tc.cert_file = cfg->hub_cert;
	tc.key_file = cfg->hub_key;
	tc.timeout_ms = (long)cfg->repl_timeout_s * 1000;
	tc.cancel = cancel_cb;
	tc.cancel_arg = r;
	if ((rc = edge_tls_client_new(&tc, &r->tls, err))) {
		repl_free(r);
		return rc;
	}
	if (pthread_create(&r->pf_th, NULL, prefetch_main, r) == 0)
		r->pf_started = 1;
	else
		wt_warn("replication: cannot start the prefetch thread; batches are built one at a time");
	if (pthread_create(&r->th, NULL, repl_main, r) != 0) {
		stop_threads(r, 0);
		repl_free(r);
		return wt_err_set(err, WT_ENOMEM, "cannot start the replication thread");
	}
	edge_buffer_on_commit(store, on_commit, r);
	*out = r;
	return 0;
}

void edge_repl_stop(edge_repl *r)
{
	if (!r)
		return;
	edge_buffer_on_commit(r->store, NULL, NULL);
	atomic_store(&r->cancel, 1);
	stop_threads(r, 1);
	repl_free(r);
}

/* ---- metrics ------------------------------------------------------------------------ */

/* Bytes of the first BACKLOG_SAMPLE unacknowledged uploads (raw +
 * rolluplog, keys and values), scaled to the whole backlog: exact for a
 * backlog up to that size, an average-based estimate beyond, and cheap
 * enough for every scrape (a bounded number of reads). */
#define BACKLOG_SAMPLE 64
static uint64_t backlog_bytes(edge_buffer *s, const edge_buffer_stats *st)
{
	rocksdb_t *db = edge_buffer_db(s);
	rocksdb_readoptions_t *ro;
	rocksdb_iterator_t *lit, *rit;
	uint64_t bytes = 0, n = 0;
	uint8_t k[8];

	if (!st->unreplicated)
		return 0;
	ro = rocksdb_readoptions_create();
	lit = rocksdb_create_iterator_cf(db, ro, edge_buffer_cf(s, EDGE_CF_ROLLUPLOG));
	rit = rocksdb_create_iterator_cf(db, ro, edge_buffer_cf(s, EDGE_CF_RAW));
	edge_be64_put(k, st->repl_cursor + 1);
	for (rocksdb_iter_seek(lit, (const char *)k, 8); rocksdb_iter_valid(lit) && n < BACKLOG_SAMPLE;
	     rocksdb_iter_next(lit), n++) {
		size_t kl, vl;
		const char *key = rocksdb_iter_key(lit, &kl);
		rocksdb_iter_value(lit, &vl);
		bytes += kl + vl;
		rocksdb_iter_seek(rit, key, kl);
		if (rocksdb_iter_valid(rit)) {
			size_t rkl, rvl;
			const char *rk = rocksdb_iter_key(rit, &rkl);
			if (rkl == kl && !memcmp(rk, key, kl)) {
				rocksdb_iter_value(rit, &rvl);
				bytes += rkl + rvl;
			}
		}
	}
	rocksdb_iter_destroy(lit);
	rocksdb_iter_destroy(rit);
	rocksdb_readoptions_destroy(ro);
	if (!n)
		return 0;
	return n >= st->unreplicated ? bytes : (uint64_t)((double)bytes / (double)n * (double)st->unreplicated);
}


void edge_repl_metrics(edge_repl *r, edge_buffer *store, const edge_buffer_stats *st, wt_buf *b)
{
	double age = st->oldest_unreplicated_ns ? (double)(wt_now_ns(CLOCK_REALTIME) - st->oldest_unreplicated_ns) / 1e9 : 0;
	int64_t last = r ? atomic_load(&r->last_success_ns) : 0;

	wt_prom_gauge(b, "wt_edge_repl_enabled", "1 when hub.url is set and the replication thread runs.",
		      (int64_t)(r ? 1 : 0));
	wt_prom_gauge(b, "wt_edge_repl_backlog_uploads", "Committed uploads the hub has not acknowledged.",
		      (int64_t)st->unreplicated);
	wt_prom_gauge(b, "wt_edge_repl_backlog_bytes",
		      "Estimated buffer bytes (raw + rolluplog) not yet acknowledged by the hub.",
		      (int64_t)(backlog_bytes(store, st)));
	wt_prom_gauge_f(b, "wt_edge_repl_oldest_unreplicated_age_seconds",
			"Age of the oldest upload not yet acknowledged.", 3, age < 0 ? 0 : age);
	wt_prom_gauge(b, "wt_edge_repl_cursor", "Highest seq the hub acknowledged (durable).",
		      (int64_t)st->repl_cursor);
	wt_prom_counter(b, "wt_edge_repl_batches_sent_total", "Batches the hub acknowledged.",
			r ? atomic_load(&r->batches) : 0);
	wt_prom_counter(b, "wt_edge_repl_uploads_sent_total", "Uploads the hub acknowledged.",
			r ? atomic_load(&r->uploads) : 0);
	wt_prom_counter(b, "wt_edge_repl_bytes_sent_total", "Compressed request bytes of acknowledged batches.",
			r ? atomic_load(&r->bytes_sent) : 0);
	wt_prom_counter(b, "wt_edge_repl_bytes_uncompressed_total",
			"Protobuf bytes of acknowledged batches before zstd.",
			r ? atomic_load(&r->bytes_uncompressed) : 0);
	wt_prom_counter(b, "wt_edge_repl_raw_missing_total",
			"Acknowledged uploads sent as rollup only (raw original dropped by the disk quota).",
			r ? atomic_load(&r->raw_missing) : 0);
	wt_prom_counter(b, "wt_edge_repl_hub_applied_total", "Uploads the hub reported applied.",
			r ? atomic_load(&r->applied) : 0);
	wt_prom_counter(b, "wt_edge_repl_hub_duplicates_total",
			"Uploads the hub reported as already applied (retries).", r ? atomic_load(&r->duplicates) : 0);
	wt_prom_counter(b, "wt_edge_repl_hub_rejected_total", "Uploads the hub reported rejected.",
			r ? atomic_load(&r->rejected) : 0);
	wt_prom_counter(b, "wt_edge_repl_retries_total", "Failed attempts followed by a backoff.",
			r ? atomic_load(&r->retries) : 0);
	wt_prom_counter(b, "wt_edge_repl_other_incarnation_total", "Acknowledgements saying the hub last knew this edge id under another incarnation (data dir reset, "
		"or two edges with one id).", r ? atomic_load(&r->other_incarnation) : 0);
	wt_prom_counter(b, "wt_edge_repl_hub_busy_total",
			"Batches the hub deferred because it was applying them already (retried after Retry-After).",
			r ? atomic_load(&r->busy) : 0);
	wt_prom_counter(b, "wt_edge_repl_failovers_total", "Switches to the next hub of hub.urls after a failure.",
			r ? atomic_load(&r->failovers) : 0);
	wt_prom_family(b, "wt_edge_repl_errors_total", "counter", "Failed replication attempts by reason.");
	for (int i = 0; i < R_COUNT; i++)
		wt_prom_u64(b, "wt_edge_repl_errors_total", "reason", reason_names[i],
			    (uint64_t)((r ? atomic_load(&r->errors[i]) : 0)));
	wt_prom_gauge_f(b, "wt_edge_repl_last_success_timestamp_seconds",
			"Unix time of the last acknowledged batch (0 = none yet).", 3, (double)last / 1e9);
	wt_prom_gauge(b, "wt_edge_repl_failing", "1 while the last replication attempt failed.",
		      (int64_t)(r ? atomic_load(&r->failing) : 0));
}
