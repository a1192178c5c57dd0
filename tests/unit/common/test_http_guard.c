/*
 * test_http_guard.c — request-head parsing of common/http_guard.c and the
 * shared byte budget of common/budget.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "budget.h"
#include "http_guard.h"

static int parse(const char *s, wt_http_head *h)
{
	return wt_http_guard_parse_head(s, strlen(s), 1000, h);
}

static void head(void **state)
{
	wt_http_head h;

	assert_int_equal(parse("POST /v1/profiles?format=folded HTTP/1.1\r\nHost: x\r\n"
			       "authorization:  Bearer abc \r\nContent-Length: 42\r\n\r\n", &h), 0);
	assert_string_equal(h.method, "POST");
	assert_string_equal(h.path, "/v1/profiles");
	assert_string_equal(h.authorization, "Bearer abc");
	assert_true(h.content_length == 42 && h.body_max == 42 && !h.chunked);
	/* bare LF line ends, chunked: the body may take max_body */
	assert_int_equal(parse("PUT /a HTTP/1.1\nTransfer-Encoding: chunked\n\n", &h), 0);
	assert_true(h.chunked && h.body_max == 1000 && h.content_length == -1);
	assert_string_equal(h.authorization, "");
	assert_int_equal(parse("GET /healthz HTTP/1.1\r\n\r\n", &h), 0);
	assert_true(h.body_max == 0);
	assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: -5\r\n\r\n", &h), WT_EINVAL);
	assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 12x\r\n\r\n", &h), WT_EINVAL);
	assert_int_equal(parse("garbage\r\n\r\n", &h), WT_EINVAL);
	assert_int_equal(parse("POST /x HTTP/1.1\r\nno colon here\r\n\r\n", &h), WT_EINVAL);
	/* framing evhttp could read differently: refused */
	assert_int_equal(parse("POST /x HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 900\r\n\r\n", &h),
			 WT_EINVAL);
	assert_int_equal(parse("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n",
			       &h), WT_EINVAL);
	assert_int_equal(parse("POST /x HTTP/1.1\r\nX: a\r\n Content-Length: 9\r\n\r\n", &h), WT_EINVAL);
}

static void budget(void **state)
{
	wt_budget b;

	wt_budget_init(&b, 100);
	assert_int_equal(wt_budget_take(&b, 60), 0);
	assert_int_equal(wt_budget_take(&b, 41), -1);
	assert_int_equal(wt_budget_take(&b, 40), 0);
	assert_int_equal(wt_budget_take(&b, 1), -1);
	assert_true(b.refused == 2 && b.used == 100);
	wt_budget_give(&b, 60);
	assert_int_equal(wt_budget_take(&b, 1ull << 63), -1);
	assert_int_equal(wt_budget_take(&b, 60), 0);
	wt_budget_init(&b, 0); /* unlimited */
	assert_int_equal(wt_budget_take(&b, 1ull << 40), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(head), cmocka_unit_test(budget)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
