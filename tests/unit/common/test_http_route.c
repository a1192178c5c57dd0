/*
 * test_http_route.c — the route matcher of common/http_route.c: literal
 * and captured segments, first match wins, 404 versus 405 with the allowed
 * methods, trailing rest wildcard, capture bounds, the Allow header text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "http_route.h"

static const wt_route table[] = {
	{EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, "/healthz", 0, NULL, NULL},
	{EVHTTP_REQ_GET, "/v1/admin/projects", 4, NULL, NULL},
	{EVHTTP_REQ_POST, "/v1/admin/projects", 4, NULL, NULL},
	{EVHTTP_REQ_GET, "/v1/projects/{project}/profiles/insights", 2, NULL, "insights"},
	{EVHTTP_REQ_PATCH, "/v1/projects/{project}/issues/{id}", 2, NULL, NULL},
	{EVHTTP_REQ_GET, "/v1/projects/{project}/profiles/{view}", 2, NULL, NULL},
	{EVHTTP_REQ_GET, "/ui/*", 0, NULL, NULL},
};
#define N (sizeof(table) / sizeof(table[0]))

static void literal_and_captures(void **state)
{
	wt_route_match m;

	(void)state;
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_HEAD, "/healthz", &m), WT_ROUTE_FOUND);
	assert_int_equal(m.index, 0);
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_POST, "/v1/admin/projects", &m), WT_ROUTE_FOUND);
	assert_int_equal(m.index, 2);
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/v1/projects/shop/profiles/insights", &m),
			 WT_ROUTE_FOUND);
	assert_int_equal(m.index, 3); /* before the {view} row */
	assert_string_equal(wt_route_param(&m, "project"), "shop");
	assert_null(wt_route_param(&m, "view"));
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/v1/projects/shop/profiles/table", &m),
			 WT_ROUTE_FOUND);
	assert_int_equal(m.index, 5);
	assert_string_equal(wt_route_param(&m, "view"), "table");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_PATCH, "/v1/projects/p%20q/issues/42", &m),
			 WT_ROUTE_FOUND);
	assert_string_equal(wt_route_param(&m, "project"), "p%20q"); /* as written */
	assert_string_equal(wt_route_param(&m, "id"), "42");
}

static void not_found_and_method(void **state)
{
	wt_route_match m;
	char allow[64];

	(void)state;
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/healthz/", &m), WT_ROUTE_NO_PATH);
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/v1/projects//profiles/x", &m),
			 WT_ROUTE_NO_PATH); /* empty capture */
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/v1/projects/a/b/profiles/x", &m),
			 WT_ROUTE_NO_PATH); /* a capture stops at '/' */
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/v1/projects/a/issues/1/x", &m),
			 WT_ROUTE_NO_PATH);
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_DELETE, "/v1/admin/projects", &m),
			 WT_ROUTE_NO_METHOD);
	assert_null(m.route);
	wt_route_allow_str(m.allowed, allow, sizeof(allow));
	assert_string_equal(allow, "GET, POST");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_POST, "/healthz", &m), WT_ROUTE_NO_METHOD);
	wt_route_allow_str(m.allowed, allow, sizeof(allow));
	assert_string_equal(allow, "GET"); /* HEAD goes with GET */
	wt_route_allow_str(EVHTTP_REQ_GET | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE, allow, sizeof(allow));
	assert_string_equal(allow, "GET, PUT, DELETE");
}

static void rest_and_bounds(void **state)
{
	wt_route_match m;
	char longseg[600];

	(void)state;
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/ui/app.js", &m), WT_ROUTE_FOUND);
	assert_string_equal(m.rest, "app.js");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/ui/a/b", &m), WT_ROUTE_FOUND);
	assert_string_equal(m.rest, "a/b");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/ui/", &m), WT_ROUTE_FOUND);
	assert_string_equal(m.rest, "");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/ui", &m), WT_ROUTE_NO_PATH);
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, "/uix", &m), WT_ROUTE_NO_PATH);
	/* a capture longer than WT_ROUTE_VALUE_MAX - 1 does not match */
	memset(longseg, 'a', sizeof(longseg));
	memcpy(longseg, "/v1/projects/", 13);
	strcpy(longseg + 13 + WT_ROUTE_VALUE_MAX, "/profiles/table");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, longseg, &m), WT_ROUTE_NO_PATH);
	strcpy(longseg + 13 + WT_ROUTE_VALUE_MAX - 1, "/profiles/table");
	assert_int_equal(wt_route_find(table, N, EVHTTP_REQ_GET, longseg, &m), WT_ROUTE_FOUND);
	assert_int_equal(strlen(wt_route_param(&m, "project")), WT_ROUTE_VALUE_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(literal_and_captures),
		cmocka_unit_test(not_found_and_method),
		cmocka_unit_test(rest_and_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
