/*
 * test_pyroscope.c — Pyroscope name{labels} and multipart/form-data parsing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "edge/pyroscope.h"

static void name_with_type_and_labels(void **state)
{
	edge_pyro_name n;
	wt_err err = {0};
	assert_int_equal(edge_pyro_parse_name("my.app.cpu{env=prod, region = eu-1 ,}", &n, &err), 0);
	assert_string_equal(n.service, "my.app");
	assert_string_equal(n.type, "cpu");
	assert_int_equal(n.nlabels, 2);
	assert_string_equal(n.labels[0], "env");
	assert_string_equal(n.labels[1], "prod");
	assert_string_equal(n.labels[2], "region");
	assert_string_equal(n.labels[3], "eu-1");
	assert_string_equal(edge_pyro_type_hint("inuse_space"), "inuse");
}

static void name_without_known_suffix(void **state)
{
	edge_pyro_name n;
	wt_err err = {0};
	assert_int_equal(edge_pyro_parse_name("backend.server", &n, &err), 0);
	assert_string_equal(n.service, "backend.server");
	assert_null(n.type);
	assert_int_equal(n.nlabels, 0);
	assert_int_equal(edge_pyro_parse_name("app.alloc_space{}", &n, &err), 0);
	assert_string_equal(n.service, "app");
	assert_string_equal(n.type, "alloc_space");
}

static void name_errors(void **state)
{
	edge_pyro_name n;
	wt_err err = {0};
	assert_int_equal(edge_pyro_parse_name("app.cpu{env=prod", &n, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "byte 7"));
	assert_int_equal(edge_pyro_parse_name("app.cpu{env}", &n, &err), WT_EINVAL);
	assert_int_equal(edge_pyro_parse_name("app.cpu{=x}", &n, &err), WT_EINVAL);
	assert_int_equal(edge_pyro_parse_name("app.cpu{a b=x}", &n, &err), WT_EINVAL);
	assert_int_equal(edge_pyro_parse_name("app.cpu{a=b}x", &n, &err), WT_EINVAL);
	assert_int_equal(edge_pyro_parse_name("", &n, &err), WT_EINVAL);
	assert_int_equal(edge_pyro_parse_name("{a=b}", &n, &err), WT_EINVAL);
}

static void boundary(void **state)
{
	char b[80];
	assert_int_equal(edge_mp_boundary("multipart/form-data; boundary=abc123", b, sizeof(b)), 0);
	assert_string_equal(b, "abc123");
	assert_int_equal(edge_mp_boundary("multipart/form-data; charset=x; boundary=\"q u\"", b, sizeof(b)), 0);
	assert_string_equal(b, "q u");
	assert_int_equal(edge_mp_boundary("application/octet-stream", b, sizeof(b)), WT_EINVAL);
	assert_int_equal(edge_mp_boundary("multipart/form-data", b, sizeof(b)), WT_EINVAL);
}

static void multipart_parts(void **state)
{
	static const char body[] =
		"preamble\r\n--XyZ\r\n"
		"Content-Disposition: form-data; name=\"profile\"; filename=\"p.pprof\"\r\n"
		"Content-Type: application/octet-stream\r\n\r\n"
		"\x01\x02\r\n--not-the-boundary\x03\r\n"
		"--XyZ\r\n"
		"Content-Disposition: form-data; name=sample_type_config\r\n\r\n"
		"{\"cpu\":{}}\r\n"
		"--XyZ--\r\n";
	edge_mp_part parts[EDGE_MP_MAX_PARTS];
	size_t n = 0;
	wt_err err = {0};
	assert_int_equal(edge_mp_parse((const uint8_t *)body, sizeof(body) - 1, "XyZ", parts, &n, &err), 0);
	assert_int_equal(n, 2);
	const edge_mp_part *p = edge_mp_find(parts, n, "profile");
	assert_non_null(p);
	assert_int_equal(p->len, 23);
	assert_memory_equal(p->data, "\x01\x02\r\n--not-the-boundary\x03", 23);
	p = edge_mp_find(parts, n, "sample_type_config");
	assert_non_null(p);
	assert_int_equal(p->len, 10);
	assert_null(edge_mp_find(parts, n, "prev_profile"));
}

static void multipart_errors(void **state)
{
	edge_mp_part parts[EDGE_MP_MAX_PARTS];
	size_t n;
	wt_err err = {0};
	static const char unterminated[] = "--B\r\nContent-Disposition: form-data; name=\"profile\"\r\n\r\ndata without end";
	assert_int_equal(edge_mp_parse((const uint8_t *)unterminated, sizeof(unterminated) - 1, "B", parts, &n, &err),
			 WT_EINVAL);
	assert_non_null(strstr(err.msg, "closing boundary"));
	static const char nob[] = "no boundary at all";
	assert_int_equal(edge_mp_parse((const uint8_t *)nob, sizeof(nob) - 1, "B", parts, &n, &err), WT_EINVAL);
	static const char noname[] = "--B\r\nContent-Type: x\r\n\r\nd\r\n--B--\r\n";
	assert_int_equal(edge_mp_parse((const uint8_t *)noname, sizeof(noname) - 1, "B", parts, &n, &err), WT_EINVAL);
	static const char noheaders[] = "--B\r\nContent-Disposition: form-data; name=\"a\"";
	assert_int_equal(edge_mp_parse((const uint8_t *)noheaders, sizeof(noheaders) - 1, "B", parts, &n, &err),
			 WT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(name_with_type_and_labels), cmocka_unit_test(name_without_known_suffix),
		cmocka_unit_test(name_errors),               cmocka_unit_test(boundary),
		cmocka_unit_test(multipart_parts),           cmocka_unit_test(multipart_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
