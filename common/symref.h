/*
 * symref.h — the text form of an unsymbolized native frame, as stored in
 * frame-name strings (profile_stacks_v1.frames, rollups, edge stacks):
 *
 *     <module>+0x<offset>                 e.g. "prog+0x11e4"
 *     <module>+0x<offset> [bid:<hex>]     e.g. "libfoo.so+0x1a0 [bid:3f2e…]"
 *
 * module is the base name of the mapped file; offset is the FILE OFFSET
 * inside it (not the runtime address: that depends on where the process
 * loaded it); the optional bracket carries the GNU build id when the input
 * had one (eBPF samples, pprof mappings). The hub symbolizes such frames
 * at query time from uploaded debug files (hub/symbolize.c); views show
 * the frame without the " [bid:…]" suffix (wt_symref_display_len).
 */
#ifndef WT_SYMREF_H
#define WT_SYMREF_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

#define WT_BUILD_ID_MAX 80 /* hex digits: 40 for SHA-1 ids, longer ids exist */

typedef struct wt_symref {
	const char *module;   /* into the parsed string, not NUL-terminated */
	size_t module_len;
	uint64_t offset;
	const char *build_id; /* NULL when absent */
	size_t build_id_len;
} wt_symref;

/* 1 and *out filled when s[0..n) has the form above; 0 otherwise. Pure. */
int wt_symref_parse(const char *s, size_t n, wt_symref *out);

/* Length of s[0..n) without a trailing " [bid:<hex>]" (n when none). */
size_t wt_symref_display_len(const char *s, size_t n);

/* Write the form for (module path or base name, offset, build id or NULL
 * or "") into buf (always NUL-terminated, truncated to cap). Returns buf. */
const char *wt_symref_format(char *buf, size_t cap, const char *module, uint64_t offset,
			     const char *build_id);

/* The name a frame is STORED under: wt_profile_frame_name(), except that
 * an unsymbolized frame inside a mapping with a file name becomes the
 * symref form (file offset computed from the mapping's start/offset when
 * the mapping has a range, the frame address otherwise; build id when the
 * mapping has one). Same buffer rules as wt_profile_frame_name(). */
const char *wt_profile_frame_key(const wt_profile *p, uint32_t frame, char *buf, size_t buflen);

#endif
