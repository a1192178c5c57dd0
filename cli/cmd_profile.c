/*
 * cmd_profile.c — `wtctl profile upload|summary|convert`.
 *
 * upload sends the file's bytes unchanged (the server detects gzip and the
 * format); summary and convert work offline through wt_format_decode, so
 * they accept exactly what the daemons accept.
 *
 * Offline inputs are read whole into memory (bounded by CLI_OFFLINE_MAX);
 * streaming of very large inputs is future work (issue 13).
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
#include "pprof.h"
#include "profile.h"
#include "summary.h"

/* Offline commands run on the operator's machine: allow larger inputs than
 * the daemons' upload limits. */
#define CLI_OFFLINE_MAX ((size_t)2 << 30)
#define CLI_OFFLINE_MAX_DECOMPRESSED ((size_t)8 << 30)
#define CLI_OFFLINE_MAX_SAMPLES ((size_t)100000000)

/* Read a whole file ("-" = stdin) of at most max bytes. *out malloc'd. */
static int read_file(const char *path, size_t max, uint8_t **out, size_t *len)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	wt_buf b = WT_BUF_INIT;
	uint8_t chunk[65536];
	size_t n;
	int rc = 0;

	if (!f) {
		fprintf(stderr, "wtctl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (b.len + n > max) {
			fprintf(stderr, "wtctl: %s: larger than %zu bytes\n", path, max);
			rc = -1;
			break;
		}
		if (wt_buf_append(&b, chunk, n)) {
			fprintf(stderr, "wtctl: %s: out of memory\n", path);
			rc = -1;
			break;
		}
	}
	if (!rc && ferror(f)) {
		fprintf(stderr, "wtctl: %s: read error: %s\n", path, strerror(errno));
		rc = -1;
	}
	if (f != stdin)
		fclose(f);
	if (rc) {
		wt_buf_free(&b);
		return -1;
	}
	wt_buf_putc(&b, '\0'); /* keeps an empty file non-NULL */
	*out = wt_buf_steal(&b, len);
	(*len)--;
	return 0;
}

/* ---- upload ----------------------------------------------------------------------- */

int cli_cmd_upload(const cli_global *g, int argc, char **argv)
{
	cli_upload_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX];
	const char *base = g->edge ? g->edge : g->hub;
	uint8_t *body = NULL;
	size_t len = 0;
	char *url = NULL;
	int rc = CLI_EXIT_FAIL;

	if (cli_parse_upload(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (!base) {
		fprintf(stderr, "wtctl: profile upload: give --edge URL or --hub URL (or WT_EDGE_URL / WT_HUB_URL)\n");
		return CLI_EXIT_USAGE;
	}
	if (!g->token)
		fprintf(stderr, "wtctl: warning: no --token (or WT_TOKEN); the server will answer 401\n");
	if (read_file(a.file, CLI_OFFLINE_MAX, &body, &len))
		goto out;
	if (!(url = cli_upload_url(base, &a))) {
		fprintf(stderr, "wtctl: bad base URL %s\n", base);
		goto out;
	}
	if (cli_http_request("POST", url, g->token, "application/octet-stream", body, len, &r,
			     err, sizeof(err))) {
		fprintf(stderr, "wtctl: profile upload: %s\n", err);
		goto out;
	}
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error("profile upload", &r);
		goto out;
	}
	fwrite(r.body, 1, r.len, stdout);
	if (!r.len || r.body[r.len - 1] != '\n')
		putchar('\n');
	rc = CLI_EXIT_OK;
out:
	cli_http_resp_free(&r);
	free(url);
	free(body);
	return rc;
}

/* ---- shared offline decode ------------------------------------------------------------ */

static int decode_file(const char *path, const char *format, wt_profile **p, wt_format *detected)
{
	wt_decode_opts o;
	wt_format fmt = WT_FMT_AUTO;
	wt_err e = {0};
	uint8_t *body = NULL;
	size_t len;
	int rc;

	if (format && wt_format_parse(format, &fmt)) {
		fprintf(stderr, "wtctl: --format %s: unknown format\n", format);
		return -1;
	}
	if (read_file(path, CLI_OFFLINE_MAX, &body, &len))
		return -1;
	wt_decode_opts_default(&o);
	o.lim.max_body = CLI_OFFLINE_MAX;
	o.lim.max_decompressed = CLI_OFFLINE_MAX_DECOMPRESSED;
	o.lim.max_samples = CLI_OFFLINE_MAX_SAMPLES;
	rc = wt_format_decode(body, len, fmt, &o, p, detected, &e);
	free(body);
	if (rc) {
		fprintf(stderr, "wtctl: %s: %s\n", path, e.msg[0] ? e.msg : wt_err_name(rc));
		return -1;
	}
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

static void fmt_time(char *buf, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "unknown");
		return;
	}
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int summary_json(const char *path, const wt_profile *p, wt_format fmt, int type,
			cli_summary *s, uint64_t top)
{
	json_t *root = json_object(), *types = json_array(), *rows = json_array(),
	       *rows_total = json_array();
	size_t n = top && top < s->n ? (size_t)top : s->n;
	char tbuf[64];
	int rc;

	json_object_set_new(root, "file", json_string(path));
	json_object_set_new(root, "format", json_string(wt_format_name(fmt)));
	json_object_set_new(root, "samples", json_integer((json_int_t)p->nsamples));
	json_object_set_new(root, "stacks", json_integer((json_int_t)p->nstacks));
	json_object_set_new(root, "functions", json_integer((json_int_t)s->n));
	for (size_t i = 0; i < p->ntypes; i++) {
		json_t *t = json_object();
		json_object_set_new(t, "type", json_string(wt_profile_str(p, p->types[i].canonical)));
		json_object_set_new(t, "name", json_string(wt_profile_str(p, p->types[i].type)));
		json_object_set_new(t, "unit", json_string(wt_profile_str(p, p->types[i].unit)));
		json_object_set_new(t, "total", json_integer(wt_profile_total(p, i)));
		json_array_append_new(types, t);
	}
	json_object_set_new(root, "types", types);
	json_object_set_new(root, "type", json_string(wt_profile_str(p, p->types[type].canonical)));
	json_object_set_new(root, "unit", json_string(wt_profile_str(p, p->types[type].unit)));
	json_object_set_new(root, "total", json_integer(s->total));
	if (p->time_ns) {
		fmt_time(tbuf, sizeof(tbuf), p->time_ns);
		json_object_set_new(root, "time", json_string(tbuf));
		json_object_set_new(root, "time_ns", json_integer(p->time_ns));
	}
	if (p->duration_ns)
		json_object_set_new(root, "duration_ns", json_integer(p->duration_ns));
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_object();
		json_object_set_new(r, "function", json_string(s->rows[i].function));
		json_object_set_new(r, "self", json_integer(s->rows[i].self));
		json_object_set_new(r, "total", json_integer(s->rows[i].total));
		json_array_append_new(rows, r);
	}
	json_object_set_new(root, "top", rows);
	cli_summary_sort_by_total(s);
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_object();
		json_object_set_new(r, "function", json_string(s->rows[i].function));
		json_object_set_new(r, "self", json_integer(s->rows[i].self));
		json_object_set_new(r, "total", json_integer(s->rows[i].total));
		json_array_append_new(rows_total, r);
	}
	json_object_set_new(root, "top_total", rows_total);
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
	int64_t sum = 0;

	printf("File: %s\nFormat: %s\n", path, wt_format_name(fmt));
	fmt_time(a, sizeof(a), p->time_ns);
	human(b, sizeof(b), p->duration_ns, "nanoseconds");
	printf("Time: %s", a);
	if (p->duration_ns)
		printf(", duration %s", b);
	printf("\nSamples: %zu rows, %zu unique stacks, %zu functions\n", p->nsamples, p->nstacks, s->n);
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
	if (decode_file(a.file, a.format, &p, &fmt))
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

int cli_cmd_convert(const cli_global *g, int argc, char **argv)
{
	cli_convert_args a;
	wt_profile *p = NULL;
	wt_format fmt = WT_FMT_AUTO;
	wt_buf out = WT_BUF_INIT;
	wt_err e = {0};
	uint8_t *bytes = NULL;
	size_t len = 0;
	char err[CLI_ERR_MAX];
	int type, rc = CLI_EXIT_FAIL;

	if (cli_parse_convert(argc, argv, &a, err, sizeof(err))) {
		fprintf(stderr, "wtctl: %s\n", err);
		return CLI_EXIT_USAGE;
	}
	if (a.to == CLI_TO_SPEEDSCOPE) {
		fprintf(stderr, "wtctl: profile convert: --to speedscope is not supported yet "
				"(it comes with the speedscope format work); use folded or pprof\n");
		return CLI_EXIT_USAGE;
	}
	if (decode_file(a.file, a.format, &p, &fmt))
		goto out;
	if ((type = pick_type(p, a.type, a.file)) < 0)
		goto out;
	if (a.to == CLI_TO_FOLDED) {
		if (wt_folded_encode(p, (size_t)type, &out, &e)) {
			fprintf(stderr, "wtctl: %s: folded: %s\n", a.file, e.msg);
			goto out;
		}
		if (write_out(a.out, out.data, out.len))
			goto out;
	} else {
		/* --type picks pprof's default_sample_type; every type is kept. */
		if (a.type) {
			uint32_t id;
			if (wt_profile_intern_cstr(p, wt_profile_str(p, p->types[type].type), &id, &e)) {
				fprintf(stderr, "wtctl: %s: %s\n", a.file, e.msg);
				goto out;
			}
			p->default_type = id;
		}
		if (wt_pprof_encode(p, 1, &bytes, &len, &e)) {
			fprintf(stderr, "wtctl: %s: pprof: %s\n", a.file, e.msg);
			goto out;
		}
		if (write_out(a.out, bytes, len))
			goto out;
	}
	if (!g->json)
		fprintf(stderr, "wtctl: %s (%s) -> %s: %zu samples, %zu stacks\n", a.file,
			wt_format_name(fmt), a.to == CLI_TO_FOLDED ? "folded" : "pprof", p->nsamples,
			p->nstacks);
	rc = CLI_EXIT_OK;
out:
	wt_buf_free(&out);
	free(bytes);
	wt_profile_free(p);
	return rc;
}
