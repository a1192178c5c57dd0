/*
 * config.c — loading wt-edge's libconfig file into edge_config, with the
 * documented defaults, and token lookup for the HTTP handlers.
 */
#include "config.h"

#include <fnmatch.h>
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>

#include "listen_addr.h"

#define MB ((size_t)1024 * 1024)

void edge_config_defaults(edge_config *c)
{
	memset(c, 0, sizeof(*c));
	c->id = strdup("edge1");
	c->listen_host = strdup("127.0.0.1");
	c->listen_port = 4040;
	c->otlp_http_listen = strdup("127.0.0.1:4318");
	c->otlp_grpc_listen = strdup("127.0.0.1:4317");
	c->data_dir = strdup("/var/lib/watchtower/edge");
	c->default_project = strdup("demo");
	c->sync = 1;
	c->workers = 4;
	c->rollup_mode = EDGE_ROLLUP_MERGE;
	c->query_aggregates = 1;
	c->max_connections = 1024;
	c->max_streams = 16;
	c->stream_timeout_s = 60;
	c->max_inflight = 256 * MB;
	c->max_body = 64 * MB;
	c->max_decompressed = 512 * MB;
	c->max_samples = 5000000;
	c->max_stack_depth = 2048;
	c->raw_hours_after_replication = 24;
	c->rollup_days = 7;
	c->disk_quota_bytes = (uint64_t)10240 * MB;
	c->retention_interval_s = 60;
	c->min_free_bytes = 64 * MB;
	c->reserve_bytes = 16 * MB;
	c->hub_url = strdup("");
	c->hub_ca = strdup("");
	c->hub_cert = strdup("");
	c->hub_key = strdup("");
	c->repl_batch_max_uploads = 64;
	c->repl_batch_max_bytes = 32 * MB;
	c->repl_backoff_initial_ms = 200;
	c->repl_backoff_max_ms = 30000;
	c->repl_interval_ms = 500;
	c->repl_zstd_level = 3;
	c->repl_timeout_s = 300;
	c->config_wait_s = 25;
	c->config_poll_ms = 1000;
	c->ebpf.enabled = 0;
	c->ebpf.frequency_hz = 19; /* prime: no lockstep with 10 ms timers (docs/operations.md) */
	c->ebpf.offcpu = 1;
	c->ebpf.offcpu_min_us = 1000;
	c->ebpf.flush_interval_s = 10;
	c->ebpf.mode = EDGE_EBPF_HASH;
	c->ebpf.unwind = EDGE_UNWIND_AUTO;
	c->ebpf.unwind_rows = 4000000;
	c->ebpf.python = 1;
	c->ebpf.lock = 1;
	c->ebpf.alloc = 0; /* a trap per malloc/free call: per service (docs/operations.md) */
	c->ebpf.alloc_sample_bytes = 512 * 1024;
	c->ebpf.alloc_max_live = 32768;
	c->ebpf.alloc_inuse = 1;
	c->ebpf.max_stacks = 16384;
	c->ebpf.max_keys = 16384;
}

/* switch k for service: the first rule whose glob matches decides (-1: dflt) */
static int rule_pick(const edge_ebpf_cfg *c, int k, const char *service, int dflt)
{
	for (size_t i = 0; i < c->nsvc_rules; i++) {
		const edge_service_rule *r = &c->svc_rules[i];
		if (service && r->glob && !fnmatch(r->glob, service, 0))
			return r->on[k] >= 0 ? r->on[k] : dflt;
	}
	return dflt;
}

/* dflt, or a rule that turns switch k on */
static int rule_any(const edge_ebpf_cfg *c, int k, int dflt)
{
	for (size_t i = 0; i < c->nsvc_rules && !dflt; i++)
		dflt = c->svc_rules[i].on[k] == 1;
	return dflt;
}

int edge_ebpf_cfg_python(const edge_ebpf_cfg *c, const char *service)
{
	return rule_pick(c, EDGE_SVC_PYTHON, service, c->python);
}

int edge_ebpf_cfg_lock(const edge_ebpf_cfg *c, const char *service)
{
	return rule_pick(c, EDGE_SVC_LOCK, service, c->lock);
}

int edge_ebpf_cfg_lock_any(const edge_ebpf_cfg *c)
{
	return rule_any(c, EDGE_SVC_LOCK, c->lock);
}

int edge_ebpf_cfg_lock_address(const edge_ebpf_cfg *c, const char *service)
{
	return rule_pick(c, EDGE_SVC_LOCK_ADDRESS, service, c->lock_address);
}

int edge_ebpf_cfg_lock_address_any(const edge_ebpf_cfg *c)
{
	return rule_any(c, EDGE_SVC_LOCK_ADDRESS, c->lock_address);
}

int edge_ebpf_cfg_alloc(const edge_ebpf_cfg *c, const char *service)
{
	return rule_pick(c, EDGE_SVC_ALLOC, service, c->alloc);
}

int edge_ebpf_cfg_alloc_any(const edge_ebpf_cfg *c)
{
	return rule_any(c, EDGE_SVC_ALLOC, c->alloc);
}

int edge_unwind_mode_parse(const char *s)
{
	if (!s)
		return -1;
	if (!strcmp(s, "fp"))
		return EDGE_UNWIND_FP;
	if (!strcmp(s, "eh_frame"))
		return EDGE_UNWIND_EH_FRAME;
	if (!strcmp(s, "auto"))
		return EDGE_UNWIND_AUTO;
	return -1;
}

const char *edge_unwind_mode_name(int mode)
{
	return mode == EDGE_UNWIND_FP ? "fp" : mode == EDGE_UNWIND_EH_FRAME ? "eh_frame" : "auto";
}

int edge_ebpf_cfg_unwinds(const edge_ebpf_cfg *c)
{
	if (c->unwind != EDGE_UNWIND_FP)
		return 1;
	for (size_t i = 0; i < c->n_unwind_rules; i++)
		if (c->unwind_rules[i].unwind > EDGE_UNWIND_FP)
			return 1;
	return 0;
}

void edge_unwind_rules_free(edge_unwind_rule *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++) {
		free(r[i].service);
		for (size_t k = 0; k < r[i].nlabels; k++) {
			free(r[i].label_keys[k]);
			free(r[i].label_vals[k]);
		}
		free(r[i].label_keys);
		free(r[i].label_vals);
	}
	free(r);
}

int edge_unwind_rules_copy(edge_unwind_rule **dst, const edge_unwind_rule *src, size_t n)
{
	edge_unwind_rule *d = n ? calloc(n, sizeof(*d)) : NULL;
	int rc = 0;

	*dst = NULL;
	if (n && !d)
		return WT_ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		d[i].unwind = src[i].unwind;
		if (src[i].service && !(d[i].service = strdup(src[i].service)))
			rc = WT_ENOMEM;
		if (!rc && src[i].nlabels) {
			d[i].label_keys = calloc(src[i].nlabels, sizeof(char *));
			d[i].label_vals = calloc(src[i].nlabels, sizeof(char *));
			if (!d[i].label_keys || !d[i].label_vals)
				rc = WT_ENOMEM;
			for (size_t k = 0; !rc && k < src[i].nlabels; k++) {
				d[i].nlabels = k + 1;
				if (!(d[i].label_keys[k] = strdup(src[i].label_keys[k])) ||
				    !(d[i].label_vals[k] = strdup(src[i].label_vals[k])))
					rc = WT_ENOMEM;
			}
		}
	}
	if (rc) {
		edge_unwind_rules_free(d, n);
		return rc;
	}
	*dst = d;
	return 0;
}

/* free *r's globs and the array; *r = NULL, *n = 0 */
void edge_ebpf_cfg_free(edge_ebpf_cfg *e)
{
	edge_unwind_rules_free(e->unwind_rules, e->n_unwind_rules);
	e->unwind_rules = NULL;
	e->n_unwind_rules = 0;
	for (size_t i = 0; i < e->nrules; i++) {
		free(e->rules[i].comm);
		free(e->rules[i].cgroup);
		free(e->rules[i].container);
		free(e->rules[i].service);
	}
	free(e->rules);
	e->rules = NULL;
	e->nrules = 0;
	for (size_t i = 0; i < e->nsvc_rules; i++)
		free(e->svc_rules[i].glob);
	free(e->svc_rules);
	e->svc_rules = NULL;
	e->nsvc_rules = 0;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void edge_config_free(edge_config *c)
{
	free(c->id);
	free(c->listen_host);
	free(c->otlp_http_listen);
	free(c->otlp_grpc_listen);
	free(c->data_dir);
	free(c->default_project);
	for (size_t i = 0; i < c->nprojects; i++) {
		free(c->projects[i].name);
		free_strv(c->projects[i].upload_tokens, c->projects[i].n_upload);
		free_strv(c->projects[i].read_tokens, c->projects[i].n_read);
	}
	free(c->projects);
	free(c->hub_url);
	free_strv(c->hub_urls, c->n_hub_urls);
	free(c->hub_ca);
	free(c->hub_cert);
	free(c->hub_key);
	edge_ebpf_cfg_free(&c->ebpf);
	memset(c, 0, sizeof(*c));
}

static int get_str(config_setting_t *g, const char *key, char **dst, const char *path, wt_err *err)
{
	config_setting_t *s = g ? config_setting_get_member(g, key) : NULL;
	if (!s)
		return 0;
	const char *v = config_setting_get_string(s);
	if (!v)
		return wt_err_set(err, WT_EINVAL, "%s:%d: %s must be a string", path,
				  config_setting_source_line(s), config_setting_name(s));
	char *d = strdup(v);
	if (!d)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	free(*dst);
	*dst = d;
	return 0;
}

static int get_int(config_setting_t *g, const char *key, long long lo, long long hi, long long *dst,
		   const char *path, wt_err *err)
{
	config_setting_t *s = g ? config_setting_get_member(g, key) : NULL;
	if (!s)
		return 0;
	int t = config_setting_type(s);
	if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
		return wt_err_set(err, WT_EINVAL, "%s:%d: %s must be an integer", path,
				  config_setting_source_line(s), key);
	long long v = config_setting_get_int64(s);
	if (v < lo || v > hi)
		return wt_err_set(err, WT_EINVAL, "%s:%d: %s = %lld is outside [%lld, %lld]", path,
				  config_setting_source_line(s), key, v, lo, hi);
	*dst = v;
	return 0;
}

static int get_bool(config_setting_t *g, const char *key, int *dst, const char *path, wt_err *err)
{
	config_setting_t *s = g ? config_setting_get_member(g, key) : NULL;
	if (!s)
		return 0;
	if (config_setting_type(s) != CONFIG_TYPE_BOOL)
		return wt_err_set(err, WT_EINVAL, "%s:%d: %s must be true or false", path,
				  config_setting_source_line(s), key);
	*dst = config_setting_get_bool(s);
	return 0;
}

static int get_strv(config_setting_t *g, const char *key, char ***dst, size_t *n, const char *path, wt_err *err)
{
	config_setting_t *s = g ? config_setting_get_member(g, key) : NULL;
	if (!s)
		return 0;
	if (!config_setting_is_array(s) && !config_setting_is_list(s))
		return wt_err_set(err, WT_EINVAL, "%s:%d: %s must be an array of strings", path,
				  config_setting_source_line(s), key);
	int cnt = config_setting_length(s);
	char **v = calloc(cnt ? (size_t)cnt : 1, sizeof(*v));
	if (!v)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (int i = 0; i < cnt; i++) {
		const char *e = config_setting_get_string_elem(s, i);
		if (!e || !*e) {
			free_strv(v, (size_t)i);
			return wt_err_set(err, WT_EINVAL, "%s:%d: %s[%d] must be a non-empty string", path,
					  config_setting_source_line(s), key, i);
		}
		v[i] = strdup(e);
	}
	*dst = v;
	*n = (size_t)cnt;
	return 0;
}

static int load_ebpf(edge_ebpf_cfg *e, config_setting_t *g, const char *path, wt_err *err)
{
	long long v;
	char *mode = NULL;
	int rc;

	if (!g)
		return 0;
	if ((rc = get_bool(g, "enabled", &e->enabled, path, err)) || (rc = get_bool(g, "offcpu", &e->offcpu, path, err)) ||
	    (rc = get_bool(g, "python", &e->python, path, err)) || (rc = get_bool(g, "lock", &e->lock, path, err)) ||
	    (rc = get_bool(g, "lock_address", &e->lock_address, path, err)) ||
	    (rc = get_bool(g, "alloc", &e->alloc, path, err)) ||
	    (rc = get_bool(g, "alloc_inuse", &e->alloc_inuse, path, err)))
		return rc;
	v = e->frequency_hz;
	if ((rc = get_int(g, "frequency_hz", 1, 10000, &v, path, err)))
		return rc;
	e->frequency_hz = (int)v;
	v = e->offcpu_min_us;
	if ((rc = get_int(g, "offcpu_min_us", 0, 60000000, &v, path, err)))
		return rc;
	e->offcpu_min_us = v;
	v = e->flush_interval_s;
	if ((rc = get_int(g, "flush_interval_s", 1, 3600, &v, path, err)))
		return rc;
	e->flush_interval_s = (int)v;
	v = e->max_stacks;
	if ((rc = get_int(g, "max_stacks", 256, 1 << 22, &v, path, err)))
		return rc;
	e->max_stacks = (int)v;
	v = e->max_keys;
	if ((rc = get_int(g, "max_keys", 256, 1 << 22, &v, path, err)))
		return rc;
	e->max_keys = (int)v;
	v = e->alloc_sample_bytes;
	if ((rc = get_int(g, "alloc_sample_bytes", 1, 1LL << 31, &v, path, err)))
		return rc;
	e->alloc_sample_bytes = v;
	v = e->alloc_max_live;
	if ((rc = get_int(g, "alloc_max_live", 256, 1 << 22, &v, path, err)))
		return rc;
	e->alloc_max_live = v;
	v = e->unwind_rows;
	if ((rc = get_int(g, "unwind_rows", 1024, 1 << 26, &v, path, err)))
		return rc;
	e->unwind_rows = (int)v;
	if ((rc = get_str(g, "unwind", &mode, path, err)))
		return rc;
	if (mode) {
		if (edge_unwind_mode_parse(mode) >= 0)
			e->unwind = edge_unwind_mode_parse(mode);
		else
			rc = wt_err_set(err, WT_EINVAL, "%s: ebpf.unwind = \"%s\": expected fp, eh_frame or auto", path, mode);
		free(mode);
		mode = NULL;
		if (rc)
			return rc;
	}
	if ((rc = get_str(g, "mode", &mode, path, err)))
		return rc;
	if (mode) {
		if (!strcmp(mode, "hash"))
			e->mode = EDGE_EBPF_HASH;
		else if (!strcmp(mode, "ring"))
			e->mode = EDGE_EBPF_RING;
		else
			rc = wt_err_set(err, WT_EINVAL, "%s: ebpf.mode = \"%s\": expected hash or ring", path, mode);
		free(mode);
		if (rc)
			return rc;
	}
	config_setting_t *rs = config_setting_get_member(g, "rules");
	if (!rs)
		return 0;
	if (!config_setting_is_list(rs) && !config_setting_is_array(rs))
		return wt_err_set(err, WT_EINVAL, "%s:%d: ebpf.rules must be a list ( {...}, ... )", path,
				  config_setting_source_line(rs));
	int n = config_setting_length(rs);
	edge_ebpf_cfg_free(e);
	e->rules = calloc(n ? (size_t)n : 1, sizeof(*e->rules));
	if (!e->rules)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		config_setting_t *r = config_setting_get_elem(rs, (unsigned)i);
		edge_ebpf_rule *er = &e->rules[i];
		e->nrules = (size_t)i + 1;
		if ((rc = get_str(r, "comm", &er->comm, path, err)) || (rc = get_str(r, "cgroup", &er->cgroup, path, err)) ||
		    (rc = get_str(r, "container", &er->container, path, err)) ||
		    (rc = get_str(r, "service", &er->service, path, err)))
			return rc;
		if (!er->service || !*er->service || (!er->comm && !er->cgroup && !er->container))
			return wt_err_set(err, WT_EINVAL, "%s:%d: ebpf.rules[%d] needs a service and at least one of comm, cgroup, container",
					  path, config_setting_source_line(r), i);
	}
	return 0;
}

int edge_config_load(edge_config *c, const char *path, wt_err *err)
{
	config_t cf;
	int rc = 0;
	long long v;
	char *listen = NULL, *mode = NULL;

	config_init(&cf);
	if (!config_read_file(&cf, path)) {
		if (config_error_type(&cf) == CONFIG_ERR_FILE_IO)
			rc = wt_err_set(err, WT_EIO, "%s: cannot read the file", path);
		else
			rc = wt_err_set(err, WT_EINVAL, "%s:%d: %s", path, config_error_line(&cf),
					config_error_text(&cf));
		goto out;
	}
	config_setting_t *e = config_lookup(&cf, "edge");
	if ((rc = get_str(e, "id", &c->id, path, err)) ||
	    (rc = get_str(e, "listen", &listen, path, err)) ||
	    (rc = get_str(e, "otlp_http_listen", &c->otlp_http_listen, path, err)) ||
	    (rc = get_str(e, "otlp_grpc_listen", &c->otlp_grpc_listen, path, err)) ||
	    (rc = get_str(e, "data_dir", &c->data_dir, path, err)) ||
	    (rc = get_str(e, "default_project", &c->default_project, path, err)) ||
	    (rc = get_bool(e, "sync", &c->sync, path, err)) ||
	    (rc = get_bool(e, "query_aggregates", &c->query_aggregates, path, err)) ||
	    (rc = get_str(e, "rollup_mode", &mode, path, err)))
		goto out;
	c->otlp_http_set = e && config_setting_get_member(e, "otlp_http_listen");
	c->otlp_grpc_set = e && config_setting_get_member(e, "otlp_grpc_listen");
	v = c->workers;
	if ((rc = get_int(e, "workers", 1, 256, &v, path, err)))
		goto out;
	c->workers = (int)v;
	v = c->max_connections;
	if ((rc = get_int(e, "max_connections", 1, 1000000, &v, path, err)))
		goto out;
	c->max_connections = (int)v;
	v = c->max_streams;
	if ((rc = get_int(e, "max_streams", 1, 1000, &v, path, err)))
		goto out;
	c->max_streams = (int)v;
	v = c->stream_timeout_s;
	if ((rc = get_int(e, "stream_timeout_s", 1, 3600, &v, path, err)))
		goto out;
	c->stream_timeout_s = (int)v;
	if (listen) {
		wt_listen_addr la;
		if ((rc = wt_listen_parse(listen, "edge.listen", 0, &la, err))) {
			wt_err_prefix(err, "%s", path);
			goto out;
		}
		free(c->listen_host);
		c->listen_host = strdup(la.host);
		c->listen_port = la.port;
	}
	if (mode) {
		if (!strcmp(mode, "merge"))
			c->rollup_mode = EDGE_ROLLUP_MERGE;
		else if (!strcmp(mode, "rmw"))
			c->rollup_mode = EDGE_ROLLUP_RMW;
		else {
			rc = wt_err_set(err, WT_EINVAL, "%s: edge.rollup_mode = \"%s\": expected merge or rmw", path, mode);
			goto out;
		}
	}

	config_setting_t *l = config_lookup(&cf, "limits");
	v = (long long)(c->max_body / MB);
	if ((rc = get_int(l, "max_body_mb", 1, 4096, &v, path, err)))
		goto out;
	c->max_body = (size_t)v * MB;
	v = (long long)(c->max_decompressed / MB);
	if ((rc = get_int(l, "max_decompressed_mb", 1, 65536, &v, path, err)))
		goto out;
	c->max_decompressed = (size_t)v * MB;
	v = (long long)(c->max_inflight / MB);
	if ((rc = get_int(l, "max_inflight_mb", 1, 65536, &v, path, err)))
		goto out;
	c->max_inflight = (size_t)v * MB;
	if (c->max_inflight < c->max_body) {
		rc = wt_err_set(err, WT_EINVAL, "%s: limits.max_inflight_mb (%zu) must be at least "
				"limits.max_body_mb (%zu)", path, c->max_inflight / MB, c->max_body / MB);
		goto out;
	}
	v = (long long)c->max_samples;
	if ((rc = get_int(l, "max_samples", 1, 1000000000LL, &v, path, err)))
		goto out;
	c->max_samples = (size_t)v;
	v = (long long)c->max_stack_depth;
	if ((rc = get_int(l, "max_stack_depth", 1, 1000000, &v, path, err)))
		goto out;
	c->max_stack_depth = (size_t)v;

	config_setting_t *r = config_lookup(&cf, "retention");
	v = c->raw_hours_after_replication;
	if ((rc = get_int(r, "raw_hours_after_replication", 0, 24 * 3650, &v, path, err)))
		goto out;
	c->raw_hours_after_replication = v;
	v = c->rollup_days;
	if ((rc = get_int(r, "rollup_days", 1, 3650, &v, path, err)))
		goto out;
	c->rollup_days = v;
	v = (long long)(c->disk_quota_bytes / MB);
	if ((rc = get_int(r, "disk_quota_mb", 1, 1LL << 40, &v, path, err)))
		goto out;
	c->disk_quota_bytes = (uint64_t)v * MB;
	v = c->retention_interval_s;
	if ((rc = get_int(r, "interval_s", 1, 86400, &v, path, err)))
		goto out;
	c->retention_interval_s = (int)v;
	v = (long long)(c->min_free_bytes / MB);
	if ((rc = get_int(r, "min_free_mb", 0, 1LL << 30, &v, path, err)))
		goto out;
	c->min_free_bytes = (uint64_t)v * MB;
	v = (long long)(c->reserve_bytes / MB);
	if ((rc = get_int(r, "reserve_mb", 0, 1LL << 20, &v, path, err)))
		goto out;
	c->reserve_bytes = (uint64_t)v * MB;

	config_setting_t *h = config_lookup(&cf, "hub");
	if ((rc = get_str(h, "url", &c->hub_url, path, err)) || (rc = get_str(h, "ca", &c->hub_ca, path, err)) ||
	    (rc = get_str(h, "cert", &c->hub_cert, path, err)) || (rc = get_str(h, "key", &c->hub_key, path, err)))
		goto out;
	if ((rc = get_strv(h, "urls", &c->hub_urls, &c->n_hub_urls, path, err)))
		goto out;
	if (c->n_hub_urls) {
		char *first = strdup(c->hub_urls[0]);
		if (!first) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if (*c->hub_url && strcmp(c->hub_url, first)) {
			free(first);
			rc = wt_err_set(err, WT_EINVAL, "%s: hub.url and hub.urls both set and disagree; set one", path);
			goto out;
		}
		free(c->hub_url);
		c->hub_url = first;
	} else if (*c->hub_url) {
		free(c->hub_urls); /* urls = [ ] */
		c->hub_urls = calloc(1, sizeof(*c->hub_urls));
		if (!c->hub_urls || !(c->hub_urls[0] = strdup(c->hub_url))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		c->n_hub_urls = 1;
	}
	for (size_t i = 0; i < c->n_hub_urls; i++)
		if (strncmp(c->hub_urls[i], "https://", 8) != 0) {
			rc = wt_err_set(err, WT_EINVAL, "%s: hub.urls[%zu] = \"%s\" must start with https:// (replication is mutual TLS only)",
					path, i, c->hub_urls[i]);
			goto out;
		}
	v = c->config_wait_s;
	if ((rc = get_int(h, "config_wait_s", 0, 30, &v, path, err)))
		goto out;
	c->config_wait_s = (int)v;
	v = c->config_poll_ms;
	if ((rc = get_int(h, "config_poll_ms", 100, 3600000, &v, path, err)))
		goto out;
	c->config_poll_ms = (int)v;
	if (*c->hub_url) {
		if (strncmp(c->hub_url, "https://", 8) != 0) {
			rc = wt_err_set(err, WT_EINVAL, "%s: hub.url = \"%s\" must start with https:// (replication is mutual TLS only)",
					path, c->hub_url);
			goto out;
		}
		if (!*c->hub_ca || !*c->hub_cert || !*c->hub_key) {
			rc = wt_err_set(err, WT_EINVAL, "%s: hub.url is set, so hub.ca, hub.cert and hub.key are required", path);
			goto out;
		}
	}

	config_setting_t *rp = config_lookup(&cf, "replication");
	v = (long long)c->repl_batch_max_uploads;
	if ((rc = get_int(rp, "batch_max_uploads", 1, 100000, &v, path, err)))
		goto out;
	c->repl_batch_max_uploads = (size_t)v;
	v = (long long)c->repl_batch_max_bytes;
	if ((rc = get_int(rp, "batch_max_bytes", 4096, 1LL << 32, &v, path, err)))
		goto out;
	c->repl_batch_max_bytes = (size_t)v;
	v = c->repl_backoff_initial_ms;
	if ((rc = get_int(rp, "backoff_initial_ms", 1, 3600000, &v, path, err)))
		goto out;
	c->repl_backoff_initial_ms = (int)v;
	v = c->repl_backoff_max_ms;
	if ((rc = get_int(rp, "backoff_max_ms", 1, 3600000, &v, path, err)))
		goto out;
	c->repl_backoff_max_ms = (int)v;
	if (c->repl_backoff_max_ms < c->repl_backoff_initial_ms) {
		rc = wt_err_set(err, WT_EINVAL, "%s: replication.backoff_max_ms (%d) is below backoff_initial_ms (%d)", path,
				c->repl_backoff_max_ms, c->repl_backoff_initial_ms);
		goto out;
	}
	v = c->repl_interval_ms;
	if ((rc = get_int(rp, "interval_ms", 1, 3600000, &v, path, err)))
		goto out;
	c->repl_interval_ms = (int)v;
	v = c->repl_zstd_level;
	if ((rc = get_int(rp, "zstd_level", 1, 19, &v, path, err)))
		goto out;
	c->repl_zstd_level = (int)v;
	v = c->repl_timeout_s;
	if ((rc = get_int(rp, "timeout_s", 5, 86400, &v, path, err)))
		goto out;
	c->repl_timeout_s = (int)v;

	if ((rc = load_ebpf(&c->ebpf, config_lookup(&cf, "ebpf"), path, err)))
		goto out;

	config_setting_t *ps = config_lookup(&cf, "projects");
	if (ps) {
		if (!config_setting_is_list(ps) && !config_setting_is_array(ps)) {
			rc = wt_err_set(err, WT_EINVAL, "%s:%d: projects must be a list ( {...}, ... )", path,
					config_setting_source_line(ps));
			goto out;
		}
		int n = config_setting_length(ps);
		c->projects = calloc(n ? (size_t)n : 1, sizeof(*c->projects));
		if (!c->projects) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		for (int i = 0; i < n; i++) {
			config_setting_t *p = config_setting_get_elem(ps, (unsigned)i);
			edge_project_cfg *pc = &c->projects[i];
			c->nprojects = (size_t)i + 1;
			if ((rc = get_str(p, "name", &pc->name, path, err)) ||
			    (rc = get_strv(p, "upload_tokens", &pc->upload_tokens, &pc->n_upload, path, err)) ||
			    (rc = get_strv(p, "read_tokens", &pc->read_tokens, &pc->n_read, path, err)))
				goto out;
			if (!pc->name || !*pc->name || strchr(pc->name, '/')) {
				rc = wt_err_set(err, WT_EINVAL, "%s:%d: projects[%d].name must be a non-empty name without '/'",
						path, config_setting_source_line(p), i);
				goto out;
			}
		}
	}
out:
	free(listen);
	free(mode);
	config_destroy(&cf);
	return rc;
}

/* constant-time string equality (length leaks, content does not) */
static int tok_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;
	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* remote token hook (config_client.c); atomics: set once at start/stop */
static void *remote_auth_fn;
static void *remote_auth_arg;

void edge_config_set_remote_auth(edge_remote_auth_fn fn, void *arg)
{
	__atomic_store_n(&remote_auth_arg, arg, __ATOMIC_RELEASE);
	__atomic_store_n(&remote_auth_fn, (void *)fn, __ATOMIC_RELEASE);
}

const edge_project_cfg *edge_config_auth(const edge_config *c, const char *tok, int role)
{
	edge_remote_auth_fn fn;
	char name[256];
	int remote = 0;

	/* the hub's word first: a token it revoked is refused even when this
	 * file lists it (appliance/up writes hub-created tokens here) */
	fn = (edge_remote_auth_fn)__atomic_load_n(&remote_auth_fn, __ATOMIC_ACQUIRE);
	if (fn && (remote = fn(__atomic_load_n(&remote_auth_arg, __ATOMIC_ACQUIRE), tok, role, name, sizeof(name))) < 0)
		return NULL;
	for (size_t i = 0; i < c->nprojects; i++) {
		const edge_project_cfg *p = &c->projects[i];
		char **v = role == EDGE_ROLE_READ ? p->read_tokens : p->upload_tokens;
		size_t n = role == EDGE_ROLE_READ ? p->n_read : p->n_upload;
		for (size_t j = 0; j < n; j++)
			if (tok_eq(v[j], tok))
				return p;
	}
	return remote > 0 ? edge_config_project(c, name) : NULL;
}

const edge_project_cfg *edge_config_project(const edge_config *c, const char *name)
{
	for (size_t i = 0; i < c->nprojects; i++)
		if (!strcmp(c->projects[i].name, name))
			return &c->projects[i];
	return NULL;
}
