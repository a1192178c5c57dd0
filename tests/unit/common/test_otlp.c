/*
 * test_otlp.c — OTLP profiles decoder against the real captures in
 * tests/corpus/otlp.
 *
 * Reference: tests/tools/otlp_ref.py, a separate reader that walks the
 * protobuf wire format in Python (no generated code, none of ours) and
 * prints, per OTLP profile, its sample type, period and the raw sum of its
 * sample values split by service. The test applies the documented type
 * mapping (samples/count with a cpu/nanoseconds period → cpu = count ×
 * period; events/nanoseconds → offcpu) and requires exact equality of
 * every (service, type) total. The 1.10.0 capture, published only as
 * protojson, is re-encoded with Google's protobuf library first. The deliberately corrupted 1.7.0 and 1.8.0
 * captures must be rejected with WT_EINVAL naming the bad field; protojson
 * (OTLP/JSON) decodes to exactly what the binary encoding of the same
 * request gives (Google's re-encoding for 1.10.0, the published .pb for
 * 1.8.0); truncations and byte flips must never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "otlp.h"
#include "profile.h"
#include "textio.h"

static char g_corpus[700];

static const char *const good[] = {
	"pyroscope__otel-ebpf-profiler_otlp-1.5.0-offcpu.pb",
	"pyroscope__otel-ebpf-profiler_otlp-1.5.0-symbolized.pb",
	"pyroscope__otel-ebpf-profiler_otlp-1.5.0-unsymbolized.pb",
	"pyroscope__otel-ebpf-profiler_otlp-1.7.0-unsymbolized.pb",
	"pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb",
};

static uint8_t *load(const char *name, size_t *len)
{
	char path[1024];
	uint8_t *b;

	snprintf(path, sizeof(path), "%s/otlp/%s", g_corpus, name);
	b = (uint8_t *)wt_test_read_file(path, len);
	if (!b)
		fail_msg("cannot read %s", path);
	return b;
}

/* name: a corpus file under otlp/, or an absolute path */
static json_t *reference(const char *name)
{
	char cmd[2048];
	json_error_t je;
	int st;
	char *out;
	json_t *j;

	if (name[0] == '/')
		snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/otlp_ref.py %s", wt_test_root(), name);
	else
		snprintf(cmd, sizeof(cmd), "python3 %s/tests/tools/otlp_ref.py %s/otlp/%s",
			 wt_test_root(), g_corpus, name);
	out = wt_test_cmd_output(cmd, &st);
	j = json_loads(out, 0, &je);
	if (st != 0 || !j)
		fail_msg("reference failed (%d): %s", st, je.text);
	free(out);
	return j;
}

static const wt_otlp_item *item_of(const wt_otlp_result *r, const char *svc)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->items[i].service, svc))
			return &r->items[i];
	return NULL;
}

/* Expected total per (service, canonical type) from the reference. */
typedef struct exp_ent {
	char svc[128], type[32];
	int64_t total;
} exp_ent;

static size_t expected(json_t *ref, exp_ent *e, size_t max)
{
	size_t n = 0, i;
	json_t *p;

	json_array_foreach(json_object_get(ref, "profiles"), i, p) {
		json_t *st = json_array_get(json_object_get(p, "sample_types"), 0);
		json_t *pt = json_object_get(p, "period_type");
		const char *t = json_string_value(json_array_get(st, 0));
		const char *u = json_string_value(json_array_get(st, 1));
		const char *ptt = json_is_array(pt) ? json_string_value(json_array_get(pt, 0)) : "";
		int64_t period = json_integer_value(json_object_get(p, "period")), mul = 1;
		const char *canon = t, *svc;
		json_t *v;

		if (!strcmp(t, "samples") && !strcmp(u, "count") && !strcmp(ptt, "cpu")) {
			canon = "cpu";
			mul = period > 0 ? period : 1;
		} else if ((!strcmp(t, "events") && !strcmp(u, "nanoseconds") && !*ptt) ||
			   !strcmp(t, "off_cpu")) {
			canon = "offcpu";
		}
		json_object_foreach(json_object_get(p, "by_service"), svc, v) {
			size_t k;
			for (k = 0; k < n; k++)
				if (!strcmp(e[k].svc, svc) && !strcmp(e[k].type, canon))
					break;
			if (k == n) {
				assert_true(n < max);
				snprintf(e[n].svc, sizeof(e[n].svc), "%s", svc);
				snprintf(e[n].type, sizeof(e[n].type), "%s", canon);
				e[n++].total = 0;
			}
			e[k].total += json_integer_value(v) * mul;
		}
	}
	return n;
}

/* Decode file (corpus name or absolute path) and compare every (service,
 * type) total with the reference; version: the layout it must be read as. */
static void check_totals(const char *file, const char *version)
{
	const char *files[] = {file};
	{
		size_t f = 0, len, n, k;
		uint8_t *b;
		json_t *ref = reference(files[f]);

		if (file[0] == '/') {
			b = (uint8_t *)wt_test_read_file(file, &len);
			assert_non_null(b);
		} else {
			b = load(file, &len);
		}
		exp_ent e[32];
		wt_otlp_result r;
		wt_err err = {0};
		int rc = wt_otlp_decode(b, len, NULL, &r, &err);

		if (rc)
			fail_msg("%s: %s", files[f], err.msg);
		assert_string_equal(r.version, version);
		assert_int_equal(r.nprofiles, json_array_size(json_object_get(ref, "profiles")));
		n = expected(ref, e, 32);
		assert_true(n > 0);
		for (k = 0; k < n; k++) {
			const wt_otlp_item *it = item_of(&r, e[k].svc);
			int ti;
			if (!it)
				fail_msg("%s: no service %s", files[f], e[k].svc);
			ti = wt_profile_find_type(it->profile, e[k].type);
			if (ti < 0)
				fail_msg("%s: service %s has no type %s", files[f], e[k].svc, e[k].type);
			if (wt_profile_total(it->profile, (size_t)ti) != e[k].total)
				fail_msg("%s: %s/%s total %lld, reference %lld", files[f], e[k].svc,
					 e[k].type, (long long)wt_profile_total(it->profile, (size_t)ti),
					 (long long)e[k].total);
		}
		/* nothing beyond the reference: every item's every type is expected */
		for (size_t i = 0; i < r.n; i++)
			for (size_t t = 0; t < r.items[i].profile->ntypes; t++) {
				const char *cn = wt_profile_str(r.items[i].profile,
								r.items[i].profile->types[t].canonical);
				for (k = 0; k < n; k++)
					if (!strcmp(e[k].svc, r.items[i].service) && !strcmp(e[k].type, cn))
						break;
				if (k == n)
					fail_msg("%s: unexpected %s/%s", files[f], r.items[i].service, cn);
			}
		wt_otlp_result_free(&r);
		json_decref(ref);
		free(b);
	}
}

static void test_corpus_totals(void **state)
{
	for (size_t f = 0; f < sizeof(good) / sizeof(good[0]); f++) {
		const char *v = strstr(good[f], "_otlp-");
		char ver[8];
		assert_non_null(v);
		snprintf(ver, sizeof(ver), "%.3s", v + 6); /* "1.5", "1.7", "1.8" */
		check_totals(good[f], ver);
	}
}

/* The 1.10.0 capture exists only as protojson: re-encode it with Google's
 * protobuf library (tests/tools/otlp_json2pb.py) and read the binary. */
static void test_1_10_from_json(void **state)
{
	char out[] = "/tmp/wt-otlp-1.10-XXXXXX", cmd[2048];
	int fd = mkstemp(out), st;
	char *o;

	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/tools/otlp_json2pb.py "
		 "%s/otlp/pyroscope__otel-ebpf-profiler_otlp-1.10.0.json %s 2>&1", wt_test_root(),
		 g_corpus, out);
	o = wt_test_cmd_output(cmd, &st);
	if (st != 0) {
		unlink(out);
		fail_msg("otlp_json2pb.py failed (protobuf-compiler / python3-protobuf missing? "
			 "run appliance/install-deps): %s", o);
	}
	free(o);
	check_totals(out, "1.10");
	unlink(out);
}

/* Two decodings give the same services, types, totals, rows and stacks. */
static void assert_same_result(const wt_otlp_result *a, const wt_otlp_result *b)
{
	assert_int_equal(a->n, b->n);
	assert_string_equal(a->version, b->version);
	assert_int_equal(a->nprofiles, b->nprofiles);
	for (size_t i = 0; i < a->n; i++) {
		const wt_profile *x = a->items[i].profile, *y = b->items[i].profile;
		assert_string_equal(a->items[i].service, b->items[i].service);
		assert_int_equal(x->ntypes, y->ntypes);
		assert_int_equal(x->nsamples, y->nsamples);
		assert_int_equal(x->nstacks, y->nstacks);
		assert_int_equal(x->nframes, y->nframes);
		for (size_t t = 0; t < x->ntypes; t++) {
			assert_string_equal(wt_profile_str(x, x->types[t].canonical),
					    wt_profile_str(y, y->types[t].canonical));
			assert_int_equal(wt_profile_total(x, t), wt_profile_total(y, t));
		}
	}
}

/* OTLP/JSON read directly (common/protojson.c) against the binary of the
 * same request: the 1.10.0 capture re-encoded by Google's protobuf library
 * (tests/tools/otlp_json2pb.py), the 1.8.0 capture published as both. */
static void test_json_equals_binary(void **state)
{
	char out[] = "/tmp/wt-otlp-json-XXXXXX", cmd[2048];
	int fd = mkstemp(out), st;
	size_t lj, lb;
	uint8_t *j, *b;
	wt_otlp_result rj, rb;
	wt_err err = {0};
	char *o;

	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/tools/otlp_json2pb.py "
		 "%s/otlp/pyroscope__otel-ebpf-profiler_otlp-1.10.0.json %s 2>&1", wt_test_root(),
		 g_corpus, out);
	o = wt_test_cmd_output(cmd, &st);
	if (st != 0) {
		unlink(out);
		fail_msg("otlp_json2pb.py failed: %s", o);
	}
	free(o);
	b = (uint8_t *)wt_test_read_file(out, &lb);
	unlink(out);
	j = load("pyroscope__otel-ebpf-profiler_otlp-1.10.0.json", &lj);
	assert_non_null(b);
	if (wt_otlp_decode(j, lj, NULL, &rj, &err))
		fail_msg("1.10.0 json: %s", err.msg);
	assert_int_equal(wt_otlp_decode(b, lb, NULL, &rb, &err), 0);
	assert_string_equal(rj.version, "1.10");
	assert_same_result(&rj, &rb);
	wt_otlp_result_free(&rj);
	wt_otlp_result_free(&rb);
	free(j);
	free(b);

	j = load("pyroscope__otel-ebpf-profiler_otlp-1.8.0.json", &lj);
	b = load("pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb", &lb);
	if (wt_otlp_decode(j, lj, NULL, &rj, &err))
		fail_msg("1.8.0 json: %s", err.msg);
	assert_int_equal(wt_otlp_decode(b, lb, NULL, &rb, &err), 0);
	assert_same_result(&rj, &rb);
	wt_otlp_result_free(&rj);
	wt_otlp_result_free(&rb);
	free(j);
	free(b);
}

/* Mapping details on the 1.8.0 capture: per-sample times, labels from
 * attributes, unsymbolized native frames with build ids. */
static void test_mapping_1_8(void **state)
{
	size_t len, i, with_thread = 0, with_time = 0, unsym_bid = 0;
	uint8_t *b = load("pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb", &len);
	wt_otlp_result r;
	wt_err err = {0};
	const wt_profile *p;

	assert_int_equal(wt_otlp_decode(b, len, NULL, &r, &err), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.items[0].service, WT_OTLP_UNKNOWN_SERVICE);
	assert_int_equal(r.items[0].nprofiles, 5);
	p = r.items[0].profile;
	assert_true(p->time_ns > 1700000000LL * 1000000000LL);
	for (i = 0; i < p->nsamples; i++) {
		if (wt_profile_label_str(p, p->samples[i].labelset, "thread"))
			with_thread++;
		if (p->samples[i].time_ns >= p->time_ns)
			with_time++;
	}
	assert_int_equal(with_thread, p->nsamples);
	assert_int_equal(with_time, p->nsamples);
	for (i = 0; i < p->nframes; i++)
		if (p->frames[i].function == WT_NO_FUNCTION && p->frames[i].mapping != WT_NO_MAPPING &&
		    p->mappings[p->frames[i].mapping].build_id)
			unsym_bid++;
	assert_true(unsym_bid > 0);
	wt_otlp_result_free(&r);
	free(b);
}

static void expect_reject(const char *name, const char *needle)
{
	size_t len;
	uint8_t *b = load(name, &len);
	wt_otlp_result r;
	wt_err err = {0};
	int rc = wt_otlp_decode(b, len, NULL, &r, &err);

	assert_int_equal(rc, WT_EINVAL);
	assert_int_equal(r.n, 0);
	if (!strstr(err.msg, needle))
		fail_msg("%s: message \"%s\" does not name %s", name, err.msg, needle);
	free(b);
}

static void test_corrupted(void **state)
{
	expect_reject("pyroscope__otel-ebpf-profiler_otlp-1.8.0-corrupted.pb", "stack_index");
	/* upstream calls it a corrupted function index; the out-of-range value
	 * (1000000000) sits in Profile.location_indices */
	expect_reject("pyroscope__async-profiler-otlp-1.7.0-corrupted-function-idx.pb",
		      "location_indices[");
}

static void test_json_and_format(void **state)
{
	size_t len;
	uint8_t *b = load("pyroscope__otel-ebpf-profiler_otlp-1.8.0.json", &len);
	wt_otlp_result r;
	wt_err err = {0};
	wt_profile *p = NULL;
	wt_format det;
	json_t *ref;
	int64_t cpu = 0;
	size_t i;

	assert_int_equal(wt_otlp_decode(b, len, NULL, &r, &err), 0);
	assert_string_equal(r.version, "1.8");
	assert_int_equal(r.nprofiles, 5);
	wt_otlp_result_free(&r);
	free(b);
	/* through wt_format_decode (auto-detected): the merged profile */
	b = load("pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb", &len);
	assert_int_equal(wt_format_decode(b, len, WT_FMT_AUTO, NULL, &p, &det, &err), 0);
	assert_int_equal(det, WT_FMT_OTLP);
	ref = reference("pyroscope__otel-ebpf-profiler_otlp-1.8.0.pb");
	{
		json_t *pr;
		json_array_foreach(json_object_get(ref, "profiles"), i, pr)
			if (json_is_array(json_object_get(pr, "period_type")) &&
			    !strcmp(json_string_value(json_array_get(json_object_get(pr, "period_type"), 0)), "cpu"))
				cpu += json_integer_value(json_object_get(pr, "raw_total")) *
				       json_integer_value(json_object_get(pr, "period"));
	}
	assert_true(cpu > 0);
	assert_int_equal(wt_profile_total(p, (size_t)wt_profile_find_type(p, "cpu")), cpu);
	assert_string_equal(wt_profile_label_str(p, p->samples[0].labelset, "service"),
			    WT_OTLP_UNKNOWN_SERVICE);
	json_decref(ref);
	wt_profile_free(p);
	free(b);
}

/* Truncations and byte flips: an error or a result, never a crash (ASan). */
static void test_malformed(void **state)
{
	size_t len, i;
	uint8_t *b = load("pyroscope__otel-ebpf-profiler_otlp-1.7.0-unsymbolized.pb", &len);
	uint8_t *m = malloc(len);

	for (i = 0; i < len; i += 97) {
		wt_otlp_result r;
		wt_err err = {0};
		if (wt_otlp_decode(b, i, NULL, &r, &err) == 0)
			wt_otlp_result_free(&r);
		memcpy(m, b, len);
		m[i] ^= 0x5a;
		if (wt_otlp_decode(m, len, NULL, &r, &err) == 0)
			wt_otlp_result_free(&r);
		else
			assert_true(err.msg[0] != 0);
	}
	/* limits: a tiny sample limit is WT_ELIMIT, not a crash */
	{
		wt_limits lim;
		wt_otlp_result r;
		wt_err err = {0};
		wt_limits_default(&lim);
		lim.max_samples = 3;
		assert_int_equal(wt_otlp_decode(b, len, &lim, &r, &err), WT_ELIMIT);
	}
	free(m);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_totals),
		cmocka_unit_test(test_1_10_from_json),
		cmocka_unit_test(test_json_equals_binary),
		cmocka_unit_test(test_mapping_1_8),
		cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_json_and_format),
		cmocka_unit_test(test_malformed),
	};
	wt_test_corpus(g_corpus, sizeof(g_corpus));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
