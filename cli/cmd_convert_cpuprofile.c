/*
 * cmd_convert_cpuprofile.c — `wtctl profile convert-cpuprofile` (see the
 * header). The .cpuprofile goes through wt_format_decode (format
 * cpuprofile, gzip accepted) and out through wt_folded_encode, so the
 * folded text is exactly what an upload of the .cpuprofile would store.
 * Default counts are samples (folded uploads default to cpu in samples);
 * --type cpu writes nanoseconds instead. Frames are written root first
 * with the names documented in docs/formats.md ("V8 cpuprofile").
 */
#include "cmd_convert_cpuprofile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "folded.h"
#include "format.h"

/* A .cpuprofile is parsed in memory as JSON: keep inputs reasonable. */
#define CONVERT_CPUPROFILE_MAX ((size_t)1 << 30)

static const char usage[] =
	"usage: wtctl profile convert-cpuprofile IN.cpuprofile [-o OUT.folded] [--type samples|cpu]\n";

static int read_input(const char *path, uint8_t **out, size_t *len)
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
		if (b.len + n > CONVERT_CPUPROFILE_MAX || wt_buf_append(&b, chunk, n)) {
			fprintf(stderr, "wtctl: %s: larger than %zu bytes or out of memory\n", path,
				CONVERT_CPUPROFILE_MAX);
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
	*out = wt_buf_steal(&b, len);
	return 0;
}

int cli_cmd_convert_cpuprofile(int argc, char **argv)
{
	static const cli_optspec specs[] = {
		{"--output", "-o", 1}, {"--type", NULL, 1}, {NULL, NULL, 0},
	};
	const char *in = NULL, *outp = NULL, *type = "samples", *val;
	char err[CLI_ERR_MAX];
	cli_argiter it;
	wt_decode_opts o;
	wt_profile *p = NULL;
	wt_buf out = WT_BUF_INIT;
	wt_err e = {0};
	uint8_t *body = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int k, t, rc = CLI_EXIT_FAIL;

	cli_argiter_init(&it, argc, argv);
	while ((k = cli_arg_next(&it, specs, &val, err, sizeof(err))) != CLI_ARG_END) {
		if (k == CLI_ARG_ERR) {
			fprintf(stderr, "wtctl: profile convert-cpuprofile: %s\n%s", err, usage);
			return CLI_EXIT_USAGE;
		}
		if (k == CLI_ARG_POS && !in)
			in = val;
		else if (k == 0)
			outp = val;
		else if (k == 1)
			type = val;
		else {
			fprintf(stderr, "wtctl: profile convert-cpuprofile: unexpected argument %s\n%s", val,
				usage);
			return CLI_EXIT_USAGE;
		}
	}
	if (!in) {
		fputs(usage, stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(type, "samples") && strcmp(type, "cpu")) {
		fprintf(stderr, "wtctl: profile convert-cpuprofile: --type %s: use samples or cpu\n", type);
		return CLI_EXIT_USAGE;
	}
	if (read_input(in, &body, &len))
		goto out;
	wt_decode_opts_default(&o);
	o.lim.max_body = CONVERT_CPUPROFILE_MAX;
	o.lim.max_decompressed = CONVERT_CPUPROFILE_MAX;
	if (wt_format_decode(body, len, WT_FMT_CPUPROFILE, &o, &p, NULL, &e)) {
		fprintf(stderr, "wtctl: %s: %s\n", in, e.msg);
		goto out;
	}
	t = wt_profile_find_type(p, type);
	if (t < 0 && !strcmp(type, "samples"))
		t = wt_profile_find_type(p, "cpu"); /* cpu/samples when the file has no times */
	if (t < 0) {
		fprintf(stderr, "wtctl: %s: the profile has no %s type (no timeDeltas)\n", in, type);
		goto out;
	}
	if (wt_folded_encode(p, (size_t)t, &out, &e)) {
		fprintf(stderr, "wtctl: %s: folded: %s\n", in, e.msg);
		goto out;
	}
	f = (!outp || !strcmp(outp, "-")) ? stdout : fopen(outp, "wb");
	if (!f) {
		fprintf(stderr, "wtctl: %s: %s\n", outp, strerror(errno));
		goto out;
	}
	if ((out.len && fwrite(out.data, 1, out.len, f) != out.len) || (f == stdout ? fflush(f) : fclose(f))) {
		fprintf(stderr, "wtctl: %s: write failed: %s\n", outp ? outp : "stdout", strerror(errno));
		f = NULL;
		goto out;
	}
	f = NULL;
	rc = CLI_EXIT_OK;
out:
	if (f && f != stdout)
		fclose(f);
	wt_buf_free(&out);
	wt_profile_free(p);
	free(body);
	return rc;
}
