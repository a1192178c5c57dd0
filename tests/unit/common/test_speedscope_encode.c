/*
 * test_speedscope_encode.c — the speedscope JSON encoder
 * (common/speedscope_encode.c): a hand-built profile with two threads and
 * unlabelled samples is encoded, parsed with jansson (an independent JSON
 * reader) to check the schema's required fields and the weights, and read
 * back by our decoder with the same totals. Plus escapes / invalid UTF-8,
 * negative values, empty types and a bad type index.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "buf.h"
#include "speedscope.h"

typedef struct fixture {
	wt_profile *p;
	uint32_t st_ab, st_ac, st_a;
	uint32_t ls_t1, ls_t2;
} fixture;

static uint32_t frame(wt_profile *p, const char *name)
{
	wt_err e;
	uint32_t fn, fr;
	wt_frame f = {0, WT_NO_MAPPING, 0, 0};

	assert_int_equal(wt_profile_add_function_named(p, name, strlen(name), "x.c", &fn, &e), 0);
	f.function = fn;
	assert_int_equal(wt_profile_add_frame(p, &f, &fr, &e), 0);
	return fr;
}

static uint32_t thread(wt_profile *p, const char *name)
{
	wt_err e;
	wt_label l = {0, 0, 0, 0};
	uint32_t ls;

	assert_int_equal(wt_profile_intern_cstr(p, "thread", &l.key, &e), 0);
	assert_int_equal(wt_profile_intern_cstr(p, name, &l.str, &e), 0);
	assert_int_equal(wt_profile_add_labelset(p, &l, 1, &ls, &e), 0);
	return ls;
}

static void sample(wt_profile *p, uint32_t st, uint32_t ls, int64_t cpu, int64_t n)
{
	wt_err e;
	int64_t v[2] = {cpu, n};

	assert_int_equal(wt_profile_add_sample(p, st, ls, 0, v, &e), 0);
}

/* main → a → b / main → a → c / main → a; cpu ns + sample counts */
static void build(fixture *f, const char *bname)
{
	wt_err e;
	size_t idx;
	uint32_t m, a, b, c, fr[3];

	assert_non_null(f->p = wt_profile_new(NULL));
	assert_int_equal(wt_profile_add_type(f->p, "cpu", "nanoseconds", NULL, &idx, &e), 0);
	assert_int_equal(wt_profile_add_type(f->p, "samples", "count", NULL, &idx, &e), 0);
	m = frame(f->p, "main");
	a = frame(f->p, "a");
	b = frame(f->p, bname);
	c = frame(f->p, "c");
	fr[0] = b, fr[1] = a, fr[2] = m; /* leaf first */
	assert_int_equal(wt_profile_add_stack(f->p, fr, 3, &f->st_ab, &e), 0);
	fr[0] = c;
	assert_int_equal(wt_profile_add_stack(f->p, fr, 3, &f->st_ac, &e), 0);
	fr[0] = a, fr[1] = m;
	assert_int_equal(wt_profile_add_stack(f->p, fr, 2, &f->st_a, &e), 0);
	f->ls_t1 = thread(f->p, "worker-2");
	f->ls_t2 = thread(f->p, "worker-1");
	sample(f->p, f->st_ab, f->ls_t1, 30, 3);
	sample(f->p, f->st_ac, f->ls_t1, 10, 1);
	sample(f->p, f->st_ab, f->ls_t2, 20, 2);
	sample(f->p, f->st_a, 0, 5, 1);
}

static json_t *encode(const wt_profile *p, const size_t *types, size_t n, wt_buf *out)
{
	wt_err e = {0};
	json_error_t je;
	json_t *doc;

	assert_int_equal(wt_speedscope_encode(p, types, n, "t.json", out, &e), 0);
	doc = json_loadb((const char *)out->data, out->len, 0, &je);
	if (!doc)
		fail_msg("invalid JSON: %s at %d", je.text, je.position);
	return doc;
}

static const char *frame_name(json_t *doc, json_t *idx)
{
	json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
	return json_string_value(json_object_get(json_array_get(frames, (size_t)json_integer_value(idx)), "name"));
}

static void test_threads_and_schema(void **state)
{
	fixture f = {0};
	wt_buf out = WT_BUF_INIT;
	size_t types[] = {0};
	json_t *doc, *profs, *pr;
	wt_profile *back = NULL;
	wt_err e;
	(void)state;

	build(&f, "b");
	doc = encode(f.p, types, 1, &out);
	assert_string_equal(json_string_value(json_object_get(doc, "$schema")),
			    "https://www.speedscope.app/file-format-schema.json");
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "shared"), "frames")), 4);
	profs = json_object_get(doc, "profiles");
	assert_int_equal(json_array_size(profs), 3); /* unlabelled, worker-1, worker-2 */
	pr = json_array_get(profs, 0);
	assert_string_equal(json_string_value(json_object_get(pr, "name")), "cpu");
	pr = json_array_get(profs, 1);
	assert_string_equal(json_string_value(json_object_get(pr, "name")), "worker-1");
	pr = json_array_get(profs, 2);
	assert_string_equal(json_string_value(json_object_get(pr, "name")), "worker-2");
	assert_string_equal(json_string_value(json_object_get(pr, "type")), "sampled");
	assert_string_equal(json_string_value(json_object_get(pr, "unit")), "nanoseconds");
	assert_int_equal(json_integer_value(json_object_get(pr, "startValue")), 0);
	assert_int_equal(json_integer_value(json_object_get(pr, "endValue")), 40);
	assert_int_equal(json_array_size(json_object_get(pr, "samples")), 2);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(pr, "weights"), 0)), 30);
	/* root first */
	json_t *st = json_array_get(json_object_get(pr, "samples"), 0);
	assert_string_equal(frame_name(doc, json_array_get(st, 0)), "main");
	assert_string_equal(frame_name(doc, json_array_get(st, 2)), "b");
	/* read back */
	assert_int_equal(wt_speedscope_decode(out.data, out.len, NULL, 0, &back, &e), 0);
	assert_int_equal(back->ntypes, 1);
	assert_int_equal(wt_profile_total(back, 0), 65);
	wt_profile_free(back);
	json_decref(doc);
	wt_buf_free(&out);
	wt_profile_free(f.p);
}

static void test_all_types_units(void **state)
{
	fixture f = {0};
	wt_buf out = WT_BUF_INIT;
	size_t types[] = {0, 1};
	json_t *doc, *profs;
	(void)state;

	build(&f, "b");
	doc = encode(f.p, types, 2, &out);
	profs = json_object_get(doc, "profiles");
	assert_int_equal(json_array_size(profs), 6);
	assert_string_equal(json_string_value(json_object_get(json_array_get(profs, 4), "name")),
			    "samples: worker-1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(profs, 4), "unit")), "none");
	json_decref(doc);
	wt_buf_free(&out);
	wt_profile_free(f.p);
}

static void test_escapes_and_utf8(void **state)
{
	fixture f = {0};
	wt_buf out = WT_BUF_INIT;
	size_t types[] = {0};
	json_t *doc, *frames;
	int found = 0;
	(void)state;

	build(&f, "b \"q\" \\ \t caf\xe9 \xe2\x82\xac \xed\xa0\x80");
	doc = encode(f.p, types, 1, &out);
	frames = json_object_get(json_object_get(doc, "shared"), "frames");
	for (size_t i = 0; i < json_array_size(frames); i++)
		found |= !strcmp(json_string_value(json_object_get(json_array_get(frames, i), "name")),
				 "b \"q\" \\ \t caf\xef\xbf\xbd \xe2\x82\xac \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_true(found);
	json_decref(doc);
	wt_buf_free(&out);
	wt_profile_free(f.p);
}

/* The one UTF-8 check (common/buf.h) the encoders and the edge's ingest share. */
static void test_utf8_seq(void **state)
{
	(void)state;
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xc3\xa9", SIZE_MAX), 2);
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xe2\x82\xac", SIZE_MAX), 3);
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", SIZE_MAX), 4);
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 3), 0);  /* cut short */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xc3", SIZE_MAX), 0);          /* the NUL ends it */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xc0\xaf", SIZE_MAX), 0);      /* overlong */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xe0\x80\xaf", SIZE_MAX), 0);  /* overlong */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xed\xa0\x80", SIZE_MAX), 0);  /* surrogate */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xf4\x90\x80\x80", SIZE_MAX), 0); /* > U+10FFFF */
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\xff", SIZE_MAX), 0);
	assert_int_equal(wt_utf8_seq((const unsigned char *)"\x80\x80", SIZE_MAX), 0);     /* continuation first */
}

/* snprintf's truncation leaves UTF-8 only after wt_utf8_trim_tail. */
static void test_utf8_trim_tail(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"abc", "abc"}, {"", ""}, {"ab\xc3\xa9", "ab\xc3\xa9"}, {"ab\xc3", "ab"},
		{"x\xe2\x82", "x"}, {"x\xe2\x82\xac", "x\xe2\x82\xac"}, {"\xf0\x9f\x98", ""},
		{"q\xf0\x9f\x98\x80", "q\xf0\x9f\x98\x80"},
	};
	char b[16];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(b, sizeof(b), "%s", cases[i].in);
		wt_utf8_trim_tail(b);
		assert_string_equal(b, cases[i].out);
	}
	/* as the edge names a Python frame: a 2-byte character cut in half */
	snprintf(b, 5, "abc\xc3\xa9");
	wt_utf8_trim_tail(b);
	assert_string_equal(b, "abc");
}

static void test_errors_and_empty(void **state)
{
	fixture f = {0};
	wt_buf out = WT_BUF_INIT;
	size_t bad[] = {7}, types[] = {0};
	wt_err e = {0};
	wt_profile *p;
	size_t idx;
	json_t *doc;
	(void)state;

	build(&f, "b");
	assert_int_equal(wt_speedscope_encode(f.p, bad, 1, NULL, &out, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "out of range"));
	sample(f.p, f.st_ac, f.ls_t1, -100, 0); /* stack sums to -90 */
	assert_int_equal(wt_speedscope_encode(f.p, types, 1, NULL, &out, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "negative"));
	wt_profile_free(f.p);

	/* a type without samples: one empty profile, still valid */
	assert_non_null(p = wt_profile_new(NULL));
	assert_int_equal(wt_profile_add_type(p, "alloc_space", "bytes", NULL, &idx, &e), 0);
	wt_buf_reset(&out);
	doc = encode(p, types, 1, &out);
	assert_int_equal(json_array_size(json_object_get(doc, "profiles")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "profiles"), 0),
							      "unit")), "bytes");
	json_decref(doc);
	wt_profile_free(p);
	wt_buf_free(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_and_schema),
		cmocka_unit_test(test_all_types_units),
		cmocka_unit_test(test_escapes_and_utf8),
		cmocka_unit_test(test_errors_and_empty),
		cmocka_unit_test(test_utf8_seq),
		cmocka_unit_test(test_utf8_trim_tail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
