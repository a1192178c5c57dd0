/*
 * err.h — error codes and the error record that travels from a parser or
 * storage layer up to an HTTP response.
 *
 * Every fallible function in common/, edge/ and hub/ returns 0 on success or
 * a negative WT_E* code, and (where it takes one) fills a wt_err with a
 * human-readable message that names the input and the position ("pprof:
 * sample[12].location_id[3]: unknown location 99 at byte 4711").
 */
#ifndef WT_ERR_H
#define WT_ERR_H

#include <stddef.h>

enum {
	WT_OK = 0,
	WT_EINVAL = -1,     /* malformed input; maps to HTTP 400 */
	WT_ENOMEM = -2,     /* allocation failed; 500 (request fails, daemon lives) */
	WT_ELIMIT = -3,     /* a configured limit was exceeded; 413 */
	WT_EFORMAT = -4,    /* unknown / unsupported format; 415 */
	WT_EIO = -5,        /* storage or network I/O failed; 500/503 */
	WT_EAUTH = -6,      /* bad or missing token; 401 */
	WT_ENOTFOUND = -7,  /* 404 */
	WT_EUNAVAIL = -8,   /* a dependency (ClickHouse, hub) is down; 503 */
	WT_EFORBIDDEN = -9, /* token valid but lacks the role/project; 403 */
};

#define WT_ERR_MSG_MAX 512

/* An error record. `code` is a WT_E* value, `msg` a NUL-terminated message. */
typedef struct wt_err {
	int code;
	char msg[WT_ERR_MSG_MAX];
} wt_err;

/* Set *e (if non-NULL) to code and a printf-formatted message; returns code
 * so callers can write `return wt_err_set(e, WT_EINVAL, "...")`. */
int wt_err_set(wt_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix the message already in *e with "prefix: " (for adding context while
 * unwinding). Returns e->code. */
int wt_err_prefix(wt_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Short stable name of a code ("invalid_input", "too_large", ...), used as
 * the "error" field of JSON error bodies. */
const char *wt_err_name(int code);

/* HTTP status for a code (400, 413, 415, 401, 500, 503, ...). */
int wt_err_http_status(int code);

#endif
