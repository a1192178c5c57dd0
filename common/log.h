/*
 * log.h — structured logging to stderr, one line per event:
 *   ts=2026-12-02T16:12:06.123Z level=info mod=edge msg="..." key=value ...
 * Thread-safe (one write(2) per line). Level from WT_LOG_LEVEL
 * (debug|info|warn|error; default info).
 */
#ifndef WT_LOG_H
#define WT_LOG_H

enum { WT_LOG_DEBUG, WT_LOG_INFO, WT_LOG_WARN, WT_LOG_ERROR };

void wt_log_init(const char *module);
void wt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define wt_debug(...) wt_log(WT_LOG_DEBUG, __VA_ARGS__)
#define wt_info(...) wt_log(WT_LOG_INFO, __VA_ARGS__)
#define wt_warn(...) wt_log(WT_LOG_WARN, __VA_ARGS__)
#define wt_error(...) wt_log(WT_LOG_ERROR, __VA_ARGS__)

#endif
