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

/* ebpf.rules: the first rule whose given patterns (fnmatch) all match a
 * process names its service. Unset patterns are NULL. */
typedef struct edge_ebpf_rule {
	char *comm;      /* process name (comm of the thread-group leader) */
	char *cgroup;    /* cgroup v2 path from /proc/PID/cgroup */
	char *container; /* container id */
	char *service;
} edge_ebpf_rule;

/* The remote policy's rules.services[] that match by service glob, in
 * order, with the per-service switches each sets: for each switch the
 * first rule whose glob matches a service decides; on[k] = -1 (the rule
 * does not set that switch) falls back to the default (edge_ebpf_cfg's
 * python, lock, lock_address, alloc). */
enum {
	EDGE_SVC_PYTHON = 0,       /* ebpf.python */
	EDGE_SVC_LOCK = 1,         /* ebpf.lock / sample_types.lock */
	EDGE_SVC_LOCK_ADDRESS = 2, /* ebpf.lock_address */
	EDGE_SVC_ALLOC = 3,        /* ebpf.alloc / sample_types.native_alloc */
	EDGE_SVC_NSWITCHES
};
typedef struct edge_service_rule {
	char *glob;
	int on[EDGE_SVC_NSWITCHES]; /* 1, 0, or -1: not set */
} edge_service_rule;

enum { EDGE_EBPF_HASH = 0, EDGE_EBPF_RING = 1 };
/* ebpf.unwind: how user stacks are walked (docs/operations.md "eBPF sampler") */
enum { EDGE_UNWIND_FP = 0, EDGE_UNWIND_EH_FRAME = 1, EDGE_UNWIND_AUTO = 2 };

/* A service's unwinding mode from the remote policy's
 * rules.services[] (docs/api.md "Policy"): the first rule whose match
 * holds decides; unwind -1 = the rule does not set it (the policy's or
 * the local ebpf.unwind then). Label matches are on the process's
 * container and host labels; a rule naming another label never matches. */
typedef struct edge_unwind_rule {
	char *service;            /* fnmatch glob, NULL = any */
	char **label_keys, **label_vals;
	size_t nlabels;
	int unwind;               /* EDGE_UNWIND_* or -1 */
} edge_unwind_rule;

/* ebpf = { ... } (edge/ebpf_sampler.c; docs/operations.md "## eBPF sampler") */
typedef struct edge_ebpf_cfg {
	int enabled;
	int frequency_hz;       /* on-CPU sampling frequency */
	int offcpu;             /* sched_switch off-CPU time */
	int64_t offcpu_min_us;  /* shorter blocked intervals are not recorded */
	int flush_interval_s;   /* drain + commit period */
	int mode;               /* EDGE_EBPF_HASH or EDGE_EBPF_RING */
	int max_stacks;         /* entries of each stack map */
	int max_keys;           /* entries of each counts map */
	int unwind;             /* EDGE_UNWIND_*: services without a rule below */
	int unwind_rows;        /* rows of the BPF unwind-table array */
	int python;             /* CPython frames (ebpf.python; policy rules.ebpf.python) */
	int lock;               /* lock contention (ebpf.lock; policy rules.ebpf.lock, sample_types.lock) */
	int lock_address;       /* the lock's address as label lock_address (ebpf.lock_address; policy rules.ebpf.lock_address) */
	int alloc;              /* native allocations (ebpf.alloc; policy rules.ebpf.alloc, sample_types.native_alloc) */
	edge_service_rule *svc_rules; /* policy rules.services[]: the four switches above per service */
	size_t nsvc_rules;
	int64_t alloc_sample_bytes; /* mean bytes between sampled allocations (ebpf.alloc_sample_bytes) */
	int64_t alloc_max_live;     /* sampled allocations tracked until freed (ebpf.alloc_max_live) */
	int alloc_inuse;            /* the in-use snapshot: return and free probes (ebpf.alloc_inuse) */
	edge_ebpf_rule *rules;
	size_t nrules;
	edge_unwind_rule *unwind_rules; /* from the remote policy, first match wins */
	size_t n_unwind_rules;
} edge_ebpf_cfg;

/* CPython frames wanted for service under c: the first svc_rules glob that
 * matches decides (on[EDGE_SVC_PYTHON] -1: the default), else c->python. Pure. */
int edge_ebpf_cfg_python(const edge_ebpf_cfg *c, const char *service);
/* Lock contention wanted for service under c: the same with
 * on[EDGE_SVC_LOCK] and c->lock. Pure. */
int edge_ebpf_cfg_lock(const edge_ebpf_cfg *c, const char *service);
/* 1 when some service may want lock contention (the lock program is then
 * loaded): c->lock, or a rule that turns it on. */
int edge_ebpf_cfg_lock_any(const edge_ebpf_cfg *c);
/* The lock's address wanted as a label for service's lock samples: the
 * same with on[EDGE_SVC_LOCK_ADDRESS] and c->lock_address. Pure. */
int edge_ebpf_cfg_lock_address(const edge_ebpf_cfg *c, const char *service);
/* 1 when some service may want lock addresses (the lock program then
 * keeps them in its keys) */
int edge_ebpf_cfg_lock_address_any(const edge_ebpf_cfg *c);
/* Native allocations wanted for service under c (on[EDGE_SVC_ALLOC], c->alloc),
 * and whether some service may want them (the program is then loaded). */
int edge_ebpf_cfg_alloc(const edge_ebpf_cfg *c, const char *service);
int edge_ebpf_cfg_alloc_any(const edge_ebpf_cfg *c);
/* 1 when some service may be unwound with tables (the program is then
 * loaded with the unwinder and its maps) */
int edge_ebpf_cfg_unwinds(const edge_ebpf_cfg *c);
/* "fp" / "eh_frame" / "auto" → EDGE_UNWIND_*, -1 for anything else */
int edge_unwind_mode_parse(const char *s);
const char *edge_unwind_mode_name(int mode);
/* Deep copy of rules (dst owns them; free with edge_unwind_rules_free). */
int edge_unwind_rules_copy(edge_unwind_rule **dst, const edge_unwind_rule *src, size_t n);
void edge_unwind_rules_free(edge_unwind_rule *r, size_t n);

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
	int query_aggregates;  /* local flame/table from the stackidx minutes (edge.query_aggregates) */
	int max_connections;   /* open client connections, HTTP + OTLP (edge.max_connections) */
	int max_streams;       /* concurrent OTLP/gRPC streams per connection */
	int stream_timeout_s;  /* a request body must be complete within this */

	size_t max_body;
	size_t max_decompressed;
	size_t max_inflight;   /* request bodies held by all requests (limits.max_inflight_mb) */
	size_t max_samples;
	size_t max_stack_depth;

	int64_t raw_hours_after_replication;
	int64_t rollup_days;
	uint64_t disk_quota_bytes;
	int retention_interval_s;
	uint64_t min_free_bytes;  /* commits refused below this free space in data_dir */
	uint64_t reserve_bytes;   /* ballast file given up when the disk fills */

	edge_project_cfg *projects;
	size_t nprojects;

	char *hub_url, *hub_ca, *hub_cert, *hub_key;
	/* hub.urls = [...]: replication addresses of several hubs serving one
	 * cluster, tried in order with failover (repl_client.c); when absent,
	 * [hub.url]. hub_url is then hub_urls[0] (remote config, logs). */
	char **hub_urls;
	size_t n_hub_urls;

	/* replication = { ... } (edge/repl_client.c) */
	size_t repl_batch_max_uploads;
	size_t repl_batch_max_bytes;
	int repl_backoff_initial_ms;
	int repl_backoff_max_ms;
	int repl_interval_ms;
	int repl_zstd_level;
	int repl_timeout_s; /* whole request: longer than the hub's apply of a full batch */

	/* hub = { config_wait_s; config_poll_ms; } remote config (config_client.c) */
	int config_wait_s;       /* long-poll seconds; 25; 0 = plain polling */
	int config_poll_ms;      /* least time between two pulls; 1000 */

	edge_ebpf_cfg ebpf;
} edge_config;

/* Defaults for everything (no projects). */
void edge_config_defaults(edge_config *c);
/* Load path over the defaults. Errors name the file, line and key. */
int edge_config_load(edge_config *c, const char *path, wt_err *err);
void edge_config_free(edge_config *c);
/* Release the strings of an ebpf section (also done by edge_config_free). */
void edge_ebpf_cfg_free(edge_ebpf_cfg *e);

/* Project whose upload (role 0) or read (role 1) tokens contain tok; NULL
 * if none. Constant-time comparison per token. */
enum { EDGE_ROLE_UPLOAD = 0, EDGE_ROLE_READ = 1 };
const edge_project_cfg *edge_config_auth(const edge_config *c, const char *tok, int role);
/* Remote tokens (edge/config_client.c): when a hook is set,
 * edge_config_auth asks it about every token: it returns -1 when the hub
 * revoked the token (refused even if the local file lists it), 1 (and the
 * project name in project) when the token's sha256 is an accepted token
 * hash of that project for role, else 0. The project must be one of
 * c->projects. fn = NULL removes the hook. */
typedef int (*edge_remote_auth_fn)(void *arg, const char *tok, int role, char *project, size_t cap);
void edge_config_set_remote_auth(edge_remote_auth_fn fn, void *arg);
const edge_project_cfg *edge_config_project(const edge_config *c, const char *name);

#endif
