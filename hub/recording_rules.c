/*
 * recording_rules.c — recording rules (recording_rules.h): the rule
 * documents and their storage, evaluation of an upload at ingest, the
 * per-process counters behind /metrics, and the HTTP endpoints.
 */
#include "recording_rules.h"
#include "clock.h"

#include <jansson.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "ch_format.h"
#include "http_server.h"
#include "ch_rows.h"
#include "log.h"
#include "prom.h"
#include "upload.h"

#define RULES_MAX 100          /* rules per project */
#define RULE_LABELS_MAX 8      /* kept labels per rule */
#define RULE_NAME_MAX 64
#define RULE_REGEX_MAX 1024
#define RULES_CACHE_NS 1000000000LL
#define RULES_MAX_BODY (1 << 20)
#define SERIES_MAX_POINTS 2000
#define SERIES_MAX_ROWS 200000

static const char *const reserved_labels[] = {"project", "rule", "service", "type", "unit"};

typedef struct rule {
	const char *name, *service, *type, *function; /* borrowed from the JSON document */
	int total;                                    /* "total" (else "self") */
	const char *labels[RULE_LABELS_MAX];
	size_t nlabels;
	regex_t re;
	int compiled;
} rule;

/* ---- validation -------------------------------------------------------------- */

static int name_ok(const char *s)
{
	size_t i;
	if (!s || !*s || strlen(s) > RULE_NAME_MAX || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return 0;
	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_'))
			return 0;
	return 1;
}

/* Parse rule i of doc into *r (compiling its regex). WT_EINVAL naming the
 * field ("rules[1].function: …"). */
static int rule_parse(json_t *o, size_t i, rule *r, wt_err *err)
{
	json_t *labels, *l;
	const char *v;
	size_t k, j;
	int rc;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		return wt_err_set(err, WT_EINVAL, "rules[%zu]: expected an object", i);
	r->name = json_string_value(json_object_get(o, "name"));
	r->service = json_string_value(json_object_get(o, "service"));
	r->type = json_string_value(json_object_get(o, "type"));
	r->function = json_string_value(json_object_get(o, "function"));
	v = json_string_value(json_object_get(o, "value"));
	if (!name_ok(r->name))
		return wt_err_set(err, WT_EINVAL, "rules[%zu].name: expected [A-Za-z_][A-Za-z0-9_]{0,63}", i);
	if (!r->service || !hub_service_valid(r->service))
		return wt_err_set(err, WT_EINVAL, "rules[%zu].service: expected a service name", i);
	if (!name_ok(r->type))
		return wt_err_set(err, WT_EINVAL, "rules[%zu].type: expected a sample type (cpu, alloc_space, …)", i);
	if (!r->function || !*r->function || strlen(r->function) > RULE_REGEX_MAX)
		return wt_err_set(err, WT_EINVAL, "rules[%zu].function: expected a regular expression of 1-%d bytes",
				  i, RULE_REGEX_MAX);
	if (!v || (strcmp(v, "self") && strcmp(v, "total")))
		return wt_err_set(err, WT_EINVAL, "rules[%zu].value: expected \"self\" or \"total\"", i);
	r->total = !strcmp(v, "total");
	labels = json_object_get(o, "labels");
	if (labels && !json_is_array(labels))
		return wt_err_set(err, WT_EINVAL, "rules[%zu].labels: expected an array of label names", i);
	if (json_array_size(labels) > RULE_LABELS_MAX)
		return wt_err_set(err, WT_EINVAL, "rules[%zu].labels: at most %d labels", i, RULE_LABELS_MAX);
	json_array_foreach(labels, k, l) {
		const char *s = json_string_value(l);
		/* the upload's label rule; on /metrics the key is written as a
		 * Prometheus label name (wt_prom_label_name), which must be
		 * neither reserved nor another label's */
		if (!s || !wt_upload_label_key_valid(s))
			return wt_err_set(err, WT_EINVAL, "rules[%zu].labels[%zu]: expected a label key "
					  "[A-Za-z_][A-Za-z0-9_./-]* of at most %d bytes", i, k, WT_UPLOAD_LABEL_KEY_MAX);
		for (j = 0; j < sizeof(reserved_labels) / sizeof(reserved_labels[0]); j++)
			if (wt_prom_label_name_eq(s, reserved_labels[j]))
				return wt_err_set(err, WT_EINVAL, "rules[%zu].labels[%zu]: \"%s\" is reserved", i, k, s);
		for (j = 0; j < r->nlabels; j++)
			if (wt_prom_label_name_eq(s, r->labels[j]))
				return wt_err_set(err, WT_EINVAL, "rules[%zu].labels[%zu]: \"%s\" twice (as a Prometheus "
						  "label name, where '.', '-' and '/' are '_')", i, k, s);
		r->labels[r->nlabels++] = s;
	}
	if ((rc = regcomp(&r->re, r->function, REG_EXTENDED | REG_NOSUB))) {
		char msg[160];
		regerror(rc, &r->re, msg, sizeof(msg));
		return wt_err_set(err, WT_EINVAL, "rules[%zu].function: not a POSIX extended regular expression: %s", i, msg);
	}
	r->compiled = 1;
	return 0;
}

static void rules_free(rule *r, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (r[i].compiled)
			regfree(&r[i].re);
	free(r);
}

/* Parse doc's "rules" array; *out (n rules) borrows strings from doc. */
static int rules_parse(json_t *doc, rule **out, size_t *n, wt_err *err)
{
	json_t *arr = json_object_get(doc, "rules"), *o;
	rule *r;
	size_t i, j;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return wt_err_set(err, WT_EINVAL, "rules: expected {\"rules\":[…]}");
	if (json_array_size(arr) > RULES_MAX)
		return wt_err_set(err, WT_EINVAL, "rules: at most %d rules per project", RULES_MAX);
	if (!(r = calloc(json_array_size(arr) + 1, sizeof(*r))))
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	json_array_foreach(arr, i, o) {
		if ((rc = rule_parse(o, i, &r[i], err)))
			break;
		*n = i + 1;
		for (j = 0; j < i; j++)
			if (!strcmp(r[j].name, r[i].name)) {
				rc = wt_err_set(err, WT_EINVAL, "rules[%zu].name: \"%s\" twice", i, r[i].name);
				break;
			}
		if (rc)
			break;
	}
	if (rc) {
		rules_free(r, *n);
		*n = 0;
		return rc;
	}
	*out = r;
	return 0;
}

/* ---- storage and cache ------------------------------------------------------- */

typedef struct stored {
	uint64_t revision;
	json_t *doc; /* {"rules":[…]} with "created" per rule */
} stored;

static int load_row(void *ctx, char **f, size_t n)
{
	stored *s = ctx;
	if (n < 2 || s->doc)
		return 0;
	s->revision = strtoull(f[0], NULL, 10);
	s->doc = json_loads(f[1], 0, NULL);
	return 1;
}

static int rules_load(hub_ch *ch, const char *project, stored *out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	wt_buf_puts(&sql, "SELECT revision, rules FROM recording_rules_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " ORDER BY revision DESC, updated_ns DESC LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &res, err);
	if (!rc)
		hub_tsv_each((char *)res.data, res.len, 2, load_row, out);
	if (!rc && !out->doc && !(out->doc = json_pack("{s:[]}", "rules")))
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *cache;            /* project → [loaded_ns, doc] */
static json_t *counters;         /* prometheus label text → value */
static size_t max_series = 10000;
static long long dropped_total;  /* counter updates the cap dropped */
static long long errors_total;   /* uploads whose rule values were not stored */

void hub_rules_set_max_series(size_t n)
{
	pthread_mutex_lock(&mu);
	max_series = n;
	pthread_mutex_unlock(&mu);
}

/* A private copy of the project's rule document (cached for a second). */
static int rules_get(hub_ch *ch, const char *project, json_t **doc, wt_err *err)
{
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	json_t *e;
	stored s;
	int rc;

	*doc = NULL;
	pthread_mutex_lock(&mu);
	e = cache ? json_object_get(cache, project) : NULL;
	if (e && now - json_integer_value(json_array_get(e, 0)) < RULES_CACHE_NS)
		*doc = json_deep_copy(json_array_get(e, 1));
	pthread_mutex_unlock(&mu);
	if (*doc)
		return 0;
	if ((rc = rules_load(ch, project, &s, err)))
		return rc;
	pthread_mutex_lock(&mu);
	if (!cache)
		cache = json_object();
	if (cache)
		json_object_set_new(cache, project, json_pack("[I, O]", (json_int_t)now, s.doc));
	pthread_mutex_unlock(&mu);
	*doc = s.doc;
	return 0;
}

static void cache_drop(const char *project)
{
	pthread_mutex_lock(&mu);
	if (cache)
		json_object_del(cache, project);
	pthread_mutex_unlock(&mu);
}

/* ---- evaluation ---------------------------------------------------------------- */

/* Sum one rule over p into acc: "minute\x1fv1\x1fv2…" → value. */
static int eval_rule(const rule *r, const hub_label_param *ul, size_t nul, const wt_profile *p, int64_t fallback_ns,
		     json_t *acc, wt_err *err)
{
	int ti = wt_profile_find_type(p, r->type);
	signed char *fm = NULL; /* per frame: -1 unknown, 0 no, 1 matches */
	wt_buf key = WT_BUF_INIT;
	char nbuf[512];
	size_t i, k, j;
	int rc = 0;

	if (ti < 0 || !p->nsamples)
		return 0;
	if (!(fm = malloc(p->nframes + 1))) 
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	memset(fm, -1, p->nframes + 1);
	for (i = 0; i < p->nsamples; i++) {
		const wt_sample *s = &p->samples[i];
		int64_t v = wt_profile_values(p, i)[ti], t;
		size_t n;
		const uint32_t *fr = wt_profile_stack(p, s->stack, &n);
		int hit = 0;
		json_t *cur;

		if (!v)
			continue;
		for (k = 0; k < n && !hit; k++) {
			if (fm[fr[k]] < 0) {
				const char *name = wt_profile_frame_name(p, fr[k], nbuf, sizeof(nbuf));
				fm[fr[k]] = regexec(&r->re, name, 0, NULL, 0) == 0;
			}
			hit = fm[fr[k]];
			if (!r->total)
				break; /* self: the leaf (first frame) only */
		}
		if (!hit)
			continue;
		t = s->time_ns ? s->time_ns : p->time_ns ? p->time_ns : fallback_ns;
		wt_buf_reset(&key);
		wt_buf_printf(&key, "%lld", (long long)(t / 60000000000LL));
		for (k = 0; k < r->nlabels; k++) {
			const char *lv = NULL;
			for (j = 0; j < nul; j++)
				if (!strcmp(ul[j].key, r->labels[k]))
					lv = ul[j].value;
			if (!lv)
				lv = wt_profile_label_str(p, s->labelset, r->labels[k]);
			wt_buf_putc(&key, '\x1f');
			wt_buf_puts(&key, lv ? lv : "");
		}
		wt_buf_putc(&key, '\0');
		if (key.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			break;
		}
		cur = json_object_get(acc, (const char *)key.data);
		if (json_object_set_new(acc, (const char *)key.data,
					json_integer((cur ? json_integer_value(cur) : 0) + v))) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			break;
		}
	}
	free(fm);
	wt_buf_free(&key);
	return rc;
}

/* Split "minute\x1fv1\x1fv2" into minute and values[]. */
static size_t split_key(char *k, long long *minute, char **vals, size_t cap)
{
	size_t n = 0;
	char *p = strchr(k, '\x1f');

	*minute = strtoll(k, NULL, 10);
	while (p && n < cap) {
		*p = '\0';
		vals[n++] = p + 1;
		p = strchr(p + 1, '\x1f');
	}
	return n;
}

/* An upload's evaluated rules, not yet stored or counted. */
struct hub_rules_pending {
	char *project, *upload_id;
	wt_buf values;   /* "(…), (…)" rows of rule_values_v1 */
	size_t nrows;
	json_t *deltas;  /* prometheus label text → value to add */
};

void hub_rules_pending_free(hub_rules_pending *pd)
{
	if (!pd)
		return;
	free(pd->project);
	free(pd->upload_id);
	wt_buf_free(&pd->values);
	json_decref(pd->deltas);
	free(pd);
}

/* Add one rule's sums (acc) to pd: rows and counter deltas. */
static int pend_rule(hub_rules_pending *pd, const char *service, const rule *r, const char *unit, json_t *acc)
{
	const char *key;
	json_t *v;
	wt_buf lbl = WT_BUF_INIT;
	int rc = 0;

	json_object_foreach(acc, key, v) {
		char *kc = strdup(key), *vals[RULE_LABELS_MAX], day[11];
		long long minute;
		size_t n, k;
		time_t sec;
		struct tm tm;
		json_t *cur;

		if (!kc) {
			rc = WT_ENOMEM;
			break;
		}
		n = split_key(kc, &minute, vals, RULE_LABELS_MAX);
		sec = (time_t)(minute * 60);
		gmtime_r(&sec, &tm);
		strftime(day, sizeof(day), "%Y-%m-%d", &tm);
		wt_buf_printf(&pd->values, "%s('%s', %lld, ", pd->nrows++ ? ", " : " ", day, minute * 60);
		hub_sql_quote(&pd->values, pd->project);
		wt_buf_puts(&pd->values, ", ");
		hub_sql_quote(&pd->values, r->name);
		wt_buf_puts(&pd->values, ", ");
		hub_sql_quote(&pd->values, service);
		wt_buf_puts(&pd->values, ", ");
		hub_sql_quote(&pd->values, r->type);
		wt_buf_puts(&pd->values, ", ");
		hub_sql_quote(&pd->values, unit);
		wt_buf_puts(&pd->values, ", [");
		for (k = 0; k < n; k++) {
			wt_buf_puts(&pd->values, k ? ", " : "");
			hub_sql_quote(&pd->values, r->labels[k]);
		}
		wt_buf_puts(&pd->values, "], [");
		for (k = 0; k < n; k++) {
			wt_buf_puts(&pd->values, k ? ", " : "");
			hub_sql_quote(&pd->values, vals[k]);
		}
		wt_buf_printf(&pd->values, "], %lld, ", (long long)json_integer_value(v));
		hub_sql_quote(&pd->values, pd->upload_id);
		wt_buf_putc(&pd->values, ')');

		wt_buf_reset(&lbl);
		wt_buf_puts(&lbl, "project=\"");
		wt_prom_escape(&lbl, pd->project);
		wt_buf_puts(&lbl, "\",rule=\"");
		wt_prom_escape(&lbl, r->name);
		wt_buf_puts(&lbl, "\",service=\"");
		wt_prom_escape(&lbl, service);
		wt_buf_puts(&lbl, "\",type=\"");
		wt_prom_escape(&lbl, r->type);
		wt_buf_puts(&lbl, "\",unit=\"");
		wt_prom_escape(&lbl, unit);
		wt_buf_putc(&lbl, '"');
		for (k = 0; k < n && k < r->nlabels; k++) {
			wt_buf_putc(&lbl, ',');
			wt_prom_label_name(&lbl, r->labels[k]);
			wt_buf_puts(&lbl, "=\"");
			wt_prom_escape(&lbl, vals[k]);
			wt_buf_putc(&lbl, '"');
		}
		wt_buf_putc(&lbl, '\0');
		free(kc);
		if (lbl.oom || pd->values.oom) {
			rc = WT_ENOMEM;
			break;
		}
		cur = json_object_get(pd->deltas, (const char *)lbl.data);
		if (json_object_set_new(pd->deltas, (const char *)lbl.data,
					json_integer((cur ? json_integer_value(cur) : 0) + json_integer_value(v)))) {
			rc = WT_ENOMEM;
			break;
		}
	}
	wt_buf_free(&lbl);
	return rc;
}

static const char *unit_of(const wt_profile *p, const char *type)
{
	int ti = wt_profile_find_type(p, type);
	return ti < 0 ? "" : wt_profile_str(p, p->types[ti].unit);
}

int hub_rules_eval(hub_ch *ch, const char *project, const char *service, const char *upload_id,
		   const hub_label_param *ul, size_t nul, const wt_profile *p, int64_t fallback_ns,
		   hub_rules_pending **out, wt_err *err)
{
	json_t *doc = NULL, *acc = NULL;
	rule *rules = NULL;
	size_t n = 0, i;
	hub_rules_pending *pd = NULL;
	int rc;

	*out = NULL;
	if ((rc = rules_get(ch, project, &doc, err)))
		goto out;
	if ((rc = rules_parse(doc, &rules, &n, err)) || !n)
		goto out;
	if (!(pd = calloc(1, sizeof(*pd))) || !(pd->project = strdup(project)) ||
	    !(pd->upload_id = strdup(upload_id ? upload_id : "")) || !(pd->deltas = json_object())) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(rules[i].service, service))
			continue;
		json_decref(acc);
		if (!(acc = json_object())) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = eval_rule(&rules[i], ul, nul, p, fallback_ns, acc, err)))
			goto out;
		if ((rc = pend_rule(pd, service, &rules[i], unit_of(p, rules[i].type), acc))) {
			rc = wt_err_set(err, rc, "out of memory");
			goto out;
		}
	}
	if (pd->nrows) {
		*out = pd;
		pd = NULL;
	}
out:
	if (rc) {
		pthread_mutex_lock(&mu);
		errors_total++;
		pthread_mutex_unlock(&mu);
	}
	hub_rules_pending_free(pd);
	json_decref(acc);
	rules_free(rules, n);
	json_decref(doc);
	return rc;
}

int hub_rules_store(hub_ch *ch, const hub_rules_pending *pd, int recovery, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	int rc = 0;

	if (!pd)
		return 0;
	if (recovery && pd->upload_id[0]) {
		/* an interrupted apply may have stored them already */
		wt_buf_puts(&sql, "SELECT count() FROM rule_values_v1 WHERE project = ");
		hub_sql_quote(&sql, pd->project);
		wt_buf_puts(&sql, " AND upload_id = ");
		hub_sql_quote(&sql, pd->upload_id);
		wt_buf_puts(&sql, " FORMAT TabSeparated");
		if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
			goto out;
		if (res.len && strtoll((const char *)res.data, NULL, 10) > 0)
			goto out;
		wt_buf_reset(&sql);
	}
	wt_buf_puts(&sql, "INSERT INTO rule_values_v1 (date, minute, project, rule, service, sample_type, unit,"
		    " labels.key, labels.value, value, upload_id) VALUES");
	wt_buf_append(&sql, pd->values.data, pd->values.len);
	if (sql.oom)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	else
		rc = hub_ch_query_buf(ch, &sql, NULL, err);
out:
	if (rc) {
		pthread_mutex_lock(&mu);
		errors_total++;
		pthread_mutex_unlock(&mu);
	}
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

void hub_rules_count(const hub_rules_pending *pd)
{
	const char *key;
	json_t *v;

	if (!pd)
		return;
	pthread_mutex_lock(&mu);
	if (!counters)
		counters = json_object();
	json_object_foreach(pd->deltas, key, v) {
		json_t *cur = counters ? json_object_get(counters, key) : NULL;
		if (!counters)
			break;
		if (!cur && json_object_size(counters) >= max_series) {
			dropped_total++;
			continue;
		}
		json_object_set_new(counters, key, json_integer((cur ? json_integer_value(cur) : 0) + json_integer_value(v)));
	}
	pthread_mutex_unlock(&mu);
}

int hub_rules_apply(hub_ch *ch, const char *project, const char *service, const char *upload_id,
		    const hub_label_param *ul, size_t nul, const wt_profile *p, int64_t fallback_ns, wt_err *err)
{
	hub_rules_pending *pd = NULL;
	int rc;

	if (!(rc = hub_rules_eval(ch, project, service, upload_id, ul, nul, p, fallback_ns, &pd, err)) &&
	    !(rc = hub_rules_store(ch, pd, 0, err)))
		hub_rules_count(pd);
	hub_rules_pending_free(pd);
	return rc;
}

int hub_rules_metrics_render(wt_buf *out)
{
	const char *key;
	json_t *v;

	pthread_mutex_lock(&mu);
	wt_prom_family(out, "wt_profile_rule_value", "counter",
		       "Recording rules: sum of the matching samples since the rule existed (this hub process), in the "
		       "type's unit.");
	if (counters)
		json_object_foreach(counters, key, v)
			wt_prom_raw_i64(out, "wt_profile_rule_value", key, (int64_t)json_integer_value(v));
	wt_prom_counter(out, "wt_profile_rule_series_dropped_total",
			"Recording-rule counter updates dropped by the series cap (recording_rules.max_series).",
			(uint64_t)dropped_total);
	wt_prom_counter(out, "wt_profile_rule_errors_total", "Uploads whose recording-rule values could not be stored.",
			(uint64_t)errors_total);
	wt_prom_gauge(out, "wt_profile_rule_series", "Counter series of wt_profile_rule_value.",
		      counters ? (int64_t)json_object_size(counters) : 0);
	pthread_mutex_unlock(&mu);
	return out->oom ? WT_ENOMEM : 0;
}

/* ---- HTTP --------------------------------------------------------------------- */

static void rules_get_http(hub_req *r, const char *project)
{
	wt_err err = {0, ""};
	stored s = {0, NULL};
	int days;

	if (hub_ch_health_check(&r->ctx->store, &err) || hub_project_retention(r->ch, project, &days, &err) || rules_load(r->ch, project, &s, &err)) {
		hub_req_fail(r, &err);
		return;
	}
	json_object_set_new(s.doc, "project", json_string(project));
	json_object_set_new(s.doc, "revision", json_integer((json_int_t)s.revision));
	hub_req_json(r, 200, s.doc);
}

/* Same definition (everything but "created")? */
static int same_rule(json_t *a, json_t *b)
{
	static const char *const keys[] = {"service", "type", "function", "value", "labels"};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
		if (!json_equal(x, y) && !(!x && json_is_array(y) && !json_array_size(y)) &&
		    !(!y && json_is_array(x) && !json_array_size(x)))
			return 0;
	}
	return 1;
}

static void rules_put_http(hub_req *r, const char *project)
{
	const hub_principal *who = &r->who;
	wt_err err = {0, ""};
	stored old = {0, NULL};
	uint8_t *body = NULL;
	size_t len = 0, n = 0, i, j;
	json_t *doc = NULL, *arr, *o, *clean = NULL;
	json_error_t je;
	rule *rules = NULL;
	wt_buf sql = WT_BUF_INIT, detail = WT_BUF_INIT;
	char *text = NULL;
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	int days;

	if (hub_ch_health_check(&r->ctx->store, &err) || wt_http_body(r->req, RULES_MAX_BODY, &body, &len, &err))
		goto fail;
	if (!(doc = json_loadb((const char *)body, len, 0, &je))) {
		wt_err_set(&err, WT_EINVAL, "body: not JSON (line %d column %d: %s)", je.line, je.column, je.text);
		goto fail;
	}
	if (rules_parse(doc, &rules, &n, &err) || hub_project_retention(r->ch, project, &days, &err) ||
	    rules_load(r->ch, project, &old, &err))
		goto fail;
	/* the stored form: the known fields, plus "created" (kept from the
	 * previous revision when the rule did not change) */
	if (!(clean = json_pack("{s:[]}", "rules")))
		goto oom;
	arr = json_object_get(clean, "rules");
	for (i = 0; i < n; i++) {
		json_t *prev, *labels = json_array();
		json_int_t created = (json_int_t)now;

		for (j = 0; labels && j < rules[i].nlabels; j++)
			json_array_append_new(labels, json_string(rules[i].labels[j]));
		o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "name", rules[i].name, "service", rules[i].service,
			      "type", rules[i].type, "function", rules[i].function, "value",
			      rules[i].total ? "total" : "self", "labels", labels ? labels : json_array());
		if (!o || json_array_append_new(arr, o))
			goto oom;
		json_array_foreach(json_object_get(old.doc, "rules"), j, prev)
			if (json_equal(json_object_get(prev, "name"), json_object_get(o, "name")) && same_rule(prev, o) &&
			    json_is_integer(json_object_get(prev, "created")))
				created = json_integer_value(json_object_get(prev, "created"));
		json_object_set_new(o, "created", json_integer(created));
		wt_buf_printf(&detail, "%s%s", i ? "," : "rules=", rules[i].name);
	}
	if (!n)
		wt_buf_puts(&detail, "rules=");
	wt_buf_putc(&detail, '\0');
	if (!(text = json_dumps(clean, JSON_COMPACT)) || detail.oom)
		goto oom;
	wt_buf_puts(&sql, "INSERT INTO recording_rules_v1 (project, revision, rules, updated_by, updated_ns) VALUES (");
	hub_sql_quote(&sql, project);
	wt_buf_printf(&sql, ", %llu, ", (unsigned long long)(old.revision + 1));
	hub_sql_quote(&sql, text);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, who->token_id);
	wt_buf_printf(&sql, ", %lld)", (long long)now);
	/* audited before it takes effect */
	if (hub_audit_record(r->ch, project, who->token_id, "recording_rules.update", (const char *)detail.data, NULL,
			     &err) ||
	    hub_ch_query_buf(r->ch, &sql, NULL, &err))
		goto fail;
	cache_drop(project);
	wt_info("msg=\"recording rules updated\" project=%s revision=%llu rules=%zu by=%s", project,
		(unsigned long long)(old.revision + 1), n, who->token_id);
	json_object_set_new(clean, "project", json_string(project));
	json_object_set_new(clean, "revision", json_integer((json_int_t)(old.revision + 1)));
	hub_req_json(r, 200, clean);
	clean = NULL;
	goto out;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_req_fail(r, &err);
out:
	rules_free(rules, n);
	json_decref(doc);
	json_decref(clean);
	json_decref(old.doc);
	wt_buf_free(&sql);
	wt_buf_free(&detail);
	free(text);
	free(body);
}

/* Per label set of the rule: points [t_ns, value] on the grid
 * from + k·step (as /profiles/series). */
static void rule_series_http(hub_req *r, const char *project, const char *name)
{
	wt_err err = {0, ""};
	hub_params hp;
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	json_t *doc = NULL, *rows, *row, *series = NULL, *cur = NULL, *out;
	json_error_t je;
	char prev[4096] = "";
	int64_t from, until, step;
	long points;
	size_t i;

	if (hub_ch_health_check(&r->ctx->store, &err))
		goto fail;
	if (!name_ok(name)) {
		wt_err_set(&err, WT_ENOTFOUND, "rule: \"%.64s\" is not a rule name", name);
		goto fail;
	}
	if (hub_params_parse(&r->q, &hp, &err) ||
	    hub_param_uint(&r->q, "points", 240, 1, SERIES_MAX_POINTS, &points, &err))
		goto fail;
	until = hp.has_until ? hp.until_ns : wt_now_ns(CLOCK_REALTIME);
	from = hp.has_from ? hp.from_ns : until - (int64_t)r->ctx->cfg.default_range_s * 1000000000LL;
	if (from < 0)
		from = 0;
	if (until <= from) {
		wt_err_set(&err, WT_EINVAL, "until: must be after from");
		goto fail;
	}
	step = (until - from) / points;
	step = step < 60000000000LL ? 60000000000LL : step / 60000000000LL * 60000000000LL;
	wt_buf_printf(&sql, "SELECT toString(%lld + intDiv(toInt64(minute) * 1000000000 - %lld, %lld) * %lld) AS t,"
		      " labels.key, labels.value, toString(sum(value)), any(unit) FROM rule_values_v1 WHERE project = ",
		      (long long)from, (long long)from, (long long)step, (long long)step);
	hub_sql_quote(&sql, project);
	wt_buf_puts(&sql, " AND rule = ");
	hub_sql_quote(&sql, name);
	if (hp.service) {
		wt_buf_puts(&sql, " AND service = ");
		hub_sql_quote(&sql, hp.service);
	}
	wt_buf_printf(&sql, " AND toInt64(minute) * 1000000000 >= %lld AND toInt64(minute) * 1000000000 < %lld",
		      (long long)from, (long long)until);
	for (i = 0; i < hp.nlabels; i++) {
		wt_buf_puts(&sql, " AND labels.value[indexOf(labels.key, ");
		hub_sql_quote(&sql, hp.labels[i].key);
		wt_buf_puts(&sql, ")] = ");
		hub_sql_quote(&sql, hp.labels[i].value);
	}
	wt_buf_printf(&sql, " GROUP BY labels.key, labels.value, t ORDER BY labels.key, labels.value, t LIMIT %d"
		      " FORMAT JSONCompact", SERIES_MAX_ROWS);
	if (hub_ch_query_buf(r->ch, &sql, &res, &err))
		goto fail;
	doc = json_loadb(res.data ? (const char *)res.data : "", res.len, 0, &je);
	rows = json_object_get(doc, "data");
	if (!(series = json_array()))
		goto oom;
	out = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:O}", "project", project, "rule", name, "unit", "",
			"from", (json_int_t)from, "until", (json_int_t)until, "step", (json_int_t)step, "series", series);
	if (!out)
		goto oom;
	json_array_foreach(rows, i, row) {
		json_t *ks = json_array_get(row, 1), *vs = json_array_get(row, 2);
		char *lk = json_dumps(ks, JSON_COMPACT), *lv = json_dumps(vs, JSON_COMPACT);
		char key[4096];
		snprintf(key, sizeof(key), "%s%s", lk ? lk : "", lv ? lv : "");
		free(lk);
		free(lv);
		if (!cur || strcmp(key, prev)) {
			json_t *labels = json_object();
			size_t k;
			for (k = 0; k < json_array_size(ks); k++)
				json_object_set(labels, json_string_value(json_array_get(ks, k)), json_array_get(vs, k));
			cur = json_pack("{s:o, s:[]}", "labels", labels ? labels : json_object(), "points");
			json_array_append_new(series, cur);
			snprintf(prev, sizeof(prev), "%s", key);
		}
		json_array_append_new(json_object_get(cur, "points"),
				      json_pack("[I, I]", (json_int_t)strtoll(json_string_value(json_array_get(row, 0)), NULL, 10),
						(json_int_t)strtoll(json_string_value(json_array_get(row, 3)), NULL, 10)));
		json_object_set(out, "unit", json_array_get(row, 4));
	}
	hub_req_json(r, 200, out);
	goto done;
oom:
	wt_err_set(&err, WT_ENOMEM, "out of memory");
fail:
	hub_req_fail(r, &err);
done:
	json_decref(series);
	json_decref(doc);
	wt_buf_free(&sql);
	wt_buf_free(&res);
}

/* Route handlers (server.c's table checks token, project and role: read
 * for GET, admin for PUT). The name is cut to RULE_NAME_MAX + 1 bytes, as a longer
 * one is refused by the validation anyway. */
int hub_handle_rules(hub_req *r, wt_err *err)
{
	(void)err;
	if (evhttp_request_get_command(r->req) == EVHTTP_REQ_PUT)
		rules_put_http(r, r->project);
	else
		rules_get_http(r, r->project);
	return 0;
}

int hub_handle_rule_series(hub_req *r, wt_err *err)
{
	char name[RULE_NAME_MAX + 2];

	(void)err;
	snprintf(name, sizeof(name), "%s", r->id);
	rule_series_http(r, r->project, name);
	return 0;
}
