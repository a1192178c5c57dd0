/*
 * signals.h — the one signal scheme of both daemons: the signals a daemon
 * handles (SIGTERM, SIGINT, SIGHUP) are blocked in every thread and read
 * from a signalfd, so no code runs in signal context and no thread is
 * interrupted. SIGPIPE is ignored (peers that hang up show as EPIPE).
 *
 * wt_signals_open must run in main before any thread starts: threads
 * inherit the blocked mask. The hub's main thread waits on the fd
 * (wt_signals_wait); the edge adds it to its event loop and reads it when
 * readable (wt_signals_wait with timeout 0): SIGTERM/SIGINT drain and stop,
 * SIGHUP reloads (the hub's replication certificates, the edge's eBPF
 * sampler configuration).
 */
#ifndef WT_SIGNALS_H
#define WT_SIGNALS_H

#include <stddef.h>

#include "err.h"

typedef struct wt_signals {
	int fd; /* signalfd, non-blocking, close-on-exec; -1 when closed */
} wt_signals;

/* Block sigs (n of them) in the calling thread, ignore SIGPIPE, open the
 * signalfd. 0, or WT_EIO (nothing blocked). */
int wt_signals_open(wt_signals *s, const int *sigs, size_t n, wt_err *err);

/* The next pending signal's number, waiting up to timeout_ms (-1: no
 * limit; 0: only what is pending). 0 when none came in time. */
int wt_signals_wait(wt_signals *s, int timeout_ms);

/* Close the fd. The signals stay blocked: one arriving during the rest of
 * the shutdown must not kill the process half-way. */
void wt_signals_close(wt_signals *s);

#endif
