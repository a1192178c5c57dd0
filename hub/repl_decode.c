/*
 * repl_decode.c — decode one replicated upload's original as the edge did
 * (see repl_decode.h); the header's keys are written by edge/http_ingest.c.
 */
#include "repl_decode.h"

#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "sample_types.h"
#include "otlp.h"

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
		for (i = 0; i < t->n_labels && h->nlp < HUB_REPL_MAX_LABELS; i++) {
			if (!t->labels[i]->key || !t->labels[i]->value)
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
				if (h->nlp < HUB_REPL_MAX_LABELS && json_is_string(v)) {
					h->lp[h->nlp].key = k;
					h->lp[h->nlp].value = json_string_value(v);
					h->nlp++;
				}
			}
		}
	}
	return h->project && h->service ? 0 : WT_EINVAL;
}

/* An OTLP request carries several services; the edge stored it once per
 * service and names the one this upload is ("otlp_service"). */
static int decode_original(const Watchtower__Repl__Upload *u, const hub_repl_header *h, wt_format fmt,
			   const wt_decode_opts *o, wt_profile **p, wt_format *det, wt_err *err)
{
	const char *osvc = h->otlp_service;
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

int hub_repl_decode_upload(const Watchtower__Repl__Upload *u, const hub_repl_header *h, const wt_limits *lim,
			   wt_profile **p, wt_format *det, wt_err *err)
{
	wt_decode_opts o;
	wt_format fmt = WT_FMT_AUTO;
	int rc;

	*p = NULL;
	*det = WT_FMT_AUTO;
	if (h->format && wt_format_parse(h->format, &fmt))
		fmt = WT_FMT_AUTO;
	wt_decode_opts_default(&o);
	o.lim = *lim;
	o.hint = h->hint;
	if (h->type)
		o.type = h->type;
	if (h->units)
		o.unit = wt_pyroscope_unit(h->units);
	o.sample_rate = h->sample_rate;
	o.time_ns = h->from_ns ? h->from_ns : u->received_ns;
	if ((rc = decode_original(u, h, fmt, &o, p, det, err)))
		return rc;
	if (h->from_ns) {
		(*p)->time_ns = h->from_ns;
		if (h->until_ns > h->from_ns)
			(*p)->duration_ns = h->until_ns - h->from_ns;
	} else if (!(*p)->time_ns) {
		(*p)->time_ns = u->received_ns;
	}
	return 0;
}
