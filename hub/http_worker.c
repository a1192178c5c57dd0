/*
 * http_worker.c — POST /v1/admin/worker/run?job=retention|archive[&now=T]
 * (hub admin token only): run a worker job now, under the lease, and answer
 * its summary. `now` (unix seconds or RFC 3339) moves the job's clock —
 * "what would retention do on that day" — which is how tests exercise
 * retention without waiting days. 503 when another hub holds the lease.
 */
#include <string.h>

#include "http_server.h"
#include "hub.h"
#include "worker.h"

int hub_handle_worker_run(hub_req *r, wt_err *err)
{
	const char *job = wt_http_param(&r->q, "job"), *now_s = wt_http_param(&r->q, "now");
	int64_t now_ns = wt_now_ns(CLOCK_REALTIME);
	json_t *summary = NULL;
	int rc;

	if (!r->who.super)
		return wt_err_set(err, WT_EFORBIDDEN, "worker jobs are run with the hub admin token");
	if (now_s && (wt_http_parse_time(now_s, &now_ns) || now_ns <= 0))
		return wt_err_set(err, WT_EINVAL, "now: expected unix seconds or an RFC 3339 time");
	if ((rc = hub_worker_run_job(r->ctx, r->ch, job, now_ns / 1000000000LL, &summary, err)))
		return rc;
	hub_req_json(r, 200, summary);
	return 0;
}
