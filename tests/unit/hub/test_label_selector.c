/*
 * test_label_selector.c — Prometheus-style label selectors
 * (hub/label_selector.c): operators, quoting and escapes, errors naming
 * the position, and the SQL each matcher becomes; and the Connect JSON
 * mapping of hub/connect.c on the Pyroscope messages (names, 64-bit
 * integers as strings, enums by name, defaults left out, round trip with
 * the protobuf encoding).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hub/connect.h"
#include "hub/label_selector.h"
#include "proto/pyroscope_querier.pb-c.h"

static void test_parse_ops(void **state)
{
	hub_lsel s;
	wt_err e;
	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(hub_lsel_parse(" { service_name = \"a\\\"b\", env=~'prod.*' , host!=`h\\1`,k!~\"x|y\", } ",
					&s, &e), 0);
	assert_int_equal(s.n, 4);
	assert_string_equal(s.m[0].name, "service_name");
	assert_string_equal(s.m[0].value, "a\"b");
	assert_int_equal(s.m[0].op, HUB_LM_EQ);
	assert_int_equal(s.m[1].op, HUB_LM_RE);
	assert_string_equal(s.m[1].value, "prod.*");
	assert_int_equal(s.m[2].op, HUB_LM_NE);
	assert_string_equal(s.m[2].value, "h\\1"); /* back quotes: raw */
	assert_int_equal(s.m[3].op, HUB_LM_NRE);
	assert_string_equal(hub_lsel_get(&s, "service_name"), "a\"b");
	assert_null(hub_lsel_get(&s, "env")); /* only "=" matchers */
	hub_lsel_free(&s);
	assert_int_equal(hub_lsel_parse("", &s, &e), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(hub_lsel_parse("{}", &s, &e), 0);
	assert_int_equal(s.n, 0);
	/* keys an upload may store (common/upload.h) can be matched */
	assert_int_equal(hub_lsel_parse("{k8s/pod=\"web-1\", app.kubernetes.io/name!=\"x\", pod-name=~\"a\"}", &s, &e), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.m[0].name, "k8s/pod");
	assert_string_equal(s.m[1].name, "app.kubernetes.io/name");
	assert_int_equal(s.m[1].op, HUB_LM_NE);
	assert_string_equal(s.m[2].name, "pod-name");
	hub_lsel_free(&s);
}

static void test_errors_name_position(void **state)
{
	static const struct { const char *in, *msg; } cases[] = {
		{"service_name=\"a\"", "position 1: expected '{'"},
		{"{service_name=\"a\" env=\"b\"}", "position 19: expected ',' or '}'"},
		{"{service_name=\"a}", "position 15: value opened here is not closed"},
		{"{1a=\"x\"}", "position 2: expected a label name or '}'"},
		{"{a=x}", "position 4: expected a quoted value"},
		{"{a==\"x\"}", "position 4: expected a quoted value"},
		{"{a~\"x\"}", "position 3: expected =, !=, =~ or !~ after \"a\""},
		{"{a=\"x\"} b", "position 9: unexpected text after '}'"},
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hub_lsel s;
		wt_err e = {0, ""};
		memset(&s, 0, sizeof(s));
		assert_int_equal(hub_lsel_parse(cases[i].in, &s, &e), WT_EINVAL);
		assert_string_equal(e.msg, cases[i].msg);
		hub_lsel_free(&s);
	}
}

static void test_sql(void **state)
{
	hub_lsel s;
	wt_err e;
	wt_buf b = WT_BUF_INIT;
	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(hub_lsel_parse("{service_name=\"a'b\", host!=\"h\", env=~\"p.*\", __profile_type__=\"x\","
					" k!~\"z\"}", &s, &e), 0);
	hub_lsel_where(&b, &s);
	wt_buf_putc(&b, '\0');
	assert_string_equal((char *)b.data,
			    " AND service = 'a\\'b' AND host != 'h'"
			    " AND match(labels.value[indexOf(labels.key, 'env')], '^(?:p.*)$')"
			    " AND NOT match(labels.value[indexOf(labels.key, 'k')], '^(?:z)$')");
	wt_buf_free(&b);
	hub_lsel_free(&s);
}

static void test_connect_json(void **state)
{
	Querier__V1__SelectSeriesRequest *q = NULL;
	ProtobufCMessage *m = NULL, *m2 = NULL;
	wt_buf out = WT_BUF_INIT, pb = WT_BUF_INIT;
	wt_err e = {0, ""};
	const char *in = "{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\","
			 "\"label_selector\":\"{}\",\"start\":\"1700000000000\",\"end\":1700000600000,"
			 "\"groupBy\":[\"service_name\",\"host\"],\"step\":15.5,"
			 "\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\",\"unknownField\":{\"x\":1},"
			 "\"stackTraceSelector\":{\"callSite\":[{\"name\":\"main\"}]}}";
	(void)state;
	assert_int_equal(hub_connect_decode(&querier__v1__select_series_request__descriptor, HUB_CONNECT_JSON,
					    (const uint8_t *)in, strlen(in), &m, &e), 0);
	q = (Querier__V1__SelectSeriesRequest *)m;
	assert_string_equal(q->profile_typeid, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	assert_int_equal(q->start, 1700000000000LL);
	assert_int_equal(q->end, 1700000600000LL);
	assert_int_equal(q->n_group_by, 2);
	assert_string_equal(q->group_by[1], "host");
	assert_true(q->step == 15.5);
	assert_int_equal(q->aggregation, TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE);
	assert_int_equal(q->stack_trace_selector->n_call_site, 1);
	/* JSON out: lowerCamelCase, int64 as strings, enum by name, defaults left out */
	assert_int_equal(hub_connect_encode(m, HUB_CONNECT_JSON, &out), 0);
	wt_buf_putc(&out, '\0');
	assert_string_equal((char *)out.data,
			    "{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\",\"labelSelector\":\"{}\","
			    "\"start\":\"1700000000000\",\"end\":\"1700000600000\",\"groupBy\":[\"service_name\",\"host\"],"
			    "\"step\":15.5,\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\","
			    "\"stackTraceSelector\":{\"callSite\":[{\"name\":\"main\"}]}}");
	/* protobuf round trip gives the same JSON */
	assert_int_equal(hub_connect_encode(m, HUB_CONNECT_PROTO, &pb), 0);
	assert_int_equal(hub_connect_decode(&querier__v1__select_series_request__descriptor, HUB_CONNECT_PROTO,
					    pb.data, pb.len, &m2, &e), 0);
	wt_buf_reset(&out);
	assert_int_equal(hub_connect_encode(m2, HUB_CONNECT_JSON, &out), 0);
	wt_buf_putc(&out, '\0');
	assert_non_null(strstr((char *)out.data, "\"end\":\"1700000600000\""));
	protobuf_c_message_free_unpacked(m, NULL);
	protobuf_c_message_free_unpacked(m2, NULL);
	/* errors name the field */
	m = NULL;
	assert_int_equal(hub_connect_decode(&querier__v1__select_series_request__descriptor, HUB_CONNECT_JSON,
					    (const uint8_t *)"{\"groupBy\":[\"a\",3]}", 19, &m, &e), WT_EINVAL);
	assert_string_equal(e.msg, "groupBy[1]: not a valid string value");
	assert_null(m);
	assert_int_equal(hub_connect_decode(&querier__v1__select_series_request__descriptor, HUB_CONNECT_JSON,
					    (const uint8_t *)"{\"aggregation\":\"NOPE\"}", 22, &m, &e), WT_EINVAL);
	assert_string_equal(e.msg, "aggregation: unknown enum value \"NOPE\"");
	assert_int_equal(hub_connect_decode(&querier__v1__select_series_request__descriptor, HUB_CONNECT_PROTO,
					    (const uint8_t *)"\xff\xff", 2, &m, &e), WT_EINVAL);
	assert_string_equal(hub_connect_code(WT_EAUTH), "unauthenticated");
	wt_buf_free(&out);
	wt_buf_free(&pb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ops),
		cmocka_unit_test(test_errors_name_position),
		cmocka_unit_test(test_sql),
		cmocka_unit_test(test_connect_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
