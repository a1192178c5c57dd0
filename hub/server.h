/*
 * server.h — the hub's HTTP front: N worker threads, each with its own
 * event_base + evhttp + ClickHouse client, all accepting on one listening
 * socket (evhttp_accept_socket_with_handle). A request is handled start to
 * finish on the worker that accepted it, so a slow ClickHouse call blocks
 * only that worker's connections; the kernel spreads new connections over
 * the idle workers. (Measured in bench/hub_query.sh; see docs/operations.md.)
 */
#ifndef HUB_SERVER_H
#define HUB_SERVER_H

#include "hub.h"

typedef struct hub_server hub_server;

/* Bind ctx->cfg.listen and start the workers. Errors name the address. */
int hub_server_start(hub_ctx *ctx, hub_server **out, wt_err *err);
/* Stop accepting, let the workers finish, join them, free. */
void hub_server_stop(hub_server *s);

/* Give freed heap back to the kernel after a large request or batch: now
 * (malloc_trim), and once more HUB_TRIM_AGAIN_S later from
 * hub_memory_trim_tick(), which the ClickHouse monitor thread calls every
 * health interval (work that ends after the request, a replication
 * batch's day buffers or ClickHouse inserts, frees memory later). */
void hub_memory_trim(void);
void hub_memory_trim_tick(void);

#endif
