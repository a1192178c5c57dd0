/*
 * edge_config.c — build and serve an edge's remote config (edge_config.h):
 * policies of the requested projects, the effective rules for this edge,
 * and the projects' upload/read token hashes; ETag = sha256 of the
 * canonical JSON; long-poll wakes on local policy changes at once and
 * re-reads ClickHouse every second (changes made through other hubs, new
 * tokens, audited deletions).
 */
#include "edge_config.h"
#include "clock.h"

#include <sys/queue.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ch_format.h"
#include "edge_projects.h"
#include "hub.h"
#include "log.h"
#include "policy.h"
#include "sha.h"

#define RECHECK_MS 1000
#define ETAG_HEX 32

static atomic_int waiters;
static atomic_int shutting_down;

void hub_edge_config_shutdown(void)
{
	atomic_store(&shutting_down, 1);
	hub_policy_bump();
}

static int reply_error(hub_tls_response *resp, int code, const char *msg)
{
	json_t *j = json_pack("{s:s,s:s}", "error", wt_err_name(code), "detail", msg);
	char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;

	resp->status = wt_err_http_status(code);
	snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
	if (txt)
		wt_buf_puts(&resp->body, txt);
	free(txt);
	json_decref(j);
	return 0;
}

typedef struct names {
	char *v[HUB_EDGE_CONFIG_MAX_PROJECTS];
	size_t n;
} names;

static int token_row(void *ctx, char **f, size_t n)
{
	json_t *projects = ctx, *p;
	size_t i;

	if (n < 4)
		return 0;
	json_array_foreach(projects, i, p)
		if (!strcmp(json_string_value(json_object_get(p, "name")), f[0])) {
			json_t *arr = json_object_get(p, strcmp(f[3], "0") ? "revoked_token_sha256"
						       : !strcmp(f[1], "upload") ? "upload_token_sha256"
						       : "read_token_sha256");
			if (arr)
				json_array_append_new(arr, json_string(f[2]));
		}
	return 0;
}

/* audit row (project, deletion_id, detail "before=… before_ns=N service=S|*")
 * → projects[].deletions entry; rows that do not parse are skipped. */
static int deletion_row(void *ctx, char **f, size_t n)
{
	json_t *projects = ctx, *p;
	const char *bn, *sv;
	char *end;
	long long before_ns;
	size_t i;

	if (n < 3 || !*f[1] || !(bn = strstr(f[2], " before_ns=")) || !(sv = strstr(f[2], " service=")))
		return 0;
	before_ns = strtoll(bn + strlen(" before_ns="), &end, 10);
	if (before_ns <= 0 || *end != ' ')
		return 0;
	sv += strlen(" service=");
	json_array_foreach(projects, i, p)
		if (!strcmp(json_string_value(json_object_get(p, "name")), f[0]))
			json_array_append_new(json_object_get(p, "deletions"),
					      json_pack("{s:s, s:I, s:o}", "deletion_id", f[1], "before_ns",
							(json_int_t)before_ns, "service",
							strcmp(sv, "*") ? json_string(sv) : json_null()));
	return 0;
}

/* Build the config (without etag) for edge_id and projects: only the
 * requested projects the edge is registered to (edge_projects.h); the
 * others are named in "not_allowed" and get nothing. */
static int build(hub_ch *ch, const char *edge_id, const names *want_all, json_t **out, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	json_t *projects = json_array(), *refused = json_array(), *cfg = NULL;
	names known = {{0}, 0}, allowed = {{0}, 0};
	const names *want = &allowed;
	hub_edge_projects *ep = malloc(sizeof(*ep));
	size_t i;
	int rc = 0;

	*out = NULL;
	if (!projects || !refused || !ep) {
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		goto out;
	}
	if (want_all->n && (rc = hub_edge_projects_load(ch, edge_id, ep, err)))
		goto out;
	for (i = 0; i < want_all->n; i++) {
		if (hub_edge_projects_has(ep, want_all->v[i]))
			allowed.v[allowed.n++] = want_all->v[i];
		else
			json_array_append_new(refused, json_string(want_all->v[i]));
	}
	if (want->n) {
		wt_buf_puts(&sql, "SELECT DISTINCT name FROM projects_v1 WHERE name IN (");
		for (i = 0; i < want->n; i++) {
			if (i)
				wt_buf_puts(&sql, ", ");
			hub_sql_quote(&sql, want->v[i]);
		}
		wt_buf_puts(&sql, ") ORDER BY name FORMAT TabSeparated");
		if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
			goto out;
		/* the answer lists the existing names, one per line */
		for (char *line = (char *)res.data, *end = line + res.len; line && line < end;) {
			char *nl = memchr(line, '\n', (size_t)(end - line));
			size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
			for (i = 0; i < want->n; i++)
				if (strlen(want->v[i]) == len && !memcmp(want->v[i], line, len) && known.n < want->n)
					known.v[known.n++] = want->v[i];
			line = nl ? nl + 1 : NULL;
		}
	}
	for (i = 0; i < known.n; i++) {
		hub_policy_rec rec;
		json_t *eff;

		if ((rc = hub_policy_load(ch, known.v[i], &rec, err)))
			goto out;
		eff = hub_policy_effective(rec.doc, edge_id);
		json_array_append_new(projects, json_pack("{s:s, s:I, s:O, s:o, s:[], s:[], s:[], s:[]}", "name",
							  known.v[i], "policy_revision", (json_int_t)rec.revision,
							  "policy", rec.doc, "effective", eff ? eff : json_object(),
							  "upload_token_sha256", "read_token_sha256",
							  "revoked_token_sha256", "deletions"));
		hub_policy_rec_free(&rec);
	}
	if (known.n) {
		wt_buf_reset(&sql);
		wt_buf_reset(&res);
		/* newest version of each token (a revocation is a newer row) */
		/* revoked ones too: an edge refuses them even when its own
		 * config file lists them (appliance/up writes hub tokens there) */
		wt_buf_puts(&sql, "SELECT tp, tr, token_sha256, rv FROM (SELECT token_sha256,"
				  " argMax(project, updated_ns) AS tp, argMax(role, updated_ns) AS tr,"
				  " argMax(revoked, updated_ns) AS rv FROM tokens_v1 GROUP BY token_sha256)"
				  " WHERE tr IN ('upload', 'read') AND tp IN (");
		for (i = 0; i < known.n; i++) {
			if (i)
				wt_buf_puts(&sql, ", ");
			hub_sql_quote(&sql, known.v[i]);
		}
		wt_buf_puts(&sql, ") ORDER BY tp, tr, token_sha256 FORMAT TabSeparated");
		if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
			goto out;
		hub_tsv_each((char *)res.data, res.len, 4, token_row, projects);
		/* recent audited deletions, for the edges' buffers (edge/deletion.h) */
		wt_buf_reset(&sql);
		wt_buf_reset(&res);
		wt_buf_printf(&sql, "SELECT project, deletion_id, detail FROM audit_events_v1 WHERE action ="
			      " 'profiles.delete' AND deletion_id != '' AND time_ns >= %lld AND project IN (",
			      (long long)(wt_now_ns(CLOCK_REALTIME) - HUB_EDGE_CONFIG_DELETION_DAYS * 86400LL * 1000000000LL));
		for (i = 0; i < known.n; i++) {
			if (i)
				wt_buf_puts(&sql, ", ");
			hub_sql_quote(&sql, known.v[i]);
		}
		wt_buf_printf(&sql, ") ORDER BY project, time_ns, deletion_id LIMIT %d FORMAT TabSeparated",
			      HUB_EDGE_CONFIG_MAX_DELETIONS);
		if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
			goto out;
		hub_tsv_each((char *)res.data, res.len, 3, deletion_row, projects);
	}
	cfg = json_pack("{s:s, s:O, s:O}", "edge_id", edge_id, "projects", projects, "not_allowed", refused);
	if (!cfg)
		rc = wt_err_set(err, WT_ENOMEM, "out of memory");
	*out = cfg;
out:
	json_decref(projects);
	json_decref(refused);
	free(ep);
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

static int etag_of(const json_t *cfg, char etag[ETAG_HEX + 1])
{
	char *text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
	char hex[HUB_SHA256_HEX_LEN + 1];

	if (!text)
		return WT_ENOMEM;
	hub_sha256_hex(text, strlen(text), hex);
	free(text);
	memcpy(etag, hex, ETAG_HEX);
	etag[ETAG_HEX] = '\0';
	return 0;
}

/* If-None-Match value without quotes / W/ prefix. */
static void strip_etag(const char *in, char *out, size_t cap)
{
	size_t n;

	if (!strncmp(in, "W/", 2))
		in += 2;
	if (*in == '"')
		in++;
	snprintf(out, cap, "%s", in);
	n = strlen(out);
	if (n && out[n - 1] == '"')
		out[n - 1] = '\0';
}

int hub_edge_config_handle(struct hub_ctx *ctx, hub_ch *ch, const hub_tls_request *req,
			   hub_tls_response *resp)
{
	const char *p = req->path + strlen("/v1/edges/");
	const char *slash = strchr(p, '/');
	char edge_id[128], inm[80] = "", etag[ETAG_HEX + 1], etag2[ETAG_HEX + 1];
	struct evkeyvalq q;
	struct evkeyval *kv;
	names want = {{0}, 0};
	const char *h;
	long wait_s = 0;
	json_t *cfg = NULL;
	wt_err err = {0, ""};
	char *text = NULL;

	TAILQ_INIT(&q);
	if (!slash || strcmp(slash, "/config") || slash == p || (size_t)(slash - p) >= sizeof(edge_id))
		return reply_error(resp, WT_ENOTFOUND, "no such endpoint on the replication port");
	if (strcmp(req->method, "GET"))
		return reply_error(resp, WT_EINVAL, "method: use GET");
	memcpy(edge_id, p, (size_t)(slash - p));
	edge_id[slash - p] = '\0';
	if (strcmp(edge_id, req->peer_id)) {
		wt_warn("msg=\"edge config refused\" peer=%s requested=%.64s", req->peer_id, edge_id);
		return reply_error(resp, WT_EFORBIDDEN, "the client certificate does not name this edge");
	}
	if (req->query && *req->query && evhttp_parse_query_str(req->query, &q))
		return reply_error(resp, WT_EINVAL, "query string is malformed");
	TAILQ_FOREACH(kv, &q, next) {
		if (!strcmp(kv->key, "project")) {
			size_t i;
			int dup = 0;
			if (!hub_project_name_valid(kv->value)) {
				wt_err_set(&err, WT_EINVAL, "project: \"%.64s\" is not a valid project name", kv->value);
				goto fail;
			}
			for (i = 0; i < want.n; i++)
				dup |= !strcmp(want.v[i], kv->value);
			if (dup)
				continue;
			if (want.n == HUB_EDGE_CONFIG_MAX_PROJECTS) {
				wt_err_set(&err, WT_ELIMIT, "project: at most %d projects per edge",
					   HUB_EDGE_CONFIG_MAX_PROJECTS);
				goto fail;
			}
			want.v[want.n++] = kv->value;
		} else if (!strcmp(kv->key, "wait")) {
			char *end;
			wait_s = strtol(kv->value, &end, 10);
			if (*end || wait_s < 0 || wait_s > HUB_EDGE_CONFIG_MAX_WAIT_S) {
				wt_err_set(&err, WT_EINVAL, "wait: expected seconds 0-%d", HUB_EDGE_CONFIG_MAX_WAIT_S);
				goto fail;
			}
		}
	}
	if ((h = hub_tls_request_header(req, "if-none-match")))
		strip_etag(h, inm, sizeof(inm));
	if (hub_ch_health_check(&ctx->store, &err) || build(ch, edge_id, &want, &cfg, &err))
		goto fail;
	if (etag_of(cfg, etag)) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	if (*inm && !strcmp(inm, etag) && wait_s > 0 && atomic_fetch_add(&waiters, 1) < HUB_EDGE_CONFIG_MAX_WAITERS) {
		int64_t deadline = wt_now_ns(CLOCK_REALTIME) + (int64_t)wait_s * 1000000000LL;
		while (!atomic_load(&shutting_down)) {
			int64_t left_ms = (deadline - wt_now_ns(CLOCK_REALTIME)) / 1000000LL;
			json_t *c2 = NULL;
			if (left_ms <= 0)
				break;
			hub_policy_wait(hub_policy_generation(), left_ms < RECHECK_MS ? (int)left_ms : RECHECK_MS);
			if (build(ch, edge_id, &want, &c2, &err) || etag_of(c2, etag2)) {
				json_decref(c2);
				break; /* answer 304 with what we had; the edge polls again */
			}
			if (strcmp(etag2, etag)) {
				json_decref(cfg);
				cfg = c2;
				memcpy(etag, etag2, sizeof(etag));
				break;
			}
			json_decref(c2);
		}
		atomic_fetch_sub(&waiters, 1);
	} else if (*inm && !strcmp(inm, etag) && wait_s > 0) {
		atomic_fetch_sub(&waiters, 1);
	}
	resp->close = 1; /* frees the TLS worker between polls */
	wt_buf_printf(&resp->headers, "ETag: \"%s\"\r\nCache-Control: no-cache\r\n", etag);
	if (*inm && !strcmp(inm, etag)) {
		resp->status = 304;
		goto done;
	}
	json_object_set_new(cfg, "etag", json_string(etag));
	text = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
	if (!text) {
		wt_err_set(&err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
	wt_buf_puts(&resp->body, text);
	goto done;
fail:
	reply_error(resp, err.code ? err.code : WT_EIO, err.msg);
done:
	free(text);
	json_decref(cfg);
	evhttp_clear_headers(&q);
	return 0;
}
