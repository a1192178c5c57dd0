/*
 * test_compress.c — bounded gzip/zstd (common/compress.c).
 *
 * References are independent of our code: gzip files written by other
 * tools (the corpus) are compared byte for byte with `gzip -dc`, and what
 * we compress is decompressed by the `gzip` / `zstd` command-line tools.
 * Bombs (1 GiB of zeros in ~1 MiB) must stop at the limit quickly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "compress.h"
#include "gzbomb.h"

static char g_corpus[700], g_tmp[700];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run cmd and capture its stdout. */
static uint8_t *run_capture(const char *cmd, size_t *len)
{
	FILE *f = popen(cmd, "r");
	uint8_t *b = NULL;
	size_t n = 0, cap = 0, r;

	assert_non_null(f);
	for (;;) {
		if (cap - n < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			b = realloc(b, cap);
			assert_non_null(b);
		}
		r = fread(b + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	assert_int_equal(pclose(f), 0);
	*len = n;
	return b;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	char cmd[1600];
	snprintf(cmd, sizeof(cmd), "cat '%s'", path);
	return run_capture(cmd, len);
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* Some text with structure so that compression is real. */
static uint8_t *sample_text(size_t n)
{
	uint8_t *b = malloc(n);
	size_t i;
	uint32_t x = 12345;

	assert_non_null(b);
	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (i % 61 == 60) ? '\n' : (uint8_t)("main;foo;bar;baz 1234567890"[(x >> 16) % 27]);
	}
	return b;
}

static int setup(void **state)
{
	const char *root = getenv("WT_ROOT"), *build = getenv("BUILD");

	snprintf(g_corpus, sizeof(g_corpus), "%s/tests/corpus", root ? root : ".");
	snprintf(g_tmp, sizeof(g_tmp), "%s/testdata/compress", build ? build : "build");
	{
		char cmd[800];
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", g_tmp);
		assert_int_equal(system(cmd), 0);
	}
	return 0;
}

static void test_magic(void **state)
{
	static const uint8_t gz[] = {0x1f, 0x8b, 8}, zs[] = {0x28, 0xb5, 0x2f, 0xfd};
	assert_true(wt_is_gzip(gz, 3));
	assert_false(wt_is_gzip(gz, 1));
	assert_false(wt_is_gzip(zs, 4));
	assert_true(wt_is_zstd(zs, 4));
	assert_false(wt_is_zstd(zs, 3));
	assert_false(wt_is_zstd(gz, 3));
}

/* Real gzip files from other tools: same bytes as `gzip -dc`. */
static void test_gunzip_matches_gzip_tool(void **state)
{
	static const char *const files[] = {
		"pprof/google-pprof__large.cpu.pb.gz",
		"perf-script/flamegraph__example-perf-stacks.txt.gz",
		"gen/go/go-heap.pb.gz",
	};
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1400], cmd[1600];
		size_t n, rn, outn;
		uint8_t *in, *ref, *out;
		wt_err e;

		snprintf(path, sizeof(path), "%s/%s", g_corpus, files[i]);
		in = slurp(path, &n);
		snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
		ref = run_capture(cmd, &rn);
		assert_int_equal(wt_gunzip(in, n, rn, &out, &outn, &e), 0); /* exact limit is fine */
		assert_int_equal(outn, rn);
		assert_memory_equal(out, ref, rn);
		free(out);
		/* one byte less allowed: WT_ELIMIT */
		assert_int_equal(wt_gunzip(in, n, rn - 1, &out, &outn, &e), WT_ELIMIT);
		assert_null(out);
		assert_non_null(strstr(e.msg, "limit"));
		free(in);
		free(ref);
	}
}

/* What we write, gzip(1) and zstd(1) read. */
static void test_compress_read_by_tools(void **state)
{
	size_t n = 3 << 20, gn, zn, rn;
	uint8_t *text = sample_text(n), *gz, *zs, *ref;
	char path[800], cmd[1800];
	wt_err e;

	assert_int_equal(wt_gzip(text, n, 6, &gz, &gn, &e), 0);
	assert_true(gn < n * 3 / 4);
	snprintf(path, sizeof(path), "%s/ours.gz", g_tmp);
	write_file(path, gz, gn);
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
	ref = run_capture(cmd, &rn);
	assert_int_equal(rn, n);
	assert_memory_equal(ref, text, n);
	free(ref);

	assert_int_equal(wt_zstd_compress(text, n, 3, &zs, &zn, &e), 0);
	assert_true(zn < n * 3 / 4);
	if (system("command -v zstd >/dev/null 2>&1") == 0) {
		snprintf(path, sizeof(path), "%s/ours.zst", g_tmp);
		write_file(path, zs, zn);
		snprintf(cmd, sizeof(cmd), "zstd -dc '%s'", path);
		ref = run_capture(cmd, &rn);
		assert_int_equal(rn, n);
		assert_memory_equal(ref, text, n);
		free(ref);
	} else {
		print_message("zstd tool not installed: checked with libzstd only\n");
		ref = malloc(n);
		assert_int_equal(ZSTD_decompress(ref, n, zs, zn), n);
		assert_memory_equal(ref, text, n);
		free(ref);
	}
	free(gz);
	free(zs);
	free(text);
}

static void test_roundtrip_and_empty(void **state)
{
	size_t n = 100000, cn, dn;
	uint8_t *text = sample_text(n), *c, *d;
	wt_err e;

	assert_int_equal(wt_gzip(text, n, 9, &c, &cn, &e), 0);
	assert_int_equal(wt_gunzip(c, cn, n, &d, &dn, &e), 0);
	assert_int_equal(dn, n);
	assert_memory_equal(d, text, n);
	free(c);
	free(d);
	assert_int_equal(wt_zstd_compress(text, n, 1, &c, &cn, &e), 0);
	assert_int_equal(wt_zstd_decompress(c, cn, n, &d, &dn, &e), 0);
	assert_int_equal(dn, n);
	assert_memory_equal(d, text, n);
	free(d);
	assert_int_equal(wt_zstd_decompress(c, cn, n - 1, &d, &dn, &e), WT_ELIMIT);
	assert_null(d);
	free(c);
	/* empty payloads */
	assert_int_equal(wt_gzip(text, 0, 6, &c, &cn, &e), 0);
	assert_int_equal(wt_gunzip(c, cn, 0, &d, &dn, &e), 0);
	assert_int_equal(dn, 0);
	assert_non_null(d);
	free(c);
	free(d);
	assert_int_equal(wt_zstd_compress(text, 0, 3, &c, &cn, &e), 0);
	assert_int_equal(wt_zstd_decompress(c, cn, 0, &d, &dn, &e), 0);
	assert_int_equal(dn, 0);
	free(c);
	free(d);
	free(text);
}

/* `cat a.gz b.gz` is one valid gzip file with both payloads. */
static void test_multi_member(void **state)
{
	uint8_t *a, *b, *cat, *out;
	size_t an, bn, on;
	wt_err e;

	assert_int_equal(wt_gzip((const uint8_t *)"hello ", 6, 6, &a, &an, &e), 0);
	assert_int_equal(wt_gzip((const uint8_t *)"world", 5, 6, &b, &bn, &e), 0);
	cat = malloc(an + bn + 4);
	memcpy(cat, a, an);
	memcpy(cat + an, b, bn);
	assert_int_equal(wt_gunzip(cat, an + bn, 100, &out, &on, &e), 0);
	assert_int_equal(on, 11);
	assert_memory_equal(out, "hello world", 11);
	free(out);
	/* the limit counts across members */
	assert_int_equal(wt_gunzip(cat, an + bn, 10, &out, &on, &e), WT_ELIMIT);
	/* zero padding after the last member is tolerated, garbage is not */
	memset(cat + an + bn, 0, 4);
	assert_int_equal(wt_gunzip(cat, an + bn + 4, 100, &out, &on, &e), 0);
	free(out);
	memcpy(cat + an + bn, "junk", 4);
	assert_int_equal(wt_gunzip(cat, an + bn + 4, 100, &out, &on, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "trailing garbage at byte"));
	free(a);
	free(b);
	free(cat);
}

/* The one-shot decoder sizes its buffer from the trailer's ISIZE: a trailer
 * that lies must give an error (smaller) or still the whole, bounded
 * payload (larger than the limit: the streaming path decodes it). */
static void test_trailer_size(void **state)
{
	size_t n = 50000, cn, dn;
	uint8_t *text = sample_text(n), *c, *d;
	wt_err e;

	assert_int_equal(wt_gzip(text, n, 6, &c, &cn, &e), 0);
	assert_int_equal(wt_gunzip(c, cn, n, &d, &dn, &e), 0);
	assert_int_equal(dn, n);
	assert_memory_equal(d, text, n);
	free(d);
	/* just below the limit: WT_ELIMIT, whichever path */
	assert_int_equal(wt_gunzip(c, cn, n - 1, &d, &dn, &e), WT_ELIMIT);
	assert_null(d);
	/* ISIZE says 1000 bytes: never a short result */
	c[cn - 4] = 0xe8; c[cn - 3] = 0x03; c[cn - 2] = 0; c[cn - 1] = 0;
	assert_int_equal(wt_gunzip(c, cn, n, &d, &dn, &e), WT_EINVAL);
	assert_null(d);
	/* ISIZE says 4 GiB - 1 (beyond the limit): the streaming path */
	c[cn - 4] = 0xff; c[cn - 3] = 0xff; c[cn - 2] = 0xff; c[cn - 1] = 0xff;
	assert_int_equal(wt_gunzip(c, cn, n, &d, &dn, &e), WT_EINVAL);
	assert_null(d);
	free(c);
	free(text);
}

static void test_corrupt_and_truncated(void **state)
{
	size_t n = 200000, cn, dn, cut;
	uint8_t *text = sample_text(n), *c, *d;
	char want[64];
	wt_err e;

	assert_int_equal(wt_gzip(text, n, 6, &c, &cn, &e), 0);
	for (cut = 0; cut < cn; cut += cn / 13 + 1) {
		int rc = wt_gunzip(c, cut, n, &d, &dn, &e);
		assert_int_equal(rc, WT_EINVAL);
		assert_null(d);
	}
	assert_int_equal(wt_gunzip(c, cn - 4, n, &d, &dn, &e), WT_EINVAL);
	snprintf(want, sizeof(want), "input ends at byte %zu", cn - 4);
	assert_non_null(strstr(e.msg, want));
	/* flip bits in the deflate data: an error naming a byte offset */
	c[cn / 2] ^= 0xff;
	c[cn / 2 + 1] ^= 0x55;
	{
		/* damaged lengths may also inflate past the limit */
		int rc = wt_gunzip(c, cn, n, &d, &dn, &e);
		assert_true(rc == WT_EINVAL || rc == WT_ELIMIT);
		assert_null(d);
		assert_non_null(strstr(e.msg, "byte"));
	}
	/* not gzip at all */
	assert_int_equal(wt_gunzip(text, n, n, &d, &dn, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "byte 0"));
	free(c);

	assert_int_equal(wt_zstd_compress(text, n, 3, &c, &cn, &e), 0);
	for (cut = 0; cut < cn; cut += cn / 13 + 1)
		assert_int_equal(wt_zstd_decompress(c, cut, n, &d, &dn, &e), WT_EINVAL);
	c[cn / 2] ^= 0xff;
	{
		int rc = wt_zstd_decompress(c, cn, n, &d, &dn, &e);
		/* a flipped literal may still decode; the checksum-less frame
		 * cannot always tell. Never a crash, and never more than n. */
		if (rc == 0) {
			assert_true(dn <= n);
			free(d);
		} else {
			assert_int_equal(rc, WT_EINVAL);
		}
	}
	free(c);
	free(text);
}

static void test_gzip_bomb(void **state)
{
	size_t n, on;
	uint8_t *bomb = wt_test_gzip_bomb(1024, &n), *out, *small;
	double t0;
	wt_err e;

	assert_non_null(bomb);
	assert_true(n < 2 << 20);
	t0 = now_s();
	assert_int_equal(wt_gunzip(bomb, n, 64u << 20, &out, &on, &e), WT_ELIMIT);
	print_message("gzip bomb (%zu bytes → 1 GiB): WT_ELIMIT at 64 MiB after %.3fs\n", n,
		      now_s() - t0);
	assert_null(out);
	assert_true(now_s() - t0 < 5.0);
	free(bomb);
	/* the construction is a valid gzip stream: a small one inflates fully */
	small = wt_test_gzip_bomb(4, &n);
	assert_int_equal(wt_gunzip(small, n, 4u << 20, &out, &on, &e), 0);
	assert_int_equal(on, 4u << 20);
	assert_true(out[0] == 0 && out[on - 1] == 0);
	free(out);
	free(small);
}

static void test_zstd_bomb(void **state)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	static uint8_t zeros[1 << 20];
	size_t cap = 1 << 20, n = 0, on, i;
	uint8_t *bomb = malloc(cap), *out;
	ZSTD_outBuffer ob = {bomb, cap, 0};
	double t0;
	wt_err e;

	/* 1 GiB of zeros, streamed, without a declared content size */
	for (i = 0; i < 1024; i++) {
		ZSTD_inBuffer ib = {zeros, sizeof(zeros), 0};
		while (ib.pos < ib.size)
			assert_false(ZSTD_isError(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_continue)));
	}
	{
		ZSTD_inBuffer ib = {zeros, 0, 0};
		size_t r;
		do {
			r = ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end);
			assert_false(ZSTD_isError(r));
		} while (r);
	}
	n = ob.pos;
	ZSTD_freeCCtx(cc);
	t0 = now_s();
	assert_int_equal(wt_zstd_decompress(bomb, n, 64u << 20, &out, &on, &e), WT_ELIMIT);
	print_message("zstd bomb (%zu bytes → 1 GiB): WT_ELIMIT at 64 MiB after %.3fs\n", n,
		      now_s() - t0);
	assert_true(now_s() - t0 < 5.0);
	assert_non_null(strstr(e.msg, "limit"));
	free(bomb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_magic),
		cmocka_unit_test(test_gunzip_matches_gzip_tool),
		cmocka_unit_test(test_compress_read_by_tools),
		cmocka_unit_test(test_roundtrip_and_empty),
		cmocka_unit_test(test_multi_member),
		cmocka_unit_test(test_corrupt_and_truncated),
		cmocka_unit_test(test_trailer_size),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_zstd_bomb),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
