/*
 * symbols.h — the hub's debug files and the query-time symbolizer.
 *
 * Debug files (an unstripped ELF or a separate .debug file) are stored per
 * project in the object store under "debuginfo/<project>/<build id>" and
 * indexed in ClickHouse (debug_files_v1: build id, file name, size, who,
 * when, source "upload"|"debuginfod"). Frames stored unsymbolized
 * ("module+0xOFF [bid:…]", common/symref.h) are symbolized LAZILY when a
 * query builds its flame (selection.c): by build id when the frame has
 * one, else by the module's base name among the project's debug files
 * (file name equal to it or to it + ".debug"), newest upload first. So
 * frames that arrived before their debug file show names as soon as it is
 * uploaded, with nothing rewritten in ClickHouse.
 *
 * Caches (in this process): the project's index (reloaded after
 * index_ttl_ms, at once after an upload/delete through this hub), up to
 * HUB_SYMBOLS_OPEN_FILES open debug files (local copies under cache_dir),
 * and the expansion of every frame string seen (cleared when the
 * project's index changes). One mutex guards the caches and is held only
 * for lookups in them: reading the index from ClickHouse, fetching and
 * opening a debug file, and each DWARF lookup run without it (lookups on
 * one open file take that file's own lock), so a slow file does not stall
 * queries that symbolize from other files. Debuginfod (off unless debuginfod_urls is
 * set): a frame with a build id that no debug file has is queued for a
 * background thread that fetches GET <url>/buildid/<id>/debuginfo and
 * stores it like an upload (queries never wait for a download: the frame
 * shows names from the next query after it); a miss is remembered for 5
 * minutes.
 *
 * Thread-safety: every call may come from any HTTP worker. Ownership:
 * hub_symbols_new() returns an object owned by the caller
 * (hub_symbols_free); the object store is borrowed.
 */
#ifndef HUB_SYMBOLS_H
#define HUB_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ch_client.h"
#include "err.h"
#include "objstore.h"
#include "symref.h"

#define HUB_SYMBOLS_OPEN_FILES 16
#define HUB_DEBUG_NAME_MAX 256

typedef struct hub_symbols_conf {
	const char *cache_dir;       /* local copies of debug files */
	size_t max_file_bytes;       /* largest debug file accepted or fetched */
	const char *debuginfod_urls; /* blank-separated base URLs; NULL/"" = off */
	int debuginfod_timeout_ms;
	int index_ttl_ms;            /* index re-read after this long */
} hub_symbols_conf;

typedef struct hub_debug_file {
	char build_id[WT_BUILD_ID_MAX + 1];
	char file_name[HUB_DEBUG_NAME_MAX];
	uint64_t size;
	char uploaded_by[64];
	uint64_t uploaded_ns;
	char source[16];
} hub_debug_file;

typedef struct hub_symbols hub_symbols;

/* conf strings are copied; os and chconf are borrowed (chconf: for the
 * debuginfod thread's own ClickHouse client; started only when
 * debuginfod_urls is set). 0, WT_ENOMEM, WT_EIO. */
int hub_symbols_new(const hub_symbols_conf *conf, hub_objstore *os, const hub_ch_conf *chconf,
		    hub_symbols **out, wt_err *err);
void hub_symbols_free(hub_symbols *s);

/* 1 when build_id is 2..WT_BUILD_ID_MAX lower-case hex digits. Pure. */
int hub_build_id_valid(const char *build_id);

/* The project's debug files, newest first (build_id NULL: all; else that
 * one). *out is malloc'ed (caller frees), *n entries. */
int hub_debug_files_list(hub_ch *ch, const char *project, const char *build_id, hub_debug_file **out,
			 size_t *n, wt_err *err);

/* Store data (an ELF file whose build id the caller checked) as the debug
 * file build_id of project and index it; the symbolizer sees it at once. */
int hub_debug_file_store(hub_symbols *s, hub_ch *ch, const char *project, const char *build_id,
			 const char *file_name, const void *data, size_t len, const char *by,
			 const char *source, wt_err *err);

/* Remove it from the index, the object store and the caches. */
int hub_debug_file_delete(hub_symbols *s, hub_ch *ch, const char *project, const char *build_id,
			  const char *by, wt_err *err);

/* *hash: a fingerprint of the project's debug-file index (refreshed by the
 * same rule as hub_symbols_expand), so a cached rendering of symbolized
 * frames (viewcache.h) is reused only while the index is unchanged; s NULL:
 * 0. 0 or a ClickHouse error. */
int hub_symbols_index_hash(hub_symbols *s, hub_ch *ch, const char *project, uint64_t *hash, wt_err *err);

/* How many times a matching debug file could not be opened (object store
 * down, a damaged file): the frame stayed unsymbolized for that query
 * only, so a rendering made meanwhile is not cached. s NULL: 0. */
uint64_t hub_symbols_unavailable(hub_symbols *s);

/* Symbolize the stored frame string frame[0..len) of project: when it is
 * a symref with a matching debug file, append the frame names OUTERMOST
 * FIRST ("func (file.c:42)", inlined functions as their own frames) to
 * names, each NUL-terminated, and set *n; otherwise *n = 0 (the caller
 * keeps the frame as it is). Errors only for ClickHouse/out of memory. */
int hub_symbols_expand(hub_symbols *s, hub_ch *ch, const char *project, const char *frame, size_t len,
		       wt_buf *names, size_t *n, wt_err *err);

/* The function a stored frame string stands for, for per-function views
 * (regression issues): when hub_symbols_expand() names it, the INNERMOST
 * name (where the self time was spent: an inlined function when the
 * address lies in one) without its " (file.c:42)" suffix; otherwise the
 * frame as views show it (a symref without " [bid:…]", a function name as
 * it is). Written NUL-terminated to out (reset first). *named = 1 when
 * symbolized. s may be NULL (no symbolization). Errors as expand. */
int hub_symbols_function(hub_symbols *s, hub_ch *ch, const char *project, const char *frame, size_t len,
			 wt_buf *out, int *named, wt_err *err);

/* Length of name[0..n) without the trailing " (file.c:42)" that symbolized
 * names carry ("f(int) (a.cc:3)" → "f(int)"); n when there is none. Pure. */
size_t hub_symbols_strip_line(const char *name, size_t n);

#endif
