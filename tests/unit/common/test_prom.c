/*
 * test_prom.c — common/prom.c, the Prometheus text writer: exact bytes of
 * families, labelled samples, label escaping, integer and fixed-point
 * values, and a cumulative histogram.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "prom.h"

static void expect(wt_buf *b, const char *want)
{
	assert_false(b->oom);
	assert_int_equal(b->len, strlen(want));
	assert_memory_equal(b->data, want, b->len);
	wt_buf_free(b);
}

static void families(void **state)
{
	wt_buf b = WT_BUF_INIT;

	wt_prom_counter(&b, "wt_x_total", "Things done.", 18446744073709551615ull);
	wt_prom_gauge(&b, "wt_g", "A level.", -3);
	wt_prom_gauge_f(&b, "wt_age_seconds", "Age (-1 never).", 3, -1.0);
	wt_prom_counter_f(&b, "wt_s_total", "Summed seconds.", 6, 1.5);
	expect(&b, "# HELP wt_x_total Things done.\n# TYPE wt_x_total counter\nwt_x_total 18446744073709551615\n"
		   "# HELP wt_g A level.\n# TYPE wt_g gauge\nwt_g -3\n"
		   "# HELP wt_age_seconds Age (-1 never).\n# TYPE wt_age_seconds gauge\nwt_age_seconds -1.000\n"
		   "# HELP wt_s_total Summed seconds.\n# TYPE wt_s_total counter\nwt_s_total 1.500000\n");
}

static void labels_escaped(void **state)
{
	wt_buf b = WT_BUF_INIT;
	const char *kv[] = {"edge", "e\"1\\\n", "incarnation", "abc", NULL};

	wt_prom_family(&b, "wt_r_total", "counter", "By reason.");
	wt_prom_u64(&b, "wt_r_total", "reason", "http_5xx", 7);
	wt_prom_i64(&b, "wt_r_total", NULL, NULL, 2);
	wt_prom_labels_i64(&b, "wt_seq", kv, 42);
	wt_prom_labels_u64(&b, "wt_seq", kv, 43);
	wt_prom_f(&b, "wt_since", "edge", "a", 3, 0.25);
	wt_prom_raw_i64(&b, "wt_rule", "rule=\"r\"", -5);
	expect(&b, "# HELP wt_r_total By reason.\n# TYPE wt_r_total counter\n"
		   "wt_r_total{reason=\"http_5xx\"} 7\n"
		   "wt_r_total 2\n"
		   "wt_seq{edge=\"e\\\"1\\\\\\n\",incarnation=\"abc\"} 42\n"
		   "wt_seq{edge=\"e\\\"1\\\\\\n\",incarnation=\"abc\"} 43\n"
		   "wt_since{edge=\"a\"} 0.250\n"
		   "wt_rule{rule=\"r\"} -5\n");
	wt_prom_escape(&b, "plain");
	expect(&b, "plain");
}

static void histogram(void **state)
{
	wt_buf b = WT_BUF_INIT;
	const double bounds[] = {0.005, 0.1, 1};
	const uint64_t counts[] = {2, 0, 3};

	wt_prom_histogram(&b, "wt_lat_seconds", "Latency.", bounds, counts, 3, 6, 2.5);
	expect(&b, "# HELP wt_lat_seconds Latency.\n# TYPE wt_lat_seconds histogram\n"
		   "wt_lat_seconds_bucket{le=\"0.005\"} 2\n"
		   "wt_lat_seconds_bucket{le=\"0.1\"} 2\n"
		   "wt_lat_seconds_bucket{le=\"1\"} 5\n"
		   "wt_lat_seconds_bucket{le=\"+Inf\"} 6\n"
		   "wt_lat_seconds_sum 2.500000\nwt_lat_seconds_count 6\n");
}

/* Upload label keys as Prometheus label names (recording rules' series). */
static void label_names(void **state)
{
	wt_buf b = WT_BUF_INIT;

	(void)state;
	wt_prom_label_name(&b, "k8s/pod");
	wt_buf_putc(&b, ' ');
	wt_prom_label_name(&b, "app.kubernetes.io/name-x_y");
	expect(&b, "k8s_pod app_kubernetes_io_name_x_y");
	assert_true(wt_prom_label_name_eq("k8s/pod", "k8s_pod"));
	assert_true(wt_prom_label_name_eq("a.b", "a-b"));
	assert_false(wt_prom_label_name_eq("k8s/pod", "k8s/po"));
	assert_false(wt_prom_label_name_eq("host", "hosts"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(families),
		cmocka_unit_test(labels_escaped),
		cmocka_unit_test(histogram),
		cmocka_unit_test(label_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
