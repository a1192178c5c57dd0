/*
 * upload.c — the upload contract (upload.h): parameter parsing and
 * validation, the label rule, decode options and time placement shared by
 * the edge's and the hub's ingest paths and the hub's replication apply.
 */
#include "upload.h"

#include <stdlib.h>
#include <string.h>

#include "http_server.h"
#include "sample_types.h"

#define MAX_RATE 1000000000LL

void wt_upload_init(wt_upload *u)
{
	memset(u, 0, sizeof(*u));
	u->dec.fmt = WT_FMT_AUTO;
}

void wt_upload_free(wt_upload *u)
{
	size_t i;

	free(u->service);
	free(u->requested_format);
	free(u->type);
	free(u->hint);
	free(u->units);
	free(u->spy_name);
	free(u->aggregation);
	for (i = 0; i < u->nlabels; i++) {
		free(u->labels[i].key);
		free(u->labels[i].value);
	}
	wt_upload_init(u);
}

static int no_controls(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

int wt_upload_service_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n > 0 && n <= WT_UPLOAD_NAME_MAX && no_controls(s, n);
}

int wt_upload_label_key_valid(const char *s)
{
	size_t i, n = s ? strlen(s) : 0;

	if (n == 0 || n > WT_UPLOAD_LABEL_KEY_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
		int other = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '/';
		if (!alpha && (i == 0 || !other))
			return 0;
	}
	return 1;
}

int wt_upload_label_value_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return s && n <= WT_UPLOAD_LABEL_VALUE_MAX && no_controls(s, n);
}

/* Replace *dst with a copy of s (NULL clears). */
static int set_str(char **dst, const char *s, wt_err *err)
{
	char *c = NULL;

	if (s && !(c = strdup(s)))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	free(*dst);
	*dst = c;
	return 0;
}

static void sync_dec(wt_upload *u)
{
	u->dec.type = u->type;
	u->dec.hint = u->hint;
	u->dec.units = u->units;
}

int wt_upload_set_service(wt_upload *u, const char *service, wt_err *err)
{
	if (!wt_upload_service_valid(service))
		return wt_err_set(err, WT_EINVAL, "service: must be 1-%d bytes without control characters",
				  WT_UPLOAD_NAME_MAX);
	return set_str(&u->service, service, err);
}

int wt_upload_set_type(wt_upload *u, const char *type, wt_err *err)
{
	int rc;

	if (type && *type && !wt_upload_label_key_valid(type))
		return wt_err_set(err, WT_EINVAL, "type: \"%.64s\" is not a sample type name ([A-Za-z_][A-Za-z0-9_./-]*)",
				  type);
	if (type && !*type)
		type = NULL;
	if (!(rc = set_str(&u->type, type, err)))
		rc = set_str(&u->hint, wt_upload_type_hint(type), err);
	sync_dec(u);
	return rc;
}

int wt_upload_set_hint(wt_upload *u, const char *hint, wt_err *err)
{
	int rc = set_str(&u->hint, hint, err);
	sync_dec(u);
	return rc;
}

int wt_upload_add_label(wt_upload *u, const char *key, const char *value, wt_err *err)
{
	size_t i;
	wt_upload_label *l;

	if (!wt_upload_label_key_valid(key))
		return wt_err_set(err, WT_EINVAL, "label.%.64s: label keys are [A-Za-z_][A-Za-z0-9_./-]*, at most %d bytes",
				  key ? key : "", WT_UPLOAD_LABEL_KEY_MAX);
	if (!wt_upload_label_value_valid(value))
		return wt_err_set(err, WT_EINVAL, "label.%s: value longer than %d bytes or has control characters",
				  key, WT_UPLOAD_LABEL_VALUE_MAX);
	for (i = 0; i < u->nlabels; i++)
		if (!strcmp(u->labels[i].key, key))
			return wt_err_set(err, WT_EINVAL, "label.%s: given twice", key);
	if (u->nlabels == WT_UPLOAD_MAX_LABELS)
		return wt_err_set(err, WT_ELIMIT, "label.%s: more than %d labels", key, WT_UPLOAD_MAX_LABELS);
	l = &u->labels[u->nlabels];
	l->key = strdup(key);
	l->value = strdup(value);
	if (!l->key || !l->value) {
		free(l->key);
		free(l->value);
		l->key = l->value = NULL;
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	u->nlabels++;
	return 0;
}

static int parse_time(const char *key, const char *v, int64_t *ns, wt_err *err)
{
	*ns = 0;
	if (!*v)
		return 0;
	if (wt_http_parse_time(v, ns) || *ns <= 0)
		return wt_err_set(err, WT_EINVAL, "%s: \"%.64s\" is neither unix seconds nor RFC 3339 after 1970", key, v);
	return 0;
}

int wt_upload_param(wt_upload *u, int pyroscope, const char *key, const char *value, wt_err *err)
{
	const char *v = value ? value : "";

	if (!strcmp(key, "service") && !pyroscope)
		return wt_upload_set_service(u, v, err);
	if (!strcmp(key, "format")) {
		const char *f = *v ? v : pyroscope ? "folded" : "auto";
		if (wt_format_parse(f, &u->dec.fmt))
			return wt_err_set(err, WT_EFORMAT, "format: \"%.32s\" is not one of auto, pprof, folded, "
					  "perf, jfr, otlp, cpuprofile, speedscope", f);
		return set_str(&u->requested_format, f, err);
	}
	if (!strcmp(key, "type") && !pyroscope)
		return wt_upload_set_type(u, v, err);
	if (!strcmp(key, "from"))
		return parse_time(key, v, &u->dec.from_ns, err);
	if (!strcmp(key, "until"))
		return parse_time(key, v, &u->dec.until_ns, err);
	if (!strncmp(key, "label.", 6))
		return wt_upload_add_label(u, key + 6, v, err);
	if (!pyroscope)
		return 0;
	if (!strcmp(key, "sampleRate") && *v) {
		char *end;
		long long r = strtoll(v, &end, 10);
		if (*end || r <= 0 || r > MAX_RATE)
			return wt_err_set(err, WT_EINVAL, "sampleRate: \"%.32s\" is not a positive integer", v);
		u->dec.sample_rate = r;
		return 0;
	}
	if (!strcmp(key, "spyName"))
		return set_str(&u->spy_name, v, err);
	if (!strcmp(key, "aggregationType"))
		return set_str(&u->aggregation, v, err);
	if (!strcmp(key, "units")) {
		int rc = set_str(&u->units, v, err);
		sync_dec(u);
		return rc;
	}
	return 0;
}

int wt_upload_finish(wt_upload *u, wt_err *err)
{
	if (!u->service)
		return wt_err_set(err, WT_EINVAL, "service: required");
	if (u->dec.from_ns && u->dec.until_ns && u->dec.until_ns < u->dec.from_ns)
		return wt_err_set(err, WT_EINVAL, "until: earlier than from");
	if (!u->requested_format)
		return set_str(&u->requested_format, wt_format_name(u->dec.fmt), err);
	return 0;
}

const char *wt_upload_type_hint(const char *type)
{
	if (!type)
		return NULL;
	if (!strncmp(type, "block", 5))
		return "block";
	if (!strncmp(type, "mutex", 5))
		return "mutex";
	return type;
}

void wt_upload_decode_opts(const wt_upload_decode *d, const wt_limits *lim, int64_t received_ns,
			   wt_decode_opts *o)
{
	wt_decode_opts_default(o);
	if (lim)
		o->lim = *lim;
	o->hint = d->hint;
	if (d->type)
		o->type = d->type;
	if (d->units)
		o->unit = wt_pyroscope_unit(d->units);
	o->sample_rate = d->sample_rate;
	o->time_ns = d->from_ns ? d->from_ns : received_ns;
}

void wt_upload_place_times(const wt_upload_decode *d, wt_profile *p, int64_t received_ns)
{
	size_t i;

	if (d->from_ns) {
		int64_t shift = p->time_ns ? d->from_ns - p->time_ns : 0;
		for (i = 0; i < p->nsamples; i++) {
			if (!p->samples[i].time_ns)
				continue;
			if (p->time_ns)
				p->samples[i].time_ns += shift;
			else
				p->samples[i].time_ns = d->from_ns; /* no start to keep offsets to */
		}
		p->time_ns = d->from_ns;
		if (d->until_ns > d->from_ns)
			p->duration_ns = d->until_ns - d->from_ns;
	} else if (!p->time_ns) {
		p->time_ns = received_ns;
	}
}
