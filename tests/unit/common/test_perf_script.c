/*
 * test_perf_script.c — the `perf script` decoder (common/perf_script.c),
 * through wt_format_decode as the daemons use it.
 *
 * References are independent of our code: every perf script file of the
 * corpus (tests/corpus), its record count, per-event record count and sum
 * of periods counted by awk over the text. A recording made at test time
 * and checked against `perf report` is in tests/integration/test_generated.py
 * (unit tests do not run perf).
 * Plus naming rules ([unknown] frames, kernel, inlined, srcline), times,
 * the format=folded redirect, and malformed input.
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
#include "perf_script.h"
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

static int decode_str(const char *s, wt_profile **p, wt_err *e)
{
	return decode(s, strlen(s), WT_FMT_PERF, 0, p, NULL, e);
}

static int type_idx(const wt_profile *p, const char *name, const char *unit)
{
	size_t i;

	for (i = 0; i < p->ntypes; i++)
		if (!strcmp(wt_profile_str(p, p->types[i].type), name) &&
		    (!unit || !strcmp(wt_profile_str(p, p->types[i].unit), unit)))
			return (int)i;
	return -1;
}

static int has_function(const wt_profile *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nfunctions; i++)
		if (!strcmp(wt_profile_str(p, p->functions[i].name), name))
			return 1;
	return 0;
}

static long long awk_num(const char *cmd)
{
	int st;
	char *o = wt_test_cmd_output(cmd, &st);
	long long v;

	assert_int_equal(st, 0);
	v = atoll(o);
	free(o);
	return v;
}

/* ---- the corpus --------------------------------------------------------------------- */

static const char *corpus_files[] = {
	"perf-script/flamegraph__example-perf-stacks.txt.gz",
	"perf-script/flamegraph__perf-cycles-instructions-01.txt",
	"perf-script/flamegraph__perf-iperf-pidtid-01.txt",
	"perf-script/flamegraph__perf-js-stacks-01.txt",
	"perf-script/flamegraph__perf-numa-stacks-01.txt",
	"perf-script/speedscope__forks.perf.txt",
	"perf-script/speedscope__rust-v0-mangled-aarch64.perf.txt",
	"perf-script/speedscope__simple-with-header.perf.txt",
	"gen/c/perf-script-c-fp-header.txt",
	"gen/c/perf-script-c-fp-srcline.txt.gz",
	"gen/perf-gzip/perf-script-dwarf.txt.gz",
	"gen/perf-gzip/perf-script-fp.txt",
	"gen/perf-node/perf-script-node20-perf-basic-prof.txt.gz",
};

static void test_corpus_counts(void **state)
{
	char corpus[1024], path[2048], cmd[4096];
	size_t f;
	(void)state;

	wt_test_corpus(corpus, sizeof(corpus));
	for (f = 0; f < sizeof(corpus_files) / sizeof(corpus_files[0]); f++) {
		const char *cat = strstr(corpus_files[f], ".gz") ? "gzip -dc" : "cat";
		char *buf;
		size_t len;
		long long records, periods, with_period;
		wt_profile *p = NULL;
		wt_format det;
		wt_err e;
		int ts, tc;

		snprintf(path, sizeof(path), "%s/%s", corpus, corpus_files[f]);
		buf = wt_test_read_file(path, &len);
		assert_non_null(buf);
		if (decode(buf, len, WT_FMT_AUTO, 0, &p, &det, &e))
			fail_msg("%s: %s", corpus_files[f], e.msg);
		if (det != WT_FMT_PERF)
			fail_msg("%s: detected as %s", corpus_files[f], wt_format_name(det));
		/* records; a last one that no blank line ends is cut short and
		 * dropped (docs/formats.md), as stackcollapse-perf.pl drops it */
		snprintf(cmd, sizeof(cmd),
			 "%s '%s' | awk '/^[^#[:space:]]/ { n++; open = 1 } /^$/ { if (open) c++; open = 0 }"
			 " END { print (c && open) ? n - 1 : n + 0 }'",
			 cat, path);
		records = awk_num(cmd);
		/* period = the all-digits field between "time:" and the trailing "event:" */
		snprintf(cmd, sizeof(cmd),
			 "%s '%s' | awk '/^[^#[:space:]]/ && $NF ~ /:$/ && $(NF-1) ~ /^[0-9]+$/ && $(NF-2) ~ /^[0-9.]+:$/ && $NF ~ /^(cpu|task)-clock/"
			 " { s += $(NF-1); k++ } END { printf \"%%.0f %%d\\n\", s, k }'",
			 cat, path);
		{
			char *o = wt_test_cmd_output(cmd, NULL);

			assert_int_equal(sscanf(o, "%lld %lld", &periods, &with_period), 2);
			free(o);
		}
		ts = type_idx(p, "samples", "count");
		if (ts < 0)
			ts = type_idx(p, "cpu", "samples");
		assert_true(ts >= 0);
		if (wt_profile_total(p, (size_t)ts) != records)
			fail_msg("%s: %lld records by awk, decoded %lld", corpus_files[f], records,
				 (long long)wt_profile_total(p, (size_t)ts));
		tc = type_idx(p, "cpu", "nanoseconds");
		if (with_period == records) {
			assert_true(tc >= 0);
			if (wt_profile_total(p, (size_t)tc) != periods)
				fail_msg("%s: periods %lld by awk, decoded %lld", corpus_files[f], periods,
					 (long long)wt_profile_total(p, (size_t)tc));
		}
		wt_profile_free(p);
		free(buf);
	}
}

/* Two events without periods: one type per event, plus the total. */
static void test_corpus_two_events(void **state)
{
	char corpus[1024], path[2048], cmd[4096];
	const char *ev[] = {"cycles", "instructions"};
	wt_profile *p = NULL;
	wt_err e;
	size_t len, i;
	char *buf;
	(void)state;

	snprintf(path, sizeof(path), "%s/perf-script/flamegraph__perf-cycles-instructions-01.txt",
		 wt_test_corpus(corpus, sizeof(corpus)));
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	assert_int_equal(decode(buf, len, WT_FMT_PERF, 0, &p, NULL, &e), 0);
	for (i = 0; i < 2; i++) {
		int t = type_idx(p, ev[i], "samples");

		assert_true(t >= 0);
		snprintf(cmd, sizeof(cmd), "awk '/^[^#[:space:]]/ && $NF == \"%s:\" { n++ } END { print n + 0 }' '%s'",
			 ev[i], path);
		assert_int_equal(wt_profile_total(p, (size_t)t), awk_num(cmd));
	}
	assert_int_equal(p->ntypes, 3);
	wt_profile_free(p);
	free(buf);
}

/* Naming: [unknown] symbols, kernel frames, inlined frames, srcline. */
static void test_naming(void **state)
{
	char corpus[1024], path[2048];
	wt_profile *p = NULL;
	wt_err e;
	size_t len, i;
	char *buf;
	int found_line = 0;
	(void)state;

	wt_test_corpus(corpus, sizeof(corpus));
	snprintf(path, sizeof(path), "%s/perf-script/speedscope__forks.perf.txt", corpus);
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	assert_int_equal(decode(buf, len, WT_FMT_PERF, 0, &p, NULL, &e), 0);
	assert_true(has_function(p, "[unknown]"));          /* [unknown] ([unknown]) */
	assert_true(has_function(p, "[[kernel.kallsyms]]"));  /* [unknown] ([kernel.kallsyms]) */
	assert_false(has_function(p, "[kernel.kallsyms]"));
	assert_true(has_function(p, "_Z5gammav"));
	/* comm and pid became labels */
	assert_non_null(wt_profile_label_str(p, p->samples[0].labelset, "thread"));
	assert_non_null(wt_profile_label_str(p, p->samples[0].labelset, "pid"));
	wt_profile_free(p);
	free(buf);

	snprintf(path, sizeof(path), "%s/gen/perf-gzip/perf-script-dwarf.txt.gz", corpus);
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	assert_int_equal(decode(buf, len, WT_FMT_PERF, 0, &p, NULL, &e), 0);
	assert_true(has_function(p, "_dl_start_final")); /* an (inlined) frame */
	assert_true(has_function(p, "_dl_start"));
	assert_false(has_function(p, "_dl_start+0x55b"));
	wt_profile_free(p);
	free(buf);

	snprintf(path, sizeof(path), "%s/gen/c/perf-script-c-fp-srcline.txt.gz", corpus);
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	assert_int_equal(decode(buf, len, WT_FMT_PERF, 0, &p, NULL, &e), 0);
	for (i = 0; i < p->nframes; i++) {
		const wt_frame *fr = &p->frames[i];

		if (fr->function != WT_NO_FUNCTION &&
		    !strcmp(wt_profile_str(p, p->functions[fr->function].name), "_dl_start") &&
		    !strcmp(wt_profile_str(p, p->functions[fr->function].filename), "rtld.c") &&
		    fr->line == 566)
			found_line = 1;
	}
	assert_true(found_line); /* "  rtld.c:566" after the _dl_start frame */
	wt_profile_free(p);
	free(buf);
}

/* Header variants, one record each. */
static void test_header_variants(void **state)
{
	static const struct {
		const char *text, *thread, *pid;
		int64_t value;
	} v[] = {
		{"my comm 12/34 [001] 5.000001: 250 cycles:u:\n\t 1 f (/x)\n", "my comm", "12", 250},
		{"kworker/0:1 7 cpu-clock:\n\t ffff g ([kernel.kallsyms])\n", "kworker/0:1", "7", 1},
		{"a 1 2.5: 1000 task-clock:ppp: 400123 main+0x1 (/bin/a)\n", "a", "1", 1000},
		{"x 1 [000] 1.0: sched:sched_switch: prev_comm=x prev_pid=1\n\t 1 schedule (k)\n", "x", "1", 1},
		{"Thread 2 1234/1235 [000] 1.0: 7 cycles:\n\t 1 f (/x)\n", "Thread 2", "1234", 7},
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		wt_profile *p = NULL;
		wt_err e;
		size_t n;
		char buf[64];

		if (decode_str(v[i].text, &p, &e))
			fail_msg("variant %zu: %s", i, e.msg);
		assert_int_equal(p->nsamples, 1);
		assert_string_equal(wt_profile_label_str(p, p->samples[0].labelset, "thread"), v[i].thread);
		assert_string_equal(wt_profile_label_str(p, p->samples[0].labelset, "pid"), v[i].pid);
		assert_int_equal(wt_profile_values(p, 0)[0], v[i].value);
		wt_profile_stack(p, p->samples[0].stack, &n);
		assert_int_equal(n, 1);
		(void)buf;
		wt_profile_free(p);
	}
}

/* Malformed input: errors name the line, nothing crashes. */
static void test_malformed(void **state)
{
	static const struct {
		const char *text, *needle;
		int code;
	} bad[] = {
		{"\t 1 f (/x)\n", "line 1", WT_EINVAL},
		{"comm 1 [000] 1.0 no event here\n\t 1 f (/x)\n", "line 1", WT_EINVAL},
		{"c 1 1.0: 99999999999999999999 cycles:\n\t 1 f (/x)\n", "period", WT_EINVAL},
		{"", "no sample header", WT_EINVAL},
		{"# only a comment\n", "no sample header", WT_EINVAL},
		{"c 1 1.0: cycles:\n\t 1 f (/x)\n\nd 2 2.0 bad\n", "line 4", WT_EINVAL},
	};
	size_t i;
	wt_profile *p = NULL;
	wt_err e;
	wt_limits lim;
	char *deep;
	size_t n, k;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = decode_str(bad[i].text, &p, &e);

		if (rc != bad[i].code || !strstr(e.msg, bad[i].needle))
			fail_msg("case %zu: rc %d, message \"%s\" (want %d, \"%s\")", i, rc, e.msg,
				 bad[i].code, bad[i].needle);
		assert_null(p);
	}
	/* NUL byte */
	assert_int_equal(wt_perf_script_decode((const uint8_t *)"c 1 x:\n\t1 f\0", 13, NULL, 0, &p, &e),
			 WT_EINVAL);
	assert_non_null(strstr(e.msg, "NUL"));
	/* stack deeper than the limit */
	wt_limits_default(&lim);
	lim.max_stack_depth = 8;
	deep = malloc(4096);
	n = (size_t)sprintf(deep, "c 1 1.0: cycles:\n");
	for (k = 0; k < 20; k++)
		n += (size_t)sprintf(deep + n, "\t %zx f%zu (/x)\n", k + 1, k);
	assert_int_equal(wt_perf_script_decode((uint8_t *)deep, n, &lim, 0, &p, &e), WT_ELIMIT);
	assert_non_null(strstr(e.msg, "max_stack_depth"));
	/* too many events for max_types */
	lim.max_types = 3;
	n = 0;
	for (k = 0; k < 5; k++)
		n += (size_t)sprintf(deep + n, "c 1 1.0: ev%zu:\n\t 1 f (/x)\n\n", k);
	assert_int_equal(wt_perf_script_decode((uint8_t *)deep, n, &lim, 0, &p, &e), WT_ELIMIT);
	assert_non_null(strstr(e.msg, "line"));
	/* absurd size: refused before any parsing */
	wt_limits_default(&lim);
	lim.max_decompressed = 8;
	assert_int_equal(wt_perf_script_decode((const uint8_t *)"c 1 e:\n\t 1 f (/x)\n", 17, &lim, 0, &p, &e),
			 WT_ELIMIT);
	assert_non_null(strstr(e.msg, "max_decompressed"));
	/* symbol longer than max_string_len */
	wt_limits_default(&lim);
	lim.max_string_len = 16;
	assert_int_equal(wt_perf_script_decode((const uint8_t *)"c 1 e:\n\t 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaa (/x)\n",
					       45, &lim, 0, &p, &e),
			 WT_ELIMIT);
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_counts),
		cmocka_unit_test(test_corpus_two_events),
		cmocka_unit_test(test_naming),
		cmocka_unit_test(test_header_variants),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
