/*
 * cmd_upload.c — `wtctl profile upload FILE --service S [--format F] ...`.
 *
 * Detects the format by content (wt_format_detect after gunzip/unzstd, as
 * the server does) unless --format names one, gzips the body (unless it is
 * gzip or zstd already), POSTs it to {edge or hub}/v1/profiles, retries a
 * connection failure or a 5xx answer (UPLOAD_TRIES tries in all, backoff
 * doubling from UPLOAD_BACKOFF_MS), and prints what the server stored:
 * format, bytes sent, samples, types, time range (docs/profilers.md).
 * Every try carries the same Idempotency-Key (--idempotency-key, else
 * "wtctl-" and 32 random hex made once per invocation), so the hub stores
 * a retried upload once and two invocations' uploads of one file twice
 * (docs/api.md, direct upload); the edge ignores the header.
 *
 * The file is read through cli_input (mmap'd, bounded by
 * CLI_UPLOAD_MAX); the gzip copy and the detection's decompressed copy
 * are malloc'd here and freed before returning.
 */
#include "cli.h"
#include "backoff.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "compress.h"
#include "format.h"
#include "http_client.h"
#include "input.h"
#include "rng.h"

#define CLI_UPLOAD_MAX ((size_t)2 << 30)
#define CLI_UPLOAD_MAX_DECOMPRESSED ((size_t)8 << 30)
#define UPLOAD_TRIES 3
#define UPLOAD_BACKOFF_MS 500 /* before try 2; doubled before each later try */

/* The format of an upload body by its content (gzip/zstd inflated first, as
 * the server does), or WT_FMT_AUTO when it is not recognised. */
static wt_format detect_body(const uint8_t *body, size_t len)
{
	uint8_t *plain = NULL;
	size_t plen = 0;
	wt_err e = {0};
	wt_format f;

	if (wt_is_gzip(body, len)) {
		if (wt_gunzip(body, len, CLI_UPLOAD_MAX_DECOMPRESSED, &plain, &plen, &e))
			return WT_FMT_AUTO;
	} else if (wt_is_zstd(body, len)) {
		if (wt_zstd_decompress(body, len, CLI_UPLOAD_MAX_DECOMPRESSED, &plain, &plen, &e))
			return WT_FMT_AUTO;
	}
	f = plain ? wt_format_detect(plain, plen) : wt_format_detect(body, len);
	free(plain);
	return f;
}

/* "2026-12-02T17:15:21.976Z", or "unknown" for 0. */
static void fmt_time_ms(char *buf, size_t n, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char s[40];

	if (ns <= 0 || !gmtime_r(&t, &tm)) {
		snprintf(buf, n, "unknown");
		return;
	}
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%s.%03dZ", s, (int)((ns / 1000000) % 1000));
}

/* j[key] as a string, or def. */
static const char *jstr(const json_t *j, const char *key, const char *def)
{
	const char *v = json_string_value(json_object_get(j, key));

	return v ? v : def;
}

typedef struct upload_info {
	const char *file, *service, *format;
	int detected, gzipped, tries;
	size_t nread, nsent;
} upload_info;

/* What the server stored, from its JSON answer, on stdout. */
static void print_stored(const cli_global *g, const upload_info *u, const cli_http_resp *r)
{
	json_t *j = json_loadb(r->body, r->len, 0, NULL);
	json_t *types;
	char t1[64], t2[64];

	if (!j || !json_is_object(j)) { /* not JSON: print it as it came */
		json_decref(j);
		fwrite(r->body, 1, r->len, stdout);
		if (!r->len || r->body[r->len - 1] != '\n')
			putchar('\n');
		return;
	}
	{ /* what the server's parser worked around, on stderr in both modes */
		json_t *w = json_object_get(j, "warnings");
		for (size_t i = 0; json_is_array(w) && i < json_array_size(w); i++)
			if (json_is_string(json_array_get(w, i)))
				fprintf(stderr, "wtctl: %s: warning: %s\n", u->file,
					json_string_value(json_array_get(w, i)));
	}
	if (g->json) {
		json_object_set_new(j, "file", json_string(u->file));
		json_object_set_new(j, "format_sent", json_string(u->format));
		json_object_set_new(j, "detected", json_boolean(u->detected));
		json_object_set_new(j, "bytes_read", json_integer((json_int_t)u->nread));
		json_object_set_new(j, "bytes_sent", json_integer((json_int_t)u->nsent));
		json_object_set_new(j, "gzip", json_boolean(u->gzipped));
		json_object_set_new(j, "tries", json_integer(u->tries));
		json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		putchar('\n');
		json_decref(j);
		return;
	}
	printf("file:     %s\n", u->file);
	printf("format:   %s %s\n", jstr(j, "format", u->format),
	       u->detected ? "(detected by content)" : "(as given)");
	printf("sent:     %zu bytes", u->nsent);
	if (u->gzipped)
		printf(" (gzip of %zu)", u->nread);
	printf(", %d %s\n", u->tries, u->tries == 1 ? "try" : "tries");
	printf("stored:   %" PRId64 " samples, project %s, service %s",
	       (int64_t)json_integer_value(json_object_get(j, "samples")), jstr(j, "project", "?"),
	       jstr(j, "service", u->service));
	if (json_object_get(j, "seq"))
		printf(", seq %" PRId64, (int64_t)json_integer_value(json_object_get(j, "seq")));
	if (json_object_get(j, "upload_id"))
		printf(", upload %s", jstr(j, "upload_id", "?"));
	putchar('\n');
	printf("types:   ");
	types = json_object_get(j, "types");
	for (size_t i = 0; json_is_array(types) && i < json_array_size(types); i++) {
		const char *t = json_string_value(json_array_get(types, i));
		printf(" %s", t ? t : "?");
	}
	putchar('\n');
	if (json_is_integer(json_object_get(j, "from_ns"))) {
		int64_t f = (int64_t)json_integer_value(json_object_get(j, "from_ns"));
		int64_t t = (int64_t)json_integer_value(json_object_get(j, "until_ns"));
		fmt_time_ms(t1, sizeof(t1), f);
		fmt_time_ms(t2, sizeof(t2), t > f ? t : f);
		printf("time:     %s .. %s\n", t1, t2);
	} else {
		printf("time:     (the server did not report the time range)\n");
	}
	json_decref(j);
}

int cli_cmd_upload(const cli_global *g, int argc, char **argv)
{
	cli_upload_args a;
	cli_http_resp r = {0};
	char err[CLI_ERR_MAX];
	const char *base = g->edge ? g->edge : g->hub;
	cli_input in = {0};
	upload_info u = {0};
	uint8_t *gz = NULL;
	const uint8_t *send;
	size_t gzlen = 0;
	wt_err e = {0};
	char *url = NULL;
	const wt_backoff retry = {UPLOAD_BACKOFF_MS, 0, 0};
	char idem[40 + CLI_IDEMPOTENCY_KEY_MAX];
	long backoff;
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
	if (cli_input_open(a.file, CLI_UPLOAD_MAX, &in))
		goto out;
	if (!a.format || !strcmp(a.format, "auto")) {
		wt_format f = detect_body(in.data, in.len);

		if (f != WT_FMT_AUTO) {
			a.format = wt_format_name(f);
			u.detected = 1;
		} else {
			fprintf(stderr, "wtctl: %s: format not recognised here; the server will try (format=auto)\n",
				a.file);
			a.format = "auto";
		}
	}
	send = in.data;
	u.nsent = in.len;
	if (!wt_is_gzip(in.data, in.len) && !wt_is_zstd(in.data, in.len)) {
		if (wt_gzip(in.data, in.len, 6, &gz, &gzlen, &e)) {
			fprintf(stderr, "wtctl: %s: %s\n", a.file, e.msg);
			goto out;
		}
		send = gz;
		u.nsent = gzlen;
		u.gzipped = 1;
	}
	if (a.idempotency_key) {
		snprintf(idem, sizeof(idem), "Idempotency-Key: %s", a.idempotency_key);
	} else {
		uint8_t rnd[16];
		size_t i, n;
		if (wt_random_bytes(rnd, sizeof(rnd))) {
			fprintf(stderr, "wtctl: profile upload: no random bytes for the Idempotency-Key\n");
			goto out;
		}
		n = (size_t)snprintf(idem, sizeof(idem), "Idempotency-Key: wtctl-");
		for (i = 0; i < sizeof(rnd); i++)
			n += (size_t)snprintf(idem + n, sizeof(idem) - n, "%02x", rnd[i]);
	}
	if (!(url = cli_upload_url(base, &a))) {
		fprintf(stderr, "wtctl: bad base URL %s\n", base);
		goto out;
	}
	for (;;) {
		int failed;

		u.tries++;
		cli_http_resp_free(&r);
		failed = cli_http_request_hdr("POST", url, g->token, "application/octet-stream", idem, send, u.nsent,
					      &r, err, sizeof(err));
		if (!failed && r.status < 500)
			break;
		if (u.tries >= UPLOAD_TRIES) {
			if (failed)
				fprintf(stderr, "wtctl: profile upload: %s (gave up after %d tries)\n", err, u.tries);
			else
				cli_http_report_error("profile upload", &r);
			goto out;
		}
		backoff = (long)wt_backoff_ms(&retry, (unsigned)(u.tries - 1));
		if (failed)
			fprintf(stderr, "wtctl: profile upload: %s; retrying in %ld ms\n", err, backoff);
		else
			fprintf(stderr, "wtctl: profile upload: HTTP %ld; retrying in %ld ms\n", r.status, backoff);
		wt_sleep_ms(backoff);
	}
	if (r.status < 200 || r.status >= 300) {
		cli_http_report_error("profile upload", &r);
		goto out;
	}
	u.file = a.file;
	u.service = a.service;
	u.format = a.format;
	u.nread = in.len;
	print_stored(g, &u, &r);
	rc = CLI_EXIT_OK;
out:
	cli_http_resp_free(&r);
	free(url);
	free(gz);
	cli_input_close(&in);
	return rc;
}
