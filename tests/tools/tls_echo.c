/*
 * tls_echo.c — test tool for the mutual-TLS pieces (hub/tls_server.c,
 * edge/tls_client.c, common/pki.c), driven by
 * tests/integration/test_tls.py:
 *
 *   tls_echo serve --ca F --cert F --key F [--host H] [--port P]
 *                  [--workers N] [--max-body N] [--idle-ms N]
 *       Run a hub_tls_server; print "PORT <n>" on stdout once listening.
 *       Every request gets a JSON answer naming the verified peer:
 *       {"peer_id":..,"dns":[..],"method":..,"path":..,"query":..,
 *        "body_len":N,"content_type":..,"x_wt":{...}}; POST /echo returns
 *       the body itself. SIGHUP reloads the certificate files, SIGTERM /
 *       SIGINT stop the server (hub_tls_server_stop) and exit 0.
 *   tls_echo post --ca F --cert F --key F --url URL [--resolve H:P:A]
 *                 [--n N] [--size BYTES] [--header "K: V"]... [--fresh]
 *       POST N bodies of BYTES bytes with edge_tls_client over one
 *       keep-alive connection (--fresh: a new client per request, i.e. a
 *       full handshake each). Prints the last response body on stdout and
 *       "status=S requests=N connects=C seconds=T" on stderr.
 *   tls_echo pki ...
 *       `wtctl pki ...` (cli/cmd_pki.c), for when wtctl does not dispatch
 *       it yet.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd_pki.h"
#include "log.h"
#include "edge/tls_client.h"
#include "hub/tls_server.h"

static void json_str(wt_buf *b, const char *s)
{
	wt_buf_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			wt_buf_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			wt_buf_printf(b, "\\u%04x", (unsigned char)*s);
		else
			wt_buf_putc(b, *s);
	}
	wt_buf_putc(b, '"');
}

static int handle(void *ctx, const hub_tls_request *req, hub_tls_response *resp)
{
	const char *ct = hub_tls_request_header(req, "content-type");
	int first = 1;

	(void)ctx;
	if (!strcmp(req->method, "POST") && !strcmp(req->path, "/echo")) {
		wt_buf_append(&resp->body, req->body, req->body_len);
		return 0;
	}
	if (!strcmp(req->path, "/fail"))
		return WT_EUNAVAIL;
	snprintf(resp->content_type, sizeof(resp->content_type), "application/json");
	wt_buf_puts(&resp->body, "{\"peer_id\":");
	json_str(&resp->body, req->peer_id);
	wt_buf_puts(&resp->body, ",\"dns\":[");
	for (size_t i = 0; i < req->npeer_dns; i++) {
		if (i)
			wt_buf_putc(&resp->body, ',');
		json_str(&resp->body, req->peer_dns[i]);
	}
	wt_buf_puts(&resp->body, "],\"method\":");
	json_str(&resp->body, req->method);
	wt_buf_puts(&resp->body, ",\"path\":");
	json_str(&resp->body, req->path);
	wt_buf_puts(&resp->body, ",\"query\":");
	json_str(&resp->body, req->query);
	wt_buf_printf(&resp->body, ",\"body_len\":%zu,\"content_type\":", req->body_len);
	json_str(&resp->body, ct ? ct : "");
	wt_buf_puts(&resp->body, ",\"x_wt\":{");
	for (size_t i = 0; i < req->nheaders; i++) {
		if (strncmp(req->headers[i].name, "x-wt-", 5))
			continue;
		if (!first)
			wt_buf_putc(&resp->body, ',');
		first = 0;
		json_str(&resp->body, req->headers[i].name);
		wt_buf_putc(&resp->body, ':');
		json_str(&resp->body, req->headers[i].value);
	}
	wt_buf_puts(&resp->body, "}}\n");
	return 0;
}

static const char *opt(int argc, char **argv, const char *name)
{
	for (int i = 0; i + 1 < argc; i++)
		if (!strcmp(argv[i], name))
			return argv[i + 1];
	return NULL;
}

static int serve(int argc, char **argv)
{
	hub_tls_server_config cfg = {0};
	hub_tls_server *srv;
	wt_err err = {0};
	sigset_t set;
	int sig;

	cfg.host = opt(argc, argv, "--host") ? opt(argc, argv, "--host") : "127.0.0.1";
	cfg.port = (uint16_t)atoi(opt(argc, argv, "--port") ? opt(argc, argv, "--port") : "0");
	cfg.ca_file = opt(argc, argv, "--ca");
	cfg.cert_file = opt(argc, argv, "--cert");
	cfg.key_file = opt(argc, argv, "--key");
	cfg.workers = atoi(opt(argc, argv, "--workers") ? opt(argc, argv, "--workers") : "0");
	cfg.max_body = (size_t)atoll(opt(argc, argv, "--max-body") ? opt(argc, argv, "--max-body") : "0");
	cfg.idle_timeout_ms = atoi(opt(argc, argv, "--idle-ms") ? opt(argc, argv, "--idle-ms") : "0");
	cfg.handshake_timeout_ms = atoi(opt(argc, argv, "--handshake-ms") ? opt(argc, argv, "--handshake-ms") : "0");
	cfg.handler = handle;
	/* Block the signals before the workers start so only sigwait sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (hub_tls_server_start(&cfg, &srv, &err)) {
		fprintf(stderr, "tls_echo: %s\n", err.msg);
		return 1;
	}
	printf("PORT %u\n", (unsigned)hub_tls_server_port(srv));
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGHUP) {
			if (hub_tls_server_reload(srv, &err))
				fprintf(stderr, "tls_echo: reload failed: %s\n", err.msg);
			else
				fprintf(stderr, "tls_echo: reloaded\n");
			continue;
		}
		break;
	}
	{
		hub_tls_server_stats st;
		hub_tls_server_get_stats(srv, &st);
		fprintf(stderr, "tls_echo: connections=%llu handshakes_ok=%llu handshakes_failed=%llu requests=%llu\n",
			(unsigned long long)st.connections, (unsigned long long)st.handshakes_ok,
			(unsigned long long)st.handshakes_failed, (unsigned long long)st.requests);
	}
	hub_tls_server_stop(srv);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int post(int argc, char **argv)
{
	edge_tls_client_config cfg = {0};
	edge_tls_client *c = NULL;
	const char *resolve[2] = {opt(argc, argv, "--resolve"), NULL};
	const char *url = opt(argc, argv, "--url");
	const char *headers[17];
	size_t nh = 0, size = (size_t)atoll(opt(argc, argv, "--size") ? opt(argc, argv, "--size") : "0");
	long n = atol(opt(argc, argv, "--n") ? opt(argc, argv, "--n") : "1"), status = 0, conns = 0;
	int fresh = 0, rc = 0;
	uint8_t *body;
	wt_buf resp = WT_BUF_INIT;
	wt_err err = {0};
	double t0;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--fresh"))
			fresh = 1;
		if (!strcmp(argv[i], "--header") && i + 1 < argc && nh < 16)
			headers[nh++] = argv[i + 1];
	}
	headers[nh] = NULL;
	cfg.ca_file = opt(argc, argv, "--ca");
	cfg.cert_file = opt(argc, argv, "--cert");
	cfg.key_file = opt(argc, argv, "--key");
	cfg.resolve = resolve[0] ? resolve : NULL;
	body = malloc(size ? size : 1);
	if (!url || !body) {
		fprintf(stderr, "tls_echo post: --url is required\n");
		free(body);
		return 2;
	}
	for (size_t i = 0; i < size; i++)
		body[i] = (uint8_t)('a' + i % 26);
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		if (!c && edge_tls_client_new(&cfg, &c, &err)) {
			rc = 1;
			break;
		}
		wt_buf_reset(&resp);
		if (edge_tls_client_post(c, url, headers, body, size, &status, &resp, &err)) {
			rc = 1;
			break;
		}
		if (fresh) {
			conns += edge_tls_client_connects(c);
			edge_tls_client_free(c);
			c = NULL;
		}
	}
	if (c)
		conns += edge_tls_client_connects(c);
	if (rc)
		fprintf(stderr, "tls_echo post: %s\n", err.msg);
	else
		fwrite(resp.data, 1, resp.len, stdout);
	fprintf(stderr, "status=%ld requests=%ld connects=%ld seconds=%.3f\n", status, n, conns,
		now_s() - t0);
	edge_tls_client_free(c);
	wt_buf_free(&resp);
	free(body);
	return rc;
}

int main(int argc, char **argv)
{
	wt_log_init("tls_echo");
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return serve(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "post"))
		return post(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "pki"))
		return cli_cmd_pki(argc - 2, argv + 2);
	fprintf(stderr, "usage: tls_echo serve|post|pki ... (see the header of tests/tools/tls_echo.c)\n");
	return 2;
}
