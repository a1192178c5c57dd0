/*
 * log.c — logfmt-style structured logging to stderr (see log.h).
 * The message is formatted by the caller: write `msg="..." k=v` pairs.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *log_module = "wt";
static int log_level = WT_LOG_INFO;

void wt_log_init(const char *module)
{
	const char *l = getenv("WT_LOG_LEVEL");

	if (module)
		log_module = module;
	if (!l)
		return;
	if (!strcasecmp(l, "debug"))
		log_level = WT_LOG_DEBUG;
	else if (!strcasecmp(l, "warn"))
		log_level = WT_LOG_WARN;
	else if (!strcasecmp(l, "error"))
		log_level = WT_LOG_ERROR;
}

void wt_log(int level, const char *fmt, ...)
{
	static const char *names[] = {"debug", "info", "warn", "error"};
	char line[2048];
	struct timeval tv;
	struct tm tm;
	size_t n;
	va_list ap;

	if (level < log_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = (size_t)snprintf(line, sizeof(line),
			     "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s mod=%s ",
			     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			     tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000),
			     names[level & 3], log_module);
	va_start(ap, fmt);
	if (n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(2, line, n) < 0) {
		/* nothing sensible to do when stderr is gone */
	}
}
