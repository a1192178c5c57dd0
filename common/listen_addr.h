/*
 * listen_addr.h — the one parser for the daemons' listen addresses
 * (edge.listen, edge.otlp_http_listen, edge.otlp_grpc_listen, hub.listen,
 * replication.listen): "HOST:PORT", "[IPv6]:PORT" ("[::1]:4040",
 * "[::]:4040"), ":PORT" and "*:PORT" (every IPv4 address).
 */
#ifndef WT_LISTEN_ADDR_H
#define WT_LISTEN_ADDR_H

#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

typedef struct wt_listen_addr {
	char host[256];  /* without brackets; "0.0.0.0" for "", "*" */
	uint16_t port;
} wt_listen_addr;

/* Parse s into *a. The port must be 0-65535 (1-65535 when !allow_port0).
 * Returns 0 or WT_EINVAL with a message naming key (the config key) and s. */
int wt_listen_parse(const char *s, const char *key, int allow_port0, wt_listen_addr *a, wt_err *err);

/* The socket address of a parsed address: numeric IPv4/IPv6 literals and
 * "localhost" (127.0.0.1) without DNS, other names through getaddrinfo
 * (first answer). *len receives the address length. 0 or WT_EINVAL. */
int wt_listen_sockaddr(const wt_listen_addr *a, struct sockaddr_storage *ss, socklen_t *len, wt_err *err);

#endif
