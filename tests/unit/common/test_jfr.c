/*
 * test_jfr.c — JFR decoder against real recordings and the JDK's own tool.
 *
 * The group setup runs tests/gen/gen-jfr, which records a JDK 17 flight
 * recording of tests/gen/java/JfrWork.java (settings=profile) and writes
 * the JDK `jfr` tool's view of it: `jfr summary` (event counts per type),
 * `jfr print --events jdk.ExecutionSample` (stacks; we count the first
 * frame of each) and awk sums over `jfr print --json` (allocation weight,
 * lock durations, GC pauses). It does the same for every corpus recording
 * (summaries, a few stack prints, sums of async-profiler event values).
 * Every figure asserted here comes from those outputs, never from our own
 * decoder. Malformed inputs (truncation, corrupted bytes and varints, bogus
 * offsets) must give errors that name chunk and byte, never crashes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compress.h"
#include "format.h"
#include "jfr.h"
#include "profile.h"

static char g_root[256], g_build[600], g_data[700], g_corpus[700];

/* ---- helpers ------------------------------------------------------------------ */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		b = malloc((size_t)n + 1);
		if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
			free(b);
			b = NULL;
		}
		if (b) {
			b[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return b;
}

/* A file of the corpus, gunzipped when it is gzip. */
static uint8_t *load_raw(const char *path, size_t *len)
{
	size_t n;
	uint8_t *b = slurp(path, &n), *raw = NULL;
	wt_err e;

	if (!b)
		return NULL;
	if (!wt_is_gzip(b, n)) {
		*len = n;
		return b;
	}
	if (wt_gunzip(b, n, (size_t)1 << 30, &raw, len, &e))
		raw = NULL;
	free(b);
	return raw;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* name → count table */
typedef struct kv {
	char *k;
	int64_t v;
} kv;
typedef struct kvs {
	kv *a;
	size_t n, cap;
} kvs;

static void kvs_add(kvs *t, const char *k, int64_t v)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->a[i].k, k)) {
			t->a[i].v += v;
			return;
		}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->a = realloc(t->a, t->cap * sizeof(kv));
		assert_non_null(t->a);
	}
	t->a[t->n].k = strdup(k);
	t->a[t->n++].v = v;
}

static int64_t kvs_get(const kvs *t, const char *k)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->a[i].k, k))
			return t->a[i].v;
	return -1;
}

static void kvs_free(kvs *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->a[i].k);
	free(t->a);
	memset(t, 0, sizeof(*t));
}

static int kv_cmp(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return strcmp(x->k, y->k);
}

/* `jfr summary` → event type → count (rows " name  count  size"). Returns
 * 0 when the tool failed on the file. */
static int read_summary(const char *path, kvs *t, int *dups)
{
	FILE *f = fopen(path, "r");
	char line[1024], name[512];
	long long count, size;
	int ok = 1;

	assert_non_null(f);
	*dups = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "JFR-SUMMARY-FAILED"))
			ok = 0;
		if (sscanf(line, " %511s %lld %lld", name, &count, &size) == 3 && strchr(name, '.')) {
			if (kvs_get(t, name) >= 0)
				(*dups)++;
			kvs_add(t, name, count);
		}
	}
	fclose(f);
	return ok;
}

/* `jfr print --events jdk.ExecutionSample`: number of events and the first
 * frame of each ("pkg.Class.method(args) line: N" → "pkg.Class.method"). */
static int64_t read_exec_leaves(const char *path, kvs *leaves)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	int64_t events = 0;
	int want = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *p;
		while (*s == ' ')
			s++;
		if (!strncmp(s, "jdk.ExecutionSample {", 21)) {
			events++;
			want = 0;
		} else if (!strncmp(s, "stackTrace = [", 14)) {
			want = 1;
		} else if (want) {
			want = 0;
			if (*s == ']')
				continue;
			/* the method's argument list starts at the last '(' before " line:" */
			p = strstr(s, " line:");
			if (p)
				*p = 0;
			p = strrchr(s, '(');
			if (p)
				*p = 0;
			/* a class with an empty name prints as ".method"; we leave
			 * out the lone dot */
			kvs_add(leaves, *s == '.' ? s + 1 : s, 1);
		}
	}
	fclose(f);
	return events;
}

/* key value lines */
static int64_t read_ref(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[256], k[128];
	long long v;
	int64_t r = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", k, &v) == 2 && !strcmp(k, key))
			r = v;
	fclose(f);
	return r;
}

/* Our cpu samples: leaf function name → value. */
static void our_leaves(const wt_profile *p, kvs *t)
{
	int ti = wt_profile_find_type(p, "cpu");
	size_t i, n;
	char buf[512];

	assert_true(ti >= 0);
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);
		int64_t v = wt_profile_values(p, i)[ti];
		if (n && v)
			kvs_add(t, wt_profile_frame_name(p, fr[0], buf, sizeof(buf)), v);
	}
}

static void compare_leaves(const char *what, const wt_profile *p, const kvs *ref)
{
	kvs ours = {0};
	size_t i;

	our_leaves(p, &ours);
	qsort(ref->a, ref->n, sizeof(kv), kv_cmp);
	qsort(ours.a, ours.n, sizeof(kv), kv_cmp);
	printf("  %s top leaf methods (jfr print | ours):\n", what);
	for (i = 0; i < 10 && i < ref->n; i++)
		printf("    %6" PRId64 " %-60s | %6" PRId64 " %s\n", ref->a[i].v, ref->a[i].k,
		       i < ours.n ? ours.a[i].v : 0, i < ours.n ? ours.a[i].k : "");
	/* top 10 by self count equal (names and counts), and every leaf too */
	for (i = 0; i < 10 && i < ref->n; i++) {
		assert_string_equal(ours.a[i].k, ref->a[i].k);
		assert_int_equal(ours.a[i].v, ref->a[i].v);
	}
	assert_int_equal(ours.n, ref->n);
	for (i = 0; i < ref->n; i++)
		if (kvs_get(&ours, ref->a[i].k) != ref->a[i].v)
			fail_msg("%s: leaf \"%s\": jfr print %" PRId64 ", ours %" PRId64, what,
				 ref->a[i].k, ref->a[i].v, kvs_get(&ours, ref->a[i].k));
	kvs_free(&ours);
}

static int64_t total_of(const wt_profile *p, const char *type)
{
	int ti = wt_profile_find_type(p, type);
	return ti < 0 ? -1 : wt_profile_total(p, (size_t)ti);
}

static void small_limits(wt_limits *l)
{
	wt_limits_default(l);
	l->max_samples = 200000;
	l->max_stack_depth = 512;
	l->max_strings = 100000;
	l->max_string_len = 4096;
}

/* ---- setup -------------------------------------------------------------------- */
static int group_setup(void **state)
{
	const char *root = getenv("WT_ROOT"), *build = getenv("BUILD");
	char cmd[4096];
	int rc;

	(void)state;
	snprintf(g_root, sizeof(g_root), "%s", root ? root : ".");
	if (!build)
		build = "build";
	if (build[0] == '/')
		snprintf(g_build, sizeof(g_build), "%s", build);
	else
		snprintf(g_build, sizeof(g_build), "%s/%s", g_root, build);
	snprintf(g_data, sizeof(g_data), "%s/testdata/jfr", g_build);
	snprintf(g_corpus, sizeof(g_corpus), "%s/tests/corpus/jfr", g_root);
	snprintf(cmd, sizeof(cmd), "BUILD='%s' '%s/tests/gen/gen-jfr'", g_build, g_root);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "test_jfr: %s failed (%d)\n", cmd, rc);
		return -1;
	}
	return 0;
}

/* Every event type count jfr summary reports equals ours, including the
 * metadata and checkpoint events. */
static void compare_summary(const char *what, const kvs *sum, int dups, const wt_jfr_stats *st)
{
	size_t i;
	int64_t named = 0;

	if (dups) {
		/* jfr summary counts by type id over all chunks and names each id
		 * once; when chunks number their types differently (async-profiler,
		 * several chunks) it lists a name twice and mislabels counts. Only
		 * the total is comparable then. */
		for (i = 0; i < sum->n; i++)
			if (strcmp(sum->a[i].k, "jdk.Metadata") && strcmp(sum->a[i].k, "jdk.CheckPoint"))
				named += sum->a[i].v;
		printf("  %s: jfr summary names a type twice; comparing the total only\n", what);
		assert_int_equal((int64_t)st->events, named);
		assert_int_equal((int64_t)st->metadata, kvs_get(sum, "jdk.Metadata"));
		assert_int_equal((int64_t)st->checkpoints, kvs_get(sum, "jdk.CheckPoint"));
		return;
	}

	for (i = 0; i < sum->n; i++) {
		const char *k = sum->a[i].k;
		int64_t ours = 0;
		size_t j;
		if (!strcmp(k, "jdk.Metadata")) {
			ours = (int64_t)st->metadata;
		} else if (!strcmp(k, "jdk.CheckPoint")) {
			ours = (int64_t)st->checkpoints;
		} else {
			for (j = 0; j < st->ntypes; j++)
				if (!strcmp(st->types[j].name, k))
					ours += (int64_t)st->types[j].count;
			named += sum->a[i].v;
		}
		if (ours != sum->a[i].v)
			fail_msg("%s: %s: jfr summary says %" PRId64 ", we count %" PRId64, what, k,
				 sum->a[i].v, ours);
	}
	assert_int_equal((int64_t)st->events, named);
}

/* ---- (a) a recording made now by the JDK ---------------------------------------------- */
static void test_generated_recording(void **state)
{
	char path[1024];
	size_t len, i;
	uint8_t *b;
	wt_profile *p = NULL, *p2 = NULL;
	wt_jfr_stats st;
	wt_decode_opts o;
	wt_format det;
	wt_err e;
	kvs sum = {0}, leaves = {0};
	int64_t nexec;
	int found_burn = 0, found_thread = 0, dups;

	(void)state;
	snprintf(path, sizeof(path), "%s/app.jfr", g_data);
	assert_non_null(b = slurp(path, &len));
	if (wt_jfr_decode_stats(b, len, NULL, NULL, &p, &st, &e))
		fail_msg("%s", e.msg);

	snprintf(path, sizeof(path), "%s/app.summary", g_data);
	assert_true(read_summary(path, &sum, &dups));
	assert_int_equal(dups, 0);
	compare_summary("app.jfr", &sum, dups, &st);
	snprintf(path, sizeof(path), "%s/app.exec.txt", g_data);
	nexec = read_exec_leaves(path, &leaves);
	assert_true(nexec > 20);
	assert_int_equal(kvs_get(&sum, "jdk.ExecutionSample"), nexec);
	assert_int_equal(total_of(p, "cpu"), nexec);
	compare_leaves("app.jfr", p, &leaves);

	snprintf(path, sizeof(path), "%s/app.refs", g_data);
	assert_int_equal(total_of(p, "alloc_objects"), read_ref(path, "alloc_count"));
	assert_int_equal(total_of(p, "alloc_space"), read_ref(path, "alloc_weight"));
	assert_int_equal(total_of(p, "lock"), read_ref(path, "lock_ns"));
	assert_int_equal(total_of(p, "gc_pause"), read_ref(path, "gc_ns"));
	assert_true(read_ref(path, "lock_count") > 0);
	assert_true(read_ref(path, "gc_count") > 0);
	/* settings=profile samples every 10 ms */
	assert_int_equal(p->period, 10000000);

	/* names are "pkg.Class.method", threads are labels, times inside the recording */
	for (i = 0; i < p->nfunctions; i++)
		if (!strcmp(wt_profile_str(p, p->functions[i].name), "JfrWork.burnAlpha"))
			found_burn = 1;
	assert_true(found_burn);
	for (i = 0; i < p->nsamples; i++) {
		const char *t = wt_profile_label_str(p, p->samples[i].labelset, "thread");
		if (t && !strcmp(t, "burn-alpha"))
			found_thread = 1;
		assert_true(p->samples[i].time_ns >= p->time_ns);
		assert_true(p->samples[i].time_ns <= p->time_ns + p->duration_ns + 1000000000LL);
	}
	assert_true(found_thread);
	assert_true(p->time_ns > 1600000000000000000LL);

	/* the same through wt_format_decode with detection */
	wt_decode_opts_default(&o);
	if (wt_format_decode(b, len, WT_FMT_AUTO, &o, &p2, &det, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(det, WT_FMT_JFR);
	assert_int_equal(total_of(p2, "cpu"), nexec);

	wt_profile_free(p);
	wt_profile_free(p2);
	wt_jfr_stats_free(&st);
	kvs_free(&sum);
	kvs_free(&leaves);
	free(b);
}

/* ---- (b) the corpus ------------------------------------------------------------------ */
static void test_corpus(void **state)
{
	DIR *dir = opendir(g_corpus);
	struct dirent *de;
	int nfiles = 0, nsummary = 0;

	(void)state;
	assert_non_null(dir);
	while ((de = readdir(dir))) {
		char path[1400];
		size_t len, rawlen, i, n;
		uint8_t *b, *raw;
		wt_profile *p = NULL, *p2 = NULL;
		wt_jfr_stats st;
		wt_decode_opts o;
		wt_err e;
		kvs sum = {0};
		size_t unknown = 0, frames = 0;
		double t0;
		int dups;

		if (de->d_name[0] == '.' || !strstr(de->d_name, ".jfr"))
			continue;
		nfiles++;
		snprintf(path, sizeof(path), "%s/%s", g_corpus, de->d_name);
		assert_non_null(b = slurp(path, &len));
		/* through the front door (gzip handled by format.c) */
		wt_decode_opts_default(&o);
		t0 = now_s();
		if (wt_format_decode(b, len, WT_FMT_JFR, &o, &p, NULL, &e))
			fail_msg("%s: %s", de->d_name, e.msg);
		printf("  %-50s %8zu samples %6zu stacks %5.3fs\n", de->d_name, p->nsamples,
		       p->nstacks, now_s() - t0);
		assert_true(p->nsamples > 0);

		/* and directly, for the per-type counts */
		assert_non_null(raw = load_raw(path, &rawlen));
		if (wt_jfr_decode_stats(raw, rawlen, NULL, NULL, &p2, &st, &e))
			fail_msg("%s: %s", de->d_name, e.msg);
		assert_int_equal(p2->nsamples, p->nsamples);
		snprintf(path, sizeof(path), "%s/corpus/%s.summary", g_data, de->d_name);
		if (read_summary(path, &sum, &dups)) {
			compare_summary(de->d_name, &sum, dups, &st);
			nsummary += !dups;
		}
		/* every frame of every stack resolved to a method name */
		for (i = 0; i < p->nstacks; i++) {
			const uint32_t *fr = wt_profile_stack(p, (uint32_t)i, &n);
			size_t j;
			char buf[256];
			for (j = 0; j < n; j++, frames++)
				if (!strcmp(wt_profile_frame_name(p, fr[j], buf, sizeof(buf)), "[unknown]"))
					unknown++;
		}
		assert_int_equal(unknown, 0);
		assert_true(frames > 0);

		wt_profile_free(p);
		wt_profile_free(p2);
		wt_jfr_stats_free(&st);
		kvs_free(&sum);
		free(b);
		free(raw);
	}
	closedir(dir);
	assert_true(nfiles >= 11);
	assert_true(nsummary >= 3);
}

/* ExecutionSample stacks of async-profiler recordings against jfr print. */
static void test_corpus_exec_leaves(void **state)
{
	static const char *const files[] = {
		"jfr-parser__example.jfr",
		"pyroscope__kafka-cpu-lock-alloc.jfr.gz",
		"jfr-parser__new_spancontext.jfr",
	};
	size_t f;

	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char path[1400];
		size_t len;
		uint8_t *b;
		wt_profile *p = NULL;
		wt_decode_opts o;
		wt_err e;
		kvs leaves = {0};
		int64_t nexec;

		snprintf(path, sizeof(path), "%s/%s", g_corpus, files[f]);
		assert_non_null(b = slurp(path, &len));
		wt_decode_opts_default(&o);
		if (wt_format_decode(b, len, WT_FMT_AUTO, &o, &p, NULL, &e))
			fail_msg("%s: %s", files[f], e.msg);
		snprintf(path, sizeof(path), "%s/corpus/%s.exec.txt", g_data, files[f]);
		nexec = read_exec_leaves(path, &leaves);
		assert_true(nexec > 100);
		assert_int_equal(total_of(p, "cpu"), nexec);
		compare_leaves(files[f], p, &leaves);
		kvs_free(&leaves);
		wt_profile_free(p);
		free(b);
	}
}

/* async-profiler's own events: values summed by jfr print --json + awk. */
static void test_corpus_event_values(void **state)
{
	char path[1400], ref[1400];
	size_t len, i;
	uint8_t *b;
	wt_profile *p;
	wt_decode_opts o;
	wt_err e;

	(void)state;
	wt_decode_opts_default(&o);

#define LOAD(name)                                                                         \
	do {                                                                               \
		snprintf(path, sizeof(path), "%s/%s", g_corpus, name);                     \
		snprintf(ref, sizeof(ref), "%s/corpus/%s.refs", g_data, name);             \
		assert_non_null(b = slurp(path, &len));                                    \
		p = NULL;                                                                  \
		if (wt_format_decode(b, len, WT_FMT_AUTO, &o, &p, NULL, &e))               \
			fail_msg("%s: %s", name, e.msg);                                   \
	} while (0)

	LOAD("jfr-parser__nativemem.jfr");
	assert_int_equal(total_of(p, "native_alloc"), read_ref(ref, "malloc_sum"));
	assert_int_equal((int64_t)p->nsamples, read_ref(ref, "malloc_count"));
	wt_profile_free(p);
	free(b);

	LOAD("jfr-parser__wall.jfr");
	assert_int_equal(total_of(p, "wall"), read_ref(ref, "wall_sum"));
	wt_profile_free(p);
	free(b);

	LOAD("pyroscope__kafka-cpu-lock-alloc.jfr.gz");
	assert_int_equal(total_of(p, "lock"), read_ref(ref, "lock_sum"));
	assert_int_equal(total_of(p, "alloc_space"),
			 read_ref(ref, "tlab_sum") + read_ref(ref, "outside_sum"));
	assert_int_equal(total_of(p, "alloc_objects"),
			 read_ref(ref, "tlab_count") + read_ref(ref, "outside_count"));
	wt_profile_free(p);
	free(b);

	/* pyroscope's span context: spanId of ExecutionSample → span_id label
	 * (hex); jfr print shows the decimal values */
	{
		kvs spans = {0};
		FILE *f;
		char line[512];
		int64_t nonzero = 0, labelled = 0, matched = 0;
		int ti;

		LOAD("jfr-parser__new_spancontext.jfr");
		snprintf(ref, sizeof(ref), "%s/corpus/jfr-parser__new_spancontext.jfr.exec.txt", g_data);
		assert_non_null(f = fopen(ref, "r"));
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;
			if (sscanf(line, " spanId = %llu", &v) == 1 && v) {
				char hex[17];
				snprintf(hex, sizeof(hex), "%016llx", v);
				kvs_add(&spans, hex, 1);
				nonzero++;
			}
		}
		fclose(f);
		assert_true(nonzero > 0);
		ti = wt_profile_find_type(p, "cpu");
		for (i = 0; i < p->nsamples; i++) {
			const char *s = wt_profile_label_str(p, p->samples[i].labelset, "span_id");
			if (!s)
				continue;
			labelled += wt_profile_values(p, i)[ti];
			if (kvs_get(&spans, s) > 0)
				matched += wt_profile_values(p, i)[ti];
		}
		assert_int_equal(labelled, nonzero);
		assert_int_equal(matched, nonzero);
		kvs_free(&spans);
		wt_profile_free(p);
		free(b);
	}
#undef LOAD
}

/* Two recordings concatenated are one recording with two chunks. */
static void test_multi_chunk_concat(void **state)
{
	char path[1400];
	size_t la, lb;
	uint8_t *a, *b, *ab;
	wt_profile *pa, *pb, *pab;
	wt_jfr_stats st;
	wt_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/jfr-parser__nativemem.jfr", g_corpus);
	assert_non_null(a = slurp(path, &la));
	snprintf(path, sizeof(path), "%s/jfr-parser__example.jfr", g_corpus);
	assert_non_null(b = slurp(path, &lb));
	assert_non_null(ab = malloc(la + lb));
	memcpy(ab, a, la);
	memcpy(ab + la, b, lb);
	assert_int_equal(wt_jfr_decode(a, la, NULL, NULL, &pa, &e), 0);
	assert_int_equal(wt_jfr_decode(b, lb, NULL, NULL, &pb, &e), 0);
	if (wt_jfr_decode_stats(ab, la + lb, NULL, NULL, &pab, &st, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(st.chunks, 2);
	assert_int_equal(total_of(pab, "native_alloc"), total_of(pa, "native_alloc"));
	assert_int_equal(total_of(pab, "cpu"), total_of(pb, "cpu"));
	assert_int_equal(total_of(pab, "lock"), total_of(pb, "lock"));
	assert_int_equal(pab->nsamples, pa->nsamples + pb->nsamples);
	wt_jfr_stats_free(&st);
	wt_profile_free(pa);
	wt_profile_free(pb);
	wt_profile_free(pab);
	free(a);
	free(b);
	free(ab);
}

/* ---- (c) malformed input ------------------------------------------------------------ */
static int decode_small(const uint8_t *b, size_t n, wt_err *e)
{
	wt_limits l;
	wt_profile *p = NULL;
	int rc;

	small_limits(&l);
	rc = wt_jfr_decode(b, n, &l, NULL, &p, e);
	if (rc == 0) {
		/* whatever decodes must be a consistent profile */
		size_t i;
		assert_non_null(p);
		for (i = 0; i < p->nsamples; i++)
			assert_true(p->samples[i].stack < p->nstacks);
		wt_profile_free(p);
	} else {
		assert_null(p);
		assert_true(rc == WT_EINVAL || rc == WT_ELIMIT);
		assert_true(!strncmp(e->msg, "jfr:", 4));
	}
	return rc;
}

static void test_truncated(void **state)
{
	char path[1400];
	size_t len, cut;
	uint8_t *b;
	wt_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/jfr-parser__nativemem.jfr", g_corpus);
	assert_non_null(b = slurp(path, &len));
	for (cut = 0; cut < len; cut += cut < 600 ? 1 : 37) {
		uint8_t *c = malloc(cut ? cut : 1);
		memcpy(c, b, cut);
		/* a cut chunk is always an error: its header's size no longer fits */
		assert_int_not_equal(decode_small(c, cut, &e), 0);
		if (cut >= 68)
			assert_non_null(strstr(e.msg, "jfr: chunk 0 at byte "));
		free(c);
	}
	free(b);
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_corrupted(void **state)
{
	static const char *const files[] = {"jfr-parser__nativemem.jfr",
					    "jfr-parser__new_spancontext.jfr"};
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	size_t f;
	int iter, errors = 0;

	(void)state;
	for (f = 0; f < 2; f++) {
		char path[1400];
		size_t len;
		uint8_t *b, *c;
		wt_err e;

		snprintf(path, sizeof(path), "%s/%s", g_corpus, files[f]);
		assert_non_null(b = slurp(path, &len));
		assert_non_null(c = malloc(len));
		for (iter = 0; iter < 600; iter++) {
			size_t pos = 68 + rng(&seed) % (len - 68), k, nb;
			memcpy(c, b, len);
			switch (iter % 4) {
			case 0: /* random bytes */
				nb = 1 + rng(&seed) % 8;
				for (k = 0; k < nb && pos + k < len; k++)
					c[pos + k] = (uint8_t)rng(&seed);
				break;
			case 1: /* a varint that never ends / is huge */
				for (k = 0; k < 9 && pos + k < len; k++)
					c[pos + k] = 0xff;
				break;
			case 2: /* a huge count/length: 0x7fffffff as varint */
				if (pos + 5 <= len)
					memcpy(c + pos, "\xff\xff\xff\xff\x07", 5);
				break;
			default: /* a zero byte (null strings, empty sizes) */
				c[pos] = 0;
				break;
			}
			if (decode_small(c, len, &e))
				errors++;
		}
		free(b);
		free(c);
	}
	assert_true(errors > 0);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	int i;
	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void test_bogus_offsets(void **state)
{
	char path[1400];
	size_t len;
	uint8_t *b, *c;
	uint64_t size, cp, meta;
	wt_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/jfr-parser__nativemem.jfr", g_corpus);
	assert_non_null(b = slurp(path, &len));
	assert_non_null(c = malloc(len));
	size = 0;
	for (int i = 0; i < 8; i++)
		size = size << 8 | b[8 + i];
	cp = 0;
	meta = 0;
	for (int i = 0; i < 8; i++) {
		cp = cp << 8 | b[16 + i];
		meta = meta << 8 | b[24 + i];
	}

#define CASE(off, val, want)                                                \
	do {                                                                \
		memcpy(c, b, len);                                          \
		put_be64(c + (off), (val));                                 \
		assert_int_equal(decode_small(c, len, &e), WT_EINVAL);      \
		if (!strstr(e.msg, want))                                   \
			fail_msg("want \"%s\" in \"%s\"", want, e.msg);     \
	} while (0)

	CASE(16, 1, "constant pool offset 1 outside the chunk");
	CASE(16, size, "outside the chunk");
	CASE(16, meta, "instead of a checkpoint");
	CASE(16, 68, "instead of a checkpoint");
	CASE(24, cp, "instead of metadata");
	CASE(24, 0, "metadata offset 0 outside");
	CASE(24, UINT64_MAX, "outside the chunk");
	CASE(8, size + 1, "does not fit");
	CASE(8, 3, "does not fit");
	CASE(56, 0, "ticks per second 0");
	CASE(0, 0x464c520000090000ULL, "unsupported format version 9.0");
#undef CASE
	/* delta of the (only) checkpoint pointing forward / before the chunk:
	 * find its position from the header and rewrite the delta varint */
	{
		size_t pos = (size_t)cp, k;
		uint64_t v;
		memcpy(c, b, len);
		/* skip size, type, start, duration varints */
		for (k = 0; k < 4; k++) {
			while (c[pos] & 0x80)
				pos++;
			pos++;
		}
		/* current delta is 0 (one byte): make it -1 (9 bytes won't fit), so use
		 * a 1-byte positive delta 0x05 instead */
		v = c[pos];
		assert_int_equal(v, 0);
		c[pos] = 0x05;
		assert_int_equal(decode_small(c, len, &e), WT_EINVAL);
		assert_non_null(strstr(e.msg, "checkpoint delta 5"));
	}
	free(b);
	free(c);
}

static void test_limits(void **state)
{
	char path[1400];
	size_t len;
	uint8_t *b;
	wt_limits l;
	wt_profile *p = NULL;
	wt_err e;

	(void)state;
	snprintf(path, sizeof(path), "%s/jfr-parser__example.jfr", g_corpus);
	assert_non_null(b = slurp(path, &len));
	wt_limits_default(&l);
	l.max_stack_depth = 8;
	assert_int_equal(wt_jfr_decode(b, len, &l, NULL, &p, &e), WT_ELIMIT);
	assert_null(p);
	assert_non_null(strstr(e.msg, "max_stack_depth"));
	wt_limits_default(&l);
	l.max_samples = 100;
	assert_int_equal(wt_jfr_decode(b, len, &l, NULL, &p, &e), WT_ELIMIT);
	assert_non_null(strstr(e.msg, "jfr: chunk 0 at byte"));
	wt_limits_default(&l);
	l.max_string_len = 8;
	assert_int_equal(wt_jfr_decode(b, len, &l, NULL, &p, &e), WT_ELIMIT);
	assert_int_equal(wt_jfr_decode(b, 0, NULL, NULL, &p, &e), WT_EINVAL);
	assert_int_equal(wt_jfr_decode((const uint8_t *)"FLR\0", 4, NULL, NULL, &p, &e), WT_EINVAL);
	free(b);
}

/* Decode speed on the biggest corpus recording (199k samples). */
static void test_speed(void **state)
{
	char path[1400];
	size_t len;
	uint8_t *b;
	wt_profile *p = NULL;
	wt_err e;
	double t0, dt;

	(void)state;
	snprintf(path, sizeof(path), "%s/jfr-parser__async-profiler.jfr", g_corpus);
	assert_non_null(b = slurp(path, &len));
	t0 = now_s();
	assert_int_equal(wt_jfr_decode(b, len, NULL, NULL, &p, &e), 0);
	dt = now_s() - t0;
	printf("  async-profiler.jfr: %zu bytes, %" PRId64 " cpu samples in %.3f s (%.1f MB/s)\n",
	       len, total_of(p, "cpu"), dt, len / dt / 1e6);
	assert_int_equal(total_of(p, "cpu"), 199661); /* INDEX.md and jfr summary */
	assert_true(dt < 20.0);
	wt_profile_free(p);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated_recording),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_corpus_exec_leaves),
		cmocka_unit_test(test_corpus_event_values),
		cmocka_unit_test(test_multi_chunk_concat),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_bogus_offsets),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_speed),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
