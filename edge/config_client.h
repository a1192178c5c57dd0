/*
 * config_client.h — the edge's remote config client (docs/operations.md
 * "## Remote config").
 *
 * A thread pulls `GET {hub.url}/v1/edges/{id}/config?project=…&wait=S`
 * over the replication mTLS channel with If-None-Match (long-poll; 304 =
 * unchanged), backing off exponentially with jitter while the hub is away.
 * Each new config is validated, persisted in RocksDB (CF config, key
 * "remote", synced) and applied live:
 *   - token hashes: edge_config_auth() also accepts a bearer token whose
 *     sha256 is an upload/read token hash of one of the edge's projects
 *     (tokens in the local file keep working unless the hub lists them as
 *     revoked: revoked_token_sha256);
 *   - ingest limits: cfg->max_body / max_samples become
 *     min(local file, policy) (the policy can only tighten them);
 *   - sampler: the effective rules of edge.default_project (the project the
 *     eBPF sampler writes to) go to edge_ebpf_apply() once the sampler is
 *     attached, and to the hook set with edge_config_set_policy_hook();
 *   - deletions: projects[].deletions (the hub's audited deletions) go to
 *     edge_deletion_apply() (deletion.h), once each.
 * At start the last good config is loaded from RocksDB first, so an edge
 * restarted during a hub outage runs with it.
 *
 * Ownership: edge_config_client_start() keeps cfg (written: limits) and
 * store until edge_config_client_stop(), which must run before the store
 * closes and after the HTTP server stopped serving.
 */
#ifndef EDGE_CONFIG_CLIENT_H
#define EDGE_CONFIG_CLIENT_H

#include <jansson.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "err.h"
#include "buffer.h"

#define EDGE_CONFIG_KEY "remote"
#define EDGE_CONFIG_MAX_BYTES (8u << 20)
#define EDGE_CONFIG_MAX_TOKENS 100000
#define EDGE_CONFIG_BACKOFF_INITIAL_MS 500
#define EDGE_CONFIG_BACKOFF_MAX_MS 30000

struct edge_ebpf;
typedef struct edge_config_client edge_config_client;

/* What the sampler gets from the policy (effective rules of the default
 * project; -1 = not set by the policy, keep the local value). */
typedef struct edge_sampler_policy {
	const char *project;
	uint64_t revision;
	int enabled;          /* ebpf.enabled */
	int frequency_hz;     /* ebpf.frequency_hz */
	int offcpu;           /* offcpu.enabled (and sample_types.offcpu) */
	int64_t offcpu_threshold_us;
	int cpu;              /* sample_types.cpu */
	int python;           /* ebpf.python: CPython frames (services[] may override per service) */
	int lock;             /* ebpf.lock (and sample_types.lock): lock contention (services[] likewise) */
	int lock_address;     /* ebpf.lock_address: the lock's address as a label (services[] likewise) */
	int alloc;            /* ebpf.alloc (and sample_types.native_alloc): native allocations (services[] likewise) */
	const json_t *effective; /* the whole effective rules object (borrowed) */
} edge_sampler_policy;

typedef void (*edge_policy_hook)(void *arg, const edge_sampler_policy *p);

/* Called on the client thread whenever a config is applied (and at once
 * with the current one, if any). fn = NULL removes it. */
void edge_config_set_policy_hook(edge_policy_hook fn, void *arg);

/* Load the persisted config, then start pulling (when cfg->hub_url is
 * set; else *out = NULL, 0). */
int edge_config_client_start(edge_config *cfg, edge_buffer *store, edge_config_client **out, wt_err *err);
/* Attach the eBPF sampler (may be NULL): the current policy is applied to it
 * at once and every later one too. */
void edge_config_client_set_ebpf(edge_config_client *c, struct edge_ebpf *e);
void edge_config_client_stop(edge_config_client *c);

/* Parse and apply one config body (exposed for unit tests): returns 0 or
 * WT_EINVAL naming the bad field. c may be a client made by
 * edge_config_client_new_detached() (no thread, no store). */
int edge_config_client_apply(edge_config_client *c, const char *text, size_t len, int persist, wt_err *err);
edge_config_client *edge_config_client_new_detached(edge_config *cfg);
void edge_config_client_free_detached(edge_config_client *c);
/* Make edge_config_auth() consult c's token hashes (c = NULL: stop).
 * edge_config_client_start() does this itself. */
void edge_config_client_register_auth(edge_config_client *c);

/* wt_edge_config_* metrics (c = NULL: the running client, if any). */
void edge_config_client_metrics(edge_config_client *c, wt_buf *b);

#endif
