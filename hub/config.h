/*
 * config.h — wt-hub configuration (libconfig file, e.g. appliance/hub.cfg).
 * Every key, its default and its meaning is documented in docs/operations.md
 * "## Hub configuration"; key names are stable (appliance scripts generate
 * them).
 *
 * Ownership: hub_config_load() fills a caller-provided struct whose strings
 * are owned by it; release with hub_config_free().
 */
#ifndef HUB_CONFIG_H
#define HUB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct hub_config {
	/* hub = { ... } */
	char *listen;            /* "127.0.0.1:8080" */
	char *data_dir;          /* "/var/lib/watchtower/hub" */
	char *admin_token;       /* super-admin bearer token (required) */
	int workers;             /* HTTP worker threads; 4 */
	size_t max_body;         /* bytes of one upload body; 64 MiB */
	size_t max_inflight;     /* request body bytes all requests hold together; 1 GiB */
	int max_connections;     /* open HTTP connections over all workers; 1024 */
	size_t max_nodes;        /* default flame/callgraph node limit; 2048 */
	size_t max_result_bytes; /* bound on one ClickHouse result; 256 MiB */
	int token_cache_ttl_ms;  /* token lookups cached this long; 5000 */
	int health_interval_ms;  /* ClickHouse health probe period; 1000 */
	int default_range_s;     /* query range when `from` is absent; 3600 */
	int worker_interval_s;   /* retention/archive jobs run this often; 86400; 0 = off */
	int worker_lease_ttl_s;  /* job lease expiry, renewed every third of it while a job runs; 120 */
	int query_aggregates;    /* 1: views read the stack aggregates where they can (stackagg.h); 1 */
	size_t stack_cache_bytes; /* frames cache of the aggregate query path (stacklru.h); 256 MiB */
	size_t view_cache_bytes; /* rendered views of past ranges (viewcache.h); 64 MiB; 0 = off */
	char *pyroscope_prefix;  /* path before /querier.v1.QuerierService/ (pyroscope_api.c); "" */
	size_t rules_max_series; /* recording_rules.max_series: counter series on /metrics; 10000 */

	/* clickhouse = { ... } */
	char *ch_url;            /* "http://127.0.0.1:8123" */
	char *ch_database;       /* "watchtower" */
	char *ch_user;           /* "default" */
	char *ch_password;       /* "" */
	char *ch_cluster;        /* "" = one server; else a <remote_servers> cluster */
	int ch_timeout_ms;       /* per request; 30000 */
	int ch_connect_timeout_ms; /* 2000 */
	int ch_retries;          /* extra attempts for idempotent requests; 2 */
	int ch_backoff_ms;       /* first retry delay, doubled per attempt; 100 */
	size_t ch_insert_batch_rows; /* rows per INSERT; 200000 */

	/* object_store = { backend = "fs"|"s3"; path; s3 = {...} } */
	char *os_backend;
	char *os_path;           /* fs: default "<data_dir>/objects" */
	char *s3_endpoint;       /* "http://127.0.0.1:4569" */
	char *s3_bucket;
	char *s3_region;         /* "us-east-1" */
	char *s3_access_key;
	char *s3_secret_key;
	int s3_timeout_ms;       /* 30000 */

	/* symbols = { ... } (debug files and symbolization, symbols.h) */
	char *sym_cache_dir;        /* local copies; default "<data_dir>/debuginfo-cache" */
	size_t sym_max_file_bytes;  /* largest debug file; 256 MiB */
	int sym_index_ttl_ms;       /* debug-file index cache; 5000 */
	char *sym_debuginfod_urls;  /* blank-separated; "" = debuginfod off (default) */
	int sym_debuginfod_timeout_ms; /* per server and file; 10000 */

	/* replication = { listen; ca; cert; key; } (next issue; parsed, unused) */
	char *repl_listen;
	char *repl_ca, *repl_cert, *repl_key;
	/* claims on a batch's seqs (repl_claim.c): lease expiry, renewed while
	 * the batch is applied; must exceed twice the longest INSERT plus the
	 * settle time; 0 (default) = that plus 10 s. Wait between writing a
	 * claim and deciding who holds it: must exceed a claim insert's
	 * latency plus twice the clock skew between hubs; 200 */
	int repl_claim_ttl_s;
	int repl_claim_settle_ms;
} hub_config;

/* Load path. Errors (WT_EINVAL) name the file, line and key. */
int hub_config_load(const char *path, hub_config *c, wt_err *err);
void hub_config_free(hub_config *c);

/* The longest one ClickHouse INSERT can take, ms (timeouts, and retries in
 * cluster mode). */
long long hub_config_insert_budget_ms(const hub_config *c);

#endif
