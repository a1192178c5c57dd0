/*
 * test_repl_batch.c — building replication batches from a real edge store
 * (RocksDB in a temp dir, uploads committed through the group commit):
 * sequence order after a cursor, limits, uploads whose raw original was
 * dropped (by hand and by the disk quota), corrupt rollup deltas, the
 * durable cursor/ledger and the retention that follows it, and parsing the
 * hub's answer. Batches are decoded with the generated protobuf code and
 * compared with the bytes and rows the test itself put in.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <pthread.h>

#include "compress.h"
#include "edge/config.h"
#include "edge/keys.h"
#include "edge/repl_client.h"
#include "edge/buffer.h"
#include "edge/server.h"
#include "profile.h"
#include "proto/repl.pb-c.h"

#define NUP 10
#define BASE_NS 1760000000000000000LL

typedef struct fx {
	char dir[256];
	edge_config cfg;
	edge_buffer *s;
} fx;

static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;

static void commit_done(edge_commit *c)
{
	pthread_mutex_lock(&done_mu);
	*(int *)c->arg = 1;
	pthread_cond_broadcast(&done_cv);
	pthread_mutex_unlock(&done_mu);
}

/* Original of upload i: i*1000+7 bytes of a pattern (deterministic). */
static size_t orig_len(int i)
{
	return (size_t)i * 1000 + 7;
}

static uint8_t *orig_bytes(int i)
{
	size_t n = orig_len(i);
	uint8_t *p = malloc(n);
	for (size_t j = 0; j < n; j++)
		p[j] = (uint8_t)((j * 31 + (size_t)i * 7) ^ (j >> 5));
	return p;
}

static void hdr_text(int i, char *buf, size_t n)
{
	snprintf(buf, n, "{\"v\":1,\"project\":\"demo\",\"service\":\"svc%d\",\"format\":\"folded\"}", i);
}

/* Upload i has i+1 rows: ["cpu","nanoseconds","fn<i>_<r>", 29000000+r, r+1, 10*(r+1)] */
static void rolluplog_value(int i, uint8_t **out, size_t *outlen)
{
	char json[8192];
	size_t o = (size_t)snprintf(json, sizeof(json),
				    "{\"project\":\"demo\",\"service\":\"svc%d\",\"received_ns\":%lld,"
				    "\"labels\":{\"env\":\"t%d\"},\"rows\":[",
				    i, (long long)(BASE_NS + i), i);
	for (int r = 0; r <= i; r++)
		o += (size_t)snprintf(json + o, sizeof(json) - o, "%s[\"cpu\",\"nanoseconds\",\"fn%d_%d\",%d,%d,%d]",
				      r ? "," : "", i, r, 29000000 + r, r + 1, 10 * (r + 1));
	snprintf(json + o, sizeof(json) - o, "]}");
	uint8_t *z;
	size_t zl;
	wt_err err = {0};
	assert_int_equal(wt_zstd_compress((const uint8_t *)json, strlen(json), 3, &z, &zl, &err), 0);
	*out = malloc(8 + zl);
	edge_le64_put(*out, BASE_NS + i);
	memcpy(*out + 8, z, zl);
	*outlen = 8 + zl;
	free(z);
}

/* Commit uploads first..last (1-based i) one at a time: seq == i. */
static void commit_uploads(fx *f, int first, int last)
{
	for (int i = first; i <= last; i++) {
		edge_commit c;
		char hdr[256];
		int done = 0;
		wt_err err = {0};
		uint8_t *o = orig_bytes(i);
		memset(&c, 0, sizeof(c));
		hdr_text(i, hdr, sizeof(hdr));
		assert_int_equal(edge_raw_encode(BASE_NS + i, hdr, o, orig_len(i), &c.raw, &c.raw_len, &err), 0);
		rolluplog_value(i, &c.rolluplog, &c.rolluplog_len);
		c.done = commit_done;
		c.arg = &done;
		edge_buffer_submit(f->s, &c);
		pthread_mutex_lock(&done_mu);
		while (!done)
			pthread_cond_wait(&done_cv, &done_mu);
		pthread_mutex_unlock(&done_mu);
		assert_int_equal(c.rc, 0);
		assert_int_equal(c.seq, (uint64_t)i);
		free(o);
		free(c.raw);
		free(c.rolluplog);
		wt_buf_free(&c.ops);
	}
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	wt_err err = {0};
	snprintf(f->dir, sizeof(f->dir), "/tmp/wt-test-repl-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	edge_config_defaults(&f->cfg);
	free(f->cfg.data_dir);
	f->cfg.data_dir = strdup(f->dir);
	f->cfg.sync = 0;
	f->cfg.retention_interval_s = 86400; /* runs only when the test says */
	assert_int_equal(edge_buffer_open(&f->cfg, NULL, &f->s, &err), 0);
	commit_uploads(f, 1, NUP);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	char cmd[300];
	edge_buffer_close(f->s);
	edge_config_free(&f->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static Watchtower__Repl__Batch *build(fx *f, uint64_t after, size_t max_up, size_t max_bytes, edge_repl_batch *b)
{
	wt_err err = {0};
	assert_int_equal(edge_repl_batch_build(f->s, "edge-t", after, max_up, max_bytes, b, &err), 0);
	if (!b->nuploads)
		return NULL;
	Watchtower__Repl__Batch *m = watchtower__repl__batch__unpack(NULL, b->pb_len, b->pb);
	assert_non_null(m);
	assert_string_equal(m->edge_id, "edge-t");
	/* a data dir created by this store has a random incarnation */
	assert_int_equal(strlen(m->incarnation), 32);
	assert_string_equal(m->incarnation, edge_buffer_incarnation(f->s));
	assert_int_equal(m->n_uploads, b->nuploads);
	assert_int_equal(m->first_seq, b->first_seq);
	assert_int_equal(m->last_seq, b->last_seq);
	return m;
}

/* Upload u must be upload i as committed, with or without its original. */
static void check_upload(const Watchtower__Repl__Upload *u, int i, int with_raw)
{
	char hdr[256];
	assert_int_equal(u->seq, (uint64_t)i);
	assert_int_equal(u->received_ns, BASE_NS + i);
	/* the raw record's JSON header goes as the typed header (header_json
	 * is left for edges from before it) */
	assert_int_equal(u->header_json.len, 0);
	assert_non_null(u->header);
	snprintf(hdr, sizeof(hdr), "svc%d", i);
	assert_string_equal(u->header->service, hdr);
	assert_string_equal(u->header->project, "demo");
	if (with_raw) {
		uint8_t *o = orig_bytes(i);
		assert_string_equal(u->header->format, "folded");
		assert_false(u->header->raw_dropped);
		assert_int_equal(u->original.len, orig_len(i));
		assert_memory_equal(u->original.data, o, orig_len(i));
		free(o);
	} else {
		char want[64];
		assert_int_equal(u->original.len, 0);
		/* the synthesised header still names project, service and labels */
		assert_true(u->header->raw_dropped);
		assert_int_equal(u->header->n_labels, 1);
		assert_string_equal(u->header->labels[0]->key, "env");
		snprintf(want, sizeof(want), "t%d", i);
		assert_string_equal(u->header->labels[0]->value, want);
	}
	assert_int_equal(u->n_rollup, (size_t)i + 1);
	for (int r = 0; r <= i; r++) {
		char fn[32];
		const Watchtower__Repl__RollupRow *row = u->rollup[r];
		snprintf(fn, sizeof(fn), "fn%d_%d", i, r);
		assert_string_equal(row->type, "cpu");
		assert_string_equal(row->unit, "nanoseconds");
		assert_string_equal(row->function, fn);
		assert_int_equal(row->minute, 29000000 + r);
		assert_int_equal(row->self, r + 1);
		assert_int_equal(row->total, 10 * (r + 1));
	}
}

static void batch_after_cursor_in_seq_order(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	Watchtower__Repl__Batch *m = build(f, 0, 64, 8u << 20, &b);
	assert_int_equal(b.nuploads, NUP);
	assert_int_equal(b.first_seq, 1);
	assert_int_equal(b.last_seq, NUP);
	assert_int_equal(b.raw_missing, 0);
	size_t rows = 0, orig = 0;
	for (int i = 1; i <= NUP; i++) {
		check_upload(m->uploads[i - 1], i, 1);
		rows += (size_t)i + 1;
		orig += orig_len(i);
	}
	assert_int_equal(b.nrows, rows);
	assert_int_equal(b.original_bytes, orig);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);

	m = build(f, 4, 64, 8u << 20, &b);
	assert_int_equal(b.first_seq, 5);
	assert_int_equal(b.last_seq, NUP);
	for (int i = 5; i <= NUP; i++)
		check_upload(m->uploads[i - 5], i, 1);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);

	assert_null(build(f, NUP, 64, 8u << 20, &b));
	assert_int_equal(b.nuploads, 0);
	assert_null(b.pb);
}

static void batch_limits(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	Watchtower__Repl__Batch *m = build(f, 0, 3, 8u << 20, &b);
	assert_int_equal(b.first_seq, 1);
	assert_int_equal(b.last_seq, 3);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);

	/* max_bytes below one upload: that upload still goes, alone */
	m = build(f, 6, 64, 100, &b);
	assert_int_equal(b.nuploads, 1);
	assert_int_equal(b.first_seq, 7);
	check_upload(m->uploads[0], 7, 1);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);

	/* 9000 bytes: originals are 1007, 2007, 3007, 4007... (plus headers
	 * and rows): 1+2+3 fit (6021 + overhead < 9000), adding 4 does not */
	m = build(f, 0, 64, 9000, &b);
	assert_int_equal(b.first_seq, 1);
	assert_int_equal(b.last_seq, 3);
	assert_true(b.pb_len <= 9000);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

static void dropped_raw_is_sent_as_rollup_only(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	uint8_t k[8];
	char *e = NULL;
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	edge_be64_put(k, 3);
	rocksdb_delete_cf(edge_buffer_db(f->s), wo, edge_buffer_cf(f->s, EDGE_CF_RAW), (const char *)k, 8, &e);
	assert_null(e);
	rocksdb_writeoptions_destroy(wo);

	Watchtower__Repl__Batch *m = build(f, 0, 64, 8u << 20, &b);
	assert_int_equal(b.nuploads, NUP); /* no gap */
	assert_int_equal(b.raw_missing, 1);
	for (int i = 1; i <= NUP; i++)
		check_upload(m->uploads[i - 1], i, i != 3);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

/* The disk quota drops raw originals, never unreplicated rollup deltas. */
static void quota_keeps_rollups(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	edge_buffer_stats st;
	f->cfg.disk_quota_bytes = 1;
	edge_buffer_retention_run(f->s);
	edge_buffer_stats_get(f->s, &st);
	assert_int_equal(st.raw_dropped, NUP);
	Watchtower__Repl__Batch *m = build(f, 0, 64, 8u << 20, &b);
	assert_int_equal(b.nuploads, NUP);
	assert_int_equal(b.raw_missing, NUP);
	assert_int_equal(b.original_bytes, 0);
	for (int i = 1; i <= NUP; i++)
		check_upload(m->uploads[i - 1], i, 0);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

static void corrupt_rolluplog_still_sent(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	uint8_t k[8], v[8 + 5] = {0};
	char *e = NULL;
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	edge_be64_put(k, 2);
	edge_le64_put(v, BASE_NS + 2);
	memcpy(v + 8, "junk!", 5);
	rocksdb_put_cf(edge_buffer_db(f->s), wo, edge_buffer_cf(f->s, EDGE_CF_ROLLUPLOG), (const char *)k, 8,
		       (const char *)v, sizeof(v), &e);
	assert_null(e);
	rocksdb_writeoptions_destroy(wo);
	Watchtower__Repl__Batch *m = build(f, 1, 2, 8u << 20, &b);
	assert_int_equal(b.first_seq, 2);
	assert_int_equal(b.last_seq, 3);
	assert_int_equal(b.corrupt, 1);
	assert_int_equal(m->uploads[0]->seq, 2);
	assert_int_equal(m->uploads[0]->n_rollup, 0);
	assert_int_equal(m->uploads[0]->original.len, orig_len(2));
	check_upload(m->uploads[1], 3, 1);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

static void cursor_and_ledger_drive_retention(void **state)
{
	fx *f = *state;
	edge_repl_batch b;
	edge_buffer_stats st;
	wt_err err = {0};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;

	assert_int_equal(edge_repl_cursor_load(f->s), 0);
	f->cfg.raw_hours_after_replication = 1;
	/* acked 2 h ago up to 4, just now up to 7 */
	assert_int_equal(edge_repl_cursor_save(f->s, 4, now - 2 * 3600LL * 1000000000LL, &err), 0);
	assert_int_equal(edge_repl_cursor_save(f->s, 7, now, &err), 0);
	assert_int_equal(edge_repl_cursor_load(f->s), 7);
	edge_buffer_stats_get(f->s, &st);
	assert_int_equal(st.repl_cursor, 7);
	assert_int_equal(st.unreplicated, NUP - 7);
	assert_int_equal(st.oldest_unreplicated_ns, BASE_NS + 8);

	edge_buffer_retention_run(f->s);
	/* seqs 1..4 expired: raw and rolluplog gone; 5.. still there */
	Watchtower__Repl__Batch *m = build(f, 0, 64, 8u << 20, &b);
	assert_int_equal(b.first_seq, 5);
	assert_int_equal(b.last_seq, NUP);
	assert_int_equal(b.raw_missing, 0);
	for (int i = 5; i <= NUP; i++)
		check_upload(m->uploads[i - 5], i, 1);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);

	/* new uploads continue after the cursor */
	commit_uploads(f, NUP + 1, NUP + 2);
	m = build(f, 7, 64, 8u << 20, &b);
	assert_int_equal(b.first_seq, 8);
	assert_int_equal(b.last_seq, NUP + 2);
	check_upload(m->uploads[b.nuploads - 1], NUP + 2, 1);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

/* Commit profile p as an upload of service svc through the ingest path
 * (edge_ingest_prepare_fmt: raw record, streamed rollup delta, stacks). */
static uint64_t commit_profile(fx *f, edge_server *srv, const char *svc, wt_profile *p)
{
	edge_commit c;
	wt_err err = {0};
	int done = 0;
	static const uint8_t orig[] = "main;leaf 1\n";
	memset(&c, 0, sizeof(c));
	assert_int_equal(edge_ingest_prepare_fmt(srv, &c, "demo", svc, BASE_NS, "/v1/profiles", WT_FMT_FOLDED, orig,
						 sizeof(orig) - 1, p, &err), 0);
	c.done = commit_done;
	c.arg = &done;
	edge_buffer_submit(f->s, &c);
	pthread_mutex_lock(&done_mu);
	while (!done)
		pthread_cond_wait(&done_cv, &done_mu);
	pthread_mutex_unlock(&done_mu);
	assert_int_equal(c.rc, 0);
	free(c.raw);
	free(c.rolluplog);
	wt_buf_free(&c.ops);
	return c.seq;
}

/* A profile of one-frame stacks, one per name, count 1 each. */
static wt_profile *named_profile(const char *const *names, size_t n)
{
	wt_profile *p = wt_profile_new(NULL);
	wt_err err = {0};
	size_t ty;
	assert_int_equal(wt_profile_add_type(p, "samples", "count", NULL, &ty, &err), 0);
	for (size_t i = 0; i < n; i++) {
		wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
		uint32_t st;
		int64_t v = 1;
		assert_int_equal(wt_profile_add_function_named(p, names[i], strlen(names[i]), NULL, &fr.function, &err), 0);
		uint32_t fid;
		assert_int_equal(wt_profile_add_frame(p, &fr, &fid, &err), 0);
		assert_int_equal(wt_profile_add_stack(p, &fid, 1, &st, &err), 0);
		assert_int_equal(wt_profile_add_sample(p, st, 0, 0, &v, &err), 0);
	}
	p->time_ns = BASE_NS;
	return p;
}

/* The rollup delta is written as JSON text row by row (http_ingest.c):
 * names that need escaping come back as they were; a name that is not
 * UTF-8 is written as null and its row skipped, as jansson did. */
static void streamed_rolluplog_escapes(void **state)
{
	fx *f = *state;
	edge_server srv;
	edge_repl_batch b;
	const char *names[] = {"quo\"te", "back\\slash", "tab\there", "nl\nx", "caf\xc3\xa9", "bad\xff", "/slash"};
	memset(&srv, 0, sizeof(srv));
	srv.cfg = &f->cfg;
	wt_profile *p = named_profile(names, 7);
	uint64_t seq = commit_profile(f, &srv, "esc", p);
	wt_profile_free(p);
	Watchtower__Repl__Batch *m = build(f, seq - 1, 1, 8u << 20, &b);
	assert_int_equal(b.rows_omitted, 0);
	const Watchtower__Repl__Upload *u = m->uploads[0];
	assert_string_equal(u->header->service, "esc");
	/* the 6 valid names' self rows, and no row for "bad\xff" */
	size_t found = 0;
	for (size_t r = 0; r < u->n_rollup; r++) {
		assert_string_equal(u->rollup[r]->type, "samples");
		for (int i = 0; i < 7; i++)
			if (i != 5 && !strcmp(u->rollup[r]->function, names[i])) {
				assert_int_equal(u->rollup[r]->self, 1);
				found++;
			}
		assert_null(strstr(u->rollup[r]->function, "bad"));
	}
	assert_int_equal(found, 6);
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
}

/* A large upload (rolluplog over 1 MiB compressed) goes with its original
 * and without rollup rows (the hub builds its own from the original). */
static void large_rolluplog_rows_omitted(void **state)
{
	fx *f = *state;
	edge_server srv;
	edge_repl_batch b;
	enum { NFN = 200000 };
	char (*buf)[24] = malloc(NFN * sizeof(*buf));
	const char **names = malloc(NFN * sizeof(*names));
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < NFN; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift: names that do not compress */
		snprintf(buf[i], sizeof(buf[i]), "f%016llx", (unsigned long long)x);
		names[i] = buf[i];
	}
	memset(&srv, 0, sizeof(srv));
	srv.cfg = &f->cfg;
	wt_profile *p = named_profile(names, NFN);
	uint64_t seq = commit_profile(f, &srv, "big", p);
	wt_profile_free(p);
	Watchtower__Repl__Batch *m = build(f, seq - 1, 1, 64u << 20, &b);
	assert_int_equal(b.rows_omitted, 1);
	assert_int_equal(b.corrupt, 0);
	assert_int_equal(b.raw_missing, 0);
	assert_int_equal(m->uploads[0]->n_rollup, 0);
	assert_int_equal(m->uploads[0]->received_ns, BASE_NS);
	assert_string_equal(m->uploads[0]->header->service, "big");
	assert_int_equal(m->uploads[0]->original.len, strlen("main;leaf 1\n"));
	watchtower__repl__batch__free_unpacked(m, NULL);
	edge_repl_batch_free(&b);
	free(buf);
	free(names);
}

static void ack_parsing(void **state)
{
	edge_repl_ack a;
	wt_err err = {0};
	const char *ok = "{\"last_seq\":42,\"applied\":3,\"duplicates\":1,\"rejected\":0}";
	assert_int_equal(edge_repl_ack_parse((const uint8_t *)ok, strlen(ok), &a, &err), 0);
	assert_int_equal(a.last_seq, 42);
	assert_int_equal(a.applied, 3);
	assert_int_equal(a.duplicates, 1);
	const char *bad[] = {"", "[]", "{\"applied\":1}", "{\"last_seq\":-1}", "{\"last_seq\":\"7\"}", "<html>",
			     "{\"last_seq\":1,\"applied\":1.5}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		assert_int_equal(edge_repl_ack_parse((const uint8_t *)bad[i], strlen(bad[i]), &a, &err), WT_EINVAL);
		assert_true(strlen(err.msg) > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(batch_after_cursor_in_seq_order, setup, teardown),
		cmocka_unit_test_setup_teardown(batch_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(dropped_raw_is_sent_as_rollup_only, setup, teardown),
		cmocka_unit_test_setup_teardown(quota_keeps_rollups, setup, teardown),
		cmocka_unit_test_setup_teardown(corrupt_rolluplog_still_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(cursor_and_ledger_drive_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(streamed_rolluplog_escapes, setup, teardown),
		cmocka_unit_test_setup_teardown(large_rolluplog_rows_omitted, setup, teardown),
		cmocka_unit_test(ack_parsing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
