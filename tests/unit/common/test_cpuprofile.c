/*
 * test_cpuprofile.c — the V8 .cpuprofile decoder (common/cpuprofile.c)
 * through wt_format_decode, and `wtctl profile convert-cpuprofile`.
 *
 * References are independent of our code: tests/unit/common/ref_cpuprofile.py
 * reads the same file with python3's json module and prints the sample
 * count, the cpu total and per-leaf-function self counts (the documented
 * rules, re-implemented in a dozen lines). Inputs: every .cpuprofile of
 * the corpus (Chrome 65, Node 10 old layout, Node 20 main and worker
 * threads). A profile `node --cpu-prof` writes at test time is checked in
 * tests/integration/test_generated.py (unit tests do not run node).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cpuprofile.h"
#include "format.h"
#include "textio.h"

#define BASE_NS 1700000000000000000LL

static int decode(const void *buf, size_t len, wt_format fmt, int64_t base, wt_profile **p,
		  wt_format *det, wt_err *e)
{
	wt_decode_opts o;

	wt_decode_opts_default(&o);
	o.time_ns = base;
	memset(e, 0, sizeof(*e));
	return wt_format_decode(buf, len, fmt, &o, p, det, e);
}

static int64_t self_of(const wt_profile *p, int t, const char *name)
{
	int64_t s = 0;
	size_t i, n;
	char buf[512];

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);

		if (n && !strcmp(wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), name))
			s += wt_profile_values(p, i)[t];
	}
	return s;
}

/* Decode `path` and compare with the python reference. Returns the number
 * of functions compared. */
static size_t check_file(const char *path, int64_t base)
{
	char cmd[4096], *ref, *line, *save = NULL;
	char *buf;
	size_t len, nfn = 0;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	int st, tc, ts;
	long long want_samples = -1, want_cpu = -1;

	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	if (decode(buf, len, WT_FMT_AUTO, base, &p, &det, &e))
		fail_msg("%s: %s", path, e.msg);
	if (det != WT_FMT_CPUPROFILE)
		fail_msg("%s: detected as %s", path, wt_format_name(det));
	tc = wt_profile_find_type(p, "cpu");
	ts = wt_profile_find_type(p, "samples");
	assert_true(tc >= 0 && ts >= 0);
	assert_string_equal(wt_profile_str(p, p->types[tc].unit), "nanoseconds");

	snprintf(cmd, sizeof(cmd), "python3 '%s/tests/unit/common/ref_cpuprofile.py' '%s'",
		 wt_test_root(), path);
	ref = wt_test_cmd_output(cmd, &st);
	assert_int_equal(st, 0);
	for (line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long long a, b;

		if (sscanf(line, "samples %lld", &a) == 1) {
			want_samples = a;
		} else if (sscanf(line, "cpu %lld", &a) == 1) {
			want_cpu = a;
		} else if (!strncmp(line, "self ", 5)) {
			char *name = line + 5, *tab = strrchr(name, '\t'), *tab1;

			assert_non_null(tab);
			b = atoll(tab + 1);
			*tab = 0;
			tab1 = strrchr(name, '\t');
			assert_non_null(tab1);
			a = atoll(tab1 + 1);
			*tab1 = 0;
			if (self_of(p, ts, name) != a || self_of(p, tc, name) != b)
				fail_msg("%s: %s: reference %lld samples / %lld ns, decoded %lld / %lld", path,
					 name, a, b, (long long)self_of(p, ts, name),
					 (long long)self_of(p, tc, name));
			nfn++;
		}
	}
	free(ref);
	assert_true(want_samples >= 0);
	if (wt_profile_total(p, (size_t)ts) != want_samples || wt_profile_total(p, (size_t)tc) != want_cpu)
		fail_msg("%s: reference %lld samples / %lld ns, decoded %lld / %lld", path, want_samples,
			 want_cpu, (long long)wt_profile_total(p, (size_t)ts),
			 (long long)wt_profile_total(p, (size_t)tc));
	if (base) { /* sample times are relative to startTime, placed at the base */
		for (size_t i = 0; i < p->nsamples; i++)
			assert_true(p->samples[i].time_ns >= base &&
				    p->samples[i].time_ns <= base + p->duration_ns);
	}
	wt_profile_free(p);
	free(buf);
	return nfn;
}

static void test_corpus(void **state)
{
	static const char *files[] = {
		"cpuprofile/speedscope__chrome65-simple.cpuprofile",
		"cpuprofile/speedscope__chrome65-sucrase.cpuprofile",
		"cpuprofile/speedscope__node10-example.cpuprofile",
		"gen/node/node20-cpu.cpuprofile",
		"gen/node/node20-cpu-mainthread-interval250us.cpuprofile",
		"gen/node/node20-cpu-workerthread-interval250us.cpuprofile",
	};
	char corpus[1024], path[2048];
	size_t i;
	(void)state;

	wt_test_corpus(corpus, sizeof(corpus));
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", corpus, files[i]);
		assert_true(check_file(path, i & 1 ? BASE_NS : 0) >= 1);
	}
}

/* A .heapprofile or a Chrome trace is not a .cpuprofile. */
static void test_not_cpuprofile(void **state)
{
	char corpus[1024], path[2048];
	char *buf;
	size_t len;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path), "%s/gen/node/node20-heap.heapprofile",
		 wt_test_corpus(corpus, sizeof(corpus)));
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	assert_int_equal(wt_format_detect((uint8_t *)buf, len), WT_FMT_AUTO);
	assert_int_not_equal(decode(buf, len, WT_FMT_AUTO, 0, &p, &det, &e), 0);
	assert_null(p);
	free(buf);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *json, *needle;
		int code;
	} bad[] = {
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\"", "JSON error at line 1", WT_EINVAL},
		{"[1,2]", "top-level", WT_EINVAL},
		{"{\"nodes\":5,\"samples\":[]}", "\"nodes\" is not an array", WT_EINVAL},
		{"{\"nodes\":[{\"id\":\"x\"}],\"samples\":[]}", "nodes[0].id", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"},\"children\":[7]}],\"samples\":[]}",
		 "nodes[0].children[0]: unknown node id 7", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"}}],\"samples\":[2],\"timeDeltas\":[1]}",
		 "samples[0]: unknown node id 2", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":5}}],\"samples\":[1],\"timeDeltas\":[1]}",
		 "nodes[0].callFrame.functionName", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"}}],\"samples\":[1],\"timeDeltas\":[1,2]}",
		 "timeDeltas", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"}}],\"samples\":[1],\"timeDeltas\":[\"1\"]}",
		 "timeDeltas[0]", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"},\"children\":[2]},"
		 "{\"id\":2,\"callFrame\":{\"functionName\":\"b\"},\"children\":[1]}],\"samples\":[2],\"timeDeltas\":[1]}",
		 "cycle", WT_EINVAL},
		{"{\"nodes\":[{\"id\":1,\"callFrame\":{\"functionName\":\"a\"}},{\"id\":1,\"callFrame\":{\"functionName\":\"b\"}}],"
		 "\"samples\":[],\"timeDeltas\":[]}",
		 "duplicate node id 1", WT_EINVAL},
		{"{\"head\":{\"id\":1,\"functionName\":\"(root)\",\"children\":[7]},\"samples\":[]}",
		 "node 1.children[0]: not an object", WT_EINVAL},
	};
	size_t i;
	wt_profile *p = NULL;
	wt_err e;
	wt_limits lim;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = wt_cpuprofile_decode((const uint8_t *)bad[i].json, strlen(bad[i].json), NULL, 0,
					      &p, &e);

		if (rc != bad[i].code || !strstr(e.msg, bad[i].needle))
			fail_msg("case %zu: rc %d, \"%s\" (want %d, \"%s\")", i, rc, e.msg, bad[i].code,
				 bad[i].needle);
		assert_null(p);
	}
	/* absurd size: refused before parsing */
	wt_limits_default(&lim);
	lim.max_body = 10;
	assert_int_equal(wt_cpuprofile_decode((const uint8_t *)"{\"nodes\":[],\"samples\":[]}", 26, &lim, 0,
					      &p, &e),
			 WT_ELIMIT);
	assert_non_null(strstr(e.msg, "max_body"));
	/* a chain deeper than max_stack_depth */
	{
		char *j = malloc(1 << 16);
		size_t n = 0, k;

		lim.max_body = 1 << 20;
		lim.max_stack_depth = 4;
		n += (size_t)sprintf(j + n, "{\"nodes\":[");
		for (k = 1; k <= 10; k++) {
			n += (size_t)sprintf(j + n, "%s{\"id\":%zu,\"callFrame\":{\"functionName\":\"f%zu\"}",
					     k > 1 ? "," : "", k, k);
			if (k < 10)
				n += (size_t)sprintf(j + n, ",\"children\":[%zu]", k + 1);
			n += (size_t)sprintf(j + n, "}");
		}
		n += (size_t)sprintf(j + n, "],\"samples\":[10],\"timeDeltas\":[5]}");
		assert_int_equal(wt_cpuprofile_decode((uint8_t *)j, n, &lim, 0, &p, &e), WT_ELIMIT);
		assert_non_null(strstr(e.msg, "max_stack_depth"));
		free(j);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_not_cpuprofile),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
