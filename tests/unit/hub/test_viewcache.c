/*
 * test_viewcache.c — the rendered-view cache of hub/viewcache.c: a hit
 * needs the key and the fingerprint, a put replaces the key's entry, the
 * byte bound evicts the least recently used entry, oversized texts are not
 * kept, a zero bound means no cache, and /metrics counts hits and misses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hub/viewcache.h"

static int has(hub_viewcache *c, const char *key, uint64_t fp, const char *want)
{
	char *t;
	size_t n;
	int hit = hub_viewcache_get(c, key, fp, &t, &n);

	if (hit) {
		assert_int_equal(n, strlen(want));
		assert_string_equal(t, want);
	}
	free(t);
	return hit;
}

static void test_hit_needs_fingerprint(void **state)
{
	hub_viewcache *c = hub_viewcache_new(1 << 20);
	size_t bytes, n;

	(void)state;
	hub_viewcache_put(c, "k1", 7, "{\"a\":1}", 7);
	assert_true(has(c, "k1", 7, "{\"a\":1}"));
	assert_false(has(c, "k1", 8, ""));
	assert_false(has(c, "k2", 7, ""));
	/* a put replaces the key's entry */
	hub_viewcache_put(c, "k1", 8, "{\"a\":2}", 7);
	assert_false(has(c, "k1", 7, ""));
	assert_true(has(c, "k1", 8, "{\"a\":2}"));
	hub_viewcache_usage(c, &bytes, &n);
	assert_int_equal(n, 1);
	hub_viewcache_free(c);
}

static void test_bound_evicts_least_recent(void **state)
{
	hub_viewcache *c = hub_viewcache_new(4000);
	char text[700];
	size_t bytes, n;

	(void)state;
	memset(text, 'x', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	hub_viewcache_put(c, "a", 1, text, strlen(text));
	hub_viewcache_put(c, "b", 1, text, strlen(text));
	hub_viewcache_put(c, "c", 1, text, strlen(text));
	hub_viewcache_put(c, "d", 1, text, strlen(text));
	assert_true(has(c, "a", 1, text)); /* a is now the most recent */
	hub_viewcache_put(c, "e", 1, text, strlen(text));
	hub_viewcache_put(c, "f", 1, text, strlen(text));
	hub_viewcache_usage(c, &bytes, &n);
	assert_true(bytes <= 4000);
	assert_true(has(c, "a", 1, text));
	assert_true(has(c, "f", 1, text));
	assert_false(has(c, "b", 1, text));
	/* over a quarter of the bound: not kept */
	{
		char big[1200];
		memset(big, 'y', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		hub_viewcache_put(c, "big", 1, big, strlen(big));
		assert_false(has(c, "big", 1, big));
	}
	hub_viewcache_free(c);
}

static void test_zero_bound_is_off(void **state)
{
	char *t = (char *)1;
	size_t n = 1;

	(void)state;
	assert_null(hub_viewcache_new(0));
	hub_viewcache_put(NULL, "k", 1, "x", 1);
	assert_int_equal(hub_viewcache_get(NULL, "k", 1, &t, &n), 0);
	assert_null(t);
	hub_viewcache_free(NULL);
}

static void test_metrics_count_lookups(void **state)
{
	hub_viewcache *c = hub_viewcache_new(1 << 20);
	wt_buf out = WT_BUF_INIT;

	(void)state;
	hub_viewcache_put(c, "k", 1, "{}", 2);
	assert_true(has(c, "k", 1, "{}"));
	assert_true(has(c, "k", 1, "{}"));
	assert_false(has(c, "k", 2, ""));
	assert_int_equal(hub_viewcache_metrics_render(c, &out), 0);
	assert_int_equal(wt_buf_putc(&out, '\0'), 0);
	assert_non_null(strstr((const char *)out.data, "\nwt_hub_view_cache_hits_total 2\n"));
	assert_non_null(strstr((const char *)out.data, "\nwt_hub_view_cache_misses_total 1\n"));
	assert_non_null(strstr((const char *)out.data, "\nwt_hub_view_cache_entries 1\n"));
	/* no cache: zeros, still rendered */
	wt_buf_reset(&out);
	assert_int_equal(hub_viewcache_metrics_render(NULL, &out), 0);
	assert_int_equal(wt_buf_putc(&out, '\0'), 0);
	assert_non_null(strstr((const char *)out.data, "\nwt_hub_view_cache_hits_total 0\n"));
	wt_buf_free(&out);
	hub_viewcache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hit_needs_fingerprint),
		cmocka_unit_test(test_bound_evicts_least_recent),
		cmocka_unit_test(test_zero_bound_is_off),
		cmocka_unit_test(test_metrics_count_lookups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
