/*
 * test_params.c — hub parameter parsing (time formats, label filters,
 * errors naming the parameter), version → feature flags, project names and
 * roles, Date encoding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "hub/auth.h"
#include "hub/ch_rows.h"
#include "hub/params.h"
#include "hub/schema.h"

static int parse(const char *qs, hub_params *p, wt_err *e)
{
	/* params borrow from the parsed list: keep it until the next call */
	static struct evkeyvalq q;
	static int used;

	if (used)
		evhttp_clear_headers(&q);
	used = 1;
	if (evhttp_parse_query_str(qs, &q))
		return -100;
	return hub_params_parse(&q, p, e);
}

static void test_times(void **state)
{
	hub_params p;
	wt_err e;
	(void)state;
	assert_int_equal(parse("from=1700000000&until=2023-11-14T22:13:30Z", &p, &e), 0);
	assert_true(p.has_from && p.has_until);
	assert_int_equal(p.from_ns, 1700000000LL * 1000000000LL);
	assert_int_equal(p.until_ns, 1700000010LL * 1000000000LL);
	assert_int_equal(parse("from=2023-11-14T23:13:20%2B01:00", &p, &e), 0);
	assert_int_equal(p.from_ns, 1700000000LL * 1000000000LL);
	assert_int_equal(parse("from=1700000000.25", &p, &e), 0);
	assert_int_equal(p.from_ns, 1700000000250000000LL);
	assert_int_equal(parse("from=soon", &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "from"));
	assert_int_equal(parse("from=200&until=100", &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "until"));
}

static void test_labels(void **state)
{
	hub_params p;
	wt_err e;
	(void)state;
	assert_int_equal(parse("service=api&label.region=eu&span_id=abc&trace_id=t1", &p, &e), 0);
	assert_string_equal(p.service, "api");
	assert_int_equal(p.nlabels, 3);
	assert_string_equal(p.labels[0].key, "region");
	assert_string_equal(p.labels[0].value, "eu");
	assert_string_equal(p.labels[1].key, "span_id");
	assert_string_equal(p.labels[2].key, "trace_id");
	assert_int_equal(parse("label.9x=1", &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "label.9x"));
	assert_int_equal(parse("service=a%01b", &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "service"));
	assert_int_equal(parse("type=a%20b", &p, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "type"));
}

static void test_features(void **state)
{
	hub_ch_features f;
	(void)state;
	assert_int_equal(hub_features_from_version("18.16.1", &f), 0);
	assert_false(f.ttl || f.low_cardinality || f.storage_policies || f.dedup_token);
	assert_int_equal(hub_features_from_version("19.6.2.11", &f), 0);
	assert_true(f.ttl);
	assert_false(f.storage_policies);
	assert_int_equal(hub_features_from_version("23.8.2.7", &f), 0);
	assert_true(f.ttl && f.low_cardinality && f.storage_policies && f.dedup_token);
	assert_int_not_equal(hub_features_from_version("garbage", &f), 0);
}

static void test_names_roles_dates(void **state)
{
	int role;
	(void)state;
	assert_true(hub_project_name_valid("demo"));
	assert_true(hub_project_name_valid("team-a.prod_1"));
	assert_false(hub_project_name_valid("-x"));
	assert_false(hub_project_name_valid("a b"));
	assert_false(hub_project_name_valid(""));
	assert_int_equal(hub_role_parse("DeleteTelemetry", &role), 0);
	assert_int_equal(role, HUB_ROLE_DELETE);
	assert_int_not_equal(hub_role_parse("deletetelemetry", &role), 0);
	assert_int_equal(hub_date_of_ns(1700000000LL * 1000000000LL), 19675);
	assert_int_equal(hub_date_of_ns(0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_names_roles_dates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
