/*
 * test_upload.c — the upload contract (common/upload.c): the label rule
 * (k8s/pod-style keys in, control characters and odd starts out, the
 * limits at their edges), parameter parsing for /v1/profiles and the
 * Pyroscope /ingest dialect, the decode options an upload names, and time
 * placement with and without from=/until= on a profile built by hand
 * whose samples carry times (as JFR and perf script do).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "upload.h"

static void test_label_rule(void **state)
{
	char key[WT_UPLOAD_LABEL_KEY_MAX + 2];
	char *val;
	(void)state;

	assert_true(wt_upload_label_key_valid("k8s/pod"));
	assert_true(wt_upload_label_key_valid("app.kubernetes.io/name"));
	assert_true(wt_upload_label_key_valid("service.name"));
	assert_true(wt_upload_label_key_valid("_private-x"));
	assert_true(wt_upload_label_key_valid("env"));
	assert_false(wt_upload_label_key_valid(""));
	assert_false(wt_upload_label_key_valid(NULL));
	assert_false(wt_upload_label_key_valid("8s"));      /* starts with a digit */
	assert_false(wt_upload_label_key_valid("/pod"));    /* starts with '/' */
	assert_false(wt_upload_label_key_valid("a b"));
	assert_false(wt_upload_label_key_valid("a=b"));
	assert_false(wt_upload_label_key_valid("a\"b"));
	assert_false(wt_upload_label_key_valid("a\nb"));
	memset(key, 'k', sizeof(key));
	key[WT_UPLOAD_LABEL_KEY_MAX] = '\0';
	assert_true(wt_upload_label_key_valid(key));
	key[WT_UPLOAD_LABEL_KEY_MAX] = 'k';
	key[WT_UPLOAD_LABEL_KEY_MAX + 1] = '\0';
	assert_false(wt_upload_label_key_valid(key));

	assert_true(wt_upload_label_value_valid(""));
	assert_true(wt_upload_label_value_valid("web-7f9c {x=y}, ünïcode"));
	assert_false(wt_upload_label_value_valid("a\tb"));
	assert_false(wt_upload_label_value_valid("a\x7f"));
	val = malloc(WT_UPLOAD_LABEL_VALUE_MAX + 2);
	assert_non_null(val);
	memset(val, 'v', WT_UPLOAD_LABEL_VALUE_MAX + 1);
	val[WT_UPLOAD_LABEL_VALUE_MAX] = '\0';
	assert_true(wt_upload_label_value_valid(val));
	val[WT_UPLOAD_LABEL_VALUE_MAX] = 'v';
	val[WT_UPLOAD_LABEL_VALUE_MAX + 1] = '\0';
	assert_false(wt_upload_label_value_valid(val));
	free(val);

	assert_true(wt_upload_service_valid("checkout api/v2"));
	assert_false(wt_upload_service_valid(""));
	assert_false(wt_upload_service_valid("a\rb"));
}

static void test_params_v1(void **state)
{
	wt_upload u;
	wt_err err = {0, ""};
	char k[32];
	int i;
	(void)state;

	wt_upload_init(&u);
	assert_int_equal(wt_upload_param(&u, 0, "service", "api", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "format", "jfr", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "type", "block_delay", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "from", "1700000000", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "until", "2023-11-14T22:14:20Z", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "label.k8s/pod", "web-1", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "label.env", "prod", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "sampleRate", "junk", &err), 0); /* not a /v1 parameter */
	assert_int_equal(wt_upload_finish(&u, &err), 0);
	assert_string_equal(u.service, "api");
	assert_int_equal(u.dec.fmt, WT_FMT_JFR);
	assert_string_equal(u.requested_format, "jfr");
	assert_string_equal(u.dec.type, "block_delay");
	assert_string_equal(u.dec.hint, "block");
	assert_true(u.dec.from_ns == 1700000000000000000LL);
	assert_true(u.dec.until_ns == 1700000060000000000LL);
	assert_int_equal(u.dec.sample_rate, 0);
	assert_int_equal(u.nlabels, 2);
	assert_string_equal(u.labels[0].key, "k8s/pod");
	assert_string_equal(u.labels[1].value, "prod");

	/* errors name the parameter */
	assert_int_equal(wt_upload_param(&u, 0, "label.env", "again", &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "label.env"));
	assert_int_equal(wt_upload_param(&u, 0, "label.a b", "x", &err), WT_EINVAL);
	assert_int_equal(wt_upload_param(&u, 0, "format", "bmp", &err), WT_EFORMAT);
	assert_non_null(strstr(err.msg, "format"));
	assert_int_equal(wt_upload_param(&u, 0, "from", "yesterday", &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "from"));
	assert_int_equal(wt_upload_param(&u, 0, "from", "0", &err), WT_EINVAL);
	assert_int_equal(wt_upload_param(&u, 0, "service", "", &err), WT_EINVAL);
	assert_int_equal(wt_upload_param(&u, 0, "type", "cpu time", &err), WT_EINVAL);
	for (i = 2; i < WT_UPLOAD_MAX_LABELS; i++) {
		snprintf(k, sizeof(k), "label.k%d", i);
		assert_int_equal(wt_upload_param(&u, 0, k, "v", &err), 0);
	}
	assert_int_equal(wt_upload_param(&u, 0, "label.one_more", "v", &err), WT_ELIMIT);
	wt_upload_free(&u);

	/* no service; until before from */
	wt_upload_init(&u);
	assert_int_equal(wt_upload_finish(&u, &err), WT_EINVAL);
	assert_int_equal(wt_upload_param(&u, 0, "service", "s", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "from", "200", &err), 0);
	assert_int_equal(wt_upload_param(&u, 0, "until", "100", &err), 0);
	assert_int_equal(wt_upload_finish(&u, &err), WT_EINVAL);
	assert_non_null(strstr(err.msg, "until"));
	wt_upload_free(&u);

	/* defaults */
	wt_upload_init(&u);
	assert_int_equal(wt_upload_param(&u, 0, "service", "s", &err), 0);
	assert_int_equal(wt_upload_finish(&u, &err), 0);
	assert_int_equal(u.dec.fmt, WT_FMT_AUTO);
	assert_string_equal(u.requested_format, "auto");
	assert_null(u.dec.type);
	assert_null(u.dec.hint);
	wt_upload_free(&u);
}

static void test_params_pyroscope(void **state)
{
	wt_upload u;
	wt_err err = {0, ""};
	(void)state;

	wt_upload_init(&u);
	assert_int_equal(wt_upload_param(&u, 1, "format", "", &err), 0);
	assert_int_equal(u.dec.fmt, WT_FMT_FOLDED);
	assert_int_equal(wt_upload_param(&u, 1, "sampleRate", "100", &err), 0);
	assert_int_equal(wt_upload_param(&u, 1, "units", "bytes", &err), 0);
	assert_int_equal(wt_upload_param(&u, 1, "spyName", "pyspy", &err), 0);
	assert_int_equal(wt_upload_param(&u, 1, "aggregationType", "sum", &err), 0);
	assert_int_equal(wt_upload_param(&u, 1, "sampleRate", "-1", &err), WT_EINVAL);
	assert_int_equal(wt_upload_set_service(&u, "app", &err), 0);
	assert_int_equal(wt_upload_set_type(&u, "alloc_space", &err), 0);
	assert_int_equal(wt_upload_set_hint(&u, "alloc", &err), 0);
	assert_int_equal(wt_upload_finish(&u, &err), 0);
	assert_int_equal(u.dec.sample_rate, 100);
	assert_string_equal(u.dec.units, "bytes");
	assert_string_equal(u.dec.hint, "alloc");
	assert_string_equal(u.dec.type, "alloc_space");
	assert_string_equal(u.spy_name, "pyspy");
	wt_upload_free(&u);
}

static void test_decode_opts(void **state)
{
	wt_upload_decode d = {WT_FMT_FOLDED, "alloc_space", "alloc", "bytes", 99, 0, 0};
	wt_decode_opts o;
	wt_limits lim;
	(void)state;

	wt_limits_default(&lim);
	lim.max_samples = 7;
	wt_upload_decode_opts(&d, &lim, 555, &o);
	assert_int_equal(o.lim.max_samples, 7);
	assert_string_equal(o.type, "alloc_space");
	assert_string_equal(o.hint, "alloc");
	assert_non_null(o.unit);
	assert_string_equal(o.unit, "bytes");
	assert_int_equal(o.sample_rate, 99);
	assert_int_equal(o.time_ns, 555);
	d.from_ns = 1000;
	wt_upload_decode_opts(&d, &lim, 555, &o);
	assert_int_equal(o.time_ns, 1000);
}

/* A profile of three samples; the first two carry times 10 and 25 s after
 * a start at 100 s, the third none. */
static wt_profile *timed_profile(int64_t start)
{
	wt_profile *p = wt_profile_new(NULL);
	wt_err err = {0, ""};
	uint32_t fn, fr, st;
	int64_t v = 1;
	size_t i, ty;

	assert_non_null(p);
	assert_int_equal(wt_profile_add_type(p, "cpu", "samples", NULL, &ty, &err), 0);
	assert_int_equal(wt_profile_add_function_named(p, "main", 4, NULL, &fn, &err), 0);
	assert_int_equal(wt_profile_add_frame(p, &(wt_frame){.function = fn, .mapping = WT_NO_MAPPING}, &fr, &err), 0);
	assert_int_equal(wt_profile_add_stack(p, &fr, 1, &st, &err), 0);
	for (i = 0; i < 3; i++) {
		int64_t t = i == 2 ? 0 : start + (i == 0 ? 10 : 25) * 1000000000LL;
		assert_int_equal(wt_profile_add_sample(p, st, 0, t, &v, &err), 0);
	}
	assert_int_equal(p->nsamples, 3);
	p->time_ns = start;
	return p;
}

static void test_place_times(void **state)
{
	const int64_t s = 1000000000LL, start = 100 * s, from = 5000 * s;
	wt_upload_decode d;
	wt_profile *p;
	(void)state;

	/* from=: moved as a whole, offsets kept, untimed samples untouched */
	memset(&d, 0, sizeof(d));
	d.from_ns = from;
	d.until_ns = from + 60 * s;
	p = timed_profile(start);
	wt_upload_place_times(&d, p, 42);
	assert_true(p->time_ns == from);
	assert_true(p->duration_ns == 60 * s);
	assert_true(p->samples[0].time_ns == from + 10 * s);
	assert_true(p->samples[1].time_ns == from + 25 * s);
	assert_true(p->samples[2].time_ns == 0);
	wt_profile_free(p);

	/* from= on a profile without a start: every timed sample at from */
	memset(&d, 0, sizeof(d));
	d.from_ns = from;
	p = timed_profile(start);
	p->time_ns = 0;
	wt_upload_place_times(&d, p, 42);
	assert_true(p->time_ns == from);
	assert_true(p->samples[0].time_ns == from && p->samples[1].time_ns == from);
	wt_profile_free(p);

	/* no from=: the format's clock stays; without one, received_ns */
	memset(&d, 0, sizeof(d));
	p = timed_profile(start);
	wt_upload_place_times(&d, p, 42);
	assert_true(p->time_ns == start);
	assert_true(p->samples[0].time_ns == start + 10 * s);
	p->time_ns = 0;
	wt_upload_place_times(&d, p, 42);
	assert_true(p->time_ns == 42);
	wt_profile_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_rule),
		cmocka_unit_test(test_params_v1),
		cmocka_unit_test(test_params_pyroscope),
		cmocka_unit_test(test_decode_opts),
		cmocka_unit_test(test_place_times),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
