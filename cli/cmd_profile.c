/*
 * cmd_profile.c — `wtctl profile summary|convert`.
 *
 * (upload lives in cmd_upload.c.) summary and convert work offline through
 * wt_format_decode, so they accept exactly what the daemons accept.
 *
 * Offline inputs are mmap'd (input.h), bounded by CLI_OFFLINE_MAX, with a
 * progress line on a terminal for large ones; the model then holds only
 * unique stacks/samples.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "folded.h"
#include "format.h"
#include "http_client.h"
#include "input.h"
#include "pprof.h"
#include "profile.h"
#include "speedscope.h"
#include "summary.h"

/* Offline commands run on the operator's machine: allow larger inputs than
 * the daemons' upload limits. */
#define CLI_OFFLINE_MAX ((size_t)2 << 30)
#define CLI_OFFLINE_MAX_SAMPLES ((size_t)100000000)

/* ---- shared offline decode ------------------------------------------------------------ */

static int decode_file(const char *path, const char *format, uint64_t max_decompressed, wt_profile **p,
		       wt_format *detected)
{
	wt_decode_opts o;
	wt_format fmt = WT_FMT_AUTO;
	wt_err e = {0};
	cli_input in;
	cli_progress *pr;
	int rc;

	if (format && wt_format_parse(format, &fmt)) {
		fprintf(stderr, "wtctl: --format %s: unknown format\n", format);
		return -1;
	}
	if (cli_input_open(path, CLI_OFFLINE_MAX, &in))
		return -1;
	wt_decode_opts_default(&o);
	o.lim.max_body = CLI_OFFLINE_MAX;
	o.lim.max_decompressed = (size_t)max_decompressed;
	o.lim.max_samples = CLI_OFFLINE_MAX_SAMPLES;
	pr = cli_progress_start(&in, "decoding");
	rc = wt_format_decode(in.data, in.len, fmt, &o, p, detected, &e);
	cli_progress_stop(pr, !rc);
	cli_input_close(&in);
	if (rc) {
		fprintf(stderr, "wtctl: %s: %s\n", path, e.msg[0] ? e.msg : wt_err_name(rc));
		if (rc == WT_ELIMIT && strstr(e.msg, "decompressed size exceeds"))
			fprintf(stderr, "wtctl: %s: offline commands decompress at most %" PRIu64 " bytes "
				"unless told otherwise: give --max-decompressed SIZE (e.g. 4G) to allow more\n",
				path, max_decompressed);
		return -1;
	}
	for (size_t i = 0; i < (*p)->nwarnings; i++)
		fprintf(stderr, "wtctl: %s: warning: %s\n", path, (*p)->warnings[i]);
	if ((*p)->nwarnings_dropped)
		fprintf(stderr, "wtctl: %s: warning: %zu more warnings\n", path, (*p)->nwarnings_dropped);
	return 0;
}

static int pick_type(const wt_profile *p, const char *name, const char *path)
{
	int t = cli_summary_pick_type(p, name);

	if (t >= 0)
		return t;
	if (!p->ntypes) {
		fprintf(stderr, "wtctl: %s: the profile has no sample types\n", path);
		return -1;
	}
	fprintf(stderr, "wtctl: %s: no sample type %s; the profile has:", path, name);
	for (size_t i = 0; i < p->ntypes; i++)
		fprintf(stderr, " %s", wt_profile_str(p, p->types[i].canonical));
	fputc('\n', stderr);
	return -1;
}

/* ---- summary ------------------------------------------------------------------------------- */

/* A value in its unit, the way pprof prints it ("1.49s", "860ms", "12.5MB"). */
static void human(char *buf, size_t n, int64_t v, const char *unit)
{
	double a = fabs((double)v);

	if (v == 0) {
		snprintf(buf, n, "0");
		return;
	}
	if (!strcmp(unit, "nanoseconds")) {
		if (a >= 1e9)
			snprintf(buf, n, "%.2fs", (double)v / 1e9);
		else if (a >= 1e6)
			snprintf(buf, n, "%.2fms", (double)v / 1e6);
		else if (a >= 1e3)
			snprintf(buf, n, "%.2fus", (double)v / 1e3);
		else
			snprintf(buf, n, "%" PRId64 "ns", v);
	} else if (!strcmp(unit, "bytes")) {
		if (a >= 1024.0 * 1024 * 1024)
			snprintf(buf, n, "%.2fGB", (double)v / (1024.0 * 1024 * 1024));
		else if (a >= 1024.0 * 1024)
			snprintf(buf, n, "%.2fMB", (double)v / (1024.0 * 1024));
		else if (a >= 1024.0)
			snprintf(buf, n, "%.2fkB", (double)v / 1024.0);
		else
			snprintf(buf, n, "%" PRId64 "B", v);
	} else {
		snprintf(buf, n, "%" PRId64, v);
	}
	/* trim "1.00s" → "1s" and "1.50s" → "1.5s" like pprof */
	char *dot = strchr(buf, '.');
	if (dot) {
		char *u = dot + 1;
		while (*u >= '0' && *u <= '9')
			u++;
		char *z = u;
		while (z > dot + 1 && z[-1] == '0')
			z--;
		if (z == dot + 1)
			z = dot;
		memmove(z, u, strlen(u) + 1);
	}
}

static double pct(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

/* ISO 8601 UTC with milliseconds, or "unknown". */
static void fmt_time(char *buf, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char sec[32];

	if (!ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "unknown");
		return;
	}
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", sec, (int)(ns % 1000000000 / 1000000));
}

static json_t *top_rows(const cli_summary *s, size_t n)
{
	json_t *rows = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *r = json_object();
		json_object_set_new(r, "function", json_string(s->rows[i].function));
		json_object_set_new(r, "self", json_integer(s->rows[i].self));
		json_object_set_new(r, "total", json_integer(s->rows[i].total));
		json_array_append_new(rows, r);
	}
	return rows;
}

/* {"format","samples","types":[{"type","unit","total"}],"top":[{"function",
 * "self","total"}]} first (the documented contract), then the extras listed
 * in docs/operations.md. */
static int summary_json(const char *path, const wt_profile *p, wt_format fmt, int type,
			cli_summary *s, uint64_t top)
{
	json_t *root = json_object(), *types = json_array();
	size_t n = top && top < s->n ? (size_t)top : s->n;
	int64_t t0, t1;
	char tbuf[64];
	int rc;

	json_object_set_new(root, "format", json_string(wt_format_name(fmt)));
	json_object_set_new(root, "samples", json_integer(cli_summary_sample_count(p)));
	for (size_t i = 0; i < p->ntypes; i++) {
		json_t *t = json_object();
		json_object_set_new(t, "type", json_string(wt_profile_str(p, p->types[i].canonical)));
		json_object_set_new(t, "unit", json_string(wt_profile_str(p, p->types[i].unit)));
		json_object_set_new(t, "total", json_integer(wt_profile_total(p, i)));
		json_array_append_new(types, t);
	}
	json_object_set_new(root, "types", types);
	json_object_set_new(root, "top", top_rows(s, n));
	/* extras */
	json_object_set_new(root, "file", json_string(path));
	json_object_set_new(root, "type", json_string(wt_profile_str(p, p->types[type].canonical)));
	json_object_set_new(root, "unit", json_string(wt_profile_str(p, p->types[type].unit)));
	json_object_set_new(root, "total", json_integer(s->total));
	json_object_set_new(root, "rows", json_integer((json_int_t)p->nsamples));
	json_object_set_new(root, "stacks", json_integer((json_int_t)p->nstacks));
	json_object_set_new(root, "functions", json_integer((json_int_t)s->n));
	{
		json_t *w = json_array();
		for (size_t i = 0; i < p->nwarnings; i++)
			json_array_append_new(w, json_string(p->warnings[i]));
		json_object_set_new(root, "warnings", w);
	}
	cli_summary_time_range(p, &t0, &t1);
	if (t0) {
		fmt_time(tbuf, sizeof(tbuf), t0);
		json_object_set_new(root, "time_start", json_string(tbuf));
		json_object_set_new(root, "time_start_ns", json_integer(t0));
	}
	if (t1) {
		fmt_time(tbuf, sizeof(tbuf), t1);
		json_object_set_new(root, "time_end", json_string(tbuf));
		json_object_set_new(root, "time_end_ns", json_integer(t1));
	}
	if (p->duration_ns)
		json_object_set_new(root, "duration_ns", json_integer(p->duration_ns));
	cli_summary_sort_by_total(s);
	json_object_set_new(root, "top_total", top_rows(s, n));
	rc = json_dumpf(root, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	putchar('\n');
	json_decref(root);
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static void summary_text(const char *path, const wt_profile *p, wt_format fmt, int type,
			 cli_summary *s, uint64_t top)
{
	const char *unit = wt_profile_str(p, p->types[type].unit);
	size_t n = top && top < s->n ? (size_t)top : s->n;
	char a[64], b[64], c[64];
	int64_t sum = 0, t0, t1;

	printf("File: %s\nFormat: %s\n", path, wt_format_name(fmt));
	cli_summary_time_range(p, &t0, &t1);
	fmt_time(a, sizeof(a), t0);
	fmt_time(b, sizeof(b), t1);
	if (t0 || t1)
		printf("Time: %s .. %s", a, b);
	else
		printf("Time: unknown");
	if (p->duration_ns) {
		human(c, sizeof(c), p->duration_ns, "nanoseconds");
		printf(" (duration %s)", c);
	} else if (t0 && t1 > t0) {
		human(c, sizeof(c), t1 - t0, "nanoseconds");
		printf(" (%s between first and last sample)", c);
	}
	printf("\nSamples: %" PRId64 " (%zu rows, %zu unique stacks, %zu functions)\n",
	       cli_summary_sample_count(p), p->nsamples, p->nstacks, s->n);
	for (size_t i = 0; i < p->nwarnings; i++)
		printf("Warning: %s\n", p->warnings[i]);
	printf("Types:\n");
	for (size_t i = 0; i < p->ntypes; i++) {
		const char *u = wt_profile_str(p, p->types[i].unit);
		int64_t t = wt_profile_total(p, i);
		human(a, sizeof(a), t, u);
		printf("  %c %-18s %-12s total %" PRId64 " (%s)", (int)i == type ? '*' : ' ',
		       wt_profile_str(p, p->types[i].canonical), u, t, a);
		if (strcmp(wt_profile_str(p, p->types[i].type), wt_profile_str(p, p->types[i].canonical)))
			printf("  [format: %s]", wt_profile_str(p, p->types[i].type));
		putchar('\n');
	}
	human(a, sizeof(a), s->total, unit);
	printf("Showing top %zu of %zu functions by self, type %s, total %s\n", n, s->n,
	       wt_profile_str(p, p->types[type].canonical), a);
	printf("%12s %7s %7s %12s %7s  %s\n", "self", "self%", "sum%", "total", "total%", "function");
	for (size_t i = 0; i < n; i++) {
		const cli_summary_row *r = &s->rows[i];
		sum += r->self;
		human(a, sizeof(a), r->self, unit);
		human(c, sizeof(c), r->total, unit);
		printf("%12s %6.2f%% %6.2f%% %12s %6.2f%%  %s\n", a, pct(r->self, s->total),
		       pct(sum, s->total), c, pct(r->total, s->total), r->function);
	}
	cli_summary_sort_by_total(s);
	printf("Top %zu functions by total:\n", n);
	printf("%12s %7s %12s %7s  %s\n", "total", "total%", "self", "self%", "function");
	for (size_t i = 0; i < n; i++) {
		const cli_summary_row *r = &s->rows[i];
		human(a, sizeof(a), r->total, unit);
		human(c, sizeof(c), r->self, unit);
		printf("%12s %6.2f%% %12s %6.2f%%  %s\n", a, pct(r->total, s->total), c,
		       pct(r->self, s->total), r->function);
	}
}

int cli_cmd_summary(const cli_global *g, int argc, char **argv)
{
	cli_summary_args a;
	cli_summary s = {0};
	wt_profile *p = NULL;
	wt_format fmt = WT_FMT_AUTO;
	wt_err e = {0};
	char err[CLI_ERR_MAX];
	int type, rc = CLI_EXIT_FAIL;

	if (cli_parse_summary(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (decode_file(a.file, a.format, a.max_decompressed, &p, &fmt))
		goto out;
	if ((type = pick_type(p, a.type, a.file)) < 0)
		goto out;
	if (cli_summary_build(p, (size_t)type, &s, &e)) {
		fprintf(stderr, "wtctl: %s: %s\n", a.file, e.msg);
		goto out;
	}
	if (g->json) {
		rc = summary_json(a.file, p, fmt, type, &s, a.top);
	} else {
		summary_text(a.file, p, fmt, type, &s, a.top);
		rc = CLI_EXIT_OK;
	}
out:
	cli_summary_free(&s);
	wt_profile_free(p);
	return rc;
}

/* ---- convert ------------------------------------------------------------------------------- */

static int write_out(const char *path, const void *data, size_t len)
{
	FILE *f = (!path || !strcmp(path, "-")) ? stdout : fopen(path, "wb");
	int rc = 0;

	if (!f) {
		fprintf(stderr, "wtctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (len && fwrite(data, 1, len, f) != len)
		rc = -1;
	if (f == stdout ? fflush(f) : fclose(f))
		rc = -1;
	if (rc)
		fprintf(stderr, "wtctl: %s: write failed: %s\n", path ? path : "stdout", strerror(errno));
	return rc;
}

/* --type for convert: NULL (the default type), one name, or for speedscope
 * "all" / a comma-separated list. Fills idx[] (at most p->ntypes entries,
 * duplicates dropped) and *n. */
static int convert_types(const wt_profile *p, const char *spec, int many, const char *path,
			 size_t *idx, size_t *n)
{
	char name[256];
	int t;

	*n = 0;
	if (spec && many && !strcmp(spec, "all")) {
		for (size_t i = 0; i < p->ntypes; i++)
			idx[(*n)++] = i;
		return *n ? 0 : pick_type(p, NULL, path);
	}
	if (spec && strchr(spec, ',') && !many) {
		fprintf(stderr, "wtctl: --type %s: this output holds one sample type\n", spec);
		return -1;
	}
	for (const char *q = spec; !spec || *q;) {
		size_t len = spec ? strcspn(q, ",") : 0;
		if (spec) {
			if (!len || len >= sizeof(name)) {
				fprintf(stderr, "wtctl: --type %s: bad type list\n", spec);
				return -1;
			}
			memcpy(name, q, len);
			name[len] = '\0';
		}
		if ((t = pick_type(p, spec ? name : NULL, path)) < 0)
			return -1;
		size_t k = 0;
		while (k < *n && idx[k] != (size_t)t)
			k++;
		if (k == *n)
			idx[(*n)++] = (size_t)t;
		if (!spec)
			break;
		q += len;
		if (*q == ',')
			q++;
	}
	return 0;
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

int cli_cmd_convert(const cli_global *g, int argc, char **argv)
{
	static const char *const to_name[] = {"folded", "pprof", "speedscope"};
	cli_convert_args a;
	wt_profile *p = NULL;
	wt_format fmt = WT_FMT_AUTO;
	wt_buf out = WT_BUF_INIT;
	wt_err e = {0};
	uint8_t *bytes = NULL;
	size_t len = 0, *types = NULL, ntypes = 0;
	char err[CLI_ERR_MAX];
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_convert(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (decode_file(a.file, a.format, a.max_decompressed, &p, &fmt))
		goto out;
	if (!(types = calloc(p->ntypes ? p->ntypes : 1, sizeof(*types)))) {
		fprintf(stderr, "wtctl: out of memory\n");
		goto out;
	}
	if (convert_types(p, a.type, a.to == CLI_TO_SPEEDSCOPE, a.file, types, &ntypes))
		goto out;
	switch (a.to) {
	case CLI_TO_FOLDED:
		if (wt_folded_encode(p, types[0], &out, &e)) {
			fprintf(stderr, "wtctl: %s: folded: %s\n", a.file, e.msg);
			goto out;
		}
		break;
	case CLI_TO_SPEEDSCOPE:
		if (wt_speedscope_encode(p, types, ntypes, base_name(a.file), &out, &e)) {
			fprintf(stderr, "wtctl: %s: %s\n", a.file, e.msg);
			goto out;
		}
		break;
	case CLI_TO_PPROF:
		/* --type picks pprof's default_sample_type; every type is kept. */
		if (a.type) {
			uint32_t id;
			if (wt_profile_intern_cstr(p, wt_profile_str(p, p->types[types[0]].type), &id, &e)) {
				fprintf(stderr, "wtctl: %s: %s\n", a.file, e.msg);
				goto out;
			}
			p->default_type = id;
		}
		if (wt_pprof_encode(p, 1, &bytes, &len, &e)) {
			fprintf(stderr, "wtctl: %s: pprof: %s\n", a.file, e.msg);
			goto out;
		}
		break;
	}
	if (bytes ? write_out(a.out, bytes, len) : write_out(a.out, out.data, out.len))
		goto out;
	if (!g->json)
		fprintf(stderr, "wtctl: %s (%s) -> %s: %" PRId64 " samples, %zu stacks\n", a.file,
			wt_format_name(fmt), to_name[a.to], cli_summary_sample_count(p), p->nstacks);
	rc = CLI_EXIT_OK;
out:
	wt_buf_free(&out);
	free(bytes);
	free(types);
	wt_profile_free(p);
	return rc;
}
