/*
 * http_ui.h — the explorer web UI (static files embedded from hub/ui/ at
 * build time) and the small read endpoints it needs that the query API
 * does not have: the services/types list, label keys/values, and a
 * per-service time series for the range picker.
 */
#ifndef HUB_HTTP_UI_H
#define HUB_HTTP_UI_H

#include <stddef.h>

#include "hub.h"

/* One embedded file: served at /ui/<name> (index.html also at /). The
 * generated table (build/gen/ui_assets.c) ends with a NULL name. */
typedef struct hub_ui_asset {
	const char *name;
	const unsigned char *data;
	size_t len;
} hub_ui_asset;

extern const hub_ui_asset hub_ui_assets[];

/* GET/HEAD / and /ui/<name>. With WT_HUB_UI_DIR set in the environment the
 * files are read from that directory instead (UI development). */
void hub_handle_ui(hub_req *r);

/* Route handlers (server.c's table; role read on {project}).
 * GET /v1/projects/{p}/services → {"project","services":[{"name","types":[{"type","unit"}]}]} */
int hub_handle_services(hub_req *r, wt_err *err);
/* GET /v1/projects/{p}/labels?service= → {"project","labels":[{"key","values":[…]}]} */
int hub_handle_labels(hub_req *r, wt_err *err);
/* GET /v1/projects/{p}/profiles/series → {"unit","type","from","until","step","points":[[t_ns,v],…]} */
int hub_handle_series(hub_req *r, wt_err *err);

#endif
