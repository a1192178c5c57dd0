/*
 * symbols.c — debug-file index, local copies, caches and debuginfod client
 * behind the query-time symbolizer (see symbols.h).
 */
#include "symbols.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "ch_format.h"
#include "fsdir.h"
#include "hindex.h"
#include "debuginfod.h"
#include "log.h"
#include "ch_health.h"
#include "symfile.h"

#define MAX_PROJECTS 64         /* indexes kept */
#define MAX_INDEX_FILES 100000  /* debug files read per project */
#define MAX_RESULTS 200000      /* cached frame expansions (then cleared) */
#define MISS_SLOTS 256          /* remembered debuginfod misses */
#define MISS_TTL_MS (5 * 60 * 1000)
#define PENDING_TTL_MS (30 * 60 * 1000) /* a queued fetch; cleared when done */
#define FETCH_QUEUE 256                 /* queued debuginfod fetches (more: asked later) */

typedef struct proj_index {
	char project[128];
	hub_debug_file *files; /* newest first */
	size_t n;
	int64_t loaded_ms;     /* 0 = reload */
	uint64_t hash, gen;
	uint64_t epoch;        /* +1 per invalidate: a load that started before
				* one must not count as fresh */
} proj_index;

/* An open debug file. Slots are chosen and counted under s->mu; the
 * download/open and the lookups run WITHOUT it (a 200 MB file fetched from
 * S3 must not stall every other query), lookups under the slot's own lk
 * (libdwfl handles are single-threaded). */
typedef struct open_file {
	char project[128];     /* "" = free slot */
	char build_id[WT_BUILD_ID_MAX + 1];
	hub_symfile *sf;       /* NULL while opening */
	uint64_t last_use;
	int refs;              /* lookups running on sf */
	int opening;           /* a thread is fetching/opening it */
	int doomed;            /* replaced or deleted: close when refs drop to 0 */
	pthread_mutex_t lk;
} open_file;

/* A cached expansion: s->res[id], found through s->ridx (common/hindex.h). */
typedef struct result {
	uint64_t h, gen;
	char *key;   /* project \0 frame */
	size_t klen;
	char *names; /* n NUL-terminated names */
	size_t nlen, n;
} result;

typedef struct fetch_job {
	char project[128];
	char build_id[WT_BUILD_ID_MAX + 1];
	char module[HUB_DEBUG_NAME_MAX];
} fetch_job;

typedef struct miss {
	char build_id[WT_BUILD_ID_MAX + 1];
	int64_t until_ms;
} miss;

struct hub_symbols {
	pthread_mutex_t mu;
	_Atomic uint64_t unavailable; /* debug files that could not be opened (hub_symbols_unavailable) */
	hub_objstore *os;
	char *cache_dir, *urls;
	size_t max_file_bytes;
	int dfd_timeout_ms, index_ttl_ms;
	proj_index proj[MAX_PROJECTS];
	open_file files[HUB_SYMBOLS_OPEN_FILES];
	pthread_cond_t file_cv; /* a slot finished opening or was released */
	uint64_t use_clock, gen_clock;
	result *res;     /* cached expansions, ids 0..nresults-1 */
	size_t nresults, res_cap;
	wt_hindex ridx;  /* (project, frame) → id in res */
	int inited;      /* locks and condition variables initialised */
	miss misses[MISS_SLOTS]; /* also "queued" markers (until = +PENDING_TTL_MS) */
	size_t miss_next;
	/* debuginfod fetches run on one background thread with its own
	 * ClickHouse client, so no query waits for a download */
	pthread_t fetcher;
	int fetcher_running, stopping;
	pthread_cond_t cv;
	fetch_job queue[FETCH_QUEUE];
	size_t qhead, qlen;
	hub_ch *fch;
};

int hub_build_id_valid(const char *b)
{
	size_t n = b ? strlen(b) : 0;

	return n >= 2 && n <= WT_BUILD_ID_MAX && strspn(b, "0123456789abcdef") == n;
}

static void *fetcher_main(void *arg);

int hub_symbols_new(const hub_symbols_conf *c, hub_objstore *os, const hub_ch_conf *chconf, hub_symbols **out,
		    wt_err *err)
{
	hub_symbols *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || !(s->cache_dir = strdup(c->cache_dir)) ||
	    !(s->urls = strdup(c->debuginfod_urls ? c->debuginfod_urls : ""))) {
		hub_symbols_free(s);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	s->os = os;
	s->max_file_bytes = c->max_file_bytes;
	s->dfd_timeout_ms = c->debuginfod_timeout_ms;
	s->index_ttl_ms = c->index_ttl_ms;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->file_cv, NULL);
	for (size_t i = 0; i < HUB_SYMBOLS_OPEN_FILES; i++)
		pthread_mutex_init(&s->files[i].lk, NULL);
	s->inited = 1;
	if (s->urls[0] && chconf) {
		if (!(s->fch = hub_ch_new(chconf))) {
			hub_symbols_free(s);
			return wt_err_set(err, WT_ENOMEM, "out of memory");
		}
		if (pthread_create(&s->fetcher, NULL, fetcher_main, s)) {
			hub_symbols_free(s);
			return wt_err_set(err, WT_EIO, "cannot start the debuginfod thread");
		}
		s->fetcher_running = 1;
	}
	*out = s;
	return 0;
}

static void results_clear(hub_symbols *s)
{
	for (size_t i = 0; i < s->nresults; i++) {
		free(s->res[i].key);
		free(s->res[i].names);
	}
	s->nresults = 0;
	wt_hindex_free(&s->ridx); /* grows again from its first size */
}

void hub_symbols_free(hub_symbols *s)
{
	if (!s)
		return;
	if (s->fetcher_running) {
		pthread_mutex_lock(&s->mu);
		s->stopping = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->fetcher, NULL); /* a download in flight ends by its timeout */
	}
	hub_ch_free(s->fch);
	for (size_t i = 0; i < MAX_PROJECTS; i++)
		free(s->proj[i].files);
	results_clear(s);
	free(s->res);
	if (s->inited) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		pthread_cond_destroy(&s->file_cv);
		for (size_t i = 0; i < HUB_SYMBOLS_OPEN_FILES; i++) {
			hub_symfile_close(s->files[i].sf);
			pthread_mutex_destroy(&s->files[i].lk);
		}
	}
	free(s->cache_dir);
	free(s->urls);
	free(s);
}

/* ---- the index in ClickHouse ----------------------------------------------------- */

typedef struct list_ctx {
	hub_debug_file *v;
	size_t n, cap;
	int oom;
} list_ctx;

static int list_row(void *ctx, char **f, size_t n)
{
	list_ctx *l = ctx;
	hub_debug_file *d;

	if (n < 6 || l->n >= MAX_INDEX_FILES)
		return 0;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 16;
		void *a = realloc(l->v, nc * sizeof(*l->v));

		if (!a) {
			l->oom = 1;
			return 1;
		}
		l->v = a;
		l->cap = nc;
	}
	d = &l->v[l->n++];
	memset(d, 0, sizeof(*d));
	snprintf(d->build_id, sizeof(d->build_id), "%s", f[0]);
	snprintf(d->file_name, sizeof(d->file_name), "%s", f[1]);
	d->size = strtoull(f[2], NULL, 10);
	snprintf(d->uploaded_by, sizeof(d->uploaded_by), "%s", f[3]);
	d->uploaded_ns = strtoull(f[4], NULL, 10);
	snprintf(d->source, sizeof(d->source), "%s", f[5]);
	return 0;
}

int hub_debug_files_list(hub_ch *ch, const char *project, const char *build_id, hub_debug_file **out,
			 size_t *n, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT, res = WT_BUF_INIT;
	list_ctx l = {0};
	int rc;

	*out = NULL;
	*n = 0;
	wt_buf_puts(&sql, "SELECT build_id, argMax(file_name, version), argMax(size, version),"
		    " argMax(uploaded_by, version), argMax(uploaded_ns, version) AS t, argMax(source, version),"
		    " argMax(deleted, version) AS d FROM debug_files_v1 WHERE project = ");
	hub_sql_quote(&sql, project);
	if (build_id) {
		wt_buf_puts(&sql, " AND build_id = ");
		hub_sql_quote(&sql, build_id);
	}
	wt_buf_printf(&sql, " GROUP BY build_id HAVING d = 0 ORDER BY t DESC, build_id LIMIT %d"
		      " FORMAT TabSeparated", MAX_INDEX_FILES);
	if ((rc = hub_ch_query_buf(ch, &sql, &res, err)))
		goto out;
	hub_tsv_each((char *)res.data, res.len, 7, list_row, &l);
	if (l.oom) {
		free(l.v);
		rc = wt_err_set(err, WT_ENOMEM, "out of memory listing debug files");
		goto out;
	}
	*out = l.v;
	*n = l.n;
out:
	wt_buf_free(&sql);
	wt_buf_free(&res);
	return rc;
}

static int index_insert(hub_ch *ch, const char *project, const char *bid, const char *name, uint64_t size,
			const char *by, const char *source, int deleted, wt_err *err)
{
	wt_buf sql = WT_BUF_INIT;
	uint64_t now = (uint64_t)wt_now_ns(CLOCK_REALTIME);
	int rc;

	wt_buf_puts(&sql, "INSERT INTO debug_files_v1 (project, build_id, file_name, size, uploaded_by,"
		    " uploaded_ns, source, deleted, version) VALUES (");
	hub_sql_quote(&sql, project);
	wt_buf_putc(&sql, ',');
	hub_sql_quote(&sql, bid);
	wt_buf_putc(&sql, ',');
	hub_sql_quote(&sql, name);
	wt_buf_printf(&sql, ",%" PRIu64 ",", size);
	hub_sql_quote(&sql, by);
	wt_buf_printf(&sql, ",%" PRIu64 ",", now);
	hub_sql_quote(&sql, source);
	wt_buf_printf(&sql, ",%d,%" PRIu64 ")", deleted ? 1 : 0, now);
	rc = hub_ch_query_buf(ch, &sql, NULL, err);
	wt_buf_free(&sql);
	return rc;
}

/* ---- caches (s->mu held) ------------------------------------------------------ */

static proj_index *index_slot(hub_symbols *s, const char *project)
{
	proj_index *oldest = &s->proj[0];

	for (size_t i = 0; i < MAX_PROJECTS; i++) {
		if (!strcmp(s->proj[i].project, project))
			return &s->proj[i];
		if (s->proj[i].loaded_ms < oldest->loaded_ms)
			oldest = &s->proj[i];
	}
	free(oldest->files);
	memset(oldest, 0, sizeof(*oldest));
	snprintf(oldest->project, sizeof(oldest->project), "%s", project);
	return oldest;
}

static void invalidate(hub_symbols *s, const char *project)
{
	for (size_t i = 0; i < MAX_PROJECTS; i++)
		if (!strcmp(s->proj[i].project, project)) {
			s->proj[i].loaded_ms = 0;
			s->proj[i].epoch++;
		}
}

/* Make the project's index fresh (s->mu held on entry and on return; the
 * ClickHouse read runs without it). *gen: the index generation after it. */
static int index_fresh(hub_symbols *s, hub_ch *ch, const char *project, uint64_t *gen, wt_err *err)
{
	proj_index *pi = index_slot(s, project);
	hub_debug_file *v;
	uint64_t epoch = pi->epoch, h;
	size_t n;
	int rc;

	if (pi->loaded_ms && wt_now_ms(CLOCK_MONOTONIC) - pi->loaded_ms < s->index_ttl_ms) {
		*gen = pi->gen;
		return 0;
	}
	pthread_mutex_unlock(&s->mu);
	rc = hub_debug_files_list(ch, project, NULL, &v, &n, err);
	pthread_mutex_lock(&s->mu);
	if (rc)
		return rc;
	/* the slot may have been reused or reloaded meanwhile: find it again */
	pi = index_slot(s, project);
	h = XXH3_64bits(v, n * sizeof(*v));
	free(pi->files);
	pi->files = v;
	pi->n = n;
	/* invalidated while reading: use it for this call, read again next */
	pi->loaded_ms = pi->epoch == epoch ? wt_now_ms(CLOCK_MONOTONIC) : 0;
	if (!pi->gen || h != pi->hash) {
		pi->hash = h;
		pi->gen = ++s->gen_clock;
	}
	*gen = pi->gen;
	return 0;
}

uint64_t hub_symbols_unavailable(hub_symbols *s)
{
	return s ? atomic_load(&s->unavailable) : 0;
}

int hub_symbols_index_hash(hub_symbols *s, hub_ch *ch, const char *project, uint64_t *hash, wt_err *err)
{
	uint64_t gen;
	int rc;

	*hash = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	if (!(rc = index_fresh(s, ch, project, &gen, err)))
		*hash = index_slot(s, project)->hash ^ gen;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static void cache_path(const hub_symbols *s, const char *project, const char *bid, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s/%s", s->cache_dir, project, bid);
}

/* A local copy of the debug file (from the object store when missing). */
static int local_copy(hub_symbols *s, const char *project, const char *bid, char *path, size_t cap,
		      wt_err *err)
{
	char key[400], dir[PATH_MAX], tmp[PATH_MAX + 8];
	wt_buf data = WT_BUF_INIT;
	struct stat st;
	int fd = -1, rc;

	cache_path(s, project, bid, path, cap);
	if (!stat(path, &st))
		return 0;
	snprintf(key, sizeof(key), "debuginfo/%s/%s", project, bid);
	if ((rc = hub_objstore_get(s->os, key, s->max_file_bytes, &data, err)))
		goto out;
	snprintf(dir, sizeof(dir), "%s/%s", s->cache_dir, project);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (wt_mkdir_p(dir, 0700, NULL) || (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0 ||
	    write(fd, data.data, data.len) != (ssize_t)data.len || close(fd) || rename(tmp, path)) {
		rc = wt_err_set(err, WT_EIO, "debug file cache %s: %s", path, strerror(errno));
		if (fd >= 0)
			unlink(tmp);
	}
out:
	wt_buf_free(&data);
	return rc;
}

static void slot_clear(open_file *f)
{
	hub_symfile_close(f->sf);
	f->sf = NULL;
	f->project[0] = f->build_id[0] = '\0';
	f->last_use = 0;
	f->refs = f->opening = f->doomed = 0;
}

/* The open debug file (project, bid) with a reference taken, opening it
 * into the least recently used free slot when needed (s->mu held on entry
 * and return; released while fetching and opening). NULL when the file
 * cannot be had now (logged; the frame stays as stored). */
static open_file *file_acquire(hub_symbols *s, const char *project, const char *bid)
{
	char path[PATH_MAX];
	open_file *lru;
	hub_symfile *sf = NULL;
	wt_err err;
	int rc;

	for (;;) {
		open_file *hit = NULL;

		lru = NULL;
		for (size_t i = 0; i < HUB_SYMBOLS_OPEN_FILES; i++) {
			open_file *f = &s->files[i];

			if (f->project[0] && !f->doomed && !strcmp(f->project, project) && !strcmp(f->build_id, bid))
				hit = f;
			else if (!f->refs && !f->opening && (!lru || f->last_use < lru->last_use))
				lru = f;
		}
		if (hit && !hit->opening) {
			hit->refs++;
			hit->last_use = ++s->use_clock;
			return hit;
		}
		if (!hit && lru)
			break;
		/* being opened by another query, or every slot in use */
		pthread_cond_wait(&s->file_cv, &s->mu);
	}
	slot_clear(lru);
	snprintf(lru->project, sizeof(lru->project), "%s", project);
	snprintf(lru->build_id, sizeof(lru->build_id), "%s", bid);
	lru->opening = 1;
	lru->last_use = ++s->use_clock;
	pthread_mutex_unlock(&s->mu);
	if ((rc = local_copy(s, project, bid, path, sizeof(path), &err)))
		wt_warn("msg=\"debug file unavailable\" project=%s build_id=%s error=\"%s\"", project, bid, err.msg);
	else if ((rc = hub_symfile_open(path, &sf, &err)))
		wt_warn("msg=\"debug file unreadable\" project=%s build_id=%s error=\"%s\"", project, bid, err.msg);
	hub_test_delay("WT_TEST_SYMFILE_OPEN_DELAY_MS");
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->file_cv);
	if (rc || lru->doomed) {
		hub_symfile_close(sf);
		slot_clear(lru);
		return NULL;
	}
	lru->sf = sf;
	lru->opening = 0;
	lru->refs = 1;
	return lru;
}

/* Drop the reference file_acquire() took (s->mu held). */
static void file_release(hub_symbols *s, open_file *f)
{
	if (--f->refs == 0) {
		if (f->doomed)
			slot_clear(f);
		pthread_cond_broadcast(&s->file_cv);
	}
}

/* The file changed or went (s->mu held): close it now, or when its last
 * lookup ends; remove the local copy. */
static void file_forget(hub_symbols *s, const char *project, const char *bid)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < HUB_SYMBOLS_OPEN_FILES; i++) {
		open_file *f = &s->files[i];

		if (!f->project[0] || strcmp(f->project, project) || strcmp(f->build_id, bid))
			continue;
		if (f->refs || f->opening)
			f->doomed = 1;
		else
			slot_clear(f);
	}
	cache_path(s, project, bid, path, sizeof(path));
	unlink(path);
}

/* ---- storing and deleting ---------------------------------------------------- */

int hub_debug_file_store(hub_symbols *s, hub_ch *ch, const char *project, const char *bid,
			 const char *name, const void *data, size_t len, const char *by,
			 const char *source, wt_err *err)
{
	char key[400];
	int rc;

	snprintf(key, sizeof(key), "debuginfo/%s/%s", project, bid);
	if ((rc = hub_objstore_put(s->os, key, data, len, err)) ||
	    (rc = index_insert(ch, project, bid, name, len, by, source, 0, err)))
		return rc;
	pthread_mutex_lock(&s->mu);
	file_forget(s, project, bid);
	invalidate(s, project);
	pthread_mutex_unlock(&s->mu);
	wt_info("msg=\"debug file stored\" project=%s build_id=%s name=\"%s\" size=%zu source=%s", project, bid,
		name, len, source);
	return 0;
}

int hub_debug_file_delete(hub_symbols *s, hub_ch *ch, const char *project, const char *bid, const char *by,
			  wt_err *err)
{
	char key[400];
	int rc;

	snprintf(key, sizeof(key), "debuginfo/%s/%s", project, bid);
	if ((rc = index_insert(ch, project, bid, "", 0, by, "delete", 1, err)) ||
	    (rc = hub_objstore_delete(s->os, key, err)))
		return rc;
	pthread_mutex_lock(&s->mu);
	file_forget(s, project, bid);
	invalidate(s, project);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

/* ---- debuginfod (debuginfod.c does the HTTP) ------------------------------- */

static int missed(hub_symbols *s, const char *bid)
{
	int64_t t = wt_now_ms(CLOCK_MONOTONIC);

	for (size_t i = 0; i < MISS_SLOTS; i++)
		if (s->misses[i].until_ms > t && !strcmp(s->misses[i].build_id, bid))
			return 1;
	return 0;
}

/* Fetch bid from the configured servers and store it; runs on the fetcher
 * thread WITHOUT s->mu (it reads only fields fixed at creation). 1 = stored. */
static int debuginfod_fetch(hub_symbols *s, hub_ch *ch, const char *project, const char *bid,
			    const char *module)
{
	wt_buf data = WT_BUF_INIT;
	char key[400];
	wt_err err;
	int stored = 0;

	if (hub_debuginfod_get(s->urls, bid, s->max_file_bytes, s->dfd_timeout_ms, &data, &err)) {
		wt_info("msg=\"debuginfod: not found\" build_id=%s detail=\"%s\"", bid, err.msg);
		goto out;
	}
	snprintf(key, sizeof(key), "debuginfo/%s/%s", project, bid);
	if (hub_objstore_put(s->os, key, data.data, data.len, &err) ||
	    index_insert(ch, project, bid, module, data.len, "debuginfod", "debuginfod", 0, &err))
		wt_warn("msg=\"debuginfod file not stored\" build_id=%s error=\"%s\"", bid, err.msg);
	else
		stored = 1;
out:
	wt_buf_free(&data);
	return stored;
}

/* Mark bid (s->mu held): not asked again before until_ms. */
static void mark(hub_symbols *s, const char *bid, int64_t until_ms)
{
	for (size_t i = 0; i < MISS_SLOTS; i++)
		if (!strcmp(s->misses[i].build_id, bid)) {
			s->misses[i].until_ms = until_ms;
			return;
		}
	miss *m = &s->misses[s->miss_next++ % MISS_SLOTS];
	snprintf(m->build_id, sizeof(m->build_id), "%s", bid);
	m->until_ms = until_ms;
}

/* Queue a fetch (s->mu held); a full queue leaves it for a later query. */
static void enqueue(hub_symbols *s, const char *project, const char *bid, const char *module, size_t mlen)
{
	fetch_job *j;

	if (!s->fetcher_running || s->qlen == FETCH_QUEUE)
		return;
	j = &s->queue[(s->qhead + s->qlen++) % FETCH_QUEUE];
	snprintf(j->project, sizeof(j->project), "%s", project);
	snprintf(j->build_id, sizeof(j->build_id), "%s", bid);
	snprintf(j->module, sizeof(j->module), "%.*s", (int)(mlen < sizeof(j->module) ? mlen : sizeof(j->module) - 1),
		 module);
	mark(s, bid, wt_now_ms(CLOCK_MONOTONIC) + PENDING_TTL_MS);
	pthread_cond_signal(&s->cv);
}

static void *fetcher_main(void *arg)
{
	hub_symbols *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		fetch_job j;
		int ok;

		while (!s->stopping && !s->qlen)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stopping)
			break;
		j = s->queue[s->qhead];
		s->qhead = (s->qhead + 1) % FETCH_QUEUE;
		s->qlen--;
		pthread_mutex_unlock(&s->mu);
		ok = debuginfod_fetch(s, s->fch, j.project, j.build_id, j.module);
		pthread_mutex_lock(&s->mu);
		if (ok) {
			mark(s, j.build_id, 0);
			invalidate(s, j.project);
		} else {
			mark(s, j.build_id, wt_now_ms(CLOCK_MONOTONIC) + MISS_TTL_MS);
		}
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- expansion -------------------------------------------------------------- */

static const hub_debug_file *match(const proj_index *pi, const wt_symref *r)
{
	for (size_t i = 0; i < pi->n; i++) { /* newest first */
		const hub_debug_file *d = &pi->files[i];
		size_t fl = strlen(d->file_name);

		if (r->build_id) {
			if (strlen(d->build_id) == r->build_id_len &&
			    !strncasecmp(d->build_id, r->build_id, r->build_id_len))
				return d;
			continue;
		}
		if ((fl == r->module_len || (fl == r->module_len + 6 && !strcmp(d->file_name + fl - 6, ".debug"))) &&
		    !memcmp(d->file_name, r->module, r->module_len))
			return d;
	}
	return NULL;
}

static int render(hub_symfile *sf, uint64_t off, wt_buf *out, size_t *n)
{
	hub_symframe fr[HUB_SYMFRAMES_MAX];
	size_t k = hub_symfile_lookup(sf, off, fr, HUB_SYMFRAMES_MAX);

	*n = k;
	for (size_t i = 0; i < k; i++) {
		const char *b = strrchr(fr[i].file, '/');

		if (fr[i].line)
			wt_buf_printf(out, "%s (%s:%d)", fr[i].name, b ? b + 1 : fr[i].file, fr[i].line);
		else
			wt_buf_puts(out, fr[i].name);
		wt_buf_putc(out, '\0');
	}
	return out->oom ? WT_ENOMEM : 0;
}

/* Hash of a result key (project, frame). */
static uint64_t result_hash(const char *project, size_t plen, const char *frame, size_t len)
{
	return XXH3_64bits(frame, len) ^ XXH3_64bits(project, plen);
}

/* A result key being looked up. */
typedef struct result_key {
	const char *project, *frame;
	size_t plen, len;
} result_key;

static int result_eq(const void *ctx, uint32_t id, const void *key)
{
	const result *r = &((const hub_symbols *)ctx)->res[id];
	const result_key *k = key;

	return r->klen == k->plen + 1 + k->len && !memcmp(r->key, k->project, k->plen) &&
	       !memcmp(r->key + k->plen + 1, k->frame, k->len);
}

/* 1 and *id when (project, frame) is cached, 0 when not (*slot: where to
 * put it), WT_ENOMEM. */
static int result_find(hub_symbols *s, const result_key *k, uint64_t h, uint32_t *id, size_t *slot)
{
	return wt_hindex_lookup(&s->ridx, h, k, result_eq, s, id, slot);
}

/* Remember the expansion names[0..nlen) (n names; 0 = "nothing") of frame
 * (key hash h, result_hash) for index generation gen (s->mu held). Caching is optional: out of
 * memory just skips it. */
static void result_put(hub_symbols *s, const char *project, size_t plen, const char *frame, size_t len,
		       uint64_t h, uint64_t gen, const uint8_t *names, size_t nlen, size_t n)
{
	result_key k = {project, frame, plen, len};
	size_t klen = plen + 1 + len, slot;
	uint32_t id;
	int found = result_find(s, &k, h, &id, &slot);
	result *r;

	if (found < 0)
		return;
	if (!found && s->nresults >= MAX_RESULTS) {
		results_clear(s);
		if (result_find(s, &k, h, &id, &slot) < 0)
			return;
	}
	if (!found) {
		char *key;

		if (s->nresults == s->res_cap) {
			size_t nc = s->res_cap ? s->res_cap * 2 : 1024;
			result *nr = realloc(s->res, nc * sizeof(*nr));

			if (!nr)
				return;
			s->res = nr;
			s->res_cap = nc;
		}
		if (!(key = malloc(klen)))
			return;
		id = (uint32_t)s->nresults++;
		r = &s->res[id];
		memset(r, 0, sizeof(*r));
		r->key = key;
		memcpy(r->key, project, plen + 1);
		memcpy(r->key + plen + 1, frame, len);
		r->klen = klen;
		r->h = h;
		wt_hindex_put(&s->ridx, slot, h, id);
	}
	r = &s->res[id];
	free(r->names);
	r->names = NULL;
	r->nlen = r->n = 0;
	r->gen = gen;
	if (n && (r->names = malloc(nlen))) {
		memcpy(r->names, names, nlen);
		r->nlen = nlen;
		r->n = n;
	}
}

/* The current generation of project's index, 0 when it has none (s->mu held). */
static uint64_t index_gen(const hub_symbols *s, const char *project)
{
	for (size_t i = 0; i < MAX_PROJECTS; i++)
		if (!strcmp(s->proj[i].project, project))
			return s->proj[i].gen;
	return 0;
}

int hub_symbols_expand(hub_symbols *s, hub_ch *ch, const char *project, const char *frame, size_t len,
		       wt_buf *names, size_t *n, wt_err *err)
{
	size_t plen, start = names->len;
	uint64_t h;
	const hub_debug_file *d;
	proj_index *pi;
	result *r;
	wt_symref ref;
	open_file *f;
	char bid[WT_BUILD_ID_MAX + 1];
	uint64_t gen;
	int rc;

	*n = 0;
	if (!s || !wt_symref_parse(frame, len, &ref))
		return 0; /* the common case: a function name, no lock taken */
	plen = strlen(project);
	h = result_hash(project, plen, frame, len);
	pthread_mutex_lock(&s->mu);
	if ((rc = index_fresh(s, ch, project, &gen, err)))
		goto out;
	{
		result_key k = {project, frame, plen, len};
		uint32_t id;
		size_t slot;
		int found = result_find(s, &k, h, &id, &slot);

		if (found < 0) {
			rc = wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
			goto out;
		}
		r = found ? &s->res[id] : NULL;
	}
	if (r && r->gen == gen) {
		if (wt_buf_append(names, r->names, r->nlen))
			rc = wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
		else
			*n = r->n;
		goto out;
	}
	pi = index_slot(s, project);
	d = match(pi, &ref);
	if (!d) {
		if (ref.build_id && s->urls[0]) {
			snprintf(bid, sizeof(bid), "%.*s", (int)ref.build_id_len, ref.build_id);
			for (char *c = bid; *c; c++)
				*c = (char)(*c >= 'A' && *c <= 'F' ? *c + 32 : *c);
			/* fetched in the background: this query shows
			 * module+0xOFF, one after the download names */
			if (hub_build_id_valid(bid) && !missed(s, bid))
				enqueue(s, project, bid, ref.module, ref.module_len);
		}
		result_put(s, project, plen, frame, len, h, gen, NULL, 0, 0); /* "nothing", for this generation */
		goto out;
	}
	snprintf(bid, sizeof(bid), "%s", d->build_id);
	if (!(f = file_acquire(s, project, bid))) {
		atomic_fetch_add(&s->unavailable, 1);
		goto out; /* unavailable now: try again next time, nothing cached */
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&f->lk);
	rc = render(f->sf, ref.offset, names, n);
	pthread_mutex_unlock(&f->lk);
	pthread_mutex_lock(&s->mu);
	file_release(s, f);
	if (rc) {
		*n = 0;
		rc = wt_err_set(err, rc, "out of memory symbolizing");
	} else if (index_gen(s, project) == gen) {
		/* not cached when the index changed meanwhile (an upload or a
		 * delete): the next query looks again */
		result_put(s, project, plen, frame, len, h, gen, names->data + start, names->len - start, *n);
	}
out:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

size_t hub_symbols_strip_line(const char *name, size_t n)
{
	size_t i;

	if (n < 6 || name[n - 1] != ')')
		return n;
	i = n - 1;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == n - 1 || i < 2 || name[i - 1] != ':')
		return n; /* no digits, or no colon before them */
	while (i > 0 && name[i - 1] != '(' && name[i - 1] != ')')
		i--;
	if (i < 2 || name[i - 1] != '(' || name[i - 2] != ' ')
		return n;
	return i - 2;
}

int hub_symbols_function(hub_symbols *s, hub_ch *ch, const char *project, const char *frame, size_t len,
			 wt_buf *out, int *named, wt_err *err)
{
	size_t n = 0;
	int rc;

	wt_buf_reset(out);
	*named = 0;
	if ((rc = hub_symbols_expand(s, ch, project, frame, len, out, &n, err)))
		return rc;
	if (out->oom)
		return wt_err_set(err, WT_ENOMEM, "out of memory symbolizing");
	if (n) {
		/* names are NUL-terminated, outermost first: keep the last */
		const char *last = (const char *)out->data, *end = last + out->len - 1;
		for (const char *c = last; c < end; c++)
			if (!*c)
				last = c + 1;
		size_t l = hub_symbols_strip_line(last, strlen(last));
		memmove(out->data, last, l);
		out->len = l;
		*named = 1;
	} else {
		wt_buf_append(out, frame, wt_symref_display_len(frame, len));
	}
	wt_buf_putc(out, '\0');
	out->len--;
	return out->oom ? wt_err_set(err, WT_ENOMEM, "out of memory symbolizing") : 0;
}
