/*
 * params.c — common query-string parameters of the hub API (see params.h).
 */
#include "params.h"

#include <errno.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>

#include "http_server.h"

int hub_service_valid(const char *s)
{
	return wt_upload_service_valid(s);
}

int hub_label_key_valid(const char *s)
{
	return wt_upload_label_key_valid(s);
}

int hub_params_parse(const struct evkeyvalq *q, hub_params *p, wt_err *err)
{
	const struct evkeyval *kv;

	memset(p, 0, sizeof(*p));
	for (kv = q->tqh_first; kv; kv = kv->next.tqe_next) {
		const char *k = kv->key, *v = kv->value ? kv->value : "";
		if (!strcmp(k, "service")) {
			if (!hub_service_valid(v))
				return wt_err_set(err, WT_EINVAL, "service: must be 1-%d bytes without control characters",
						  HUB_SERVICE_MAX);
			p->service = v;
		} else if (!strcmp(k, "type")) {
			if (!hub_label_key_valid(v))
				return wt_err_set(err, WT_EINVAL, "type: \"%.64s\" is not a sample type name", v);
			p->type = v;
		} else if (!strcmp(k, "from") || !strcmp(k, "until")) {
			int64_t ns;
			if (wt_http_parse_time(v, &ns) || ns < 0)
				return wt_err_set(err, WT_EINVAL, "%s: \"%.64s\" is neither unix seconds nor RFC 3339", k, v);
			if (k[0] == 'f') {
				p->from_ns = ns;
				p->has_from = 1;
			} else {
				p->until_ns = ns;
				p->has_until = 1;
			}
		} else if (!strncmp(k, "label.", 6) || !strcmp(k, "span_id") || !strcmp(k, "trace_id")) {
			const char *key = k[0] == 'l' ? k + 6 : k;
			if (!hub_label_key_valid(key))
				return wt_err_set(err, WT_EINVAL, "%s: label keys are [A-Za-z_][A-Za-z0-9_./-]*, at most %d bytes",
						  k, HUB_LABEL_KEY_MAX);
			if (!wt_upload_label_value_valid(v))
				return wt_err_set(err, WT_EINVAL, "%s: value longer than %d bytes or has control characters",
						  k, HUB_LABEL_VALUE_MAX);
			if (p->nlabels == HUB_MAX_LABEL_PARAMS)
				return wt_err_set(err, WT_EINVAL, "%s: more than %d label filters", k, HUB_MAX_LABEL_PARAMS);
			p->labels[p->nlabels].key = key;
			p->labels[p->nlabels].value = v;
			p->nlabels++;
		}
	}
	if (p->has_from && p->has_until && p->until_ns < p->from_ns)
		return wt_err_set(err, WT_EINVAL, "until: earlier than from");
	return 0;
}

int hub_param_uint(const struct evkeyvalq *q, const char *name, long def, long lo, long hi,
		   long *out, wt_err *err)
{
	const char *v = evhttp_find_header(q, name);
	char *end;
	long x;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || end == v || *end || x < lo || x > hi)
		return wt_err_set(err, WT_EINVAL, "%s: expected an integer from %ld to %ld", name, lo, hi);
	*out = x;
	return 0;
}

const char *hub_path_project(const char *path, char *project, size_t cap)
{
	const char *p, *slash;
	size_t n;

	/* prefix first: a shorter path must not be read past its end */
	if (strncmp(path, "/v1/projects/", 13))
		return NULL;
	p = path + 13;
	if (!(slash = strchr(p, '/')))
		return NULL;
	n = (size_t)(slash - p);
	if (n == 0 || n >= cap)
		return NULL;
	memcpy(project, p, n);
	project[n] = '\0';
	return slash;
}
