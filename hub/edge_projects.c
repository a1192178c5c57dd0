/*
 * edge_projects.c — edge → project registrations (edge_projects_v1) and
 * the admission check of replication batches (see edge_projects.h).
 *
 * repl_apply.c calls hub_edge_batch_admit() once per batch after the
 * headers parsed and before the ledger is touched, so a refused batch
 * leaves no trace but the audit event; edge_config.c serves config only for
 * the projects hub_edge_projects_load() returns.
 */
#include "edge_projects.h"
#include "clock.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "ch_format.h"
#include "log.h"
#include "pki.h"
#include "proto/repl.pb-c.h"
#include "ch_health.h"

/* A refused edge retries with backoff; one audit event per (edge, project,
 * reason) and hub per this interval is enough to see it. */
#define REFUSAL_AUDIT_INTERVAL_NS (60LL * 1000000000LL)
#define REFUSAL_SLOTS 64

int hub_edge_id_valid(const char *id)
{
	return wt_pki_valid_id(id); /* what a certificate may name (common/pki.h) */
}

static int project_row(void *ctx, char **f, size_t n)
{
	hub_edge_projects *ep = ctx;

	if (n >= 1 && ep->n < HUB_EDGE_MAX_PROJECTS && strlen(f[0]) <= HUB_PROJECT_MAX)
		snprintf(ep->name[ep->n++], sizeof(ep->name[0]), "%s", f[0]);
	return 0;
}

int hub_edge_projects_load(hub_ch *ch, const char *edge_id, hub_edge_projects *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	out->n = 0;
	/* newest version of each (edge, project) row; no FINAL: its merge is
	 * not guaranteed to run before a WHERE on a non-key column */
	wt_buf_puts(&sql, "SELECT project FROM (SELECT project, argMax(allowed, updated_ns) AS a"
			  " FROM edge_projects_v1 WHERE edge_id = ");
	hub_sql_quote(&sql, edge_id);
	wt_buf_printf(&sql, " GROUP BY project) WHERE a = 1 ORDER BY project LIMIT %d FORMAT TabSeparated",
		      HUB_EDGE_MAX_PROJECTS);
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, project_row, out);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

int hub_edge_projects_has(const hub_edge_projects *ep, const char *project)
{
	size_t i;

	for (i = 0; i < ep->n; i++)
		if (!strcmp(ep->name[i], project))
			return 1;
	return 0;
}

/* one number (a max() of an empty set is 0) */
static int max_row(void *ctx, char **f, size_t n)
{
	if (n >= 1)
		*(uint64_t *)ctx = strtoull(f[0], NULL, 10);
	return 0;
}

int hub_edge_projects_set(hub_ch *ch, const char *edge_id, const char *project, int allowed,
			  const char *actor, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	char detail[160];
	uint64_t last = 0;
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	int rc;

	/* the new row must be the newest even if another hub's clock ran ahead */
	wt_buf_puts(&sql, "SELECT max(updated_ns) FROM edge_projects_v1 WHERE edge_id = ");
	hub_sql_quote(&sql, edge_id);
	wt_buf_puts(&sql, " AND project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_tsv_each((char *)res.data, res.len, 1, max_row, &last);
	wt_buf_reset(&sql);
	wt_buf_puts(&sql, "INSERT INTO edge_projects_v1 (edge_id, project, allowed, actor, updated_ns) VALUES (");
	hub_sql_quote(&sql, edge_id);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, project);
	wt_buf_printf(&sql, ", %d, ", allowed ? 1 : 0);
	hub_sql_quote(&sql, actor);
	wt_buf_printf(&sql, ", %lld)", (uint64_t)now > last ? (long long)now : (long long)last + 1);
	/* the audit event first: a registration nobody can account for must not exist */
	snprintf(detail, sizeof(detail), "edge=%s", edge_id);
	if (!(rc = hub_audit_record(ch, project, actor, allowed ? "edge.allow" : "edge.disallow", detail, NULL, err)))
		rc = hub_ch_query_buf(ch, &sql, NULL, err);
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

/* ---- batch admission ---------------------------------------------------------- */

typedef struct refusal {
	char key[HUB_EDGE_ID_MAX + HUB_PROJECT_MAX + 16];
	int64_t at_ns;
} refusal;

static pthread_mutex_t refusal_mu = PTHREAD_MUTEX_INITIALIZER;
static refusal refusals[REFUSAL_SLOTS];

/* Log every refusal; audit it unless this hub audited the same one within
 * REFUSAL_AUDIT_INTERVAL_NS. Returns WT_EFORBIDDEN with msg in err. */
static int refuse(hub_ch *ch, const char *edge_id, const char *project, const char *reason, const char *msg,
		  wt_err *err)
{
	char key[sizeof(refusals[0].key)], actor[HUB_EDGE_ID_MAX + 8];
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	size_t i, slot = 0;
	int audit = 1;
	wt_err aerr = {0, ""};

	snprintf(key, sizeof(key), "%s/%s/%s", edge_id, project, reason);
	pthread_mutex_lock(&refusal_mu);
	for (i = 0; i < REFUSAL_SLOTS; i++) {
		if (!strcmp(refusals[i].key, key)) {
			slot = i;
			audit = now - refusals[i].at_ns >= REFUSAL_AUDIT_INTERVAL_NS;
			break;
		}
		if (refusals[i].at_ns < refusals[slot].at_ns)
			slot = i; /* the oldest, reused when the key is new */
	}
	if (audit) {
		snprintf(refusals[slot].key, sizeof(refusals[slot].key), "%s", key);
		refusals[slot].at_ns = now;
	}
	pthread_mutex_unlock(&refusal_mu);
	wt_warn("msg=\"replication batch refused\" edge=%s project=%s reason=%s detail=\"%s\"", edge_id, project,
		reason, msg);
	snprintf(actor, sizeof(actor), "edge:%s", edge_id);
	if (audit && hub_audit_record(ch, project, actor, "repl.refused", msg, NULL, &aerr))
		wt_warn("msg=\"audit event not recorded\" project=%s error=\"%s\"", project, aerr.msg);
	return wt_err_set(err, WT_EFORBIDDEN, "%s", msg);
}

/* Highest seq of edge_id's incarnation inc the ledger shows applied or
 * rejected (0: none); the legacy incarnation "" also in repl_ledger_v1,
 * written before incarnations. */
static int last_done_seq(hub_ch *ch, const char *edge_id, const char *inc, uint64_t *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	*out = 0;
	wt_buf_puts(&sql, "SELECT max(seq) FROM (SELECT seq FROM repl_ledger_v2 WHERE edge_id = ");
	hub_sql_quote(&sql, edge_id);
	wt_buf_puts(&sql, " AND incarnation = ");
	hub_sql_quote(&sql, inc);
	wt_buf_puts(&sql, " AND state >= 2");
	if (!*inc) {
		wt_buf_puts(&sql, " UNION ALL SELECT seq FROM repl_ledger_v1 WHERE edge_id = ");
		hub_sql_quote(&sql, edge_id);
		wt_buf_puts(&sql, " AND state >= 2");
	}
	wt_buf_puts(&sql, ") FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 1, max_row, out);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

int hub_edge_batch_admit(hub_ch *ch, const char *edge_id, const char *inc, uint64_t last_seq, size_t n,
			 const char *(*project_of)(const void *arg, size_t i), const void *arg, wt_err *err)
{
	hub_edge_projects *ep = NULL;
	char msg[WT_ERR_MSG_MAX];
	const char *first_project = NULL;
	uint64_t done = 0;
	size_t i;
	int rc = 0;

	if (!n)
		return 0;
	if (!(ep = malloc(sizeof(*ep))))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	if ((rc = hub_edge_projects_load(ch, edge_id, ep, err)))
		goto out;
	for (i = 0; i < n; i++) {
		const char *p = project_of(arg, i);

		if (p && hub_project_name_valid(p) && !hub_edge_projects_has(ep, p)) {
			snprintf(msg, sizeof(msg), "replication batch: edge \"%s\" is not registered to project \"%s\""
				 " (upload %zu of the batch; nothing of the batch was applied; register it with"
				 " `wtctl admin edge allow --edge %s --project %s`)", edge_id, p, i + 1, edge_id, p);
			rc = refuse(ch, edge_id, p, "project", msg, err);
			goto out;
		}
		for (size_t k = 0; p && !first_project && k < ep->n; k++)
			if (!strcmp(ep->name[k], p))
				first_project = ep->name[k];
	}
	if ((rc = last_done_seq(ch, edge_id, inc, &done, err)))
		goto out;
	if (last_seq > done && last_seq - done > n) {
		snprintf(msg, sizeof(msg), "replication batch: seqs jump from %" PRIu64 " (the edge's last applied)"
			 " to %" PRIu64 " in a batch of %zu uploads; an edge's seqs advance by one per upload",
			 done, last_seq, n);
		rc = refuse(ch, edge_id, first_project ? first_project : "", "seq", msg, err);
	}
out:
	free(ep);
	return rc;
}
