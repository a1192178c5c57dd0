/*
 * analysis.h — what the analysis endpoints (http_diff.c, http_timeline.c,
 * http_insights.c, http_leaks.c, http_issues.c) share: small parameter
 * and JSON helpers (the request prologue is the route wrapper's, server.c).
 */
#ifndef HUB_ANALYSIS_H
#define HUB_ANALYSIS_H

#include <event2/keyvalq_struct.h>

#include "hub.h"

/* Parse boolean parameter name ("true"/"false"/"1"/"0"); absent → def. */
int hub_param_bool(const struct evkeyvalq *q, const char *name, int def, int *out, wt_err *err);

/* Parse a floating-point parameter within [lo, hi]; absent → def. */
int hub_param_double(const struct evkeyvalq *q, const char *name, double def, double lo, double hi,
		     double *out, wt_err *err);

/* A finite double as JSON (NaN/inf → 0, so the output stays valid JSON). */
json_t *hub_json_num(double v);

#endif
