/*
 * test_keys.c — edge RocksDB key encoding: order, round trips, payloads;
 * plus config loading (hub.urls too) and token lookup.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "edge/config.h"
#include "edge/keys.h"

static void be64_orders_like_numbers(void **state)
{
	uint8_t a[8], b[8];
	edge_be64_put(a, 255);
	edge_be64_put(b, 256);
	assert_true(memcmp(a, b, 8) < 0);
	assert_int_equal(edge_be64_get(b), 256);
	edge_le64_put(a, -5);
	assert_int_equal(edge_le64_get(a), -5);
}

static void rollup_key_round_trip(void **state)
{
	wt_buf k1 = WT_BUF_INIT, k2 = WT_BUF_INIT;
	const char *p, *s, *t;
	const uint8_t *rest;
	size_t rl;
	edge_key_rollup(&k1, "demo", "api", "cpu", 29000000, "main.work");
	edge_key_rollup(&k2, "demo", "api", "cpu", 29000001, "a");
	assert_true(memcmp(k1.data, k2.data, k1.len < k2.len ? k1.len : k2.len) < 0); /* minute first */
	assert_int_equal(edge_key_split(k1.data, k1.len, &p, &s, &t, &rest, &rl), 0);
	assert_string_equal(p, "demo");
	assert_string_equal(s, "api");
	assert_string_equal(t, "cpu");
	assert_int_equal(rl, 8 + strlen("main.work"));
	assert_int_equal(edge_be64_get(rest), 29000000);
	assert_memory_equal(rest + 8, "main.work", 9);
	assert_int_equal(edge_key_split((const uint8_t *)"nonul", 5, &p, &s, &t, &rest, &rl), -1);
	wt_buf_free(&k1);
	wt_buf_free(&k2);
}

static void stack_payload(void **state)
{
	static const uint8_t pl[] = "\x02\x00\x00\x00" "env\0prod\0" "host\0h1\0" "main\0work\0leaf";
	const char *labels[8], *frames[8];
	size_t nl, nf;
	assert_int_equal(edge_stack_payload_parse(pl, sizeof(pl), labels, 4, &nl, frames, 8, &nf), 0);
	assert_int_equal(nl, 2);
	assert_string_equal(labels[2], "host");
	assert_string_equal(labels[3], "h1");
	assert_int_equal(nf, 3);
	assert_string_equal(frames[0], "main");
	assert_string_equal(frames[2], "leaf");
	/* truncated: a label without its value */
	assert_int_equal(edge_stack_payload_parse(pl, 10, labels, 4, &nl, frames, 8, &nf), -1);
	/* more frames than room */
	assert_int_equal(edge_stack_payload_parse(pl, sizeof(pl), labels, 4, &nl, frames, 2, &nf), -1);
}

static void config_load_and_auth(void **state)
{
	char path[] = "/tmp/wt-edge-cfg-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs("edge = { id = \"e9\"; listen = \"0.0.0.0:5050\"; sync = false; workers = 2; };\n"
	      "limits = { max_body_mb = 3; };\n"
	      "projects = ( { name = \"p1\"; upload_tokens = [\"u1\", \"u2\"]; read_tokens = [\"r1\"]; },\n"
	      "             { name = \"p2\"; upload_tokens = [\"u3\"]; } );\n", f);
	fclose(f);
	edge_config c;
	wt_err err = {0};
	edge_config_defaults(&c);
	assert_int_equal(edge_config_load(&c, path, &err), 0);
	assert_string_equal(c.id, "e9");
	assert_string_equal(c.listen_host, "0.0.0.0");
	assert_int_equal(c.listen_port, 5050);
	assert_int_equal(c.sync, 0);
	assert_int_equal(c.max_body, 3u << 20);
	assert_int_equal(c.max_samples, 5000000); /* default kept */
	assert_int_equal(c.rollup_days, 7);
	assert_string_equal(edge_config_auth(&c, "u2", EDGE_ROLE_UPLOAD)->name, "p1");
	assert_string_equal(edge_config_auth(&c, "u3", EDGE_ROLE_UPLOAD)->name, "p2");
	assert_null(edge_config_auth(&c, "r1", EDGE_ROLE_UPLOAD));
	assert_string_equal(edge_config_auth(&c, "r1", EDGE_ROLE_READ)->name, "p1");
	assert_null(edge_config_auth(&c, "u1x", EDGE_ROLE_UPLOAD));
	edge_config_free(&c);

	f = fopen(path, "w");
	fputs("edge = { workers = \"four\"; };\n", f);
	fclose(f);
	edge_config_defaults(&c);
	assert_int_equal(edge_config_load(&c, path, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "workers"));
	assert_non_null(strstr(err.msg, ":1:"));
	edge_config_free(&c);
	unlink(path);
}

/* hub.urls (scale-out): list with failover; hub.url alone = a list of one;
 * both set must agree; every entry https. */
static int load_text(const char *text, edge_config *c, wt_err *err)
{
	char path[] = "/tmp/wt-edge-cfg-XXXXXX";
	int fd = mkstemp(path), rc;
	assert_true(fd >= 0);
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	edge_config_defaults(c);
	rc = edge_config_load(c, path, err);
	unlink(path);
	return rc;
}

static void config_hub_urls(void **state)
{
	edge_config c;
	wt_err err = {0};

	assert_int_equal(load_text("hub = { urls = [\"https://h1:8443\", \"https://h2:8443/\"];"
				   " ca = \"c\"; cert = \"c\"; key = \"k\"; };\n", &c, &err), 0);
	assert_int_equal(c.n_hub_urls, 2);
	assert_string_equal(c.hub_urls[1], "https://h2:8443/");
	assert_string_equal(c.hub_url, "https://h1:8443"); /* the first one */
	edge_config_free(&c);

	assert_int_equal(load_text("hub = { url = \"https://h1:8443\"; urls = [ ];"
				   " ca = \"c\"; cert = \"c\"; key = \"k\"; };\n", &c, &err), 0);
	assert_int_equal(c.n_hub_urls, 1);
	assert_string_equal(c.hub_urls[0], "https://h1:8443");
	edge_config_free(&c);

	assert_int_equal(load_text("hub = { };\n", &c, &err), 0);
	assert_int_equal(c.n_hub_urls, 0);
	edge_config_free(&c);

	assert_int_equal(load_text("hub = { url = \"https://h9:1\"; urls = [\"https://h1:8443\"];"
				   " ca = \"c\"; cert = \"c\"; key = \"k\"; };\n", &c, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "disagree"));
	edge_config_free(&c);

	assert_int_equal(load_text("hub = { urls = [\"https://h1:8443\", \"http://h2:8443\"];"
				   " ca = \"c\"; cert = \"c\"; key = \"k\"; };\n", &c, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "hub.urls[1]"));
	edge_config_free(&c);

	assert_int_equal(load_text("hub = { urls = [\"https://h1:8443\"]; };\n", &c, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "hub.ca"));
	edge_config_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(be64_orders_like_numbers),
		cmocka_unit_test(rollup_key_round_trip),
		cmocka_unit_test(stack_payload),
		cmocka_unit_test(config_load_and_auth),
		cmocka_unit_test(config_hub_urls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
