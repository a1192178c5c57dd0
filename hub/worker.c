/*
 * worker.c — periodic jobs with a ClickHouse lease (see worker.h for the
 * lease protocol and its race window).
 */
#include "worker.h"
#include "clock.h"
#include "rng.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ch_format.h"
#include "hub.h"
#include "log.h"
#include "sha.h"
#include "stackagg.h"

typedef int (*job_fn)(hub_ctx *ctx, hub_ch *ch, int64_t now_s, json_t *summary, wt_err *err);

static const struct {
	const char *name;
	job_fn fn;
	int max_interval_s; /* runs at least this often (0: hub.worker_interval_s) */
} jobs[] = {
	{"retention", hub_retention_run, 0},
	{"archive", hub_archive_run, 0},
	/* rebuilds days left over from before the aggregates (stackagg.h);
	 * a no-op once they are complete */
	{"aggregates", hub_agg_backfill_run, 60},
};
#define NJOBS (sizeof(jobs) / sizeof(jobs[0]))

struct hub_worker {
	hub_ctx *ctx;
	hub_ch *ch;
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop, started;
};

static char instance[96];
static pthread_once_t instance_once = PTHREAD_ONCE_INIT;

static void instance_init(void)
{
	char host[64] = "hub";
	uint8_t rnd[4] = {0};
	char hex[9];

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	wt_random_bytes(rnd, sizeof(rnd));
	hub_hex(rnd, sizeof(rnd), hex);
	snprintf(instance, sizeof(instance), "%s-%d-%s", host, (int)getpid(), hex);
}

const char *hub_worker_instance(void)
{
	pthread_once(&instance_once, instance_init);
	return instance;
}

/* ---- lease ------------------------------------------------------------------------ */

typedef struct lease_row {
	int found;
	char holder[96];
	int64_t expires_ns, last_done_ns;
	uint64_t version;
} lease_row;

static int lease_cb(void *ctx, char **f, size_t n)
{
	lease_row *l = ctx;

	if (n < 4)
		return 0;
	l->found = 1;
	snprintf(l->holder, sizeof(l->holder), "%s", f[0]);
	l->expires_ns = strtoll(f[1], NULL, 10);
	l->last_done_ns = strtoll(f[2], NULL, 10);
	l->version = strtoull(f[3], NULL, 10);
	return 1;
}

static int lease_read(hub_ch *ch, const char *job, lease_row *l, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	memset(l, 0, sizeof(*l));
	wt_buf_puts(&sql, "SELECT holder, expires_ns, last_done_ns, version FROM worker_leases FINAL WHERE job = ");
	hub_sql_quote(&sql, job);
	wt_buf_puts(&sql, " ORDER BY version DESC LIMIT 1 FORMAT TabSeparated");
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	if (!rc)
		hub_tsv_each((char *)out.data, out.len, 4, lease_cb, l);
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

static int lease_write(hub_ch *ch, const char *job, const char *holder, int64_t expires_ns, int64_t last_done_ns,
		       uint64_t version, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "INSERT INTO worker_leases (job, holder, expires_ns, last_done_ns, version) VALUES (");
	hub_sql_quote(&sql, job);
	wt_buf_puts(&sql, ", ");
	hub_sql_quote(&sql, holder);
	wt_buf_printf(&sql, ", %lld, %lld, %llu)", (long long)expires_ns, (long long)last_done_ns,
		      (unsigned long long)version);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

/* Cluster mode: who won the claims on lease version base? The earliest
 * claim by the server's clock (seconds), ties by holder name. */
static int claim_winner(hub_ch *ch, const char *job, uint64_t base, char *winner, size_t cap, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, out = WT_BUF_INIT;
	int rc;

	wt_buf_puts(&sql, "SELECT holder FROM worker_lease_claims WHERE job = ");
	hub_sql_quote(&sql, job);
	wt_buf_printf(&sql, " AND base_version = %llu ORDER BY claim_time, holder LIMIT 1 FORMAT TabSeparated",
		      (unsigned long long)base);
	rc = hub_ch_query_buf(ch, &sql, &out, err);
	winner[0] = '\0';
	if (!rc) {
		size_t n = out.len;
		while (n && (out.data[n - 1] == '\n' || out.data[n - 1] == '\r'))
			n--;
		snprintf(winner, cap, "%.*s", (int)n, (const char *)out.data);
	}
	wt_buf_free(&sql);
	wt_buf_free(&out);
	return rc;
}

/* Cluster mode: claim the lease that replaces version base (worker.h). 0 =
 * this hub won. */
static int lease_claim(hub_ch *ch, const char *job, uint64_t base, wt_err *err)
{
	const char *me = hub_worker_instance();
	wt_buf sql = WT_BUF_INIT;
	char winner[96];
	int rc;

	wt_buf_puts(&sql, "INSERT INTO worker_lease_claims (job, base_version, holder) VALUES (");
	hub_sql_quote(&sql, job);
	wt_buf_printf(&sql, ", %llu, ", (unsigned long long)base);
	hub_sql_quote(&sql, me);
	wt_buf_puts(&sql, ")");
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	if (rc)
		return rc;
	wt_sleep_ms(HUB_LEASE_SETTLE_MS);
	if ((rc = claim_winner(ch, job, base, winner, sizeof(winner), err)))
		return rc;
	if (strcmp(winner, me))
		return wt_err_set(err, WT_EUNAVAIL, "job %s: lease taken by %s at the same time", job,
				  *winner ? winner : "?");
	return 0;
}

/* 0 = we hold the lease now (*last_done = previous run end). due_s > 0:
 * only when the last run ended at least due_s ago (periodic runs; checked
 * on the row read here, so a run another hub just finished is seen). */
static int lease_take(hub_ch *ch, const char *job, int64_t ttl_s, int64_t due_s, int64_t *last_done,
		      uint64_t *version, wt_err *err)
{
	const char *me = hub_worker_instance();
	int64_t now = wt_now_ns(CLOCK_REALTIME);
	lease_row l;
	uint64_t v;
	int rc;

	if ((rc = lease_read(ch, job, &l, err)))
		return rc;
	if (l.found && strcmp(l.holder, me) && l.expires_ns > now)
		return wt_err_set(err, WT_EUNAVAIL, "job %s is running on %s (lease until %lld s)", job, l.holder,
				  (long long)(l.expires_ns / 1000000000LL));
	if (due_s > 0 && l.found && l.last_done_ns + due_s * 1000000000LL > now)
		return wt_err_set(err, WT_EUNAVAIL, "job %s is not due (last run ended %lld s ago)", job,
				  (long long)((now - l.last_done_ns) / 1000000000LL));
	if (hub_ch_cluster(ch) && (rc = lease_claim(ch, job, l.version, err)))
		return rc;
	v = (uint64_t)now > l.version ? (uint64_t)now : l.version + 1;
	if ((rc = lease_write(ch, job, me, now + ttl_s * 1000000000LL, l.last_done_ns, v, err)))
		return rc;
	if ((rc = lease_read(ch, job, &l, err)))
		return rc;
	if (!l.found || strcmp(l.holder, me))
		return wt_err_set(err, WT_EUNAVAIL, "job %s: lease taken by %s at the same time", job,
				  l.found ? l.holder : "?");
	*last_done = l.last_done_ns;
	*version = l.version;
	return 0;
}

static void lease_release(hub_ch *ch, const char *job, uint64_t version)
{
	wt_err err = {0, ""};

	if (lease_write(ch, job, hub_worker_instance(), 0, wt_now_ns(CLOCK_REALTIME), version + 1, &err))
		wt_warn("msg=\"worker lease not released (expires by itself)\" job=%s error=\"%s\"", job, err.msg);
}

/* Heartbeat: while a job runs, a thread of its own (with its own ClickHouse
 * client) re-writes the lease every third of the TTL with a later expiry
 * and a higher version, so a short TTL is safe for long jobs and a hub that
 * dies mid-job frees the job within one TTL. */
typedef struct lease_beat {
	hub_ch *ch;
	const char *job;
	int64_t ttl_s, last_done_ns;
	uint64_t version; /* newest version written; under mu */
	int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
} lease_beat;

static void *beat_main(void *arg)
{
	lease_beat *b = arg;
	int64_t period_ms = b->ttl_s * 1000 / 3;

	pthread_mutex_lock(&b->mu);
	while (!b->stop) {
		struct timespec until;
		until = wt_deadline(CLOCK_REALTIME, period_ms);
		while (!b->stop && pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
			;
		if (b->stop)
			break;
		int64_t now = wt_now_ns(CLOCK_REALTIME);
		uint64_t v = (uint64_t)now > b->version ? (uint64_t)now : b->version + 1;
		wt_err err = {0, ""};
		pthread_mutex_unlock(&b->mu);
		int rc = lease_write(b->ch, b->job, hub_worker_instance(), now + b->ttl_s * 1000000000LL,
				     b->last_done_ns, v, &err);
		pthread_mutex_lock(&b->mu);
		if (rc)
			wt_warn("msg=\"worker lease not renewed\" job=%s error=\"%s\"", b->job, err.msg);
		else if (v > b->version)
			b->version = v;
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* 0 = heartbeat running; on failure the job runs without one (its lease
 * then simply expires after the TTL, as before renewals existed). */
static int beat_start(lease_beat *b, hub_ctx *ctx, const char *job, int64_t last_done_ns, uint64_t version)
{
	memset(b, 0, sizeof(*b));
	b->job = job;
	b->ttl_s = ctx->cfg.worker_lease_ttl_s;
	b->last_done_ns = last_done_ns;
	b->version = version;
	if (!(b->ch = hub_ch_new(&ctx->chconf)))
		return -1;
	pthread_mutex_init(&b->mu, NULL);
	pthread_cond_init(&b->cv, NULL);
	if (pthread_create(&b->th, NULL, beat_main, b)) {
		pthread_cond_destroy(&b->cv);
		pthread_mutex_destroy(&b->mu);
		hub_ch_free(b->ch);
		b->ch = NULL;
		return -1;
	}
	return 0;
}

/* Stops the heartbeat; returns the newest lease version written. */
static uint64_t beat_stop(lease_beat *b)
{
	uint64_t v = b->version;

	if (!b->ch)
		return v;
	pthread_mutex_lock(&b->mu);
	b->stop = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	pthread_join(b->th, NULL);
	v = b->version;
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	hub_ch_free(b->ch);
	b->ch = NULL;
	return v;
}

/* ---- jobs ------------------------------------------------------------------------- */

static void log_paths(hub_ctx *ctx);

static int run_job(hub_ctx *ctx, hub_ch *ch, const char *job, int64_t now_s, int64_t due_s, json_t **summary,
		   wt_err *err)
{
	size_t i;
	int64_t last_done = 0, t0;
	uint64_t version = 0;
	lease_beat beat = {0};
	json_t *s;
	int rc;

	*summary = NULL;
	for (i = 0; i < NJOBS; i++)
		if (job && !strcmp(job, jobs[i].name))
			break;
	if (i == NJOBS)
		return wt_err_set(err, WT_EINVAL, "job: expected retention, archive or aggregates");
	if ((rc = hub_ch_health_check(&ctx->store, err)))
		return rc;
	log_paths(ctx);
	if ((rc = lease_take(ch, job, ctx->cfg.worker_lease_ttl_s, due_s, &last_done, &version, err)))
		return rc;
	s = json_pack("{s:s, s:s, s:I}", "job", job, "holder", hub_worker_instance(), "now", (json_int_t)now_s);
	if (!s) {
		lease_release(ch, job, version);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	t0 = wt_now_ns(CLOCK_REALTIME);
	if (beat_start(&beat, ctx, job, last_done, version))
		wt_warn("msg=\"worker lease heartbeat not started; lease expires after its TTL\" job=%s", job);
	hub_test_delay("WT_TEST_JOB_DELAY_MS"); /* lease renewal and takeover tests */
	rc = jobs[i].fn(ctx, ch, now_s, s, err);
	json_object_set_new(s, "duration_ms", json_integer((wt_now_ns(CLOCK_REALTIME) - t0) / 1000000));
	version = beat_stop(&beat);
	lease_release(ch, job, version);
	if (rc) {
		json_decref(s);
		return rc;
	}
	*summary = s;
	return 0;
}

int hub_worker_run_job(hub_ctx *ctx, hub_ch *ch, const char *job, int64_t now_s, json_t **summary, wt_err *err)
{
	return run_job(ctx, ch, job, now_s, 0, summary, err);
}

static atomic_int paths_logged;

static void log_paths(hub_ctx *ctx)
{
	hub_ch_features f;

	if (atomic_exchange(&paths_logged, 1))
		return;
	hub_ch_health_features(&ctx->store, &f);
	if (f.ttl)
		wt_info("msg=\"retention path\" path=ttl clickhouse=%s detail=\"project retention by table TTL;"
			" per-type retention by the worker (ALTER TABLE ... DELETE)\"", f.version);
	else
		wt_info("msg=\"retention path\" path=worker clickhouse=%s detail=\"no TTL before 19.6: the worker"
			" drops whole-day partitions past every project's retention and deletes the rest with"
			" ALTER TABLE ... DELETE\"", f.version);
}

static int stopped_wait(hub_worker *w, int ms)
{
	struct timespec ts;
	int s;

	ts = wt_deadline(CLOCK_REALTIME, ms);
	pthread_mutex_lock(&w->mu);
	while (!w->stop)
		if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT)
			break;
	s = w->stop;
	pthread_mutex_unlock(&w->mu);
	return s;
}

static void *worker_main(void *arg)
{
	hub_worker *w = arg;
	hub_ctx *ctx = w->ctx;
	int logged = 0, interval = ctx->cfg.worker_interval_s;
	int check_ms = (interval < HUB_WORKER_CHECK_S ? interval : HUB_WORKER_CHECK_S) * 1000;

	for (;;) {
		if (atomic_load(&ctx->store.ready)) {
			size_t i;
			if (!logged) {
				log_paths(ctx);
				logged = 1;
			}
			for (i = 0; i < NJOBS; i++) {
				wt_err err = {0, ""};
				lease_row l;
				json_t *s = NULL;
				int64_t now = wt_now_ns(CLOCK_REALTIME);
				int every = jobs[i].max_interval_s && jobs[i].max_interval_s < interval
						    ? jobs[i].max_interval_s : interval;

				if (lease_read(w->ch, jobs[i].name, &l, &err))
					break;
				if (!l.found) {
					/* new database: the first run comes one interval from now
					 * (nothing can have expired yet; and a run racing the
					 * first uploads of a fresh install would be surprising) */
					lease_write(w->ch, jobs[i].name, "", 0, now, (uint64_t)now, &err);
					continue;
				}
				if (l.last_done_ns + (int64_t)every * 1000000000LL > now)
					continue;
				if (run_job(ctx, w->ch, jobs[i].name, now / 1000000000LL, every, &s, &err)) {
					/* another hub runs it, ran it, or won the claim */
					if (err.code != WT_EUNAVAIL)
						wt_warn("msg=\"worker job failed\" job=%s error=\"%s\"", jobs[i].name, err.msg);
					continue;
				}
				char *txt = json_dumps(s, JSON_COMPACT);
				wt_info("msg=\"worker job done\" job=%s summary=%s", jobs[i].name, txt ? txt : "{}");
				free(txt);
				json_decref(s);
			}
		}
		if (stopped_wait(w, logged ? check_ms : 500))
			break;
	}
	return NULL;
}

int hub_worker_start(hub_ctx *ctx, hub_worker **out, wt_err *err)
{
	hub_worker *w;

	*out = NULL;
	if (ctx->cfg.worker_interval_s <= 0) {
		wt_info("msg=\"worker off\" reason=\"hub.worker_interval_s = 0\"");
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	w->ctx = ctx;
	w->ch = hub_ch_new(&ctx->chconf);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (!w->ch || pthread_create(&w->thr, NULL, worker_main, w)) {
		hub_ch_free(w->ch);
		free(w);
		return wt_err_set(err, WT_ENOMEM, "cannot start the worker thread");
	}
	w->started = 1;
	*out = w;
	return 0;
}

void hub_worker_stop(hub_worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->thr, NULL);
	hub_ch_free(w->ch);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
}
