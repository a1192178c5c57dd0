/*
 * main.c — wt-edge: the site appliance daemon.
 *   wt-edge --config edge.cfg [--check-config]
 * Loads the config, opens the RocksDB buffer, serves HTTP ingest and local
 * queries until SIGTERM, then stops accepting, finishes in-flight uploads,
 * flushes and closes the DB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "config.h"
#include "config_client.h"
#include "ebpf.h"
#include "log.h"
#include "repl_client.h"
#include "server.h"
#include "signals.h"
#include "buffer.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: wt-edge --config FILE [--check-config]\n"
		   "  --config FILE     libconfig file (see appliance/edge.cfg, docs/operations.md)\n"
		   "  --check-config    validate the file, print a summary and exit\n");
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	if (!f)
		return NULL;
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if (cap > (16u << 20))
				break;
			char *nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int check = 0, rc = 1;
	edge_config cfg;
	edge_buffer *store = NULL;
	edge_repl *repl = NULL;
	edge_ebpf *ebpf = NULL;
	edge_config_client *cfgc = NULL;
	edge_server srv;
	wt_err err = {0};
	static const int handled[] = {SIGTERM, SIGINT, SIGHUP};
	wt_signals sigs = {-1};
	char *text = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
		else if (!strcmp(argv[i], "--check-config"))
			check = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (!path) {
		usage(stderr);
		return 2;
	}
	wt_log_init("edge");
	edge_config_defaults(&cfg);
	if (edge_config_load(&cfg, path, &err) != 0) {
		wt_error("config error: %s", err.msg);
		fprintf(stderr, "wt-edge: %s\n", err.msg);
		edge_config_free(&cfg);
		return 2;
	}
	if (check) {
		printf("ok: id=%s listen=%s:%d data_dir=%s projects=%zu sync=%s workers=%d hub=%s\n", cfg.id,
		       cfg.listen_host, cfg.listen_port, cfg.data_dir, cfg.nprojects, cfg.sync ? "true" : "false",
		       cfg.workers, *cfg.hub_url ? cfg.hub_url : "(none)");
		edge_config_free(&cfg);
		return 0;
	}
	/* before any thread starts: every thread inherits the blocked signals,
	 * which server.c then reads from the signalfd (common/signals.h) */
	if (wt_signals_open(&sigs, handled, sizeof(handled) / sizeof(handled[0]), &err)) {
		wt_error("%s", err.msg);
		goto out;
	}
	text = slurp(path);
	if (edge_buffer_open(&cfg, text, &store, &err) != 0) {
		wt_error("cannot open the buffer: %s", err.msg);
		goto out;
	}
	/* remote config before serving: the last good one (persisted) brings
	 * the hub's tokens and limits even while the hub is away */
	if (edge_config_client_start(&cfg, store, &cfgc, &err) != 0) {
		wt_error("cannot start the remote config client: %s", err.msg);
		goto out;
	}
	if (edge_server_init(&srv, &cfg, store, &sigs, &err) != 0) {
		wt_error("cannot start the server: %s", err.msg);
		edge_server_free(&srv);
		goto out;
	}
	if (edge_repl_start(&cfg, store, &repl, &err) != 0) {
		wt_error("cannot start replication: %s", err.msg);
		edge_server_free(&srv);
		goto out;
	}
	srv.repl = repl;
	/* the sampler thread always runs (SIGHUP can turn it on); loading
	 * failures are logged and shown in /metrics, not fatal */
	if (edge_ebpf_start(&srv, &cfg, path, &ebpf, &err) != 0)
		wt_error("cannot start the ebpf sampler: %s", err.msg);
	srv.ebpf = ebpf;
	edge_config_client_set_ebpf(cfgc, ebpf); /* policy → sampler */
	wt_info("wt-edge ready id=%s", cfg.id);
	rc = edge_server_run(&srv) == 0 ? 0 : 1;
	/* an in-flight batch is abandoned (the hub makes its retry a no-op) */
	/* the sampler's last flush commits through the store: before it closes */
	srv.ebpf = NULL;
	edge_config_client_set_ebpf(cfgc, NULL);
	edge_ebpf_stop(ebpf);
	srv.repl = NULL;
	edge_repl_stop(repl);
	edge_server_free(&srv);
	wt_info("http server stopped");
out:
	edge_config_client_stop(cfgc);
	edge_buffer_close(store);
	edge_config_free(&cfg);
	free(text);
	wt_signals_close(&sigs);
	if (rc == 0)
		wt_info("clean shutdown");
	return rc;
}
