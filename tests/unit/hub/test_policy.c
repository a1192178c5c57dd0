/*
 * test_policy.c — hub/policy.c: validation errors name the JSON path,
 * effective rules per edge (edge overrides, edge service rules first),
 * and the change summary written to the audit log. Expected values are
 * written out by hand from the policy format in docs/api.md.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hub/policy.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	if (!j)
		fail_msg("bad test JSON: %s", e.text);
	return j;
}

static void expect_bad(const char *doc, const char *path)
{
	wt_err err = {0, ""};
	json_t *j = J(doc);
	assert_int_equal(hub_policy_validate(j, &err), WT_EINVAL);
	if (!strstr(err.msg, path))
		fail_msg("error \"%s\" does not name %s", err.msg, path);
	json_decref(j);
}

static void test_validate(void **state)
{
	wt_err err = {0, ""};
	json_t *ok = J("{\"version\":1,\"rules\":{\"sample_types\":{\"cpu\":true,\"offcpu\":false},"
		       "\"ebpf\":{\"enabled\":true,\"frequency_hz\":99},\"offcpu\":{\"enabled\":true,\"threshold_us\":0},"
		       "\"services\":[{\"match\":{\"service\":\"api-*\"},\"ebpf\":{\"frequency_hz\":49,\"python\":false,\"lock\":false,\"lock_address\":true,\"alloc\":true,\"unwind\":\"fp\"}},"
		       "{\"match\":{\"label\":{\"team\":\"db\"}},\"ebpf\":{\"unwind\":\"eh_frame\"}}]},"
		       "\"limits\":{\"max_body\":1024,\"max_samples\":1},"
		       "\"edges\":{\"e1\":{\"rules\":{\"ebpf\":{\"frequency_hz\":19}},\"limits\":{\"max_samples\":5}}}}");
	(void)state;
	assert_int_equal(hub_policy_validate(ok, &err), 0);
	json_decref(ok);
	expect_bad("[]", "policy");
	expect_bad("{}", "version");
	expect_bad("{\"version\":2}", "version");
	expect_bad("{\"version\":1,\"x\":1}", "x: unknown key");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"frequency_hz\":10001}}}", "rules.ebpf.frequency_hz");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"hz\":1}}}", "rules.ebpf.hz");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"python\":1}}}", "rules.ebpf.python");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"lock\":\"yes\"}}}", "rules.ebpf.lock");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"lock_address\":1}}}", "rules.ebpf.lock_address");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"alloc\":1}}}", "rules.ebpf.alloc");
	expect_bad("{\"version\":1,\"rules\":{\"ebpf\":{\"unwind\":\"dwarf\"}}}", "rules.ebpf.unwind");
	expect_bad("{\"version\":1,\"rules\":{\"services\":[{\"match\":{\"service\":\"a\"},\"ebpf\":{\"unwind\":1}}]}}",
		   "rules.services[0].ebpf.unwind");
	expect_bad("{\"version\":1,\"rules\":{\"sample_types\":{\"cpu\":1}}}", "rules.sample_types.cpu");
	expect_bad("{\"version\":1,\"rules\":{\"sample_types\":{\"cycles\":true}}}", "rules.sample_types.cycles");
	expect_bad("{\"version\":1,\"rules\":{\"services\":[{\"match\":{}}]}}", "rules.services[0].match");
	expect_bad("{\"version\":1,\"rules\":{\"services\":[{\"match\":{\"label\":{\"k\":1}}}]}}",
		   "rules.services[0].match.label.k");
	expect_bad("{\"version\":1,\"limits\":{\"max_body\":1023}}", "limits.max_body");
	expect_bad("{\"version\":1,\"edges\":{\"e1\":{\"limits\":{\"max_samples\":0}}}}", "edges.e1.limits.max_samples");
	expect_bad("{\"version\":1,\"edges\":{\"e1\":{\"rules\":{\"offcpu\":{\"threshold_us\":-1}}}}}",
		   "edges.e1.rules.offcpu.threshold_us");
}

static void test_effective(void **state)
{
	json_t *doc = J("{\"version\":1,\"rules\":{\"ebpf\":{\"enabled\":true,\"frequency_hz\":99},"
			"\"services\":[{\"match\":{\"service\":\"p\"}}]},\"limits\":{\"max_body\":2048},"
			"\"edges\":{\"e1\":{\"rules\":{\"ebpf\":{\"frequency_hz\":19},\"services\":[{\"match\":"
			"{\"service\":\"e\"}}]},\"limits\":{\"max_samples\":7}}}}");
	json_t *e1 = hub_policy_effective(doc, "e1"), *e2 = hub_policy_effective(doc, "e2");
	json_t *want1 = J("{\"sample_types\":{},\"ebpf\":{\"enabled\":true,\"frequency_hz\":19},\"offcpu\":{},"
			  "\"services\":[{\"match\":{\"service\":\"e\"}},{\"match\":{\"service\":\"p\"}}],"
			  "\"limits\":{\"max_body\":2048,\"max_samples\":7}}");
	json_t *want2 = J("{\"sample_types\":{},\"ebpf\":{\"enabled\":true,\"frequency_hz\":99},\"offcpu\":{},"
			  "\"services\":[{\"match\":{\"service\":\"p\"}}],\"limits\":{\"max_body\":2048}}");
	(void)state;
	assert_true(json_equal(e1, want1));
	assert_true(json_equal(e2, want2));
	json_decref(doc);
	json_decref(e1);
	json_decref(e2);
	json_decref(want1);
	json_decref(want2);
}

static void test_diff(void **state)
{
	json_t *a = J("{\"version\":1,\"rules\":{\"ebpf\":{\"frequency_hz\":99}},\"limits\":{\"max_body\":2048}}");
	json_t *b = J("{\"version\":1,\"rules\":{\"ebpf\":{\"frequency_hz\":49}},\"edges\":{}}");
	wt_buf out = WT_BUF_INIT;
	(void)state;
	hub_policy_diff(a, b, &out, 1000);
	wt_buf_putc(&out, '\0');
	assert_string_equal((const char *)out.data,
			    "rules.ebpf.frequency_hz: 99 -> 49; limits: removed (was {\"max_body\":2048}); edges: added {}");
	wt_buf_reset(&out);
	hub_policy_diff(a, a, &out, 1000);
	wt_buf_putc(&out, '\0');
	assert_string_equal((const char *)out.data, "no change");
	wt_buf_free(&out);
	json_decref(a);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_effective),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
