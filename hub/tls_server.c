/*
 * tls_server.c — mutual-TLS HTTP/1.1 listener in worker threads (see
 * tls_server.h for the why and the contract).
 *
 * Layout: every worker owns a complete mbedtls setup (DRBG, CA chain,
 * certificate, key, ssl_config) parsed from PEM text the server keeps in
 * memory. Private per-worker state matters: mbedtls caches ECP
 * precomputation inside the key's group on first use, which is not safe to
 * share between threads. Workers block in poll() on the shared
 * non-blocking listen socket and on an eventfd that hub_tls_server_stop
 * makes readable; every socket wait also watches that eventfd, so stop
 * interrupts handshakes and idle keep-alive connections promptly.
 */
#include "tls_server.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "clock.h"
#include "log.h"

#define LISTEN_BACKLOG 128
#define READ_CHUNK (16u << 10)
#define KEEP_BUF_MAX (1u << 20) /* shrink the input buffer after big bodies */
#define ADDR_MAX 64

static const char PERS[] = "watchtower-tls-server";

/* PEM text of the current certificate material, swapped by reload. */
typedef struct material_pem {
	char *ca, *cert, *key;
} material_pem;

/* One worker's parsed material. */
typedef struct material {
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca, cert;
	mbedtls_pk_context key;
} material;

typedef struct worker {
	struct hub_tls_server *srv;
	pthread_t thread;
	int started, inited;
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	material *mat;
	unsigned gen;
} worker;

struct hub_tls_server {
	char *ca_file, *cert_file, *key_file;
	int listen_fd, stop_fd;
	uint16_t port;
	int nworkers;
	worker *workers;
	int handshake_ms, io_ms, idle_ms;
	size_t max_body;
	hub_tls_handler handler;
	void *ctx;

	pthread_mutex_t pem_lock; /* guards pem and gen */
	material_pem pem;
	unsigned gen;

	atomic_uint_fast64_t n_conn, n_hs_ok, n_hs_fail, n_req;
};

/* A connection: the socket plus the deadline its current wait must meet. */
typedef struct conn {
	int fd, stop_fd;
	int64_t deadline_ms; /* CLOCK_MONOTONIC */
	char addr[ADDR_MAX];
} conn;

/* ---- material -------------------------------------------------------------- */

static void pem_free(material_pem *p)
{
	free(p->ca);
	free(p->cert);
	if (p->key) {
		mbedtls_platform_zeroize(p->key, strlen(p->key));
		free(p->key);
	}
	memset(p, 0, sizeof(*p));
}

static void material_free(material *m)
{
	if (!m)
		return;
	mbedtls_ssl_config_free(&m->conf);
	mbedtls_x509_crt_free(&m->ca);
	mbedtls_x509_crt_free(&m->cert);
	mbedtls_pk_free(&m->key);
	free(m);
}

/* Parse PEM into a ready ssl_config. drbg may be NULL (validation only). */
static int material_new(const material_pem *p, mbedtls_ctr_drbg_context *drbg, material **out,
			wt_err *err)
{
	material *m = calloc(1, sizeof(*m));
	int ret, rc = 0;

	*out = NULL;
	if (!m)
		return wt_err_set(err, WT_ENOMEM, "tls: out of memory");
	mbedtls_ssl_config_init(&m->conf);
	mbedtls_x509_crt_init(&m->ca);
	mbedtls_x509_crt_init(&m->cert);
	mbedtls_pk_init(&m->key);
	ret = mbedtls_x509_crt_parse(&m->ca, (const unsigned char *)p->ca, strlen(p->ca) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "tls: CA bundle");
		goto out;
	}
	ret = mbedtls_x509_crt_parse(&m->cert, (const unsigned char *)p->cert, strlen(p->cert) + 1);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "tls: server certificate");
		goto out;
	}
	ret = mbedtls_pk_parse_key(&m->key, (const unsigned char *)p->key, strlen(p->key) + 1, NULL, 0);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "tls: server key");
		goto out;
	}
	if (mbedtls_pk_check_pair(&m->cert.pk, &m->key)) {
		rc = wt_err_set(err, WT_EINVAL, "tls: server key does not match the server certificate");
		goto out;
	}
	ret = mbedtls_ssl_config_defaults(&m->conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
					  MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EIO, ret, "tls: config defaults");
		goto out;
	}
	/* mbedtls servers default to not asking for a certificate: require a
	 * client certificate that chains to the site CA. */
	mbedtls_ssl_conf_authmode(&m->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(&m->conf, &m->ca, NULL);
	mbedtls_ssl_conf_min_version(&m->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
	mbedtls_ssl_conf_renegotiation(&m->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	ret = mbedtls_ssl_conf_own_cert(&m->conf, &m->cert, &m->key);
	if (ret) {
		rc = wt_pki_mbed_err(err, WT_EINVAL, ret, "tls: server certificate");
		goto out;
	}
	if (drbg)
		mbedtls_ssl_conf_rng(&m->conf, mbedtls_ctr_drbg_random, drbg);
	*out = m;
	m = NULL;
out:
	material_free(m);
	return rc;
}

/* Read the three files into *p and check they parse and match. */
static int pem_load(const hub_tls_server *s, material_pem *p, wt_err *err)
{
	material *m = NULL;
	int rc;

	memset(p, 0, sizeof(*p));
	if ((rc = wt_pki_read_file(s->ca_file, &p->ca, err)) ||
	    (rc = wt_pki_read_file(s->cert_file, &p->cert, err)) ||
	    (rc = wt_pki_read_file(s->key_file, &p->key, err)))
		goto out;
	rc = material_new(p, NULL, &m, err);
out:
	material_free(m);
	if (rc)
		pem_free(p);
	return rc;
}

/* Before a connection: switch to new material if a reload happened. */
static void worker_refresh(worker *w)
{
	hub_tls_server *s = w->srv;
	material *m = NULL;
	wt_err err = {0};
	unsigned gen;
	int rc;

	pthread_mutex_lock(&s->pem_lock);
	gen = s->gen;
	rc = gen == w->gen ? 1 : material_new(&s->pem, &w->drbg, &m, &err);
	pthread_mutex_unlock(&s->pem_lock);
	if (rc == 1)
		return;
	if (rc) { /* validated by reload, so only memory can fail here */
		wt_error("msg=\"tls: reload failed in worker; keeping old certificates\" err=\"%s\"",
			 err.msg);
		return;
	}
	material_free(w->mat);
	w->mat = m;
	w->gen = gen;
}

/* ---- socket I/O with deadlines --------------------------------------------- */

/* Wait until fd is ready for events, the deadline passes (MBEDTLS_ERR_SSL_TIMEOUT)
 * or stop is signalled (MBEDTLS_ERR_NET_CONN_RESET). */
static int wait_fd(conn *c, short events)
{
	for (;;) {
		struct pollfd pfd[2] = {{c->fd, events, 0}, {c->stop_fd, POLLIN, 0}};
		int64_t left = c->deadline_ms - wt_now_ms(CLOCK_MONOTONIC);
		int n;

		if (left <= 0)
			return MBEDTLS_ERR_SSL_TIMEOUT;
		n = poll(pfd, 2, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return MBEDTLS_ERR_NET_POLL_FAILED;
		if (pfd[1].revents)
			return MBEDTLS_ERR_NET_CONN_RESET;
		if (pfd[0].revents)
			return 0;
	}
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	conn *c = ctx;

	for (;;) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		int ret;

		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET
								     : MBEDTLS_ERR_NET_SEND_FAILED;
		if ((ret = wait_fd(c, POLLOUT)))
			return ret;
	}
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	conn *c = ctx;

	for (;;) {
		ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);
		int ret;

		if (n >= 0)
			return (int)n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
		if ((ret = wait_fd(c, POLLIN)))
			return ret;
	}
}

static int ssl_write_all(mbedtls_ssl_context *ssl, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len) {
		int n = mbedtls_ssl_write(ssl, p, len);
		if (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE)
			continue;
		if (n <= 0)
			return n ? n : MBEDTLS_ERR_NET_SEND_FAILED;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- HTTP ------------------------------------------------------------------ */

static const char *reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Payload Too Large";
	case 415: return "Unsupported Media Type";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* {"error":"<name>","detail":"<detail>"} — the error shape of docs/api.md. */
static void json_error(wt_buf *b, int code, const char *detail)
{
	json_t *o = json_pack("{s:s, s:s}", "error", wt_err_name(code), "detail", detail);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s)
		wt_buf_puts(b, s);
	else
		wt_buf_puts(b, "{\"error\":\"out_of_memory\",\"detail\":\"encoding the reply failed\"}");
	wt_buf_putc(b, '\n');
	free(s);
	json_decref(o);
}

static int send_response(mbedtls_ssl_context *ssl, hub_tls_response *r, int keep_alive)
{
	wt_buf h = WT_BUF_INIT;
	int ret;

	wt_buf_printf(&h, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: %s\r\n",
		      r->status, reason(r->status), r->content_type, r->body.len,
		      keep_alive ? "keep-alive" : "close");
	if (r->headers.len)
		wt_buf_append(&h, r->headers.data, r->headers.len);
	wt_buf_puts(&h, "\r\n");
	/* Small bodies go in the same TLS record as the head. */
	if (r->body.len && r->body.len <= READ_CHUNK)
		wt_buf_append(&h, r->body.data, r->body.len);
	if (h.oom) {
		wt_buf_free(&h);
		return MBEDTLS_ERR_SSL_ALLOC_FAILED;
	}
	ret = ssl_write_all(ssl, h.data, h.len);
	if (!ret && r->body.len > READ_CHUNK)
		ret = ssl_write_all(ssl, r->body.data, r->body.len);
	wt_buf_free(&h);
	return ret;
}

/* Answer an HTTP-level error generated by the server itself; the
 * connection is closed afterwards. */
static void send_error(mbedtls_ssl_context *ssl, int status, int code, const char *detail)
{
	hub_tls_response r = {status, "application/json", WT_BUF_INIT, WT_BUF_INIT, 1};

	json_error(&r.body, code, detail);
	send_response(ssl, &r, 0);
	wt_buf_free(&r.body);
}

const char *hub_tls_request_header(const hub_tls_request *req, const char *name)
{
	return hub_http1_find_header(req->headers, req->nheaders, name);
}

typedef hub_http1_head head;

/* The input buffer moved (grown for the body): move the head's pointers. */
static void rebase_head(head *h, uintptr_t from, uint8_t *to)
{
	/* integer arithmetic: from is no longer a valid pointer */
#define REBASE(p) ((p) = (char *)to + ((uintptr_t)(p) - from))
	REBASE(h->method);
	REBASE(h->path);
	REBASE(h->query);
	for (size_t i = 0; i < h->nhdr; i++) {
		REBASE(h->hdr[i].name);
		REBASE(h->hdr[i].value);
	}
#undef REBASE
}

static const char *find_crlfcrlf(const uint8_t *p, size_t len)
{
	return memmem(p, len, "\r\n\r\n", 4);
}

/* Read more bytes into in (at least one). 0, or an mbedtls error /
 * MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY on a clean end. */
static int read_more(mbedtls_ssl_context *ssl, wt_buf *in)
{
	int n;

	if (wt_buf_reserve(in, READ_CHUNK + 1))
		return MBEDTLS_ERR_SSL_ALLOC_FAILED;
	do
		n = mbedtls_ssl_read(ssl, in->data + in->len, READ_CHUNK);
	while (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE);
	if (n == 0)
		return MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY;
	if (n < 0)
		return n;
	in->len += (size_t)n;
	return 0;
}

/* Serve requests on an established connection until close, error or stop. */
static void serve_http(worker *w, mbedtls_ssl_context *ssl, conn *c, const char *peer_id,
		       const char *const *dns, size_t ndns)
{
	hub_tls_server *s = w->srv;
	wt_buf in = WT_BUF_INIT;
	head *h = malloc(sizeof(*h));

	if (!h)
		return;
	for (;;) {
		const char *hend, *why = NULL;
		size_t hlen, total;
		hub_tls_request req;
		hub_tls_response resp = {200, "application/octet-stream", WT_BUF_INIT, WT_BUF_INIT, 0};
		uint8_t saved;
		int st, rc, ret;

		/* the head */
		c->deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + (in.len ? s->io_ms : s->idle_ms);
		while (!(hend = find_crlfcrlf(in.data ? in.data : (const uint8_t *)"", in.len))) {
			if (in.len >= HUB_HTTP1_MAX_HEADER_BYTES) {
				send_error(ssl, 431, WT_ELIMIT, "request head larger than 16 KiB");
				goto out;
			}
			if ((ret = read_more(ssl, &in)))
				goto out; /* peer closed, idle timeout, stop or error */
			c->deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + s->io_ms;
		}
		hlen = (size_t)(hend - (const char *)in.data) + 4;
		if (hlen > HUB_HTTP1_MAX_HEADER_BYTES) {
			send_error(ssl, 431, WT_ELIMIT, "request head larger than 16 KiB");
			goto out;
		}
		st = hub_http1_parse_head((char *)in.data, hlen, s->max_body, h, &why);
		if (st) {
			send_error(ssl, st, st == 413 ? WT_ELIMIT : WT_EINVAL, why);
			goto out;
		}
		/* the body */
		total = hlen + h->content_length;
		if (h->expect_continue && in.len < total) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
			if (ssl_write_all(ssl, cont, sizeof(cont) - 1))
				goto out;
		}
		{
			uintptr_t before = (uintptr_t)in.data;
			if (wt_buf_reserve(&in, total + 1 > in.len ? total + 1 - in.len : 0)) {
				send_error(ssl, 500, WT_ENOMEM, "out of memory for the request body");
				goto out;
			}
			if ((uintptr_t)in.data != before)
				rebase_head(h, before, in.data);
		}
		while (in.len < total) {
			int n;
			c->deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + s->io_ms;
			do
				n = mbedtls_ssl_read(ssl, in.data + in.len, total - in.len);
			while (n == MBEDTLS_ERR_SSL_WANT_READ || n == MBEDTLS_ERR_SSL_WANT_WRITE);
			if (n <= 0)
				goto out;
			in.len += (size_t)n;
		}
		/* The byte after the body may be the next pipelined request's
		 * first: keep it while the body is NUL-terminated. */
		saved = in.len > total ? in.data[total] : 0;
		in.data[total] = 0;
		memset(&req, 0, sizeof(req));
		req.method = h->method;
		req.path = h->path;
		req.query = h->query;
		req.headers = h->hdr;
		req.nheaders = h->nhdr;
		req.body = in.data + hlen;
		req.body_len = h->content_length;
		req.peer_id = peer_id;
		req.peer_dns = dns;
		req.npeer_dns = ndns;
		req.remote_addr = c->addr;
		atomic_fetch_add(&s->n_req, 1);
		rc = s->handler(s->ctx, &req, &resp);
		if (rc < 0) {
			if (resp.status == 200)
				resp.status = wt_err_http_status(rc);
			if (!resp.body.len) {
				snprintf(resp.content_type, sizeof(resp.content_type), "application/json");
				json_error(&resp.body, rc, "request failed");
			}
		}
		if (resp.status < 100 || resp.status > 599)
			resp.status = 500;
		if (resp.body.oom || resp.headers.oom) {
			wt_buf_reset(&resp.body);
			wt_buf_reset(&resp.headers);
			resp.body.oom = resp.headers.oom = 0;
			resp.status = 500;
			snprintf(resp.content_type, sizeof(resp.content_type), "application/json");
			json_error(&resp.body, WT_ENOMEM, "out of memory building the response");
		}
		if (resp.close)
			h->keep_alive = 0;
		c->deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + s->io_ms;
		ret = send_response(ssl, &resp, h->keep_alive);
		wt_buf_free(&resp.body);
		wt_buf_free(&resp.headers);
		if (ret || !h->keep_alive)
			goto out;
		/* drop the request, keep what follows */
		if (in.len > total)
			in.data[total] = saved;
		memmove(in.data, in.data + total, in.len - total);
		in.len -= total;
		if (in.cap > KEEP_BUF_MAX && in.len < READ_CHUNK) {
			wt_buf fresh = WT_BUF_INIT;
			if (in.len)
				wt_buf_append(&fresh, in.data, in.len);
			if (fresh.oom)
				goto out;
			wt_buf_free(&in);
			in = fresh;
		}
	}
out:
	free(h);
	wt_buf_free(&in);
}

/* ---- connections ------------------------------------------------------------- */

static void serve_conn(worker *w, int fd, const char *addr)
{
	hub_tls_server *s = w->srv;
	mbedtls_ssl_context ssl;
	conn c = {fd, s->stop_fd, 0, {0}};
	const mbedtls_x509_crt *peer;
	char id[WT_PKI_ID_MAX + 1];
	char (*names)[WT_PKI_NAME_MAX + 1] = NULL;
	const char *dns[WT_PKI_MAX_NAMES];
	size_t ndns = 0;
	int ret;

	snprintf(c.addr, sizeof(c.addr), "%s", addr);
	mbedtls_ssl_init(&ssl);
	ret = mbedtls_ssl_setup(&ssl, &w->mat->conf);
	if (ret) {
		wt_error("msg=\"tls: ssl_setup failed\" code=-0x%04x", (unsigned)-ret);
		goto out;
	}
	mbedtls_ssl_set_bio(&ssl, &c, bio_send, bio_recv, NULL);
	c.deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + s->handshake_ms;
	do
		ret = mbedtls_ssl_handshake(&ssl);
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	if (ret) {
		char msg[160], info[256] = "";
		uint32_t flags = mbedtls_ssl_get_verify_result(&ssl);

		atomic_fetch_add(&s->n_hs_fail, 1);
		mbedtls_strerror(ret, msg, sizeof(msg));
		if (flags && flags != (uint32_t)-1) {
			mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
			for (char *p = info; *p; p++)
				if (*p == '\n')
					*p = p[1] ? ';' : 0;
		}
		wt_warn("msg=\"tls: handshake rejected\" peer=%s err=\"%s\" verify=\"%s\"", c.addr, msg,
			info);
		goto out;
	}
	/* Belt and braces: with VERIFY_REQUIRED the handshake already failed
	 * for any of these, but never serve a peer that is not verified. */
	peer = mbedtls_ssl_get_peer_cert(&ssl);
	if (!peer || mbedtls_ssl_get_verify_result(&ssl) != 0) {
		atomic_fetch_add(&s->n_hs_fail, 1);
		wt_error("msg=\"tls: unverified client after handshake\" peer=%s", c.addr);
		goto out;
	}
	if (wt_pki_crt_id(peer, id, sizeof(id))) {
		atomic_fetch_add(&s->n_hs_fail, 1);
		wt_warn("msg=\"tls: client certificate names no valid edge id\" peer=%s", c.addr);
		mbedtls_ssl_send_alert_message(&ssl, MBEDTLS_SSL_ALERT_LEVEL_FATAL,
					       MBEDTLS_SSL_ALERT_MSG_ACCESS_DENIED);
		goto out;
	}
	atomic_fetch_add(&s->n_hs_ok, 1);
	names = malloc(sizeof(*names) * WT_PKI_MAX_NAMES);
	if (names) {
		ndns = wt_pki_crt_dns_names(peer, names, WT_PKI_MAX_NAMES);
		for (size_t i = 0; i < ndns; i++)
			dns[i] = names[i];
	}
	wt_debug("msg=\"tls: client connected\" peer=%s id=%s", c.addr, id);
	serve_http(w, &ssl, &c, id, dns, ndns);
	c.deadline_ms = wt_now_ms(CLOCK_MONOTONIC) + 1000;
	mbedtls_ssl_close_notify(&ssl);
out:
	free(names);
	mbedtls_ssl_free(&ssl);
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	hub_tls_server *s = w->srv;

	for (;;) {
		struct pollfd pfd[2] = {{s->listen_fd, POLLIN, 0}, {s->stop_fd, POLLIN, 0}};
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		char host[ADDR_MAX - 8], serv[8], addr[ADDR_MAX];
		int fd, one = 1;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			wt_error("msg=\"tls: poll failed\" err=\"%s\"", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS) {
				wt_error("msg=\"tls: accept failed\" err=\"%s\"", strerror(errno));
				poll(pfd + 1, 1, 100); /* back off, still stoppable */
			}
			continue; /* EAGAIN: another worker took it */
		}
		atomic_fetch_add(&s->n_conn, 1);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), serv, sizeof(serv),
				NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(addr, sizeof(addr), "?");
		else
			snprintf(addr, sizeof(addr), "%s:%s", host, serv);
		worker_refresh(w);
		serve_conn(w, fd, addr);
		close(fd);
	}
	return NULL;
}

/* ---- lifecycle -------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int bind_listen(hub_tls_server *s, const char *host, uint16_t port, wt_err *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char portstr[8];
	int rc, fd = -1, one = 1, zero = 0, last = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc)
		return wt_err_set(err, WT_EINVAL, "tls: listen address %s: %s", host, gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			last = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6) /* "::" serves IPv4 too */
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, LISTEN_BACKLOG) == 0)
			break;
		last = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return wt_err_set(err, WT_EIO, "tls: cannot listen on %s:%u: %s", host, (unsigned)port,
				  strerror(last));
	{
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		getsockname(fd, (struct sockaddr *)&sa, &len);
		s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
							 : ((struct sockaddr_in *)&sa)->sin_port);
	}
	s->listen_fd = fd;
	return 0;
}

int hub_tls_server_start(const hub_tls_server_config *cfg, hub_tls_server **out, wt_err *err)
{
	hub_tls_server *s;
	int rc;

	*out = NULL;
	if (!cfg || !cfg->ca_file || !cfg->cert_file || !cfg->key_file || !cfg->handler)
		return wt_err_set(err, WT_EINVAL, "tls: ca_file, cert_file, key_file and handler are required");
	if (cfg->workers < 0 || cfg->workers > HUB_TLS_MAX_WORKERS)
		return wt_err_set(err, WT_EINVAL, "tls: workers must be 1..%d", HUB_TLS_MAX_WORKERS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return wt_err_set(err, WT_ENOMEM, "tls: out of memory");
	s->listen_fd = s->stop_fd = -1;
	pthread_mutex_init(&s->pem_lock, NULL);
	s->ca_file = dup_or_null(cfg->ca_file);
	s->cert_file = dup_or_null(cfg->cert_file);
	s->key_file = dup_or_null(cfg->key_file);
	s->nworkers = cfg->workers ? cfg->workers : HUB_TLS_WORKERS;
	s->handshake_ms = cfg->handshake_timeout_ms > 0 ? cfg->handshake_timeout_ms : HUB_TLS_HANDSHAKE_TIMEOUT_MS;
	s->io_ms = cfg->io_timeout_ms > 0 ? cfg->io_timeout_ms : HUB_TLS_IO_TIMEOUT_MS;
	s->idle_ms = cfg->idle_timeout_ms > 0 ? cfg->idle_timeout_ms : HUB_TLS_IDLE_TIMEOUT_MS;
	s->max_body = cfg->max_body ? cfg->max_body : HUB_TLS_MAX_BODY;
	s->handler = cfg->handler;
	s->ctx = cfg->ctx;
	s->gen = 1;
	s->workers = calloc((size_t)s->nworkers, sizeof(*s->workers));
	if (!s->ca_file || !s->cert_file || !s->key_file || !s->workers) {
		rc = wt_err_set(err, WT_ENOMEM, "tls: out of memory");
		goto fail;
	}
	if ((rc = pem_load(s, &s->pem, err)))
		goto fail;
	s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->stop_fd < 0) {
		rc = wt_err_set(err, WT_EIO, "tls: eventfd: %s", strerror(errno));
		goto fail;
	}
	if ((rc = bind_listen(s, cfg->host ? cfg->host : "::", cfg->port, err)))
		goto fail;
	for (int i = 0; i < s->nworkers; i++) {
		worker *w = &s->workers[i];
		int ret;

		w->srv = s;
		mbedtls_entropy_init(&w->entropy);
		mbedtls_ctr_drbg_init(&w->drbg);
		w->inited = 1;
		ret = mbedtls_ctr_drbg_seed(&w->drbg, mbedtls_entropy_func, &w->entropy,
					    (const unsigned char *)PERS, sizeof(PERS) - 1);
		if (ret) {
			rc = wt_pki_mbed_err(err, WT_EIO, ret, "tls: seeding the random generator");
			goto fail;
		}
		if ((rc = material_new(&s->pem, &w->drbg, &w->mat, err)))
			goto fail;
		w->gen = s->gen;
	}
	for (int i = 0; i < s->nworkers; i++) {
		if (pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i])) {
			rc = wt_err_set(err, WT_EIO, "tls: cannot start worker thread %d", i);
			goto fail;
		}
		s->workers[i].started = 1;
	}
	*out = s;
	return 0;
fail:
	hub_tls_server_stop(s);
	return rc;
}

uint16_t hub_tls_server_port(const hub_tls_server *s)
{
	return s->port;
}

int hub_tls_server_reload(hub_tls_server *s, wt_err *err)
{
	material_pem p;
	int rc = pem_load(s, &p, err);

	if (rc)
		return rc;
	pthread_mutex_lock(&s->pem_lock);
	pem_free(&s->pem);
	s->pem = p;
	s->gen++;
	pthread_mutex_unlock(&s->pem_lock);
	return 0;
}

void hub_tls_server_get_stats(hub_tls_server *s, hub_tls_server_stats *o)
{
	o->connections = atomic_load(&s->n_conn);
	o->handshakes_ok = atomic_load(&s->n_hs_ok);
	o->handshakes_failed = atomic_load(&s->n_hs_fail);
	o->requests = atomic_load(&s->n_req);
}

void hub_tls_server_stop(hub_tls_server *s)
{
	if (!s)
		return;
	if (s->stop_fd >= 0) {
		uint64_t one = 1;
		if (write(s->stop_fd, &one, sizeof(one)) < 0)
			wt_error("msg=\"tls: cannot signal stop\" err=\"%s\"", strerror(errno));
	}
	for (int i = 0; s->workers && i < s->nworkers; i++) {
		worker *w = &s->workers[i];
		if (w->started)
			pthread_join(w->thread, NULL);
		material_free(w->mat);
		if (w->inited) {
			mbedtls_ctr_drbg_free(&w->drbg);
			mbedtls_entropy_free(&w->entropy);
		}
	}
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pem_free(&s->pem);
	pthread_mutex_destroy(&s->pem_lock);
	free(s->workers);
	free(s->ca_file);
	free(s->cert_file);
	free(s->key_file);
	free(s);
}
