/*
 * http_ui.c — serves the explorer (every file of hub/ui/, embedded into the binary by
 * hub/gen_ui_assets.sh) at / and /ui/<name>. Static files only: the page
 * talks to the public query API with the user's read token, so these
 * routes need no token. A strict Content-Security-Policy keeps the page
 * from loading anything that is not served by this hub.
 */
#include "http_ui.h"

#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "http_server.h"

#define UI_DIR_MAX_FILE (8u << 20)

static const char *content_type(const char *name)
{
	static const struct { const char *ext, *ct; } types[] = {
		{".html", "text/html; charset=utf-8"},
		{".js", "text/javascript; charset=utf-8"},
		{".mjs", "text/javascript; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".svg", "image/svg+xml"},
		{".json", "application/json"},
		{".png", "image/png"},
		{".ico", "image/x-icon"},
		{".txt", "text/plain; charset=utf-8"},
	};
	const char *dot = strrchr(name, '.');
	size_t i;

	for (i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].ct;
	return "application/octet-stream";
}

/* A served name: [A-Za-z0-9_.-]+, no leading dot (no "..", no slashes). */
static int name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 128 || s[0] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

/* Read WT_HUB_UI_DIR/name into a malloc'd buffer (caller frees). */
static int read_dev_file(const char *dir, const char *name, unsigned char **out, size_t *len)
{
	char path[4096];
	struct stat st;
	FILE *f;
	unsigned char *buf;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (stat(path, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > UI_DIR_MAX_FILE)
		return WT_ENOTFOUND;
	if (!(f = fopen(path, "rb")))
		return WT_ENOTFOUND;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		free(buf);
		fclose(f);
		return WT_EIO;
	}
	fclose(f);
	*out = buf;
	*len = (size_t)st.st_size;
	return 0;
}

void hub_handle_ui(hub_req *r)
{
	struct evkeyvalq *oh = evhttp_request_get_output_headers(r->req);
	const char *inm = evhttp_find_header(evhttp_request_get_input_headers(r->req), "If-None-Match");
	const char *name;
	const char *dev = getenv("WT_HUB_UI_DIR");
	const unsigned char *data = NULL;
	unsigned char *owned = NULL;
	size_t len = 0, i;
	char etag[32];
	wt_err err;

	if (!strcmp(r->path, "/") || !strcmp(r->path, "/ui/") || !strcmp(r->path, "/ui"))
		name = "index.html";
	else
		name = r->path + strlen("/ui/");
	if (!name_ok(name)) {
		wt_err_set(&err, WT_ENOTFOUND, "no UI file at %s", r->path);
		hub_req_fail(r, &err);
		return;
	}
	if (dev && dev[0]) {
		int rc = read_dev_file(dev, name, &owned, &len);
		if (rc) {
			wt_err_set(&err, rc, "no UI file %s in WT_HUB_UI_DIR", name);
			hub_req_fail(r, &err);
			return;
		}
		data = owned;
	} else {
		for (i = 0; hub_ui_assets[i].name; i++)
			if (!strcmp(hub_ui_assets[i].name, name)) {
				data = hub_ui_assets[i].data;
				len = hub_ui_assets[i].len;
				break;
			}
		if (!data) {
			wt_err_set(&err, WT_ENOTFOUND, "no UI file at %s", r->path);
			hub_req_fail(r, &err);
			return;
		}
	}
	snprintf(etag, sizeof(etag), "\"%016llx\"", (unsigned long long)XXH3_64bits(data, len));
	evhttp_add_header(oh, "ETag", etag);
	evhttp_add_header(oh, "Cache-Control", "no-cache");
	evhttp_add_header(oh, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(oh, "Referrer-Policy", "no-referrer");
	evhttp_add_header(oh, "Content-Security-Policy",
			  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
			  " connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'");
	if (inm && !strcmp(inm, etag)) {
		atomic_fetch_add(&r->ctx->metrics.responses_2xx, 1);
		evhttp_send_reply(r->req, 304, "Not Modified", NULL);
	} else {
		atomic_fetch_add(&r->ctx->metrics.responses_2xx, 1);
		wt_http_send_bytes(r->req, 200, content_type(name), data, len);
	}
	free(owned);
}
