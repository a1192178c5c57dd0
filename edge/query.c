/*
 * query.c — local queries from the edge's own buffer (a subset of the
 * hub's query API, docs/api.md "### Local queries"):
 * GET /v1/projects/{p}/profiles/table, /profiles/flamegraph and
 * /services. They run on a worker thread, scan the `stacks` column family
 * of the selected series and minutes, and render with common/flame.h.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <string.h>

#include "buf.h"
#include "flame.h"
#include "http_server.h"
#include "keys.h"
#include "log.h"
#include "server.h"

#define MAX_FILTERS 32
#define DEFAULT_MAX_NODES 20000
#define MAX_LABELS_PER_STACK 256

typedef struct query {
	char project[256];
	char view[16];
	char *service, *type;
	int64_t from_ns, until_ns; /* until 0 = open */
	char *filt[2 * MAX_FILTERS];
	size_t nfilt;
	size_t limit, max_nodes;
} query;

typedef struct series {
	char *svc, *type, *unit;
} series;

static void query_free(edge_task *t)
{
	query *q = t->priv;
	if (!q)
		return;
	free(q->service);
	free(q->type);
	for (size_t i = 0; i < 2 * q->nfilt; i++)
		free(q->filt[i]);
	free(q);
	t->priv = NULL;
}

static void series_free(series *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(s[i].svc);
		free(s[i].type);
		free(s[i].unit);
	}
	free(s);
}

/* Every (service, type, unit) of the project, in key order. */
static int list_series(edge_buffer *st, const char *proj, series **out, size_t *n)
{
	wt_buf pfx = WT_BUF_INIT;
	series *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc = 0;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_META));

	wt_buf_puts(&pfx, EDGE_META_TYPES);
	wt_buf_append(&pfx, proj, strlen(proj) + 1);
	for (rocksdb_iter_seek(it, (const char *)pfx.data, pfx.len); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
		size_t kl, vl;
		const char *k = rocksdb_iter_key(it, &kl);
		const char *val = rocksdb_iter_value(it, &vl);
		const char *p, *s, *ty;
		const uint8_t *rest;
		size_t restlen;
		if (kl < pfx.len || memcmp(k, pfx.data, pfx.len) != 0)
			break;
		size_t tl = strlen(EDGE_META_TYPES);
		if (edge_key_split((const uint8_t *)k + tl, kl - tl, &p, &s, &ty, &rest, &restlen) != 0)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			series *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = WT_ENOMEM;
				break;
			}
			v = nv;
		}
		v[cnt].svc = strdup(s);
		v[cnt].type = strdup(ty);
		v[cnt].unit = strndup(val, vl);
		cnt++;
		if (!v[cnt - 1].svc || !v[cnt - 1].type || !v[cnt - 1].unit) {
			rc = WT_ENOMEM;
			break;
		}
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	wt_buf_free(&pfx);
	if (rc) {
		series_free(v, cnt);
		return rc;
	}
	*out = v;
	*n = cnt;
	return 0;
}

static void services_view(edge_task *t, query *q)
{
	series *s = NULL;
	size_t n = 0;
	if (list_series(t->srv->store, q->project, &s, &n) != 0) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory listing services");
		return;
	}
	json_t *arr = json_array(), *cur = NULL;
	const char *last = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!last || strcmp(last, s[i].svc)) {
			cur = json_array();
			json_array_append_new(arr, json_pack("{s:s,s:o}", "name", s[i].svc, "types", cur));
			last = s[i].svc;
		}
		json_array_append_new(cur, json_pack("{s:s,s:s}", "type", s[i].type, "unit", s[i].unit));
	}
	t->reply = json_pack("{s:s,s:o}", "project", q->project, "services", arr);
	series_free(s, n);
}

static int labels_match(const query *q, const char **labels, size_t nl)
{
	for (size_t f = 0; f < q->nfilt; f++) {
		int ok = 0;
		for (size_t i = 0; i < nl && !ok; i++)
			if (!strcmp(labels[2 * i], q->filt[2 * f]) && !strcmp(labels[2 * i + 1], q->filt[2 * f + 1]))
				ok = 1;
		if (!ok)
			return 0;
	}
	return 1;
}

static int64_t minute_floor(int64_t ns)
{
	int64_t m = ns / 60000000000LL;
	if (ns < 0 && ns % 60000000000LL)
		m--;
	return m < 0 ? 0 : m;
}

/* Add every stack of series (svc, type) in the time range to f. */
static int scan_series(edge_task *t, query *q, const char *svc, const char *type, wt_flame *f,
		       const char **frames, size_t maxframes, uint64_t *rows)
{
	edge_buffer *st = t->srv->store;
	wt_buf lo = WT_BUF_INIT, hi = WT_BUF_INIT;
	uint8_t m[8];
	int rc = 0;
	const char *labels[2 * MAX_LABELS_PER_STACK];

	edge_key_series(&lo, q->project, svc, type);
	edge_key_series(&hi, q->project, svc, type);
	edge_be64_put(m, (uint64_t)minute_floor(q->from_ns));
	wt_buf_append(&lo, m, 8);
	edge_be64_put(m, q->until_ns ? (uint64_t)minute_floor(q->until_ns) + 1 : UINT64_MAX);
	wt_buf_append(&hi, m, 8);
	if (lo.oom || hi.oom) {
		rc = WT_ENOMEM;
		goto out;
	}
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_iterate_upper_bound(ro, (const char *)hi.data, hi.len);
	rocksdb_iterator_t *it = rocksdb_create_iterator_cf(edge_buffer_db(st), ro, edge_buffer_cf(st, EDGE_CF_STACKS));
	for (rocksdb_iter_seek(it, (const char *)lo.data, lo.len); rocksdb_iter_valid(it) && rc == 0;
	     rocksdb_iter_next(it)) {
		size_t vl, nl, nf;
		const uint8_t *v = (const uint8_t *)rocksdb_iter_value(it, &vl);
		if (vl < 8)
			continue;
		if (edge_stack_payload_parse(v + 8, vl - 8, labels, MAX_LABELS_PER_STACK, &nl, frames, maxframes, &nf) != 0) {
			wt_warn("query: skipping a malformed stacks record");
			continue;
		}
		if (!labels_match(q, labels, nl))
			continue;
		if (wt_flame_add(f, frames, nf, edge_le64_get(v)) != 0)
			rc = WT_ENOMEM;
		(*rows)++;
	}
	char *e = NULL;
	rocksdb_iter_get_error(it, &e);
	if (e) {
		wt_error("query: iterating stacks failed: %s", e);
		free(e);
		rc = WT_EIO;
	}
	rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
out:
	wt_buf_free(&lo);
	wt_buf_free(&hi);
	return rc;
}

static void profile_view(edge_task *t, query *q)
{
	series *s = NULL;
	size_t n = 0, maxframes = t->srv->cfg->max_stack_depth + 1;
	const char *type = q->type, *unit = NULL;
	const char **frames = NULL;
	wt_flame *f = NULL;
	uint64_t rows = 0;
	int rc;

	if (list_series(t->srv->store, q->project, &s, &n) != 0) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory listing series");
		return;
	}
	if (!type) {
		/* cpu when the selection has it, else the service's first type (docs/api.md) */
		for (size_t i = 0; i < n; i++)
			if ((!q->service || !strcmp(s[i].svc, q->service)) && !strcmp(s[i].type, "cpu"))
				type = "cpu";
		for (size_t i = 0; i < n && !type; i++)
			if (!q->service || !strcmp(s[i].svc, q->service))
				type = s[i].type;
	}
	f = wt_flame_new();
	frames = calloc(maxframes, sizeof(*frames));
	if (!f || !frames) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n && type; i++) {
		if ((q->service && strcmp(s[i].svc, q->service)) || strcmp(s[i].type, type))
			continue;
		if (!unit)
			unit = s[i].unit;
		if ((rc = scan_series(t, q, s[i].svc, s[i].type, f, frames, maxframes, &rows))) {
			wt_err_set(&t->err, rc, rc == WT_ENOMEM ? "out of memory building the view" : "reading the buffer failed");
			goto out;
		}
	}
	if (!strcmp(q->view, "table"))
		t->reply = wt_flame_table_json(f, unit ? unit : "", q->limit);
	else
		t->reply = wt_flame_tree_json(f, unit ? unit : "", q->max_nodes);
	if (!t->reply) {
		wt_err_set(&t->err, WT_ENOMEM, "out of memory rendering the view");
		goto out;
	}
	json_object_set_new(t->reply, "project", json_string(q->project));
	if (q->service)
		json_object_set_new(t->reply, "service", json_string(q->service));
	json_object_set_new(t->reply, "type", type ? json_string(type) : json_null());
	json_object_set_new(t->reply, "source", json_string("edge"));
out:
	free(frames);
	wt_flame_free(f);
	series_free(s, n);
}

static void query_work(edge_task *t)
{
	query *q = t->priv;
	atomic_fetch_add(&t->srv->m.queries, 1);
	if (!strcmp(q->view, "services"))
		services_view(t, q);
	else
		profile_view(t, q);
	edge_task_finish(t);
}

static int parse_size(const char *v, size_t dflt, size_t *out)
{
	if (!v || !*v) {
		*out = dflt;
		return 0;
	}
	char *end;
	long long n = strtoll(v, &end, 10);
	if (*end || n < 0 || n > 100000000)
		return -1;
	*out = (size_t)n;
	return 0;
}

void edge_query_handle(edge_server *srv, struct evhttp_request *req, const char *project, const char *view)
{
	char tok[512];
	struct evkeyvalq qs;
	const edge_project_cfg *p;
	query *q = NULL;
	edge_task *t;
	wt_err err = {0};
	int rc = 0;

	TAILQ_INIT(&qs);
	if (wt_http_bearer(req, tok, sizeof(tok)) != 0) {
		edge_reject(srv, req, WT_EAUTH, "missing or malformed Authorization: Bearer <read token>");
		return;
	}
	if (!(p = edge_config_auth(srv->cfg, tok, EDGE_ROLE_READ))) {
		edge_reject(srv, req, WT_EAUTH, "the token is not a read token of any project on this edge");
		return;
	}
	if (strcmp(p->name, project) != 0) {
		edge_reject(srv, req, WT_EFORBIDDEN, "the read token belongs to another project");
		return;
	}
	if (wt_http_query(req, &qs) != 0) {
		edge_reject(srv, req, WT_EINVAL, "the query string is malformed");
		return;
	}
	if (!(q = calloc(1, sizeof(*q)))) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(q->project, sizeof(q->project), "%s", project);
	snprintf(q->view, sizeof(q->view), "%s", view);
	const char *v;
	if ((v = wt_http_param(&qs, "service")) && *v)
		q->service = strdup(v);
	if ((v = wt_http_param(&qs, "type")) && *v)
		q->type = strdup(v);
	if ((v = wt_http_param(&qs, "from")) && *v && wt_http_parse_time(v, &q->from_ns) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "from=\"%s\" is not unix seconds or RFC 3339", v);
		goto fail;
	}
	if ((v = wt_http_param(&qs, "until")) && *v && wt_http_parse_time(v, &q->until_ns) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "until=\"%s\" is not unix seconds or RFC 3339", v);
		goto fail;
	}
	if (q->until_ns && q->until_ns < q->from_ns) {
		rc = wt_err_set(&err, WT_EINVAL, "until is before from");
		goto fail;
	}
	if (parse_size(wt_http_param(&qs, "limit"), 0, &q->limit) != 0 ||
	    parse_size(wt_http_param(&qs, "max_nodes"), DEFAULT_MAX_NODES, &q->max_nodes) != 0) {
		rc = wt_err_set(&err, WT_EINVAL, "limit / max_nodes must be non-negative integers");
		goto fail;
	}
	const struct evkeyval *kv;
	TAILQ_FOREACH(kv, &qs, next) {
		if (strncmp(kv->key, "label.", 6) != 0)
			continue;
		if (q->nfilt >= MAX_FILTERS) {
			rc = wt_err_set(&err, WT_EINVAL, "more than %d label filters", MAX_FILTERS);
			goto fail;
		}
		q->filt[2 * q->nfilt] = strdup(kv->key + 6);
		q->filt[2 * q->nfilt + 1] = strdup(kv->value);
		q->nfilt++;
		if (!q->filt[2 * q->nfilt - 2] || !q->filt[2 * q->nfilt - 1]) {
			rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
			goto fail;
		}
	}
	evhttp_clear_headers(&qs);
	if (!(t = edge_task_new(srv, req))) {
		rc = wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	t->priv = q;
	t->cleanup = query_free;
	t->work = query_work;
	edge_task_start(t);
	return;
fail:
	evhttp_clear_headers(&qs);
	if (q) {
		edge_task tmp = {.priv = q};
		query_free(&tmp);
	}
	edge_reject(srv, req, rc, err.msg);
}
