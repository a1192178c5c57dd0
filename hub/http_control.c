/*
 * http_control.c — routing of the control-plane endpoints (policy, audit,
 * deletion, worker runs); server.c calls hub_control_route() first.
 */
#include <string.h>

#include "http_server.h"
#include "hub.h"
#include "params.h"

int hub_control_route(hub_req *r)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(r->req);
	char project[128];
	const char *rest;

	if (!strcmp(r->path, "/v1/admin/worker/run")) {
		if (cmd != EVHTTP_REQ_POST)
			hub_req_method_not_allowed(r, "POST");
		else
			hub_handle_worker_run(r);
		return 1;
	}
	if (!(rest = hub_path_project(r->path, project, sizeof(project))))
		return 0;
	if (!strcmp(rest, "/policy")) {
		if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_PUT)
			hub_req_method_not_allowed(r, "GET, PUT");
		else
			hub_handle_policy(r, project);
		return 1;
	}
	if (!strcmp(rest, "/profiles")) {
		if (cmd != EVHTTP_REQ_DELETE)
			hub_req_method_not_allowed(r, "DELETE");
		else
			hub_handle_delete_profiles(r, project);
		return 1;
	}
	if (!strcmp(rest, "/audit")) {
		if (cmd != EVHTTP_REQ_GET)
			hub_req_method_not_allowed(r, "GET");
		else
			hub_handle_audit(r, project);
		return 1;
	}
	if (!strncmp(rest, "/deletions/", 11) && !strchr(rest + 11, '/')) {
		if (cmd != EVHTTP_REQ_GET)
			hub_req_method_not_allowed(r, "GET");
		else
			hub_handle_deletion(r, project, rest + 11);
		return 1;
	}
	return 0;
}
