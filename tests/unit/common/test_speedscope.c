/*
 * test_speedscope.c — the speedscope JSON decoder (common/speedscope.c)
 * through wt_format_decode.
 *
 * Reference: tests/unit/common/ref_speedscope.py reads the same file with
 * python3's json module and prints each profile's total and each leaf
 * frame's self total (the documented unit/rounding rules); inputs are the
 * corpus files written by py-spy 0.4.1/0.4.2 (sampled, seconds),
 * austin2speedscope (sampled, microseconds, two threads) and pyinstrument
 * (evented O/C, seconds). Plus malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "format.h"
#include "speedscope.h"
#include "textio.h"

static int decode(const void *buf, size_t len, wt_format fmt, wt_profile **p, wt_format *det,
		  wt_err *e)
{
	wt_decode_opts o;

	wt_decode_opts_default(&o);
	memset(e, 0, sizeof(*e));
	return wt_format_decode(buf, len, fmt, &o, p, det, e);
}

/* Total of type t over samples labelled thread=name ("" = unlabelled). */
static int64_t thread_total(const wt_profile *p, size_t t, const char *name)
{
	int64_t s = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++) {
		const char *th = wt_profile_label_str(p, p->samples[i].labelset, "thread");

		if (!strcmp(th ? th : "", name))
			s += wt_profile_values(p, i)[t];
	}
	return s;
}

static int64_t self_of(const wt_profile *p, const char *name)
{
	int64_t s = 0;
	size_t i, n, t;
	char buf[512];

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);

		if (n && !strcmp(wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), name))
			for (t = 0; t < p->ntypes; t++)
				s += wt_profile_values(p, i)[t];
	}
	return s;
}

static void test_corpus(void **state)
{
	static const struct {
		const char *file, *type;
	} files[] = {
		{"speedscope/austin-python__austin2speedscope.json", "cpu"},
		{"speedscope/py-spy-0.4.1__linux-jax.speedscope.json", "cpu"},
		{"speedscope/py-spy-0.4.2__macos-bpe-tokenizer.speedscope.json", "cpu"},
		{"speedscope/pyinstrument__macos-duckdb.speedscope.json", "wall"},
		{"speedscope/pyinstrument__python3.10-sardine.speedscope.json", "wall"},
	};
	char corpus[1024], path[2048], cmd[4096];
	size_t f;
	(void)state;

	wt_test_corpus(corpus, sizeof(corpus));
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char *buf, *ref, *line, *save = NULL;
		size_t len, nprof = 0, nself = 0;
		wt_profile *p = NULL;
		wt_format det;
		wt_err e;
		int st, t;

		snprintf(path, sizeof(path), "%s/%s", corpus, files[f].file);
		buf = wt_test_read_file(path, &len);
		assert_non_null(buf);
		if (decode(buf, len, WT_FMT_AUTO, &p, &det, &e))
			fail_msg("%s: %s", files[f].file, e.msg);
		assert_int_equal(det, WT_FMT_SPEEDSCOPE);
		t = wt_profile_find_type(p, files[f].type);
		assert_true(t >= 0);
		assert_string_equal(wt_profile_str(p, p->types[t].unit), "nanoseconds");
		snprintf(cmd, sizeof(cmd), "python3 '%s/tests/unit/common/ref_speedscope.py' '%s'",
			 wt_test_root(), path);
		ref = wt_test_cmd_output(cmd, &st);
		assert_int_equal(st, 0);
		for (line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char kind[16];
			long long want;
			int idx, off = 0;

			if (sscanf(line, "profile %d\t%15[a-z]\t%lld\t%n", &idx, kind, &want, &off) == 3 && off) {
				int64_t got = thread_total(p, (size_t)t, line + off);

				if (got != want)
					fail_msg("%s: profile %d (%s): python %lld, decoded %lld", files[f].file,
						 idx, line + off, want, (long long)got);
				nprof++;
			} else if (!strncmp(line, "self ", 5)) {
				char *tab = strrchr(line, '\t');

				assert_non_null(tab);
				*tab = 0;
				want = atoll(tab + 1);
				if (self_of(p, line + 5) != want)
					fail_msg("%s: self %s: python %lld, decoded %lld", files[f].file, line + 5,
						 want, (long long)self_of(p, line + 5));
				nself++;
			}
		}
		assert_true(nprof >= 1 && nself >= 1);
		free(ref);
		wt_profile_free(p);
		free(buf);
	}
}

static void test_units(void **state)
{
	static const struct {
		const char *unit, *type, *tunit;
		int64_t total;
	} u[] = {
		{"milliseconds", "cpu", "nanoseconds", 3500000},
		{"bytes", "alloc_space", "bytes", 4},
		{"none", "cpu", "samples", 4},
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
		char json[512];
		wt_profile *p = NULL;
		wt_err e;

		snprintf(json, sizeof(json),
			 "{\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\",\"file\":\"x.py\",\"line\":3}]},"
			 "\"profiles\":[{\"type\":\"sampled\",\"name\":\"t\",\"unit\":\"%s\",\"startValue\":0,"
			 "\"endValue\":4,\"samples\":[[0,1],[0]],\"weights\":[%s]}]}",
			 u[i].unit, i == 0 ? "1.5,2" : "1,3");
		if (wt_speedscope_decode((uint8_t *)json, strlen(json), NULL, 0, &p, &e))
			fail_msg("%s: %s", u[i].unit, e.msg);
		assert_int_equal(p->ntypes, 1);
		assert_string_equal(wt_profile_str(p, p->types[0].type), u[i].type);
		assert_string_equal(wt_profile_str(p, p->types[0].unit), u[i].tunit);
		assert_int_equal(wt_profile_total(p, 0), u[i].total);
		assert_int_equal(self_of(p, "b"), i == 0 ? 1500000 : 1);
		wt_profile_free(p);
	}
}

static void test_malformed(void **state)
{
#define FR "{\"shared\":{\"frames\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"profiles\":["
	static const struct {
		const char *json, *needle;
		int code;
	} bad[] = {
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,1]", "JSON error at line 1", WT_EINVAL},
		{"{\"profiles\":[]}", "shared", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,9]],\"weights\":[1]}]}",
		 "profiles[0].samples[0][1]: frame index 9 out of range (2 frames)", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,-1]],\"weights\":[1]}]}",
		 "frame index -1 out of range", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,\"x\"]],\"weights\":[1]}]}",
		 "samples[0][1]: frame index is not an integer", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[1,2]}]}",
		 "2 weights for 1 samples", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[-1]}]}",
		 "weights[0]", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[1e300]}]}",
		 "weights[0]", WT_EINVAL},
		{FR "{\"type\":\"sampled\",\"unit\":\"parsecs\",\"samples\":[],\"weights\":[]}]}",
		 "unknown unit", WT_EINVAL},
		{FR "{\"type\":\"flat\",\"unit\":\"none\"}]}", "profiles[0].type", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":0},"
		    "{\"type\":\"O\",\"frame\":1,\"at\":1},{\"type\":\"C\",\"frame\":0,\"at\":2}]}]}",
		 "events[2]: close of frame 0 but frame 1 is the innermost", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":0}]}]}",
		 "1 frames still open", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"C\",\"frame\":0,\"at\":0}]}]}",
		 "no frame is open", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":5},"
		    "{\"type\":\"C\",\"frame\":0,\"at\":4}]}]}",
		 "events[1].at", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"X\",\"frame\":0,\"at\":5}]}]}",
		 "events[0].type", WT_EINVAL},
		{FR "{\"type\":\"evented\",\"unit\":\"seconds\",\"events\":[{\"type\":\"O\",\"frame\":2,\"at\":5}]}]}",
		 "events[0].frame: frame index 2 out of range", WT_EINVAL},
		{"{\"shared\":{\"frames\":[{\"name\":7}]},\"profiles\":[]}", "shared.frames[0].name", WT_EINVAL},
	};
	size_t i;
	wt_profile *p = NULL;
	wt_err e;
	wt_limits lim;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = wt_speedscope_decode((const uint8_t *)bad[i].json, strlen(bad[i].json), NULL, 0,
					      &p, &e);

		if (rc != bad[i].code || !strstr(e.msg, bad[i].needle))
			fail_msg("case %zu: rc %d, \"%s\" (want %d, \"%s\")", i, rc, e.msg, bad[i].code,
				 bad[i].needle);
		assert_null(p);
	}
	wt_limits_default(&lim);
	lim.max_body = 16;
	assert_int_equal(wt_speedscope_decode((const uint8_t *)bad[2].json, strlen(bad[2].json), &lim, 0,
					      &p, &e),
			 WT_ELIMIT);
	wt_limits_default(&lim);
	lim.max_stack_depth = 1;
	{
		static const char deep[] = FR "{\"type\":\"sampled\",\"unit\":\"none\","
					      "\"samples\":[[0,1]],\"weights\":[1]}]}";

		assert_int_equal(wt_speedscope_decode((const uint8_t *)deep, strlen(deep), &lim, 0, &p, &e),
				 WT_ELIMIT);
	}
	assert_non_null(strstr(e.msg, "max_stack_depth"));
#undef FR
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
