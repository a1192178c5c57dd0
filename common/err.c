/*
 * err.c — the wt_err record: formatting, prefixing, and the mapping of error
 * codes to names and HTTP statuses used by both daemons.
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int wt_err_set(wt_err *e, int code, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		e->code = code;
		vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

int wt_err_prefix(wt_err *e, const char *fmt, ...)
{
	char pre[WT_ERR_MSG_MAX], old[WT_ERR_MSG_MAX];
	va_list ap;

	if (!e)
		return WT_EINVAL;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = 0;
	{
		size_t n = strlen(pre);
		if (n > sizeof(e->msg) - 3)
			n = sizeof(e->msg) - 3;
		memcpy(e->msg, pre, n);
		e->msg[n++] = ':';
		e->msg[n++] = ' ';
		snprintf(e->msg + n, sizeof(e->msg) - n, "%.*s", (int)(sizeof(e->msg) - n - 1), old);
	}
	return e->code;
}

const char *wt_err_name(int code)
{
	switch (code) {
	case WT_OK: return "ok";
	case WT_EINVAL: return "invalid_input";
	case WT_ENOMEM: return "out_of_memory";
	case WT_ELIMIT: return "too_large";
	case WT_EFORMAT: return "unsupported_format";
	case WT_EIO: return "io_error";
	case WT_EAUTH: return "unauthorized";
	case WT_ENOTFOUND: return "not_found";
	case WT_EUNAVAIL: return "unavailable";
	case WT_EFORBIDDEN: return "forbidden";
	default: return "error";
	}
}

int wt_err_http_status(int code)
{
	switch (code) {
	case WT_OK: return 200;
	case WT_EINVAL: return 400;
	case WT_ELIMIT: return 413;
	case WT_EFORMAT: return 415;
	case WT_EAUTH: return 401;
	case WT_EFORBIDDEN: return 403;
	case WT_ENOTFOUND: return 404;
	case WT_EUNAVAIL: return 503;
	default: return 500;
	}
}
