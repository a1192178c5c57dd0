/*
 * analysis.c — parameter and JSON helpers of the analysis
 * endpoints (see analysis.h).
 */
#include "analysis.h"

#include <errno.h>
#include <event2/http.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http_server.h"

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
