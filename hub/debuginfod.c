/*
 * debuginfod.c — GET <url>/buildid/<id>/debuginfo with libcurl, answer
 * checked (ELF, same GNU build id) before it is handed back (see
 * debuginfod.h).
 */
#include "debuginfod.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfid.h"
#include "http_client.h"
#include "symref.h"

int hub_debuginfod_get(const char *urls, const char *bid, size_t max, int timeout_ms, wt_buf *out, wt_err *err)
{
	char *list = strdup(urls), *save = NULL, *u, got[WT_BUILD_ID_MAX + 1];
	wt_buf why = WT_BUF_INIT;
	int rc = WT_ENOTFOUND;

	if (!list)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	for (u = strtok_r(list, " \t,", &save); u && rc; u = strtok_r(NULL, " \t,", &save)) {
		char url[2048];
		wt_http_result r;
		CURL *h = curl_easy_init();
		wt_err e;

		if (!h)
			break;
		wt_buf_reset(out);
		snprintf(url, sizeof(url), "%s%sbuildid/%s/debuginfo", u, u[strlen(u) - 1] == '/' ? "" : "/", bid);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
		wt_http_perform(h, "GET", url, NULL, NULL, 0, out, max, &r);
		curl_easy_cleanup(h);
		if (r.cc != CURLE_OK || r.status != 200)
			wt_buf_printf(&why, "%s%s: %s", why.len ? "; " : "", url,
				      r.over ? "larger than symbols.max_file_bytes"
				      : r.cc != CURLE_OK ? curl_easy_strerror(r.cc) : r.status == 404 ? "404" : "not 200");
		else if (wt_elf_build_id(out->data, out->len, url, got, sizeof(got), &e))
			wt_buf_printf(&why, "%s%s", why.len ? "; " : "", e.msg);
		else if (strcmp(got, bid))
			wt_buf_printf(&why, "%s%s: build id %s", why.len ? "; " : "", url, got);
		else
			rc = 0;
	}
	if (rc) {
		wt_buf_reset(out);
		wt_buf_putc(&why, '\0');
		wt_err_set(err, rc, "debuginfod %s: %s", bid, why.oom || !why.data ? "no server has it" : (char *)why.data);
	}
	wt_buf_free(&why);
	free(list);
	return rc;
}
