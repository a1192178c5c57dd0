/*
 * otlp_recv.h — the edge's OpenTelemetry profiles receivers:
 *   OTLP/HTTP  POST /v1development/profiles (protobuf; JSON → 415) on
 *              edge.otlp_http_listen (default 127.0.0.1:4318), evhttp;
 *   OTLP/gRPC  /opentelemetry.proto.collector.profiles.v1development.
 *              ProfilesService/Export on edge.otlp_grpc_listen (default
 *              127.0.0.1:4317), HTTP/2 cleartext with prior knowledge,
 *              nghttp2 on libevent bufferevents.
 * Both authenticate the Bearer upload token (`authorization` header /
 * metadata), decode with wt_otlp_decode(), store one upload per service
 * through edge_ingest_prepare() (the /v1/profiles path) and answer only
 * after every commit is durable.
 *
 * Threads: everything here runs on the server's event loop, except the
 * decode/build step (a pool worker) and commit completion (the store's
 * committer), which hands back through an event.
 */
#ifndef EDGE_OTLP_RECV_H
#define EDGE_OTLP_RECV_H

#include "err.h"

struct edge_server;
typedef struct edge_otlp edge_otlp;

/* Open the configured listeners on srv->base; srv->otlp receives the state
 * (NULL when both are off). A default address that cannot be bound only
 * logs a warning; an address given in the config file is fatal. */
int edge_otlp_init(struct edge_server *srv, wt_err *err);
/* Stop accepting (shutdown); in-flight requests still finish. */
void edge_otlp_stop_accepting(struct edge_server *srv);
void edge_otlp_free(struct edge_server *srv);

#endif
