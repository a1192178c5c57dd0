/*
 * ch_health.c — ClickHouse health monitor: probe, detect version, migrate, and
 * flip the ready flag that request handlers consult (see ch_health.h).
 */
#include "ch_health.h"
#include "clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "server.h"

static hub_ch_health *the_store;

void hub_test_delay(const char *env)
{
	const char *d = getenv(env);
	long ms = d ? strtol(d, NULL, 10) : 0;

	if (ms > 0 && ms <= 600000)
		wt_sleep_ms(ms);
}

static void on_down_hook(void)
{
	if (the_store)
		hub_ch_health_mark_down(the_store, "request could not reach clickhouse");
}

static void set_state(hub_ch_health *s, int ready, const char *error)
{
	int was;

	pthread_mutex_lock(&s->mu);
	was = atomic_load(&s->ready);
	if (error)
		snprintf(s->last_error, sizeof(s->last_error), "%s", error);
	else
		s->last_error[0] = '\0';
	if (was != ready) {
		s->since_ns = wt_now_ns(CLOCK_REALTIME);
		atomic_fetch_add(&s->transitions, 1);
	}
	atomic_store(&s->ready, ready);
	pthread_mutex_unlock(&s->mu);
	if (was && !ready)
		wt_warn("msg=\"clickhouse down; queries and uploads answer 503 until it returns\" url=%s error=\"%s\"",
			s->conf->url, error ? error : "");
	else if (!was && ready)
		wt_info("msg=\"clickhouse ready\" url=%s version=%s schema_version=%d", s->conf->url,
			s->feat.version, hub_schema_version());
}

/* One probe: ping; if not ready yet, detect and migrate. */
static void probe(hub_ch_health *s, hub_ch *ch, int *logged_down)
{
	wt_err err = {0, ""};
	hub_ch_features f;

	if (hub_ch_ping(ch, &err)) {
		if (atomic_load(&s->ready) || !*logged_down) {
			set_state(s, 0, err.msg);
			if (!*logged_down && !atomic_load(&s->ready))
				wt_warn("msg=\"clickhouse unreachable\" url=%s error=\"%s\"", s->conf->url, err.msg);
			*logged_down = 1;
		}
		return;
	}
	if (atomic_load(&s->ready))
		return;
	if (hub_schema_detect(ch, &f, &err) || hub_schema_migrate(ch, s->db, &f, &err)) {
		set_state(s, 0, err.msg);
		wt_warn("msg=\"clickhouse not usable\" error=\"%s\"", err.msg);
		return;
	}
	pthread_mutex_lock(&s->mu);
	s->feat = f;
	pthread_mutex_unlock(&s->mu);
	*logged_down = 0;
	set_state(s, 1, NULL);
}

static void *monitor(void *arg)
{
	hub_ch_health *s = arg;
	hub_ch *ch = hub_ch_new(s->conf);
	int logged_down = 0;

	if (!ch) {
		wt_error("msg=\"clickhouse monitor: out of memory\"");
		return NULL;
	}
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		struct timespec until;
		pthread_mutex_unlock(&s->mu);
		probe(s, ch, &logged_down);
		hub_memory_trim_tick(); /* a periodic thread: the delayed trim of server.c */
		pthread_mutex_lock(&s->mu);
		if (s->stop)
			break;
		until = wt_deadline(CLOCK_REALTIME, s->interval_ms);
		while (!s->stop && !s->poke)
			if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT)
				break;
		s->poke = 0;
	}
	pthread_mutex_unlock(&s->mu);
	hub_ch_free(ch);
	return NULL;
}

int hub_ch_health_start(hub_ch_health *s, const hub_ch_conf *conf, const char *db, int interval_ms)
{
	memset(s, 0, sizeof(*s));
	s->conf = conf;
	s->db = db;
	s->interval_ms = interval_ms;
	snprintf(s->last_error, sizeof(s->last_error), "not probed yet");
	s->since_ns = wt_now_ns(CLOCK_REALTIME);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	the_store = s;
	hub_ch_set_down_hook(on_down_hook);
	if (pthread_create(&s->thr, NULL, monitor, s))
		return WT_ENOMEM;
	s->started = 1;
	return 0;
}

void hub_ch_health_stop(hub_ch_health *s)
{
	if (!s->started)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thr, NULL);
	s->started = 0;
	hub_ch_set_down_hook(NULL);
	the_store = NULL;
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

int hub_ch_health_check(hub_ch_health *s, wt_err *err)
{
	if (atomic_load(&s->ready))
		return 0;
	pthread_mutex_lock(&s->mu);
	wt_err_set(err, WT_EUNAVAIL, "clickhouse is unavailable: %s", s->last_error);
	pthread_mutex_unlock(&s->mu);
	return WT_EUNAVAIL;
}

void hub_ch_health_mark_down(hub_ch_health *s, const char *why)
{
	if (atomic_load(&s->ready))
		set_state(s, 0, why);
	pthread_mutex_lock(&s->mu);
	s->poke = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void hub_ch_health_features(hub_ch_health *s, hub_ch_features *out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->feat;
	pthread_mutex_unlock(&s->mu);
}

json_t *hub_ch_health_status_json(hub_ch_health *s)
{
	json_t *o;
	int ready = atomic_load(&s->ready);

	pthread_mutex_lock(&s->mu);
	o = json_pack("{s:s, s:s, s:i, s:s, s:I, s:b, s:b, s:b}",
		      "status", ready ? "up" : "down",
		      "version", s->feat.version,
		      "schema_version", hub_schema_version(),
		      "error", s->last_error,
		      "since_ns", (json_int_t)s->since_ns,
		      "ttl", s->feat.ttl, "low_cardinality", s->feat.low_cardinality,
		      "storage_policies", s->feat.storage_policies);
	if (o)
		json_object_set_new(o, "cluster", s->conf->cluster && *s->conf->cluster ? json_string(s->conf->cluster)
											 : json_null());
	pthread_mutex_unlock(&s->mu);
	return o;
}
