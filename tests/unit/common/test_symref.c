/*
 * test_symref.c — the stored form of unsymbolized native frames
 * (common/symref.c): parse/format round trips, what is NOT a symref
 * (ordinary names that merely contain "+0x"), the display form, and
 * wt_profile_frame_key() on a profile built by hand (pprof-style mapping
 * with a range → file offset; mapping without a range → address as is).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "profile.h"
#include "symref.h"

static void test_parse(void **state)
{
	wt_symref r;
	const char *s = "libfoo.so.1+0x1a2b [bid:3f2e00aa]";
	(void)state;

	assert_true(wt_symref_parse(s, strlen(s), &r));
	assert_int_equal(r.module_len, 11);
	assert_memory_equal(r.module, "libfoo.so.1", 11);
	assert_true(r.offset == 0x1a2b);
	assert_int_equal(r.build_id_len, 8);
	assert_memory_equal(r.build_id, "3f2e00aa", 8);
	assert_int_equal(wt_symref_display_len(s, strlen(s)), strlen("libfoo.so.1+0x1a2b"));

	s = "prog+0x11E4";
	assert_true(wt_symref_parse(s, strlen(s), &r));
	assert_null(r.build_id);
	assert_true(r.offset == 0x11e4);
	assert_int_equal(wt_symref_display_len(s, strlen(s)), strlen(s));

	/* not symrefs */
	assert_false(wt_symref_parse("main", 4, &r));
	assert_false(wt_symref_parse("+0x12", 5, &r));          /* no module */
	assert_false(wt_symref_parse("a+0x", 4, &r));           /* no digits */
	assert_false(wt_symref_parse("a+0x12 x", 8, &r));       /* trailing text */
	assert_false(wt_symref_parse("a+0x12345678901234567", 21, &r)); /* > 64 bits */
	s = "f+0x1 [bid:xyz]";                                  /* not hex: not a bracket */
	assert_false(wt_symref_parse(s, strlen(s), &r));
	assert_int_equal(wt_symref_display_len(s, strlen(s)), strlen(s));
}

static void test_format(void **state)
{
	char buf[128];
	wt_symref r;
	(void)state;

	assert_string_equal(wt_symref_format(buf, sizeof(buf), "/usr/lib/libc.so.6", 0x2724a, "ab12"),
			    "libc.so.6+0x2724a [bid:ab12]");
	assert_true(wt_symref_parse(buf, strlen(buf), &r) && r.offset == 0x2724a && r.build_id_len == 4);
	assert_string_equal(wt_symref_format(buf, sizeof(buf), "prog", 0, ""), "prog+0x0");
}

static void test_frame_key(void **state)
{
	wt_profile *p = wt_profile_new(NULL);
	wt_mapping m = {0x555555554000, 0x555555654000, 0x1000, 0, 0};
	wt_mapping m2 = {0, 0, 0, 0, 0};
	wt_frame f = {WT_NO_FUNCTION, 0, 0, 0x555555555234};
	uint32_t mi, mi2, fi, fn;
	char buf[256], nb[256];
	wt_err e;
	(void)state;

	assert_non_null(p);
	assert_int_equal(wt_profile_intern_cstr(p, "/opt/app/bin/app", &m.filename, &e), 0);
	assert_int_equal(wt_profile_intern_cstr(p, "00FF3a", &m.build_id, &e), 0);
	assert_int_equal(wt_profile_add_mapping(p, &m, &mi, &e), 0);
	f.mapping = mi;
	assert_int_equal(wt_profile_add_frame(p, &f, &fi, &e), 0);
	/* address - start + offset = 0x1234 + 0x1000 */
	assert_string_equal(wt_profile_frame_key(p, fi, buf, sizeof(buf)), "app+0x2234 [bid:00FF3a]");

	assert_int_equal(wt_profile_intern_cstr(p, "[vdso]", &m2.filename, &e), 0);
	assert_int_equal(wt_profile_add_mapping(p, &m2, &mi2, &e), 0);
	f.mapping = mi2;
	f.address = 0x99;
	assert_int_equal(wt_profile_add_frame(p, &f, &fi, &e), 0);
	assert_string_equal(wt_profile_frame_key(p, fi, buf, sizeof(buf)), "[vdso]+0x99");

	/* a named frame keeps its name */
	assert_int_equal(wt_profile_add_function_named(p, "main", 4, NULL, &fn, &e), 0);
	f.function = fn;
	assert_int_equal(wt_profile_add_frame(p, &f, &fi, &e), 0);
	assert_string_equal(wt_profile_frame_key(p, fi, buf, sizeof(buf)),
			    wt_profile_frame_name(p, fi, nb, sizeof(nb)));
	wt_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_frame_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
