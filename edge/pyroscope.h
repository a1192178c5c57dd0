/*
 * pyroscope.h — pure parsing for the Pyroscope-compatible /ingest endpoint:
 * the `name=app.cpu{k=v,...}` parameter and multipart/form-data bodies as
 * Pyroscope SDKs send them (field `profile`, optional `sample_type_config`).
 * No I/O; pointers returned point into the caller's buffers.
 */
#ifndef EDGE_PYROSCOPE_H
#define EDGE_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define EDGE_PYRO_MAX_LABELS 64
#define EDGE_PYRO_NAME_MAX 1024

typedef struct edge_pyro_name {
	char buf[EDGE_PYRO_NAME_MAX]; /* storage for the strings below */
	const char *service;          /* "app" of "app.cpu{...}" */
	const char *type;             /* "cpu", or NULL when the suffix is not a known type */
	const char *labels[2 * EDGE_PYRO_MAX_LABELS]; /* key, value, ... */
	size_t nlabels;
} edge_pyro_name;

/* Parse "app.cpu{env=prod,region=eu}". The suffix after the last '.' is taken
 * as the profile type when it is one Pyroscope uses (cpu, itimer, wall,
 * alloc_objects, alloc_space, inuse_objects, inuse_space, goroutines,
 * mutex_count, mutex_duration, block_count, block_duration, lock_count,
 * lock_duration, ...); otherwise the whole name is the service. Label keys
 * follow the upload contract (wt_upload_label_key_valid: [A-Za-z_][A-Za-z0-9_./-]*),
 * values anything but ',' '}' ; spaces around are
 * trimmed. Errors name the position. */
int edge_pyro_parse_name(const char *name, edge_pyro_name *out, wt_err *err);

/* Map a Pyroscope type suffix onto a hint for the decoder ("cpu", "alloc",
 * "inuse", "mutex", "block", "goroutine", "wall") — NULL for unknown. */
const char *edge_pyro_type_hint(const char *type);

typedef struct edge_mp_part {
	const char *name;     /* form field name (points into the body copy) */
	size_t name_len;
	const uint8_t *data;
	size_t len;
} edge_mp_part;

#define EDGE_MP_MAX_PARTS 16

/* Boundary from a Content-Type value ("multipart/form-data; boundary=..."),
 * copied into out (NUL-terminated). 0, or WT_EINVAL when not multipart or no
 * boundary. */
int edge_mp_boundary(const char *ctype, char *out, size_t outlen);

/* Split body into parts. parts[] has room for EDGE_MP_MAX_PARTS. Errors:
 * WT_EINVAL naming the byte offset. */
int edge_mp_parse(const uint8_t *body, size_t len, const char *boundary,
		  edge_mp_part *parts, size_t *nparts, wt_err *err);

/* The part named name, or NULL. */
const edge_mp_part *edge_mp_find(const edge_mp_part *parts, size_t n, const char *name);

#endif
