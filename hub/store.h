/*
 * store.h — the hub's view of ClickHouse health. A monitor thread probes
 * ClickHouse every health_interval_ms; when it answers, the monitor detects
 * the version (feature flags) and applies migrations, then marks the store
 * ready. Request handlers call hub_store_check() and answer 503 at once
 * while the store is not ready; a request that finds ClickHouse unreachable
 * marks it down (hub_store_mark_down) so others fail fast too, and the
 * monitor brings it back by itself when ClickHouse answers again.
 *
 * One store per process (the ch_client down-hook is process-wide).
 */
#ifndef HUB_STORE_H
#define HUB_STORE_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ch_client.h"
#include "schema.h"

typedef struct hub_store {
	const hub_ch_conf *conf;
	const char *db;
	int interval_ms;

	atomic_int ready;       /* up and migrated */
	atomic_long transitions; /* number of up/down changes (metrics) */

	pthread_mutex_t mu;     /* guards everything below */
	pthread_cond_t cv;
	int stop, poke;
	hub_ch_features feat;
	char last_error[300];
	int64_t since_ns;       /* time of the last state change */
	pthread_t thr;
	int started;
} hub_store;

/* Start the monitor thread (first probe runs at once). conf and db must
 * outlive the store. 0 or WT_ENOMEM. */
int hub_store_start(hub_store *s, const hub_ch_conf *conf, const char *db, int interval_ms);
void hub_store_stop(hub_store *s);

/* 0 when ready, else WT_EUNAVAIL with a message naming the last error. */
int hub_store_check(hub_store *s, wt_err *err);
/* Tell the monitor that a request found ClickHouse unreachable. */
void hub_store_mark_down(hub_store *s, const char *why);
/* Copy of the feature flags (valid once ready). */
void hub_store_features(hub_store *s, hub_ch_features *out);
/* {"status":"up"|"down","version":..,"schema_version":..,"error":..,"since":..} */
json_t *hub_store_status_json(hub_store *s);

int64_t hub_now_ns(void);

/* Test hook: sleep the milliseconds the environment variable env names
 * (0-600000; unset or out of range: no sleep). Used by tests to widen a
 * window (a job holding its lease, a slow debug-file open). */
void hub_test_delay(const char *env);

#endif
