/*
 * test_deletion.c — edge_deletion_apply() on a real edge store (RocksDB in
 * a temp dir): rollup/stacks minutes of the project(/service) ending at or
 * before `before` go, later minutes, other services and projects stay;
 * replicated raw/rolluplog records received before `before` go, records
 * received later or not yet replicated stay; a deletion runs once. The
 * expected survivors are listed by hand from the keys the test writes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compress.h"
#include "edge/config.h"
#include "edge/deletion.h"
#include "edge/keys.h"
#include "edge/buffer.h"

#define MIN0 29000000LL /* minutes since the epoch */
#define NS_PER_MIN 60000000000LL

typedef struct fx {
	char dir[256];
	edge_config cfg;
	edge_buffer *s;
} fx;

static void put(fx *f, int cf, const void *k, size_t kl, const void *v, size_t vl)
{
	rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
	char *e = NULL;
	rocksdb_put_cf(edge_buffer_db(f->s), wo, edge_buffer_cf(f->s, cf), k, kl, v, vl, &e);
	rocksdb_writeoptions_destroy(wo);
	assert_null(e);
}

static int exists(fx *f, int cf, const void *k, size_t kl)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *e = NULL, *v;
	size_t vl;
	v = rocksdb_get_cf(edge_buffer_db(f->s), ro, edge_buffer_cf(f->s, cf), k, kl, &vl, &e);
	rocksdb_readoptions_destroy(ro);
	assert_null(e);
	free(v);
	return v != NULL;
}

static const char *series[3][2] = {{"demo", "a"}, {"demo", "b"}, {"other", "a"}};

/* rollup and stack keys at minutes MIN0-1 and MIN0 for every series */
static void key_at(wt_buf *b, int cf, int si, int64_t minute)
{
	wt_buf_reset(b);
	if (cf == EDGE_CF_ROLLUP)
		assert_int_equal(edge_key_rollup(b, series[si][0], series[si][1], "cpu", minute, "main"), 0);
	else
		assert_int_equal(edge_key_stack(b, series[si][0], series[si][1], "cpu", minute, 1, 2), 0);
}

/* seq: project/service, received minute offset */
static const struct {
	const char *proj, *svc;
	int64_t received_ns;
} recs[5] = {
	{"demo", "a", (MIN0 - 1) * NS_PER_MIN},      /* 1: replicated, before → deleted */
	{"demo", "b", (MIN0 - 1) * NS_PER_MIN},      /* 2: other service → kept */
	{"demo", "a", (MIN0 + 1) * NS_PER_MIN},      /* 3: received after → kept */
	{"other", "a", (MIN0 - 1) * NS_PER_MIN},     /* 4: other project → kept */
	{"demo", "a", (MIN0 - 1) * NS_PER_MIN + 5},  /* 5: NOT replicated → kept */
};

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	wt_err err = {0, ""};
	wt_buf b = WT_BUF_INIT;
	uint8_t m[8];

	snprintf(f->dir, sizeof(f->dir), "/tmp/wt-test-deletion-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	edge_config_defaults(&f->cfg);
	free(f->cfg.data_dir);
	f->cfg.data_dir = strdup(f->dir);
	f->cfg.sync = 0;
	f->cfg.retention_interval_s = 86400;
	assert_int_equal(edge_buffer_open(&f->cfg, NULL, &f->s, &err), 0);
	for (int si = 0; si < 3; si++) {
		wt_buf_reset(&b);
		wt_buf_puts(&b, EDGE_META_TYPES);
		assert_int_equal(edge_key_series(&b, series[si][0], series[si][1], "cpu"), 0);
		put(f, EDGE_CF_META, b.data, b.len, "nanoseconds", 11);
		for (int cf = EDGE_CF_ROLLUP; cf <= EDGE_CF_STACKS; cf++)
			for (int64_t mi = MIN0 - 1; mi <= MIN0; mi++) {
				key_at(&b, cf, si, mi);
				put(f, cf, b.data, b.len, "0123456789abcdef", 16);
			}
	}
	for (int i = 0; i < 5; i++) {
		char hdr[200], js[200];
		uint8_t *raw = NULL, *z = NULL, *lv;
		size_t rl = 0, zl = 0;
		snprintf(hdr, sizeof(hdr), "{\"v\":1,\"project\":\"%s\",\"service\":\"%s\"}", recs[i].proj, recs[i].svc);
		assert_int_equal(edge_raw_encode(recs[i].received_ns, hdr, (const uint8_t *)"body", 4, &raw, &rl, &err), 0);
		edge_be64_put(m, (uint64_t)i + 1);
		put(f, EDGE_CF_RAW, m, 8, raw, rl);
		snprintf(js, sizeof(js), "{\"project\":\"%s\",\"service\":\"%s\",\"rows\":[]}", recs[i].proj, recs[i].svc);
		assert_int_equal(wt_zstd_compress((const uint8_t *)js, strlen(js), 1, &z, &zl, &err), 0);
		lv = malloc(zl + 8);
		edge_le64_put(lv, recs[i].received_ns);
		memcpy(lv + 8, z, zl);
		put(f, EDGE_CF_ROLLUPLOG, m, 8, lv, zl + 8);
		free(raw);
		free(z);
		free(lv);
	}
	edge_be64_put(m, 4); /* the hub acknowledged seqs 1-4 */
	put(f, EDGE_CF_META, EDGE_META_REPL_CURSOR, strlen(EDGE_META_REPL_CURSOR), m, 8);
	wt_buf_free(&b);
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

static void check_series(fx *f, const int expect[3][2])
{
	wt_buf b = WT_BUF_INIT;
	for (int si = 0; si < 3; si++)
		for (int cf = EDGE_CF_ROLLUP; cf <= EDGE_CF_STACKS; cf++)
			for (int mi = 0; mi < 2; mi++) {
				key_at(&b, cf, si, MIN0 - 1 + mi);
				if (exists(f, cf, b.data, b.len) != expect[si][mi])
					fail_msg("series %s/%s cf %d minute %d: expected %s", series[si][0], series[si][1],
						 cf, mi, expect[si][mi] ? "kept" : "deleted");
			}
	wt_buf_free(&b);
}

static void check_records(fx *f, const int expect[5])
{
	uint8_t m[8];
	for (int i = 0; i < 5; i++) {
		edge_be64_put(m, (uint64_t)i + 1);
		assert_int_equal(exists(f, EDGE_CF_RAW, m, 8), expect[i]);
		assert_int_equal(exists(f, EDGE_CF_ROLLUPLOG, m, 8), expect[i]);
	}
}

static void test_service_deletion(void **state)
{
	fx *f = *state;
	wt_err err = {0, ""};
	/* before = 30 s into minute MIN0: minute MIN0-1 ends before it, MIN0 straddles it */
	int64_t before = MIN0 * NS_PER_MIN + 30000000000LL;
	static const int s1[3][2] = {{0, 1}, {1, 1}, {1, 1}};
	static const int r1[5] = {0, 1, 1, 1, 1};
	static const int s2[3][2] = {{0, 1}, {0, 1}, {1, 1}};
	static const int r2[5] = {0, 0, 1, 1, 1};

	assert_int_equal(edge_deletion_apply(f->s, "d1", "demo", "a", before, &err), 1);
	check_series(f, s1);
	check_records(f, r1);
	/* applied once: a repeat does nothing, even with other arguments */
	assert_int_equal(edge_deletion_apply(f->s, "d1", "demo", NULL, before, &err), 0);
	check_series(f, s1);
	/* all services of the project */
	assert_int_equal(edge_deletion_apply(f->s, "d2", "demo", NULL, before, &err), 1);
	check_series(f, s2);
	check_records(f, r2);
}

static void test_bad_arguments(void **state)
{
	fx *f = *state;
	wt_err err = {0, ""};
	char longid[200];
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	assert_int_equal(edge_deletion_apply(f->s, "", "demo", NULL, 1, &err), WT_EINVAL);
	assert_int_equal(edge_deletion_apply(f->s, longid, "demo", NULL, 1, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "deletion_id"));
	assert_int_equal(edge_deletion_apply(f->s, "d3", "demo", NULL, 0, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "before_ns"));
	assert_int_equal(edge_deletion_apply(f->s, "d4", NULL, NULL, 5, &err), WT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_service_deletion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
