/*
 * ch_health.h — the hub's view of ClickHouse health. A monitor thread probes
 * ClickHouse every health_interval_ms; when it answers, the monitor detects
 * the version (feature flags) and applies migrations, then marks the store
 * ready. Request handlers call hub_ch_health_check() and answer 503 at once
 * while the store is not ready; a request that finds ClickHouse unreachable
 * marks it down (hub_ch_health_mark_down) so others fail fast too, and the
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
#include "clock.h"
#include "schema.h"

typedef struct hub_ch_health {
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
} hub_ch_health;

/* Start the monitor thread (first probe runs at once). conf and db must
 * outlive the store. 0 or WT_ENOMEM. */
int hub_ch_health_start(hub_ch_health *s, const hub_ch_conf *conf, const char *db, int interval_ms);
void hub_ch_health_stop(hub_ch_health *s);

/* 0 when ready, else WT_EUNAVAIL with a message naming the last error. */
int hub_ch_health_check(hub_ch_health *s, wt_err *err);
/* Tell the monitor that a request found ClickHouse unreachable. */
void hub_ch_health_mark_down(hub_ch_health *s, const char *why);
/* Copy of the feature flags (valid once ready). */
void hub_ch_health_features(hub_ch_health *s, hub_ch_features *out);
/* {"status":"up"|"down","version":..,"schema_version":..,"error":..,"since":..} */
json_t *hub_ch_health_status_json(hub_ch_health *s);

/* Test hook: sleep the milliseconds the environment variable env names
 * (0-600000; unset or out of range: no sleep). Used by tests to widen a
 * window (a job holding its lease, a slow debug-file open). */
void hub_test_delay(const char *env);

#endif
