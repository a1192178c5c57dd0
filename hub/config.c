/*
 * config.c — load hub.cfg (libconfig) into hub_config with the documented
 * defaults (docs/operations.md "## Hub configuration").
 */
#include "config.h"
#include "backoff.h"

#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int set_str(char **dst, const config_t *cf, const char *key, const char *def)
{
	const char *v = NULL;

	if (!config_lookup_string(cf, key, &v))
		v = def;
	free(*dst);
	*dst = v ? strdup(v) : NULL;
	return (v && !*dst) ? WT_ENOMEM : 0;
}

static int get_int(const config_t *cf, const char *key, int def, int lo, int hi,
		   int *out, wt_err *err)
{
	int v;

	if (!config_lookup_int(cf, key, &v))
		v = def;
	if (v < lo || v > hi)
		return wt_err_set(err, WT_EINVAL, "config: %s = %d out of range [%d, %d]",
				  key, v, lo, hi);
	*out = v;
	return 0;
}

static int get_size(const config_t *cf, const char *key, long long def, long long lo,
		    long long hi, size_t *out, wt_err *err)
{
	long long v;
	int iv;

	if (config_lookup_int64(cf, key, &v))
		;
	else if (config_lookup_int(cf, key, &iv))
		v = iv;
	else
		v = def;
	if (v < lo || v > hi)
		return wt_err_set(err, WT_EINVAL, "config: %s = %lld out of range [%lld, %lld]",
				  key, v, lo, hi);
	*out = (size_t)v;
	return 0;
}

long long hub_config_insert_budget_ms(const hub_config *c)
{
	/* cluster mode retries an INSERT after a transport error (block
	 * deduplication makes that safe); one server never does */
	int tries = c->ch_cluster && *c->ch_cluster ? c->ch_retries + 1 : 1;
	long long backoff = 0;
	int i;

	for (i = 1; i < tries; i++)
		backoff += wt_backoff_ms(&(wt_backoff){c->ch_backoff_ms, 0, 0}, (unsigned)(i - 1));
	return (long long)c->ch_timeout_ms * tries + backoff;
}

int hub_config_load(const char *path, hub_config *c, wt_err *err)
{
	config_t cf;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	config_init(&cf);
	if (!config_read_file(&cf, path)) {
		rc = wt_err_set(err, WT_EINVAL, "config %s:%d: %s", path,
				config_error_line(&cf), config_error_text(&cf));
		goto out;
	}
	if (set_str(&c->listen, &cf, "hub.listen", "127.0.0.1:8080") ||
	    set_str(&c->data_dir, &cf, "hub.data_dir", "/var/lib/watchtower/hub") ||
	    set_str(&c->admin_token, &cf, "hub.admin_token", NULL) ||
	    set_str(&c->ch_url, &cf, "clickhouse.url", "http://127.0.0.1:8123") ||
	    set_str(&c->ch_database, &cf, "clickhouse.database", "watchtower") ||
	    set_str(&c->ch_user, &cf, "clickhouse.user", "default") ||
	    set_str(&c->ch_password, &cf, "clickhouse.password", "") ||
	    set_str(&c->ch_cluster, &cf, "clickhouse.cluster", "") ||
	    set_str(&c->os_backend, &cf, "object_store.backend", "fs") ||
	    set_str(&c->os_path, &cf, "object_store.path", NULL) ||
	    set_str(&c->s3_endpoint, &cf, "object_store.s3.endpoint", NULL) ||
	    set_str(&c->s3_bucket, &cf, "object_store.s3.bucket", NULL) ||
	    set_str(&c->s3_region, &cf, "object_store.s3.region", "us-east-1") ||
	    set_str(&c->s3_access_key, &cf, "object_store.s3.access_key", NULL) ||
	    set_str(&c->s3_secret_key, &cf, "object_store.s3.secret_key", NULL) ||
	    set_str(&c->sym_cache_dir, &cf, "symbols.cache_dir", NULL) ||
	    set_str(&c->sym_debuginfod_urls, &cf, "symbols.debuginfod_urls", "") ||
	    set_str(&c->repl_listen, &cf, "replication.listen", "127.0.0.1:8443") ||
	    set_str(&c->repl_ca, &cf, "replication.ca", NULL) ||
	    set_str(&c->repl_cert, &cf, "replication.cert", NULL) ||
	    set_str(&c->repl_key, &cf, "replication.key", NULL) ||
	    set_str(&c->pyroscope_prefix, &cf, "hub.pyroscope_prefix", "")) {
		rc = wt_err_set(err, WT_ENOMEM, "config: out of memory");
		goto out;
	}
	if ((rc = get_int(&cf, "hub.workers", 4, 1, 256, &c->workers, err)) ||
	    (rc = get_size(&cf, "hub.max_body", 64ll << 20, 1024, 4ll << 30, &c->max_body, err)) ||
	    (rc = get_size(&cf, "hub.max_inflight", 1ll << 30, 1 << 20, 64ll << 30, &c->max_inflight, err)) ||
	    (rc = get_int(&cf, "hub.max_connections", 1024, 1, 1000000, &c->max_connections, err)) ||
	    (rc = get_size(&cf, "hub.max_nodes", 2048, 16, 1000000, &c->max_nodes, err)) ||
	    (rc = get_size(&cf, "hub.max_result_bytes", 256ll << 20, 1 << 20, 16ll << 30,
			   &c->max_result_bytes, err)) ||
	    (rc = get_int(&cf, "hub.token_cache_ttl_ms", 5000, 0, 3600000, &c->token_cache_ttl_ms, err)) ||
	    (rc = get_int(&cf, "hub.health_interval_ms", 1000, 50, 600000, &c->health_interval_ms, err)) ||
	    (rc = get_int(&cf, "hub.default_range_s", 3600, 1, 366 * 86400, &c->default_range_s, err)) ||
	    (rc = get_int(&cf, "hub.worker_interval_s", 86400, 0, 366 * 86400, &c->worker_interval_s, err)) ||
	    (rc = get_int(&cf, "hub.worker_lease_ttl_s", 120, 3, 86400, &c->worker_lease_ttl_s, err)) ||
	    (rc = get_int(&cf, "hub.query_aggregates", 1, 0, 1, &c->query_aggregates, err)) ||
	    (rc = get_size(&cf, "hub.stack_cache_bytes", 256ll << 20, 0, 64ll << 30, &c->stack_cache_bytes, err)) ||
	    (rc = get_size(&cf, "hub.view_cache_bytes", 64ll << 20, 0, 64ll << 30, &c->view_cache_bytes, err)) ||
	    (rc = get_size(&cf, "recording_rules.max_series", 10000, 0, 10000000, &c->rules_max_series, err)) ||
	    (rc = get_int(&cf, "clickhouse.timeout_ms", 30000, 100, 3600000, &c->ch_timeout_ms, err)) ||
	    (rc = get_int(&cf, "clickhouse.connect_timeout_ms", 2000, 10, 600000,
			  &c->ch_connect_timeout_ms, err)) ||
	    (rc = get_int(&cf, "clickhouse.retries", 2, 0, 20, &c->ch_retries, err)) ||
	    (rc = get_int(&cf, "clickhouse.backoff_ms", 100, 1, 60000, &c->ch_backoff_ms, err)) ||
	    (rc = get_size(&cf, "clickhouse.insert_batch_rows", 200000, 1, 100000000,
			   &c->ch_insert_batch_rows, err)) ||
	    (rc = get_int(&cf, "replication.claim_ttl_s", 0, 0, 86400, &c->repl_claim_ttl_s, err)) ||
	    (rc = get_int(&cf, "replication.claim_settle_ms", 200, 10, 60000, &c->repl_claim_settle_ms, err)) ||
	    (rc = get_int(&cf, "object_store.s3.timeout_ms", 30000, 100, 3600000, &c->s3_timeout_ms, err)) ||
	    (rc = get_size(&cf, "symbols.max_file_bytes", 256ll << 20, 4096, 16ll << 30,
			   &c->sym_max_file_bytes, err)) ||
	    (rc = get_int(&cf, "symbols.index_ttl_ms", 5000, 0, 3600000, &c->sym_index_ttl_ms, err)) ||
	    (rc = get_int(&cf, "symbols.debuginfod_timeout_ms", 10000, 100, 600000,
			  &c->sym_debuginfod_timeout_ms, err)))
		goto out;
	if (!c->admin_token || strlen(c->admin_token) < 16) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: hub.admin_token missing or shorter than 16 characters", path);
		goto out;
	}
	if (!c->ch_database[0] || strspn(c->ch_database, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
	    strlen(c->ch_database)) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: clickhouse.database must be [A-Za-z0-9_]+", path);
		goto out;
	}
	if (strspn(c->ch_cluster, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
	    strlen(c->ch_cluster)) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: clickhouse.cluster must be [A-Za-z0-9_]* (\"\" = one server)", path);
		goto out;
	}
	if (c->pyroscope_prefix[0] && (c->pyroscope_prefix[0] != '/' ||
					c->pyroscope_prefix[strlen(c->pyroscope_prefix) - 1] == '/')) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: hub.pyroscope_prefix must be \"\" or \"/path\" without a trailing '/'",
				path);
		goto out;
	}
	if (strcmp(c->os_backend, "fs") && strcmp(c->os_backend, "s3")) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: object_store.backend must be \"fs\" or \"s3\", not \"%s\"",
				path, c->os_backend);
		goto out;
	}
	{
		/* an INSERT is only started with more lease left than it can
		 * take (repl_claim.h), and the lease is renewed at half */
		long long need = hub_config_insert_budget_ms(c) + c->repl_claim_settle_ms;
		if (!c->repl_claim_ttl_s) /* derived: the least that is safe, and 10 s more */
			c->repl_claim_ttl_s = (int)(2 * need / 1000 + 11);
		if ((long long)c->repl_claim_ttl_s * 1000 <= 2 * need) {
			rc = wt_err_set(err, WT_EINVAL, "config %s: replication.claim_ttl_s (%d) must exceed twice the"
					" longest INSERT (clickhouse.timeout_ms, times retries + 1 in cluster mode) plus"
					" replication.claim_settle_ms: more than %lld s", path, c->repl_claim_ttl_s,
					2 * need / 1000);
			goto out;
		}
	}
	if (!strcmp(c->os_backend, "s3") && (!c->s3_endpoint || !c->s3_bucket || !c->s3_access_key ||
					     !c->s3_secret_key)) {
		rc = wt_err_set(err, WT_EINVAL, "config %s: object_store.s3 needs endpoint, bucket, access_key, secret_key",
				path);
		goto out;
	}
	if (!c->os_path) {
		size_t n = strlen(c->data_dir) + sizeof("/objects");
		c->os_path = malloc(n);
		if (!c->os_path) {
			rc = wt_err_set(err, WT_ENOMEM, "config: out of memory");
			goto out;
		}
		snprintf(c->os_path, n, "%s/objects", c->data_dir);
	}
	if (!c->sym_cache_dir) {
		size_t n = strlen(c->data_dir) + sizeof("/debuginfo-cache");
		if (!(c->sym_cache_dir = malloc(n))) {
			rc = wt_err_set(err, WT_ENOMEM, "config: out of memory");
			goto out;
		}
		snprintf(c->sym_cache_dir, n, "%s/debuginfo-cache", c->data_dir);
	}
out:
	config_destroy(&cf);
	if (rc)
		hub_config_free(c);
	return rc;
}

void hub_config_free(hub_config *c)
{
	char **s[] = {&c->listen, &c->data_dir, &c->admin_token, &c->ch_url, &c->ch_database,
		      &c->ch_user, &c->ch_password, &c->ch_cluster, &c->os_backend, &c->os_path, &c->s3_endpoint,
		      &c->s3_bucket, &c->s3_region, &c->s3_access_key, &c->s3_secret_key,
		      &c->repl_listen, &c->repl_ca, &c->repl_cert, &c->repl_key, &c->pyroscope_prefix, &c->sym_cache_dir,
		      &c->sym_debuginfod_urls};
	size_t i;

	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		free(*s[i]);
		*s[i] = NULL;
	}
}
