/*
 * config_client.c — pull, persist and apply the hub's remote config (see
 * config_client.h for what is applied and how).
 */
#include "config_client.h"
#include "backoff.h"
#include "clock.h"

#include <errno.h>
#include <mbedtls/sha256.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "deletion.h"
#include "ebpf.h"
#include "hex.h"
#include "log.h"
#include "prom.h"
#include "tls_client.h"

#define HASH_HEX 64
#define REQUEST_SLACK_MS 15000 /* on top of the long-poll wait */

typedef struct tok {
	char hash[HASH_HEX + 1];
	int role; /* EDGE_ROLE_UPLOAD, EDGE_ROLE_READ or TOK_REVOKED */
	char project[128];
} tok;

/* a token the hub revoked: refused even when the local file lists it */
#define TOK_REVOKED 2

struct edge_config_client {
	edge_config *cfg;
	edge_buffer *store;
	edge_tls_client *tls;
	char **urls; /* one per hub.urls entry: ...?project=..&wait= */
	size_t nurls, cur; /* cur: the hub pulled from; the next one after a failure */
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	int stop;
	_Atomic int cancel;

	pthread_rwlock_t lk; /* guards toks, etag, current, ebpf */
	tok *toks;
	size_t ntoks;
	char etag[72];
	json_t *current; /* last applied config */
	struct edge_ebpf *ebpf;
	size_t local_max_body, local_max_samples;

	_Atomic uint64_t applied, failures, not_modified;
	_Atomic int64_t last_ok_ns, last_apply_ns;
};

static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;
static edge_config_client *_Atomic the_client; /* for /metrics (server.c) */
static edge_policy_hook hook_fn;
static void *hook_arg;

static void sha256_hex(const char *s, char out[HASH_HEX + 1])
{
	unsigned char d[32];

	mbedtls_sha256_ret((const unsigned char *)s, strlen(s), d, 0);
	wt_hex_encode(d, sizeof(d), out, HASH_HEX + 1);
}

static int tok_cmp(const void *a, const void *b)
{
	const tok *x = a, *y = b;
	int c = strcmp(x->hash, y->hash);
	return c ? c : x->role - y->role;
}

/* edge_config_auth hook */
static int remote_auth(void *arg, const char *token, int role, char *project, size_t cap)
{
	edge_config_client *c = arg;
	tok key, *hit;
	int ok = 0;

	sha256_hex(token, key.hash);
	key.role = TOK_REVOKED;
	pthread_rwlock_rdlock(&c->lk);
	if (c->ntoks && bsearch(&key, c->toks, c->ntoks, sizeof(tok), tok_cmp)) {
		pthread_rwlock_unlock(&c->lk);
		return -1;
	}
	key.role = role;
	hit = c->ntoks ? bsearch(&key, c->toks, c->ntoks, sizeof(tok), tok_cmp) : NULL;
	if (hit) {
		snprintf(project, cap, "%s", hit->project);
		ok = 1;
	}
	pthread_rwlock_unlock(&c->lk);
	return ok;
}

/* ---- applying ------------------------------------------------------------------------ */

static int hex64(const char *s)
{
	return s && strlen(s) == HASH_HEX && strspn(s, "0123456789abcdef") == HASH_HEX;
}

static long long limit_of(const json_t *eff, const char *key)
{
	json_t *v = json_object_get(json_object_get(eff, "limits"), key);
	return json_is_integer(v) && json_integer_value(v) > 0 ? (long long)json_integer_value(v) : -1;
}

static int bool_of(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* lock contention in one rule body: sample_types.lock = false turns it
 * off, else ebpf.lock, else sample_types.lock = true; -1: not set */
static int lock_of(const json_t *r)
{
	int st = bool_of(json_object_get(r, "sample_types"), "lock"), on = bool_of(json_object_get(r, "ebpf"), "lock");
	return st == 0 ? 0 : on >= 0 ? on : st;
}

/* native allocations in one rule body: sample_types.native_alloc = false
 * turns them off, else ebpf.alloc, else sample_types.native_alloc = true;
 * -1: not set */
static int alloc_of(const json_t *r)
{
	int st = bool_of(json_object_get(r, "sample_types"), "native_alloc"),
	    on = bool_of(json_object_get(r, "ebpf"), "alloc");
	return st == 0 ? 0 : on >= 0 ? on : st;
}

static void sampler_policy(const edge_config *cfg, const json_t *conf, edge_sampler_policy *sp)
{
	json_t *projects = json_object_get(conf, "projects"), *p, *eff = NULL, *v;
	size_t i;

	memset(sp, 0, sizeof(*sp));
	sp->enabled = sp->frequency_hz = sp->offcpu = sp->cpu = sp->python = sp->lock = sp->lock_address = sp->alloc = -1;
	sp->offcpu_threshold_us = -1;
	json_array_foreach(projects, i, p)
		if (cfg->default_project && !strcmp(json_string_value(json_object_get(p, "name")), cfg->default_project)) {
			eff = json_object_get(p, "effective");
			sp->project = cfg->default_project;
			sp->revision = (uint64_t)json_integer_value(json_object_get(p, "policy_revision"));
		}
	if (!eff)
		return;
	sp->effective = eff;
	sp->enabled = bool_of(json_object_get(eff, "ebpf"), "enabled");
	sp->python = bool_of(json_object_get(eff, "ebpf"), "python");
	sp->lock = lock_of(eff);
	sp->lock_address = bool_of(json_object_get(eff, "ebpf"), "lock_address");
	sp->alloc = alloc_of(eff);
	v = json_object_get(json_object_get(eff, "ebpf"), "frequency_hz");
	if (json_is_integer(v))
		sp->frequency_hz = (int)json_integer_value(v);
	sp->offcpu = bool_of(json_object_get(eff, "offcpu"), "enabled");
	if (bool_of(json_object_get(eff, "sample_types"), "offcpu") == 0)
		sp->offcpu = 0;
	sp->cpu = bool_of(json_object_get(eff, "sample_types"), "cpu");
	v = json_object_get(json_object_get(eff, "offcpu"), "threshold_us");
	if (json_is_integer(v))
		sp->offcpu_threshold_us = (int64_t)json_integer_value(v);
}

/* The unwinding rules of the effective services[] (first match wins,
 * like the hub's reading of them): every rule is kept, with unwind -1
 * where it does not set one, so that an earlier matching rule without
 * unwind still wins over a later one with it. Returns the count (0 on
 * OOM: the policy's and local modes still apply). */
static size_t unwind_rules_of(const json_t *eff, edge_unwind_rule **out)
{
	json_t *svcs = json_object_get(eff, "services"), *r, *lab, *v;
	size_t i, n = json_array_size(svcs), k = 0;
	edge_unwind_rule *rules;
	const char *key;

	*out = NULL;
	if (!n || !(rules = calloc(n, sizeof(*rules))))
		return 0;
	json_array_foreach(svcs, i, r) {
		edge_unwind_rule *x = &rules[k++];
		json_t *m = json_object_get(r, "match");
		const char *glob = json_string_value(json_object_get(m, "service"));
		x->unwind = edge_unwind_mode_parse(json_string_value(json_object_get(json_object_get(r, "ebpf"), "unwind")));
		if (glob && !(x->service = strdup(glob)))
			goto oom;
		if ((lab = json_object_get(m, "label")) && json_object_size(lab)) {
			x->label_keys = calloc(json_object_size(lab), sizeof(char *));
			x->label_vals = calloc(json_object_size(lab), sizeof(char *));
			if (!x->label_keys || !x->label_vals)
				goto oom;
			json_object_foreach(lab, key, v) {
				x->nlabels++;
				if (!(x->label_keys[x->nlabels - 1] = strdup(key)) ||
				    !(x->label_vals[x->nlabels - 1] = strdup(json_is_string(v) ? json_string_value(v) : "")))
					goto oom;
			}
		}
	}
	*out = rules;
	return k;
oom:
	edge_unwind_rules_free(rules, k);
	return 0;
}

/* Sampler settings: policy over the local ebpf section. Called with lk held. */
static void apply_sampler(edge_config_client *c)
{
	edge_sampler_policy sp;
	edge_ebpf_cfg next;
	edge_policy_hook fn;
	void *arg;
	const char *v;
	int rc;

	if (!c->current)
		return;
	sampler_policy(c->cfg, c->current, &sp);
	if (c->ebpf && sp.effective) {
		next = c->cfg->ebpf; /* shallow: edge_ebpf_apply copies */
		if (sp.enabled >= 0)
			next.enabled = sp.enabled;
		if (sp.frequency_hz > 0)
			next.frequency_hz = sp.frequency_hz;
		if (sp.offcpu >= 0)
			next.offcpu = sp.offcpu;
		if (sp.offcpu_threshold_us >= 0)
			next.offcpu_min_us = sp.offcpu_threshold_us;
		if (sp.cpu == 0 && !next.offcpu)
			next.enabled = 0; /* nothing left to sample */
		if (sp.python >= 0)
			next.python = sp.python;
		if (sp.lock >= 0)
			next.lock = sp.lock;
		if (sp.lock_address >= 0)
			next.lock_address = sp.lock_address;
		if (sp.alloc >= 0)
			next.alloc = sp.alloc;
		/* interpreter frames, lock contention and its addresses, native
		 * allocations per service: services[] rules that match by
		 * service glob, in order (first match wins; a rule without the
		 * switch leaves the default); label rules cannot match a
		 * process here and are left out */
		json_t *svcs = json_object_get(sp.effective, "services"), *r;
		size_t i, n = 0;
		edge_service_rule *sr = json_array_size(svcs) ? calloc(json_array_size(svcs), sizeof(*sr)) : NULL;
		json_array_foreach(svcs, i, r) {
			json_t *m = json_object_get(r, "match");
			const char *g = json_string_value(json_object_get(m, "service"));
			if (!sr || !g || json_object_get(m, "label"))
				continue;
			sr[n].glob = (char *)g; /* borrowed: edge_ebpf_apply copies */
			sr[n].on[EDGE_SVC_PYTHON] = bool_of(json_object_get(r, "ebpf"), "python");
			sr[n].on[EDGE_SVC_LOCK] = lock_of(r);
			sr[n].on[EDGE_SVC_LOCK_ADDRESS] = bool_of(json_object_get(r, "ebpf"), "lock_address");
			sr[n++].on[EDGE_SVC_ALLOC] = alloc_of(r);
		}
		next.svc_rules = sr;
		next.nsvc_rules = n;
		v = json_string_value(json_object_get(json_object_get(sp.effective, "ebpf"), "unwind"));
		if (edge_unwind_mode_parse(v) >= 0)
			next.unwind = edge_unwind_mode_parse(v);
		next.n_unwind_rules = unwind_rules_of(sp.effective, &next.unwind_rules);
		rc = edge_ebpf_apply(c->ebpf, &next);
		free(sr);
		edge_unwind_rules_free(next.unwind_rules, next.n_unwind_rules);
		if (rc)
			wt_warn("remote config: the sampler refused the policy settings project=%s revision=%llu",
				sp.project, (unsigned long long)sp.revision);
		else
			wt_info("remote config: sampler settings applied project=%s revision=%llu enabled=%d"
				" frequency_hz=%d offcpu=%d offcpu_min_us=%lld unwind=%s", sp.project,
				(unsigned long long)sp.revision, next.enabled, next.frequency_hz, next.offcpu,
				(long long)next.offcpu_min_us, edge_unwind_mode_name(next.unwind));
	}
	pthread_mutex_lock(&hook_mu);
	fn = hook_fn;
	arg = hook_arg;
	if (fn)
		fn(arg, &sp);
	pthread_mutex_unlock(&hook_mu);
}

/* The hub's audited deletions (projects[].deletions: deletion_id, before_ns,
 * service or null) applied once each to the buffer (deletion.h). A failed
 * one is retried with the next config. */
static void apply_deletions(edge_config_client *c)
{
	json_t *p, *d;
	size_t i, j;

	if (!c->store)
		return;
	pthread_rwlock_rdlock(&c->lk);
	json_array_foreach(json_object_get(c->current, "projects"), i, p) {
		json_array_foreach(json_object_get(p, "deletions"), j, d) {
			wt_err err = {0, ""};
			json_t *bn = json_object_get(d, "before_ns");
			if (!json_is_integer(bn) ||
			    edge_deletion_apply(c->store, json_string_value(json_object_get(d, "deletion_id")),
						json_string_value(json_object_get(p, "name")),
						json_string_value(json_object_get(d, "service")),
						(int64_t)json_integer_value(bn), &err) < 0)
				wt_warn("remote config: projects[%zu].deletions[%zu] not applied: %s", i, j,
					err.msg[0] ? err.msg : "before_ns: expected an integer");
		}
	}
	pthread_rwlock_unlock(&c->lk);
}

void edge_config_set_policy_hook(edge_policy_hook fn, void *arg)
{
	pthread_mutex_lock(&hook_mu);
	hook_fn = fn;
	hook_arg = arg;
	pthread_mutex_unlock(&hook_mu);
}

static int persist(edge_config_client *c, const char *text, size_t len, wt_err *err)
{
	rocksdb_writeoptions_t *wo;
	char *e = NULL;

	if (!c->store)
		return 0;
	wo = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(wo, 1);
	rocksdb_put_cf(edge_buffer_db(c->store), wo, edge_buffer_cf(c->store, EDGE_CF_CONFIG), EDGE_CONFIG_KEY,
		       strlen(EDGE_CONFIG_KEY), text, len, &e);
	rocksdb_writeoptions_destroy(wo);
	if (e) {
		wt_err_set(err, WT_EIO, "config/remote: %s", e);
		free(e);
		return WT_EIO;
	}
	return 0;
}

int edge_config_client_apply(edge_config_client *c, const char *text, size_t len, int do_persist, wt_err *err)
{
	json_error_t je;
	json_t *conf = json_loadb(text, len, 0, &je), *projects, *p, *h;
	tok *toks = NULL;
	size_t n = 0, i, j, nup = 0, nrd = 0;
	long long mb = -1, ms = -1;
	int rc = 0;

	if (!conf || !json_is_object(conf)) {
		rc = wt_err_set(err, WT_EINVAL, "remote config: not a JSON object (%s at line %d)", je.text, je.line);
		goto out;
	}
	if (!json_is_string(json_object_get(conf, "edge_id")) ||
	    strcmp(json_string_value(json_object_get(conf, "edge_id")), c->cfg->id)) {
		rc = wt_err_set(err, WT_EINVAL, "remote config: edge_id is not \"%s\"", c->cfg->id);
		goto out;
	}
	projects = json_object_get(conf, "projects");
	if (!json_is_array(projects)) {
		rc = wt_err_set(err, WT_EINVAL, "remote config: projects: expected an array");
		goto out;
	}
	json_array_foreach(projects, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		static const char *const lists[3] = {"upload_token_sha256", "read_token_sha256",
						     "revoked_token_sha256"};
		long long v;
		if (!name || !*name || strlen(name) >= sizeof(toks[0].project)) {
			rc = wt_err_set(err, WT_EINVAL, "remote config: projects[%zu].name: expected a project name", i);
			goto out;
		}
		for (int role = 0; role < 3; role++) {
			json_t *arr = json_object_get(p, lists[role]);
			if (arr && !json_is_array(arr)) {
				rc = wt_err_set(err, WT_EINVAL, "remote config: projects[%zu].%s: expected an array", i,
						lists[role]);
				goto out;
			}
			json_array_foreach(arr, j, h) {
				tok *nt;
				if (!hex64(json_string_value(h))) {
					rc = wt_err_set(err, WT_EINVAL, "remote config: projects[%zu].%s[%zu]: expected 64 hex"
							" characters", i, lists[role], j);
					goto out;
				}
				if (n == EDGE_CONFIG_MAX_TOKENS) {
					rc = wt_err_set(err, WT_ELIMIT, "remote config: more than %d token hashes",
							EDGE_CONFIG_MAX_TOKENS);
					goto out;
				}
				nt = realloc(toks, (n + 1) * sizeof(*toks));
				if (!nt) {
					rc = wt_err_set(err, WT_ENOMEM, "out of memory");
					goto out;
				}
				toks = nt;
				snprintf(toks[n].hash, sizeof(toks[n].hash), "%s", json_string_value(h));
				toks[n].role = role == 0 ? EDGE_ROLE_UPLOAD : role == 1 ? EDGE_ROLE_READ : TOK_REVOKED;
				snprintf(toks[n].project, sizeof(toks[n].project), "%s", name);
				n++;
				if (role == 0)
					nup++;
				else if (role == 1)
					nrd++;
			}
		}
		/* edge-wide limits: the tightest of the projects' policies */
		if ((v = limit_of(json_object_get(p, "effective"), "max_body")) > 0 && (mb < 0 || v < mb))
			mb = v;
		if ((v = limit_of(json_object_get(p, "effective"), "max_samples")) > 0 && (ms < 0 || v < ms))
			ms = v;
	}
	if (toks)
		qsort(toks, n, sizeof(*toks), tok_cmp);
	if (do_persist && (rc = persist(c, text, len, err)))
		goto out;

	pthread_rwlock_wrlock(&c->lk);
	free(c->toks);
	c->toks = toks;
	c->ntoks = n;
	toks = NULL;
	snprintf(c->etag, sizeof(c->etag), "%s", json_string_value(json_object_get(conf, "etag")) ?
		 json_string_value(json_object_get(conf, "etag")) : "");
	json_decref(c->current);
	c->current = conf;
	conf = NULL;
	/* ingest reads these without a lock: aligned word stores */
	__atomic_store_n(&c->cfg->max_body, mb > 0 && (size_t)mb < c->local_max_body ? (size_t)mb : c->local_max_body,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&c->cfg->max_samples,
			 ms > 0 && (size_t)ms < c->local_max_samples ? (size_t)ms : c->local_max_samples, __ATOMIC_RELAXED);
	apply_sampler(c);
	pthread_rwlock_unlock(&c->lk);
	atomic_fetch_add(&c->applied, 1);
	atomic_store(&c->last_apply_ns, wt_now_ns(CLOCK_REALTIME));
	apply_deletions(c);
	{
		wt_buf revs = WT_BUF_INIT;
		pthread_rwlock_rdlock(&c->lk);
		json_array_foreach(json_object_get(c->current, "projects"), i, p)
			wt_buf_printf(&revs, "%s%s:%lld", i ? "," : "", json_string_value(json_object_get(p, "name")),
				      (long long)json_integer_value(json_object_get(p, "policy_revision")));
		wt_buf_putc(&revs, '\0');
		wt_info("remote config applied source=%s etag=%s revisions=%s upload_tokens=%zu read_tokens=%zu"
			" max_body=%zu max_samples=%zu", do_persist ? "hub" : "buffer", c->etag,
			revs.data ? (const char *)revs.data : "", nup, nrd, c->cfg->max_body, c->cfg->max_samples);
		/* projects the hub will not take from this edge (not registered to
		 * them there): say so, or uploads pile up without a visible cause */
		json_array_foreach(json_object_get(c->current, "not_allowed"), i, p)
			if (json_is_string(p))
				wt_warn("remote config: the hub has not registered this edge to project %s; its uploads"
					" are kept here and refused by the hub until `wtctl admin edge allow --edge %s"
					" --project %s`", json_string_value(p), c->cfg->id, json_string_value(p));
		pthread_rwlock_unlock(&c->lk);
		wt_buf_free(&revs);
	}
out:
	json_decref(conf);
	free(toks);
	return rc;
}

/* ---- pulling ------------------------------------------------------------------------- */

static int cancel_cb(void *arg)
{
	edge_config_client *c = arg;
	return atomic_load(&c->cancel);
}

static int nap(edge_config_client *c, int64_t ms)
{
	struct timespec ts;
	int s;

	ts = wt_deadline(CLOCK_MONOTONIC, ms);
	pthread_mutex_lock(&c->mu);
	while (!c->stop)
		if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
			break;
	s = c->stop;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static void *client_main(void *arg)
{
	edge_config_client *c = arg;
	const wt_backoff backoff = {EDGE_CONFIG_BACKOFF_INITIAL_MS, EDGE_CONFIG_BACKOFF_MAX_MS, 1};
	unsigned attempt = 0;
	int64_t fail_logged = 0;

	while (!c->stop) {
		char inm[100] = "";
		const char *hdrs[3] = {"Accept: application/json", NULL, NULL};
		wt_buf resp = WT_BUF_INIT;
		wt_err err = {0, ""};
		long status = 0;
		int64_t t0 = wt_now_ms(CLOCK_MONOTONIC), wait_ms;
		int rc;

		pthread_rwlock_rdlock(&c->lk);
		if (c->etag[0])
			snprintf(inm, sizeof(inm), "If-None-Match: \"%s\"", c->etag);
		pthread_rwlock_unlock(&c->lk);
		if (inm[0])
			hdrs[1] = inm;
		rc = edge_tls_client_request(c->tls, "GET", c->urls[c->cur], hdrs, NULL, 0, &status, &resp, &err);
		if (!rc && status == 200)
			rc = edge_config_client_apply(c, (const char *)resp.data, resp.len, 1, &err);
		else if (!rc && status != 304)
			rc = wt_err_set(&err, WT_EIO, "hub answered %ld: %.200s", status,
					resp.len ? (const char *)resp.data : "");
		wt_buf_free(&resp);
		if (c->stop)
			break;
		if (rc) {
			atomic_fetch_add(&c->failures, 1);
			if (!attempt || wt_now_ns(CLOCK_REALTIME) - fail_logged > 60000000000LL) {
				wt_warn("remote config: pull failed (keeping the last good config) error=\"%s\"", err.msg);
				fail_logged = wt_now_ns(CLOCK_REALTIME);
			}
			if (c->nurls > 1) {
				/* several hubs (hub.urls): try the next one */
				c->cur = (c->cur + 1) % c->nurls;
				wt_info("remote config: pulling from %s next", c->urls[c->cur]);
			}
			wait_ms = wt_backoff_ms(&backoff, attempt++);
		} else {
			if (attempt)
				wt_info("remote config: hub reachable again");
			attempt = 0;
			if (status == 304)
				atomic_fetch_add(&c->not_modified, 1);
			atomic_store(&c->last_ok_ns, wt_now_ns(CLOCK_REALTIME));
			wait_ms = c->cfg->config_poll_ms - (wt_now_ms(CLOCK_MONOTONIC) - t0);
		}
		if (wait_ms > 0 && nap(c, wait_ms))
			break;
	}
	return NULL;
}

static void load_persisted(edge_config_client *c)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *e = NULL, *v;
	size_t len = 0;
	wt_err err = {0, ""};

	v = rocksdb_get_cf(edge_buffer_db(c->store), ro, edge_buffer_cf(c->store, EDGE_CF_CONFIG), EDGE_CONFIG_KEY,
			   strlen(EDGE_CONFIG_KEY), &len, &e);
	rocksdb_readoptions_destroy(ro);
	if (e) {
		wt_warn("remote config: cannot read the persisted config: %s", e);
		free(e);
	}
	if (!v)
		return;
	if (edge_config_client_apply(c, v, len, 0, &err))
		wt_warn("remote config: persisted config ignored: %s", err.msg);
	free(v);
}

static void url_append(wt_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-._~", ch))
			wt_buf_putc(b, (char)ch);
		else
			wt_buf_printf(b, "%%%02X", ch);
	}
}

void edge_config_client_register_auth(edge_config_client *c)
{
	if (c)
		edge_config_set_remote_auth(remote_auth, c);
	else
		edge_config_set_remote_auth(NULL, NULL);
}

edge_config_client *edge_config_client_new_detached(edge_config *cfg)
{
	edge_config_client *c = calloc(1, sizeof(*c));
	pthread_condattr_t ca;

	if (!c)
		return NULL;
	c->cfg = cfg;
	c->local_max_body = cfg->max_body;
	c->local_max_samples = cfg->max_samples;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_rwlock_init(&c->lk, NULL);
	return c;
}

void edge_config_client_free_detached(edge_config_client *c)
{
	if (!c)
		return;
	edge_tls_client_free(c->tls);
	for (size_t i = 0; i < c->nurls; i++)
		free(c->urls[i]);
	free(c->urls);
	free(c->toks);
	json_decref(c->current);
	pthread_rwlock_destroy(&c->lk);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int edge_config_client_start(edge_config *cfg, edge_buffer *store, edge_config_client **out, wt_err *err)
{
	edge_tls_client_config tc = {0};
	edge_config_client *c;
	wt_buf url = WT_BUF_INIT;
	size_t ul, i;
	int rc;

	*out = NULL;
	if (!cfg->hub_url || !*cfg->hub_url)
		return 0;
	if (!(c = edge_config_client_new_detached(cfg)))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	c->store = store;
	/* the path and query, then one full URL per hub */
	wt_buf_puts(&url, "/v1/edges/");
	url_append(&url, cfg->id);
	wt_buf_printf(&url, "/config?wait=%d", cfg->config_wait_s);
	for (i = 0; i < cfg->nprojects; i++) {
		wt_buf_puts(&url, "&project=");
		url_append(&url, cfg->projects[i].name);
	}
	if (cfg->default_project && *cfg->default_project && !edge_config_project(cfg, cfg->default_project)) {
		wt_buf_puts(&url, "&project=");
		url_append(&url, cfg->default_project);
	}
	/* hub.urls, or hub.url alone when the config was not built by the loader */
	char *const *hubs = cfg->n_hub_urls ? cfg->hub_urls : &cfg->hub_url;
	size_t nhubs = cfg->n_hub_urls ? cfg->n_hub_urls : 1;
	c->urls = calloc(nhubs, sizeof(*c->urls));
	if (wt_buf_putc(&url, '\0') || url.oom || !c->urls) {
		wt_buf_free(&url);
		edge_config_client_free_detached(c);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	for (i = 0; i < nhubs; i++) {
		const char *hu = hubs[i];
		wt_buf one = WT_BUF_INIT;
		ul = strlen(hu);
		while (ul && hu[ul - 1] == '/')
			ul--;
		wt_buf_append(&one, hu, ul);
		wt_buf_puts(&one, (const char *)url.data);
		if (wt_buf_putc(&one, '\0') || one.oom) {
			wt_buf_free(&one);
			wt_buf_free(&url);
			edge_config_client_free_detached(c);
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		}
		c->urls[c->nurls++] = (char *)one.data;
	}
	wt_buf_free(&url);
	tc.ca_file = cfg->hub_ca;
	tc.cert_file = cfg->hub_cert;
	tc.key_file = cfg->hub_key;
	tc.timeout_ms = (long)cfg->config_wait_s * 1000 + REQUEST_SLACK_MS;
	tc.max_response = EDGE_CONFIG_MAX_BYTES;
	tc.cancel = cancel_cb;
	tc.cancel_arg = c;
	if ((rc = edge_tls_client_new(&tc, &c->tls, err))) {
		edge_config_client_free_detached(c);
		return rc;
	}
	load_persisted(c);
	edge_config_client_register_auth(c);
	if (pthread_create(&c->th, NULL, client_main, c)) {
		edge_config_set_remote_auth(NULL, NULL);
		edge_config_client_free_detached(c);
		return wt_err_set(err, WT_ENOMEM, "cannot start the remote config thread");
	}
	c->started = 1;
	atomic_store(&the_client, c);
	wt_info("remote config: pulling from %s (long-poll %d s, %zu hub(s))", c->urls[0], cfg->config_wait_s,
		c->nurls);
	*out = c;
	return 0;
}

void edge_config_client_set_ebpf(edge_config_client *c, struct edge_ebpf *e)
{
	if (!c)
		return;
	pthread_rwlock_wrlock(&c->lk);
	c->ebpf = e;
	apply_sampler(c);
	pthread_rwlock_unlock(&c->lk);
}

void edge_config_client_stop(edge_config_client *c)
{
	if (!c)
		return;
	atomic_store(&c->cancel, 1);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (c->started)
		pthread_join(c->th, NULL);
	atomic_store(&the_client, NULL);
	edge_config_set_remote_auth(NULL, NULL);
	c->cfg->max_body = c->local_max_body;
	c->cfg->max_samples = c->local_max_samples;
	edge_config_client_free_detached(c);
}

void edge_config_client_metrics(edge_config_client *c, wt_buf *b)
{
	int64_t last;

	if (!c)
		c = atomic_load(&the_client);
	last = c ? atomic_load(&c->last_ok_ns) : 0;

	wt_prom_counter(b, "wt_edge_config_applied_total", "Remote configs applied (from the hub or the buffer).",
			c ? atomic_load(&c->applied) : 0);
	wt_prom_counter(b, "wt_edge_config_pull_failures_total", "Remote config pulls that failed.",
			c ? atomic_load(&c->failures) : 0);
	wt_prom_gauge_f(b, "wt_edge_config_seconds_since_pull",
			"Seconds since the hub last answered a pull (-1 never).", 3,
			last ? (double)(wt_now_ns(CLOCK_REALTIME) - last) / 1e9 : -1.0);
}
