/*
 * params.h — validation of the query-string parameters shared by the
 * upload and query endpoints (service, type, from/until, label.K=V,
 * span_id, trace_id). Errors name the parameter ("from: ...").
 */
#ifndef HUB_PARAMS_H
#define HUB_PARAMS_H

#include <event2/keyvalq_struct.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "upload.h"

/* The upload contract's limits (common/upload.h): whatever an upload may
 * store, a query may name. */
#define HUB_MAX_LABEL_PARAMS WT_UPLOAD_MAX_LABELS
#define HUB_SERVICE_MAX WT_UPLOAD_NAME_MAX
#define HUB_LABEL_KEY_MAX WT_UPLOAD_LABEL_KEY_MAX
#define HUB_LABEL_VALUE_MAX WT_UPLOAD_LABEL_VALUE_MAX

typedef struct hub_label_param {
	const char *key;   /* points into the evkeyvalq (after "label.") */
	const char *value;
} hub_label_param;

typedef struct hub_params {
	const char *service;  /* NULL when absent */
	const char *type;     /* NULL when absent */
	int64_t from_ns, until_ns;
	int has_from, has_until;
	hub_label_param labels[HUB_MAX_LABEL_PARAMS];
	size_t nlabels;
} hub_params;

/* Fill p from q. Borrowed pointers stay valid while q lives. Unknown
 * parameters are ignored. 0 or WT_EINVAL naming the parameter. */
int hub_params_parse(const struct evkeyvalq *q, hub_params *p, wt_err *err);

/* "/v1/projects/{p}/…": copy p (1 to cap-1 bytes) into project and return
 * a pointer to the '/' that follows it; NULL when path has another shape.
 * The route matchers of server.c and the http_*.c routers all use it. */
const char *hub_path_project(const char *path, char *project, size_t cap);

/* 1 if s is a usable service name (wt_upload_service_valid). */
int hub_service_valid(const char *s);
/* 1 if s is a label key (wt_upload_label_key_valid:
 * [A-Za-z_][A-Za-z0-9_./-]*, at most WT_UPLOAD_LABEL_KEY_MAX bytes). */
int hub_label_key_valid(const char *s);

/* Parse a positive integer parameter within [lo, hi]; absent → def. */
int hub_param_uint(const struct evkeyvalq *q, const char *name, long def, long lo, long hi,
		   long *out, wt_err *err);

#endif
