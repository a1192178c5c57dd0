/*
 * url.c — building the request URLs of wtctl commands: base URL + path +
 * percent-encoded query parameters (RFC 3986 unreserved characters kept).
 * Pure; unit-tested in tests/unit/cli/test_url.c.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"

static int unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.' || c == '~';
}

static void put_escaped(wt_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (unreserved(c)) {
			wt_buf_putc(b, (char)c);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			wt_buf_append(b, e, 3);
		}
	}
}

/* Append "?k=v" or "&k=v" (v escaped); nothing when v is NULL. */
static void put_param(wt_buf *b, int *first, const char *k, const char *v)
{
	if (!v)
		return;
	wt_buf_putc(b, *first ? '?' : '&');
	*first = 0;
	wt_buf_puts(b, k);
	wt_buf_putc(b, '=');
	put_escaped(b, v, strlen(v));
}

/* "K=V" → "label.K=V" with both halves escaped. */
static void put_label(wt_buf *b, int *first, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (!eq)
		return;
	wt_buf_putc(b, *first ? '?' : '&');
	*first = 0;
	wt_buf_puts(b, "label.");
	put_escaped(b, kv, (size_t)(eq - kv));
	wt_buf_putc(b, '=');
	put_escaped(b, eq + 1, strlen(eq + 1));
}

/* base without trailing slashes, then path. */
static int put_base(wt_buf *b, const char *base, const char *path)
{
	size_t n;

	if (!base || !*base)
		return -1;
	n = strlen(base);
	while (n > 0 && base[n - 1] == '/')
		n--;
	wt_buf_append(b, base, n);
	wt_buf_puts(b, path);
	return 0;
}

static char *finish(wt_buf *b)
{
	size_t len;

	wt_buf_putc(b, '\0');
	if (b->oom) {
		wt_buf_free(b);
		return NULL;
	}
	return (char *)wt_buf_steal(b, &len);
}

char *cli_upload_url(const char *base, const cli_upload_args *a)
{
	wt_buf b = WT_BUF_INIT;
	int first = 1;

	if (put_base(&b, base, "/v1/profiles")) {
		wt_buf_free(&b);
		return NULL;
	}
	put_param(&b, &first, "format", a->format ? a->format : "auto");
	put_param(&b, &first, "service", a->service);
	put_param(&b, &first, "type", a->type);
	put_param(&b, &first, "from", a->from);
	put_param(&b, &first, "until", a->until);
	for (size_t i = 0; i < a->nlabels; i++)
		put_label(&b, &first, a->labels[i]);
	return finish(&b);
}

char *cli_query_url(const char *base, const cli_query_args *a)
{
	wt_buf b = WT_BUF_INIT;
	int first = 1;

	if (put_base(&b, base, "/v1/projects/")) {
		wt_buf_free(&b);
		return NULL;
	}
	put_escaped(&b, a->project, strlen(a->project));
	wt_buf_puts(&b, "/profiles/");
	wt_buf_puts(&b, a->view);
	put_param(&b, &first, "service", a->service);
	put_param(&b, &first, "type", a->type);
	put_param(&b, &first, "from", a->from);
	put_param(&b, &first, "until", a->until);
	for (size_t i = 0; i < a->nlabels; i++)
		put_label(&b, &first, a->labels[i]);
	return finish(&b);
}

char *cli_debuginfo_url(const char *base, const char *project, const char *build_id, const char *name)
{
	wt_buf b = WT_BUF_INIT;
	int first = 1;

	if (put_base(&b, base, "/v1/projects/")) {
		wt_buf_free(&b);
		return NULL;
	}
	put_escaped(&b, project, strlen(project));
	wt_buf_puts(&b, "/debuginfo");
	if (build_id) {
		wt_buf_putc(&b, '/');
		put_escaped(&b, build_id, strlen(build_id));
	}
	put_param(&b, &first, "name", name);
	return finish(&b);
}
