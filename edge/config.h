/*
 * config.h — wt-edge configuration (libconfig file, keys documented in
 * docs/operations.md "## Edge configuration" and appliance/edge.cfg).
 *
 * Ownership: edge_config_load() fills a caller-provided struct whose strings
 * and arrays it owns; release with edge_config_free().
 */
#ifndef EDGE_CONFIG_H
#define EDGE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct edge_project_cfg {
	char *name;
	char **upload_tokens;
	size_t n_upload;
	char **read_tokens;
	size_t n_read;
} edge_project_cfg;

enum { EDGE_ROLLUP_MERGE = 0, EDGE_ROLLUP_RMW = 1 };

typedef struct edge_config {
	char *id;
	char *listen_host;
	int listen_port;
	/* OTLP listeners "host:port" ("" = off); *_set: given in the file
	 * (then failing to bind is fatal; a default that is taken only warns) */
	char *otlp_http_listen, *otlp_grpc_listen;
	int otlp_http_set, otlp_grpc_set;
	char *data_dir;
	char *default_project;
	int sync;
	int workers;
	int rollup_mode;
	int max_connections;

	size_t max_body;
	size_t max_decompressed;
	size_t max_samples;
	size_t max_stack_depth;

	int64_t raw_hours_after_replication;
	int64_t rollup_days;
	uint64_t disk_quota_bytes;
	int retention_interval_s;

	edge_project_cfg *projects;
	size_t nprojects;

	char *hub_url, *hub_ca, *hub_cert, *hub_key;

	/* replication = { ... } (edge/repl_client.c) */
	size_t repl_batch_max_uploads;
	size_t repl_batch_max_bytes;
	int repl_backoff_initial_ms;
	int repl_backoff_max_ms;
	int repl_interval_ms;
	int repl_zstd_level;
} edge_config;

/* Defaults for everything (no projects). */
void edge_config_defaults(edge_config *c);
/* Load path over the defaults. Errors name the file, line and key. */
int edge_config_load(edge_config *c, const char *path, wt_err *err);
void edge_config_free(edge_config *c);

/* Project whose upload (role 0) or read (role 1) tokens contain tok; NULL
 * if none. Constant-time comparison per token. */
enum { EDGE_ROLE_UPLOAD = 0, EDGE_ROLE_READ = 1 };
const edge_project_cfg *edge_config_auth(const edge_config *c, const char *tok, int role);
const edge_project_cfg *edge_config_project(const edge_config *c, const char *name);

#endif
