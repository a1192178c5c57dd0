/*
 * test_folded.c — the folded (collapsed stack) decoder and encoder.
 *
 * References are independent of our code: every folded file of the corpus
 * (tests/corpus), checked against an awk sum of its counts and an awk count
 * of its distinct stacks. A profile perf records at test time is checked in
 * tests/integration/test_generated.py (unit tests do not run perf).
 * Plus the dialect tolerances, every malformed-input error and the limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flame.h"
#include "folded.h"
#include "rollup.h"

static const char *root_dir(void)
{
	const char *r = getenv("WT_ROOT");

	return r && *r ? r : ".";
}

/* Read a whole file (gunzipped by gzip -dc when it ends in .gz). */
static char *slurp(const char *path, size_t *len)
{
	char cmd[4096];
	FILE *fp;
	char *buf = NULL;
	size_t n = 0, cap = 0, r;
	int gz = strlen(path) > 3 && !strcmp(path + strlen(path) - 3, ".gz");

	if (gz) {
		snprintf(cmd, sizeof(cmd), "gzip -dc '%s'", path);
		fp = popen(cmd, "r");
	} else {
		fp = fopen(path, "rb");
	}
	assert_non_null(fp);
	do {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
	} while (r > 0);
	if (gz)
		assert_int_equal(pclose(fp), 0);
	else
		fclose(fp);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* Run a shell command, return its first output line (static buffer). */
static const char *run1(const char *cmd)
{
	static char line[4096];
	FILE *fp = popen(cmd, "r");

	assert_non_null(fp);
	line[0] = 0;
	if (!fgets(line, sizeof(line), fp))
		line[0] = 0;
	pclose(fp);
	return line;
}

static int decode_str(const char *s, const wt_folded_opts *o, wt_profile **p, wt_err *e)
{
	memset(e, 0, sizeof(*e));
	return wt_folded_decode((const uint8_t *)s, strlen(s), o, p, e);
}

static int64_t total_of(const wt_profile *p)
{
	return wt_profile_total(p, 0);
}

/* Name of the frame at depth i (ROOT FIRST) of sample si's stack. */
static const char *frame_at(const wt_profile *p, size_t si, size_t i, size_t *depth)
{
	static char buf[256];
	const uint32_t *fr = wt_profile_stack(p, p->samples[si].stack, depth);

	if (i >= *depth)
		return NULL;
	return wt_profile_frame_name(p, fr[*depth - 1 - i], buf, sizeof(buf));
}

/* Sum of values of samples whose leaf frame is named `name`. */
static int64_t self_of(const wt_profile *p, const char *name)
{
	int64_t s = 0;
	size_t i, n;

	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);
		char buf[256];

		if (n && !strcmp(wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), name))
			s += wt_profile_values(p, i)[0];
	}
	return s;
}

/* ---- corpus ---------------------------------------------------------------------------- */

static const char *corpus_files[] = {
	"folded/async-profiler__jfrconverter-sample1.collapsed",
	"folded/async-profiler__jfrconverter-sample2.collapsed",
	"folded/austin-python__austin-3.0.0-wall.out",
	"folded/austin-python__austin-3.4.1-multiprocess.austin",
	"folded/cargo-flamegraph__rust-rayon-stacks.folded",
	"folded/flamegraph__perf-iperf-collapsed-addrs.txt",
	"folded/flamegraph__perf-java-collapsed-pid.txt",
	"folded/flamegraph__perf-rust-collapsed-tid.txt",
	"folded/flamegraph__perf-vertx-java-collapsed-all.txt",
	"folded/jfr-parser__async-profiler-cpu-collapsed.txt.gz",
	"gen/c/folded-c-fp.stackcollapse-perf.txt",
	"gen/c/folded-gperftools-cpu.google-pprof-collapsed.txt",
	"gen/perf-gzip/folded-gzip-dwarf.stackcollapse-perf-all.txt",
	"gen/python/austin-1.0.1-python3.7-alt-format.txt",
	"gen/python/austin-1.0.1-python3.7-cpu.txt",
	"gen/python/austin-1.0.1-python3.7-memory.txt",
};

/* awk: "SUM LINES DISTINCT_STACKS MULT" — MULT is 1000 when an Austin header
 * says the counts are wall/cpu microseconds (we store nanoseconds). Empty
 * frames are dropped (documented in docs/formats.md; line 15 of the vertx
 * file really ends in "write0_[j];  3"), so the awk drops them too. */
static const char awk_ref[] =
	"awk '/^# mode: (wall|cpu)/ { m = 1000 } /^#/ { next } /^[ \\t\\r]*$/ { next } "
	"{ c = $NF; gsub(/[][\\r]/, \"\", c); s += c; n++; k = $0; "
	"sub(/[ \\t]+[^ \\t]+[ \\t\\r]*$/, \"\", k); gsub(/;;+/, \";\", k); "
	"sub(/^;/, \"\", k); sub(/;$/, \"\", k); if (!(k in seen)) { seen[k] = 1; d++ } } "
	"END { printf \"%.0f %d %d %d\\n\", s, n, d, m ? m : 1 }'";

static void test_corpus(void **state)
{
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(corpus_files) / sizeof(corpus_files[0]); i++) {
		char path[1024], cmd[2048];
		long long sum = 0, lines = 0, distinct = 0, mult = 0;
		size_t len;
		char *buf;
		wt_profile *p = NULL;
		wt_err e;
		int rc;

		snprintf(path, sizeof(path), "%s/tests/corpus/%s", root_dir(), corpus_files[i]);
		buf = slurp(path, &len);
		snprintf(cmd, sizeof(cmd), "%s '%s' | %s", strstr(path, ".gz") ? "gzip -dc" : "cat",
			 path, awk_ref);
		assert_int_equal(sscanf(run1(cmd), "%lld %lld %lld %lld", &sum, &lines, &distinct, &mult), 4);
		rc = wt_folded_decode((const uint8_t *)buf, len, NULL, &p, &e);
		if (rc)
			fail_msg("%s: %s", corpus_files[i], e.msg);
		if (total_of(p) != sum * mult || (long long)p->nsamples != distinct ||
		    (long long)p->nsamples > lines)
			fail_msg("%s: total %lld (awk %lld x %lld), samples %zu (awk: %lld distinct stacks, %lld lines)",
				 corpus_files[i], (long long)total_of(p), sum, mult, p->nsamples, distinct,
				 lines);
		print_message("%-60s lines %6lld total %lld\n", corpus_files[i], lines, (long long)total_of(p));
		wt_profile_free(p);
		free(buf);
	}
}

/* ---- dialects and tolerance -------------------------------------------------------- */

static void test_tolerant(void **state)
{
	/* CRLF, blank and whitespace-only lines, trailing blanks, tab before
	 * the count, frames with spaces, empty frames, BOM, no final newline */
	const char *in = "\xEF\xBB\xBF"
			 "a;b c;d 3\r\n"
			 "\r\n"
			 "   \t \n"
			 "a;b c;d\t2 \t\r\n"
			 "x;;y; 1\n"
			 ";z 4\n"
			 " 6\n"
			 "k;l [5]";
	wt_profile *p = NULL;
	wt_err e;
	size_t i, n, seen = 0;

	(void)state;
	assert_int_equal(decode_str(in, NULL, &p, &e), 0);
	assert_int_equal(total_of(p), 3 + 2 + 1 + 4 + 6 + 5);
	assert_int_equal(p->nsamples, 5);
	assert_string_equal(wt_profile_str(p, p->types[0].canonical), "cpu");
	assert_string_equal(wt_profile_str(p, p->types[0].unit), "samples");
	for (i = 0; i < p->nsamples; i++) {
		const char *root = frame_at(p, i, 0, &n);
		int64_t v = wt_profile_values(p, i)[0];

		if (root && !strcmp(root, "a")) {
			assert_int_equal(n, 3);
			assert_string_equal(frame_at(p, i, 1, &n), "b c");
			assert_string_equal(frame_at(p, i, 2, &n), "d");
			assert_int_equal(v, 5);
			seen |= 1;
		} else if (root && !strcmp(root, "x")) {
			assert_int_equal(n, 2); /* empty frames dropped */
			assert_string_equal(frame_at(p, i, 1, &n), "y");
			seen |= 2;
		} else if (!root) {
			assert_int_equal(n, 0); /* " 6": empty stack */
			assert_int_equal(v, 6);
			seen |= 4;
		} else if (!strcmp(root, "k")) {
			assert_int_equal(v, 5); /* jfr-parser "[N]" count */
			seen |= 8;
		}
	}
	assert_int_equal(seen, 15);
	wt_profile_free(p);

	/* annotations and pid prefixes are part of the name */
	assert_int_equal(decode_str("java-1234/99;foo_[j];bar_[k] 2\n", NULL, &p, &e), 0);
	assert_string_equal(frame_at(p, 0, 0, &n), "java-1234/99");
	assert_string_equal(frame_at(p, 0, 1, &n), "foo_[j]");
	assert_string_equal(frame_at(p, 0, 2, &n), "bar_[k]");
	wt_profile_free(p);

	/* empty input: a valid empty profile */
	assert_int_equal(decode_str("", NULL, &p, &e), 0);
	assert_int_equal(p->nsamples, 0);
	assert_int_equal(p->ntypes, 1);
	wt_profile_free(p);
}

static void test_austin(void **state)
{
	const char *a3 = "# austin: 3.0.0\n# interval: 10000\n# mode: wall\n\n"
			 "P42;T43;/x/t.py:<module>:37;/x/t.py:work:12 10\n"
			 "P42;T43;/x/t.py:<module>:37;/x/t.py:work:12 5\n"
			 "P42;T44 7\n";
	const char *a1 = "Thread 7f00ab;main (/x/w.py);L983;work (/x/w.py);L12 4\n"
			 "Thread 7f00ab;main (/x/w.py:983);work (/x/w.py:13) 2\n";
	wt_profile *p = NULL;
	wt_err e;
	size_t i, n;
	int found = 0;

	(void)state;
	assert_int_equal(decode_str(a3, NULL, &p, &e), 0);
	assert_string_equal(wt_profile_str(p, p->types[0].canonical), "wall");
	assert_string_equal(wt_profile_str(p, p->types[0].unit), "nanoseconds");
	assert_int_equal(total_of(p), 22000); /* microseconds → ns */
	assert_int_equal(p->nsamples, 2);
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);

		assert_string_equal(wt_profile_label_str(p, p->samples[i].labelset, "pid"), "42");
		if (n == 2) {
			const wt_frame *leaf = &p->frames[fr[0]];
			const wt_function *fn = &p->functions[leaf->function];

			assert_string_equal(wt_profile_str(p, fn->name), "work");
			assert_string_equal(wt_profile_str(p, fn->filename), "/x/t.py");
			assert_int_equal(leaf->line, 12);
			assert_string_equal(wt_profile_label_str(p, p->samples[i].labelset, "thread"), "43");
			assert_int_equal(wt_profile_values(p, i)[0], 15000);
			found++;
		} else {
			assert_int_equal(n, 0);
			assert_string_equal(wt_profile_label_str(p, p->samples[i].labelset, "thread"), "44");
			found++;
		}
	}
	assert_int_equal(found, 2);
	wt_profile_free(p);

	/* an explicit type wins over the Austin header */
	{
		wt_folded_opts o = {NULL, "cpu", "microseconds", 0, 0};

		assert_int_equal(decode_str(a3, &o, &p, &e), 0);
		assert_int_equal(total_of(p), 22);
		wt_profile_free(p);
	}

	assert_int_equal(decode_str(a1, NULL, &p, &e), 0);
	assert_int_equal(p->nsamples, 2);
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);
		const wt_frame *leaf = &p->frames[fr[0]];

		assert_int_equal(n, 2); /* L<line> frames folded into their function */
		assert_string_equal(wt_profile_str(p, p->functions[leaf->function].name), "work");
		assert_string_equal(wt_profile_str(p, p->functions[leaf->function].filename), "/x/w.py");
		assert_int_equal(leaf->line, wt_profile_values(p, i)[0] == 4 ? 12 : 13);
		assert_string_equal(wt_profile_label_str(p, p->samples[i].labelset, "thread"), "7f00ab");
	}
	wt_profile_free(p);
}

static void test_sample_rate_and_time(void **state)
{
	wt_folded_opts o = {NULL, "cpu", "nanoseconds", 100, 1700000000000000000LL};
	wt_profile *p = NULL;
	wt_err e;

	(void)state;
	assert_int_equal(decode_str("a;b 3\na 1\n", &o, &p, &e), 0);
	assert_int_equal(total_of(p), 40000000); /* 4 samples at 100 Hz = 40 ms */
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->time_ns, 1700000000000000000LL);
	wt_profile_free(p);

	o.sample_rate = 99; /* 1e9/99 is not an integer: scaled exactly, rounded */
	assert_int_equal(decode_str("a 3\n", &o, &p, &e), 0);
	assert_int_equal(total_of(p), 30303030);
	wt_profile_free(p);

	/* the rate only applies to nanoseconds */
	o.unit = "samples";
	assert_int_equal(decode_str("a 3\n", &o, &p, &e), 0);
	assert_int_equal(total_of(p), 3);
	wt_profile_free(p);

	/* scaling that overflows is an error, not a wrap */
	o.unit = "nanoseconds";
	o.sample_rate = 1;
	assert_int_equal(decode_str("a 9223372037\n", &o, &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "line 1"));
	assert_null(p);
}

/* ---- malformed ---------------------------------------------------------------------------- */

static void expect_err(const char *in, size_t len, const wt_folded_opts *o, int code,
		       const char *msg_part)
{
	wt_profile *p = (wt_profile *)1;
	wt_err e;

	memset(&e, 0, sizeof(e));
	assert_int_equal(wt_folded_decode((const uint8_t *)in, len, o, &p, &e), code);
	assert_null(p);
	if (!strstr(e.msg, msg_part))
		fail_msg("error \"%s\" does not contain \"%s\"", e.msg, msg_part);
}

#define EXPECT_ERR(s, code, part) expect_err(s, sizeof(s) - 1, NULL, code, part)

static void test_malformed(void **state)
{
	(void)state;
	EXPECT_ERR("a;b 1\n\nc;d\n", WT_EINVAL, "folded: line 3: missing sample count");
	EXPECT_ERR("a;b\n", WT_EINVAL, "folded: line 1: missing sample count");
	EXPECT_ERR("justoneword\n", WT_EINVAL, "line 1: missing sample count");
	EXPECT_ERR("a;b 12abc\n", WT_EINVAL, "line 1");
	EXPECT_ERR("a;b 1.5\n", WT_EINVAL, "line 1");
	EXPECT_ERR("a 1\na;b -5\n", WT_EINVAL, "line 2: negative sample count");
	EXPECT_ERR("a 9223372036854775808\n", WT_EINVAL, "line 1: sample count");
	EXPECT_ERR("a 99999999999999999999999\n", WT_EINVAL, "overflows");
	EXPECT_ERR("a 9223372036854775807\nb 1\n", WT_EINVAL, "line 2: sum of sample counts overflows");
	EXPECT_ERR("a;b 1\nc\0d 2\n", WT_EINVAL, "line 2: NUL byte");
	EXPECT_ERR("# austin: 3\n# mode: wall\nP1;T1;f:g:1 9223372036854776\n", WT_EINVAL, "overflows");
}

static void test_limits(void **state)
{
	wt_limits lim;
	wt_folded_opts o = {&lim, NULL, NULL, 0, 0};
	wt_profile *p = NULL;
	wt_err e;
	char deep[4096] = "";
	size_t i, big = 1 << 20;
	char *huge;

	(void)state;
	wt_limits_default(&lim);
	lim.max_stack_depth = 16;
	for (i = 0; i < 16; i++)
		strcat(deep, i ? ";f" : "f");
	strcat(deep, " 1\n");
	assert_int_equal(decode_str(deep, &o, &p, &e), 0); /* exactly at the limit */
	wt_profile_free(p);
	deep[strlen(deep) - 3] = 0;
	strcat(deep, ";g 1\n");
	expect_err(deep, strlen(deep), &o, WT_ELIMIT, "line 1: stack deeper than max_stack_depth 16");

	/* a 1 MB frame name against max_string_len (64 KiB default) */
	wt_limits_default(&lim);
	huge = malloc(big + 16);
	assert_non_null(huge);
	memset(huge, 'x', big);
	strcpy(huge + big, " 1\n");
	expect_err(huge, strlen(huge), &o, WT_ELIMIT, "max_string_len");
	free(huge);

	/* distinct samples bounded */
	lim.max_samples = 2;
	expect_err("a 1\nb 1\nc 1\n", 12, &o, WT_ELIMIT, "line 3");

	/* the input itself */
	wt_limits_default(&lim);
	lim.max_decompressed = 4;
	expect_err("a 1\nb 1\n", 8, &o, WT_ELIMIT, "max_decompressed");
}

/* ---- encoder -------------------------------------------------------------------------------- */

static void test_encode_roundtrip(void **state)
{
	char path[1024];
	size_t len, i;
	char *buf = NULL;
	wt_profile *p = NULL, *q = NULL;
	wt_buf out = WT_BUF_INIT;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path), "%s/tests/corpus/folded/flamegraph__perf-vertx-java-collapsed-all.txt",
		 root_dir());
	buf = slurp(path, &len);
	assert_int_equal(wt_folded_decode((const uint8_t *)buf, len, NULL, &p, &e), 0);
	assert_int_equal(wt_folded_encode(p, 0, &out, &e), 0);
	assert_int_equal(wt_folded_decode(out.data, out.len, NULL, &q, &e), 0);
	assert_int_equal(total_of(q), total_of(p));
	assert_int_equal(q->nstacks, p->nstacks);
	assert_int_equal(q->nsamples, p->nsamples);
	/* same per-leaf self for every function */
	for (i = 0; i < p->nfunctions; i++) {
		const char *fn = wt_profile_str(p, p->functions[i].name);

		assert_int_equal(self_of(q, fn), self_of(p, fn));
	}
	wt_profile_free(p);
	wt_profile_free(q);
	wt_buf_free(&out);
	free(buf);

	/* merged per stack (labels dropped), root first, empty stack kept */
	assert_int_equal(decode_str("P1;T1;f.py:main:1;f.py:g:2 3\nP1;T2;f.py:main:1;f.py:g:2 4\nP1;T1 5\n",
				    NULL, &p, &e), 0);
	assert_int_equal(p->nsamples, 3);
	assert_int_equal(wt_folded_encode(p, 0, &out, &e), 0);
	wt_buf_putc(&out, 0);
	assert_non_null(strstr((char *)out.data, "main;g 7\n"));
	assert_non_null(strstr((char *)out.data, " 5\n"));
	assert_int_equal(wt_folded_decode(out.data, out.len - 1, NULL, &q, &e), 0);
	assert_int_equal(total_of(q), 12);
	assert_int_equal(q->nsamples, 2);
	wt_profile_free(p);
	wt_profile_free(q);
	wt_buf_free(&out);

	/* a type index out of range is an error */
	assert_int_equal(decode_str("a 1\n", NULL, &p, &e), 0);
	assert_int_equal(wt_folded_encode(p, 3, &out, &e), WT_EINVAL);
	wt_profile_free(p);
	wt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tolerant),
		cmocka_unit_test(test_austin),
		cmocka_unit_test(test_sample_rate_and_time),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_corpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
