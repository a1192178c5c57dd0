/*
 * test_format_head.c — the first-KiB sniffing of compressed bodies:
 * wt_decompress_head (common/compress.c) and the refusal in
 * wt_format_decode (common/format.c) of a body whose first decompressed
 * bytes cannot start the asked format, before it is inflated.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "compress.h"
#include "format.h"
#include "profile.h"

static void head(void **state)
{
	static const char text[] = "main;work 10\nmain;idle 5\n";
	uint8_t *gz = NULL, *z = NULL, out[8];
	size_t gzn, zn, n;
	wt_err e = {0};

	assert_int_equal(wt_gzip((const uint8_t *)text, sizeof(text) - 1, 6, &gz, &gzn, &e), 0);
	assert_int_equal(wt_zstd_compress((const uint8_t *)text, sizeof(text) - 1, 3, &z, &zn, &e), 0);
	assert_int_equal(wt_decompress_head(gz, gzn, out, sizeof(out), &n, &e), 0);
	assert_int_equal(n, sizeof(out));
	assert_memory_equal(out, text, sizeof(out));
	assert_int_equal(wt_decompress_head(z, zn, out, sizeof(out), &n, &e), 0);
	assert_memory_equal(out, text, sizeof(out));
	/* shorter than cap; plain input is copied */
	assert_int_equal(wt_decompress_head((const uint8_t *)"ab", 2, out, sizeof(out), &n, &e), 0);
	assert_int_equal(n, 2);
	free(gz);
	free(z);
}

static void bomb_refused_before_inflating(void **state)
{
	size_t big = 64u << 20; /* 64 MiB of zeros */
	uint8_t *zeros = calloc(1, big), *gz = NULL;
	size_t gzn;
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_err e = {0};

	assert_non_null(zeros);
	assert_int_equal(wt_gzip(zeros, big, 9, &gz, &gzn, &e), 0);
	free(zeros);
	wt_decode_opts_default(&o);
	o.lim.max_decompressed = big * 2;
	assert_int_equal(wt_format_decode(gz, gzn, WT_FMT_AUTO, &o, &p, NULL, &e), WT_EFORMAT);
	assert_non_null(strstr(e.msg, "after decompression"));
	assert_int_equal(wt_format_decode(gz, gzn, WT_FMT_FOLDED, &o, &p, NULL, &e), WT_EFORMAT);
	assert_int_equal(wt_format_decode(gz, gzn, WT_FMT_PPROF, &o, &p, NULL, &e), WT_EFORMAT);
	assert_null(p);
	free(gz);
}

static void good_bodies_pass(void **state)
{
	static const char text[] = "main;work 10\nmain;idle 5\n";
	uint8_t *gz = NULL;
	size_t gzn;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e = {0};

	assert_int_equal(wt_gzip((const uint8_t *)text, sizeof(text) - 1, 6, &gz, &gzn, &e), 0);
	assert_int_equal(wt_format_decode(gz, gzn, WT_FMT_AUTO, NULL, &p, &det, &e), 0);
	assert_int_equal(det, WT_FMT_FOLDED);
	wt_profile_free(p);
	free(gz);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(head), cmocka_unit_test(bomb_refused_before_inflating),
					   cmocka_unit_test(good_bodies_pass)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
