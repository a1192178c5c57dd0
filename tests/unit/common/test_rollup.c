/*
 * test_rollup.c — per-minute function rollups: recursion counted once per
 * stack, minute bucketing (sample time, profile time, fallback), several
 * sample types, row order, and on a real corpus file per-function totals
 * against an awk count over the folded text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "folded.h"
#include "rollup.h"

#define MIN_NS 60000000000LL

static uint32_t frame_named(wt_profile *p, const char *name, int64_t line)
{
	uint32_t fn, fr;
	wt_frame f = {0, WT_NO_MAPPING, 0, 0};

	assert_int_equal(wt_profile_add_function_named(p, name, strlen(name), NULL, &fn, NULL), 0);
	f.function = fn;
	f.line = line;
	assert_int_equal(wt_profile_add_frame(p, &f, &fr, NULL), 0);
	return fr;
}

/* Add a sample for a stack given ROOT FIRST as "a;b;c". */
static void add(wt_profile *p, const char *stack, int64_t t, const int64_t *v)
{
	uint32_t ids[64], st;
	size_t n = 0;
	char tmp[8192], *save = NULL, *tok;

	snprintf(tmp, sizeof(tmp), "%s", stack);
	for (tok = strtok_r(tmp, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		ids[n++] = frame_named(p, tok, 0);
	for (size_t i = 0; i < n / 2; i++) {
		uint32_t x = ids[i];
		ids[i] = ids[n - 1 - i];
		ids[n - 1 - i] = x;
	}
	assert_int_equal(wt_profile_add_stack(p, ids, n, &st, NULL), 0);
	assert_int_equal(wt_profile_add_sample(p, st, 0, t, v, NULL), 0);
}

static const wt_rollup_row *find(const wt_rollup *r, const char *type, int64_t minute, const char *fn)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->rows[i].type, type) && r->rows[i].minute == minute &&
		    !strcmp(r->rows[i].function, fn))
			return &r->rows[i];
	return NULL;
}

static void expect(const wt_rollup *r, const char *type, int64_t minute, const char *fn,
		   int64_t self, int64_t total)
{
	const wt_rollup_row *row = find(r, type, minute, fn);

	if (!row)
		fail_msg("no row (%s, %lld, %s)", type, (long long)minute, fn);
	if (row->self != self || row->total != total)
		fail_msg("(%s, %lld, %s): self %lld total %lld, want %lld %lld", type, (long long)minute,
			 fn, (long long)row->self, (long long)row->total, (long long)self, (long long)total);
}

static void test_recursion_and_minutes(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	size_t ti;
	int64_t t0 = 1700000000LL * 1000000000LL, m0 = t0 / MIN_NS, v;
	wt_rollup r;
	wt_err e;
	(void)state;

	assert_int_equal(wt_profile_add_type(p, "cpu", "samples", NULL, &ti, NULL), 0);
	v = 10; add(p, "a;b;a;b", t0, &v);           /* recursive: a and b once each */
	v = 5; add(p, "a;c", t0 + 1000, &v);
	v = 7; add(p, "a;b", t0 + MIN_NS, &v);        /* next minute */
	v = 2; add(p, "a;b;b;b", t0 + MIN_NS + 1, &v); /* direct recursion */
	assert_int_equal(wt_rollup_build(p, 0, &r, &e), 0);
	assert_int_equal(r.n, 5);
	expect(&r, "cpu", m0, "a", 0, 15);
	expect(&r, "cpu", m0, "b", 10, 10);
	expect(&r, "cpu", m0, "c", 5, 5);
	expect(&r, "cpu", m0 + 1, "a", 0, 9);
	expect(&r, "cpu", m0 + 1, "b", 9, 9);
	/* sorted by (type, minute, function) */
	assert_string_equal(r.rows[0].function, "a");
	assert_string_equal(r.rows[2].function, "c");
	assert_int_equal(r.rows[3].minute, m0 + 1);
	assert_string_equal(r.rows[0].unit, "samples");
	/* self sums equal the profile total */
	{
		int64_t s = 0;
		for (size_t i = 0; i < r.n; i++)
			s += r.rows[i].self;
		assert_int_equal(s, wt_profile_total(p, 0));
	}
	wt_rollup_free(&r);
	wt_profile_free(p);
}

static void test_time_fallbacks(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	size_t ti;
	int64_t v = 3;
	wt_rollup r;
	wt_err e;
	(void)state;

	assert_int_equal(wt_profile_add_type(p, "cpu", "samples", NULL, &ti, NULL), 0);
	add(p, "main;f", 0, &v);
	/* no sample time, no profile time → fallback */
	assert_int_equal(wt_rollup_build(p, 125 * MIN_NS + 7, &r, &e), 0);
	expect(&r, "cpu", 125, "f", 3, 3);
	wt_rollup_free(&r);
	/* profile time wins over fallback */
	p->time_ns = 300 * MIN_NS;
	assert_int_equal(wt_rollup_build(p, 125 * MIN_NS, &r, &e), 0);
	expect(&r, "cpu", 300, "main", 0, 3);
	assert_null(find(&r, "cpu", 125, "f"));
	wt_rollup_free(&r);
	wt_profile_free(p);

	/* a timed sample first, then an untimed one: two minutes, the
	 * untimed one in the profile's */
	p = wt_profile_new(NULL);
	assert_int_equal(wt_profile_add_type(p, "cpu", "samples", NULL, &ti, NULL), 0);
	p->time_ns = 300 * MIN_NS;
	add(p, "main;g", 100 * MIN_NS + 5, &v);
	add(p, "main;f", 0, &v);
	assert_int_equal(wt_rollup_build(p, 125 * MIN_NS, &r, &e), 0);
	expect(&r, "cpu", 100, "g", 3, 3);
	expect(&r, "cpu", 300, "f", 3, 3);
	assert_null(find(&r, "cpu", 100, "f"));
	wt_rollup_free(&r);
	wt_profile_free(p);

	/* empty profile: no rows, no error */
	p = wt_profile_new(NULL);
	assert_int_equal(wt_rollup_build(p, 0, &r, &e), 0);
	assert_int_equal(r.n, 0);
	wt_rollup_free(&r);
	wt_profile_free(p);
}

static void test_types_and_names(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	size_t t1, t2;
	int64_t v[2] = {4, 4096};
	uint32_t ids[2], st;
	wt_rollup r;
	wt_err e;
	(void)state;

	assert_int_equal(wt_profile_add_type(p, "alloc_space", "bytes", NULL, &t1, NULL), 0);
	assert_int_equal(wt_profile_add_type(p, "alloc_objects", "count", NULL, &t2, NULL), 0);
	add(p, "main;alloc", 60 * MIN_NS, v);
	/* the same function at two lines is one rollup function */
	ids[0] = frame_named(p, "alloc", 10);
	ids[1] = frame_named(p, "main", 99);
	assert_int_equal(wt_profile_add_stack(p, ids, 2, &st, NULL), 0);
	assert_int_equal(wt_profile_add_sample(p, st, 0, 60 * MIN_NS, v, NULL), 0);
	v[0] = 0; v[1] = 0; /* all-zero sample adds no rows */
	add(p, "main;zero", 60 * MIN_NS, v);
	assert_int_equal(wt_rollup_build(p, 0, &r, &e), 0);
	assert_int_equal(r.n, 4);
	/* "alloc_objects" sorts before "alloc_space" */
	assert_string_equal(r.rows[0].type, "alloc_objects");
	assert_string_equal(r.rows[0].unit, "count");
	expect(&r, "alloc_objects", 60, "alloc", 8192, 8192);
	expect(&r, "alloc_space", 60, "alloc", 8, 8);
	expect(&r, "alloc_space", 60, "main", 0, 8);
	assert_null(find(&r, "alloc_space", 60, "zero"));
	wt_rollup_free(&r);
	wt_profile_free(p);
}

/* Real file with deep recursion (msort_with_tmp): total per function must
 * equal the awk sum of counts over lines that contain the function at least
 * once; self must equal the awk sum over lines whose last frame it is. */
static void test_corpus_against_awk(void **state)
{
	const char *root = getenv("WT_ROOT") ? getenv("WT_ROOT") : ".";
	const char *fns[] = {"msort_with_tmp", "main", "_start", "__libc_start_main_impl",
			     "sort_strings", "_int_free"};
	char path[1024], cmd[4096], line[256];
	FILE *fp;
	char *buf;
	size_t len, i;
	wt_profile *p = NULL;
	wt_rollup r;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path),
		 "%s/tests/corpus/gen/c/folded-gperftools-cpu.google-pprof-collapsed.txt", root);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	len = (size_t)ftell(fp);
	rewind(fp);
	buf = malloc(len);
	assert_int_equal(fread(buf, 1, len, fp), len);
	fclose(fp);
	assert_int_equal(wt_folded_decode((const uint8_t *)buf, len, NULL, &p, &e), 0);
	assert_int_equal(wt_rollup_build(p, 0, &r, &e), 0);
	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		long long self = -1, total = -1;
		const wt_rollup_row *row = NULL;

		/* google-pprof frames carry "<address>" suffixes: strip them */
		snprintf(cmd, sizeof(cmd),
			 "awk -v fn='%s' '{ c = $NF; k = $0; sub(/ [0-9]+$/, \"\", k); "
			 "n = split(k, f, \";\"); hit = 0; "
			 "for (j = 1; j <= n; j++) { sub(/<[0-9a-f]+>$/, \"\", f[j]); if (f[j] == fn) hit = 1 } "
			 "if (hit) t += c; if (f[n] == fn) s += c } END { printf \"%%d %%d\\n\", s, t }' '%s'",
			 fns[i], path);
		fp = popen(cmd, "r");
		assert_non_null(fp);
		assert_non_null(fgets(line, sizeof(line), fp));
		pclose(fp);
		assert_int_equal(sscanf(line, "%lld %lld", &self, &total), 2);
		assert_true(total > 0);
		for (size_t k = 0; k < r.n; k++) {
			const char *f = r.rows[k].function;
			size_t fl = strlen(fns[i]);

			/* our names keep the <address> suffix: match the prefix */
			if (!strncmp(f, fns[i], fl) && (f[fl] == 0 || f[fl] == '<')) {
				assert_null(row);
				row = &r.rows[k];
			}
		}
		assert_non_null(row);
		if (row->self != self || row->total != total)
			fail_msg("%s: rollup self %lld total %lld, awk %lld %lld", fns[i],
				 (long long)row->self, (long long)row->total, self, total);
	}
	{
		int64_t s = 0;
		for (i = 0; i < r.n; i++) {
			s += r.rows[i].self;
			assert_true(r.rows[i].total >= r.rows[i].self);
			assert_true(r.rows[i].total <= wt_profile_total(p, 0));
		}
		assert_int_equal(s, wt_profile_total(p, 0));
	}
	wt_rollup_free(&r);
	wt_profile_free(p);
	free(buf);
}

static uint32_t lcg(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) & 0xffffff;
}

/* Rows come out in (type, minute, function) order with functions in
 * strcmp (unsigned byte) order, whatever the names share: long common
 * prefixes (past 256 bytes too), prefixes of one another, bytes >= 0x80,
 * many minutes (some
 * before 1970). Per (type, minute), self sums to the samples' values and
 * every row is checked against a brute-force count. */
/* Random stacks over 400 names; one_minute: every sample in one minute
 * (the rollup's one-minute path, as for every pprof profile), with some
 * all-zero samples, and every expected row checked to be there. */
static void row_order_case(int one_minute)
{
	static const char *const parts[] = {"github.com/x/", "github.com/x/y.", "a", "ab", "", "\xc3\xa9",
					    "Z", "runtime.", "\x7f", "zz", "b",
					    /* 130 bytes: names that share more than 256 */
					    "github.com/org/project/internal/pkg/subpkg/more/and/more/"
					    "directories/until/it/is/long/enough/to/matter/for/the/sort.Func"};
	char names[400][640];
	wt_profile *p = wt_profile_new(NULL);
	wt_rollup r;
	wt_err e;
	uint32_t seed = 12345;
	size_t i, j;

#define RND() lcg(&seed)
	assert_non_null(p);
	assert_int_equal(wt_profile_add_type(p, "cpu", "nanoseconds", NULL, NULL, &e), 0);
	assert_int_equal(wt_profile_add_type(p, "alloc", "bytes", NULL, NULL, &e), 0);
	for (i = 0; i < 400; i++) {
		size_t k, np = 1 + RND() % 4;
		names[i][0] = 0;
		for (k = 0; k < np; k++)
			strcat(names[i], parts[RND() % (sizeof(parts) / sizeof(parts[0]))]);
		if (!names[i][0])
			strcpy(names[i], "x");
		if (i < 24) { /* the long part twice, then something: 260+ shared bytes */
			const char *lp = parts[sizeof(parts) / sizeof(parts[0]) - 1];

			snprintf(names[i], sizeof(names[i]), "%s%s%s%s", lp, lp, i % 3 ? "" : lp,
				 parts[(23 - i) % (sizeof(parts) / sizeof(parts[0]))]);
		}
	}
	for (i = 0; i < 3000; i++) {
		char stack[8192] = "";
		size_t k, d = 1 + RND() % 12;
		int64_t v[2] = {1 + RND() % 100, RND() % 3 ? 0 : RND() % 1000};
		int64_t t = ((int64_t)(RND() % 40) - 5) * MIN_NS + (int64_t)(RND() % 1000);

		if (one_minute) {
			t = 7 * MIN_NS + (int64_t)(RND() % 1000);
			if (RND() % 10 == 0)
				v[0] = v[1] = 0;
		}

		for (k = 0; k < d; k++) {
			if (k)
				strcat(stack, ";");
			strcat(stack, names[RND() % 400]);
		}
		add(p, stack, t, v);
	}
	assert_int_equal(wt_rollup_build(p, 0, &r, &e), 0);
	assert_true(r.n > (one_minute ? 300u : 1000u));
	for (i = 1; i < r.n; i++) {
		const wt_rollup_row *a = &r.rows[i - 1], *b = &r.rows[i];
		int c = strcmp(a->type, b->type);

		if (!c)
			c = a->minute < b->minute ? -1 : a->minute > b->minute;
		if (!c)
			c = strcmp(a->function, b->function);
		if (c >= 0)
			fail_msg("rows %zu and %zu out of order: (%s, %lld, %s) (%s, %lld, %s)", i - 1, i,
				 a->type, (long long)a->minute, a->function, b->type, (long long)b->minute,
				 b->function);
	}
	/* brute force: self and total of every row from the samples */
	for (i = 0; i < r.n; i++) {
		const wt_rollup_row *row = &r.rows[i];
		size_t t = !strcmp(row->type, "cpu") ? 0 : 1;
		int64_t self = 0, total = 0;

		for (j = 0; j < p->nsamples; j++) {
			const wt_sample *sm = &p->samples[j];
			int64_t m = sm->time_ns / MIN_NS - (sm->time_ns < 0 && sm->time_ns % MIN_NS ? 1 : 0);
			size_t n, k;
			const uint32_t *fr = wt_profile_stack(p, sm->stack, &n);
			char buf[64];
			int hit = 0;

			if (m != row->minute)
				continue;
			for (k = 0; k < n && !hit; k++)
				hit = !strcmp(wt_profile_frame_name(p, fr[k], buf, sizeof(buf)), row->function);
			if (hit)
				total += wt_profile_values(p, j)[t];
			if (n && !strcmp(wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), row->function))
				self += wt_profile_values(p, j)[t];
		}
		if (self != row->self || total != row->total)
			fail_msg("(%s, %lld, %s): self %lld total %lld, want %lld %lld", row->type,
				 (long long)row->minute, row->function, (long long)row->self,
				 (long long)row->total, (long long)self, (long long)total);
	}
	if (one_minute) {
		/* every (type, name) with a nonzero sum has its row */
		size_t want = 0;

		for (i = 0; i < 400; i++) {
			int64_t sum[2][2] = {{0, 0}, {0, 0}};
			char buf[64];

			for (j = 0; j < i && strcmp(names[j], names[i]); j++)
				;
			if (j < i)
				continue; /* a name drawn twice */
			for (j = 0; j < p->nsamples; j++) {
				size_t n, k, t;
				const uint32_t *fr = wt_profile_stack(p, p->samples[j].stack, &n);
				int hit = 0;

				for (k = 0; k < n && !hit; k++)
					hit = !strcmp(wt_profile_frame_name(p, fr[k], buf, sizeof(buf)), names[i]);
				for (t = 0; t < 2 && hit; t++) {
					sum[t][1] += wt_profile_values(p, j)[t];
					if (!strcmp(wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), names[i]))
						sum[t][0] += wt_profile_values(p, j)[t];
				}
			}
			want += (sum[0][0] || sum[0][1]) + (sum[1][0] || sum[1][1]);
		}
		assert_int_equal(r.n, want);
	}
#undef RND
	wt_rollup_free(&r);
	wt_profile_free(p);
}

static void test_row_order(void **state)
{
	(void)state;
	row_order_case(0);
}

/* The same checks when every sample is in one minute. */
static void test_one_minute(void **state)
{
	(void)state;
	row_order_case(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recursion_and_minutes),
		cmocka_unit_test(test_time_fallbacks),
		cmocka_unit_test(test_types_and_names),
		cmocka_unit_test(test_corpus_against_awk),
		cmocka_unit_test(test_row_order),
		cmocka_unit_test(test_one_minute),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
