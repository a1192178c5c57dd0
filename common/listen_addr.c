/*
 * listen_addr.c — listen address parsing shared by the edge and hub
 * listeners (listen_addr.h). The last ':' separates the port unless the
 * host is a bracketed IPv6 literal.
 */
#include "listen_addr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wt_listen_parse(const char *s, const char *key, int allow_port0, wt_listen_addr *a, wt_err *err)
{
	const char *colon, *hs, *he;
	char *end;
	long port;

	memset(a, 0, sizeof(*a));
	if (!s)
		s = "";
	if (s[0] == '[') {
		he = strchr(s, ']');
		hs = s + 1;
		colon = he ? he + 1 : NULL;
		if (!he || *colon != ':' || he == hs)
			goto bad;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			goto bad; /* an IPv6 literal needs brackets */
		hs = s;
		he = colon;
	}
	if ((size_t)(he - hs) >= sizeof(a->host))
		goto bad;
	if (!colon[1] || colon[1] == '-' || colon[1] == '+' || colon[1] == ' ')
		goto bad;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < (allow_port0 ? 0 : 1) || port > 65535)
		goto bad;
	memcpy(a->host, hs, (size_t)(he - hs));
	a->host[he - hs] = '\0';
	if (!a->host[0] || !strcmp(a->host, "*"))
		snprintf(a->host, sizeof(a->host), "0.0.0.0");
	a->port = (uint16_t)port;
	return 0;
bad:
	return wt_err_set(err, WT_EINVAL, "%s = \"%.300s\" is not host:port (or [IPv6]:port)", key, s);
}

int wt_listen_sockaddr(const wt_listen_addr *a, struct sockaddr_storage *ss, socklen_t *len, wt_err *err)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	struct addrinfo hints, *res = NULL;
	const char *host = strcmp(a->host, "localhost") ? a->host : "127.0.0.1";
	char portstr[8];
	int rc;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(a->port);
		*len = sizeof(*v4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(a->port);
		*len = sizeof(*v6);
		return 0;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(portstr, sizeof(portstr), "%u", (unsigned)a->port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc || !res || res->ai_addrlen > sizeof(*ss)) {
		if (res)
			freeaddrinfo(res);
		return wt_err_set(err, WT_EINVAL, "listen address %s: %s", a->host,
				  rc ? gai_strerror(rc) : "no address");
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}
