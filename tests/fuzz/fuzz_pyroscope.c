/*
 * fuzz_pyroscope.c — libFuzzer target: the Pyroscope-compatible /ingest
 * request as the edge takes it apart (edge/pyroscope.c, then the decode of
 * edge/http_ingest.c): the input is "CONTENT-TYPE\nNAME\nBODY", the
 * Content-Type header, the `name=` parameter and the request body. The
 * boundary is taken from the Content-Type, the body split into
 * multipart/form-data parts, the "profile" (or "jfr") part decoded with
 * small limits and "sample_type_config" parsed as JSON. The body is copied
 * into a buffer of exactly its size so ASan sees any over-read.
 * Seeds: tests/fuzz/seed/fuzz_pyroscope/.
 * Links with: edge/pyroscope.c (tests/fuzz/run reads this line)
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "edge/pyroscope.h"
#include "format.h"
#include "fuzz_limits.h"

/* The next '\n'-terminated field of [*p, end) as a NUL-terminated copy. */
static char *field(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, *p, n);
		s[n] = 0;
	}
	*p = nl ? nl + 1 : end;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	char *ctype = field(&p, end), *name = field(&p, end);
	size_t blen = (size_t)(end - p), np = 0;
	uint8_t *body = malloc(blen ? blen : 1);
	char boundary[256];
	edge_pyro_name pn;
	edge_mp_part parts[EDGE_MP_MAX_PARTS];
	const edge_mp_part *pp, *sp;
	wt_err e = {0, ""};

	if (!ctype || !name || !body)
		goto out;
	memcpy(body, p, blen);
	if (edge_pyro_parse_name(name, &pn, &e) == 0) {
		if (pn.nlabels > EDGE_PYRO_MAX_LABELS || !pn.service)
			abort();
		(void)edge_pyro_type_hint(pn.type);
	}
	if (edge_mp_boundary(ctype, boundary, sizeof(boundary)) != 0)
		goto out;
	if (edge_mp_parse(body, blen, boundary, parts, &np, &e) != 0)
		goto out;
	if (np > EDGE_MP_MAX_PARTS)
		abort();
	for (size_t i = 0; i < np; i++)
		if (parts[i].data < body || parts[i].data + parts[i].len > body + blen)
			abort(); /* parts point into the body */
	pp = edge_mp_find(parts, np, "profile");
	if (!pp)
		pp = edge_mp_find(parts, np, "jfr");
	sp = edge_mp_find(parts, np, "sample_type_config");
	if (sp) {
		json_error_t je;
		json_decref(json_loadb((const char *)sp->data, sp->len, 0, &je));
	}
	if (pp && pp->len) {
		wt_decode_opts o;
		wt_profile *prof = NULL;

		wt_decode_opts_default(&o);
		fuzz_limits(&o.lim);
		if (wt_format_decode(pp->data, pp->len, WT_FMT_AUTO, &o, &prof, NULL, &e) == 0)
			wt_profile_free(prof);
	}
out:
	free(ctype);
	free(name);
	free(body);
	return 0;
}
