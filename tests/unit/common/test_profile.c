/*
 * test_profile.c — the wt_profile model: interning (same input → same id),
 * sample merging, label set normalisation, and every limit turning into
 * WT_ELIMIT instead of an allocation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"

static uint32_t frame_named(wt_profile *p, const char *name)
{
	uint32_t fn, fr;
	wt_frame f = {0, WT_NO_MAPPING, 0, 0};
	assert_int_equal(wt_profile_add_function_named(p, name, strlen(name), NULL, &fn, NULL), 0);
	f.function = fn;
	assert_int_equal(wt_profile_add_frame(p, &f, &fr, NULL), 0);
	return fr;
}

static void test_strings_interned(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	uint32_t a, b, c, e;
	(void)state;
	assert_non_null(p);
	assert_int_equal(wt_profile_intern_cstr(p, "main", &a, NULL), 0);
	assert_int_equal(wt_profile_intern(p, "main.go", 4, &b, NULL), 0);
	assert_int_equal(wt_profile_intern_cstr(p, "other", &c, NULL), 0);
	assert_int_equal(wt_profile_intern_cstr(p, "", &e, NULL), 0);
	assert_int_equal(a, b);
	assert_int_not_equal(a, c);
	assert_int_equal(e, 0);
	assert_string_equal(wt_profile_str(p, a), "main");
	assert_string_equal(wt_profile_str(p, 9999), "");
	/* many strings force index growth; ids stay stable */
	for (int i = 0; i < 10000; i++) {
		char s[32];
		uint32_t id, id2;
		snprintf(s, sizeof(s), "fn%d", i);
		assert_int_equal(wt_profile_intern_cstr(p, s, &id, NULL), 0);
		assert_int_equal(wt_profile_intern_cstr(p, s, &id2, NULL), 0);
		assert_int_equal(id, id2);
	}
	assert_int_equal(p->nstrings, 10000 + 3);
	wt_profile_free(p);
}

static void test_samples_merge(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	uint32_t st[2], s1, s2, s3, ls;
	size_t t;
	int64_t v1[2] = {1, 10}, v2[2] = {2, 20};
	wt_label l[2];
	wt_err err;
	(void)state;

	assert_int_equal(wt_profile_add_type(p, "samples", "count", NULL, &t, NULL), 0);
	assert_int_equal(wt_profile_add_type(p, "cpu", "nanoseconds", NULL, &t, NULL), 0);
	assert_int_equal(wt_profile_find_type(p, "cpu"), 1);
	assert_int_equal(wt_profile_find_type(p, "samples"), 0);
	assert_int_equal(wt_profile_find_type(p, "wall"), -1);
	st[0] = frame_named(p, "leaf");
	st[1] = frame_named(p, "main");
	assert_int_equal(wt_profile_add_stack(p, st, 2, &s1, NULL), 0);
	assert_int_equal(wt_profile_add_stack(p, st, 2, &s2, NULL), 0);
	assert_int_equal(wt_profile_add_stack(p, st + 1, 1, &s3, NULL), 0);
	assert_int_equal(s1, s2);
	assert_int_not_equal(s1, s3);

	/* labels normalised: order does not matter, last duplicate wins */
	wt_profile_intern_cstr(p, "span_id", &l[0].key, NULL);
	wt_profile_intern_cstr(p, "abc", &l[0].str, NULL);
	l[0].num = 0; l[0].num_unit = 0;
	wt_profile_intern_cstr(p, "thread", &l[1].key, NULL);
	wt_profile_intern_cstr(p, "t1", &l[1].str, NULL);
	l[1].num = 0; l[1].num_unit = 0;
	assert_int_equal(wt_profile_add_labelset(p, l, 2, &ls, NULL), 0);
	{
		wt_label r[2] = {l[1], l[0]};
		uint32_t ls2;
		assert_int_equal(wt_profile_add_labelset(p, r, 2, &ls2, NULL), 0);
		assert_int_equal(ls, ls2);
	}
	assert_string_equal(wt_profile_label_str(p, ls, "span_id"), "abc");
	assert_null(wt_profile_label_str(p, ls, "trace_id"));

	assert_int_equal(wt_profile_add_sample(p, s1, 0, 0, v1, NULL), 0);
	assert_int_equal(wt_profile_add_sample(p, s1, 0, 0, v2, NULL), 0);
	assert_int_equal(wt_profile_add_sample(p, s1, ls, 0, v1, NULL), 0);
	assert_int_equal(wt_profile_add_sample(p, s3, 0, 5, v1, NULL), 0);
	assert_int_equal(p->nsamples, 3);
	assert_int_equal(wt_profile_total(p, 0), 1 + 2 + 1 + 1);
	assert_int_equal(wt_profile_total(p, 1), 10 + 20 + 10 + 10);
	assert_int_equal(wt_profile_values(p, 0)[1], 30);
	/* adding a type after samples is refused */
	assert_int_equal(wt_profile_add_type(p, "x", "y", NULL, &t, &err), WT_EINVAL);
	/* unknown ids are refused */
	assert_int_equal(wt_profile_add_sample(p, 999, 0, 0, v1, &err), WT_EINVAL);
	{
		uint32_t bad = 12345, sid;
		assert_int_equal(wt_profile_add_stack(p, &bad, 1, &sid, &err), WT_EINVAL);
	}
	wt_profile_free(p);
}

static void test_limits(void **state)
{
	wt_limits lim;
	wt_profile *p;
	wt_err err;
	uint32_t id, fr[8], sid;
	size_t t;
	int64_t v = 1;
	char big[100];
	(void)state;

	wt_limits_default(&lim);
	lim.max_string_len = 50;
	lim.max_stack_depth = 4;
	lim.max_samples = 2;
	lim.max_strings = 20;
	p = wt_profile_new(&lim);
	memset(big, 'x', sizeof(big));
	assert_int_equal(wt_profile_intern(p, big, sizeof(big), &id, &err), WT_ELIMIT);
	assert_non_null(strstr(err.msg, "exceeds limit"));
	assert_int_equal(wt_profile_intern(p, "a\0b", 3, &id, &err), WT_EINVAL);
	assert_int_equal(wt_profile_add_type(p, "cpu", "samples", NULL, &t, NULL), 0);
	for (int i = 0; i < 5; i++) {
		char n[16];
		snprintf(n, sizeof(n), "f%d", i);
		fr[i] = frame_named(p, n);
	}
	assert_int_equal(wt_profile_add_stack(p, fr, 5, &sid, &err), WT_ELIMIT);
	assert_int_equal(wt_profile_add_stack(p, fr, 4, &sid, &err), 0);
	assert_int_equal(wt_profile_add_sample(p, sid, 0, 1, &v, &err), 0);
	assert_int_equal(wt_profile_add_sample(p, sid, 0, 2, &v, &err), 0);
	assert_int_equal(wt_profile_add_sample(p, sid, 0, 2, &v, &err), 0); /* merge: no growth */
	assert_int_equal(wt_profile_add_sample(p, sid, 0, 3, &v, &err), WT_ELIMIT);
	for (int i = 0; i < 40; i++) {
		char n[16];
		snprintf(n, sizeof(n), "s%d", i);
		if (wt_profile_intern_cstr(p, n, &id, &err) == WT_ELIMIT)
			break;
		assert_true(p->nstrings <= 20);
	}
	assert_int_equal(err.code, WT_ELIMIT);
	{
		int64_t big1 = INT64_MAX;
		assert_int_equal(wt_profile_add_sample(p, sid, 0, 1, &big1, &err), WT_EINVAL);
	}
	wt_profile_free(p);
}

static void test_unsymbolized_frame_name(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	wt_mapping m = {0x400000, 0x500000, 0, 0, 0};
	wt_frame f = {WT_NO_FUNCTION, 0, 0, 0x401234};
	uint32_t mi, fi;
	char buf[64];
	(void)state;
	wt_profile_intern_cstr(p, "/usr/bin/app", &m.filename, NULL);
	assert_int_equal(wt_profile_add_mapping(p, &m, &mi, NULL), 0);
	f.mapping = mi;
	assert_int_equal(wt_profile_add_frame(p, &f, &fi, NULL), 0);
	assert_string_equal(wt_profile_frame_name(p, fi, buf, sizeof(buf)), "app+0x401234");
	f.mapping = WT_NO_MAPPING;
	assert_int_equal(wt_profile_add_frame(p, &f, &fi, NULL), 0);
	assert_string_equal(wt_profile_frame_name(p, fi, buf, sizeof(buf)), "0x401234");
	wt_profile_free(p);
}

/* wt_profile_reserve sizes the tables once; interning after it (and past
 * it, when the hint was short) still finds every entry again. */
static void test_reserve_and_index(void **state)
{
	(void)state;
	for (int hint = 0; hint < 3; hint++) {
		wt_profile *p = wt_profile_new(NULL);
		wt_err err = {0};
		wt_profile_sizes n = {0};
		size_t ty;
		char name[32];
		enum { N = 50000 };
		n.strings = n.functions = n.frames = n.stacks = n.samples = hint == 0 ? 0 : hint == 1 ? N / 7 : N;
		assert_int_equal(wt_profile_reserve(p, &n), 0);
		assert_int_equal(wt_profile_add_type(p, "samples", "count", NULL, &ty, &err), 0);
		uint32_t base = (uint32_t)p->nstrings;
		for (int round = 0; round < 2; round++) {
			for (uint32_t i = 0; i < N; i++) {
				wt_frame fr = {0, WT_NO_MAPPING, 0, 0};
				uint32_t fid, st, sid;
				int64_t v = 1;
				snprintf(name, sizeof(name), "fn%u", i);
				assert_int_equal(wt_profile_intern_cstr(p, name, &sid, &err), 0);
				assert_int_equal(sid, base + i);
				assert_int_equal(wt_profile_add_function_named(p, name, strlen(name), NULL, &fr.function, &err), 0);
				assert_int_equal(fr.function, i);
				assert_int_equal(wt_profile_add_frame(p, &fr, &fid, &err), 0);
				assert_int_equal(fid, i);
				assert_int_equal(wt_profile_add_stack(p, &fid, 1, &st, &err), 0);
				assert_int_equal(st, i);
				assert_int_equal(wt_profile_add_sample(p, st, 0, 0, &v, &err), 0);
			}
		}
		assert_int_equal(p->nfunctions, N);
		assert_int_equal(p->nstacks, N);
		assert_int_equal(p->nsamples, N);
		assert_int_equal(wt_profile_total(p, 0), 2 * N);
		wt_profile_free(p);
	}
}

/* wt_profile_seal: readable as before, nothing more may be added. */
static void test_seal(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	uint32_t a, b;
	wt_err err = {0, ""};
	(void)state;
	assert_non_null(p);
	assert_int_equal(wt_profile_intern_cstr(p, "main", &a, NULL), 0);
	wt_profile_seal(p);
	assert_string_equal(wt_profile_str(p, a), "main");
	assert_int_equal(wt_profile_intern_cstr(p, "main", &b, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "sealed"));
	assert_int_equal(wt_profile_add_stack(p, NULL, 0, &b, NULL), WT_EINVAL);
	wt_profile_seal(p); /* twice: harmless */
	wt_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings_interned),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_reserve_and_index),
		cmocka_unit_test(test_samples_merge),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_unsymbolized_frame_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
