/*
 * test_symbols_function.c — the per-function name regression issues use
 * for a stored frame (hub/symbols.c hub_symbols_function without a
 * symbolizer, hub_symbols_strip_line): a symref shows without its
 * " [bid:…]" part, plain names stay as they are, the " (file:line)" suffix
 * of symbolized names is cut, and nothing else that merely ends in ")" is.
 * The symbolized path (real debug file, addr2line as reference) is in
 * tests/integration/test_symbols.py::test_regression_issue_symbolized.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hub/symbols.h"

static void check_strip(const char *in, const char *want)
{
	size_t n = hub_symbols_strip_line(in, strlen(in));
	if (n != strlen(want) || memcmp(in, want, n))
		fail_msg("strip(\"%s\") = \"%.*s\", want \"%s\"", in, (int)n, in, want);
}

static void test_strip_line(void **state)
{
	(void)state;
	check_strip("hot_leaf (prog.c:42)", "hot_leaf");
	check_strip("ns::f(int) (a.cc:3)", "ns::f(int)");
	check_strip("(anonymous namespace)::g() (x/y.cc:1234)", "(anonymous namespace)::g()");
	check_strip("hot_leaf", "hot_leaf");
	check_strip("f(int)", "f(int)");              /* a signature, no location */
	check_strip("f (a.c:)", "f (a.c:)");          /* no line digits */
	check_strip("f (12)", "f (12)");              /* no colon */
	check_strip("f(a.c:12)", "f(a.c:12)");        /* no blank before "(" */
	check_strip("(a.c:1)", "(a.c:1)");
	check_strip("", "");
}

static void check_fn(const char *frame, const char *want)
{
	wt_buf out = WT_BUF_INIT;
	wt_err err = {0, ""};
	int named = -1;

	assert_int_equal(hub_symbols_function(NULL, NULL, "p", frame, strlen(frame), &out, &named, &err), 0);
	assert_int_equal(named, 0);
	assert_int_equal(out.len, strlen(want));
	assert_string_equal((const char *)out.data, want);
	wt_buf_free(&out);
}

static void test_function_unsymbolized(void **state)
{
	(void)state;
	check_fn("prog+0x11e4 [bid:3f2e0011aabb]", "prog+0x11e4");
	check_fn("libfoo.so+0x1a0", "libfoo.so+0x1a0");
	check_fn("main.work", "main.work");
	check_fn("hot_leaf (prog.c:42)", "hot_leaf (prog.c:42)"); /* a stored name is not a symbolized one */
	check_fn("", "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strip_line),
		cmocka_unit_test(test_function_unsymbolized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
