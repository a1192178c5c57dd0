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

void hub_handle_worker_run(hub_req *r)
{
	hub_principal who;
	wt_err err = {0, ""};
	struct evkeyvalq q;
	const char *job, *now_s;
	int64_t now_ns = hub_now_ns();
	json_t *summary = NULL;

	q.tqh_first = NULL;
	q.tqh_last = &q.tqh_first;
	if (hub_req_auth(r, &who))
		return;
	if (!who.super) {
		wt_err_set(&err, WT_EFORBIDDEN, "worker jobs are run with the hub admin token");
		goto fail;
	}
	if (wt_http_query(r->req, &q)) {
		wt_err_set(&err, WT_EINVAL, "query string is malformed");
		goto fail;
	}
	job = wt_http_param(&q, "job");
	now_s = wt_http_param(&q, "now");
	if (now_s && (wt_http_parse_time(now_s, &now_ns) || now_ns <= 0)) {
		wt_err_set(&err, WT_EINVAL, "now: expected unix seconds or an RFC 3339 time");
		goto fail;
	}
	if (hub_worker_run_job(r->ctx, r->ch, job, now_ns / 1000000000LL, &summary, &err))
		goto fail;
	hub_req_json(r, 200, summary);
	goto done;
fail:
	hub_req_fail(r, &err);
done:
	evhttp_clear_headers(&q);
}
