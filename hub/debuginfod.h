/*
 * debuginfod.h — a client of the debuginfod protocol (elfutils' debug-info
 * server): GET <url>/buildid/<build id>/debuginfo over libcurl. The hub's
 * symbolizer (symbols.c) calls it from its background fetch thread.
 *
 * Ownership: the answer is appended to the caller's wt_buf.
 */
#ifndef HUB_DEBUGINFOD_H
#define HUB_DEBUGINFOD_H

#include <stddef.h>

#include "buf.h"
#include "err.h"

/* Ask the blank- or comma-separated base URLs in turn for build_id (lower
 * hex); the first answer that is an ELF file with that build id, at most
 * max bytes, is appended to out. Each server gets timeout_ms; redirects are
 * followed (3 at most, http/https only). 0, or WT_ENOTFOUND with what each
 * server said in err. Blocking; thread-safe (one curl handle per call). */
int hub_debuginfod_get(const char *urls, const char *build_id, size_t max, int timeout_ms, wt_buf *out,
		       wt_err *err);

#endif
