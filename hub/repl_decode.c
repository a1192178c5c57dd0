/*
 * repl_decode.c — decode one replicated upload's original as the edge did
 * (see repl_decode.h); the header's keys are written by edge/ingest.c.
 */
#include "repl_decode.h"

#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "otlp.h"

/* Pyroscope `units` → the unit our decoders take (as the edge maps it). */
static const char *pyro_unit(const char *u)
{
	if (!u)
		return NULL;
	if (!strcmp(u, "objects") || !strcmp(u, "goroutines") || !strcmp(u, "lock_samples"))
		return "count";
	if (!strcmp(u, "lock_nanoseconds"))
		return "nanoseconds";
	return u;
}

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k)); /* NULL unless a string */
}

static int64_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* An OTLP request carries several services; the edge stored it once per
 * service and names the one this upload is ("otlp_service"). */
static int decode_original(const Watchtower__Repl__Upload *u, json_t *hdr, wt_format fmt,
			   const wt_decode_opts *o, wt_profile **p, wt_format *det, wt_err *err)
{
	const char *osvc = jstr(hdr, "otlp_service");
	const uint8_t *data = u->original.data;
	size_t len = u->original.len, i;
	uint8_t *plain = NULL;
	wt_otlp_result r;
	int rc;

	if (!osvc || fmt != WT_FMT_OTLP)
		return wt_format_decode(data, len, fmt, o, p, det, err);
	*det = WT_FMT_OTLP;
	if (wt_is_gzip(data, len)) {
		if ((rc = wt_gunzip(data, len, o->lim.max_decompressed, &plain, &len, err)))
			return rc;
		data = plain;
	} else if (wt_is_zstd(data, len)) {
		if ((rc = wt_zstd_decompress(data, len, o->lim.max_decompressed, &plain, &len, err)))
			return rc;
		data = plain;
	}
	memset(&r, 0, sizeof(r));
	rc = wt_otlp_decode(data, len, &o->lim, &r, err);
	free(plain);
	if (rc)
		return rc;
	rc = wt_err_set(err, WT_EINVAL, "otlp: the request has no service \"%.64s\"", osvc);
	for (i = 0; i < r.n; i++)
		if (!strcmp(r.items[i].service, osvc)) {
			*p = r.items[i].profile;
			r.items[i].profile = NULL;
			rc = 0;
			break;
		}
	wt_otlp_result_free(&r);
	return rc;
}

int hub_repl_decode_upload(const Watchtower__Repl__Upload *u, json_t *hdr, const wt_limits *lim,
			   wt_profile **p, wt_format *det, wt_err *err)
{
	wt_decode_opts o;
	wt_format fmt = WT_FMT_AUTO;
	const char *fs = jstr(hdr, "format"), *units = jstr(hdr, "units");
	int64_t from_ns = jint(hdr, "from_ns"), until_ns = jint(hdr, "until_ns");
	int rc;

	*p = NULL;
	*det = WT_FMT_AUTO;
	if (fs && wt_format_parse(fs, &fmt))
		fmt = WT_FMT_AUTO;
	wt_decode_opts_default(&o);
	o.lim = *lim;
	o.hint = jstr(hdr, "hint");
	if (jstr(hdr, "type"))
		o.type = jstr(hdr, "type");
	if (units)
		o.unit = pyro_unit(units);
	o.sample_rate = jint(hdr, "sample_rate");
	o.time_ns = from_ns ? from_ns : u->received_ns;
	if ((rc = decode_original(u, hdr, fmt, &o, p, det, err)))
		return rc;
	if (from_ns) {
		(*p)->time_ns = from_ns;
		if (until_ns > from_ns)
			(*p)->duration_ns = until_ns - from_ns;
	} else if (!(*p)->time_ns) {
		(*p)->time_ns = u->received_ns;
	}
	return 0;
}
