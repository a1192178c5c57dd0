/*
 * edge_config.h — remote config for edges: `GET /v1/edges/{id}/config`
 * on the mutual-TLS replication port (repl_server.c routes it here).
 *
 * The certificate's identity must equal {id} (403 otherwise). Query:
 * `project=P` (repeatable: the projects the edge serves) and `wait=S`
 * (long-poll, at most 30 s: with If-None-Match equal to the current ETag
 * the answer is held until the config changes or S passes, then 304).
 * Only projects the edge is registered to (edge_projects.h) are served;
 * other requested ones are listed in "not_allowed".
 * Body: {"edge_id", "etag", "projects": [{"name", "policy_revision",
 * "policy", "effective", "upload_token_sha256": [...],
 * "read_token_sha256": [...], "revoked_token_sha256": [...],
 * "deletions": [...]}], "not_allowed": [...]} — token hashes of the
 * project's upload/read tokens only, as tokens_v1 stores them (sha256 hex
 * of the secret), so edges accept tokens created at the hub and refuse
 * revoked ones even when their own config file lists them; deletions: the project's audited deletions of the
 * last HUB_EDGE_CONFIG_DELETION_DAYS days, {"deletion_id", "before_ns",
 * "service" (null = all)}, oldest first, which edges apply once to their
 * buffers (edge/deletion.h).
 */
#ifndef HUB_EDGE_CONFIG_H
#define HUB_EDGE_CONFIG_H

#include "ch_client.h"
#include "tls_server.h"

struct hub_ctx;

#define HUB_EDGE_CONFIG_MAX_WAIT_S 30
#define HUB_EDGE_CONFIG_MAX_PROJECTS 64
#define HUB_EDGE_CONFIG_DELETION_DAYS 30
#define HUB_EDGE_CONFIG_MAX_DELETIONS 1000
/* Long-polls held at once; beyond this a poll is answered at once so
 * replication keeps TLS workers (tls_server.h: one connection per worker). */
#define HUB_EDGE_CONFIG_MAX_WAITERS 4

/* path is "/v1/edges/{id}/config". Fills resp; returns 0. */
int hub_edge_config_handle(struct hub_ctx *ctx, hub_ch *ch, const hub_tls_request *req,
			   hub_tls_response *resp);

/* Release held long-polls at once (hub shutdown). */
void hub_edge_config_shutdown(void);

#endif
