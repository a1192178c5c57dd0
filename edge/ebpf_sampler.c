/*
 * ebpf_sampler.c — the eBPF sampler thread (see ebpf.h): live
 * configuration, process discovery, loading and unloading the programs,
 * the flush timer, and its /metrics. What a flush does (drain → symbolize
 * → one wt_profile per service → ingest pipeline) is in ebpf_build.c.
 */
#include "ebpf_sampler_int.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "clock.h"
#include "log.h"
#include "prom.h"

#define TICK_MS 100
#define DISCOVER_NS (NS_PER_S)
#define DISCOVER_POLL_MS 200 /* longest wait for new processes (stop, unload) */
#define MAX_ELF_FILES 512
#define MAX_PY_CODES 65536 /* code objects cached (names, files, line tables) */

/* ---- config copies ------------------------------------------------------- */

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* deep copy of n service rules into *dst (*dn counts those copied) */
static int service_rules_copy(edge_service_rule **dst, size_t *dn, const edge_service_rule *src, size_t n)
{
	*dst = NULL;
	*dn = 0;
	if (!n)
		return 0;
	if (!(*dst = calloc(n, sizeof(**dst))))
		return WT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		memcpy((*dst)[i].on, src[i].on, sizeof(src[i].on));
		(*dst)[i].glob = dup0(src[i].glob);
		*dn = i + 1;
		if (!(*dst)[i].glob)
			return WT_ENOMEM;
	}
	return 0;
}

static int cfg_copy(edge_ebpf_cfg *dst, const edge_ebpf_cfg *src)
{
	*dst = *src;
	dst->rules = NULL;
	dst->nrules = 0;
	dst->svc_rules = NULL;
	dst->nsvc_rules = 0;
	/* nothing of src's left in dst before a copy can fail (the caller
	 * frees dst then) */
	dst->unwind_rules = NULL;
	dst->n_unwind_rules = 0;
	if (service_rules_copy(&dst->svc_rules, &dst->nsvc_rules, src->svc_rules, src->nsvc_rules))
		return WT_ENOMEM;
	if (edge_unwind_rules_copy(&dst->unwind_rules, src->unwind_rules, src->n_unwind_rules))
		return WT_ENOMEM;
	dst->n_unwind_rules = src->n_unwind_rules;
	if (!src->nrules)
		return 0;
	dst->rules = calloc(src->nrules, sizeof(*dst->rules));
	if (!dst->rules)
		return WT_ENOMEM;
	for (size_t i = 0; i < src->nrules; i++) {
		dst->rules[i].comm = dup0(src->rules[i].comm);
		dst->rules[i].cgroup = dup0(src->rules[i].cgroup);
		dst->rules[i].container = dup0(src->rules[i].container);
		dst->rules[i].service = dup0(src->rules[i].service);
		dst->nrules = i + 1;
	}
	return 0;
}

int edge_ebpf_py_on(edge_ebpf *e, const char *service)
{
	pthread_mutex_lock(&e->pymu);
	int on = edge_ebpf_cfg_python(&e->pycfg, service);
	pthread_mutex_unlock(&e->pymu);
	return on;
}

void edge_ebpf_py_check(edge_ebpf *e, edge_proc *pr)
{
	uint64_t ep = atomic_load(&e->py_epoch);
	if (!e->cpu || !e->py || pr->state != EDGE_PROC_LIVE || atomic_exchange(&pr->py_epoch, ep) == ep)
		return;
	int fd = edge_ebpf_cpu_py_fd(e->cpu);
	const edge_proc_map *m = NULL;
	if (edge_ebpf_py_on(e, pr->service))
		for (size_t i = 0; i < pr->nmaps; i++)
			if (edge_py_candidate(pr->maps[i].path) && (!m || strstr(pr->maps[i].path, "/libpython")))
				m = &pr->maps[i]; /* an embedding program's libpython wins over its own name */
	edge_py_detect(e->py, "/proc", pr->tgid, m ? m->path : NULL, m ? m->start : 0, m ? m->pgoff : 0, fd);
}

/* A Python stack the program saw for the first time in this generation:
 * its code objects are read now, while the process runs. */
static void py_new(void *arg, uint32_t tgid, const uint64_t *slots, size_t n)
{
	edge_ebpf *e = arg;
	edge_py_resolve(e->py, tgid, slots, n);
}

static void seen(void *arg, const struct wt_proc_event *ev)
{
	edge_ebpf *e = arg;
	char comm[WT_COMM_LEN + 1];
	memcpy(comm, ev->comm, WT_COMM_LEN);
	comm[WT_COMM_LEN] = '\0';
	/* announced: the time of its first sample; found by a scan of the
	 * counts: no time, the start of the oldest generation it can be in */
	uint64_t at = ev->ts_ns ? ev->ts_ns : (uint64_t)atomic_load(&e->drained_since_ns);
	edge_proc *pr = edge_procs_get_at(e->procs, ev->tgid, ev->image, ev->cgroup_id, comm, ev->pid == ev->tgid, at);
	if (pr)
		edge_ebpf_py_check(e, pr);
	/* tables at capture: the process's next samples are unwound with them */
	if (pr && e->cpu)
		edge_ebpf_unwind_give(e, pr);
	if (pr && e->lock && edge_ebpf_cfg_lock(&e->cur, pr->service))
		edge_ebpf_lock_skips(e, pr); /* a musl process: counted when met */
	if (pr && e->alloc) /* its allocations sampled as its service says (its libc probed) */
		edge_ebpf_alloc_proc(e->alloc, pr, edge_ebpf_cfg_alloc(&e->cur, pr->service));
}

/* the policy changed: every process's allocations as its service says */
static void alloc_each(void *arg, edge_proc *pr)
{
	edge_ebpf *e = arg;
	if (!pr->superseded)
		edge_ebpf_alloc_proc(e->alloc, pr, edge_ebpf_cfg_alloc(&e->cur, pr->service));
}

/* does rule r's match hold for process pr (service, container, host)? */
static int unwind_rule_matches(const edge_ebpf *e, const edge_unwind_rule *r, const edge_proc *pr)
{
	if (r->service && (!pr->service || fnmatch(r->service, pr->service, 0) != 0))
		return 0;
	for (size_t i = 0; i < r->nlabels; i++) {
		const char *v = !strcmp(r->label_keys[i], "container") ? pr->container
				: !strcmp(r->label_keys[i], "host")    ? e->host
								       : NULL;
		if (!v || strcmp(v, r->label_vals[i]))
			return 0;
	}
	return 1;
}

/* The unwinding mode of process pr: the first policy service rule that
 * matches it decides, else the policy's / local ebpf.unwind. Called with
 * pmu held or on the sampler thread (both keep e->cur still). */
int edge_ebpf_unwind_mode(const edge_ebpf *e, const edge_proc *pr)
{
	for (size_t i = 0; i < e->cur.n_unwind_rules; i++)
		if (unwind_rule_matches(e, &e->cur.unwind_rules[i], pr))
			return e->cur.unwind_rules[i].unwind >= 0 ? e->cur.unwind_rules[i].unwind : e->cur.unwind;
	return e->cur.unwind;
}

static void regive(void *arg, edge_proc *pr)
{
	edge_ebpf *e = arg;
	/* an image before an exec would overwrite the tgid's current entry */
	if (e->cpu && !pr->superseded)
		edge_ebpf_unwind_give(e, pr);
}

/* the same unwinding modes for every process? */
static int same_unwind(const edge_ebpf_cfg *a, const edge_ebpf_cfg *b)
{
	if (a->unwind != b->unwind || a->n_unwind_rules != b->n_unwind_rules)
		return 0;
	for (size_t i = 0; i < a->n_unwind_rules; i++) {
		const edge_unwind_rule *x = &a->unwind_rules[i], *y = &b->unwind_rules[i];
		if (x->unwind != y->unwind || !!x->service != !!y->service ||
		    (x->service && strcmp(x->service, y->service)) || x->nlabels != y->nlabels)
			return 0;
		for (size_t k = 0; k < x->nlabels; k++)
			if (strcmp(x->label_keys[k], y->label_keys[k]) || strcmp(x->label_vals[k], y->label_vals[k]))
				return 0;
	}
	return 1;
}

/* An off-CPU key's image: processes the on-CPU program announced in the
 * meantime go first (the first scan after a start captures every process
 * on the machine, which takes a while; a short-lived process waiting
 * behind it would be gone). */
static void seen_scan(void *arg, const struct wt_proc_event *ev)
{
	edge_ebpf *e = arg;
	if (e->cpu)
		edge_ebpf_cpu_consume_procs(e->cpu, seen, e);
	seen(arg, ev);
}

/* The discovery thread holds pmu while it polls and captures, and would
 * take it again at once: the sampler thread (load, unload) announces that
 * it waits, and discovery lets it through. */
static void pmu_lock_sampler(edge_ebpf *e)
{
	atomic_fetch_add(&e->pmu_wanted, 1);
	pthread_mutex_lock(&e->pmu);
	atomic_fetch_sub(&e->pmu_wanted, 1);
}

/* Discovery runs on its own thread so that a slow flush (many new
 * binaries to parse, a loaded machine) does not delay capturing the
 * mappings of processes that are about to exit. The on-CPU program
 * announces each new process image (wt_new_procs): the thread sleeps in
 * the ring buffer's poll and captures it within moments of its first
 * sample. Off-CPU keys are scanned every second (batched reads). */
static void *discover_run(void *arg)
{
	edge_ebpf *e = arg;
	int64_t next_scan = 0;
	for (;;) {
		pthread_mutex_lock(&e->mu);
		int stop = e->stop;
		pthread_mutex_unlock(&e->mu);
		if (stop)
			break;
		pthread_mutex_lock(&e->pmu);
		int have = e->cpu != NULL;
		if (e->cpu)
			edge_ebpf_cpu_poll_procs(e->cpu, DISCOVER_POLL_MS, seen, e);
		if (e->off && wt_now_ns(CLOCK_MONOTONIC) >= next_scan) {
			edge_ebpf_off_scan(e->off, seen_scan, e);
			next_scan = wt_now_ns(CLOCK_MONOTONIC) + DISCOVER_NS;
		}
		pthread_mutex_unlock(&e->pmu);
		while (atomic_load(&e->pmu_wanted) > 0) {
			struct timespec pause = {0, 1000000};
			nanosleep(&pause, NULL);
		}
		if (have)
			continue;
		struct timespec ts = wt_deadline(CLOCK_REALTIME, DISCOVER_NS / 1000000);
		pthread_mutex_lock(&e->mu);
		if (!e->stop)
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		pthread_mutex_unlock(&e->mu);
	}
	return NULL;
}

/* ---- load / unload / live changes ----------------------------------------------- */

static void unload(edge_ebpf *e)
{
	pmu_lock_sampler(e);
	edge_ebpf_cpu_close(e->cpu);
	edge_ebpf_off_close(e->off);
	edge_ebpf_lock_close(e->lock);
	edge_ebpf_alloc_close(e->alloc);
	e->cpu = NULL;
	e->off = NULL;
	e->lock = NULL;
	e->alloc = NULL;
	/* files captured since the last flush would stay open until the next
	 * lookup, which a stopped sampler never makes */
	edge_elf_cache_parse_pending(e->elfs);
	edge_procs_close_files(e->procs); /* JIT perf maps' pins and open maps */
	pthread_mutex_unlock(&e->pmu);
	atomic_store(&e->enabled, 0);
	atomic_store(&e->offcpu_on, 0);
	atomic_store(&e->lock_on, 0);
	atomic_store(&e->alloc_on, 0);
	atomic_store(&e->frequency, 0);
}

static void load(edge_ebpf *e)
{
	wt_err err = {0};
	if (!e->ksyms && edge_ksyms_load("/proc/kallsyms", &e->ksyms, &err))
		wt_warn("msg=\"kernel frames stay unsymbolized\" error=\"%s\"", err.msg);
	memset(&err, 0, sizeof(err));
	pmu_lock_sampler(e);
	char cache_dir[4200];
	snprintf(cache_dir, sizeof(cache_dir), "%s/unwind", e->cfg->data_dir);
	int rc = edge_ebpf_cpu_open(&e->cur, cache_dir, &e->ctr[EDGE_EBPF_CPU], &e->cpu, &err) ||
		 (e->cur.offcpu && edge_ebpf_off_open(&e->cur, e->cpu, &e->ctr[EDGE_EBPF_OFFCPU], &e->off, &err));
	if (!rc && edge_ebpf_cfg_lock_any(&e->cur)) {
		/* optional: the other probes run without it */
		wt_err lerr = {0};
		if (edge_ebpf_lock_open(&e->cur, e->cpu, &e->ctr[EDGE_EBPF_LOCK], &e->lock, &lerr)) {
			wt_warn("msg=\"ebpf lock contention not attached\" error=\"%s\"", lerr.msg);
			atomic_fetch_add(&e->load_errors, 1);
		}
	}
	if (!rc && edge_ebpf_cfg_alloc_any(&e->cur)) {
		/* optional too */
		wt_err aerr = {0};
		if (edge_ebpf_alloc_open(&e->cur, e->cpu, &e->ctr[EDGE_EBPF_ALLOC], &e->alloc, &aerr)) {
			wt_warn("msg=\"ebpf native allocations not loaded\" error=\"%s\"", aerr.msg);
			atomic_fetch_add(&e->load_errors, 1);
		}
	}
	if (!rc) {
		/* a new program has an empty wt_py_procs: every process is checked again */
		edge_ebpf_cpu_set_py(e->cpu, py_new, e);
		atomic_fetch_add(&e->py_epoch, 1);
	}
	pthread_mutex_unlock(&e->pmu);
	if (rc) {
		wt_error("msg=\"ebpf sampler not started\" error=\"%s\"", err.msg);
		atomic_fetch_add(&e->load_errors, 1);
		unload(e);
		return;
	}
	e->window_ns = wt_now_ns(CLOCK_REALTIME);
	atomic_store(&e->enabled, 1);
	atomic_store(&e->offcpu_on, e->off != NULL);
	atomic_store(&e->lock_on, e->lock != NULL);
	atomic_store(&e->alloc_on, e->alloc != NULL);
	atomic_store(&e->frequency, e->cur.frequency_hz);
	/* the discovery thread sleeps up to DISCOVER_NS while nothing is
	 * loaded: wake it, or processes announced in that time are gone
	 * before it looks (it did lose the first ~0.6 s of processes) */
	pthread_mutex_lock(&e->mu);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	wt_info("msg=\"ebpf sampler running\" frequency_hz=%d offcpu=%s lock=%s offcpu_min_us=%lld mode=%s "
		"flush_interval_s=%d unwind=%s",
		e->cur.frequency_hz, e->off ? "true" : "false", e->lock ? "true" : "false", (long long)e->cur.offcpu_min_us,
		e->cur.mode == EDGE_EBPF_RING ? "ring" : "hash", e->cur.flush_interval_s,
		edge_unwind_mode_name(e->cur.unwind));
}

/* The interpreter-frame settings of e->cur for edge_ebpf_py_on (other
 * threads); processes are checked again under them. */
static void py_cfg_set(edge_ebpf *e)
{
	edge_ebpf_cfg c;
	memset(&c, 0, sizeof(c));
	if (cfg_copy(&c, &e->cur)) {
		edge_ebpf_cfg_free(&c);
		c.python = e->cur.python;
	}
	pthread_mutex_lock(&e->pymu);
	edge_ebpf_cfg_free(&e->pycfg);
	e->pycfg = c;
	pthread_mutex_unlock(&e->pymu);
	atomic_fetch_add(&e->py_epoch, 1);
}

static void apply_cfg(edge_ebpf *e, edge_ebpf_cfg *next)
{
	edge_ebpf_cfg old = e->cur;
	int loaded = e->cpu != NULL;
	int reload = next->mode != old.mode || next->max_stacks != old.max_stacks || next->max_keys != old.max_keys ||
		     next->offcpu != old.offcpu || next->offcpu_min_us != old.offcpu_min_us ||
		     edge_ebpf_cfg_lock_any(next) != edge_ebpf_cfg_lock_any(&old) ||
		     edge_ebpf_cfg_alloc_any(next) != edge_ebpf_cfg_alloc_any(&old) ||
		     (edge_ebpf_cfg_alloc_any(next) && (next->alloc_sample_bytes != old.alloc_sample_bytes ||
							next->alloc_max_live != old.alloc_max_live ||
							next->alloc_inuse != old.alloc_inuse)) ||
		     edge_ebpf_cfg_unwinds(next) != edge_ebpf_cfg_unwinds(&old) ||
		     (edge_ebpf_cfg_unwinds(next) && next->unwind_rows != old.unwind_rows);
	int unwind_changed = !same_unwind(next, &old);

	atomic_fetch_add(&e->reloads, 1);
	/* what was sampled under the old settings is flushed under them */
	if (loaded && (!next->enabled || reload || next->frequency_hz != old.frequency_hz))
		edge_ebpf_flush(e);
	/* the discovery thread reads the unwinding rules under pmu */
	pmu_lock_sampler(e);
	e->cur = *next;
	pthread_mutex_unlock(&e->pmu);
	memset(next, 0, sizeof(*next));
	py_cfg_set(e);
	edge_procs_set_rules(e->procs, e->cur.rules, e->cur.nrules);
	edge_ebpf_cfg_free(&old);
	if (loaded && !reload && unwind_changed && e->cur.enabled) {
		/* live: every process's entry follows its service's mode now */
		edge_procs_each(e->procs, regive, e);
		wt_info("msg=\"ebpf unwinding modes applied\" unwind=%s service_rules=%zu",
			edge_unwind_mode_name(e->cur.unwind), e->cur.n_unwind_rules);
	}
	if (!e->cur.enabled) {
		if (loaded) {
			unload(e);
			wt_info("msg=\"ebpf sampler stopped\"");
		}
		return;
	}
	if (loaded && !reload && e->alloc) {
		/* live: allocations per service as the rules now say */
		pmu_lock_sampler(e);
		edge_procs_each(e->procs, alloc_each, e);
		pthread_mutex_unlock(&e->pmu);
	}
	if (loaded && !reload) {
		wt_err err = {0};
		if (edge_ebpf_cpu_set_frequency(e->cpu, e->cur.frequency_hz, &err)) {
			wt_error("msg=\"ebpf frequency change failed\" error=\"%s\"", err.msg);
			atomic_fetch_add(&e->load_errors, 1);
			unload(e);
			return;
		}
		atomic_store(&e->frequency, e->cur.frequency_hz);
		wt_info("msg=\"ebpf sampler retuned\" frequency_hz=%d flush_interval_s=%d", e->cur.frequency_hz,
			e->cur.flush_interval_s);
		return;
	}
	if (loaded)
		unload(e);
	load(e);
}

static void reload_file(edge_ebpf *e)
{
	edge_config c;
	wt_err err = {0};
	if (!e->config_path)
		return;
	edge_config_defaults(&c);
	if (edge_config_load(&c, e->config_path, &err)) {
		wt_error("msg=\"reload: config rejected, ebpf settings unchanged\" error=\"%s\"", err.msg);
		edge_config_free(&c);
		return;
	}
	wt_info("msg=\"reload: applying the ebpf section\" file=%s", e->config_path);
	edge_ebpf_apply(e, &c.ebpf);
	edge_config_free(&c);
}

static void *run(void *arg)
{
	edge_ebpf *e = arg;
	int64_t next_flush = 0;

	if (e->cur.enabled)
		load(e);
	next_flush = wt_now_ns(CLOCK_MONOTONIC) + (int64_t)e->cur.flush_interval_s * NS_PER_S;
	for (;;) {
		edge_ebpf_cfg next;
		int have = 0;
		if (atomic_exchange(&e->hup, 0))
			reload_file(e);
		pthread_mutex_lock(&e->mu);
		if (e->stop) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		if (e->has_pending) {
			next = e->pending;
			memset(&e->pending, 0, sizeof(e->pending));
			e->has_pending = 0;
			have = 1;
		}
		pthread_mutex_unlock(&e->mu);
		if (have) {
			apply_cfg(e, &next);
			next_flush = wt_now_ns(CLOCK_MONOTONIC) + (int64_t)e->cur.flush_interval_s * NS_PER_S;
		}
		if (e->cpu && e->cur.mode == EDGE_EBPF_RING) {
			edge_ebpf_cpu_poll(e->cpu, TICK_MS, seen, e);
		} else {
			struct timespec ts = wt_deadline(CLOCK_REALTIME, TICK_MS);
			pthread_mutex_lock(&e->mu);
			if (!e->stop && !e->has_pending)
				pthread_cond_timedwait(&e->cv, &e->mu, &ts);
			pthread_mutex_unlock(&e->mu);
		}
		int64_t now = wt_now_ns(CLOCK_MONOTONIC);
		if (!e->cpu && !e->off) {
			next_flush = now + (int64_t)e->cur.flush_interval_s * NS_PER_S;
			continue;
		}
		if (now >= next_flush) {
			edge_ebpf_flush(e);
			next_flush = now + (int64_t)e->cur.flush_interval_s * NS_PER_S;
		}
	}
	if (e->cpu || e->off) {
		edge_ebpf_flush(e);
		unload(e);
	}
	return NULL;
}

/* ---- public ------------------------------------------------------------------------ */

int edge_ebpf_start(edge_server *srv, const edge_config *cfg, const char *config_path, edge_ebpf **out,
		    wt_err *err)
{
	edge_ebpf *e = calloc(1, sizeof(*e));
	*out = NULL;
	if (!e)
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	e->srv = srv;
	e->cfg = cfg;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	pthread_mutex_init(&e->cmu, NULL);
	pthread_cond_init(&e->ccv, NULL);
	pthread_mutex_init(&e->pmu, NULL);
	pthread_mutex_init(&e->pymu, NULL);
	e->py_epoch = 1;
	if (gethostname(e->host, sizeof(e->host) - 1) != 0)
		snprintf(e->host, sizeof(e->host), "unknown");
	e->config_path = config_path ? strdup(config_path) : NULL;
	e->elfs = edge_elf_cache_new(MAX_ELF_FILES);
	e->py = edge_py_new(MAX_PY_CODES);
	if (cfg_copy(&e->cur, &cfg->ebpf) || !e->elfs || !e->py ||
	    !(e->procs = edge_procs_new("/proc", e->elfs, e->cur.rules, e->cur.nrules))) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_ENOMEM, "out of memory");
	}
	py_cfg_set(e);
	if (pthread_create(&e->th, NULL, run, e) != 0) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_EIO, "cannot start the ebpf sampler thread");
	}
	e->started = 1;
	if (pthread_create(&e->dth, NULL, discover_run, e) != 0) {
		edge_ebpf_stop(e);
		return wt_err_set(err, WT_EIO, "cannot start the ebpf discovery thread");
	}
	e->dstarted = 1;
	*out = e;
	return 0;
}

int edge_ebpf_apply(edge_ebpf *e, const edge_ebpf_cfg *next)
{
	edge_ebpf_cfg c;
	if (cfg_copy(&c, next)) {
		edge_ebpf_cfg_free(&c);
		return WT_ENOMEM;
	}
	pthread_mutex_lock(&e->mu);
	edge_ebpf_cfg_free(&e->pending);
	e->pending = c;
	e->has_pending = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

void edge_ebpf_reload(edge_ebpf *e)
{
	if (e)
		atomic_store(&e->hup, 1);
}

void edge_ebpf_stop(edge_ebpf *e)
{
	if (!e)
		return;
	if (e->started) {
		pthread_mutex_lock(&e->mu);
		e->stop = 1;
		pthread_cond_broadcast(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->th, NULL);
	}
	if (e->dstarted)
		pthread_join(e->dth, NULL);
	edge_ebpf_svcs_free(e);
	edge_procs_free(e->procs);
	edge_elf_cache_free(e->elfs);
	edge_ksyms_free(e->ksyms);
	edge_ebpf_cfg_free(&e->cur);
	edge_ebpf_cfg_free(&e->pending);
	edge_ebpf_cfg_free(&e->pycfg);
	edge_py_free(e->py);
	pthread_mutex_destroy(&e->pymu);
	free(e->config_path);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->cmu);
	pthread_cond_destroy(&e->ccv);
	pthread_mutex_destroy(&e->pmu);
	free(e);
}

void edge_ebpf_metrics(edge_ebpf *e, wt_buf *b)
{
	static const char *const probe[EDGE_EBPF_NKINDS] = {"cpu", "offcpu", "lock", "alloc"};
	if (!e)
		return;
	wt_prom_gauge(b, "wt_edge_ebpf_enabled", "1 while the eBPF sampler is loaded and attached.",
		      atomic_load(&e->enabled));
	wt_prom_gauge(b, "wt_edge_ebpf_offcpu_enabled", "1 while the off-CPU probe is attached.",
		      atomic_load(&e->offcpu_on));
	wt_prom_gauge(b, "wt_edge_ebpf_lock_enabled", "1 while the lock contention probe (futex syscall tracepoints) is attached.",
		      atomic_load(&e->lock_on));
	wt_prom_gauge(b, "wt_edge_ebpf_alloc_enabled", "1 while the native allocation program (libc uprobes) is loaded.",
		      atomic_load(&e->alloc_on));
	wt_prom_gauge(b, "wt_edge_ebpf_alloc_files", "libc files with the allocation uprobes attached.",
		      atomic_load(&e->alloc_files));
	wt_prom_gauge(b, "wt_edge_ebpf_alloc_processes", "Processes whose allocations are sampled.",
		      atomic_load(&e->alloc_procs));
	wt_prom_gauge(b, "wt_edge_ebpf_alloc_live", "Sampled allocations not yet freed, at the last flush.",
		      atomic_load(&e->alloc_live));
	wt_prom_family(b, "wt_edge_ebpf_alloc_skipped_total", "counter",
		       "Processes whose allocations were wanted but cannot be probed, by reason.");
	wt_prom_u64(b, "wt_edge_ebpf_alloc_skipped_total", "reason", "static",
		    atomic_load(&e->alloc_skipped_static));
	wt_prom_u64(b, "wt_edge_ebpf_alloc_skipped_total", "reason", "musl",
		    atomic_load(&e->alloc_skipped_musl));
	wt_prom_counter(b, "wt_edge_ebpf_alloc_bytes_total", "Estimated native bytes allocated turned into profiles.",
			atomic_load(&e->alloc_bytes));
	wt_prom_gauge(b, "wt_edge_ebpf_frequency_hz", "On-CPU sampling frequency in effect (0 = off).",
		      atomic_load(&e->frequency));
	wt_prom_family(b, "wt_edge_ebpf_samples_total", "counter",
		       "Samples recorded in the kernel, by probe (offcpu: blocked intervals).");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_prom_u64(b, "wt_edge_ebpf_samples_total", "probe", probe[k],
			    (uint64_t)atomic_load(&e->ctr[k].stat[WT_STAT_SAMPLES]));
	wt_prom_family(b, "wt_edge_ebpf_lost_samples_total", "counter",
		       "Samples dropped because a counts map or the ring buffer was full.");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_prom_u64(b, "wt_edge_ebpf_lost_samples_total", "probe", probe[k],
			    (uint64_t)atomic_load(&e->ctr[k].stat[WT_STAT_LOST]));
	wt_prom_family(b, "wt_edge_ebpf_stack_collisions_total", "counter",
		       "Stacks not stored: more than max_stacks distinct stacks in one flush.");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++) {
		const char *user[] = {"probe", probe[k], "stack", "user", NULL};
		const char *kernel[] = {"probe", probe[k], "stack", "kernel", NULL};

		wt_prom_labels_u64(b, "wt_edge_ebpf_stack_collisions_total", user,
				   atomic_load(&e->ctr[k].stat[WT_STAT_USTACK_COLL]));
		wt_prom_labels_u64(b, "wt_edge_ebpf_stack_collisions_total", kernel,
				   atomic_load(&e->ctr[k].stat[WT_STAT_KSTACK_COLL]));
	}
	wt_prom_family(b, "wt_edge_ebpf_missing_stacks_total", "counter",
		       "Stack ids whose stack was gone at drain time.");
	for (int k = 0; k < EDGE_EBPF_NKINDS; k++)
		wt_prom_u64(b, "wt_edge_ebpf_missing_stacks_total", "probe", probe[k],
			    (uint64_t)atomic_load(&e->ctr[k].missing_stacks));
	wt_prom_counter(b, "wt_edge_ebpf_idle_samples_total", "On-CPU samples of the idle task (not recorded).",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_IDLE]));
	wt_prom_counter(b, "wt_edge_ebpf_unannounced_processes_total",
		"New process images the program could not announce (wt_procs or its ring buffer full): captured at the flush if still alive.",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_PROCS_FULL]));
	wt_prom_counter(b, "wt_edge_ebpf_offcpu_short_total", "Blocked intervals under offcpu_min_us (not recorded).",
		atomic_load(&e->ctr[EDGE_EBPF_OFFCPU].stat[WT_STAT_OFF_SHORT]));
	wt_prom_counter(b, "wt_edge_ebpf_cpu_samples_drained_total", "On-CPU samples turned into profiles.",
			atomic_load(&e->samples_cpu));
	wt_prom_counter(b, "wt_edge_ebpf_offcpu_nanoseconds_total", "Off-CPU nanoseconds turned into profiles.",
			atomic_load(&e->offcpu_ns));
	wt_prom_counter(b, "wt_edge_ebpf_lock_nanoseconds_total", "Lock wait nanoseconds turned into profiles.",
			atomic_load(&e->lock_ns));
	wt_prom_counter(b, "wt_edge_ebpf_lock_contentions_total", "Lock contentions turned into profiles.",
			atomic_load(&e->lock_contentions));
	wt_prom_family(b, "wt_edge_ebpf_lock_skipped_total", "counter",
		       "Processes whose futex waits are not read as glibc's locks, by reason (their lock samples dropped).");
	wt_prom_u64(b, "wt_edge_ebpf_lock_skipped_total", "reason", "musl", atomic_load(&e->lock_skipped_musl));
	wt_prom_counter(b, "wt_edge_ebpf_flushes_total", "Drains of the in-kernel aggregates.",
			atomic_load(&e->flushes));
	wt_prom_counter(b, "wt_edge_ebpf_profiles_total", "Per-service profiles committed to the buffer.",
			atomic_load(&e->profiles));
	wt_prom_counter(b, "wt_edge_ebpf_flush_errors_total", "Profiles or flushes that could not be built.",
			atomic_load(&e->flush_errors));
	wt_prom_counter(b, "wt_edge_ebpf_commit_errors_total", "Profiles the buffer failed to store.",
			atomic_load(&e->commit_errors));
	wt_prom_counter(b, "wt_edge_ebpf_load_errors_total", "Failed attempts to load or attach the BPF programs.",
			atomic_load(&e->load_errors));
	wt_prom_counter(b, "wt_edge_ebpf_reloads_total", "Live configuration changes applied.",
			atomic_load(&e->reloads));
	wt_prom_counter(b, "wt_edge_ebpf_processes_captured_total", "Processes whose /proc mappings were captured.",
			atomic_load(&e->captured_procs));
	wt_prom_counter(b, "wt_edge_ebpf_processes_reread_total",
		"Mappings read again 1-12 ms after a capture that came too early (inside execve, or before the dynamic loader mapped the libraries).",
		atomic_load(&e->reread_procs));
	wt_prom_counter(b, "wt_edge_ebpf_processes_lost_total", "Sampled processes gone before their mappings were read (user frames unsymbolized).",
		atomic_load(&e->lost_procs));
	wt_prom_gauge(b, "wt_edge_ebpf_processes_tracked", "Processes in the sampler's table.",
		      (long long)atomic_load(&e->tracked_procs));
	wt_prom_counter(b, "wt_edge_ebpf_frames_total", "Frames in drained stacks.", atomic_load(&e->frames));
	wt_prom_counter(b, "wt_edge_ebpf_unsymbolized_frames_total", "Frames kept as build id + file offset (or bare address).",
		atomic_load(&e->unsym_frames));
	wt_prom_counter(b, "wt_edge_ebpf_jit_frames_total", "Frames in JIT code named from the process's /tmp/perf-PID.map.",
		atomic_load(&e->jit_frames));
	edge_py_stats ps = {0};
	if (e->py)
		edge_py_get_stats(e->py, &ps);
	wt_prom_counter(b, "wt_edge_ebpf_python_samples_total", "On-CPU samples with CPython frames (walked by the BPF program).",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_PY_SAMPLES]));
	wt_prom_counter(b, "wt_edge_ebpf_python_frames_total", "CPython frames in drained stacks.", atomic_load(&e->py_frames));
	wt_prom_counter(b, "wt_edge_ebpf_python_unnamed_frames_total",
		"CPython frames whose code object could not be read (process gone before it was read, cache full): named [python].",
		atomic_load(&e->py_unnamed));
	wt_prom_counter(b, "wt_edge_ebpf_python_processes_total", "CPython processes registered for interpreter frames.", ps.procs);
	wt_prom_counter(b, "wt_edge_ebpf_python_unknown_version_total",
		"CPython processes of a version without an offsets row (ebpf_python.c): native frames only.", ps.unknown);
	wt_prom_gauge(b, "wt_edge_ebpf_python_code_objects", "Code objects cached (names, files, line tables).", (long long)ps.codes);
	wt_prom_counter(b, "wt_edge_ebpf_python_code_read_failures_total", "Code objects that could not be read from their process.",
		ps.read_fail);
	wt_prom_counter(b, "wt_edge_ebpf_python_code_cache_full_total", "Code objects not cached: the cache was full.", ps.cache_full);
	wt_prom_counter(b, "wt_edge_ebpf_python_new_stacks_lost_total",
		"New CPython stacks the programs could not stream to the edge (ring full): read at the flush instead.",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_PY_NEW_LOST]) +
			atomic_load(&e->ctr[EDGE_EBPF_OFFCPU].stat[WT_STAT_PY_NEW_LOST]));
	wt_prom_counter(b, "wt_edge_ebpf_python_stacks_cut_total",
		"CPython stacks (on- and off-CPU) whose walk stopped at a frame it could not read: the outer frames are missing, [truncated] stands for them.",
		atomic_load(&e->ctr[EDGE_EBPF_CPU].stat[WT_STAT_PY_CUT]) +
			atomic_load(&e->ctr[EDGE_EBPF_OFFCPU].stat[WT_STAT_PY_CUT]));
	wt_prom_counter(b, "wt_edge_ebpf_truncated_stacks_total", "User stacks that did not reach a known root (frame pointers missing).",
		atomic_load(&e->truncated));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_files", "Files whose unwind table is loaded into the BPF maps (ebpf.unwind eh_frame/auto).",
	      (long long)atomic_load(&e->unwind_files));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_rows", "Rows of the BPF unwind-table array in use (of ebpf.unwind_rows).",
	      (long long)atomic_load(&e->unwind_rows));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_pending_processes", "Processes waiting for their unwind tables (built on the loader's thread).",
	      (long long)atomic_load(&e->unwind_pending));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_built_files", "Unwind tables built from .eh_frame/.debug_frame since the program was loaded (not read from the disk cache).",
	      (long long)atomic_load(&e->unwind_built));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_build_ns", "Time spent building those tables, ns (the loader's thread).",
	      (long long)atomic_load(&e->unwind_build_ns));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_cfi_bytes", "Bytes of .eh_frame/.debug_frame those tables were built from.",
	      (long long)atomic_load(&e->unwind_cfi_bytes));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_cached_files", "Unwind tables read from the disk cache (edge.data_dir/unwind) since the program was loaded.",
	      (long long)atomic_load(&e->unwind_from_cache));
	wt_prom_gauge(b, "wt_edge_ebpf_unwind_failed_files",
	      "Executable files without a table: not x86-64 ELF, no CFI, unreadable, or the rows array full.",
	      (long long)atomic_load(&e->unwind_failed));
	wt_prom_gauge(b, "wt_edge_ebpf_last_flush_microseconds", "Duration of the last drain + symbolize + commit.",
	      (long long)atomic_load(&e->last_flush_us));
}
