/*
 * http_route.h — route tables: each daemon lists its endpoints once as
 * (methods, path pattern, auth, handler) rows and dispatches every request
 * through one wrapper (hub/server.c, edge/server.c; docs/architecture.md
 * "Request path"). This file only matches paths; the wrapper around it
 * authenticates, parses parameters, counts and replies.
 *
 * Patterns are literal segments and "{name}" captures, separated by '/':
 *   "/v1/projects/{project}/profiles/insights"
 * A capture matches one non-empty segment (no '/'), at most
 * WT_ROUTE_VALUE_MAX - 1 bytes, copied as written (not percent-decoded). A
 * pattern ending in "/ *" (without the space) matches any rest (also empty) after that prefix
 * including its '/';
 * the rest is returned in wt_route_match.rest. Rows are tried in order;
 * the first row whose path and method both match wins.
 */
#ifndef WT_HTTP_ROUTE_H
#define WT_HTTP_ROUTE_H

#include <event2/http.h>
#include <stddef.h>

#define WT_ROUTE_MAX_PARAMS 4
#define WT_ROUTE_VALUE_MAX 256

typedef struct wt_route {
	unsigned methods;      /* EVHTTP_REQ_* bits */
	const char *pattern;
	int auth;              /* the daemon's meaning (role needed); 0 = no token */
	void (*fn)(void);      /* the daemon's handler type, cast back by its wrapper */
	const char *name;      /* label for per-route metrics; NULL → pattern */
} wt_route;

typedef struct wt_route_match {
	const wt_route *route;      /* NULL when nothing matched */
	size_t index;               /* route's row in the table */
	size_t nparams;
	const char *names[WT_ROUTE_MAX_PARAMS];  /* point into the pattern (not NUL-ended at '}') */
	size_t name_lens[WT_ROUTE_MAX_PARAMS];
	char values[WT_ROUTE_MAX_PARAMS][WT_ROUTE_VALUE_MAX];
	const char *rest;           /* into path, for patterns ending in a rest wildcard */
	unsigned allowed;           /* methods of rows whose path matched */
} wt_route_match;

/* What wt_route_find found. */
enum { WT_ROUTE_FOUND = 0, WT_ROUTE_NO_PATH = 1, WT_ROUTE_NO_METHOD = 2 };

/* Match (method, path) against the n rows of t. FOUND fills m->route and
 * its captures; NO_METHOD means some row matched the path but none the
 * method (m->allowed lists theirs, for a 405 with Allow); NO_PATH: 404.
 * O(n × path length); allocates nothing. */
int wt_route_find(const wt_route *t, size_t n, unsigned method, const char *path, wt_route_match *m);

/* The capture called name, or NULL. */
const char *wt_route_param(const wt_route_match *m, const char *name);

/* "GET, POST" for an Allow header (HEAD only when GET is absent). */
void wt_route_allow_str(unsigned methods, char *out, size_t cap);

#endif
