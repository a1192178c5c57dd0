/*
 * main.c — wt-hub entry point: `wt-hub --config hub.cfg [--check-config]`.
 * Loads the config, starts the ClickHouse monitor (which migrates the
 * schema whenever ClickHouse is reachable), opens the object store, starts
 * the HTTP workers, and waits for SIGTERM/SIGINT to shut down in reverse
 * order. ClickHouse being down at start is not fatal: /healthz says so and
 * the hub becomes ready when ClickHouse answers.
 */
#include <malloc.h>
#include <curl/curl.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge_config.h"
#include "hub.h"
#include "log.h"
#include "recording_rules.h"
#include "regress.h"
#include "repl.h"
#include "server.h"
#include "signals.h"
#include "worker.h"

#define STACK_CACHE_ENTRIES (1u << 20)

static void usage(void)
{
	fprintf(stderr, "usage: wt-hub --config hub.cfg [--check-config]\n"
			"  --check-config    validate the file, print a summary and exit\n");
}

int main(int argc, char **argv)
{
	const char *cfg_path = NULL;
	hub_ctx ctx;
	hub_server *srv = NULL;
	struct hub_repl_server *repl = NULL;
	hub_worker *wk = NULL;

	/* Allocations of 256 KiB or more are mapped and unmapped with their
	 * buffers (a fixed threshold: glibc otherwise raises it to the size
	 * of the largest freed block, up to 32 MiB, and a large upload's
	 * buffers then stay in the arenas after it; docs/operations.md
	 * "Memory after large uploads"). */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	wt_err err = {0, ""};
	static const int handled[] = {SIGTERM, SIGINT, SIGHUP};
	wt_signals sigs = {-1};
	int i, sig = 0, rc = 1, check = 0;

	for (i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "-c")) && i + 1 < argc)
			cfg_path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			cfg_path = argv[i] + 9;
		else if (!strcmp(argv[i], "--check-config"))
			check = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		} else {
			usage();
			return 2;
		}
	}
	if (!cfg_path) {
		usage();
		return 2;
	}
	wt_log_init("hub");
	memset(&ctx, 0, sizeof(ctx));
	if (hub_config_load(cfg_path, &ctx.cfg, &err)) {
		if (check) {
			fprintf(stderr, "%s: %s\n", cfg_path, err.msg);
			return 1;
		}
		wt_error("msg=\"bad configuration\" error=\"%s\"", err.msg);
		return 1;
	}
	if (check) {
		/* what the file says, without touching ClickHouse or the disk */
		printf("ok: listen=%s data_dir=%s clickhouse=%s database=%s cluster=%s object_store=%s\n",
		       ctx.cfg.listen, ctx.cfg.data_dir, ctx.cfg.ch_url, ctx.cfg.ch_database,
		       ctx.cfg.ch_cluster && *ctx.cfg.ch_cluster ? ctx.cfg.ch_cluster : "(none)", ctx.cfg.os_backend);
		hub_config_free(&ctx.cfg);
		return 0;
	}
	hub_rules_set_max_series(ctx.cfg.rules_max_series);
	/* Signals: blocked in every thread, read by this one (common/signals.h). */
	if (wt_signals_open(&sigs, handled, sizeof(handled) / sizeof(handled[0]), &err)) {
		wt_error("msg=\"%s\"", err.msg);
		goto out_cfg;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || evthread_use_pthreads()) {
		wt_error("msg=\"library initialisation failed\"");
		goto out_cfg;
	}
	ctx.chconf.url = ctx.cfg.ch_url;
	ctx.chconf.database = ctx.cfg.ch_database;
	ctx.chconf.user = ctx.cfg.ch_user;
	ctx.chconf.password = ctx.cfg.ch_password;
	ctx.chconf.cluster = ctx.cfg.ch_cluster;
	ctx.chconf.timeout_ms = ctx.cfg.ch_timeout_ms;
	ctx.chconf.connect_timeout_ms = ctx.cfg.ch_connect_timeout_ms;
	ctx.chconf.retries = ctx.cfg.ch_retries;
	ctx.chconf.backoff_ms = ctx.cfg.ch_backoff_ms;
	ctx.chconf.max_result_bytes = ctx.cfg.max_result_bytes;

	if (hub_objstore_open(&ctx.cfg, &ctx.os, &err)) {
		wt_error("msg=\"object store unusable\" backend=%s error=\"%s\"", ctx.cfg.os_backend, err.msg);
		goto out_curl;
	}
	{
		hub_symbols_conf sc = {ctx.cfg.sym_cache_dir, ctx.cfg.sym_max_file_bytes, ctx.cfg.sym_debuginfod_urls,
				       ctx.cfg.sym_debuginfod_timeout_ms, ctx.cfg.sym_index_ttl_ms};
		if (hub_symbols_new(&sc, ctx.os, &ctx.chconf, &ctx.syms, &err)) {
			wt_error("msg=\"cannot start the symbolizer\" error=\"%s\"", err.msg);
			goto out_os;
		}
	}
	ctx.auth = hub_auth_new(ctx.cfg.admin_token, ctx.cfg.token_cache_ttl_ms);
	ctx.stacks = hub_stackcache_new(STACK_CACHE_ENTRIES);
	ctx.frames = hub_stacklru_new(ctx.cfg.stack_cache_bytes);
	ctx.views = hub_viewcache_new(ctx.cfg.view_cache_bytes); /* NULL: off (or out of memory) */
	if (!ctx.auth || !ctx.stacks || !ctx.frames) {
		wt_error("msg=\"out of memory at start\"");
		goto out_os;
	}
	if (hub_ch_health_start(&ctx.store, &ctx.chconf, ctx.cfg.ch_database, ctx.cfg.health_interval_ms)) {
		wt_error("msg=\"cannot start the clickhouse monitor\"");
		goto out_os;
	}
	{
		hub_regress_config rcfg;
		if (hub_regress_config_load(cfg_path, &rcfg, &err) ||
		    hub_regress_start(&ctx, &rcfg, &ctx.regress, &err)) {
			wt_error("msg=\"cannot start the regression detector\" error=\"%s\"", err.msg);
			goto out_store;
		}
	}
	if (hub_server_start(&ctx, &srv, &err)) {
		wt_error("msg=\"cannot start the HTTP server\" error=\"%s\"", err.msg);
		goto out_store;
	}
	if (hub_repl_server_start(&ctx, &repl, &err)) {
		wt_error("msg=\"cannot start the replication listener\" listen=%s error=\"%s\"",
			 ctx.cfg.repl_listen, err.msg);
		hub_server_stop(srv);
		goto out_store;
	}
	if (hub_worker_start(&ctx, &wk, &err))
		wt_error("msg=\"cannot start the worker (retention, archive); continuing without it\" error=\"%s\"",
			 err.msg);
	wt_info("msg=\"wt-hub started\" listen=%s replication=%s clickhouse=%s database=%s object_store=%s",
		ctx.cfg.listen, repl ? ctx.cfg.repl_listen : "off", ctx.cfg.ch_url, ctx.cfg.ch_database,
		ctx.os->name);
	for (;;) {
		sig = wt_signals_wait(&sigs, -1);
		if (sig != SIGHUP)
			break;
		/* certificate rotation: re-read the replication TLS files */
		if (hub_repl_server_reload(repl, &err))
			wt_error("msg=\"certificate reload failed; keeping the old ones\" error=\"%s\"", err.msg);
		else
			wt_info("msg=\"replication certificates reloaded\"");
	}
	wt_info("msg=\"shutting down\" signal=%d", sig);
	rc = 0;
	hub_worker_stop(wk);
	hub_edge_config_shutdown(); /* release held config long-polls */
	hub_repl_server_stop(repl);
	hub_server_stop(srv);
out_store:
	hub_regress_stop(ctx.regress); /* NULL-safe; after the HTTP workers that use it */
	hub_ch_health_stop(&ctx.store);
out_os:
	hub_symbols_free(ctx.syms);
	hub_stackcache_free(ctx.stacks);
	hub_stacklru_free(ctx.frames);
	hub_viewcache_free(ctx.views);
	hub_auth_free(ctx.auth);
	hub_objstore_close(ctx.os);
out_curl:
	curl_global_cleanup();
out_cfg:
	wt_signals_close(&sigs);
	hub_config_free(&ctx.cfg);
	return rc;
}
