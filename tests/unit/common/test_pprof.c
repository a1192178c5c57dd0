/*
 * test_pprof.c — pprof decoder/encoder against real profiles.
 *
 * The group setup runs tests/gen/gen-go-profiles, which builds a small Go
 * program, records cpu/heap/goroutine/mutex/block profiles with
 * runtime/pprof and writes `go tool pprof -raw` for each. Every figure we
 * assert comes from that independent reference: totals per sample type,
 * per-function flat values and the value of every distinct (labels, stack
 * of function names). The corpus in tests/corpus is decoded too, with a
 * few totals checked against `go tool pprof -raw` sums done by hand.
 * Malformed inputs (truncations at every offset, wrong wire types, huge
 * varints, bad indices, a gzip bomb) must give errors, never crashes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "buf.h"
#include "gzbomb.h"
#include "compress.h"
#include "pprof.h"
#include "profile.h"
#include "proto/profile.pb-c.h"

#define MAXT 8

static char g_root[256], g_build[600], g_gen[700], g_corpus[700];

/* ---- small helpers ---------------------------------------------------------- */
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

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* (key, values) rows; key = "labels|leaf;...;root" of function names. */
typedef struct entry {
	char *key;
	int64_t v[MAXT];
} entry;

typedef struct table {
	int ntypes;
	char types[MAXT][128]; /* "type/unit" */
	char dflt[128];        /* type marked [dflt] by go tool pprof, or "" */
	entry *e;
	size_t n, cap;
} table;

static void table_add(table *t, const char *key, const int64_t *v)
{
	int i;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 256;
		t->e = realloc(t->e, t->cap * sizeof(entry));
		assert_non_null(t->e);
	}
	t->e[t->n].key = strdup(key);
	for (i = 0; i < MAXT; i++)
		t->e[t->n].v[i] = i < t->ntypes ? v[i] : 0;
	t->n++;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const entry *)a)->key, ((const entry *)b)->key);
}

/* Sort and merge equal keys (values summed). Rows whose values are all
 * zero are dropped: they add nothing to any figure, and `go tool pprof`
 * drops them when it loads a profile (we keep them). */
static void table_norm(table *t)
{
	size_t i, o = 0;
	int k;

	qsort(t->e, t->n, sizeof(entry), entry_cmp);
	for (i = 0; i < t->n; i++) {
		int nz = 0;
		for (k = 0; k < MAXT; k++)
			nz |= t->e[i].v[k] != 0;
		if (!nz) {
			free(t->e[i].key);
			continue;
		}
		if (o && !strcmp(t->e[o - 1].key, t->e[i].key)) {
			for (k = 0; k < MAXT; k++)
				t->e[o - 1].v[k] += t->e[i].v[k];
			free(t->e[i].key);
		} else {
			t->e[o++] = t->e[i];
		}
	}
	t->n = o;
}

static void table_free(table *t)
{
	size_t i;
	for (i = 0; i < t->n; i++)
		free(t->e[i].key);
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* Flat per leaf function name, derived from a normalized table. */
static void table_flat(const table *in, table *out)
{
	size_t i;

	memset(out, 0, sizeof(*out));
	out->ntypes = in->ntypes;
	for (i = 0; i < in->n; i++) {
		const char *s = strchr(in->e[i].key, '|');
		char name[512];
		size_t n;

		s = s ? s + 1 : in->e[i].key;
		n = strcspn(s, ";");
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, s, n);
		name[n] = 0;
		table_add(out, name, in->e[i].v);
	}
	table_norm(out);
}

static void assert_tables_equal(const table *a, const table *b, const char *what)
{
	size_t i;
	int k;

	assert_int_equal(a->ntypes, b->ntypes);
	if (a->n != b->n) {
		for (i = 0; i < a->n || i < b->n; i++)
			if (i >= a->n || i >= b->n || strcmp(a->e[i].key, b->e[i].key)) {
				print_error("%s: first differing key at %zu: ours '%s' ref '%s'\n", what, i,
					    i < a->n ? a->e[i].key : "-", i < b->n ? b->e[i].key : "-");
				break;
			}
	}
	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->e[i].key, b->e[i].key))
			print_error("%s: key %zu: ours '%s' ref '%s'\n", what, i, a->e[i].key, b->e[i].key);
		assert_string_equal(a->e[i].key, b->e[i].key);
		for (k = 0; k < a->ntypes; k++) {
			if (a->e[i].v[k] != b->e[i].v[k])
				print_error("%s: '%s' type %d: ours %" PRId64 " ref %" PRId64 "\n", what,
					    a->e[i].key, k, a->e[i].v[k], b->e[i].v[k]);
			assert_true(a->e[i].v[k] == b->e[i].v[k]);
		}
	}
}

/* ---- our side: wt_profile → table ------------------------------------------ */
static int label_piece_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void labels_key(const wt_profile *p, uint32_t ls, wt_buf *b)
{
	const wt_label *l;
	char *pieces[64];
	size_t n, i;

	l = wt_profile_labelset(p, ls, &n);
	assert_true(n <= 64);
	for (i = 0; i < n; i++) {
		char tmp[600];
		const char *k = wt_profile_str(p, l[i].key);
		if (l[i].str)
			snprintf(tmp, sizeof(tmp), "%s=%s", k, wt_profile_str(p, l[i].str));
		else if (l[i].num_unit && *wt_profile_str(p, l[i].num_unit))
			snprintf(tmp, sizeof(tmp), "%s=%" PRId64 " %s", k, l[i].num,
				 wt_profile_str(p, l[i].num_unit));
		else
			snprintf(tmp, sizeof(tmp), "%s=%" PRId64, k, l[i].num);
		pieces[i] = strdup(tmp);
	}
	qsort(pieces, n, sizeof(char *), label_piece_cmp);
	for (i = 0; i < n; i++) {
		wt_buf_printf(b, "%s%s", i ? "," : "", pieces[i]);
		free(pieces[i]);
	}
}

static void profile_table(const wt_profile *p, int with_labels, table *t)
{
	size_t i, j, n;
	wt_buf b = WT_BUF_INIT;

	memset(t, 0, sizeof(*t));
	t->ntypes = (int)p->ntypes;
	assert_true(p->ntypes <= MAXT);
	for (i = 0; i < p->ntypes; i++)
		snprintf(t->types[i], sizeof(t->types[i]), "%s/%s", wt_profile_str(p, p->types[i].type),
			 wt_profile_str(p, p->types[i].unit));
	for (i = 0; i < p->nsamples; i++) {
		const uint32_t *fr = wt_profile_stack(p, p->samples[i].stack, &n);

		wt_buf_reset(&b);
		if (with_labels)
			labels_key(p, p->samples[i].labelset, &b);
		wt_buf_putc(&b, '|');
		for (j = 0; j < n; j++) {
			uint32_t fn = p->frames[fr[j]].function;
			wt_buf_printf(&b, "%s%s", j ? ";" : "",
				      fn == WT_NO_FUNCTION ? "?" : wt_profile_str(p, p->functions[fn].name));
		}
		wt_buf_putc(&b, 0);
		assert_false(b.oom);
		table_add(t, (char *)b.data, wt_profile_values(p, i));
	}
	wt_buf_free(&b);
	table_norm(t);
}

/* ---- reference side: `go tool pprof -raw` text → table ---------------------- */
typedef struct rsample {
	int64_t v[MAXT];
	uint64_t *locs;
	size_t nlocs;
	char labels[1024];
} rsample;

/* "name file:line s=N[(sys)]" → name; "??" and "" → "?" */
static void raw_fn_name(const char *s, char *out, size_t outlen)
{
	const char *end = NULL, *p, *sp = NULL;
	size_t n;

	while (*s == ' ')
		s++;
	for (p = s; (p = strstr(p, " s=")); p++)
		end = p;
	if (!end)
		end = s + strlen(s);
	for (p = s; p < end; p++)
		if (*p == ' ')
			sp = p;
	if (sp)
		end = sp;
	n = (size_t)(end - s);
	if (n == 0 || (n == 2 && !strncmp(s, "??", 2))) {
		snprintf(out, outlen, "?");
		return;
	}
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

/* labels line "k:[v] k2:[v2 unit]" → sorted "k=v,k2=v2 unit" merged into acc */
static void raw_labels(const char *s, char *acc, size_t acclen)
{
	char *pieces[64];
	size_t n = 0, i, len;
	char buf[1024] = "";

	if (*acc) { /* numeric labels come on their own line: merge */
		char *save, *tok, *copy = strdup(acc);
		for (tok = strtok_r(copy, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save))
			pieces[n++] = strdup(tok);
		free(copy);
	}
	while (*s && n < 64) {
		const char *k, *c, *e;
		char tmp[600];

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		k = s;
		c = strstr(s, ":[");
		if (!c)
			break;
		e = strchr(c, ']');
		if (!e)
			break;
		snprintf(tmp, sizeof(tmp), "%.*s=%.*s", (int)(c - k), k, (int)(e - c - 2), c + 2);
		pieces[n++] = strdup(tmp);
		s = e + 1;
	}
	qsort(pieces, n, sizeof(char *), label_piece_cmp);
	for (i = 0; i < n; i++) {
		len = strlen(buf);
		snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? "," : "", pieces[i]);
		free(pieces[i]);
	}
	snprintf(acc, acclen, "%s", buf);
}

static int is_sample_line(const char *s)
{
	const char *c = strchr(s, ':');
	const char *p;

	if (!c)
		return 0;
	for (p = s; p < c; p++)
		if (!isdigit((unsigned char)*p) && *p != ' ' && *p != '-')
			return 0;
	for (p = s; p < c; p++)
		if (isdigit((unsigned char)*p))
			return 1;
	return 0;
}

static void parse_raw(const char *path, int with_labels, table *t)
{
	size_t len, nsamples = 0, scap = 0, nlocs = 0, i, j;
	uint8_t *text = slurp(path, &len);
	char **locnames = NULL; /* by location id: "leaf;...;caller" */
	rsample *smp = NULL;
	char *line, *save;
	int section = 0; /* 1 samples, 2 locations, 3 mappings */
	uint64_t curloc = 0;

	if (!text)
		print_error("cannot read %s\n", path);
	assert_non_null(text);
	memset(t, 0, sizeof(*t));
	for (line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strcmp(line, "Samples:")) {
			char *tok, *s2;
			section = 1;
			line = strtok_r(NULL, "\n", &save);
			assert_non_null(line);
			for (tok = strtok_r(line, " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
				char *d = strstr(tok, "[dflt]");
				if (d) {
					*d = 0;
					snprintf(t->dflt, sizeof(t->dflt), "%.*s",
						 (int)strcspn(tok, "/"), tok);
				}
				assert_true(t->ntypes < MAXT);
				snprintf(t->types[t->ntypes++], sizeof(t->types[0]), "%s", tok);
			}
			continue;
		}
		if (!strcmp(line, "Locations")) {
			section = 2;
			continue;
		}
		if (!strcmp(line, "Mappings")) {
			section = 3;
			continue;
		}
		if (section == 1) {
			if (is_sample_line(line)) {
				char *c = strchr(line, ':'), *p = line, *e;
				int k = 0;
				rsample *s;

				if (nsamples == scap) {
					scap = scap ? scap * 2 : 256;
					smp = realloc(smp, scap * sizeof(rsample));
				}
				s = &smp[nsamples++];
				memset(s, 0, sizeof(*s));
				*c = 0;
				while (k < t->ntypes) {
					s->v[k++] = strtoll(p, &e, 10);
					assert_true(e != p);
					p = e;
				}
				p = c + 1;
				for (;;) {
					uint64_t id = strtoull(p, &e, 10);
					if (e == p)
						break;
					s->locs = realloc(s->locs, (s->nlocs + 1) * sizeof(uint64_t));
					s->locs[s->nlocs++] = id;
					p = e;
				}
			} else if (nsamples && strstr(line, ":[")) {
				raw_labels(line, smp[nsamples - 1].labels, sizeof(smp[0].labels));
			}
		} else if (section == 2) {
			char name[512];
			char *p = line;
			while (*p == ' ')
				p++;
			if (isdigit((unsigned char)*p) && strstr(p, ": 0x")) {
				char *m;
				curloc = strtoull(p, NULL, 10);
				if (curloc >= nlocs) {
					size_t nn = curloc + 1;
					locnames = realloc(locnames, nn * sizeof(char *));
					for (i = nlocs; i < nn; i++)
						locnames[i] = NULL;
					nlocs = nn;
				}
				m = strstr(p, " M=");
				assert_non_null(m);
				m += 3;
				while (*m && *m != ' ')
					m++;
				raw_fn_name(m, name, sizeof(name));
				locnames[curloc] = strdup(name);
			} else {
				char *old = locnames[curloc];
				size_t n;
				raw_fn_name(p, name, sizeof(name));
				n = strlen(old) + strlen(name) + 2;
				locnames[curloc] = malloc(n);
				snprintf(locnames[curloc], n, "%s;%s", old, name);
				free(old);
			}
		}
	}
	{
		wt_buf b = WT_BUF_INIT;
		for (i = 0; i < nsamples; i++) {
			wt_buf_reset(&b);
			if (with_labels)
				wt_buf_puts(&b, smp[i].labels);
			wt_buf_putc(&b, '|');
			for (j = 0; j < smp[i].nlocs; j++) {
				assert_true(smp[i].locs[j] < nlocs && locnames[smp[i].locs[j]]);
				wt_buf_printf(&b, "%s%s", j ? ";" : "", locnames[smp[i].locs[j]]);
			}
			wt_buf_putc(&b, 0);
			table_add(t, (char *)b.data, smp[i].v);
			free(smp[i].locs);
		}
		wt_buf_free(&b);
	}
	for (i = 0; i < nlocs; i++)
		free(locnames[i]);
	free(locnames);
	free(smp);
	free(text);
	table_norm(t);
}

/* ---- setup -------------------------------------------------------------------- */
static int group_setup(void **state)
{
	const char *root = getenv("WT_ROOT"), *build = getenv("BUILD");
	char cmd[4096];
	int rc;

	snprintf(g_root, sizeof(g_root), "%s", root ? root : ".");
	if (!build)
		build = "build";
	if (build[0] == '/')
		snprintf(g_build, sizeof(g_build), "%s", build);
	else
		snprintf(g_build, sizeof(g_build), "%s/%s", g_root, build);
	snprintf(g_gen, sizeof(g_gen), "%s/testdata/go", g_build);
	snprintf(g_corpus, sizeof(g_corpus), "%s/tests/corpus", g_root);
	snprintf(cmd, sizeof(cmd), "BUILD='%s' '%s/tests/gen/gen-go-profiles'", g_build, g_root);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "test_pprof: %s failed (%d)\n", cmd, rc);
		return -1;
	}
	return 0;
}

static wt_profile *decode_file(const char *path, const char *hint)
{
	size_t len;
	uint8_t *b = slurp(path, &len);
	wt_profile *p = NULL;
	wt_err e;
	int rc;

	if (!b)
		print_error("cannot read %s\n", path);
	assert_non_null(b);
	memset(&e, 0, sizeof(e));
	rc = wt_pprof_decode(b, len, NULL, hint, &p, &e);
	if (rc)
		print_error("%s: %s\n", path, e.msg);
	assert_int_equal(rc, 0);
	free(b);
	return p;
}

/* ---- tests: generated Go profiles vs go tool pprof -raw ------------------------ */
static void check_against_raw(const char *name, const char *hint)
{
	char pb[1400], raw[1400];
	table ours, ref, fo, fr;
	wt_profile *p;
	int k;

	snprintf(pb, sizeof(pb), "%s/%s.pb.gz", g_gen, name);
	snprintf(raw, sizeof(raw), "%s/%s.raw", g_gen, name);
	p = decode_file(pb, hint);
	parse_raw(raw, 1, &ref);
	profile_table(p, 1, &ours);
	/* sample types */
	assert_int_equal(ours.ntypes, ref.ntypes);
	for (k = 0; k < ref.ntypes; k++)
		assert_string_equal(ours.types[k], ref.types[k]);
	/* totals per type */
	for (k = 0; k < ref.ntypes; k++) {
		int64_t tr = 0;
		size_t i;
		for (i = 0; i < ref.n; i++)
			tr += ref.e[i].v[k];
		assert_true(wt_profile_total(p, (size_t)k) == tr);
	}
	assert_string_equal(wt_profile_str(p, p->default_type), ref.dflt);
	/* every (labels, stack) and every function's flat value */
	assert_tables_equal(&ours, &ref, name);
	table_flat(&ours, &fo);
	table_flat(&ref, &fr);
	assert_tables_equal(&fo, &fr, name);
	table_free(&ours);
	table_free(&ref);
	table_free(&fo);
	table_free(&fr);
	wt_profile_free(p);
}

static int64_t flat_of(const char *name, const char *func, int type)
{
	char raw[1400];
	table ref, fr;
	size_t i;
	int64_t v = -1;

	snprintf(raw, sizeof(raw), "%s/%s.raw", g_gen, name);
	parse_raw(raw, 0, &ref);
	table_flat(&ref, &fr);
	for (i = 0; i < fr.n; i++)
		if (!strcmp(fr.e[i].key, func))
			v = fr.e[i].v[type];
	table_free(&ref);
	table_free(&fr);
	return v;
}

static void test_go_cpu(void **state)
{
	char pb[1400];
	wt_profile *p;

	check_against_raw("cpu", "cpu");
	/* the workload's functions are where the time went */
	assert_true(flat_of("cpu", "main.fib", 0) > 0);
	snprintf(pb, sizeof(pb), "%s/cpu.pb.gz", g_gen);
	p = decode_file(pb, "cpu");
	assert_int_equal(p->ntypes, 2);
	assert_string_equal(wt_profile_str(p, p->types[1].canonical), "cpu");
	assert_string_equal(wt_profile_str(p, p->period_type), "cpu");
	assert_string_equal(wt_profile_str(p, p->period_unit), "nanoseconds");
	assert_true(p->period == 10000000);
	assert_true(p->time_ns > 1600000000LL * 1000000000LL);
	assert_true(p->duration_ns > 1000000000LL);
	for (size_t i = 0; i < p->nsamples; i++)
		assert_true(p->samples[i].time_ns == 0);
	/* labels: some samples carry stage=hash */
	{
		size_t i, n = 0;
		for (i = 0; i < p->nsamples; i++) {
			const char *v = wt_profile_label_str(p, p->samples[i].labelset, "stage");
			if (v && !strcmp(v, "hash"))
				n++;
		}
		assert_true(n > 0);
	}
	wt_profile_free(p);
}

static void test_go_heap(void **state)
{
	char pb[1400];
	wt_profile *p;

	check_against_raw("heap", NULL);
	snprintf(pb, sizeof(pb), "%s/heap.pb.gz", g_gen);
	p = decode_file(pb, NULL);
	assert_int_equal(p->ntypes, 4);
	assert_string_equal(wt_profile_str(p, p->types[0].canonical), "alloc_objects");
	assert_string_equal(wt_profile_str(p, p->types[3].canonical), "inuse_space");
	wt_profile_free(p);
}

static void test_go_goroutine(void **state) { check_against_raw("goroutine", NULL); }

static void test_go_mutex(void **state)
{
	char pb[1400];
	wt_profile *p;

	check_against_raw("mutex", "mutex");
	snprintf(pb, sizeof(pb), "%s/mutex.pb.gz", g_gen);
	p = decode_file(pb, "mutex");
	assert_string_equal(wt_profile_str(p, p->types[1].canonical), "mutex_delay");
	wt_profile_free(p);
}

static void test_go_block(void **state)
{
	char pb[1400];
	wt_profile *p;

	check_against_raw("block", "block");
	snprintf(pb, sizeof(pb), "%s/block.pb.gz", g_gen);
	p = decode_file(pb, "block");
	assert_string_equal(wt_profile_str(p, p->types[0].canonical), "block_contentions");
	assert_string_equal(wt_profile_str(p, p->types[1].canonical), "block_delay");
	wt_profile_free(p);
}

/* ---- corpus ------------------------------------------------------------------------ */
static int ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

static void decode_dir(const char *dir, const char *suffix1, const char *suffix2, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		print_error("cannot open %s\n", dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[2600];
		wt_profile *p;

		if (de->d_name[0] == '.' ||
		    !(ends_with(de->d_name, suffix1) || (suffix2 && ends_with(de->d_name, suffix2))))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		p = decode_file(path, NULL);
		assert_true(p->ntypes >= 1);
		wt_profile_free(p);
		(*count)++;
	}
	closedir(d);
}

static void test_corpus_all_decode(void **state)
{
	char dir[1400];
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s/pprof", g_corpus);
	decode_dir(dir, ".pb.gz", ".pb", &n);
	assert_true(n >= 25);
	snprintf(dir, sizeof(dir), "%s/gen/go", g_corpus);
	decode_dir(dir, ".pb.gz", NULL, &n);
	assert_true(n >= 32);
}

/* Figures summed from `go tool pprof -raw` output (and, for the .NET file
 * that Go rejects, from an independent Python wire-format walk). */
static void test_corpus_known_figures(void **state)
{
	static const struct {
		const char *file;
		size_t type;
		int64_t total;
		const char *canonical;
	} known[] = {
		{"gen/go/go-cpu.pb.gz", 0, 149, "samples"},
		{"gen/go/go-cpu.pb.gz", 1, 1490000000, "cpu"},
		{"pprof/google-pprof__large.cpu.pb.gz", 0, 24029, "samples"},
		{"pprof/google-pprof__large.cpu.pb.gz", 1, 240290000000LL, "cpu"},
		{"pprof/pyroscope__go-heap.pb.gz", 0, 18245264435LL, "alloc_objects"},
		{"pprof/pyroscope__go-heap.pb.gz", 1, 2180208886994LL, "alloc_space"},
		{"pprof/pyroscope__go-heap.pb.gz", 2, 1911643, "inuse_objects"},
		{"pprof/pyroscope__go-heap.pb.gz", 3, 541672846, "inuse_space"},
		{"pprof/pyroscope__java-async-profiler.pb.gz", 0, 5020648123LL, "cpu"},
		{"pprof/pyroscope__dotnet-labels.pb", 0, 9093000000LL, "cpu"},
		{"pprof/pyroscope__dotnet-labels.pb", 3, 60160, "alloc_space"},
		{"gen/go/go-block.pb.gz", 0, 7789, "mutex_contentions"},
		{"gen/go/go-block.pb.gz", 1, 3966752805LL, "mutex_delay"},
		{"pprof/pyroscope__dotnet-funcid0.pb", 0, 5653000000LL, "cpu"},
		{"pprof/pyroscope__dotnet-funcid0.pb", 2, 0, "alloc_objects"},
	};
	size_t i;
	wt_profile *p = NULL;

	/* rows of one file are adjacent: decode each file once */
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		char path[1400];

		if (!i || strcmp(known[i].file, known[i - 1].file)) {
			wt_profile_free(p);
			snprintf(path, sizeof(path), "%s/%s", g_corpus, known[i].file);
			p = decode_file(path, NULL);
		}
		assert_true(known[i].type < p->ntypes);
		if (wt_profile_total(p, known[i].type) != known[i].total)
			print_error("%s type %zu: %" PRId64 " != %" PRId64 "\n", known[i].file,
				    known[i].type, wt_profile_total(p, known[i].type), known[i].total);
		assert_true(wt_profile_total(p, known[i].type) == known[i].total);
		assert_string_equal(wt_profile_str(p, p->types[known[i].type].canonical),
				    known[i].canonical);
	}
	wt_profile_free(p);
}

/* .NET writes Function.id = 0 for every function and refers to them by
 * position: all 41 frames must resolve to named functions. */
static void test_corpus_default_type(void **state)
{
	char path[1400];
	wt_profile *p;

	/* `go tool pprof -raw` marks alloc_space/bytes[dflt] for this file */
	snprintf(path, sizeof(path), "%s/pprof/pyroscope__go-heap.pb.gz", g_corpus);
	p = decode_file(path, NULL);
	assert_string_equal(wt_profile_str(p, p->default_type), "alloc_space");
	wt_profile_free(p);
}

static void test_dotnet_funcid0(void **state)
{
	char path[1400];
	wt_profile *p;
	size_t i;

	snprintf(path, sizeof(path), "%s/pprof/pyroscope__dotnet-funcid0.pb", g_corpus);
	p = decode_file(path, NULL);
	assert_int_equal(p->nfunctions, 41);
	for (i = 0; i < p->nframes; i++) {
		assert_true(p->frames[i].function != WT_NO_FUNCTION);
		assert_true(*wt_profile_str(p, p->functions[p->frames[i].function].name) != 0);
	}
	wt_profile_free(p);
}

/* Unsymbolized locations become frames without a function but with an
 * address and a mapping. */
static void test_unsymbolized(void **state)
{
	char path[1400];
	wt_profile *p;
	size_t i, nofn = 0;

	snprintf(path, sizeof(path), "%s/pprof/parca__go-cpu-unsymbolized.pb.gz", g_corpus);
	p = decode_file(path, NULL);
	for (i = 0; i < p->nframes; i++)
		if (p->frames[i].function == WT_NO_FUNCTION) {
			nofn++;
			assert_true(p->frames[i].address != 0);
			assert_true(p->frames[i].mapping != WT_NO_MAPPING);
		}
	assert_int_equal(nofn, p->nframes);
	wt_profile_free(p);
}

/* ---- round trip ------------------------------------------------------------------- */
static void roundtrip_one(const char *path, int gzip)
{
	wt_profile *a = decode_file(path, NULL), *b = NULL;
	uint8_t *enc = NULL;
	size_t enclen = 0;
	table ta, tb;
	wt_err e;
	int rc;

	memset(&e, 0, sizeof(e));
	rc = wt_pprof_encode(a, gzip, &enc, &enclen, &e);
	if (rc)
		print_error("%s: encode: %s\n", path, e.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(wt_is_gzip(enc, enclen), gzip ? 1 : 0);
	rc = wt_pprof_decode(enc, enclen, NULL, NULL, &b, &e);
	if (rc)
		print_error("%s: re-decode: %s\n", path, e.msg);
	assert_int_equal(rc, 0);
	profile_table(a, 1, &ta);
	profile_table(b, 1, &tb);
	assert_tables_equal(&tb, &ta, path);
	assert_true(a->time_ns == b->time_ns && a->duration_ns == b->duration_ns &&
		    a->period == b->period);
	assert_string_equal(wt_profile_str(a, a->default_type), wt_profile_str(b, b->default_type));
	table_free(&ta);
	table_free(&tb);
	free(enc);
	wt_profile_free(a);
	wt_profile_free(b);
}

static void test_roundtrip(void **state)
{
	static const char *const files[] = {
		"pprof/pyroscope__go-heap.pb.gz", "pprof/pyroscope__dotnet-labels.pb",
		"pprof/parca__profile-with-labels.pb.gz", "pprof/pyroscope__go-heap-delta.pb.gz",
		"pprof/austin-python__austin2pprof.pb", "gen/go/go-threadcreate.pb.gz",
		"pprof/pyroscope__dotnet-funcid0.pb",
	};
	static const char *const gen[] = {"cpu", "heap", "goroutine", "mutex", "block"};
	char path[1400];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", g_corpus, files[i]);
		roundtrip_one(path, (int)(i & 1));
	}
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s/%s.pb.gz", g_gen, gen[i]);
		roundtrip_one(path, 1);
	}
}

/* Our encoder's output read by Go's own parser gives the same figures. */
static void test_encode_read_by_go(void **state)
{
	char pb[1400], out[1400], raw[1400], cmd[6000];
	wt_profile *p;
	uint8_t *enc;
	size_t enclen;
	table ref, back;
	wt_err e;
	FILE *f;

	snprintf(pb, sizeof(pb), "%s/cpu.pb.gz", g_gen);
	snprintf(out, sizeof(out), "%s/roundtrip-cpu.pb.gz", g_gen);
	snprintf(raw, sizeof(raw), "%s/roundtrip-cpu.raw", g_gen);
	p = decode_file(pb, NULL);
	assert_int_equal(wt_pprof_encode(p, 1, &enc, &enclen, &e), 0);
	f = fopen(out, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(enc, 1, enclen, f), enclen);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "HOME='%s/testdata/gohome' GOCACHE='%s/testdata/gohome/cache' "
		 "go tool pprof -raw '%s' > '%s' 2>&1", g_build, g_build, out, raw);
	assert_int_equal(system(cmd), 0);
	snprintf(pb, sizeof(pb), "%s/cpu.raw", g_gen);
	parse_raw(pb, 1, &ref);
	parse_raw(raw, 1, &back);
	assert_tables_equal(&back, &ref, "go reads our encoding");
	table_free(&ref);
	table_free(&back);
	free(enc);
	wt_profile_free(p);
}

/* ---- malformed input ------------------------------------------------------------------ */
static int decode_bytes(const uint8_t *b, size_t n, const wt_limits *lim, wt_err *e)
{
	wt_profile *p = NULL;
	int rc;

	memset(e, 0, sizeof(*e));
	rc = wt_pprof_decode(b, n, lim, NULL, &p, e);
	if (rc == 0)
		assert_non_null(p);
	else
		assert_null(p);
	wt_profile_free(p);
	return rc;
}

static uint8_t *raw_of(const char *name, size_t *n)
{
	char pb[1400];
	size_t len;
	uint8_t *gz, *raw;
	wt_err e;

	snprintf(pb, sizeof(pb), "%s/%s.pb.gz", g_gen, name);
	gz = slurp(pb, &len);
	assert_non_null(gz);
	assert_int_equal(wt_gunzip(gz, len, 1 << 26, &raw, n, &e), 0);
	free(gz);
	return raw;
}

/* Every truncation inside a top-level field is an error naming a byte
 * offset; a cut on a field boundary is wire-legal and may decode. */
static void test_truncated_everywhere(void **state)
{
	size_t n, cut, off = 0, nb = 0, errors = 0;
	uint8_t *raw = raw_of("mutex", &n);
	size_t *bounds = calloc(n + 1, sizeof(size_t));
	wt_err e;

	/* independent top-level field walk for the boundaries */
	while (off < n) {
		uint64_t tag = 0, l = 0;
		int s = 0;
		bounds[nb++] = off;
		do { tag |= (uint64_t)(raw[off] & 0x7f) << s; s += 7; } while (raw[off++] & 0x80);
		assert_true((tag & 7) == 2 || (tag & 7) == 0);
		s = 0;
		do { l |= (uint64_t)(raw[off] & 0x7f) << s; s += 7; } while (raw[off++] & 0x80);
		if ((tag & 7) == 2)
			off += l;
	}
	bounds[nb++] = n;
	for (cut = 0; cut < n; cut++) {
		int boundary = 0, rc;
		size_t i;
		for (i = 0; i < nb; i++)
			boundary |= bounds[i] == cut;
		rc = decode_bytes(raw, cut, NULL, &e);
		if (!boundary) {
			if (rc != WT_EINVAL)
				print_error("cut at %zu of %zu: rc %d\n", cut, n, rc);
			assert_int_equal(rc, WT_EINVAL);
			assert_non_null(strstr(e.msg, "pprof"));
			assert_non_null(strstr(e.msg, "byte"));
			errors++;
		}
	}
	assert_true(errors > n / 2);
	/* gzip'd and truncated: the gzip layer reports it */
	{
		uint8_t *gz;
		size_t gzlen;
		assert_int_equal(wt_gzip(raw, n, 6, &gz, &gzlen, &e), 0);
		for (cut = 2; cut < gzlen; cut += gzlen / 7 + 1)
			assert_int_equal(decode_bytes(gz, cut, NULL, &e), WT_EINVAL);
		assert_non_null(strstr(e.msg, "gzip"));
		free(gz);
	}
	free(bounds);
	free(raw);
}

static void test_wire_errors(void **state)
{
	wt_err e;
	/* time_nanos (field 9, int64) sent length-delimited */
	static const uint8_t wt_len[] = {0x4a, 0x01, 0x00};
	/* a sample whose value (field 2) uses wire type fixed32 */
	static const uint8_t bad_sample[] = {0x32, 0x00, 0x12, 0x05, 0x15, 0x01, 0x02, 0x03, 0x04};
	/* 10-byte varint whose last byte overflows 64 bits */
	static const uint8_t huge[] = {0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
	/* 11-byte varint */
	static const uint8_t longv[] = {0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00};
	/* string_table entry of length 2^63 */
	static const uint8_t hugelen[] = {0x32, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 'a'};
	/* group wire types */
	static const uint8_t group[] = {0x0b, 0x0c};
	/* field number 0 */
	static const uint8_t field0[] = {0x00, 0x00};

	assert_int_equal(decode_bytes(wt_len, sizeof(wt_len), NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "time_nanos (field 9) at byte 0"));
	assert_non_null(strstr(e.msg, "wire type 2"));

	assert_int_equal(decode_bytes(bad_sample, sizeof(bad_sample), NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "sample[0].value (field 2) at byte 4"));

	assert_int_equal(decode_bytes(huge, sizeof(huge), NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "varint"));
	assert_int_equal(decode_bytes(longv, sizeof(longv), NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "at byte 0"));
	assert_int_equal(decode_bytes(hugelen, sizeof(hugelen), NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "string_table (field 6) at byte 0"));
	assert_int_equal(decode_bytes(group, sizeof(group), NULL, &e), WT_EINVAL);
	assert_int_equal(decode_bytes(field0, sizeof(field0), NULL, &e), WT_EINVAL);
	/* trailing garbage after a valid profile */
	{
		size_t n;
		uint8_t *raw = raw_of("mutex", &n), *g = malloc(n + 3);
		memcpy(g, raw, n);
		g[n] = 0xff;
		g[n + 1] = 0xff;
		g[n + 2] = 0xff;
		assert_int_equal(decode_bytes(g, n + 3, NULL, &e), WT_EINVAL);
		assert_non_null(strstr(e.msg, "byte"));
		free(g);
		free(raw);
	}
}

/* Build small profiles with protobuf-c and break one reference each. */
typedef struct mini {
	Perftools__Profiles__Profile pr;
	Perftools__Profiles__ValueType vt, *vtp;
	Perftools__Profiles__Sample s, *sp;
	Perftools__Profiles__Location loc, *locp;
	Perftools__Profiles__Line line, *linep;
	Perftools__Profiles__Function fn, *fnp;
	Perftools__Profiles__Mapping map, *mapp;
	Perftools__Profiles__Label lbl, *lblp;
	uint64_t locid;
	int64_t val;
	char *strs[5];
} mini;

static void mini_init(mini *m)
{
	static char s0[] = "", s1[] = "samples", s2[] = "count", s3[] = "main", s4[] = "k";

	memset(m, 0, sizeof(*m));
	perftools__profiles__profile__init(&m->pr);
	perftools__profiles__value_type__init(&m->vt);
	perftools__profiles__sample__init(&m->s);
	perftools__profiles__location__init(&m->loc);
	perftools__profiles__line__init(&m->line);
	perftools__profiles__function__init(&m->fn);
	perftools__profiles__mapping__init(&m->map);
	perftools__profiles__label__init(&m->lbl);
	m->strs[0] = s0; m->strs[1] = s1; m->strs[2] = s2; m->strs[3] = s3; m->strs[4] = s4;
	m->pr.string_table = m->strs;
	m->pr.n_string_table = 5;
	m->vt.type = 1;
	m->vt.unit = 2;
	m->vtp = &m->vt;
	m->pr.sample_type = &m->vtp;
	m->pr.n_sample_type = 1;
	m->fn.id = 7;
	m->fn.name = 3;
	m->fnp = &m->fn;
	m->pr.function = &m->fnp;
	m->pr.n_function = 1;
	m->map.id = 3;
	m->mapp = &m->map;
	m->pr.mapping = &m->mapp;
	m->pr.n_mapping = 1;
	m->line.function_id = 7;
	m->linep = &m->line;
	m->loc.id = 5;
	m->loc.mapping_id = 3;
	m->loc.line = &m->linep;
	m->loc.n_line = 1;
	m->locp = &m->loc;
	m->pr.location = &m->locp;
	m->pr.n_location = 1;
	m->locid = 5;
	m->val = 42;
	m->s.location_id = &m->locid;
	m->s.n_location_id = 1;
	m->s.value = &m->val;
	m->s.n_value = 1;
	m->lbl.key = 4;
	m->lbl.str = 3;
	m->lblp = &m->lbl;
	m->s.label = &m->lblp;
	m->s.n_label = 1;
	m->sp = &m->s;
	m->pr.sample = &m->sp;
	m->pr.n_sample = 1;
}

static int mini_decode(mini *m, const wt_limits *lim, wt_err *e)
{
	size_t n = perftools__profiles__profile__get_packed_size(&m->pr);
	uint8_t *b = malloc(n + 1);
	int rc;

	assert_int_equal(perftools__profiles__profile__pack(&m->pr, b), n);
	rc = decode_bytes(b, n, lim, e);
	free(b);
	return rc;
}

static void test_bad_references(void **state)
{
	mini m;
	wt_err e;
	wt_limits lim;

	mini_init(&m);
	assert_int_equal(mini_decode(&m, NULL, &e), 0);

	mini_init(&m);
	m.vt.type = 9;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "string index 9 out of range"));
	mini_init(&m);
	m.lbl.str = -1;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "out of range"));
	mini_init(&m);
	m.locid = 77;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "sample[0].location_id[0]: no location with id 77"));
	mini_init(&m);
	m.line.function_id = 8;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "no function with id 8"));
	mini_init(&m);
	m.loc.mapping_id = 4;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "no mapping with id 4"));
	mini_init(&m);
	m.s.n_value = 0;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	assert_non_null(strstr(e.msg, "0 values but 1 sample types"));
	/* location id 0 is a valid id when a location has it */
	mini_init(&m);
	m.loc.id = 0;
	m.locid = 0;
	assert_int_equal(mini_decode(&m, NULL, &e), 0);
	/* ... and a dangling id 0 is not */
	mini_init(&m);
	m.locid = 0;
	assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
	/* line with function_id 0 and no such function: unsymbolized line */
	mini_init(&m);
	m.line.function_id = 0;
	assert_int_equal(mini_decode(&m, NULL, &e), 0);
	/* duplicate ids */
	{
		Perftools__Profiles__Function *two[2];
		mini_init(&m);
		two[0] = two[1] = &m.fn;
		m.pr.function = two;
		m.pr.n_function = 2;
		assert_int_equal(mini_decode(&m, NULL, &e), WT_EINVAL);
		assert_non_null(strstr(e.msg, "duplicate function id 7"));
	}
	/* limits */
	wt_limits_default(&lim);
	lim.max_labels = 0;
	mini_init(&m);
	assert_int_equal(mini_decode(&m, &lim, &e), WT_ELIMIT);
	assert_non_null(strstr(e.msg, "labels"));
	wt_limits_default(&lim);
	lim.max_samples = 0;
	mini_init(&m);
	assert_int_equal(mini_decode(&m, &lim, &e), WT_ELIMIT);
	wt_limits_default(&lim);
	lim.max_stack_depth = 0;
	mini_init(&m);
	assert_int_equal(mini_decode(&m, &lim, &e), WT_ELIMIT);
	assert_non_null(strstr(e.msg, "depth"));
	wt_limits_default(&lim);
	lim.max_decompressed = 10;
	mini_init(&m);
	assert_int_equal(mini_decode(&m, &lim, &e), WT_ELIMIT);
}

/* Inlined lines: one Location with two Lines → two frames, leaf first. */
static void test_inline_frames(void **state)
{
	mini m;
	Perftools__Profiles__Function fn2 = PERFTOOLS__PROFILES__FUNCTION__INIT, *fns[2];
	Perftools__Profiles__Line l2 = PERFTOOLS__PROFILES__LINE__INIT, *lines[2];
	static char s0[] = "", s1[] = "samples", s2[] = "count", s3[] = "inner", s4[] = "outer";
	char *strs[] = {s0, s1, s2, s3, s4};
	uint8_t *b;
	size_t n, sn;
	wt_profile *p = NULL;
	wt_err e;
	const uint32_t *fr;

	mini_init(&m);
	m.pr.string_table = strs;
	m.s.n_label = 0;
	fn2.id = 9;
	fn2.name = 4;
	fns[0] = &m.fn;
	fns[1] = &fn2;
	m.pr.function = fns;
	m.pr.n_function = 2;
	m.line.line = 10;
	l2.function_id = 9;
	l2.line = 20;
	lines[0] = &m.line;
	lines[1] = &l2;
	m.loc.line = lines;
	m.loc.n_line = 2;
	n = perftools__profiles__profile__get_packed_size(&m.pr);
	b = malloc(n);
	perftools__profiles__profile__pack(&m.pr, b);
	assert_int_equal(wt_pprof_decode(b, n, NULL, NULL, &p, &e), 0);
	fr = wt_profile_stack(p, p->samples[0].stack, &sn);
	assert_int_equal(sn, 2);
	assert_string_equal(wt_profile_str(p, p->functions[p->frames[fr[0]].function].name), "inner");
	assert_true(p->frames[fr[0]].line == 10);
	assert_string_equal(wt_profile_str(p, p->functions[p->frames[fr[1]].function].name), "outer");
	assert_true(p->frames[fr[1]].line == 20);
	wt_profile_free(p);
	free(b);
}

static void test_gzip_bomb(void **state)
{
	size_t n;
	double t0 = now_s(), dt;
	uint8_t *bomb = wt_test_gzip_bomb(1024, &n); /* 1 GiB of zeros */
	wt_limits lim;
	wt_err e;

	print_message("gzip bomb: 1 GiB of zeros → %zu bytes (built in %.2fs)\n", n, now_s() - t0);
	wt_limits_default(&lim);
	lim.max_decompressed = 32u << 20;
	t0 = now_s();
	assert_int_equal(decode_bytes(bomb, n, &lim, &e), WT_ELIMIT);
	dt = now_s() - t0;
	print_message("gzip bomb: WT_ELIMIT after %.3fs: %s\n", dt, e.msg);
	assert_non_null(strstr(e.msg, "limit"));
	assert_true(dt < 5.0);
	free(bomb);
}

/* ---- the decoder against protobuf-c's reading of the same bytes ------------
 * The decoder reads the wire bytes itself. protobuf-c unpacking them and
 * packing the message again gives the canonical encoding of what they mean
 * (fields in number order, repeated scalars packed, duplicate scalars and
 * messages resolved, unknown fields dropped, strings cut at a NUL); both
 * must decode to the same profile. Each input is also scrambled into a
 * legal but unusual encoding first (top-level fields out of order, samples
 * with labels first and unpacked ids and values, duplicate time_nanos and
 * period_type, unknown fields, a string with a NUL byte). The test was
 * run against the protobuf-c decoder this one replaced, and passed. */
static void wire_varint(wt_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	assert_int_equal(wt_buf_append(b, t, n), 0);
}

static void wire_len(wt_buf *b, uint32_t num, const uint8_t *p, size_t n)
{
	wire_varint(b, (uint64_t)num << 3 | 2);
	wire_varint(b, n);
	assert_int_equal(wt_buf_append(b, p, n), 0);
}

typedef struct wfield {
	uint32_t num;
	int wt;
	size_t start, end;    /* the whole field */
	size_t body, bodylen; /* LEN: its payload */
	uint64_t v;
} wfield;

static size_t wire_fields(const uint8_t *p, size_t n, wfield *out, size_t max)
{
	size_t off = 0, k = 0;

	while (off < n) {
		wfield f = {0};
		uint64_t tag = 0, x = 0;
		int sh = 0;

		f.start = off;
		do { tag |= (uint64_t)(p[off] & 0x7f) << sh; sh += 7; } while (p[off++] & 0x80);
		f.num = (uint32_t)(tag >> 3);
		f.wt = (int)(tag & 7);
		assert_true(f.wt == 0 || f.wt == 2);
		sh = 0;
		do { x |= (uint64_t)(p[off] & 0x7f) << sh; sh += 7; } while (p[off++] & 0x80);
		if (f.wt == 2) {
			f.body = off;
			f.bodylen = (size_t)x;
			off += (size_t)x;
		} else {
			f.v = x;
		}
		f.end = off;
		assert_true(k < max);
		out[k++] = f;
	}
	return k;
}

/* A Sample re-encoded: labels first, then values and location ids one
 * varint field each, and an unknown varint field. */
static void scramble_sample(wt_buf *o, const uint8_t *p, size_t n)
{
	wfield f[4096];
	size_t nf = wire_fields(p, n, f, 4096), i;
	wt_buf s = WT_BUF_INIT;
	uint32_t order[3] = {3, 2, 1};
	int k;

	wire_varint(&s, 99u << 3 | 0);
	wire_varint(&s, 7);
	for (k = 0; k < 3; k++)
		for (i = 0; i < nf; i++) {
			if (f[i].num != order[k])
				continue;
			if (f[i].num == 3 || f[i].wt == 0) {
				assert_int_equal(wt_buf_append(&s, p + f[i].start, f[i].end - f[i].start), 0);
			} else { /* packed → one field per element */
				size_t off = f[i].body, end = f[i].body + f[i].bodylen;
				while (off < end) {
					uint64_t x = 0;
					int sh = 0;
					do { x |= (uint64_t)(p[off] & 0x7f) << sh; sh += 7; } while (p[off++] & 0x80);
					wire_varint(&s, (uint64_t)f[i].num << 3 | 0);
					wire_varint(&s, x);
				}
			}
		}
	wire_len(o, 2, s.data, s.len);
	wt_buf_free(&s);
}

static void scramble(const uint8_t *p, size_t n, wt_buf *o)
{
	static const uint32_t order[] = {14, 13, 12, 11, 10, 9, 8, 7, 5, 4, 3, 2, 1, 6, 15};
	static const uint8_t unit1[] = {0x10, 0x01}; /* ValueType{unit: 1} */
	static const uint8_t type1[] = {0x08, 0x01}; /* ValueType{type: 1} */
	size_t cap = n / 2 + 16, nf, i, k;
	wfield *f = malloc(cap * sizeof(*f));

	assert_non_null(f);
	nf = wire_fields(p, n, f, cap);
	wire_varint(o, 100u << 3 | 0); /* unknown fields: skipped */
	wire_varint(o, 5);
	wire_len(o, 101, (const uint8_t *)"x", 1);
	wire_varint(o, 9u << 3 | 0); /* a time_nanos that a later one overrides */
	wire_varint(o, 12345);
	wire_len(o, 11, unit1, sizeof(unit1)); /* replaced by the later period_type */
	for (k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (i = 0; i < nf; i++) {
			if (f[i].num != order[k])
				continue;
			if (f[i].num == 2)
				scramble_sample(o, p + f[i].body, f[i].bodylen);
			else
				assert_int_equal(wt_buf_append(o, p + f[i].start, f[i].end - f[i].start), 0);
		}
	/* a last string with a NUL byte: C strings (and we) stop at the NUL */
	wire_len(o, 6, (const uint8_t *)"tail\0more", 9);
	/* a last period_type with a type only replaces the earlier one whole */
	wire_len(o, 11, type1, sizeof(type1));
	free(f);
}

static void assert_same_profile(const wt_profile *a, const wt_profile *b, const char *what)
{
	uint8_t *ea = NULL, *eb = NULL;
	size_t na = 0, nb = 0;
	wt_err e;

	if (a->nstrings != b->nstrings || a->nframes != b->nframes || a->nstacks != b->nstacks ||
	    a->nsamples != b->nsamples || a->nfunctions != b->nfunctions || a->time_ns != b->time_ns ||
	    a->period_unit != b->period_unit || a->source_samples != b->source_samples)
		print_error("%s: strings %zu/%zu frames %zu/%zu stacks %zu/%zu samples %zu/%zu\n", what,
			    a->nstrings, b->nstrings, a->nframes, b->nframes, a->nstacks, b->nstacks,
			    a->nsamples, b->nsamples);
	assert_int_equal(a->nstrings, b->nstrings);
	assert_int_equal(a->nfunctions, b->nfunctions);
	assert_int_equal(a->nframes, b->nframes);
	assert_int_equal(a->nstacks, b->nstacks);
	assert_int_equal(a->nsamples, b->nsamples);
	assert_int_equal(a->nlabelsets, b->nlabelsets);
	assert_int_equal(a->time_ns, b->time_ns);
	assert_int_equal(a->period_type, b->period_type);
	assert_int_equal(a->period_unit, b->period_unit);
	assert_int_equal(a->source_samples, b->source_samples);
	assert_int_equal(wt_pprof_encode(a, 0, &ea, &na, &e), 0);
	assert_int_equal(wt_pprof_encode(b, 0, &eb, &nb, &e), 0);
	assert_int_equal(na, nb);
	assert_memory_equal(ea, eb, na);
	free(ea);
	free(eb);
}

/* decode(bytes) == decode(pack(protobuf-c unpack(bytes))); returns 1 when
 * the bytes decoded. */
static int check_against_protobuf_c(const uint8_t *raw, size_t n, const char *what)
{
	Perftools__Profiles__Profile *pb = perftools__profiles__profile__unpack(NULL, n, raw);
	wt_profile *a = NULL, *b = NULL;
	uint8_t *canon;
	size_t cn;
	wt_err e;
	int ra, rb;

	assert_non_null(pb);
	cn = perftools__profiles__profile__get_packed_size(pb);
	canon = malloc(cn ? cn : 1);
	assert_non_null(canon);
	assert_int_equal(perftools__profiles__profile__pack(pb, canon), cn);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	ra = wt_pprof_decode(raw, n, NULL, NULL, &a, &e);
	rb = wt_pprof_decode(canon, cn, NULL, NULL, &b, &e);
	if (ra != rb)
		print_error("%s: rc %d vs %d (canonical): %s\n", what, ra, rb, e.msg);
	assert_int_equal(ra, rb);
	if (!ra)
		assert_same_profile(a, b, what);
	wt_profile_free(a);
	wt_profile_free(b);
	free(canon);
	return ra == 0;
}

static void test_matches_protobuf_c(void **state)
{
	static const char *const dirs[] = {"pprof", "gen/go"};
	size_t d, files = 0, scrambled = 0;

	for (d = 0; d < 2; d++) {
		char dir[1400];
		DIR *dp;
		struct dirent *de;

		snprintf(dir, sizeof(dir), "%s/%s", g_corpus, dirs[d]);
		assert_non_null(dp = opendir(dir));
		while ((de = readdir(dp))) {
			char path[2600];
			uint8_t *buf, *raw = NULL;
			size_t len, n;
			wt_buf sc = WT_BUF_INIT;
			wt_err e;

			if (!ends_with(de->d_name, ".pb.gz") && !ends_with(de->d_name, ".pb"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			assert_non_null(buf = slurp(path, &len));
			if (wt_is_gzip(buf, len)) {
				assert_int_equal(wt_gunzip(buf, len, 1u << 30, &raw, &n, &e), 0);
				free(buf);
			} else {
				raw = buf;
				n = len;
			}
			assert_true(check_against_protobuf_c(raw, n, path));
			files++;
			scramble(raw, n, &sc);
			scrambled += check_against_protobuf_c(sc.data, sc.len, path);
			wt_buf_free(&sc);
			free(raw);
		}
		closedir(dp);
	}
	print_message("%zu corpus profiles, %zu scrambled encodings decoded alike\n", files, scrambled);
	assert_true(files >= 30);
	assert_true(scrambled >= files * 9 / 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_go_cpu),
		cmocka_unit_test(test_go_heap),
		cmocka_unit_test(test_go_goroutine),
		cmocka_unit_test(test_go_mutex),
		cmocka_unit_test(test_go_block),
		cmocka_unit_test(test_corpus_all_decode),
		cmocka_unit_test(test_corpus_known_figures),
		cmocka_unit_test(test_corpus_default_type),
		cmocka_unit_test(test_dotnet_funcid0),
		cmocka_unit_test(test_unsymbolized),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_encode_read_by_go),
		cmocka_unit_test(test_truncated_everywhere),
		cmocka_unit_test(test_wire_errors),
		cmocka_unit_test(test_bad_references),
		cmocka_unit_test(test_inline_frames),
		cmocka_unit_test(test_gzip_bomb),
		cmocka_unit_test(test_matches_protobuf_c),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
