/*
 * edge_projects.h — which projects each edge may write into and read the
 * remote config of (edge_projects_v1), and the admission check every
 * replication batch passes before anything of it is written.
 *
 * An edge is known by the id in its client certificate. The hub admin (or
 * a project's admin token, for its own project) registers an edge to a
 * project with `POST /v1/admin/edges/{id}/projects` (http_edges.c, `wtctl
 * admin edge allow`); nothing else lets an edge write there. Rows are
 * versioned (ReplacingMergeTree on updated_ns) and read by their newest
 * version, so a disallow is one more row and takes effect at the next
 * batch on every hub (no cache).
 *
 * hub_edge_batch_admit() refuses a whole batch (WT_EFORBIDDEN, 403, an
 * audit event `repl.refused` in the project concerned) when
 *   - any upload names a project the edge is not registered to, or
 *   - its seqs jump: last_seq may exceed the highest seq applied for the
 *     edge's incarnation (repl_ledger_v2; the legacy incarnation "" also
 *     repl_ledger_v1) by at most the number of uploads in the batch (edge
 *     seqs are dense; a new incarnation starts at 1, so a larger jump is a forged seq that would poison
 *     the edge's progress).
 */
#ifndef HUB_EDGE_PROJECTS_H
#define HUB_EDGE_PROJECTS_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "ch_client.h"
#include "err.h"

struct hub_ctx;

#define HUB_EDGE_ID_MAX 127 /* buffer bound; valid ids are shorter (WT_PKI_ID_MAX) */
#define HUB_EDGE_MAX_PROJECTS 128

typedef struct hub_edge_projects {
	char name[HUB_EDGE_MAX_PROJECTS][HUB_PROJECT_MAX + 1];
	size_t n;
} hub_edge_projects;

/* 1 if id is a valid edge id, i.e. one a certificate from `wtctl pki
 * issue-edge` can name (wt_pki_valid_id: 1-64 of [A-Za-z0-9._-],
 * starting alphanumeric). */
int hub_edge_id_valid(const char *id);

/* Projects edge_id is registered to (newest version of each row). */
int hub_edge_projects_load(hub_ch *ch, const char *edge_id, hub_edge_projects *out, wt_err *err);
int hub_edge_projects_has(const hub_edge_projects *ep, const char *project);

/* Register (allowed = 1) or unregister edge_id for project; actor is the
 * token id for the audit event (`edge.allow` / `edge.disallow`). */
int hub_edge_projects_set(hub_ch *ch, const char *edge_id, const char *project, int allowed,
			  const char *actor, wt_err *err);

/* Admission of one batch of edge_id's incarnation inc ("" = the legacy
 * one) ending at last_seq: project_of(arg, i) is the project of upload i
 * of n (its header, already parsed). 0, WT_EFORBIDDEN (refused, audited)
 * or a ClickHouse error (WT_EUNAVAIL/WT_EIO: retry). */
int hub_edge_batch_admit(hub_ch *ch, const char *edge_id, const char *inc, uint64_t last_seq, size_t n,
			 const char *(*project_of)(const void *arg, size_t i), const void *arg, wt_err *err);

#endif
