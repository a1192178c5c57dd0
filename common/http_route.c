/*
 * http_route.c — path pattern matching for the route tables of
 * http_route.h. Matching is a walk over pattern and path together; no
 * regular expressions, no allocation.
 */
#include "http_route.h"

#include <stdio.h>
#include <string.h>

/* Match one row's pattern against path; captures go to m. 1 on match. */
static int match_pattern(const char *pat, const char *path, wt_route_match *m)
{
	const char *p = pat, *s = path;

	m->nparams = 0;
	m->rest = NULL;
	while (*p) {
		if (p[0] == '*' && p[1] == '\0' && p > pat && p[-1] == '/') {
			m->rest = s;
			return 1;
		}
		if (*p == '{') {
			const char *close = strchr(p, '}');
			size_t len = strcspn(s, "/");
			if (!close || len == 0 || len >= WT_ROUTE_VALUE_MAX || m->nparams == WT_ROUTE_MAX_PARAMS)
				return 0;
			m->names[m->nparams] = p + 1;
			m->name_lens[m->nparams] = (size_t)(close - p - 1);
			memcpy(m->values[m->nparams], s, len);
			m->values[m->nparams][len] = '\0';
			m->nparams++;
			p = close + 1;
			s += len;
			continue;
		}
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
	return *s == '\0';
}

int wt_route_find(const wt_route *t, size_t n, unsigned method, const char *path, wt_route_match *m)
{
	wt_route_match tmp;

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < n; i++) {
		if (!match_pattern(t[i].pattern, path, &tmp))
			continue;
		if (!(t[i].methods & method)) {
			m->allowed |= t[i].methods;
			continue;
		}
		unsigned allowed = m->allowed;
		*m = tmp;
		m->allowed = allowed | t[i].methods;
		m->route = &t[i];
		m->index = i;
		return WT_ROUTE_FOUND;
	}
	return m->allowed ? WT_ROUTE_NO_METHOD : WT_ROUTE_NO_PATH;
}

const char *wt_route_param(const wt_route_match *m, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; i < m->nparams; i++)
		if (m->name_lens[i] == len && !memcmp(m->names[i], name, len))
			return m->values[i];
	return NULL;
}

void wt_route_allow_str(unsigned methods, char *out, size_t cap)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{EVHTTP_REQ_GET, "GET"},       {EVHTTP_REQ_POST, "POST"},   {EVHTTP_REQ_PUT, "PUT"},
		{EVHTTP_REQ_DELETE, "DELETE"}, {EVHTTP_REQ_PATCH, "PATCH"}, {EVHTTP_REQ_HEAD, "HEAD"},
		{EVHTTP_REQ_OPTIONS, "OPTIONS"},
	};
	size_t off = 0;

	if (cap)
		out[0] = '\0';
	if (methods & EVHTTP_REQ_GET)
		methods &= ~(unsigned)EVHTTP_REQ_HEAD; /* HEAD comes with GET */
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(methods & names[i].bit) || off >= cap)
			continue;
		int w = snprintf(out + off, cap - off, "%s%s", off ? ", " : "", names[i].name);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}
