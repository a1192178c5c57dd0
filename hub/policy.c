/*
 * policy.c — policy validation, effective rules per edge, change summary
 * for the audit log, and storage in policies_v1 (see policy.h).
 */
#include "policy.h"
#include "clock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ch_format.h"
#include "sample_types.h"
#include "ch_health.h"

#define MAX_GLOB 256
#define MAX_LIMIT_BODY (4LL << 30)
#define MAX_LIMIT_SAMPLES 1000000000LL

/* ---- validation ------------------------------------------------------------------ */

static int only_keys(const json_t *o, const char *path, const char *const *allowed, wt_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		size_t i;
		int ok = 0;
		for (i = 0; allowed[i]; i++)
			if (!strcmp(k, allowed[i]))
				ok = 1;
		if (!ok) {
			wt_buf list = WT_BUF_INIT;
			for (i = 0; allowed[i]; i++)
				wt_buf_printf(&list, "%s%s", i ? ", " : "", allowed[i]);
			wt_buf_putc(&list, '\0');
			wt_err_set(err, WT_EINVAL, "%s%s%.64s: unknown key (allowed: %s)", path, *path ? "." : "", k,
				   list.data ? (const char *)list.data : "");
			wt_buf_free(&list);
			return WT_EINVAL;
		}
	}
	return 0;
}

static int want_object(const json_t *v, const char *path, wt_err *err)
{
	if (!json_is_object(v))
		return wt_err_set(err, WT_EINVAL, "%s: expected an object", path);
	return 0;
}

static int want_bool(const json_t *o, const char *key, const char *path, wt_err *err)
{
	json_t *v = json_object_get(o, key);

	if (v && !json_is_boolean(v))
		return wt_err_set(err, WT_EINVAL, "%s.%s: expected true or false", path, key);
	return 0;
}

static int want_int(const json_t *o, const char *key, long long lo, long long hi, const char *path,
		    wt_err *err)
{
	json_t *v = json_object_get(o, key);

	if (v && (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi))
		return wt_err_set(err, WT_EINVAL, "%s.%s: expected an integer %lld-%lld", path, key, lo, hi);
	return 0;
}

/* the eBPF sampler's unwinding mode (docs/operations.md "eBPF sampler") */
static int want_unwind(const json_t *o, const char *path, wt_err *err)
{
	json_t *v = json_object_get(o, "unwind");
	const char *s = json_string_value(v);

	if (v && (!s || (strcmp(s, "fp") && strcmp(s, "eh_frame") && strcmp(s, "auto"))))
		return wt_err_set(err, WT_EINVAL, "%s.unwind: expected \"fp\", \"eh_frame\" or \"auto\"", path);
	return 0;
}

/* sample_types / ebpf / offcpu of one rule set */
static int check_rule_body(const json_t *r, const char *path, wt_err *err)
{
	static const char *const ebpf_keys[] = {"enabled", "frequency_hz", "python", "lock", "lock_address", "alloc", "unwind", NULL};
	static const char *const off_keys[] = {"enabled", "threshold_us", NULL};
	char sub[160];
	json_t *v, *b;
	const char *k;

	if ((v = json_object_get(r, "sample_types"))) {
		snprintf(sub, sizeof(sub), "%s.sample_types", path);
		if (want_object(v, sub, err))
			return WT_EINVAL;
		json_object_foreach(v, k, b) {
			if (!wt_sample_type_is_canonical(k))
				return wt_err_set(err, WT_EINVAL, "%s.%.64s: not a canonical sample type (cpu, wall, "
						  "alloc_objects, alloc_space, inuse_objects, inuse_space, goroutine, "
						  "mutex_contentions, mutex_delay, block_contentions, block_delay, lock, "
						  "offcpu, gc_pause, exceptions, native_alloc, native_alloc_objects)", sub, k);
			if (!json_is_boolean(b))
				return wt_err_set(err, WT_EINVAL, "%s.%.64s: expected true or false", sub, k);
		}
	}
	if ((v = json_object_get(r, "ebpf"))) {
		snprintf(sub, sizeof(sub), "%s.ebpf", path);
		if (want_object(v, sub, err) || only_keys(v, sub, ebpf_keys, err) || want_bool(v, "enabled", sub, err) ||
		    want_bool(v, "python", sub, err) || want_bool(v, "lock", sub, err) ||
		    want_bool(v, "lock_address", sub, err) ||
		    want_bool(v, "alloc", sub, err) || want_int(v, "frequency_hz", 1, HUB_POLICY_FREQ_MAX, sub, err) ||
		    want_unwind(v, sub, err))
			return WT_EINVAL;
	}
	if ((v = json_object_get(r, "offcpu"))) {
		snprintf(sub, sizeof(sub), "%s.offcpu", path);
		if (want_object(v, sub, err) || only_keys(v, sub, off_keys, err) || want_bool(v, "enabled", sub, err) ||
		    want_int(v, "threshold_us", 0, HUB_POLICY_THRESHOLD_MAX_US, sub, err))
			return WT_EINVAL;
	}
	return 0;
}

static int check_match(const json_t *m, const char *path, wt_err *err)
{
	static const char *const keys[] = {"service", "label", NULL};
	json_t *s, *l, *v;
	const char *k;

	if (want_object(m, path, err) || only_keys(m, path, keys, err))
		return WT_EINVAL;
	s = json_object_get(m, "service");
	l = json_object_get(m, "label");
	if (!s && !l)
		return wt_err_set(err, WT_EINVAL, "%s: needs \"service\" (a glob) or \"label\" ({\"key\": \"value\"})",
				  path);
	if (s && (!json_is_string(s) || !json_string_length(s) || json_string_length(s) > MAX_GLOB))
		return wt_err_set(err, WT_EINVAL, "%s.service: expected a glob of 1-%d characters", path, MAX_GLOB);
	if (l) {
		if (!json_is_object(l) || !json_object_size(l) || json_object_size(l) > HUB_POLICY_MAX_LABELS)
			return wt_err_set(err, WT_EINVAL, "%s.label: expected an object of 1-%d \"key\": \"value\" pairs",
					  path, HUB_POLICY_MAX_LABELS);
		json_object_foreach(l, k, v)
			if (!json_is_string(v) || !*k || strlen(k) > 64)
				return wt_err_set(err, WT_EINVAL, "%s.label.%.64s: expected a string value and a key of 1-64 "
						  "characters", path, k);
	}
	return 0;
}

static int check_rules(const json_t *r, const char *path, wt_err *err)
{
	static const char *const keys[] = {"sample_types", "ebpf", "offcpu", "services", NULL};
	static const char *const svc_keys[] = {"match", "sample_types", "ebpf", "offcpu", NULL};
	json_t *svcs, *e;
	size_t i;
	char sub[160];

	if (want_object(r, path, err) || only_keys(r, path, keys, err) || check_rule_body(r, path, err))
		return WT_EINVAL;
	if (!(svcs = json_object_get(r, "services")))
		return 0;
	if (!json_is_array(svcs) || json_array_size(svcs) > HUB_POLICY_MAX_SERVICES)
		return wt_err_set(err, WT_EINVAL, "%s.services: expected an array of at most %d rules", path,
				  HUB_POLICY_MAX_SERVICES);
	json_array_foreach(svcs, i, e) {
		snprintf(sub, sizeof(sub), "%s.services[%zu]", path, i);
		if (want_object(e, sub, err) || only_keys(e, sub, svc_keys, err) || check_rule_body(e, sub, err))
			return WT_EINVAL;
		if (!json_object_get(e, "match"))
			return wt_err_set(err, WT_EINVAL, "%s.match: required", sub);
		snprintf(sub, sizeof(sub), "%s.services[%zu].match", path, i);
		if (check_match(json_object_get(e, "match"), sub, err))
			return WT_EINVAL;
	}
	return 0;
}

static int check_limits(const json_t *l, const char *path, wt_err *err)
{
	static const char *const keys[] = {"max_body", "max_samples", NULL};

	if (want_object(l, path, err) || only_keys(l, path, keys, err) ||
	    want_int(l, "max_body", 1024, MAX_LIMIT_BODY, path, err) ||
	    want_int(l, "max_samples", 1, MAX_LIMIT_SAMPLES, path, err))
		return WT_EINVAL;
	return 0;
}

int hub_policy_validate(const json_t *doc, wt_err *err)
{
	static const char *const keys[] = {"version", "rules", "limits", "edges", NULL};
	static const char *const edge_keys[] = {"rules", "limits", NULL};
	json_t *v, *e;
	const char *k;
	char sub[160];

	if (!json_is_object(doc))
		return wt_err_set(err, WT_EINVAL, "policy: expected a JSON object");
	if (only_keys(doc, "", keys, err))
		return WT_EINVAL;
	v = json_object_get(doc, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return wt_err_set(err, WT_EINVAL, "version: required, must be 1 (the policy format version)");
	if ((v = json_object_get(doc, "rules")) && check_rules(v, "rules", err))
		return WT_EINVAL;
	if ((v = json_object_get(doc, "limits")) && check_limits(v, "limits", err))
		return WT_EINVAL;
	if ((v = json_object_get(doc, "edges"))) {
		if (!json_is_object(v) || json_object_size(v) > HUB_POLICY_MAX_EDGES)
			return wt_err_set(err, WT_EINVAL, "edges: expected an object of at most %d edge ids",
					  HUB_POLICY_MAX_EDGES);
		json_object_foreach(v, k, e) {
			if (!*k || strlen(k) > 64)
				return wt_err_set(err, WT_EINVAL, "edges: edge ids are 1-64 characters");
			snprintf(sub, sizeof(sub), "edges.%s", k);
			if (want_object(e, sub, err) || only_keys(e, sub, edge_keys, err))
				return WT_EINVAL;
			snprintf(sub, sizeof(sub), "edges.%s.rules", k);
			if (json_object_get(e, "rules") && check_rules(json_object_get(e, "rules"), sub, err))
				return WT_EINVAL;
			snprintf(sub, sizeof(sub), "edges.%s.limits", k);
			if (json_object_get(e, "limits") && check_limits(json_object_get(e, "limits"), sub, err))
				return WT_EINVAL;
		}
	}
	return 0;
}

json_t *hub_policy_default(void)
{
	return json_pack("{s:i, s:{}}", "version", 1, "rules");
}

/* ---- effective rules ------------------------------------------------------------- */

/* a ∪ b (b wins) of two optional objects; new reference */
static json_t *overlay(const json_t *a, const json_t *b)
{
	json_t *o = json_is_object(a) ? json_deep_copy(a) : json_object();

	if (o && json_is_object(b))
		json_object_update(o, (json_t *)b);
	return o;
}

json_t *hub_policy_effective(const json_t *doc, const char *edge_id)
{
	json_t *rules = json_object_get(doc, "rules");
	json_t *edges = json_object_get(doc, "edges");
	json_t *ed = edge_id && edges ? json_object_get(edges, edge_id) : NULL;
	json_t *er = ed ? json_object_get(ed, "rules") : NULL;
	json_t *out = json_object(), *svcs = json_array(), *s;
	static const char *const parts[] = {"sample_types", "ebpf", "offcpu"};
	size_t i;

	if (!out || !svcs)
		goto oom;
	for (i = 0; i < 3; i++)
		json_object_set_new(out, parts[i], overlay(json_object_get(rules, parts[i]),
							   json_object_get(er, parts[i])));
	/* first match wins: the edge's own service rules come first */
	json_array_foreach(json_object_get(er, "services"), i, s)
		json_array_append(svcs, s);
	json_array_foreach(json_object_get(rules, "services"), i, s)
		json_array_append(svcs, s);
	json_object_set_new(out, "services", svcs);
	json_object_set_new(out, "limits", overlay(json_object_get(doc, "limits"), json_object_get(ed, "limits")));
	return out;
oom:
	json_decref(out);
	json_decref(svcs);
	return NULL;
}

/* ---- change summary -------------------------------------------------------------- */

typedef struct diffctx {
	wt_buf *out;
	size_t max;
	int n, full;
} diffctx;

static void note(diffctx *d, const char *path, const json_t *a, const json_t *b)
{
	char *sa, *sb;

	if (d->full)
		return;
	if (d->out->len > d->max) {
		wt_buf_puts(d->out, "; …");
		d->full = 1;
		return;
	}
	sa = a ? json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
	sb = b ? json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
	wt_buf_printf(d->out, "%s%s: ", d->n++ ? "; " : "", path);
	if (!a)
		wt_buf_printf(d->out, "added %.120s", sb ? sb : "?");
	else if (!b)
		wt_buf_printf(d->out, "removed (was %.120s)", sa ? sa : "?");
	else
		wt_buf_printf(d->out, "%.120s -> %.120s", sa ? sa : "?", sb ? sb : "?");
	free(sa);
	free(sb);
}

static void diff_rec(diffctx *d, const char *path, const json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;
	char sub[256];

	if (a && b && json_equal((json_t *)a, (json_t *)b))
		return;
	if (!json_is_object(a) || !json_is_object(b)) {
		note(d, path, a, b);
		return;
	}
	json_object_foreach((json_t *)a, k, v) {
		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
		diff_rec(d, sub, v, json_object_get(b, k));
	}
	json_object_foreach((json_t *)b, k, v)
		if (!json_object_get(a, k)) {
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
			note(d, sub, NULL, v);
		}
}

int hub_policy_diff(const json_t *old, const json_t *neu, wt_buf *out, size_t max)
{
	diffctx d = {out, max, 0, 0};

	diff_rec(&d, "", old, neu);
	if (!d.n)
		wt_buf_puts(out, "no change");
	return out->oom ? WT_ENOMEM : 0;
}

/* ---- storage --------------------------------------------------------------------- */

typedef struct loadctx {
	hub_policy_rec *r;
	int bad;
} loadctx;

static int load_row(void *ctx, char **f, size_t n)
{
	loadctx *lc = ctx;
	json_error_t je;

	if (n < 4)
		return 0;
	lc->r->revision = strtoull(f[0], NULL, 10);
	lc->r->doc = json_loads(f[1], 0, &je);
	snprintf(lc->r->updated_by, sizeof(lc->r->updated_by), "%s", f[2]);
	lc->r->updated_ns = strtoll(f[3], NULL, 10);
	if (!lc->r->doc)
		lc->bad = 1;
	return 1; /* first row only */
}

int hub_policy_load(hub_ch *ch, const char *project, hub_policy_rec *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	loadctx lc = {out, 0};
	int rc;

	memset(out, 0, sizeof(*out));
	wt_buf_puts(&sql, "SELECT revision, policy, updated_by, updated_ns FROM policies_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " ORDER BY revision DESC, updated_ns DESC LIMIT 1 FORMAT TabSeparated");
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_tsv_each((char *)res.data, res.len, 4, load_row, &lc);
	if (lc.bad) {
		rc = wt_err_set(err, WT_EIO, "policies_v1: stored policy of \"%s\" revision %llu is not JSON", project,
				(unsigned long long)out->revision);
		goto out;
	}
	if (!out->doc) {
		out->revision = 0;
		out->doc = hub_policy_default();
		if (!out->doc)
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	}
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

void hub_policy_rec_free(hub_policy_rec *r)
{
	json_decref(r->doc);
	r->doc = NULL;
}

int hub_policy_store(hub_ch *ch, const char *project, const json_t *doc, const char *actor,
		     uint64_t prev_revision, uint64_t *revision, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	int rc;

	if (!text)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	*revision = prev_revision + 1;
	wt_buf_puts(&sql, "INSERT INTO policies_v1 (project, revision, policy, updated_by, updated_ns) VALUES (");
	hub_sql_quote(&sql, project);
	wt_buf_printf(&sql, ", %llu, ", (unsigned long long)*revision);
	hub_sql_quote(&sql, text);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, actor);
	wt_buf_printf(&sql, ", %lld)", (long long)wt_now_ns(CLOCK_REALTIME));
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	free(text);
	if (!rc)
		hub_policy_bump();
	return rc;
}

/* ---- change notification --------------------------------------------------------- */

static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gen_cv = PTHREAD_COND_INITIALIZER;
static uint64_t generation;

void hub_policy_bump(void)
{
	pthread_mutex_lock(&gen_mu);
	generation++;
	pthread_cond_broadcast(&gen_cv);
	pthread_mutex_unlock(&gen_mu);
}

uint64_t hub_policy_generation(void)
{
	uint64_t g;

	pthread_mutex_lock(&gen_mu);
	g = generation;
	pthread_mutex_unlock(&gen_mu);
	return g;
}

void hub_policy_wait(uint64_t gen, int ms)
{
	struct timespec ts;

	ts = wt_deadline(CLOCK_REALTIME, ms);
	pthread_mutex_lock(&gen_mu);
	while (generation == gen)
		if (pthread_cond_timedwait(&gen_cv, &gen_mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&gen_mu);
}
