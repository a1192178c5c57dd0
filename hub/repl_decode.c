/*
 * repl_decode.c — decode one replicated upload's original as the edge did
 * (see repl_decode.h); the header's keys are written by edge/http_ingest.c,
 * decode options and time placement are the upload contract's
 * (common/upload.c), the same code the edge ran.
 */
#include "repl_decode.h"

#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "sample_types.h"
#include "otlp.h"
#include "upload.h"

static const char *jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k)); /* NULL unless a string */
}

static int64_t jint(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static const char *nonempty(const char *s)
{
	return s && *s ? s : NULL;
}

int hub_repl_header_init(const Watchtower__Repl__Upload *u, json_t **js, hub_repl_header *h)
{
	memset(h, 0, sizeof(*h));
	*js = NULL;
	if (u->header) {
		const Watchtower__Repl__UploadHeader *t = u->header;
		size_t i;
		h->project = nonempty(t->project);
		h->service = nonempty(t->service);
		h->format = nonempty(t->format);
		h->type = nonempty(t->type);
		h->hint = nonempty(t->hint);
		h->units = nonempty(t->units);
		h->otlp_service = nonempty(t->otlp_service);
		h->sample_rate = t->sample_rate;
		h->from_ns = t->from_ns;
		h->until_ns = t->until_ns;
		for (i = 0; i < t->n_labels; i++) {
			if (!t->labels[i]->key || !t->labels[i]->value || h->nlabels++ >= HUB_REPL_MAX_LABELS)
				continue;
			h->lp[h->nlp].key = t->labels[i]->key;
			h->lp[h->nlp].value = t->labels[i]->value;
			h->nlp++;
		}
	} else {
		json_error_t je;
		json_t *labels, *v;
		const char *k;
		*js = json_loadb((const char *)u->header_json.data, u->header_json.len, 0, &je);
		if (!json_is_object(*js))
			return WT_EINVAL;
		h->project = jstr(*js, "project");
		h->service = jstr(*js, "service");
		h->format = jstr(*js, "format");
		h->type = jstr(*js, "type");
		h->hint = jstr(*js, "hint");
		h->units = jstr(*js, "units");
		h->otlp_service = jstr(*js, "otlp_service");
		h->sample_rate = jint(*js, "sample_rate");
		h->from_ns = jint(*js, "from_ns");
		h->until_ns = jint(*js, "until_ns");
		labels = json_object_get(*js, "labels");
		if (json_is_object(labels)) {
			json_object_foreach(labels, k, v) {
				if (json_is_string(v) && h->nlabels++ < HUB_REPL_MAX_LABELS) {
					h->lp[h->nlp].key = k;
					h->lp[h->nlp].value = json_string_value(v);
					h->nlp++;
				}
			}
		}
	}
	return h->project && h->service ? 0 : WT_EINVAL;
}

int hub_repl_header_check(const hub_repl_header *h, wt_err *err)
{
	wt_upload u;
	size_t i;
	int rc = 0;

	wt_upload_init(&u);
	if (h->service)
		rc = wt_upload_set_service(&u, h->service, err);
	for (i = 0; !rc && i < h->nlp; i++)
		rc = wt_upload_add_label(&u, h->lp[i].key, h->lp[i].value, err);
	if (!rc && h->nlabels > WT_UPLOAD_MAX_LABELS)
		rc = wt_err_set(err, WT_ELIMIT, "labels: %zu, more than %d labels", h->nlabels, WT_UPLOAD_MAX_LABELS);
	wt_upload_free(&u);
	return rc;
}

/* An OTLP request carries several services; the edge stores, per service,
 * the request cut down to that service's resource profiles (older edges:
 * the whole request) and names the one this upload is ("otlp_service"). */
static int decode_original(const Watchtower__Repl__Upload *u, const hub_repl_header *h, wt_format fmt,
			   const wt_decode_opts *o, wt_profile **p, wt_format *det, wt_err *err)
{
	const char *osvc = h->otlp_service;
	const uint8_t *data = u->original.data;
	size_t len = u->original.len, i;
	int pass;
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
	/* the service by name; else unknown_service, which the edge names by
	 * the upload's ?service= fallback (edge/otlp_recv.c) */
	for (pass = 0, rc = WT_EINVAL; pass < 2 && rc; pass++)
		for (i = 0; i < r.n; i++)
			if (!strcmp(r.items[i].service, pass ? WT_OTLP_UNKNOWN_SERVICE : osvc)) {
				*p = r.items[i].profile;
				r.items[i].profile = NULL;
				rc = 0;
				break;
			}
	if (rc)
		wt_err_set(err, rc, "otlp: the request has no service \"%.64s\"", osvc);
	wt_otlp_result_free(&r);
	return rc;
}

int hub_repl_decode_upload(const Watchtower__Repl__Upload *u, const hub_repl_header *h, const wt_limits *lim,
			   wt_profile **p, wt_format *det, wt_err *err)
{
	wt_upload_decode d;
	wt_decode_opts o;
	int rc;

	*p = NULL;
	*det = WT_FMT_AUTO;
	if ((rc = hub_repl_header_check(h, err)))
		return rc;
	/* the upload contract (common/upload.h), as the edge applied it */
	memset(&d, 0, sizeof(d));
	if (h->format && wt_format_parse(h->format, &d.fmt))
		d.fmt = WT_FMT_AUTO;
	d.type = h->type;
	d.hint = h->hint;
	d.units = h->units;
	d.sample_rate = h->sample_rate;
	d.from_ns = h->from_ns;
	d.until_ns = h->until_ns;
	wt_upload_decode_opts(&d, lim, u->received_ns, &o);
	if ((rc = decode_original(u, h, d.fmt, &o, p, det, err)))
		return rc;
	wt_upload_place_times(&d, *p, u->received_ns);
	return 0;
}
