/*
 * analysis.h — what the analysis endpoints (http_diff.c, http_timeline.c,
 * http_insights.c, http_leaks.c, http_issues.c) share: the request
 * prologue (token, project, role, query string) and small helpers.
 */
#ifndef HUB_ANALYSIS_H
#define HUB_ANALYSIS_H

#include <event2/keyvalq_struct.h>

#include "hub.h"

/* Authenticate r, check project and that the token has role `need` on it,
 * parse the query string into *q (the caller clears it with
 * evhttp_clear_headers, also on failure). Returns 0 when the request may
 * go on; 1 when a reply was already sent (bad token); a negative code with
 * *err set otherwise (the caller replies with hub_req_fail). *who may be
 * NULL. */
int hub_analysis_begin(hub_req *r, const char *project, int need, struct evkeyvalq *q,
		       hub_principal *who, wt_err *err);

/* Parse boolean parameter name ("true"/"false"/"1"/"0"); absent → def. */
int hub_param_bool(const struct evkeyvalq *q, const char *name, int def, int *out, wt_err *err);

/* Parse a floating-point parameter within [lo, hi]; absent → def. */
int hub_param_double(const struct evkeyvalq *q, const char *name, double def, double lo, double hi,
		     double *out, wt_err *err);

/* A finite double as JSON (NaN/inf → 0, so the output stays valid JSON). */
json_t *hub_json_num(double v);

#endif
