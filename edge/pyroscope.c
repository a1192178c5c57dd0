/*
 * pyroscope.c — Pyroscope /ingest name{labels} and multipart/form-data
 * parsing (see pyroscope.h).
 */
#include "pyroscope.h"
#include "upload.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *suffix, *hint;
} pyro_types[] = {
	{"cpu", "cpu"},
	{"itimer", "cpu"},
	{"wall", "wall"},
	{"alloc_objects", "alloc"},
	{"alloc_space", "alloc"},
	{"inuse_objects", "inuse"},
	{"inuse_space", "inuse"},
	{"goroutines", "goroutine"},
	{"goroutine", "goroutine"},
	{"mutex_count", "mutex"},
	{"mutex_duration", "mutex"},
	{"block_count", "block"},
	{"block_duration", "block"},
	{"lock_count", "lock"},
	{"lock_duration", "lock"},
	{"alloc_in_new_tlab_objects", "alloc"},
	{"alloc_in_new_tlab_bytes", "alloc"},
	{"alloc_outside_tlab_objects", "alloc"},
	{"alloc_outside_tlab_bytes", "alloc"},
	{"exceptions", "exceptions"},
};

const char *edge_pyro_type_hint(const char *type)
{
	if (!type)
		return NULL;
	for (size_t i = 0; i < sizeof(pyro_types) / sizeof(pyro_types[0]); i++)
		if (!strcmp(type, pyro_types[i].suffix))
			return pyro_types[i].hint;
	return NULL;
}

static char *trim(char *s, char *e)
{
	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	*e = '\0';
	return s;
}

int edge_pyro_parse_name(const char *name, edge_pyro_name *out, wt_err *err)
{
	size_t n = name ? strlen(name) : 0;
	memset(out, 0, sizeof(*out));
	if (n == 0)
		return wt_err_set(err, WT_EINVAL, "pyroscope: name is empty (expected app.cpu{k=v,...})");
	if (n >= sizeof(out->buf))
		return wt_err_set(err, WT_ELIMIT, "pyroscope: name is %zu bytes, more than %zu", n, sizeof(out->buf) - 1);
	memcpy(out->buf, name, n + 1);
	char *brace = strchr(out->buf, '{');
	char *app_end = brace ? brace : out->buf + n;
	if (brace) {
		char *close = strrchr(brace, '}');
		if (!close)
			return wt_err_set(err, WT_EINVAL, "pyroscope: name: '{' at byte %zu has no closing '}'",
					  (size_t)(brace - out->buf));
		for (char *t = close + 1; *t; t++)
			if (!isspace((unsigned char)*t))
				return wt_err_set(err, WT_EINVAL, "pyroscope: name: text after '}' at byte %zu",
						  (size_t)(t - out->buf));
		char *p = brace + 1;
		while (p < close) {
			char *comma = memchr(p, ',', (size_t)(close - p));
			char *end = comma ? comma : close;
			char *eq = memchr(p, '=', (size_t)(end - p));
			size_t at = (size_t)(p - out->buf);
			if (!eq) {
				/* tolerate empty entries ("{}", "{a=b,}") */
				for (char *t = p; t < end; t++)
					if (!isspace((unsigned char)*t))
						return wt_err_set(err, WT_EINVAL,
								  "pyroscope: name: label at byte %zu has no '='", at);
				p = end + 1;
				continue;
			}
			char *k = trim(p, eq);
			char *v = trim(eq + 1, end);
			if (!*k)
				return wt_err_set(err, WT_EINVAL, "pyroscope: name: empty label key at byte %zu", at);
			if (!wt_upload_label_key_valid(k)) /* the upload contract's rule */
				return wt_err_set(err, WT_EINVAL,
						  "pyroscope: name: label key \"%.64s\" at byte %zu is not [A-Za-z_][A-Za-z0-9_./-]*",
						  k, at);
			if (out->nlabels >= EDGE_PYRO_MAX_LABELS)
				return wt_err_set(err, WT_ELIMIT, "pyroscope: name: more than %d labels",
						  EDGE_PYRO_MAX_LABELS);
			out->labels[2 * out->nlabels] = k;
			out->labels[2 * out->nlabels + 1] = v;
			out->nlabels++;
			p = end + 1;
		}
	}
	char *app = trim(out->buf, app_end);
	if (!*app)
		return wt_err_set(err, WT_EINVAL, "pyroscope: name \"%s\" has no application name", name);
	char *dot = strrchr(app, '.');
	if (dot && dot != app && edge_pyro_type_hint(dot + 1)) {
		*dot = '\0';
		out->type = dot + 1;
	}
	out->service = app;
	return 0;
}

int edge_mp_boundary(const char *ctype, char *out, size_t outlen)
{
	if (!ctype || strncasecmp(ctype, "multipart/form-data", 19) != 0)
		return WT_EINVAL;
	const char *p = ctype + 19;
	while ((p = strchr(p, ';')) != NULL) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, "boundary=", 9) != 0)
			continue;
		p += 9;
		size_t n;
		if (*p == '"') {
			const char *q = strchr(p + 1, '"');
			if (!q)
				return WT_EINVAL;
			p++;
			n = (size_t)(q - p);
		} else {
			n = strcspn(p, "; \t");
		}
		/* RFC 2046: 1..70 characters */
		if (n == 0 || n > 70 || n >= outlen)
			return WT_EINVAL;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return WT_EINVAL;
}

static const uint8_t *find(const uint8_t *h, size_t hlen, const char *needle, size_t nlen)
{
	return memmem(h, hlen, needle, nlen);
}

/* name="..." of a Content-Disposition header line [p, e) */
static int disposition_name(const uint8_t *p, const uint8_t *e, const char **name, size_t *nlen)
{
	const uint8_t *q = p;
	while (q + 5 <= e) {
		if (!strncasecmp((const char *)q, "name=", 5) &&
		    (q == p || q[-1] == ' ' || q[-1] == ';' || q[-1] == '\t')) {
			q += 5;
			if (q < e && *q == '"') {
				const uint8_t *z = memchr(q + 1, '"', (size_t)(e - q - 1));
				if (!z)
					return -1;
				*name = (const char *)q + 1;
				*nlen = (size_t)(z - q - 1);
			} else {
				const uint8_t *z = q;
				while (z < e && *z != ';' && *z != ' ' && *z != '\r')
					z++;
				*name = (const char *)q;
				*nlen = (size_t)(z - q);
			}
			return 0;
		}
		q++;
	}
	return -1;
}

int edge_mp_parse(const uint8_t *body, size_t len, const char *boundary,
		  edge_mp_part *parts, size_t *nparts, wt_err *err)
{
	char delim[80];
	size_t dlen = (size_t)snprintf(delim, sizeof(delim), "--%s", boundary);
	const uint8_t *end = body + len;
	const uint8_t *p = find(body, len, delim, dlen);
	size_t n = 0;

	*nparts = 0;
	if (dlen >= sizeof(delim) || !p)
		return wt_err_set(err, WT_EINVAL, "multipart: boundary \"%s\" not found in the body", boundary);
	for (;;) {
		p += dlen;
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break; /* closing delimiter */
		/* rest of the delimiter line (transport padding, CRLF) */
		const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return wt_err_set(err, WT_EINVAL, "multipart: truncated delimiter line at byte %zu",
					  (size_t)(p - body));
		p = nl + 1;
		if (n >= EDGE_MP_MAX_PARTS)
			return wt_err_set(err, WT_ELIMIT, "multipart: more than %d parts", EDGE_MP_MAX_PARTS);
		edge_mp_part *part = &parts[n];
		memset(part, 0, sizeof(*part));
		/* headers until an empty line */
		for (;;) {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				return wt_err_set(err, WT_EINVAL, "multipart: part %zu: headers not terminated (byte %zu)",
						  n, (size_t)(p - body));
			const uint8_t *le = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
			if (le == p) {
				p = nl + 1;
				break;
			}
			if ((size_t)(le - p) > 20 && !strncasecmp((const char *)p, "Content-Disposition:", 20)) {
				if (disposition_name(p + 20, le, &part->name, &part->name_len) != 0)
					return wt_err_set(err, WT_EINVAL,
							  "multipart: part %zu: Content-Disposition without name= at byte %zu",
							  n, (size_t)(p - body));
			}
			p = nl + 1;
		}
		/* body until CRLF--boundary */
		char cdelim[84];
		size_t clen = (size_t)snprintf(cdelim, sizeof(cdelim), "\r\n%s", delim);
		const uint8_t *q = find(p, (size_t)(end - p), cdelim, clen);
		size_t skip = 2;
		if (!q) {
			/* tolerate bare LF line ends */
			q = find(p, (size_t)(end - p), cdelim + 1, clen - 1);
			skip = 1;
		}
		if (!q)
			return wt_err_set(err, WT_EINVAL, "multipart: part %zu (starting at byte %zu) has no closing boundary",
					  n, (size_t)(p - body));
		if (!part->name)
			return wt_err_set(err, WT_EINVAL, "multipart: part %zu has no Content-Disposition name", n);
		part->data = p;
		part->len = (size_t)(q - p);
		n++;
		p = q + skip;
	}
	*nparts = n;
	return 0;
}

const edge_mp_part *edge_mp_find(const edge_mp_part *parts, size_t n, const char *name)
{
	size_t l = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (parts[i].name_len == l && !memcmp(parts[i].name, name, l))
			return &parts[i];
	return NULL;
}
