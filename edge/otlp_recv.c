/*
 * otlp_recv.c — OTLP/HTTP and OTLP/gRPC profiles receivers of wt-edge (see
 * otlp_recv.h). A request becomes a job: the loop thread authenticates and
 * copies the body, a worker decodes it (wt_otlp_decode) and builds one
 * edge_commit per service with edge_ingest_prepare(), each holding as its
 * original only that service's resource profiles (split_request), the store commits
 * them (group commit, synced), and when the last commit is done the job's
 * event brings the answer back to the loop thread.
 *
 * gRPC: HTTP/2 cleartext with prior knowledge only (what OTel exporters use
 * with insecure=true); unary Export with one length-prefixed message
 * (compressed flag + BE32 length; grpc-encoding gzip accepted); the answer
 * is an empty ExportProfilesServiceResponse and grpc-status 0, or a
 * trailers-only response with grpc-status / grpc-message.
 *
 * Bounds (docs/operations.md, "Request limits"): the token, path and
 * content type are checked when a stream's HEADERS arrive, and a refused
 * stream is answered at once and reset, so no body byte of it is kept; body
 * bytes reserve room in the edge's in-flight budget (srv->inflight) as they
 * arrive and give it back when the job is freed; a connection carries at
 * most edge.max_streams concurrent streams; a stream whose body is not
 * complete within edge.stream_timeout_s is answered DEADLINE_EXCEEDED; and
 * connections beyond edge.max_connections are closed at accept.
 */
#include "otlp_recv.h"
#include "clock.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>
#include <nghttp2/nghttp2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include "buf.h"
#include "compress.h"
#include "config.h"
#include "http_guard.h"
#include "http_server.h"
#include "listen_addr.h"
#include "log.h"
#include "otlp.h"
#include "pbwalk.h"
#include "server.h"

#define HTTP_PATH "/v1development/profiles"
#define GRPC_PATH "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
#define ENDPOINT_HTTP "otlp-http " HTTP_PATH
#define ENDPOINT_GRPC "otlp-grpc ProfilesService/Export"
#define MAX_NAME 256
#define HTTP_TIMEOUT_S 60
#define GRPC_WINDOW (1u << 20)

/* gRPC status codes (grpc/status.h) */
enum { G_OK = 0, G_INVALID_ARGUMENT = 3, G_DEADLINE_EXCEEDED = 4, G_RESOURCE_EXHAUSTED = 8, G_UNIMPLEMENTED = 12,
       G_INTERNAL = 13, G_UNAVAILABLE = 14, G_UNAUTHENTICATED = 16 };

typedef struct gconn gconn;
typedef struct gstream gstream;
typedef struct job job;

struct edge_otlp {
	edge_server *srv;
	struct evhttp *http;
	struct evhttp_bound_socket *http_sock;
	struct evconnlistener *lis;
	struct event *sweep; /* stream timeouts, once a second */
	gconn *conns;
};

struct job {
	edge_server *srv;
	struct event *ev;
	char project[MAX_NAME];
	char service[MAX_NAME]; /* fallback for unknown_service, "" = none */
	const char *endpoint;
	uint8_t *body;          /* the request message (owned) */
	size_t len;
	uint64_t reserved;      /* bytes of srv->inflight held until job_free */
	int64_t received_ns;
	edge_commit *commits;   /* owned */
	size_t ncommits;
	atomic_size_t pending;
	atomic_int commit_rc;
	wt_err err;
	size_t samples, nprofiles;
	struct evhttp_request *req; /* HTTP reply target */
	int json;                   /* OTLP/JSON request: answer in JSON */
	gstream *gs;                /* gRPC reply target; NULL once the stream is gone */
};

struct gconn {
	edge_otlp *o;
	struct bufferevent *bev;
	nghttp2_session *sess;
	gstream *streams;
	gconn *next, *prev;
};

struct gstream {
	gconn *c;
	int32_t id;
	char path[160], auth[600], service[MAX_NAME], enc[32], ctype[64];
	char project[MAX_NAME]; /* of the token, once the HEADERS were accepted */
	wt_buf body;
	int over;
	int refused;            /* answered with an error; later DATA is dropped */
	int64_t started_ns;     /* HEADERS received (CLOCK_MONOTONIC) */
	uint64_t reserved;      /* bytes of srv->inflight held for body */
	job *job;
	size_t resp_off; /* bytes of the 5-byte response frame sent */
	gstream *next, *prev;
};

static int valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20)
			return 0;
	return 1;
}

/* ---- jobs ---------------------------------------------------------------------- */
static void grpc_reply(job *j);

static void job_free(job *j)
{
	for (size_t i = 0; i < j->ncommits; i++) {
		free(j->commits[i].raw);
		free(j->commits[i].rolluplog);
		wt_buf_free(&j->commits[i].ops);
	}
	free(j->commits);
	free(j->body);
	wt_budget_give(&j->srv->inflight, j->reserved);
	if (j->ev)
		event_free(j->ev);
	free(j);
}

/* Loop thread: answer and free. */
static void job_done_cb(evutil_socket_t fd, short what, void *arg)
{
	job *j = arg;
	edge_server *srv = j->srv;

	if (!j->err.code && atomic_load(&j->commit_rc)) {
		edge_commit_error(srv->store, atomic_load(&j->commit_rc), &j->err);
	}
	if (j->err.code) {
		int i = -j->err.code;
		wt_info("otlp upload rejected endpoint=\"%s\" error=%s detail=\"%s\"", j->endpoint,
			wt_err_name(j->err.code), j->err.msg);
		if (i > 0 && i < EDGE_NERRCODES)
			atomic_fetch_add(&srv->m.rejects[i], 1);
	} else {
		atomic_fetch_add(&srv->m.uploads[WT_FMT_OTLP], 1);
		atomic_fetch_add(&srv->m.upload_bytes, j->len);
		atomic_fetch_add(&srv->m.upload_samples, j->samples);
	}
	if (j->req) {
		if (j->err.code) {
			wt_http_send_error(j->req, j->err.code, j->err.msg);
		} else {
			/* an empty ExportProfilesServiceResponse, in the request's encoding */
			if (j->json)
				wt_http_send_bytes(j->req, 200, "application/json", "{}", 2);
			else
				wt_http_send_bytes(j->req, 200, "application/x-protobuf", "", 0);
		}
	} else if (j->gs) {
		grpc_reply(j);
	}
	srv->pending--;
	{
		uint64_t big = j->len;
		job_free(j);
		edge_memory_trim(srv, big);
	}
}

static void commit_done(edge_commit *c)
{
	job *j = c->arg;
	if (c->rc)
		atomic_store(&j->commit_rc, c->rc);
	if (atomic_fetch_sub(&j->pending, 1) == 1)
		event_active(j->ev, 0, 1);
}

/* ---- one stored original per service ---------------------------------------- */

/* A protobuf request is split at its top level: ExportProfilesServiceRequest
 * field 1 (resource_profiles) entries apart, every other field (the shared
 * dictionary of OTLP >= 1.7) copied into each part. An OTLP/JSON request is
 * split the same way: the elements of its top-level "resourceProfiles"
 * array apart, every other member copied, each part written back as a JSON
 * document (so the stored original stays OTLP/JSON). Which services an entry
 * holds is what the decoder itself says of "rest + that entry", so a
 * sample-level service.name is honoured too. */
typedef struct split_entry {
	size_t off, len; /* protobuf: the whole field (tag, length, bytes) in the request;
			  * JSON: off = index in the array, len = 0 */
	char **svc;      /* services the entry yields (owned) */
	size_t nsvc;
} split_entry;

typedef struct split {
	wt_buf rest;      /* protobuf: every top-level field but resource_profiles */
	json_t *root;     /* JSON: the parsed document (owned); NULL for protobuf */
	const char *key;  /* JSON: the array's member name as the document spells it */
	split_entry *e;
	size_t n;
} split;

static void split_free(split *sp)
{
	for (size_t i = 0; i < sp->n; i++) {
		for (size_t k = 0; k < sp->e[i].nsvc; k++)
			free(sp->e[i].svc[k]);
		free(sp->e[i].svc);
	}
	free(sp->e);
	wt_buf_free(&sp->rest);
	json_decref(sp->root);
	memset(sp, 0, sizeof(*sp));
}

static int split_add(split *sp, size_t *cap, size_t off, size_t len)
{
	if (sp->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 8;
		split_entry *ne = realloc(sp->e, nc * sizeof(*ne));
		if (!ne)
			return WT_ENOMEM;
		sp->e = ne;
		*cap = nc;
	}
	sp->e[sp->n++] = (split_entry){off, len, NULL, 0};
	return 0;
}

/* OTLP/JSON: 1 when msg is a JSON object whose resource profiles array
 * ("resourceProfiles", or proto3 JSON's other spelling
 * "resource_profiles", not both) has at least two entries; 0 otherwise
 * (the decoder, which already accepted the document, then decides alone);
 * WT_ENOMEM. The document was parsed by the decoder within the edge's
 * limits already, so parsing it again is bounded the same way. */
static int split_scan_json(const uint8_t *msg, size_t n, split *sp)
{
	json_t *a, *b;
	size_t cap = 0;

	sp->root = json_loadb((const char *)msg, n, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(sp->root))
		return 0;
	a = json_object_get(sp->root, "resourceProfiles");
	b = json_object_get(sp->root, "resource_profiles");
	if ((a && b) || !json_is_array(a ? a : b) || json_array_size(a ? a : b) < 2)
		return 0;
	sp->key = a ? "resourceProfiles" : "resource_profiles";
	for (size_t i = 0; i < json_array_size(a ? a : b); i++)
		if (split_add(sp, &cap, i, 0))
			return WT_ENOMEM;
	return 1;
}

/* JSON: the document with only the entries for which keep[i] is set, into
 * out (compact). */
static void split_json_part(const split *sp, const unsigned char *keep, wt_buf *out)
{
	json_t *all = json_object_get(sp->root, sp->key), *doc = json_copy(sp->root), *arr = json_array();
	char *text = NULL;

	wt_buf_reset(out);
	for (size_t i = 0; doc && arr && i < sp->n; i++)
		if (keep[i] && json_array_append(arr, json_array_get(all, sp->e[i].off))) {
			json_decref(arr);
			arr = NULL;
		}
	if (doc && arr && !json_object_set(doc, sp->key, arr))
		text = json_dumps(doc, JSON_COMPACT);
	if (text)
		wt_buf_puts(out, text);
	else
		out->oom = 1;
	free(text);
	json_decref(arr);
	json_decref(doc);
}

/* 1 when msg parses as top-level protobuf fields (or, starting with '{',
 * as OTLP/JSON: split_scan_json) and holds at least two
 * resource_profiles entries; 0 otherwise (one entry: no split);
 * WT_ENOMEM. */
static int split_scan(const uint8_t *msg, size_t n, split *sp)
{
	size_t off = 0, cap = 0;

	memset(sp, 0, sizeof(*sp));
	while (off < n && (msg[off] == ' ' || msg[off] == '\n' || msg[off] == '\r' || msg[off] == '\t'))
		off++;
	if (off < n && msg[off] == '{') /* as common/otlp.c tells JSON apart */
		return split_scan_json(msg, n, sp);
	off = 0;
	while (off < n) {
		size_t start = off;
		uint64_t tag, v;
		if (wt_pb_varint(msg, n, &off, &tag))
			return 0;
		switch (tag & 7) {
		case 0:
			if (wt_pb_varint(msg, n, &off, &v))
				return 0;
			break;
		case 1:
			if (n - off < 8)
				return 0;
			off += 8;
			break;
		case 5:
			if (n - off < 4)
				return 0;
			off += 4;
			break;
		case 2:
			if (wt_pb_varint(msg, n, &off, &v) || v > n - off)
				return 0;
			off += (size_t)v;
			break;
		default:
			return 0;
		}
		if (tag >> 3 != 1) {
			wt_buf_append(&sp->rest, msg + start, off - start);
			continue;
		}
		if (split_add(sp, &cap, start, off - start))
			return WT_ENOMEM;
	}
	if (sp->rest.oom)
		return WT_ENOMEM;
	return sp->n >= 2;
}

/* The part of the request for service svc into out: rest + the entries
 * that yield svc. */
static void split_part(const uint8_t *msg, const split *sp, const char *svc, wt_buf *out)
{
	if (sp->root) {
		unsigned char *keep = calloc(sp->n, 1);
		for (size_t i = 0; keep && i < sp->n; i++)
			for (size_t k = 0; k < sp->e[i].nsvc; k++)
				if (!strcmp(sp->e[i].svc[k], svc))
					keep[i] = 1;
		if (keep)
			split_json_part(sp, keep, out);
		else
			out->oom = 1;
		free(keep);
		return;
	}
	wt_buf_reset(out);
	wt_buf_append(out, sp->rest.data, sp->rest.len);
	for (size_t i = 0; i < sp->n; i++)
		for (size_t k = 0; k < sp->e[i].nsvc; k++)
			if (!strcmp(sp->e[i].svc[k], svc)) {
				wt_buf_append(out, msg + sp->e[i].off, sp->e[i].len);
				break;
			}
}

/* Which services each entry yields. 0, or an error (the caller then keeps
 * the whole request for every service). */
static int split_services(const uint8_t *msg, split *sp, const wt_limits *lim, wt_err *err)
{
	wt_buf one = WT_BUF_INIT;
	unsigned char *keep = sp->root ? calloc(sp->n, 1) : NULL;
	int rc = 0;

	if (sp->root && !keep)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (size_t i = 0; i < sp->n && !rc; i++) {
		wt_otlp_result r;
		memset(&r, 0, sizeof(r));
		if (keep) {
			keep[i] = 1;
			split_json_part(sp, keep, &one);
			keep[i] = 0;
		} else {
			wt_buf_reset(&one);
			wt_buf_append(&one, sp->rest.data, sp->rest.len);
			wt_buf_append(&one, msg + sp->e[i].off, sp->e[i].len);
		}
		if (one.oom) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
			break;
		}
		if ((rc = wt_otlp_decode(one.data, one.len, lim, &r, err)))
			break;
		sp->e[i].svc = calloc(r.n ? r.n : 1, sizeof(char *));
		for (size_t k = 0; sp->e[i].svc && k < r.n; k++)
			if ((sp->e[i].svc[k] = strdup(r.items[k].service)))
				sp->e[i].nsvc++;
		if (!sp->e[i].svc || sp->e[i].nsvc != r.n)
			rc = wt_err_set(err, WT_ENOMEM, "out of memory");
		wt_otlp_result_free(&r);
	}
	free(keep);
	wt_buf_free(&one);
	return rc;
}

/* Decode part (the request cut down to service svc) and take svc's profile
 * out of it into *p. */
static int split_decode(const wt_buf *part, const char *svc, const wt_limits *lim, wt_profile **p, wt_err *err)
{
	wt_otlp_result r;
	int rc;

	memset(&r, 0, sizeof(r));
	if ((rc = wt_otlp_decode(part->data, part->len, lim, &r, err)))
		return rc;
	rc = WT_EINVAL;
	for (size_t k = 0; k < r.n; k++)
		if (!strcmp(r.items[k].service, svc)) {
			*p = r.items[k].profile;
			r.items[k].profile = NULL;
			rc = 0;
			break;
		}
	if (rc)
		wt_err_set(err, rc, "otlp: the part for service \"%.64s\" does not hold it", svc);
	wt_otlp_result_free(&r);
	return rc;
}

/* Worker: decode, build the commits, submit them. */
static void job_work(void *arg)
{
	job *j = arg;
	const edge_config *cfg = j->srv->cfg;
	wt_limits lim;
	wt_otlp_result r;
	uint8_t *raw = NULL;
	const uint8_t *msg = j->body;
	size_t n = j->len, i;
	split sp;
	wt_buf part = WT_BUF_INIT;
	wt_err serr = {0, ""};
	int rc, split_ok = 0;

	memset(&r, 0, sizeof(r));
	memset(&sp, 0, sizeof(sp));
	wt_limits_default(&lim);
	lim.max_body = cfg->max_body;
	lim.max_decompressed = cfg->max_decompressed;
	lim.max_samples = cfg->max_samples;
	lim.max_stack_depth = cfg->max_stack_depth;
	if (wt_is_gzip(j->body, j->len)) {
		if ((rc = wt_gunzip(j->body, j->len, lim.max_decompressed, &raw, &n, &j->err)))
			goto fail;
		msg = raw;
	} else if (wt_is_zstd(j->body, j->len)) {
		if ((rc = wt_zstd_decompress(j->body, j->len, lim.max_decompressed, &raw, &n, &j->err)))
			goto fail;
		msg = raw;
	}
	if ((rc = wt_otlp_decode(msg, n, &lim, &r, &j->err)))
		goto fail;
	j->nprofiles = r.nprofiles;
	if (r.n == 0) { /* nothing to store: answer at once */
		free(raw);
		event_active(j->ev, 0, 1);
		return;
	}
	j->commits = calloc(r.n, sizeof(edge_commit));
	if (!j->commits) {
		rc = wt_err_set(&j->err, WT_ENOMEM, "out of memory");
		goto fail;
	}
	j->ncommits = r.n;
	/* several services: store each with only its own resource profiles */
	if (r.n > 1) {
		rc = split_scan(msg, n, &sp);
		if (rc == WT_ENOMEM) {
			rc = wt_err_set(&j->err, rc, "out of memory");
			goto fail;
		}
		split_ok = rc == 1 && !split_services(msg, &sp, &lim, &serr);
		if (rc == 1 && !split_ok)
			wt_warn("msg=\"otlp request stored whole for each service\" error=\"%s\"", serr.msg);
	}
	for (i = 0; i < r.n; i++) {
		const uint8_t *orig = j->body;
		size_t origlen = j->len;
		wt_profile *own = NULL;
		const char *svc = r.items[i].service;
		if (!strcmp(svc, WT_OTLP_UNKNOWN_SERVICE) && *j->service)
			svc = j->service;
		if (!valid_name(svc)) {
			rc = wt_err_set(&j->err, WT_EINVAL, "otlp %s: service.name \"%.64s\" is not a valid "
					"service name (1..%d bytes, no control characters)", r.version, svc,
					MAX_NAME - 1);
			goto fail;
		}
		if (split_ok) {
			/* the profile the hub will decode from this part, so both agree */
			split_part(msg, &sp, r.items[i].service, &part);
			if (part.oom) {
				rc = wt_err_set(&j->err, WT_ENOMEM, "out of memory");
				goto fail;
			}
			if ((rc = split_decode(&part, r.items[i].service, &lim, &own, &j->err)))
				goto fail;
			orig = part.data;
			origlen = part.len;
		}
		j->samples += (own ? own : r.items[i].profile)->nsamples;
		rc = edge_ingest_prepare(j->srv, &j->commits[i], j->project, svc, j->received_ns, j->endpoint, orig,
					 origlen, own ? own : r.items[i].profile, &j->err);
		wt_profile_free(own);
		if (rc)
			goto fail;
		j->commits[i].done = commit_done;
		j->commits[i].arg = j;
	}
	wt_otlp_result_free(&r);
	split_free(&sp);
	wt_buf_free(&part);
	free(raw);
	free(j->body); /* kept in the raw records now */
	j->body = NULL;
	atomic_store(&j->pending, j->ncommits);
	for (i = 0; i < j->ncommits; i++)
		edge_buffer_submit(j->srv->store, &j->commits[i]);
	return;
fail:
	if (!j->err.code)
		wt_err_set(&j->err, rc ? rc : WT_EINVAL, "otlp upload failed");
	wt_otlp_result_free(&r);
	split_free(&sp);
	wt_buf_free(&part);
	free(raw);
	event_active(j->ev, 0, 1);
}

static job *job_new(edge_otlp *o, const char *project, const char *service, const char *endpoint)
{
	job *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->srv = o->srv;
	j->ev = event_new(o->srv->base, -1, 0, job_done_cb, j);
	if (!j->ev) {
		free(j);
		return NULL;
	}
	snprintf(j->project, sizeof(j->project), "%s", project);
	snprintf(j->service, sizeof(j->service), "%s", service ? service : "");
	j->endpoint = endpoint;
	j->received_ns = wt_now_ns(CLOCK_REALTIME);
	o->srv->pending++;
	return j;
}

static void job_start(job *j)
{
	size_t max_queued = (size_t)j->srv->cfg->workers * 64;
	if (edge_pool_submit(j->srv->pool, job_work, j, max_queued) != 0) {
		atomic_fetch_add(&j->srv->m.busy, 1);
		wt_err_set(&j->err, WT_EUNAVAIL, "the edge is busy (worker queue full); retry later");
		event_active(j->ev, 0, 1);
	}
}

/* ---- OTLP/HTTP ------------------------------------------------------------------- */
static void http_cb(struct evhttp_request *req, void *arg)
{
	edge_otlp *o = arg;
	edge_server *srv = o->srv;
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	const char *ctype = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
	const edge_project_cfg *proj;
	struct evkeyvalq q;
	wt_err err = {0};
	job *j;

	wt_http_guard_request(srv->guard, req);
	if (!path || strcmp(path, HTTP_PATH)) {
		wt_http_send_error(req, WT_ENOTFOUND, "the OTLP/HTTP listener serves only POST " HTTP_PATH);
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
		wt_http_send_error(req, WT_EINVAL, "use POST to export profiles");
		return;
	}
	if (srv->shutting_down) {
		wt_http_send_error(req, WT_EUNAVAIL, "the edge is shutting down");
		return;
	}
	if (!(proj = edge_upload_auth(srv, req)))
		return;
	/* OTLP/JSON bodies are told apart by content (common/otlp.c) */
	if (ctype && *ctype && strncasecmp(ctype, "application/x-protobuf", 22) &&
	    strncasecmp(ctype, "application/json", 16) &&
	    strncasecmp(ctype, "application/protobuf", 20) &&
	    strncasecmp(ctype, "application/octet-stream", 24)) {
		char msg[256];
		snprintf(msg, sizeof(msg), "Content-Type \"%.80s\" is not OTLP "
			 "(use application/x-protobuf or application/json)", ctype);
		edge_reject(srv, req, WT_EFORMAT, msg);
		return;
	}
	TAILQ_INIT(&q);
	if (wt_http_query(req, &q) != 0) {
		edge_reject(srv, req, WT_EINVAL, "the query string is malformed");
		return;
	}
	{
		const char *svc = wt_http_param(&q, "service");
		if (svc && *svc && !valid_name(svc)) {
			evhttp_clear_headers(&q);
			edge_reject(srv, req, WT_EINVAL, "service must be 1..255 printable bytes");
			return;
		}
		j = job_new(o, proj->name, svc, ENDPOINT_HTTP);
	}
	evhttp_clear_headers(&q);
	if (!j) {
		edge_reject(srv, req, WT_ENOMEM, "out of memory");
		return;
	}
	j->req = req;
	j->json = ctype && !strncasecmp(ctype, "application/json", 16);
	if (wt_http_body(req, srv->cfg->max_body, &j->body, &j->len, &err) != 0) {
		srv->pending--;
		job_free(j);
		edge_reject(srv, req, err.code, err.msg);
		return;
	}
	job_start(j);
}

/* ---- OTLP/gRPC (nghttp2) ----------------------------------------------------------- */
static void conn_free(gconn *c);

static void stream_free(gstream *s)
{
	gconn *c = s->c;
	if (s->job)
		s->job->gs = NULL;
	if (s->prev)
		s->prev->next = s->next;
	else
		c->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	wt_buf_free(&s->body);
	wt_budget_give(&c->o->srv->inflight, s->reserved);
	free(s);
}

static void conn_flush(gconn *c)
{
	if (nghttp2_session_send(c->sess) != 0) {
		conn_free(c);
		return;
	}
	if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess) &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_free(c);
}

static void pct_encode(const char *in, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (; *in && o + 4 < cap; in++) {
		unsigned char ch = (unsigned char)*in;
		if (ch < 0x20 || ch > 0x7e || ch == '%') {
			out[o++] = '%';
			out[o++] = hex[ch >> 4];
			out[o++] = hex[ch & 15];
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o] = 0;
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

/* Trailers-only response carrying an error status. */
static void grpc_error(gstream *s, int status, const char *msg)
{
	char st[8], enc[700];
	snprintf(st, sizeof(st), "%d", status);
	pct_encode(msg, enc, sizeof(enc));
	nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc"),
			    NV("grpc-status", st), NV("grpc-message", enc)};
	nghttp2_submit_response(s->c->sess, s->id, nva, sizeof(nva) / sizeof(nva[0]), NULL);
}

static int grpc_status_of(int code)
{
	switch (code) {
	case WT_EINVAL: return G_INVALID_ARGUMENT;
	case WT_EFORMAT: return G_INVALID_ARGUMENT;
	case WT_ELIMIT: return G_RESOURCE_EXHAUSTED;
	case WT_EAUTH: return G_UNAUTHENTICATED;
	case WT_EUNAVAIL: return G_UNAVAILABLE;
	case WT_EIO: return G_UNAVAILABLE;
	default: return G_INTERNAL;
	}
}

/* The 5-byte frame of an empty ExportProfilesServiceResponse, then trailers. */
static ssize_t resp_read(nghttp2_session *sess, int32_t id, uint8_t *buf, size_t len,
			 uint32_t *flags, nghttp2_data_source *src, void *ud)
{
	gstream *s = src->ptr;
	static const uint8_t frame[5] = {0, 0, 0, 0, 0};
	size_t n = sizeof(frame) - s->resp_off;

	if (n > len)
		n = len;
	memcpy(buf, frame + s->resp_off, n);
	s->resp_off += n;
	if (s->resp_off == sizeof(frame)) {
		nghttp2_nv tr[] = {NV("grpc-status", "0")};
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		nghttp2_submit_trailer(sess, id, tr, 1);
	}
	return (ssize_t)n;
}

static void grpc_reply(job *j)
{
	gstream *s = j->gs;
	gconn *c = s->c;

	s->job = NULL;
	j->gs = NULL;
	if (j->err.code) {
		grpc_error(s, grpc_status_of(j->err.code), j->err.msg);
	} else {
		nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", "application/grpc")};
		nghttp2_data_provider prd;
		prd.source.ptr = s;
		prd.read_callback = resp_read;
		nghttp2_submit_response(c->sess, s->id, nva, 2, &prd);
	}
	conn_flush(c);
}

/* Answer s with an error now and drop whatever body it still sends; the
 * stream is reset once the answer is out (on_frame_sent). */
static void stream_refuse(gstream *s, int status, const char *msg)
{
	grpc_error(s, status, msg);
	s->refused = 1;
	wt_buf_free(&s->body);
	wt_budget_give(&s->c->o->srv->inflight, s->reserved);
	s->reserved = 0;
}

/* The request's HEADERS are complete: method, token and content type are
 * checked before any body byte is kept. */
static void stream_headers(gstream *s)
{
	edge_server *srv = s->c->o->srv;
	const edge_project_cfg *proj;

	if (strcmp(s->path, GRPC_PATH)) {
		stream_refuse(s, G_UNIMPLEMENTED, "unknown method; this port serves "
			      "opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export");
		return;
	}
	if (srv->shutting_down) {
		stream_refuse(s, G_UNAVAILABLE, "the edge is shutting down");
		return;
	}
	if (strncasecmp(s->auth, "Bearer ", 7) ||
	    !(proj = edge_config_auth(srv->cfg, s->auth + 7, EDGE_ROLE_UPLOAD))) {
		atomic_fetch_add(&srv->m.rejects[-WT_EAUTH], 1);
		stream_refuse(s, G_UNAUTHENTICATED, *s->auth ? "the token is not an upload token of any "
			      "project on this edge" : "missing authorization: Bearer <upload token> metadata");
		return;
	}
	if (strncasecmp(s->ctype, "application/grpc", 16)) {
		stream_refuse(s, G_INVALID_ARGUMENT, "content-type must be application/grpc");
		return;
	}
	snprintf(s->project, sizeof(s->project), "%s", proj->name);
}

/* The body is complete: hand it to a job. */
static void grpc_request(gstream *s)
{
	edge_otlp *o = s->c->o;
	edge_server *srv = o->srv;
	uint8_t *b = s->body.data;
	size_t n = s->body.len;
	uint8_t *msg = NULL;
	size_t mlen = 0;
	uint32_t flen;
	job *j;
	wt_err err = {0};

	if (s->over) {
		atomic_fetch_add(&srv->m.rejects[-WT_ELIMIT], 1);
		stream_refuse(s, G_RESOURCE_EXHAUSTED, "the request exceeds the body limit (limits.max_body_mb)");
		return;
	}
	if (n < 5 || (flen = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4],
		      (size_t)flen != n - 5)) {
		stream_refuse(s, G_INVALID_ARGUMENT, "expected exactly one length-prefixed message");
		return;
	}
	if (b[0] & 1) {
		if (strcasecmp(s->enc, "gzip")) {
			stream_refuse(s, G_UNIMPLEMENTED, "compressed message: only grpc-encoding gzip is supported");
			return;
		}
		if (wt_gunzip(b + 5, flen, srv->cfg->max_decompressed, &msg, &mlen, &err)) {
			stream_refuse(s, grpc_status_of(err.code), err.msg);
			return;
		}
		wt_buf_free(&s->body);
	} else {
		/* the message moves to the job without a copy */
		memmove(b, b + 5, flen);
		msg = wt_buf_steal(&s->body, &mlen);
		mlen = flen;
	}
	j = job_new(o, s->project, s->service, ENDPOINT_GRPC);
	if (!j) {
		free(msg);
		stream_refuse(s, G_INTERNAL, "out of memory");
		return;
	}
	j->body = msg;
	j->len = mlen;
	j->reserved = s->reserved; /* the reservation follows the bytes */
	s->reserved = 0;
	j->gs = s;
	s->job = j;
	job_start(j);
}

static ssize_t on_send(nghttp2_session *sess, const uint8_t *data, size_t len, int flags, void *ud)
{
	gconn *c = ud;
	if (bufferevent_write(c->bev, data, len) != 0)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	return (ssize_t)len;
}

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	gconn *c = ud;
	gstream *s;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	s->c = c;
	s->id = f->hd.stream_id;
	s->started_ns = wt_now_ns(CLOCK_MONOTONIC);
	s->next = c->streams;
	if (c->streams)
		c->streams->prev = s;
	c->streams = s;
	nghttp2_session_set_stream_user_data(sess, s->id, s);
	return 0;
}

static void copy_hdr(char *dst, size_t cap, const uint8_t *v, size_t vl)
{
	if (vl >= cap)
		vl = cap - 1;
	memcpy(dst, v, vl);
	dst[vl] = 0;
}

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *name, size_t nl,
		     const uint8_t *value, size_t vl, uint8_t flags, void *ud)
{
	gstream *s;

	if (f->hd.type != NGHTTP2_HEADERS ||
	    !(s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id)))
		return 0;
#define IS(lit) (nl == sizeof(lit) - 1 && !memcmp(name, lit, nl))
	if (IS(":path"))
		copy_hdr(s->path, sizeof(s->path), value, vl);
	else if (IS("authorization"))
		copy_hdr(s->auth, sizeof(s->auth), value, vl);
	else if (IS("grpc-encoding"))
		copy_hdr(s->enc, sizeof(s->enc), value, vl);
	else if (IS("content-type"))
		copy_hdr(s->ctype, sizeof(s->ctype), value, vl);
	else if (IS("service") && vl < MAX_NAME)
		copy_hdr(s->service, sizeof(s->service), value, vl);
#undef IS
	return 0;
}

static int on_data(nghttp2_session *sess, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *ud)
{
	gconn *c = ud;
	edge_server *srv = c->o->srv;
	gstream *s = nghttp2_session_get_stream_user_data(sess, id);

	if (!s || s->over || s->refused || s->job)
		return 0;
	if (s->body.len + len > srv->cfg->max_body + 5) {
		s->over = 1;
		wt_buf_free(&s->body);
		wt_budget_give(&srv->inflight, s->reserved);
		s->reserved = 0;
		return 0;
	}
	if (wt_budget_take(&srv->inflight, len) != 0) {
		char msg[200];
		atomic_fetch_add(&srv->m.busy, 1);
		snprintf(msg, sizeof(msg), "the edge holds its limit of request bytes in flight "
			 "(limits.max_inflight_mb = %zu); retry later", srv->cfg->max_inflight >> 20);
		stream_refuse(s, G_RESOURCE_EXHAUSTED, msg);
		return 0;
	}
	s->reserved += len;
	wt_buf_append(&s->body, data, len);
	if (s->body.oom) {
		s->over = 1;
		wt_buf_free(&s->body);
		wt_budget_give(&srv->inflight, s->reserved);
		s->reserved = 0;
	}
	return 0;
}

static int on_frame(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	gstream *s;

	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id)))
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
		stream_headers(s);
	if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) && !s->job && !s->refused)
		grpc_request(s);
	return 0;
}

/* A refused stream's answer is out: ask the client to stop sending its body
 * (RST_STREAM NO_ERROR, RFC 9113 §8.1). */
static int on_frame_sent(nghttp2_session *sess, const nghttp2_frame *f, void *ud)
{
	gstream *s;

	if (f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
	    (s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id)) && s->refused &&
	    !nghttp2_session_get_stream_remote_close(sess, f->hd.stream_id))
		nghttp2_submit_rst_stream(sess, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
	return 0;
}

static int on_close(nghttp2_session *sess, int32_t id, uint32_t code, void *ud)
{
	gstream *s = nghttp2_session_get_stream_user_data(sess, id);
	if (s) {
		nghttp2_session_set_stream_user_data(sess, id, NULL);
		stream_free(s);
	}
	return 0;
}

static void conn_free(gconn *c)
{
	edge_otlp *o = c->o;
	while (c->streams)
		stream_free(c->streams);
	if (c->prev)
		c->prev->next = c->next;
	else
		o->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	nghttp2_session_del(c->sess);
	bufferevent_free(c->bev);
	o->srv->nconns--;
	free(c);
}

static void conn_read(struct bufferevent *bev, void *arg)
{
	gconn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	unsigned char *data = evbuffer_pullup(in, -1);
	ssize_t r = nghttp2_session_mem_recv(c->sess, data, len);

	if (r < 0) {
		conn_free(c);
		return;
	}
	evbuffer_drain(in, (size_t)r);
	conn_flush(c);
}

static void conn_write(struct bufferevent *bev, void *arg)
{
	gconn *c = arg;
	if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess))
		conn_free(c);
}

static void conn_event(struct bufferevent *bev, short events, void *arg)
{
	if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		conn_free(arg);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
		      void *arg)
{
	edge_otlp *o = arg;
	edge_server *srv = o->srv;
	gconn *c;
	nghttp2_session_callbacks *cb = NULL;
	nghttp2_settings_entry iv[] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)srv->cfg->max_streams},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, GRPC_WINDOW},
	};
	/* an idle connection (no byte either way) is closed after this */
	struct timeval tmo = {srv->cfg->stream_timeout_s * 5, 0};

	if (srv->nconns >= srv->cfg->max_connections || srv->shutting_down) {
		atomic_fetch_add(&srv->m.conns_refused, 1);
		evutil_closesocket(fd);
		return;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		evutil_closesocket(fd);
		return;
	}
	c->o = o;
	c->bev = bufferevent_socket_new(o->srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev || nghttp2_session_callbacks_new(&cb) != 0) {
		if (c->bev)
			bufferevent_free(c->bev);
		else
			evutil_closesocket(fd);
		free(c);
		return;
	}
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_sent);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	if (nghttp2_session_server_new(&c->sess, cb, c) != 0) {
		nghttp2_session_callbacks_del(cb);
		bufferevent_free(c->bev);
		free(c);
		return;
	}
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0]));
	nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 16 * (int32_t)GRPC_WINDOW);
	c->next = o->conns;
	if (o->conns)
		o->conns->prev = c;
	o->conns = c;
	srv->nconns++;
	bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
	bufferevent_set_timeouts(c->bev, &tmo, NULL);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	conn_flush(c);
}

/* Once a second: answer streams whose body is not complete within
 * edge.stream_timeout_s (slow or never-ended uploads hold budget). */
static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	edge_otlp *o = arg;
	int64_t limit = o->srv->cfg->stream_timeout_s * (int64_t)1000000000, now = wt_now_ns(CLOCK_MONOTONIC);
	gconn *c = o->conns, *next;

	for (; c; c = next) {
		int hit = 0;
		next = c->next;
		for (gstream *s = c->streams; s; s = s->next) {
			if (s->job || s->refused || now - s->started_ns < limit)
				continue;
			char msg[160];
			snprintf(msg, sizeof(msg), "the request did not end within edge.stream_timeout_s = %d s",
				 o->srv->cfg->stream_timeout_s);
			stream_refuse(s, G_DEADLINE_EXCEEDED, msg);
			hit = 1;
		}
		if (hit)
			conn_flush(c); /* may free c */
	}
}

/* ---- lifecycle ------------------------------------------------------------------ */
int edge_otlp_init(edge_server *srv, wt_err *err)
{
	const edge_config *cfg = srv->cfg;
	edge_otlp *o;
	wt_listen_addr la;

	srv->otlp = NULL;
	if (!*cfg->otlp_http_listen && !*cfg->otlp_grpc_listen)
		return 0;
	o = calloc(1, sizeof(*o));
	if (!o)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	o->srv = srv;
	srv->otlp = o;
	if (*cfg->otlp_http_listen) {
		if (wt_listen_parse(cfg->otlp_http_listen, "edge.otlp_http_listen", 0, &la, err))
			return err->code;
		o->http = evhttp_new(srv->base);
		if (!o->http)
			return wt_err_set(err, WT_EIO, "libevent: cannot create the OTLP/HTTP server");
		evhttp_set_max_body_size(o->http, (ev_ssize_t)cfg->max_body);
		evhttp_set_timeout(o->http, HTTP_TIMEOUT_S);
		evhttp_set_allowed_methods(o->http, EVHTTP_REQ_POST | EVHTTP_REQ_GET);
		evhttp_set_gencb(o->http, http_cb, o);
		wt_http_guard_attach(srv->guard, o->http); /* server.c: token on the head, budget */
		o->http_sock = evhttp_bind_socket_with_handle(o->http, la.host, la.port);
		if (!o->http_sock) {
			if (cfg->otlp_http_set)
				return wt_err_set(err, WT_EIO, "cannot listen on %s (edge.otlp_http_listen)",
						  cfg->otlp_http_listen);
			wt_warn("OTLP/HTTP: cannot listen on default %s; OTLP/HTTP is off "
				"(set edge.otlp_http_listen)", cfg->otlp_http_listen);
		} else {
			wt_info("otlp http listening addr=%s path=%s", cfg->otlp_http_listen, HTTP_PATH);
		}
	}
	if (*cfg->otlp_grpc_listen) {
		struct sockaddr_storage ss;
		socklen_t sl;
		if (wt_listen_parse(cfg->otlp_grpc_listen, "edge.otlp_grpc_listen", 0, &la, err) ||
		    wt_listen_sockaddr(&la, &ss, &sl, err))
			return err->code;
		o->lis = evconnlistener_new_bind(srv->base, accept_cb, o,
						 LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 128,
						 (struct sockaddr *)&ss, sl);
		if (!o->lis) {
			if (cfg->otlp_grpc_set)
				return wt_err_set(err, WT_EIO, "cannot listen on %s (edge.otlp_grpc_listen)",
						  cfg->otlp_grpc_listen);
			wt_warn("OTLP/gRPC: cannot listen on default %s; OTLP/gRPC is off "
				"(set edge.otlp_grpc_listen)", cfg->otlp_grpc_listen);
		} else {
			struct timeval sec = {1, 0};
			wt_info("otlp grpc listening addr=%s max_streams=%d stream_timeout_s=%d",
				cfg->otlp_grpc_listen, cfg->max_streams, cfg->stream_timeout_s);
			o->sweep = event_new(srv->base, -1, EV_PERSIST, sweep_cb, o);
			if (!o->sweep || event_add(o->sweep, &sec) != 0)
				return wt_err_set(err, WT_ENOMEM, "cannot start the OTLP/gRPC stream timer");
		}
	}
	return 0;
}

void edge_otlp_stop_accepting(edge_server *srv)
{
	edge_otlp *o = srv->otlp;
	if (!o)
		return;
	if (o->http_sock) {
		evhttp_del_accept_socket(o->http, o->http_sock);
		o->http_sock = NULL;
	}
	if (o->lis)
		evconnlistener_disable(o->lis);
}

void edge_otlp_free(edge_server *srv)
{
	edge_otlp *o = srv->otlp;
	if (!o)
		return;
	while (o->conns)
		conn_free(o->conns);
	if (o->sweep)
		event_free(o->sweep);
	if (o->lis)
		evconnlistener_free(o->lis);
	if (o->http)
		evhttp_free(o->http);
	free(o);
	srv->otlp = NULL;
}
