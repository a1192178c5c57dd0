/*
 * analysis.c — shared prologue and parameter helpers of the analysis
 * endpoints (see analysis.h).
 */
#include "analysis.h"

#include <errno.h>
#include <event2/http.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http_server.h"

int hub_analysis_begin(hub_req *r, const char *project, int need, struct evkeyvalq *q,
		       hub_principal *who, wt_err *err)
{
	hub_principal local;

	q->tqh_first = NULL;
	q->tqh_last = &q->tqh_first;
	if (!who)
		who = &local;
	if (hub_req_auth(r, who))
		return 1;
	if (!hub_project_name_valid(project))
		return wt_err_set(err, WT_ENOTFOUND, "project: \"%.64s\" is not a valid project name", project);
	if (hub_auth_allows(who, project, need, err))
		return err->code ? err->code : WT_EFORBIDDEN;
	if (wt_http_query(r->req, q))
		return wt_err_set(err, WT_EINVAL, "query string is malformed");
	return 0;
}

int hub_param_bool(const struct evkeyvalq *q, const char *name, int def, int *out, wt_err *err)
{
	const char *v = evhttp_find_header(q, name);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!strcmp(v, "true") || !strcmp(v, "1")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(v, "false") || !strcmp(v, "0")) {
		*out = 0;
		return 0;
	}
	return wt_err_set(err, WT_EINVAL, "%s: expected true or false", name);
}

int hub_param_double(const struct evkeyvalq *q, const char *name, double def, double lo, double hi,
		     double *out, wt_err *err)
{
	const char *v = evhttp_find_header(q, name);
	char *end;
	double x;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	x = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi)
		return wt_err_set(err, WT_EINVAL, "%s: expected a number from %g to %g", name, lo, hi);
	*out = x;
	return 0;
}

json_t *hub_json_num(double v)
{
	return json_real(isfinite(v) ? v : 0.0);
}
