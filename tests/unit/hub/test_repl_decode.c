/*
 * test_repl_decode.c — hub_repl_decode_upload (hub/repl_decode.c): a
 * replicated upload decoded from its header's options as the edge decoded
 * it, without ClickHouse. Inputs are corpus files and folded text whose
 * figures are known; time placement follows docs/api.md ("from"/"until").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "buf.h"
#include "compress.h"
#include "otlp.h"
#include "hub/repl_decode.h"
#include "textio.h"

#define RECV_NS 1764756000000000000LL

typedef Watchtower__Repl__Upload pb_upload;

/* Decode data with the JSON header hdr_text; returns the decoder's code. */
static int decode(const void *data, size_t len, const char *hdr_text, wt_profile **p, wt_format *det,
		  wt_err *e)
{
	pb_upload u = WATCHTOWER__REPL__UPLOAD__INIT;
	json_t *js = NULL;
	hub_repl_header h;
	wt_limits lim;
	int rc;

	/* the JSON header of edges from before the typed one; these carry
	 * only decode options (no project/service: init says WT_EINVAL but
	 * fills the view) */
	u.header_json.data = (uint8_t *)hdr_text;
	u.header_json.len = strlen(hdr_text);
	(void)hub_repl_header_init(&u, &js, &h);
	assert_non_null(js);
	u.seq = 1;
	u.original.data = (uint8_t *)data;
	u.original.len = len;
	u.received_ns = RECV_NS;
	wt_limits_default(&lim);
	memset(e, 0, sizeof(*e));
	rc = hub_repl_decode_upload(&u, &h, &lim, p, det, e);
	json_decref(js);
	return rc;
}

static int64_t total_of(const wt_profile *p, const char *type)
{
	int t = wt_profile_find_type(p, type);

	assert_true(t >= 0);
	return wt_profile_total(p, (size_t)t);
}

static const char FOLDED[] = "main;work;hash 30\nmain;work;sort 12\nmain;idle 3\n";

static void test_folded_time_placement(void **state)
{
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	(void)state;

	/* no from: the upload's receive time */
	assert_int_equal(decode(FOLDED, strlen(FOLDED), "{\"format\":\"folded\"}", &p, &det, &e), 0);
	assert_int_equal(det, WT_FMT_FOLDED);
	assert_int_equal(p->time_ns, RECV_NS);
	assert_int_equal(total_of(p, "cpu"), 45);
	wt_profile_free(p);

	/* from/until: the profile starts at from and lasts until - from */
	assert_int_equal(decode(FOLDED, strlen(FOLDED),
				"{\"format\":\"folded\",\"from_ns\":1764755940000000000,"
				"\"until_ns\":1764756000000000000}", &p, &det, &e), 0);
	assert_int_equal(p->time_ns, 1764755940000000000LL);
	assert_int_equal(p->duration_ns, 60000000000LL);
	for (size_t i = 0; i < p->nsamples; i++)
		assert_true(p->samples[i].time_ns == 0 || p->samples[i].time_ns >= p->time_ns);
	wt_profile_free(p);
}

static void test_folded_type_units_rate(void **state)
{
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	int t;
	(void)state;

	/* Pyroscope units "objects" are counts (as the edge maps them) */
	assert_int_equal(decode(FOLDED, strlen(FOLDED),
				"{\"format\":\"folded\",\"type\":\"alloc_objects\",\"units\":\"objects\"}", &p, &det,
				&e), 0);
	t = wt_profile_find_type(p, "alloc_objects");
	assert_true(t >= 0);
	assert_string_equal(wt_profile_str(p, p->types[t].unit), "count");
	assert_int_equal(wt_profile_total(p, (size_t)t), 45);
	wt_profile_free(p);

	/* nanoseconds at 100 Hz: each sample is 10 ms */
	assert_int_equal(decode(FOLDED, strlen(FOLDED),
				"{\"format\":\"folded\",\"units\":\"nanoseconds\",\"sample_rate\":100}", &p, &det,
				&e), 0);
	assert_int_equal(total_of(p, "cpu"), 45 * 10000000LL);
	wt_profile_free(p);
}

static void test_pprof_own_time_unless_from(void **state)
{
	char corpus[1024], path[2048];
	char *buf;
	size_t len;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path), "%s/gen/go/go-cpu.pb.gz", wt_test_corpus(corpus, sizeof(corpus)));
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	/* a wrong or absent format name falls back to detection */
	assert_int_equal(decode(buf, len, "{\"format\":\"no-such-format\",\"labels\":{}}", &p, &det, &e), 0);
	assert_int_equal(det, WT_FMT_PPROF);
	assert_true(p->time_ns > 1500000000000000000LL && p->time_ns != RECV_NS);
	assert_int_equal(total_of(p, "samples"), 149); /* go tool pprof -raw */
	wt_profile_free(p);
	/* from/until replace the profile's own clock */
	assert_int_equal(decode(buf, len, "{\"format\":\"pprof\",\"from_ns\":1764755000000000000,"
				     "\"until_ns\":1764755010000000000}", &p, &det, &e), 0);
	assert_int_equal(p->time_ns, 1764755000000000000LL);
	assert_int_equal(p->duration_ns, 10000000000LL);
	wt_profile_free(p);
	free(buf);
}

/* from= on formats whose samples carry times (JFR, perf script): the
 * recording moves as a whole, each sample keeping its offset to the start,
 * exactly as the edge and the hub's direct upload place it
 * (common/upload.c). */
static void test_from_moves_timed_samples(void **state)
{
	static const char *const files[] = {"gen/java/java17-app-profile.jfr",
					    "perf-script/flamegraph__perf-cycles-instructions-01.txt"};
	char corpus[1024], path[2048];
	const int64_t from = 1764700000000000000LL;
	(void)state;

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		wt_profile *own = NULL, *moved = NULL;
		wt_format det;
		wt_err e;
		size_t len, i, timed = 0;
		char *buf;

		snprintf(path, sizeof(path), "%s/%s", wt_test_corpus(corpus, sizeof(corpus)), files[f]);
		buf = wt_test_read_file(path, &len);
		assert_non_null(buf);
		assert_int_equal(decode(buf, len, "{}", &own, &det, &e), 0);
		assert_int_equal(decode(buf, len, "{\"from_ns\":1764700000000000000}", &moved, &det, &e), 0);
		assert_true(moved->time_ns == from);
		assert_int_equal(moved->nsamples, own->nsamples);
		for (i = 0; i < own->nsamples; i++) {
			if (!own->samples[i].time_ns)
				continue;
			timed++;
			assert_true(moved->samples[i].time_ns - from == own->samples[i].time_ns - own->time_ns);
		}
		if (f == 0)
			assert_true(timed > 0); /* JFR samples carry their times */
		wt_profile_free(own);
		wt_profile_free(moved);
		free(buf);
	}
}

static void test_otlp_service_selection(void **state)
{
	char corpus[1024], path[2048], hdr[512];
	char *buf;
	size_t len, i;
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	wt_otlp_result r;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	(void)state;

	snprintf(path, sizeof(path), "%s/otlp/pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb",
		 wt_test_corpus(corpus, sizeof(corpus)));
	buf = wt_test_read_file(path, &len);
	assert_non_null(buf);
	memset(&r, 0, sizeof(r));
	assert_int_equal(wt_otlp_decode((const uint8_t *)buf, len, NULL, &r, &e), 0);
	assert_true(r.n >= 1);
	assert_int_equal(wt_gzip((const uint8_t *)buf, len, 6, &gz, &gzlen, &e), 0);
	for (i = 0; i < r.n; i++) {
		int t = wt_profile_find_type(r.items[i].profile, "cpu");

		snprintf(hdr, sizeof(hdr), "{\"format\":\"otlp\",\"otlp_service\":\"%s\"}", r.items[i].service);
		/* raw and gzip-compressed originals give the same service */
		for (int z = 0; z < 2; z++) {
			assert_int_equal(decode(z ? (const void *)gz : buf, z ? gzlen : len, hdr, &p, &det, &e), 0);
			assert_int_equal(det, WT_FMT_OTLP);
			if (t >= 0)
				assert_int_equal(total_of(p, "cpu"), wt_profile_total(r.items[i].profile, (size_t)t));
			wt_profile_free(p);
			p = NULL;
		}
	}
	/* another name: the request's unknown_service, which the edge names by
	 * the upload's ?service= fallback (edge/otlp_recv.c) */
	assert_int_equal(r.n, 1);
	assert_string_equal(r.items[0].service, WT_OTLP_UNKNOWN_SERVICE);
	assert_int_equal(decode(buf, len, "{\"format\":\"otlp\",\"otlp_service\":\"fallback\"}", &p, &det, &e), 0);
	assert_int_equal(p->nsamples, r.items[0].profile->nsamples);
	wt_profile_free(p);
	p = NULL;
	wt_otlp_result_free(&r);
	free(gz);
	free(buf);
}

static void test_malformed_is_an_error(void **state)
{
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	static const char bad[] = "main;work x\n";
	(void)state;

	assert_int_not_equal(decode(bad, strlen(bad), "{\"format\":\"folded\"}", &p, &det, &e), 0);
	assert_null(p);
	assert_true(e.msg[0] != 0);
	assert_int_not_equal(decode("\x01\x02\x03", 3, "{}", &p, &det, &e), 0);
	assert_null(p);
}

/* Headers from edges older than the upload contract may carry labels the
 * hub's rule refuses (docs/api.md "#### Labels"): such an upload is an
 * error of its own, never decoded and stored with those labels. */
static void test_header_label_rule(void **state)
{
	wt_profile *p = NULL;
	wt_format det;
	wt_err e;
	wt_buf h = WT_BUF_INIT;
	(void)state;

	/* the rule's keys are fine: k8s/pod, app.kubernetes.io/name */
	assert_int_equal(decode(FOLDED, strlen(FOLDED), "{\"format\":\"folded\",\"labels\":{\"k8s/pod\":\"web-1\","
				"\"app.kubernetes.io/name\":\"shop\"}}", &p, &det, &e), 0);
	wt_profile_free(p);
	p = NULL;
	/* a key with a space, one starting with a digit, a value with a control character */
	assert_int_equal(decode(FOLDED, strlen(FOLDED), "{\"format\":\"folded\",\"labels\":{\"bad key\":\"v\"}}",
				&p, &det, &e), WT_EINVAL);
	assert_null(p);
	assert_non_null(strstr(e.msg, "label.bad key"));
	assert_int_equal(decode(FOLDED, strlen(FOLDED), "{\"format\":\"folded\",\"labels\":{\"1x\":\"v\"}}",
				&p, &det, &e), WT_EINVAL);
	assert_int_equal(decode(FOLDED, strlen(FOLDED), "{\"format\":\"folded\",\"labels\":{\"k\":\"a\\u0001b\"}}",
				&p, &det, &e), WT_EINVAL);
	assert_null(p);
	/* more labels than an upload may have */
	wt_buf_puts(&h, "{\"format\":\"folded\",\"labels\":{");
	for (int i = 0; i < 65; i++)
		wt_buf_printf(&h, "%s\"k%d\":\"v\"", i ? "," : "", i);
	wt_buf_puts(&h, "}}");
	wt_buf_putc(&h, '\0');
	assert_int_equal(decode(FOLDED, strlen(FOLDED), (const char *)h.data, &p, &det, &e), WT_ELIMIT);
	assert_null(p);
	assert_non_null(strstr(e.msg, "more than 64 labels"));
	wt_buf_free(&h);
}

/* The typed header: a key given twice is refused as on upload. */
static void test_typed_header_label_rule(void **state)
{
	pb_upload u = WATCHTOWER__REPL__UPLOAD__INIT;
	Watchtower__Repl__UploadHeader t = WATCHTOWER__REPL__UPLOAD_HEADER__INIT;
	Watchtower__Repl__Label l1 = WATCHTOWER__REPL__LABEL__INIT, l2 = WATCHTOWER__REPL__LABEL__INIT;
	Watchtower__Repl__Label *ls[2] = {&l1, &l2};
	json_t *js = NULL;
	hub_repl_header h;
	wt_limits lim;
	wt_profile *p = NULL;
	wt_format det;
	wt_err e = {0, ""};
	(void)state;

	t.project = "demo";
	t.service = "checkout";
	t.format = "folded";
	l1.key = l2.key = "k8s/pod";
	l1.value = "a";
	l2.value = "b";
	t.labels = ls;
	t.n_labels = 2;
	u.header = &t;
	u.original.data = (uint8_t *)FOLDED;
	u.original.len = strlen(FOLDED);
	u.received_ns = RECV_NS;
	assert_int_equal(hub_repl_header_init(&u, &js, &h), 0);
	wt_limits_default(&lim);
	assert_int_equal(hub_repl_decode_upload(&u, &h, &lim, &p, &det, &e), WT_EINVAL);
	assert_null(p);
	assert_non_null(strstr(e.msg, "label.k8s/pod: given twice"));
	t.n_labels = 1;
	assert_int_equal(hub_repl_header_init(&u, &js, &h), 0);
	assert_int_equal(hub_repl_decode_upload(&u, &h, &lim, &p, &det, &e), 0);
	wt_profile_free(p);
	/* a service the rule refuses */
	t.service = "bad\tservice";
	assert_int_equal(hub_repl_header_init(&u, &js, &h), 0);
	assert_int_equal(hub_repl_decode_upload(&u, &h, &lim, &p, &det, &e), WT_EINVAL);
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_time_placement),
		cmocka_unit_test(test_folded_type_units_rate),
		cmocka_unit_test(test_pprof_own_time_unless_from),
		cmocka_unit_test(test_from_moves_timed_samples),
		cmocka_unit_test(test_otlp_service_selection),
		cmocka_unit_test(test_malformed_is_an_error),
		cmocka_unit_test(test_header_label_rule),
		cmocka_unit_test(test_typed_header_label_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
