/*
 * http_guard.c — the per-connection bufferevent filter of http_guard.h.
 *
 * Each connection's input passes a small state machine that knows where
 * HTTP/1.1 requests begin and end: HEAD (held back until the empty line,
 * then decided on), BODY (Content-Length bytes passed through), the chunked
 * states (size line, data, CRLF, trailers), DISCARD (after a refusal:
 * everything read and dropped). Bytes pass to evhttp unchanged; the guard
 * only decides when they pass.
 *
 * libevent 2.1's filter does not pass output added while its EV_WRITE is
 * disabled on once EV_WRITE is enabled, and evhttp adds a reply before it
 * enables writing; a reply sent from outside the read callback (the edge
 * answers uploads after the group commit) would never leave. So every
 * addition to a connection's output schedules a flush on the next loop
 * turn (kick_cb).
 *
 * The filter also reports a reply written only once its bytes are in the
 * kernel (guard_out): evhttp frees a "Connection: close" connection, and
 * shuts the socket down, as soon as its filter says so, which would drop
 * whatever still waited in the socket bufferevent's output.
 */
#include "http_guard.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "log.h"

#define MAX_HEAD (64u << 10) /* as evhttp_set_max_headers_size of the edge */
#define MAX_LINE 4096        /* a chunk-size or trailer line */

enum { S_HEAD, S_BODY, S_CSIZE, S_CDATA, S_CEND, S_TRAILER, S_DISCARD };

typedef struct gconn gconn;
struct gconn {
	wt_http_guard *g;
	struct bufferevent *bev; /* the filter: what evhttp reads from */
	struct event *kick;      /* pushes a reply added while writing was off */
	struct event *wev;       /* the socket is writable again (guard_out) */
	int state;
	int over;                /* past max_connections: refuse the first request */
	uint64_t left;           /* bytes of the body / chunk still to pass */
	uint64_t reserved;       /* budget held for this connection's bodies */
	gconn *next, *prev;
};

struct wt_http_guard {
	wt_http_guard_cfg cfg;
	gconn *conns;
};

wt_http_guard *wt_http_guard_new(const wt_http_guard_cfg *cfg)
{
	wt_http_guard *g = calloc(1, sizeof(*g));
	if (g)
		g->cfg = *cfg;
	return g;
}

void wt_http_guard_free(wt_http_guard *g)
{
	if (!g)
		return;
	/* connections still open belong to an evhttp that was not freed first */
	for (gconn *c = g->conns; c; c = c->next)
		c->g = NULL;
	free(g);
}

static void give_back(gconn *c)
{
	if (c->g && c->g->cfg.budget)
		wt_budget_give(c->g->cfg.budget, c->reserved);
	c->reserved = 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

/* Answer the connection's current request ourselves and drop the rest. */
static void refuse(gconn *c, int code, int status, const char *detail)
{
	struct bufferevent *under = bufferevent_get_underlying(c->bev);
	json_t *o = json_pack("{s:s, s:s}", "error", wt_err_name(code), "detail", detail);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
	char head[400];
	int hl;

	json_decref(o);
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		      "Connection: close\r\n%s%s\r\n",
		      status, reason(status), body ? strlen(body) : 0,
		      code == WT_EAUTH ? "WWW-Authenticate: Bearer\r\n" : "",
		      status == 503 ? "Retry-After: 1\r\n" : "");
	if (under) {
		bufferevent_write(under, head, (size_t)hl);
		if (body)
			bufferevent_write(under, body, strlen(body));
	}
	free(body);
	c->state = S_DISCARD;
}

static void copy_val(char *dst, size_t cap, const char *v, size_t n)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r'))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, v, n);
	dst[n] = 0;
}

int wt_http_guard_parse_head(const char *p, size_t n, uint64_t max_body, wt_http_head *h)
{
	const char *end = p + n, *line = p, *nl;
	int first = 1, seen_te = 0;

	memset(h, 0, sizeof(*h));
	h->content_length = -1;
	for (; line < end && (nl = memchr(line, '\n', (size_t)(end - line))); line = nl + 1) {
		size_t ll = (size_t)(nl - line);
		if (ll && line[ll - 1] == '\r')
			ll--;
		if (first) {
			const char *sp1 = memchr(line, ' ', ll), *sp2, *q;
			if (!ll)
				continue; /* evhttp skips nothing either, but a stray CRLF is harmless */
			if (!sp1 || (size_t)(sp1 - line) >= sizeof(h->method))
				return WT_EINVAL;
			memcpy(h->method, line, (size_t)(sp1 - line));
			sp2 = memchr(sp1 + 1, ' ', (size_t)(line + ll - sp1 - 1));
			if (!sp2)
				return WT_EINVAL;
			q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
			copy_val(h->path, sizeof(h->path), sp1 + 1, (size_t)((q ? q : sp2) - sp1 - 1));
			first = 0;
			continue;
		}
		if (!ll)
			break;
		/* evhttp would join a folded line to the previous header; framing
		 * must be read the same way by both, so refuse what could differ */
		if (line[0] == ' ' || line[0] == '\t')
			return WT_EINVAL;
		const char *colon = memchr(line, ':', ll);
		size_t nlen;
		if (!colon)
			return WT_EINVAL;
		nlen = (size_t)(colon - line);
		const char *v = colon + 1;
		size_t vl = ll - nlen - 1;
		if (nlen == 13 && !strncasecmp(line, "authorization", 13)) {
			copy_val(h->authorization, sizeof(h->authorization), v, vl);
		} else if (nlen == 14 && !strncasecmp(line, "content-length", 14)) {
			char num[32];
			char *e;
			copy_val(num, sizeof(num), v, vl);
			long long cl = strtoll(num, &e, 10);
			if (!*num || *e || cl < 0 || h->content_length >= 0)
				return WT_EINVAL; /* also a second Content-Length */
			h->content_length = cl;
		} else if (nlen == 17 && !strncasecmp(line, "transfer-encoding", 17)) {
			char te[64];
			if (seen_te++)
				return WT_EINVAL;
			copy_val(te, sizeof(te), v, vl);
			h->chunked = !strcasecmp(te, "chunked");
		}
	}
	if (first)
		return WT_EINVAL;
	h->body_max = h->chunked ? max_body : h->content_length > 0 ? (uint64_t)h->content_length : 0;
	return 0;
}

/* Length of the head at the start of src (through the empty line): >0,
 * 0 = incomplete, -1 = longer than MAX_HEAD. */
static ssize_t head_len(struct evbuffer *src)
{
	size_t len = evbuffer_get_length(src), n = len < MAX_HEAD ? len : MAX_HEAD;
	const char *p = (const char *)evbuffer_pullup(src, (ev_ssize_t)n);

	for (size_t i = 0; p && i + 1 < n; i++) {
		if (p[i] != '\n')
			continue;
		if (p[i + 1] == '\n')
			return (ssize_t)(i + 2);
		if (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')
			return (ssize_t)(i + 3);
	}
	return len >= MAX_HEAD ? -1 : 0;
}

static void admit(gconn *c, struct evbuffer *src, size_t hl)
{
	wt_http_guard *g = c->g;
	char *p = malloc(hl);
	wt_http_head h;
	wt_err err = {0, ""};
	int rc;

	if (!p) {
		refuse(c, WT_ENOMEM, 503, "out of memory reading the request head");
		return;
	}
	evbuffer_copyout(src, p, hl);
	rc = wt_http_guard_parse_head(p, hl, g->cfg.max_body, &h);
	free(p);
	if (rc) {
		refuse(c, WT_EINVAL, 400, "malformed request head");
		return;
	}
	if (c->over) {
		char msg[200];
		snprintf(msg, sizeof(msg), "too many open connections (%s = %d); retry later",
			 g->cfg.max_connections_key ? g->cfg.max_connections_key : "max_connections",
			 g->cfg.max_connections);
		refuse(c, WT_EUNAVAIL, 503, msg);
		return;
	}
	if (g->cfg.decide && (rc = g->cfg.decide(g->cfg.arg, &h, &err)) != 0) {
		refuse(c, rc, wt_err_http_status(rc), err.msg);
		return;
	}
	if (g->cfg.budget && h.body_max) {
		if (wt_budget_take(g->cfg.budget, h.body_max) != 0) {
			char msg[200];
			snprintf(msg, sizeof(msg), "the server holds its limit of request bytes in flight "
				 "(%s); retry later", g->cfg.budget_key ? g->cfg.budget_key : "in-flight budget");
			refuse(c, WT_EUNAVAIL, 503, msg);
			return;
		}
		c->reserved += h.body_max;
	}
	if (h.chunked) {
		c->state = S_CSIZE;
	} else if (h.content_length > 0) {
		c->state = S_BODY;
		c->left = (uint64_t)h.content_length;
	} else {
		c->state = S_HEAD;
	}
}

/* Move up to c->left bytes; returns the bytes moved. */
static size_t pass(gconn *c, struct evbuffer *src, struct evbuffer *dst)
{
	size_t n = evbuffer_get_length(src);
	if (n > c->left)
		n = (size_t)c->left;
	if (n)
		evbuffer_remove_buffer(src, dst, n);
	c->left -= n;
	return n;
}

/* Length of the line at the start of src including '\n': >0, 0 = incomplete,
 * -1 = too long. */
static ssize_t line_len(struct evbuffer *src)
{
	struct evbuffer_ptr e = evbuffer_search(src, "\n", 1, NULL);
	if (e.pos < 0)
		return evbuffer_get_length(src) > MAX_LINE ? -1 : 0;
	return e.pos + 1 > MAX_LINE ? -1 : (ssize_t)e.pos + 1;
}

static enum bufferevent_filter_result guard_in(struct evbuffer *src, struct evbuffer *dst,
					       ev_ssize_t lim, enum bufferevent_flush_mode mode, void *arg)
{
	gconn *c = arg;
	size_t moved = 0;

	if (!c->g) /* the guard is gone (shutdown): pass everything */
		return evbuffer_remove_buffer(src, dst, evbuffer_get_length(src)) > 0 ? BEV_OK : BEV_NEED_MORE;
	while (evbuffer_get_length(src)) {
		if (c->state == S_DISCARD) {
			evbuffer_drain(src, evbuffer_get_length(src));
			break;
		}
		if (c->state == S_HEAD) {
			ssize_t hl = head_len(src);
			if (hl == 0)
				break;
			if (hl < 0) {
				refuse(c, WT_ELIMIT, 431, "the request head exceeds 64 KiB");
				continue;
			}
			admit(c, src, (size_t)hl);
			if (c->state != S_DISCARD) {
				evbuffer_remove_buffer(src, dst, (size_t)hl);
				moved += (size_t)hl;
			}
			continue;
		}
		if (c->state == S_BODY || c->state == S_CDATA) {
			moved += pass(c, src, dst);
			if (c->left)
				break;
			c->state = c->state == S_BODY ? S_HEAD : S_CEND;
			continue;
		}
		/* line states: chunk size, CRLF after a chunk, trailers */
		ssize_t ll = line_len(src);
		if (ll == 0)
			break;
		if (ll < 0)
			return BEV_ERROR; /* evhttp already has the head: just close */
		char line[MAX_LINE + 1];
		evbuffer_copyout(src, line, (size_t)ll);
		line[ll] = 0;
		evbuffer_remove_buffer(src, dst, (size_t)ll);
		moved += (size_t)ll;
		if (c->state == S_CSIZE) {
			char *e;
			unsigned long long sz = strtoull(line, &e, 16);
			if (e == line)
				return BEV_ERROR;
			c->state = sz ? S_CDATA : S_TRAILER;
			c->left = sz;
		} else if (c->state == S_CEND) {
			c->state = S_CSIZE;
		} else if (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n')) {
			c->state = S_HEAD; /* end of trailers */
		}
	}
	return moved ? BEV_OK : BEV_NEED_MORE;
}

static void wev_cb(evutil_socket_t fd, short what, void *arg)
{
	gconn *c = arg;
	bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
}

/* Output goes straight to the socket; what the socket does not take stays
 * in the filter's output and is retried when the socket is writable
 * (c->wev), so evhttp's write callback runs only once every byte is in the
 * kernel. */
static enum bufferevent_filter_result guard_out(struct evbuffer *src, struct evbuffer *dst,
						ev_ssize_t lim, enum bufferevent_flush_mode mode, void *arg)
{
	gconn *c = arg;
	struct bufferevent *under = bufferevent_get_underlying(c->bev);
	evutil_socket_t fd = under ? bufferevent_getfd(under) : -1;
	size_t len = evbuffer_get_length(src), moved = 0;

	if (!len)
		return BEV_NEED_MORE;
	if (fd < 0) /* not connected (cannot happen for a server connection) */
		return evbuffer_remove_buffer(src, dst, len) > 0 ? BEV_OK : BEV_NEED_MORE;
	if (evbuffer_get_length(dst))
		return BEV_NEED_MORE; /* a refusal still draining; be_filter_writecb calls again */
	while (len) {
		size_t n = len > 65536 ? 65536 : len;
		const uint8_t *p = evbuffer_pullup(src, (ev_ssize_t)n);
		ssize_t w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->wev)
				c->wev = event_new(bufferevent_get_base(c->bev), fd, EV_WRITE, wev_cb, c);
			if (!c->wev || event_add(c->wev, NULL) != 0)
				return BEV_ERROR;
			break;
		}
		if (w <= 0)
			return BEV_ERROR;
		evbuffer_drain(src, (size_t)w);
		moved += (size_t)w;
		len -= (size_t)w;
	}
	return moved ? BEV_OK : BEV_NEED_MORE;
}

static void gconn_free(void *arg)
{
	gconn *c = arg;
	wt_http_guard *g = c->g;

	if (c->kick)
		event_free(c->kick);
	if (c->wev)
		event_free(c->wev);
	give_back(c);
	if (g) {
		if (c->prev)
			c->prev->next = c->next;
		else
			g->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		atomic_fetch_sub(g->cfg.nconns, 1);
	}
	free(c);
}

static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
	gconn *c = arg;
	bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
}

static void out_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	gconn *c = arg;
	if (info->n_added && c->kick)
		event_active(c->kick, EV_TIMEOUT, 1);
}

static struct bufferevent *bev_cb(struct event_base *base, void *arg)
{
	wt_http_guard *g = arg;
	struct bufferevent *under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	struct bufferevent *f;
	gconn *c = calloc(1, sizeof(*c));

	if (!under || !c) {
		if (under)
			bufferevent_free(under);
		free(c);
		return NULL; /* evhttp then makes a plain one: this connection is unguarded */
	}
	f = bufferevent_filter_new(under, guard_in, guard_out, BEV_OPT_CLOSE_ON_FREE, gconn_free, c);
	if (!f) {
		bufferevent_free(under);
		free(c);
		return NULL;
	}
	c->bev = f;
	c->kick = event_new(base, -1, 0, kick_cb, c);
	if (!c->kick || !evbuffer_add_cb(bufferevent_get_output(f), out_added, c)) {
		bufferevent_free(f); /* frees c (gconn_free) and under */
		return NULL;
	}
	c->g = g; /* from here on gconn_free unlinks and counts */
	c->over = atomic_fetch_add(g->cfg.nconns, 1) >= g->cfg.max_connections && g->cfg.max_connections > 0;
	c->next = g->conns;
	if (g->conns)
		g->conns->prev = c;
	g->conns = c;
	return f;
}

void wt_http_guard_attach(wt_http_guard *g, struct evhttp *http)
{
	evhttp_set_bevcb(http, bev_cb, g);
}

static void request_done(struct evhttp_request *req, void *arg)
{
	give_back(arg);
}

void wt_http_guard_request(wt_http_guard *g, struct evhttp_request *req)
{
	struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

	if (!g || !bev)
		return;
	for (gconn *c = g->conns; c; c = c->next) {
		if (c->bev == bev) {
			if (c->reserved)
				evhttp_request_set_on_complete_cb(req, request_done, c);
			return;
		}
	}
}
