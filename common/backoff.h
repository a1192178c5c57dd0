/*
 * backoff.h — the one retry delay rule: exponential from initial_ms, capped
 * at max_ms, optionally with jitter. Used by the edge's replication sender
 * and remote-config puller (jittered), the hub's ClickHouse client and
 * wtctl's upload retries (plain doubling).
 *
 * attempt counts failures before this wait, from 0:
 *   no jitter: min(max_ms, initial_ms * 2^attempt)
 *   jitter:    uniform in [initial_ms, min(max_ms, initial_ms * 2^attempt)]
 *              ("full jitter" above the floor; common/rng.c's generator)
 * max_ms <= 0 means no cap. Never overflows, whatever attempt is.
 */
#ifndef WT_BACKOFF_H
#define WT_BACKOFF_H

#include <stdint.h>

typedef struct wt_backoff {
	int64_t initial_ms; /* > 0 */
	int64_t max_ms;     /* <= 0: uncapped */
	int jitter;
} wt_backoff;

int64_t wt_backoff_ms(const wt_backoff *b, unsigned attempt);

#endif
